"""A mesh point's traffic written out (`wsemoe export traffic`): transfers, matrices, per-link loads and ports in
bytes, metadata with units and the model's times, and BookSim2 trace files a cycle-level simulator replays.
The format is described in docs/traffic-export.md; the folder is built beside its target and swapped in
(`store/writer.py`: only an earlier export wsemoe wrote, unchanged, is ever replaced)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis.explain.traffic_export import PointTraffic, listable, transfer_chunks
from wsemoe.cost.structure import DENSE_MAX_NODES
from wsemoe.errors import ResultsError
from wsemoe.store import writer
from wsemoe.version import __version__

FORMAT = "wsemoe traffic export 1"
PHASE_COLUMNS = {"allreduce": "attention_allreduce_s", "dispatch": "moe_dispatch_s", "combine": "moe_combine_s",
                 "reduce": "moe_reduce_s", "gradient": "attention_gradient_s", "router_gradient": "moe_gradient_s",
                 "dense_allreduce": "dense_layer_allreduce_s", "ffn_allreduce": "dense_ffn_allreduce_s",
                 "expert_load": "moe_load_s"}
PACKET_FLITS = 16
TRACE_MAX_FLITS = 1 << 20   # the automatic flit size keeps every step's trace near this many flits
TRACE_MAX_PACKETS = 1 << 22  # lines of one trace at most (~80 MB of text); counted before any line is made
MAX_PACKET_FLITS = 1024      # BookSim's trace workload lists every packet size 1 … packet_flits
MAX_FLIT_BYTES = 1 << 30
TRACE_MAX_TRANSFERS = 1 << 22   # a step with more transfers gets no trace (its text alone would take gigabytes)


def link_table(pt: PointTraffic) -> pd.DataFrame:
    """Every directed link of the mesh in the model's order (east, west, south, north; row-major in each)."""
    R, C = pt.layout.grid
    cross = pt.layout.crossing()
    parts = []
    for d, (dr, dc, fwd), cls in (("E", (0, 1, True), cross.east), ("W", (0, 1, False), cross.west),
                                  ("S", (1, 0, True), cross.south), ("N", (1, 0, False), cross.north)):
        r, c = np.meshgrid(np.arange(R - dr), np.arange(C - dc), indexing="ij")
        a, b = (r * C + c).ravel(), ((r + dr) * C + c + dc).ravel()
        src, dst = (a, b) if fwd else (b, a)
        parts.append(pd.DataFrame({"src": src, "dst": dst, "direction": d, "link_class": np.ravel(cls).astype(int)}))
    links = pd.concat(parts, ignore_index=True)
    for end in ("src", "dst"):
        links[f"{end}_row"], links[f"{end}_col"] = np.divmod(links[end].to_numpy(), C)
    return links[["src", "src_row", "src_col", "dst", "dst_row", "dst_col", "direction", "link_class"]]


def flit_bytes(pt: PointTraffic) -> int:
    """Bytes per flit: a power of two (at least 16) that keeps the largest step's trace near TRACE_MAX_FLITS."""
    largest = max((sum(float(v.sum()) for _, _, v in transfer_chunks(st.pattern)) * st.scale
                   for st in pt.steps if listable(st.pattern)), default=0.0)
    return int(max(16, 2 ** math.ceil(math.log2(max(largest / TRACE_MAX_FLITS, 1.0)))))


def trace_lines(src, dst, nbytes, flit: int, packet: int) -> tuple[str, int]:
    """BookSim2 trace lines `delay source dest type` (src/workload.cpp, TraceWorkload): every packet injected at
    once (delay 0), each transfer cut into packets of `packet` flits (type 0) and its remainder (type r = r
    flits); local copies never enter the network. Returns (text, flits)."""
    move = src != dst
    flits = np.ceil(nbytes[move] / flit).astype(np.int64)
    full, rest = np.divmod(flits, packet)
    s = np.concatenate([np.repeat(src[move], full), src[move][rest > 0]])
    d = np.concatenate([np.repeat(dst[move], full), dst[move][rest > 0]])
    t = np.concatenate([np.zeros(int(full.sum()), dtype=np.int64), rest[rest > 0]])
    lines = np.char.add(np.char.add(np.char.add("0 ", s.astype(str)), np.char.add(" ", d.astype(str))),
                        np.char.add(" ", t.astype(str)))
    return "\n".join(lines.tolist()) + ("\n" if len(lines) else ""), int(flits.sum())


def export_traffic(pt: PointTraffic, folder, flit: int | None = None, packet: int = PACKET_FLITS,
                   force: bool = False) -> list[Path]:
    """Write every file of the export as the folder `folder`; an earlier export of another point (or another
    writer's output) there needs `force`, and anything wsemoe did not write is refused (`store/writer.py`)."""
    if not 1 <= packet <= MAX_PACKET_FLITS:
        raise ResultsError(f"flits per packet must be 1 to {MAX_PACKET_FLITS:,}, got {packet:,}", loc=("--packet-flits",))
    if flit is not None and not 1 <= flit <= MAX_FLIT_BYTES:
        raise ResultsError(f"bytes per flit must be 1 to {MAX_FLIT_BYTES:,}, got {flit:,}", loc=("--flit-bytes",))
    key = export_key(pt)
    target = writer.check_folder(folder, "export", force, key)  # before any file is made
    names: list[str] = []

    def files():
        for name, data in _files(pt, flit or flit_bytes(pt), packet):
            names.append(name)
            yield name, data
    writer.write_folder(target, files(), "export", force, key)
    return [target / n for n in names]


def export_key(pt: PointTraffic) -> str:
    """Which point an export holds: its name and index, and a digest of its inputs, hardware and output columns,
    so a different point under the same name (a --set override, another --model) is not taken for it."""
    import hashlib

    ident = json.dumps({"values": pt.values, "hardware": pt.hardware, "row": pt.row}, sort_keys=True, default=str)
    return f"{pt.name}, point {pt.point} ({hashlib.sha256(ident.encode()).hexdigest()[:8]})"


def _files(pt: PointTraffic, flit: int, packet: int):
    """(name, bytes or text) of every file of the export, each made as it is written (a trace per step)."""
    links, R, C = link_table(pt), *pt.layout.grid
    tables = {"transfers": [], "alltoall": [], "links": [], "ports": []}
    matrices, steps_meta = {}, {}
    for st in pt.steps:
        tag = f"{st.phase}.step{st.index}"
        meta = {"step": st.index, "rounds": st.rounds, "model_volume_s": st.volume_s, "model_latency_s": st.latency_s,
                **_link_stats(st.loads, st.scale)}
        tables["links"].append(pd.concat([pd.DataFrame({"phase": st.phase, "step": np.full(len(links), st.index)}),
                                          links.assign(bytes=st.loads.all_links() * st.scale)], axis=1))
        tables["ports"].append(pd.DataFrame({"phase": st.phase, "step": st.index, "node": np.arange(R * C),
                                             "row": np.arange(R * C) // C, "col": np.arange(R * C) % C,
                                             "inject_bytes": st.loads.inject * st.scale,
                                             "eject_bytes": st.loads.eject * st.scale}))
        if listable(st.pattern):
            info, trace = _listed(st, tag, tables, flit, packet, C)
            meta.update(info)
            if trace is not None:
                yield trace
        else:
            meta.update(_factored(st, tables, C))
        if R * C <= DENSE_MAX_NODES:
            matrices[tag] = st.pattern.dense() * st.scale
        steps_meta.setdefault(st.phase, []).append(meta)
    for name, parts in tables.items():
        if parts:
            yield f"{name}.csv", pd.concat(parts, ignore_index=True).to_csv(index=False)
    if matrices:
        buf = io.BytesIO()
        np.savez_compressed(buf, **matrices)
        yield "matrices.npz", buf.getvalue()
    meta = _metadata(pt, steps_meta, flit, packet, links)
    yield "metadata.json", json.dumps(meta, indent=2, ensure_ascii=False) + "\n"


def _link_stats(loads, scale: float) -> dict:
    return {"max_link_bytes": float(loads.max_link()) * scale, "max_inject_bytes": float(loads.max_inject()) * scale,
            "max_eject_bytes": float(loads.max_eject()) * scale}


def _listed(st, tag: str, tables: dict, flit: int, packet: int, C: int) -> tuple[dict, tuple | None]:
    """Transfers of a step as rows, and its BookSim2 trace as (name, text) (None when too large for one)."""
    parts = [(s, d, v * st.scale) for s, d, v in transfer_chunks(st.pattern)]
    src, dst, nbytes = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(3))
    src, dst = src.astype(np.int64), dst.astype(np.int64)
    tables["transfers"].append(pd.DataFrame({"phase": st.phase, "step": st.index, "src": src, "src_row": src // C,
                                             "src_col": src % C, "dst": dst, "dst_row": dst // C, "dst_col": dst % C,
                                             "bytes": nbytes}))
    meta = {"form": "transfers", "transfers": int(len(src)), "bytes": float(nbytes.sum()), "booksim_trace": None}
    if len(src) > TRACE_MAX_TRANSFERS:
        return {**meta, "note": f"{len(src):,} transfers: listed in transfers.csv, no trace"}, None
    move = src != dst
    flits = np.ceil(nbytes[move] / flit)
    packets = float(np.ceil(flits / packet).sum())  # lines the trace would have, counted first
    if packets > TRACE_MAX_PACKETS:
        return {**meta, "note": f"{packets:,.0f} packets of {packet} flits of {flit} bytes: more than "
                                f"{TRACE_MAX_PACKETS:,} lines, no trace (a larger --flit-bytes makes fewer)"}, None
    text, flits = trace_lines(src, dst, nbytes, flit, packet)
    name = f"booksim/{tag}.trace"
    return {**meta, "booksim_trace": name, "booksim_flits": flits, "booksim_packets": text.count("\n")}, (name, text)


def _factored(st, tables: dict, C: int) -> dict:
    """A huge all-to-all t[s, d] = f·a[s]·b[d] (same tile only) by its factors: O(N) rows, not N²."""
    p, n = st.pattern, st.pattern.n
    tables["alltoall"].append(pd.DataFrame({"phase": st.phase, "step": st.index, "node": np.arange(n),
                                            "row": np.arange(n) // C, "col": np.arange(n) % C, "tile": p.tile_of(),
                                            "send_weight": p.a, "receive_weight": p.b}))
    total = float((p.received()).sum()) * st.scale
    return {"form": "alltoall", "bytes_factor": p.f * st.scale, "tile": list(p.tile) if p.tile else None,
            "bytes": total, "booksim_trace": None,
            "note": f"{n}² transfers: listed by factors in alltoall.csv, no trace"}


def _metadata(pt: PointTraffic, steps: dict, flit: int, packet: int, links: pd.DataFrame) -> dict:
    """What every file holds, in which units, and what the model computed from it."""
    hw, row = pt.hardware, pt.row
    link_bw = float(hw["link_bw_bytes_per_s"])
    cycle = flit / link_bw   # one flit per cycle on an on-wafer link: the simulator's clock in seconds
    phases = []
    for name, st in steps.items():
        for s in st:
            s["model_volume_cycles"], s["model_latency_cycles"] = s["model_volume_s"] / cycle, s["model_latency_s"] / cycle
        col = PHASE_COLUMNS.get(name)
        phases.append({"phase": name, "bytes_per_unit": next(x.scale for x in pt.steps if x.phase == name),
                       "routing": next(x.routing for x in pt.steps if x.phase == name).replace("reverse", "yx"),
                       "occurrences_per_layer": pt.repeats[name],
                       "model_column": col, "model_seconds_per_layer": row.get(col),
                       # the fixed software latency of one call, charged after its steps (0 when it moves nothing)
                       "model_software_latency_s": (row.get(f"{name}_fixed_s") or 0.0) / pt.repeats[name],
                       "model_max_link_bytes": row.get(f"{name}_max_link_bytes"), "steps": st})
    R, C = pt.layout.grid
    return {
        "format": FORMAT, "generated_by": f"wsemoe {__version__}", "name": pt.name, "point": pt.point,
        "inputs": {k: (v.item() if hasattr(v, "item") else v) for k, v in pt.values.items()},
        "set": {k: (v.item() if hasattr(v, "item") else v) for k, v in pt.sets.items()},
        "units": {"bytes": "bytes", "time": "seconds", "cycles": "trace cycles (one flit per link per cycle)"},
        "mesh": {"rows": R, "cols": C, "wafers": list(pt.layout.wafers), "rows_per_wafer": pt.layout.rows,
                 "cols_per_wafer": pt.layout.cols, "node": "n = row * cols + col; row 0 north, col 0 west",
                 "links": len(links)},
        "links": {"E": "(r, c) -> (r, c+1)", "W": "(r, c+1) -> (r, c)", "S": "(r, c) -> (r+1, c)",
                  "N": "(r+1, c) -> (r, c)", "link_class": {"0": "on-wafer link", "1": "link across a wafer edge"}},
        "hardware": {k: hw.get(k) for k in ("name", "link_bw_bytes_per_s", "inter_wafer_link_bw_bytes_per_s",
                                            "port_bw_bytes_per_s", "hop_latency_s", "inter_wafer_hop_latency_s",
                                            "collective_latency_s", "alltoall_latency_s")},
        "booksim": {"flit_bytes": flit, "packet_flits": packet, "packet_sizes": [packet, *range(1, packet)],
                    "cycle_s": cycle, "hop_latency_cycles": float(hw["hop_latency_s"]) / cycle, "topology": f"mesh, k = {C}" + ("" if R == C else f" by {R} (not square)"),
                    "routing": "dimension order, x (columns, dimension 0) first: the model's XY",
                    "workload": "trace({FILE," + "{" + ",".join(str(x) for x in [packet, *range(1, packet)]) + "}})"},
        "phases": phases,
    }
