"""The readings registry: it loads strictly (one line per bad entry, did-you-mean on near misses), every reading
it lists as varied moves an output, and options apply exactly what they say to the presets they select."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import wsemoe
from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.config import readings as registry
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError

SMALL = {"name": "small", "hardware": "cs2", "model": "qwen3-30b-a3b",
         "workload": {"mode": "train", "seq_len": 4096, "attn_kernel": "materialized"},
         "sparsity": {"vary": "num_experts_per_tok", "values": [8, 2], "hold": "active"},
         "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 4, 16]},
         "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}

GOOD = {"x": {"question": "q?", "default": "a", "why": "because",
              "options": {"a": {"set": {"workload.attn_kernel": "flash"}, "evidence": "e", "source": "s"},
                          "b": {"set": {"workload.attn_kernel": "materialized"}, "evidence": "e", "source": "s"}}}}


def _write(tmp_path, data) -> str:
    path = tmp_path / "readings.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


# ---- the registry ------------------------------------------------------------------------------------------

def test_shipped_registry_loads_with_every_default_an_option():
    reg = wsemoe.readings()
    assert {"attn_kernel", "kept_activations", "hold", "d2d_bandwidth", "comm_overlap", "fixed_latency"} <= set(reg)
    for r in reg.values():
        assert r.default in r.options and len(r.options) >= 2 and r.why
        assert all(o.evidence and o.source for o in r.options.values())


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d["x"]["options"]["a"].update(evidnce="typo"), "unknown key 'evidnce'; did you mean 'evidence'?"),
    (lambda d: d["x"].update(defualt="a"), "unknown key 'defualt'; did you mean 'default'?"),
    (lambda d: d["x"]["options"]["a"]["set"].update({"workload.attn_kernal": "flash"}),
     "unknown field 'attn_kernal' of workload; did you mean 'workload.attn_kernel'?"),
    (lambda d: d["x"]["options"]["a"]["set"].update({"workload.attn_kernel": "tiled"}), "Input should be"),
    (lambda d: d["x"]["options"]["a"]["set"].update({"hardware.link_bw_bytes_per_s": -1.0}), "greater than or equal to 1e-30"),
    (lambda d: d["x"]["options"]["a"]["set"].update({"workload.seq_len": True}), "valid integer"),
    (lambda d: d["x"].update(default="c"), "default 'c' is not one of its options (a, b)"),
    (lambda d: d["x"]["options"].pop("b"), "at least two options"),
    (lambda d: d["x"].update(applies_to={"workload.mode": "train"}), "a list of the values"),
    (lambda d: d["x"].update(applies_to={"workload.mode": ["training"]}), "Input should be"),
])
def test_registry_refuses_bad_entries_in_one_line(tmp_path, edit, needle):
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    edit(data)
    with pytest.raises(ConfigError) as exc:
        registry.load(_write(tmp_path, data))
    assert needle in exc.value.line() and "\n" not in exc.value.line()
    assert str(tmp_path / "readings.yaml") in exc.value.line()  # names the file and the key path


def test_pending_reading_is_listed_not_varied_and_names_fields_the_model_lacks(tmp_path):
    """A reading whose fields the model lacks yet is listed as pending, never varied."""
    data = {**GOOD, "later": {"question": "q?", "default": "a", "why": "w", "pending": "the field does not exist yet",
                              "options": {"a": {"set": {"hardware.launch_s": 1.0}, "evidence": "e", "source": "s"},
                                          "b": {"set": {"hardware.launch_s": 0.0}, "evidence": "e", "source": "s"}}}}
    reg = registry.load(_write(tmp_path, data))
    assert reg["later"].pending and not reg["x"].pending
    assert registry.status(load_config(SMALL), reg["later"]).state == "pending"
    assert not [r.name for r in wsemoe.readings().values() if r.pending]  # every shipped reading is live


# ---- a sweep under readings --------------------------------------------------------------------------------

def test_status_configured_pinned_and_not_applicable():
    plan = {s.reading.name: s for s in registry.plan(load_config("sweeps/bta_topk.yaml"), registry.load())}
    assert (plan["attn_kernel"].configured, plan["kept_activations"].configured, plan["hold"].configured) == \
        ("per_head", "streamed", "active")
    assert plan["d2d_bandwidth"].state == plan["comm_overlap"].state == "not applicable"
    plan = {s.reading.name: s for s in registry.plan(load_config("sweeps/moentwine_vs_nvl72.yaml"), registry.load())}
    assert plan["comm_overlap"].state == "pinned" and "workload.comm_overlap is an axis" in plan["comm_overlap"].detail
    assert plan["d2d_bandwidth"].configured == "per_link" and plan["attn_kernel"].state == "not applicable"
    # an unset inter-wafer bandwidth inherits the link's: the single-wafer preset still reads per link
    one = {s.reading.name: s for s in registry.plan(load_config("sweeps/moentwine_mapping.yaml"), registry.load())}
    assert one["d2d_bandwidth"].configured == "per_link"


EXTRA_SWEEPS = {   # the kinds of system no shipped sweep runs alone: a streamed and an SRAM-serving CS-3 with an MLA
    # model, NVL72 training, an 8-GPU server and the same servers swept past one
    "mla_streamed": {"hardware": "cs3", "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 4096}},
    "mla_sram": {"hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "deepseek-v3",
                 "workload": {"mode": "decode", "seq_len": 4096, "prompt_len": 1024}},
    "nvl72_train": {"hardware": "nvl72", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 4096}},
    # TP 1: attention DP, so the experts' dispatch and combine calls run (one group of every GPU runs no
    # all-to-all, and scale_out_call, the cost of such a call, would move nothing)
    "h100_server": {"hardware": "h100-sxm", "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 4096},
                    "mapping": {"tp": 1}},
}


def _sweep(name, tmp_path):
    if name.startswith("sweeps/"):
        return load_config(name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, **EXTRA_SWEEPS[name], "axes": {"workload.B": [1, 8]}}))
    return load_config(str(path))


@pytest.mark.parametrize("name", [*sorted(str(p) for p in Path("sweeps").glob("*.yaml")), *EXTRA_SWEEPS])
def test_every_varied_reading_moves_an_output(name, tmp_path):
    """A reading `readings` lists as varied must change some output of the sweep's points under one of its
    options: mla_cache was listed on a streamed CS-3 and scale_out_dispatch on NVL72, where neither is read."""
    import numpy as np

    from wsemoe.sweep.engine import evaluate_block

    cfg = _sweep(name, tmp_path)
    index = np.unique(np.linspace(0, cfg.size() - 1, min(cfg.size(), 24)).astype(np.int64))
    for st in registry.plan(cfg, registry.load()):
        if st.state != "varied":
            continue
        frames = [evaluate_block(registry.apply(cfg, {st.reading.name: o}), index=index).to_frame()
                  for o in st.reading.options]
        outputs = [c for c in frames[0] if "." not in c and frames[0][c].dtype.kind in "fi"]
        assert any(not np.allclose(f[c].to_numpy(float), frames[0][c].to_numpy(float), rtol=1e-12, equal_nan=True)
                   for f in frames[1:] for c in outputs), f"{st.reading.name} varies nothing on {name}"


def test_scale_out_readings_apply_where_servers_are_swept_past_one(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", **EXTRA_SWEEPS["h100_server"],
                                    "axes": {"workload.B": [1, 8], "hardware.cols": [8, 16]}}))
    plan = {s.reading.name: s for s in registry.plan(load_config(str(path)), registry.load())}
    assert plan["scale_out_dispatch"].state == "varied"
    one = {s.reading.name: s for s in registry.plan(_sweep("h100_server", tmp_path), registry.load())}
    assert one["scale_out_dispatch"].state == "not applicable" and "spans_servers" in one["scale_out_dispatch"].detail


def test_mla_cache_applies_only_where_tp_ranks_hold_the_cache(tmp_path):
    # a weight-streaming wafer spreads its cache over the dies (cost/stagecost.kv_node) and SRAM serving lays it
    # out per PE: neither reads mapping.mla_cache, so listing it as varied there would report a no-op as a reading
    def state(hardware):
        path = tmp_path / "s.yaml"
        path.write_text(f"name: s\nhardware: {hardware}\nmodel: deepseek-v3\nworkload: {{mode: decode, seq_len: 4096}}\n"
                        "axes:\n  workload.B: [1, 8]\n")
        return {s.reading.name: s for s in registry.plan(load_config(str(path)), registry.load())}["mla_cache"]
    assert state("cs3").state == "not applicable" and "weight_source is streamed" in state("cs3").detail
    assert state("{preset: cs3, weight_source: sram}").state == "not applicable"
    assert state("nvl72").state == "varied"


def test_apply_equals_the_config_edited_by_hand():
    cfg = load_config(SMALL)
    by_hand = {**SMALL, "workload": {**SMALL["workload"], "attn_kernel": "flash"},
               "hardware": {"preset": "cs2", "kept_activations": "node"},
               "sparsity": {**SMALL["sparsity"], "hold": "width"}}
    moved = registry.apply(cfg, {"attn_kernel": "flash", "kept_activations": "node", "hold": "width"})
    assert moved.config_hash() == load_config(by_hand).config_hash()
    pd.testing.assert_frame_equal(wsemoe.evaluate(moved), wsemoe.evaluate(by_hand))


def test_apply_moves_only_the_presets_a_rule_selects():
    """The per-die reading changes the wafer preset of a hardware axis and leaves NVL72 as it is."""
    base = {"name": "two", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 1024, "B": 64}, "mapping": {"tp": 4},
            "axes": {"hardware": ["wsc-b200-8x8", "nvl72"]}}
    moved = registry.apply(load_config(base), {"d2d_bandwidth": "per_die"})
    assert moved.presets["wsc-b200-8x8"]["link_bw_bytes_per_s"] == 2.25e11
    assert moved.presets["wsc-b200-8x8"]["port_bw_bytes_per_s"] == 9.0e11
    assert moved.presets["nvl72"] == load_config(base).presets["nvl72"]
    by_hand = {**base, "hardware": {"preset": "wsc-b200-8x8", "link_bw_bytes_per_s": 2.25e11,
                                    "inter_wafer_link_bw_bytes_per_s": 2.25e11, "port_bw_bytes_per_s": 9.0e11}}
    by_hand.pop("axes")
    got = wsemoe.evaluate(moved)
    row = got[got["hardware"] == "wsc-b200-8x8"].drop(columns="hardware").reset_index(drop=True)
    want = wsemoe.evaluate(by_hand).reset_index(drop=True)
    pd.testing.assert_frame_equal(row[want.columns], want, check_categorical=False)


@pytest.mark.parametrize("choice, needle", [
    ({"comm_overlap": "microbatch"}, "[readings -> comm_overlap] comm_overlap is not applicable for this sweep"),
    ({"attn_kernel": "tiled"}, "'tiled' is not an option of attn_kernel (materialized, per_head, flash)"),
    ({"attn_kernal": "flash"}, "unknown reading 'attn_kernal'; did you mean 'attn_kernel'?"),
    ({"fixed_latency": "none"}, "[readings -> fixed_latency] fixed_latency is not applicable for this sweep"),
])
def test_apply_refuses_in_one_line(choice, needle):
    with pytest.raises(ConfigError) as exc:
        registry.apply(load_config(SMALL), choice)
    assert needle in exc.value.line()


def test_a_swept_reading_is_pinned_not_varied():
    cfg = load_config({**SMALL, "axes": {**SMALL["axes"], "workload.attn_kernel": ["materialized", "flash"]}})
    result = rd.evaluate(cfg)
    states = {s["name"]: s["state"] for s in result.meta["readings"]}
    assert states["attn_kernel"] == "pinned" and "attn_kernel" not in result.varied
    with pytest.raises(ConfigError, match="attn_kernel is pinned"):
        registry.apply(cfg, {"attn_kernel": "flash"})




def test_a_near_miss_of_a_derived_fact_is_suggested(tmp_path):
    path = tmp_path / "reg.yaml"
    path.write_text(yaml.safe_dump({"r1": {
        "question": "q?", "why": "w", "default": "a", "applies_to": {"hardware.spans_server": [True]},
        "options": {"a": {"set": {}, "evidence": "e", "source": "s"},
                    "b": {"set": {"mapping.mla_cache": "sharded"}, "evidence": "e", "source": "s"}}}}))
    with pytest.raises(ConfigError) as exc:
        registry.load(path)
    assert exc.value.line().endswith("unknown field 'spans_server' of hardware; did you mean 'hardware.spans_servers'?")
    path.write_text(path.read_text().replace("spans_server:", "spans_servers:").replace("true", "'yes'"))
    with pytest.raises(ConfigError) as exc:   # a yes/no fact takes true or false, strictly
        registry.load(path)
    assert "spans_servers" in exc.value.line() and "bool" in exc.value.line()
