"""Released models' per-layer configs (tests/data/hf): imported with their published parameter counts and their
patterns in one line (as `wsemoe presets` and `wsemoe eval` show them), every config field that would change the
cost and that we cannot model refused by name, and Llama 4 Maverick packed onto the wafers its bytes need. The
per-layer cost by hand on a small model: tests/test_layers.py."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.cost.node import mix, params
from wsemoe.cost.wafer import regions
from wsemoe.specs import ModelSpec, WorkloadSpec


def test_maverick_packs_onto_the_wafers_its_bytes_need():
    """Llama 4 Maverick at 16 bits on CS-3: a MoE layer (128 + 1 experts of 3·5120·8192 weights) is 32.6 GB and a
    wafer holds 40.2 GB, so whole layers would need a wafer per MoE layer (24). Its routed experts continue on the
    next wafer instead: the pipeline needs ⌈tiles / a wafer's tiles⌉ wafers or one more (issue: within one), and the wafer
    hops inside a MoE layer are counted. Written as a leading dense prefix the same bytes pack alike."""
    from wsemoe.config.hf import model_from_hf_config
    from wsemoe.config.presets import load_hardware
    from wsemoe.cost.wafer.fabric import pe_facts
    m = model_from_hf_config("tests/data/hf/llama-4-maverick-17b-128e-instruct.json")
    pe, w = pe_facts(load_hardware("cs3")), WorkloadSpec(mode="decode", B=1, seq_len=4096)
    nbytes = regions.region_bytes(m, w, 1.0)
    usable = regions.wafer_pes(pe) * regions.room(pe, m, w)[0]
    assert nbytes["moe"] < usable < 2 * nbytes["moe"]
    # in whole tiles of the lattice (cost/wafer/lattice.py): a MoE layer's attention and shared tiles, 128 expert
    # tiles, a dense layer's tiles; a wafer holds `held`
    room = regions.room(pe, m, w)[0]
    parts, held = regions.tile_parts(pe, m, nbytes, room)
    total = 24 * (parts["a"] + 128 * parts["e"] + parts["d"]) + parts["emb"] + parts["head"]
    need = float(regions.fewest_wafers(pe, m, w))
    assert np.ceil(total / held) <= need <= np.ceil(total / held) + 1 and need < 24
    dense, moe = regions.stage_layers(m, int(need), nbytes)
    assert dense.sum() == 24 and moe.sum() == 24
    assert float(regions.split(m, need, nbytes)["crossings"]) > 0
    prefix = ModelSpec(**{**m.model_dump(), "layers": None, "first_k_dense_replace": 24})
    assert np.ceil(total / held) <= regions.fewest_wafers(pe, prefix, w) <= np.ceil(total / held) + 1


# ------------------------------------------------------------------ importers

def _config(name):
    import json
    return json.loads(open(f"tests/data/hf/{name}.json").read())


@pytest.mark.parametrize("name, line, total, active", [
    # published: Llama 4 model card 400B/17B (Maverick), 109B/17B (Scout, with its vision encoder); OpenAI
    # gpt-oss model card 116.83B/5.13B (active without the 0.58B input embedding); Qwen3-Next 80B/3B; DeepSeek-V3.2
    # 671B main model (685B with its MTP module); GLM-5 744B/40B
    ("llama-4-maverick-17b-128e-instruct", "48 layers: 24 dense + 24 MoE; 36 chunked + 12 full", 400e9, 17e9),
    ("gpt-oss-120b", "36 layers: 36 MoE; 18 sliding + 18 full", 116.83e9, 5.13e9 + 201088 * 2880),
    ("qwen3-next-80b-a3b-thinking", "48 layers: 48 MoE; 36 linear + 12 full", 80e9, None),
    ("deepseek-v3.2", "61 layers: 3 dense + 58 MoE; 61 sparse", 671e9, 37e9),
    ("glm-5", "78 layers: 3 dense + 75 MoE; 78 sparse", 744e9, 40e9),
])
def test_layered_configs_import_with_their_counts(name, line, total, active):
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config(f"tests/data/hf/{name}.json")
    assert mix.describe(m) == line
    assert params.total_params(m) == pytest.approx(total, rel=0.01)
    if active is not None:
        assert params.active_params(m) == pytest.approx(active, rel=0.05)


@pytest.mark.parametrize("name, key, value, message", [
    ("gpt-oss-120b", "layer_types", ["sliding_attention"] * 35 + ["mamba"], "unknown layer type 'mamba'"),
    ("gpt-oss-120b", "layer_types", ["full_attention"] * 3, "one type per layer"),
    ("llama-4-maverick-17b-128e-instruct", "interleave_moe_layer_step", 0, "interleave_moe_layer_step"),
    ("qwen3-next-80b-a3b-thinking", "use_sliding_window", True, "use_sliding_window"),
    ("qwen3-next-80b-a3b-thinking", "mlp_only_layers", [3], "mlp_only_layers"),
])
def test_cost_changing_fields_we_cannot_model_are_errors_naming_them(name, key, value, message):
    from wsemoe.config.hf import model_from_hf_config
    from wsemoe.errors import PresetError
    data = _config(name)
    (data.get("text_config") or data)[key] = value
    with pytest.raises(PresetError) as err:
        model_from_hf_config(data)
    assert message in str(err.value) and key in str(err.value) and "\n" not in str(err.value)


def test_llama4_layer_types_and_moe_layers_are_read():
    """A config stating `layer_types` and `moe_layers` (newer transformers) is read from them, not the defaults."""
    from wsemoe.config.hf import model_from_hf_config
    data = _config("llama-4-scout-17b-16e-instruct")
    text = data["text_config"]
    text["layer_types"] = ["full_attention"] * 48
    text["moe_layers"] = list(range(0, 48, 3))
    m = model_from_hf_config(data)
    assert mix.describe(m) == "48 layers: 32 dense + 16 MoE; 48 full"


def test_presets_show_each_models_pattern_in_one_line():
    from wsemoe.report.terminal import presets
    models = presets.presets()[-1]
    cells = dict(zip(models.columns[0]._cells, models.columns[1]._cells))
    assert cells["deepseek-v3"] == "61 layers: 3 dense + 58 MoE; 61 MLA"
    assert cells["qwen3-30b-a3b"] == "48 layers: 48 MoE; 48 full"


@pytest.mark.parametrize("name", ["llama-4-maverick-17b-128e-instruct", "gpt-oss-120b", "qwen3-next-80b-a3b-thinking",
                                  "deepseek-v3.2"])
def test_eval_on_sram_runs_from_the_config_json_and_shows_the_layers(name):
    """`wsemoe eval --hardware cs3 --model <config.json> --set hardware.weight_source=sram` breaks the point into
    each layer kind and states the pattern; SRAM serving's unsaid mode is decode (it serves inference only)."""
    from wsemoe.analysis.explain.point import breakdown
    row, rows = breakdown(hardware="cs3", model=f"tests/data/hf/{name}.json", sets=["hardware.weight_source=sram"])
    shown = {(group, term): value for group, term, value, _, _ in rows}
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config(f"tests/data/hf/{name}.json")
    assert shown[("model layers", "layers")] == mix.describe(m)
    assert row["moe_layer_time_s"] > 0 and row["tokens_per_s"] > 0 and "tpot_s" in row.index   # decode
    assert ("dense_layer_time_s" in row.index and row["dense_layer_time_s"] > 0) == (params.dense_layers(m) > 0)
