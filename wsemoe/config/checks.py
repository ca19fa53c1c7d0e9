"""Cross-field rules of a sweep that no single axis value can break alone (top-k ≤ E, TP divides the
nodes, token counts exact in float64), checked on combinations of just the fields involved."""

from __future__ import annotations

import difflib
import functools

import numpy as np

from wsemoe.config.combos import as_float, combos, fail, field_values, objects, products
from wsemoe.config.schema import SweepConfig
from wsemoe.cost.balance.popularity import calibrate_zipf, zipf_imbalance
from wsemoe.errors import ConfigError
from wsemoe.specs.base import MAX_GRID_SIDE
from wsemoe.specs.rules import MODEL_RULES


def check_points(cfg: SweepConfig) -> None:
    """Cross-field rules no single axis value can break alone (top-k ≤ E, TP divides the nodes).

    Checked on the combinations of just the fields involved, so a 10⁸-point sweep costs nothing here.
    """
    _check_model_rules(cfg)
    _check_tp(cfg)
    _check_token_count(cfg)
    _check_skew(cfg)
    _check_prompt(cfg)
    _check_sram(cfg)
    _check_pe_fabric(cfg)
    if cfg.compare:
        _check_compare(cfg)
    values = {p: list(v) for f in cfg.factors() for p, v in f.items()}
    for path in cfg.pareto.group_by or []:
        _swept(path, values, ("pareto", "group_by", path))


def _check_model_rules(cfg: SweepConfig) -> None:
    """The model spec's own consistency rules (specs/rules.py) on every combination of swept model values: a
    long axis is typed at its extremes only and two axes may clash only together."""
    swept = cfg.axis_names()
    for rule in MODEL_RULES:
        paths = [f"model.{f}" for f in rule.fields]
        if not any(p in swept for p in paths) and "model" not in swept:
            continue  # the base model met it when it was built
        blame = next((p for p in [f"model.{rule.blame}", *paths] if p in swept), "model" if "model" in swept
                     else f"model.{rule.blame}")
        for c in field_values(cfg, paths):
            bad = np.asarray(rule.bad(*(c[p].astype(float) for p in paths)), dtype=bool)
            if np.any(bad):
                i = int(np.argmax(bad))
                loc = ("axes", blame) if blame in swept else tuple(blame.split("."))
                raise ConfigError(rule.message(*(c[p][i] for p in paths)), loc=loc)


def _check_compare(cfg: SweepConfig) -> None:
    """The baseline and candidate name swept axes at values they take; `over` names swept axes."""
    values = {p: list(v) for f in cfg.factors() for p, v in f.items()}
    for side in ("baseline", "candidate"):
        for path, value in getattr(cfg.compare, side).items():
            _swept(path, values, ("compare", side, path))
            if value not in values[path]:
                shown = ", ".join(str(v) for v in values[path][:8]) + (", …" if len(values[path]) > 8 else "")
                raise ConfigError(f"{side} value {value!r} is not among the values of {path} ({shown}): "
                                  f"no point would be the {side}", loc=("compare", side, path))
    for path in cfg.compare.over or []:
        _swept(path, values, ("compare", "over", path))
    if not cfg.compare.baseline:   # every point would be a baseline: the best against itself
        raise ConfigError("names no axis value: every point would be a baseline (e.g. workload.G: 1)",
                          loc=("compare", "baseline"))
    if cfg.compare.candidate and cfg.compare.candidate == cfg.compare.baseline:   # 1.00x by construction
        raise ConfigError("candidate selects the baseline's points: the comparison would be 1.00× by construction",
                          loc=("compare", "candidate"))


def _swept(path: str, values: dict, loc: tuple) -> None:
    if path not in values:
        close = difflib.get_close_matches(str(path), list(values), n=1)
        raise ConfigError(f"'{path}' is not a swept axis" + (f"; did you mean '{close[0]}'?" if close else ""), loc=loc)


MAX_TOKEN_PAIRS = 2**48  # G·B·S: tokens (or query-key pairs per head) of one attention group's micro-batch


def _largest(cfg: SweepConfig, path: str) -> float:
    """The largest value `path` takes anywhere in the sweep."""
    section, field = path.split(".", 1)
    values = [v for f in cfg.factors() for v in f.get(path, [])]
    return float(max(values)) if values else float(getattr(getattr(cfg, section), field))


def _check_token_count(cfg: SweepConfig) -> None:
    """G·B·S must stay far inside float64's exact integers; the largest values of each bound the product."""
    g, b, s = (_largest(cfg, p) for p in ("workload.G", "workload.B", "workload.seq_len"))
    if g * b * s > MAX_TOKEN_PAIRS:
        raise ConfigError(f"G·B·seq_len reaches {g * b * s:.3g}; at most 2**48 ({MAX_TOKEN_PAIRS:.3g}) is supported",
                          loc=("workload",))


LAYOUT_FIELDS = ("hardware.rows", "hardware.cols", "hardware.wafers", "hardware.weight_source", "hardware.topology",
                 "mapping.tp", "mapping.strategy", "mapping.ftd", "workload.mode", "workload.G",
                 "workload.tokens_per_device", "mapping.placement")


def _layout(cfg: SweepConfig) -> dict[str, np.ndarray]:
    """Every combination the sweep takes of the fields a layout depends on (hardware presets resolved)."""
    return field_values(cfg, LAYOUT_FIELDS)


def _check_tp(cfg: SweepConfig) -> None:
    """TP must divide the nodes (HER: the dies of one wafer); on a weight-streaming wafer it must span them all:
    the model runs one attention group there (no node-to-node phases), so smaller groups would multiply tokens
    for free. Decode by tokens per device needs B = tokens_per_device·tp/G to be a whole number of sequences."""
    for c in _layout(cfg):
        _check_tp_chunk(cfg, c)


def _check_tp_chunk(cfg: SweepConfig, c: dict) -> None:
    wafers = products(c["hardware.wafers"])
    per_wafer = c["hardware.rows"].astype(float) * c["hardware.cols"].astype(float)
    nodes = per_wafer * wafers
    tp = as_float(c["mapping.tp"])
    given = ~np.isnan(tp)
    tp_ = np.where(given, tp, nodes)
    her = c["mapping.strategy"] == "her"
    span = np.where(her & (c["hardware.topology"] == "mesh"), per_wafer, nodes)
    fail(cfg, given & (np.mod(span, tp_) != 0), "mapping.tp",
          lambda i: f"mapping.tp = {int(tp[i])} does not divide the {int(span[i])} "
                    + ("dies of one wafer (her keeps TP groups inside a wafer)" if her[i] else "nodes"))
    _check_ftd(cfg, c, tp_, span, her)
    _check_explicit(cfg, c, tp_, nodes)
    wr, wc = products(c["hardware.wafers"], 0), products(c["hardware.wafers"], 1)
    grid = np.maximum(c["hardware.rows"].astype(float) * wr, c["hardware.cols"].astype(float) * wc)
    fail(cfg, (c["hardware.topology"] == "mesh") & (grid > MAX_GRID_SIDE),
          "hardware.wafers" if "hardware.wafers" in cfg.axis_names() else "hardware.rows",
          lambda i: f"a mesh of {int(c['hardware.rows'][i] * wr[i])}×{int(c['hardware.cols'][i] * wc[i])} dies: at most "
                    f"{MAX_GRID_SIDE} a side is modelled (the mesh engine's work grows with the square of the dies)")
    streamed = c["hardware.weight_source"] == "streamed"
    fail(cfg, streamed & (wafers > 1), "hardware.wafers",
          lambda i: "several wafers in weight-streaming mode are not modelled; use wafers: [1, 1]")
    fail(cfg, streamed & given & (tp != nodes), "mapping.tp",
          lambda i: f"mapping.tp = {int(tp[i])} on a weight-streaming wafer: it runs one attention group "
                    f"over all {int(nodes[i])} nodes; leave tp unset")
    per_device = as_float(c["workload.tokens_per_device"])
    by_device = ~np.isnan(per_device)
    if not by_device.any():
        return
    fail(cfg, by_device & (c["workload.mode"] != "decode"), "workload.tokens_per_device",
          lambda i: "tokens_per_device sets the decode batch; use workload.B in other modes")
    if "workload.B" in cfg.axis_names():
        raise ConfigError("workload.B is not used when tokens_per_device is set; sweep one of them",
                          loc=("axes", "workload.B"))
    g = c["workload.G"].astype(float)
    fail(cfg, by_device & (np.mod(per_device * tp_, g) != 0), "workload.tokens_per_device",
          lambda i: f"tokens_per_device·tp = {int(per_device[i] * tp_[i])} is not a multiple of G = {int(g[i])} "
                    "(B must be whole sequences)")


def _check_explicit(cfg: SweepConfig, c: dict, tp: np.ndarray, nodes: np.ndarray) -> None:
    """strategy explicit: mapping.placement gives every node of the system its group id, each of the nodes/tp
    groups 0 … nodes/tp − 1 taking exactly tp nodes."""
    loc = ("axes", "mapping.placement") if "mapping.placement" in cfg.axis_names() else ("mapping", "placement")
    for i in np.flatnonzero(c["mapping.strategy"] == "explicit"):
        ids, n, size = c["mapping.placement"][i], int(nodes[i]), int(tp[i])
        if ids is None:
            raise ConfigError(f"strategy explicit needs mapping.placement: the group id of each of the {n} nodes",
                              loc=loc)
        if len(ids) != n:
            raise ConfigError(f"mapping.placement has {len(ids):,} group ids; strategy explicit needs one per node: "
                              f"{n}", loc=loc)
        counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=n // size)
        if len(counts) > n // size or np.any(counts != size):
            raise ConfigError(f"mapping.placement must use each group id 0…{n // size - 1} exactly tp = {size} "
                              "times", loc=loc)


def _check_ftd(cfg: SweepConfig, c: dict, tp: np.ndarray, span: np.ndarray, her: np.ndarray) -> None:
    """An explicit FTD tile (fr, fc) must hold one member of every group: fr·fc = groups (HER: per wafer), fr
    dividing the rows and fc the columns it tiles."""
    tiled = ~np.equal(c["mapping.ftd"], None) & np.isin(c["mapping.strategy"].astype(str), ("er", "her"))
    for i in np.flatnonzero(tiled):  # explicit tiles only (few distinct ones)
        ftd = c["mapping.ftd"][i]
        wr, wc = (1, 1) if her[i] else tuple(c["hardware.wafers"][i])
        rows, cols = int(c["hardware.rows"][i]) * wr, int(c["hardware.cols"][i]) * wc
        groups = int(span[i] // tp[i])
        fr, fc = (int(v) for v in ftd)
        if fr * fc != groups or rows % fr or cols % fc:
            path = "mapping.ftd"
            raise ConfigError(f"ftd ({fr}, {fc}) must hold one member of each of the {groups} groups: fr·fc = "
                              f"{groups}, fr dividing {rows} rows and fc {cols} columns",
                              loc=("axes", path) if path in cfg.axis_names() else ("mapping", "ftd"))


PROMPT_FIELDS = ("workload.prompt_len", "workload.mode", "workload.seq_len")


def _check_prompt(cfg: SweepConfig) -> None:
    """A prompt length (for ttft_s) belongs to decode, and the decode context (seq_len) holds the prompt."""
    if cfg.workload.prompt_len is None and "workload.prompt_len" not in cfg.axis_names():
        return
    for c in field_values(cfg, PROMPT_FIELDS):
        _check_prompt_chunk(cfg, c)


def _check_prompt_chunk(cfg: SweepConfig, c: dict) -> None:
    prompt = as_float(c["workload.prompt_len"])
    given = ~np.isnan(prompt)
    fail(cfg, given & (c["workload.mode"] != "decode"), "workload.prompt_len",
          lambda i: f"prompt_len sets the prompt behind a decode point's ttft_s; in {c['workload.mode'][i]} mode "
                    "the prompt is seq_len (prefill gives ttft_s itself)")
    seq = c["workload.seq_len"].astype(float)
    fail(cfg, given & (prompt > seq), "workload.prompt_len",
          lambda i: f"prompt_len = {int(prompt[i])} exceeds the decode context seq_len = {int(seq[i])}, "
                    "which holds the prompt")


SRAM_FIELDS = ("hardware.weight_source", "workload.mode", "workload.draft_tokens", "workload.accepted_tokens_per_step",
               "workload.draft_token_s", "balance.balancer", "workload.G", "mapping.tp", "mapping.wafer_io",
               "hardware.sync_io_stall_s", "hardware.name")


def _check_sram(cfg: SweepConfig) -> None:
    """SRAM serving is inference on a PE fabric: no training, no batch tiling, TP groups or expert replicas (its
    layout is its own); speculative decoding is modelled there only."""
    for c in field_values(cfg, SRAM_FIELDS):
        _check_sram_chunk(cfg, c)


def _check_sram_chunk(cfg: SweepConfig, c: dict) -> None:
    sram = c["hardware.weight_source"] == "sram"
    fail(cfg, sram & (c["workload.mode"] == "train"), "workload.mode",
          lambda i: "weight_source: sram serves inference (decode or prefill); training streams its weights "
                    "(weight_source: streamed)")
    fail(cfg, sram & (c["workload.G"].astype(float) != 1), "workload.G",
          lambda i: "batch tiling (G) is not modelled for weight_source: sram; its B sequences stream through the "
                    "pipeline")
    _pe_level(cfg, c, sram, "weight_source: sram places attention on PE regions (mapping.pe_placement)",
              "for weight_source: sram")
    spec = (c["workload.draft_tokens"].astype(float) > 0) | (c["workload.accepted_tokens_per_step"].astype(float) != 1) \
        | (c["workload.draft_token_s"].astype(float) > 0)
    fail(cfg, spec & ~sram, "workload.draft_tokens",
          lambda i: "speculative decoding (draft_tokens, accepted_tokens_per_step, draft_token_s) is modelled for "
                    "weight_source: sram")
    fail(cfg, spec & sram & (c["workload.mode"] != "decode"), "workload.draft_tokens",
          lambda i: "speculative decoding applies to decode")
    sync = c["mapping.wafer_io"] == "sync"
    fail(cfg, sync & ~sram, "mapping.wafer_io",
          lambda i: "mapping.wafer_io: sync (a synchronous wafer I/O stall) is modelled for weight_source: sram")
    fail(cfg, sync & sram & (c["hardware.sync_io_stall_s"].astype(float) <= 0), "mapping.wafer_io",
          lambda i: "mapping.wafer_io: sync charges hardware.sync_io_stall_s per transfer, and "
                    f"{c['hardware.name'][i]} has none (0): set it (cs3 carries its launch software's fitted value)")


PE_FABRIC_FIELDS = ("hardware.pe_fabric", "balance.balancer", "mapping.tp", "workload.overlap")


def _check_pe_fabric(cfg: SweepConfig) -> None:
    """A weight-streaming wafer at PE level is one attention group over the fabric with one region per expert: no TP
    groups, no expert replicas; and its edge and regions terms are the weights and compute terms seen at PE level,
    which bound a stage but never add to it (overlap none would add them)."""
    for c in field_values(cfg, PE_FABRIC_FIELDS):
        _check_pe_fabric_chunk(cfg, c)


def _check_pe_fabric_chunk(cfg: SweepConfig, c: dict) -> None:
    on = c["hardware.pe_fabric"].astype(bool)
    fail(cfg, on & (c["workload.overlap"] == "none"), "workload.overlap",
          lambda i: "overlap none with hardware.pe_fabric would add the edge and regions terms to the weights and "
                    "compute terms they are the PE-level view of; use layer or stage")
    _pe_level(cfg, c, on, "with hardware.pe_fabric the wafer runs attention as one group over its PEs",
              "with hardware.pe_fabric (one region per expert)")


def _pe_level(cfg: SweepConfig, c: dict, on: np.ndarray, attention: str, replicas: str) -> None:
    """The rule both PE-level modes share: node-level TP groups and expert replicas do not apply where `on`;
    `attention` says where attention runs instead, `replicas` where replicas are not modelled."""
    fail(cfg, on & ~np.equal(c["mapping.tp"], None), "mapping.tp",
          lambda i: f"mapping.tp applies to node-level models; {attention}")
    fail(cfg, on & (c["balance.balancer"] != "none"), "balance.balancer",
          lambda i: f"balancer {c['balance.balancer'][i]}: expert replicas are not modelled {replicas}")


SKEW_FIELDS = ("balance.skew_target", "balance.skew_devices", "balance.seed", "balance.distribution",
               "model.num_experts", "model.num_experts_per_tok", "hardware.rows", "hardware.cols", "hardware.wafers")


def _check_skew(cfg: SweepConfig) -> None:
    """A skew target must be reachable by some Zipf exponent on its layout (the exponent is solved per point)."""
    if cfg.balance.skew_target is None and "balance.skew_target" not in cfg.axis_names():
        return
    seen: set = set()
    for v in field_values(cfg, SKEW_FIELDS):
        on = ~np.equal(v["balance.skew_target"], None) & (v["balance.distribution"] == "zipf")
        if not on.any():
            continue
        nodes = v["hardware.rows"].astype(float) * v["hardware.cols"].astype(float) * products(v["hardware.wafers"])
        given = as_float(v["balance.skew_devices"])
        devices = np.where(np.isnan(given) | (given == 0), nodes, given)
        keys = zip(as_float(v["balance.skew_target"])[on].tolist(), v["model.num_experts"][on].astype(int).tolist(),
                   v["model.num_experts_per_tok"][on].astype(int).tolist(),
                   devices[on].astype(int).tolist(), v["balance.seed"][on].astype(int).tolist(),
                   ~np.isnan(given[on]) & (given[on] != 0))
        for target, experts, k, n, seed, by_devices in keys:
            if (target, experts, k, n, seed) in seen:
                continue
            seen.add((target, experts, k, n, seed))
            # reachable when the target lies between the exponents' ends (uniform load is the same for every seed)
            if _zipf_end(0.0, experts, n, 0, k) <= target <= _zipf_end(SKEW_HI, experts, n, seed, k):
                continue
            path = "balance.skew_devices" if by_devices else "balance.skew_target"
            try:
                calibrate_zipf(target, experts, n, seed, SKEW_HI, top_k=k)
            except ValueError as exc:
                raise ConfigError(str(exc), loc=("axes", path) if path in cfg.axis_names()
                                  else tuple(path.split("."))) from None


SKEW_HI = 64.0  # the largest Zipf exponent the skew calibration tries (calibrate_zipf's own default)


@functools.lru_cache(maxsize=4096)
def _zipf_end(s: float, experts: int, devices: int, seed: int, top_k: int) -> float:
    return zipf_imbalance(s, experts, devices, seed, top_k)
