"""The `wse3_hops` reading: CS-3's unpublished hop, turn and relay cycles as WSE-2's (default) or as reported for
WSE-3; it moves only cs3, its default is the preset as shipped, and validate's context row shows how far the
Cerebras rows move under the other option."""

from __future__ import annotations

import wsemoe
from wsemoe.config import readings as registry
from wsemoe.config.loader import load_config
from wsemoe.validate import cerebras

MIXED = {"name": "mixed", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
         "workload": {"mode": "decode", "seq_len": 2048},
         "zip": [{"hardware": ["cs3", "nvl72"], "hardware.weight_source": ["sram", "resident"]}]}


def test_default_is_the_shipped_preset_and_the_other_option_moves_only_cs3():
    cfg = load_config(MIXED)
    plan = {s.reading.name: s for s in registry.plan(cfg, registry.load())}
    assert plan["wse3_hops"].configured == "as_wse2"   # the preset's 1, 0, 5
    moved = registry.apply(cfg, {"wse3_hops": "characterised"})
    pe = moved.presets["cs3"]["pe"]
    assert (pe["hop_cycles"], pe["turn_cycles"], pe["relay_cycles"]) == (2, 20, 16)
    assert moved.presets["nvl72"] == cfg.presets["nvl72"]
    slow, fast = wsemoe.evaluate(moved), wsemoe.evaluate(cfg)
    on = fast["hardware"] == "cs3"
    assert (slow.loc[on, "tokens_per_s_per_user"] < fast.loc[on, "tokens_per_s_per_user"]).all()
    assert (slow.loc[~on, "tokens_per_s_per_user"] == fast.loc[~on, "tokens_per_s_per_user"]).all()


def test_the_context_row_refits_the_launch_stall_and_slows_the_post_launch_rows():
    ms = cerebras.models()
    (r,) = cerebras.fabric_rows(ms)
    assert r["kind"] == "info" and r["reading"] == "wse3_hops=characterised"
    stall, *rows = r["model"].split("; ")
    assert stall.startswith("launch stall refitted") and [x.rsplit(" ", 1)[0] for x in rows] == \
        ["70B launch", "70B post", "405B post"]
    got = [float(x.rsplit(" ", 1)[-1].rstrip("×")) for x in rows]
    default = [cerebras.speed(ms[name], wafers, "post", draft_s=cerebras.draft_time(ms)) / cerebras.POST_SPEED[name][0]
               for name, wafers in (("llama-3.1-70b", 4), ("llama-3.1-405b", None))]
    assert got[1] < default[0] and got[2] < default[1]   # more cycles per hop, turn and relay: slower
