"""`wsemoe export traffic`: the exported link loads are the model's, a brute-force walk of the exported transfers
along their routes gives them back, the BookSim2 traces carry the same transfers in whole flits, and a huge
mesh exports without an N×N matrix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wsemoe.analysis.explain.traffic_export import point_traffic
from wsemoe.cli import app
from wsemoe.cost.fabric import patterns
from wsemoe.report.exports import export_traffic
from wsemoe.sweep.run import run_sweep

BASE = {"hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 4096}}
# (name, config, point): replicas and a YX combine; slice dispatch (a factored all-to-all) in training (gradient
# rings too); hierarchical ER across four wafers (wafer-crossing links, cross-wafer rings).
CASES = {
    "replicas": {**BASE, "name": "replicas", "workload": {**BASE["workload"], "B": 8},
                 "mapping": {"tp": 4, "strategy": "er", "combine_routing": "reverse", "ring_directions": 2},
                 "balance": {"distribution": "zipf", "zipf_s": 1.0, "balancer": "replicate", "spare_slots": 1}},
    "slice": {**BASE, "name": "slice", "workload": {"mode": "train", "seq_len": 1024, "B": 2},
              "mapping": {"tp": 8, "strategy": "block", "token_source": "slice"}},
    "her": {**BASE, "name": "her", "hardware": "wsc-b200-4x8x8", "workload": {**BASE["workload"], "B": 4},
            "mapping": {"tp": 4, "strategy": "her"}},
}
COLUMN = {"allreduce": "attention_allreduce_s", "dispatch": "moe_dispatch_s", "combine": "moe_combine_s",
          "reduce": "moe_reduce_s", "gradient": "attention_gradient_s", "router_gradient": "moe_gradient_s",
          "dense_allreduce": "dense_layer_allreduce_s",
          "ffn_allreduce": "dense_ffn_allreduce_s", "expert_load": "moe_load_s"}


@pytest.fixture(scope="module", params=list(CASES))
def exported(request, tmp_path_factory):
    pt = point_traffic(CASES[request.param])
    folder = tmp_path_factory.mktemp(request.param) / "out"
    export_traffic(pt, folder)
    meta = json.loads((folder / "metadata.json").read_text())
    return pt, folder, meta


def _read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{name}.csv")


def walk(rows: int, cols: int, transfers: pd.DataFrame, yx: bool = False) -> dict:
    """Bytes per directed link {(src, dst): bytes}, by moving each transfer hop by hop along its route (X then Y,
    or Y then X): the brute force the prefix sums must agree with."""
    out: dict = {}
    for s, d, b in transfers[["src", "dst", "bytes"]].itertuples(index=False):
        r, c = divmod(int(s), cols)
        rd, cd = divmod(int(d), cols)
        for axis in ((1, 0) if yx else (0, 1)):
            while (c, r)[axis] != (cd, rd)[axis]:
                nr, nc = (r, c + (1 if cd > c else -1)) if axis == 0 else (r + (1 if rd > r else -1), c)
                key = (r * cols + c, nr * cols + nc)
                out[key] = out.get(key, 0.0) + b
                r, c = nr, nc
    return out


def test_link_loads_are_the_models(exported):
    pt, folder, meta = exported
    links = _read(folder, "links")
    for phase in meta["phases"]:
        name, scale = phase["phase"], phase["bytes_per_unit"]
        mine = links[links["phase"] == name].groupby(["src", "dst"], sort=False)["bytes"].sum()
        model = pt.totals[name].all_links() * scale   # the structure's loads, in link order
        assert np.allclose(mine.to_numpy(), model, rtol=1e-12, atol=1e-9 * max(model.max(), 1)), name
        if name in ("dispatch", "combine"):   # the column: a step's busiest link over its routing (fabric/spread.py)
            assert pt.row[f"{name}_max_link_bytes"] > mine.max()
        else:
            assert mine.max() == pytest.approx(pt.row[f"{name}_max_link_bytes"], rel=1e-12)
        assert phase["model_max_link_bytes"] == pytest.approx(pt.row[f"{name}_max_link_bytes"], rel=1e-12)
        # the model's phase time is its steps' volume + latency and one call's software latency, per occurrence
        steps = sum(s["model_volume_s"] + s["model_latency_s"] for s in phase["steps"])
        once = steps + phase["model_software_latency_s"]
        call = pt.hardware["alltoall_latency_s" if name in ("dispatch", "combine") else "collective_latency_s"]
        # every phase here moves data; the router gradient and the experts' load counts are one call a step each,
        # over the 58 MoE layers
        share = 1 / 58 if name in ("router_gradient", "expert_load") else 1.0
        assert phase["model_software_latency_s"] == pytest.approx(call * share, rel=1e-12)
        assert once * phase["occurrences_per_layer"] == pytest.approx(pt.row[COLUMN[name]], rel=1e-12)


def test_a_walk_of_the_transfers_gives_the_link_loads(exported):
    pt, folder, meta = exported
    R, C = pt.layout.grid
    links, transfers = _read(folder, "links"), _read(folder, "transfers")
    routing = {p["phase"]: p["routing"] for p in meta["phases"]}
    for (phase, step), rows in transfers.groupby(["phase", "step"]):
        walked = walk(R, C, rows, yx=routing[phase] == "yx")
        mine = links[(links["phase"] == phase) & (links["step"] == step)]
        got = {(s, d): b for s, d, b in mine[["src", "dst", "bytes"]].itertuples(index=False) if b}
        assert set(got) == {k for k, v in walked.items() if v}, (phase, step)
        for k, v in walked.items():
            assert got.get(k, 0.0) == pytest.approx(v, rel=1e-12), (phase, step, k)


def test_ports_and_matrices_agree_with_the_transfers(exported):
    pt, folder, _ = exported
    n = pt.layout.nodes
    transfers, ports = _read(folder, "transfers"), _read(folder, "ports")
    mats = np.load(folder / "matrices.npz")
    for (phase, step), rows in transfers.groupby(["phase", "step"]):
        t = np.zeros((n, n))
        np.add.at(t, (rows["src"].to_numpy(), rows["dst"].to_numpy()), rows["bytes"].to_numpy())
        assert np.allclose(mats[f"{phase}.step{step}"], t, rtol=1e-12)
        p = ports[(ports["phase"] == phase) & (ports["step"] == step)]
        off = t - np.diag(np.diag(t))
        assert np.allclose(p["inject_bytes"], off.sum(axis=1), rtol=1e-12)
        assert np.allclose(p["eject_bytes"], off.sum(axis=0), rtol=1e-12)


def test_booksim_traces_replay_the_transfers_in_whole_flits(exported):
    """Each trace line is `delay source dest type` with type an index into the packet sizes: read back, the
    flits per (source, dest) are each transfer's bytes rounded up to whole flits, and a walk of the packets
    loads every link with the rounded bytes of the transfers that cross it."""
    pt, folder, meta = exported
    R, C = pt.layout.grid
    flit, sizes = meta["booksim"]["flit_bytes"], meta["booksim"]["packet_sizes"]
    transfers = _read(folder, "transfers")
    routing = {p["phase"]: p["routing"] for p in meta["phases"]}
    for phase in meta["phases"]:
        for step in phase["steps"]:
            if step["booksim_trace"] is None:
                continue
            lines = np.loadtxt(folder / step["booksim_trace"], dtype=np.int64, ndmin=2)
            assert (lines[:, 0] == 0).all() and (lines[:, 1] != lines[:, 2]).all()
            packets = pd.DataFrame({"src": lines[:, 1], "dst": lines[:, 2],
                                    "bytes": np.take(sizes, lines[:, 3]) * flit})
            rows = transfers[(transfers["phase"] == phase["phase"]) & (transfers["step"] == step["step"])]
            rows = rows[rows["src"] != rows["dst"]].assign(bytes=lambda d: np.ceil(d["bytes"] / flit) * flit)
            got = packets.groupby(["src", "dst"])["bytes"].sum().astype(float).sort_index()
            want = rows.groupby(["src", "dst"])["bytes"].sum().sort_index()
            pd.testing.assert_series_equal(got, want, check_names=False, rtol=0, atol=0)
            assert step["booksim_flits"] == got.sum() / flit
            yx = routing[phase["phase"]] == "yx"
            assert walk(R, C, packets, yx) == pytest.approx(walk(R, C, rows, yx), rel=1e-12)


def test_metadata_says_units_and_layout(exported):
    pt, folder, meta = exported
    assert meta["units"]["bytes"] == "bytes" and meta["mesh"]["node"].startswith("n = row * cols + col")
    links = _read(folder, "links")
    first = links[(links["phase"] == meta["phases"][0]["phase"]) & (links["step"] == 0)]
    assert meta["mesh"]["links"] == len(first)
    assert set(meta["links"]) == {"E", "W", "S", "N", "link_class"}
    assert meta["booksim"]["workload"].startswith("trace({FILE,{16,1,2,")
    if pt.layout.wafers != (1, 1):   # links across wafer edges are class 1
        assert set(links["link_class"]) == {0, 1}


def test_a_huge_mesh_exports_without_an_n_by_n_matrix(tmp_path, monkeypatch):
    """64×64 dies, slice flow: the dispatch is an all-to-all of 4096² pairs, exported by its factors."""
    def no_matrix(self):
        raise AssertionError("an N×N matrix was built")
    for cls in (patterns.Outer, patterns.Transfers, patterns.Blocks):
        monkeypatch.setattr(cls, "dense", no_matrix)
    cfg = {**BASE, "name": "huge", "hardware": {"preset": "wsc-b200-8x8", "rows": 64, "cols": 64},
           "workload": {**BASE["workload"], "B": 4}, "mapping": {"tp": 4, "strategy": "er", "token_source": "slice"}}
    pt = point_traffic(cfg)
    export_traffic(pt, tmp_path / "out")
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert not (tmp_path / "out" / "matrices.npz").exists()
    factored = _read(tmp_path / "out", "alltoall")
    links = _read(tmp_path / "out", "links")
    for phase in ("dispatch", "combine"):
        step = next(p for p in meta["phases"] if p["phase"] == phase)["steps"][0]
        assert step["form"] == "alltoall" and step["booksim_trace"] is None
        f = factored[factored["phase"] == phase]
        p = patterns.Outer((64, 64), f["send_weight"].to_numpy(), f["receive_weight"].to_numpy(), step["bytes_factor"],
                           tuple(step["tile"]) if step["tile"] else None)
        mine = links[(links["phase"] == phase)]["bytes"].to_numpy()
        assert np.allclose(p.loads(pt.layout).all_links(), mine, rtol=1e-12)   # the factors give the loads back


@pytest.mark.parametrize("args,message", [
    (["export", "traffic", "--hardware", "cs2", "--model", "qwen3-30b-a3b"], "streams its weights"),
    (["export", "traffic", "--hardware", "nvl72", "--model", "deepseek-v3"], "is a switch"),
    (["export", "matrices", "--hardware", "wsc-b200-8x8", "--model", "deepseek-v3"], "[WHAT] 'matrices' is not one of"),
])
def test_what_cannot_be_exported_is_one_line(runner, tmp_path, args, message):
    r = runner.invoke(app, [*args, "-o", str(tmp_path / "x")])
    assert r.exit_code != 0 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "x").exists()


def test_cli_from_a_results_folder_into_a_folder_it_owns(runner, tmp_path):
    """Into a new folder; again over its own export of the same point; another point's (another index, or the
    same index under --set) needs --force; a file
    the user added there is never replaced (tests/test_writers.py runs it against every kind of target)."""
    res = run_sweep({**BASE, "name": "pts", "axes": {"workload.B": [1, 8], "mapping.tp": [4, 8]}}, out_root=tmp_path)
    out = tmp_path / "t"
    argv = ["export", "traffic", str(res.path), "--point", "3", "-o", str(out)]
    r = runner.invoke(app, argv)
    assert r.exit_code == 0 and (out / "metadata.json").is_file(), r.output
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["point"] == 3 and meta["inputs"] == {"workload.B": 8, "mapping.tp": 8}
    assert (out / "booksim" / ".wsemoe.json").is_file() and len(list((out / "booksim").glob("*.trace"))) >= 1
    assert runner.invoke(app, argv).exit_code == 0                        # its own export of the same point
    r = runner.invoke(app, argv + ["--set", "workload.B=2"])              # the same index, another point
    assert r.exit_code != 0 and "pts, point 3" in r.output and "--force" in r.output, r.output
    other = ["export", "traffic", str(res.path), "--point", "1", "-o", str(out)]
    r = runner.invoke(app, other)
    assert r.exit_code != 0 and "pts, point 3" in r.output and "--force" in r.output, r.output
    assert json.loads((out / "metadata.json").read_text())["point"] == 3
    assert runner.invoke(app, other + ["--force"]).exit_code == 0
    assert json.loads((out / "metadata.json").read_text())["point"] == 1
    (out / "booksim" / "mine.txt").write_text("mine\n")
    r = runner.invoke(app, argv + ["--force"])
    assert r.exit_code != 0 and "mine.txt" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert (out / "booksim" / "mine.txt").read_text() == "mine\n"
    # an export nested in an export would go with it when that one is written again: refused, as a sweep is
    r = runner.invoke(app, ["export", "traffic", str(res.path), "--point", "2", "-o", str(out / "inner")])
    assert r.exit_code != 0 and "is inside a folder that `wsemoe export traffic` owns" in r.output, r.output
    assert not (out / "inner").exists()


@pytest.mark.parametrize("option, value", [("--packet-flits", "0"), ("--packet-flits", str(10**12)),
                                           ("--flit-bytes", "0"), ("--flit-bytes", str(2**40))])
def test_packet_and_flit_options_are_bounded_and_named(tmp_path, runner, option, value):
    from wsemoe.cli import app as cli

    r = runner.invoke(cli, ["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "qwen3-30b-a3b",
                            "--set", "mapping.tp=4", "-o", str(tmp_path / "ex"), option, value])
    text = r.output.strip()
    assert r.exit_code != 0 and text.startswith("error: ") and option in text, text
    assert not (tmp_path / "ex").exists()


def test_a_trace_too_long_at_one_byte_flits_is_counted_and_not_written(tmp_path, runner):
    from wsemoe.cli import app as cli

    r = runner.invoke(cli, ["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "qwen3-30b-a3b",
                            "--set", "mapping.tp=4", "-o", str(tmp_path / "ex"), "--flit-bytes", "1", "--packet-flits", "1"])
    assert r.exit_code == 0, r.output
    meta = json.loads((tmp_path / "ex" / "metadata.json").read_text())
    notes = [s.get("note", "") for p in meta["phases"] for s in p.get("steps", [])]
    assert any("no trace" in n and "packets" in n for n in notes), notes


def test_metadata_inputs_are_the_exported_points_and_name_the_overrides(tmp_path, runner):
    """--set changes the point exported, so the inputs metadata.json gives are the overridden values (the traffic
    is B = 3's, so its inputs say B = 3), and `set` lists the overrides; without --set there is none."""
    res = run_sweep({**BASE, "name": "ov", "axes": {"workload.B": [1, 8], "mapping.tp": [4, 8]}}, out_root=tmp_path)
    runs = {}
    for tag, extra in (("plain", []), ("set", ["--set", "workload.B=3"])):
        r = runner.invoke(app, ["export", "traffic", str(res.path), "--point", "0", "-o", str(tmp_path / tag), *extra])
        assert r.exit_code == 0, r.output
        runs[tag] = json.loads((tmp_path / tag / "metadata.json").read_text())
    plain, over = runs["plain"], runs["set"]
    assert over["phases"][0]["bytes_per_unit"] == pytest.approx(3 * plain["phases"][0]["bytes_per_unit"])
    assert over["inputs"] == {"workload.B": 3, "mapping.tp": 4} and over["set"] == {"workload.B": 3}
    assert plain["inputs"] == {"workload.B": 1, "mapping.tp": 4} and plain["set"] == {}
    r = runner.invoke(app, ["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "qwen3-30b-a3b",
                            "--set", "mapping.tp=4", "-o", str(tmp_path / "free")])
    assert r.exit_code == 0, r.output
    free = json.loads((tmp_path / "free" / "metadata.json").read_text())
    assert free["inputs"]["mapping.tp"] == 4 and free["set"] == {"mapping.tp": 4}
