"""Issue 25's periphery: real config.json files of today's MoE types, their importers, the refusal of keys
that may change the cost, checkpoint-native formats with their scale bytes, and presets checked against
their published parameter counts (resolvable by Hugging Face id)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from wsemoe.config import presets
from wsemoe.config.hf import model_from_hf_config
from wsemoe.config.hf_quant import checkpoint_formats, native_formats
from wsemoe.cost.node import formats, params
from wsemoe.errors import PresetError
from wsemoe.validate import published_active
from wsemoe.validate.deviations import KNOWN

DATA = Path(__file__).parent / "data" / "hf"


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# ---- every config in tests/data/hf has a source line -------------------------------------------------------

def test_every_config_is_named_in_sources():
    sources = (DATA / "SOURCES.md").read_text()
    new = ["llama-4-maverick-17b-128e-instruct.json", "gpt-oss-120b.json", "glm-4.5-air.json", "glm-5.json",
           "minimax-m2.5.json", "qwen3-next-80b-a3b-thinking.json", "qwen3.5-397b-a17b.json", "kimi-k2.5.json",
           "kimi-k2-instruct.json", "deepseek-v3.2.json", "deepseek-v3.2-nvfp4/", "qwen3.5-397b-a17b-nvfp4/"]
    for name in new:
        assert f"| {name} |" in sources, name
        assert (DATA / name).exists()


# ---- importers on their real configs: hand-derived counts ---------------------------------------------------

def test_glm45_air_hand_count():
    """GLM-4.5-Air: 46 layers (1 dense), GQA 96/8 heads of 128 with q/k/v biases, 128 experts of 1408 + 1 shared,
    a sigmoid router with a per-expert bias; the MTP layer not counted."""
    m = model_from_hf_config(DATA / "glm-4.5-air.json")
    H, d, nh, nkv, V = 4096, 128, 96, 8, 151552
    attn = H * (nh + 2 * nkv) * d + nh * d * H + (nh + 2 * nkv) * d + 2 * H  # projections, biases, two norms
    moe = 128 * 3 * H * 1408 + 3 * H * 1408 + H * 128 + 128
    expected = 46 * attn + 45 * moe + 3 * H * 10944 + 2 * V * H + H
    assert float(params.total_params(m)) == expected
    assert (m.qkv_bias, m.qk_norm, m.router_bias, m.first_k_dense_replace) == (True, False, True, 1)


def test_minimax_m2_reads_expert_width_and_routing_bias():
    m = model_from_hf_config(DATA / "minimax-m2.5.json")
    assert (m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size) == (256, 8, 1536)
    assert (m.num_hidden_layers, m.first_k_dense_replace, m.n_shared_experts) == (62, 0, 0)
    assert m.router_bias and m.qk_norm
    H = 3072
    attn = H * (48 + 16) * 128 + 48 * 128 * H + 2 * 128 + 2 * H
    moe = 256 * 3 * H * 1536 + H * 256 + 256
    assert float(params.total_params(m)) == 62 * (attn + moe) + 2 * 200064 * H + H


def test_kimi_k25_is_kimi_k2_inside_text_config():
    """K2.5 wraps K2's language model in text_config; the vision tower is not counted."""
    k2, k25 = model_from_hf_config(DATA / "kimi-k2-instruct.json"), model_from_hf_config(DATA / "kimi-k2.5.json")
    fields = lambda m: {k: v for k, v in m.model_dump().items() if k not in ("name", "source")}  # noqa: E731
    assert fields(k2) == fields(k25)
    assert (k2.num_experts, k2.num_attention_heads, k2.first_k_dense_replace, k2.attention) == (384, 64, 1, "mla")


def test_kimi_k25_error_names_the_nested_key():
    data = _load("kimi-k2.5.json")
    data["text_config"]["num_hidden_layers"] = None
    with pytest.raises(PresetError) as e:
        model_from_hf_config(data)
    assert e.value.loc == ("hf_config -> text_config", "num_hidden_layers")


def test_a_wrappers_top_level_tie_and_quantization_reach_its_language_model():
    """A vision-language wrapper (qwen3_5_moe, llama4, kimi_k25) states `tie_word_embeddings` and a quantized
    checkpoint's `quantization_config` at its top level or in `text_config`; either place reaches the language
    model, for every wrapper type alike (Kimi K2.5's top-level quantization was dropped, Qwen3.5's tie ignored)."""
    qwen = _load("qwen3.5-397b-a17b.json")
    untied = model_from_hf_config(qwen)
    qwen["tie_word_embeddings"] = True
    tied = model_from_hf_config(qwen)
    assert (untied.tie_word_embeddings, tied.tie_word_embeddings) == (False, True)
    kimi = _load("kimi-k2.5.json")
    kimi["quantization_config"] = kimi["text_config"].pop("quantization_config")
    assert checkpoint_formats(kimi) == {"expert_weight_format": "int4_g32", "attn_weight_format": "bf16"}


def test_a_wrapper_stating_a_key_twice_differently_is_refused_by_name():
    qwen = _load("qwen3.5-397b-a17b.json")
    qwen["tie_word_embeddings"], qwen["text_config"]["tie_word_embeddings"] = True, False
    with pytest.raises(PresetError) as err:
        model_from_hf_config(qwen)
    assert err.value.loc[-1] == "tie_word_embeddings" and "differs from text_config" in str(err.value)


@pytest.mark.parametrize("fname", ["gpt-oss-120b.json", "llama-4-maverick-17b-128e-instruct.json", "glm-5.json",
                                   "qwen3-next-80b-a3b-thinking.json", "qwen3.5-397b-a17b.json",
                                   "deepseek-v3.2.json"])
def test_layered_types_import_or_fail_by_name(fname):
    """Types the per-layer spec covers (branch `layers`): until then a one-line error naming the key."""
    try:
        model_from_hf_config(DATA / fname)
    except PresetError as e:
        assert e.loc and e.loc[-1] in ("model_type", "layer_types")
        assert "\n" not in e.message


# ---- a key that may change the cost is refused by name -----------------------------------------------------

@pytest.mark.parametrize("fname, key, value", [
    ("glm-4.5-air.json", "layer_types", ["sliding_attention"] * 46),
    ("glm-4.5-air.json", "attn_output_gate", True),
    ("minimax-m2.5.json", "attn_type_list", [0] + [1] * 61),
    ("qwen3-30b-a3b.json", "sliding_window", 4096),
    ("kimi-k2-instruct.json", "index_topk", 2048),
    ("mixtral-8x7b-v0.1.json", "some_future_attention_variant", "gated"),
])
def test_unmodelled_key_is_an_error_naming_it(fname, key, value):
    data = _load(fname)
    data[key] = value
    if key == "sliding_window":
        data["use_sliding_window"] = True
    with pytest.raises(PresetError) as e:
        model_from_hf_config(data)
    named = e.value.loc[-1]
    # Qwen's sliding window comes with max_window_layers: switching it on makes both count; either is named.
    assert named == key or (key == "sliding_window" and named == "max_window_layers")
    assert named in e.value.message


@pytest.mark.parametrize("key, value", [("sliding_window", 4096), ("layer_types", []), ("attn_output_gate", False),
                                        ("top_p", 0.9), ("rope_scaling", {"type": "yarn", "factor": 4})])
def test_switched_off_or_neutral_keys_pass(key, value):
    data = _load("qwen3-30b-a3b.json")  # use_sliding_window: false switches sliding_window off
    data[key] = value
    model_from_hf_config(data)


# ---- native formats: scale bytes, compute peaks, what stays 16-bit ------------------------------------------

def test_scale_bytes_per_value():
    """Hand-derived: values plus one scale per block, in bytes per value."""
    assert formats.nbytes("mxfp4") == 0.5 + 1 / 32          # E8M0 per 32
    assert formats.nbytes("nvfp4") == 0.5 + 1 / 16          # E4M3 per 16
    assert formats.nbytes("fp8_block") == 1 + 4 / 16384     # FP32 per 128 x 128
    assert formats.nbytes("int4_g32") == 0.5 + 2 / 32       # BF16 per 32
    for fmt in formats.NATIVE:  # every native format costs more than its bare values, less than the next width up
        bare = {"fp4": 0.5, "fp8": 1.0, "bf16": 0.5}[formats.COMPUTE[fmt]] if fmt != "int4_g32" else 0.5
        assert bare < formats.nbytes(fmt) < 2 * bare


def test_native_formats_run_at_their_compute_peak():
    hw = presets.load_hardware("nvl72") if "nvl72" in presets.names("hardware") else None
    if hw is None or getattr(hw, "node_peak_flops_fp4", None) is None:
        pytest.skip("no hardware preset with an FP4 peak")
    assert formats.peak(hw, "nvfp4") == formats.peak(hw, "fp4") == formats.peak(hw, "mxfp4")
    assert formats.peak(hw, "fp8_block") == formats.peak(hw, "fp8")
    assert formats.peak(hw, "int4_g32") == formats.peak(hw, "bf16")  # weight-only: 16-bit matmuls


@pytest.mark.parametrize("source, expected", [
    ("gpt-oss-120b.json", {"expert_weight_format": "mxfp4", "attn_weight_format": "bf16"}),
    ("deepseek-v3.json", {"expert_weight_format": "fp8_block", "attn_weight_format": "fp8_block"}),
    ("qwen3-235b-a22b-fp8.json", {"expert_weight_format": "fp8_block", "attn_weight_format": "fp8_block"}),
    ("glm-5-fp8.json", {"expert_weight_format": "fp8_block", "attn_weight_format": "fp8_block"}),
    ("kimi-k2.5.json", {"expert_weight_format": "int4_g32", "attn_weight_format": "bf16"}),
    ("deepseek-v3.2-nvfp4", {"expert_weight_format": "nvfp4", "attn_weight_format": "bf16", "kv_format": "fp8"}),
    ("qwen3.5-397b-a17b-nvfp4", {"expert_weight_format": "nvfp4", "attn_weight_format": "bf16", "kv_format": "fp8"}),
    ("qwen3-30b-a3b.json", {}),
])
def test_native_formats_of_real_checkpoints(source, expected):
    path = DATA / source
    if path.is_dir():  # NVIDIA's releases: config.json plus hf_quant_config.json
        data = json.loads((path / "config.json").read_text())
        assert native_formats(data, "x", path) == expected
    else:
        data = json.loads(path.read_text())
        inner = data["text_config"] if data.get("model_type") == "kimi_k25" else data
        assert native_formats(inner, "x") == expected


@pytest.mark.parametrize("change, key", [
    ({"quant_method": "awq"}, "quant_method"),
    ({"weight_block_size": [64, 64]}, "weight_block_size"),
])
def test_unknown_quantization_is_an_error_naming_it(change, key):
    data = _load("deepseek-v3.json")
    data["quantization_config"].update(change)
    with pytest.raises(PresetError) as e:
        native_formats(data, "cfg")
    assert e.value.loc[-1] == key


def test_int4_other_group_size_refused():
    data = _load("kimi-k2.5.json")["text_config"]
    q = copy.deepcopy(data["quantization_config"])
    q["config_groups"]["group_0"]["weights"]["group_size"] = 128
    with pytest.raises(PresetError) as e:
        native_formats({"quantization_config": q}, "cfg")
    assert e.value.loc[-1] == "weights"


def test_checkpoint_formats_reach_the_workload_unless_set():
    from wsemoe.config.loader import load_config

    base = {"name": "t", "hardware": "cs3", "model": {"hf_config": str(DATA / "kimi-k2.5.json")},
            "workload": {"mode": "decode"}}
    cfg = load_config(copy.deepcopy(base))
    assert (cfg.workload.expert_weight_format, cfg.workload.attn_weight_format) == ("int4_g32", "bf16")
    base["workload"]["expert_weight_format"] = "fp8"
    assert load_config(base).workload.expert_weight_format == "fp8"
    assert checkpoint_formats(DATA / "deepseek-v3.2-nvfp4")["kv_format"] == "fp8"


# ---- presets: published counts, conventions, Hugging Face ids -----------------------------------------------

MOE = [n for n in presets.names("models") if presets.load_model(n).num_experts > 1]


def test_at_least_twelve_moe_presets():
    assert len(MOE) >= 12, MOE


@pytest.mark.parametrize("name", presets.names("models"))
def test_preset_total_within_one_percent(name):
    m = presets.load_model(name)
    err = float(params.total_params(m)) / m.published_total_params - 1
    if f"params.total:{name}" in KNOWN:  # a published figure with too few digits, recorded with its reason
        assert abs(err) > 0.01
        return
    assert abs(err) <= 0.01, f"{name}: {100 * err:+.2f}%"


@pytest.mark.parametrize("name", presets.names("models"))
def test_preset_active_within_five_percent_in_the_vendors_convention(name):
    m = presets.load_model(name)
    err = published_active(m) / m.published_active_params - 1
    assert abs(err) <= 0.05, f"{name}: {100 * err:+.2f}%"


def test_the_convention_matters():
    """GLM counts its active parameters without the embedding table and head: counted with them, 12% over."""
    m = presets.load_model("glm-4.5-air")
    assert float(params.active_params(m)) / m.published_active_params - 1 > 0.05
    assert abs(published_active(m) / m.published_active_params - 1) < 0.05


@pytest.mark.parametrize("name", presets.names("models"))
def test_every_preset_has_a_source(name):
    m = presets.load_model(name)
    assert m.source and m.published_total_params and m.published_active_params


@pytest.mark.parametrize("hf_id, name", [
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3"), ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b"), ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"), ("Qwen/Qwen3-32B", "qwen3-32b"),
    ("moonshotai/Kimi-K2.5", "kimi-k2.5"), ("MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"),
    ("qwen/qwen3-235b-a22b-fp8", "qwen3-235b-a22b"),  # Hub ids compare case-blind
])
def test_presets_resolve_by_hugging_face_id(hf_id, name):
    assert presets.by_hf_id(hf_id) == name
    assert presets.load_model(hf_id) == presets.load_model(name)


def test_hf_ids_are_unique():
    seen: dict = {}
    for name in presets.names("models"):
        m = presets.load_model(name)
        for i in (m.hf_id, *m.hf_aliases):
            if i:
                assert i.lower() not in seen, (i, seen.get(i.lower()), name)
                seen[i.lower()] = name


def test_a_sweep_names_its_model_by_hugging_face_id():
    from wsemoe.config.loader import load_config

    cfg = load_config({"name": "t", "hardware": "cs3", "model": "deepseek-ai/DeepSeek-V3",
                       "axes": {"model": ["deepseek-ai/DeepSeek-R1", "Qwen/Qwen3-32B"]}})
    assert cfg.model.name == "deepseek-v3"
    assert math.isclose(float(params.total_params(cfg.model)), 671.03e9, rel_tol=1e-3)


def test_dense_presets_are_every_layer_dense():
    for name in ("llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"):
        m = presets.load_model(name)
        assert m.first_k_dense_replace == m.num_hidden_layers and m.num_experts == 1
        assert float(params.total_params(m)) == float(params.active_params(m))


# ---- property: any key no importer reads is refused by name when on, passes when off ------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from wsemoe.config.hf_fields import NEUTRAL  # noqa: E402

_GLM = _load("glm-4.5-air.json")
_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=20).filter(
    lambda k: k not in _GLM and k not in NEUTRAL)


@settings(max_examples=40, deadline=None)
@given(key=_KEYS, on=st.one_of(st.integers(1, 10**6), st.just(True), st.lists(st.just("x"), min_size=1, max_size=3)),
       off=st.sampled_from([None, False, 0, [], {}]))
def test_any_unread_key_is_refused_when_on_and_passes_when_off(key, on, off):
    with pytest.raises(PresetError) as e:
        model_from_hf_config({**_GLM, key: on})
    assert e.value.loc[-1] == key
    model_from_hf_config({**_GLM, key: off})


def test_wsemoe_presets_lists_every_model():
    from typer.testing import CliRunner

    from wsemoe.cli import app

    r = CliRunner().invoke(app, ["presets"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    for name in presets.names("models"):
        assert name in r.output, name


# ---- one source of truth: a preset is what its config.json imports to -------------------------------------
_PRESET_CONFIG = {"deepseek-v3": "deepseek-v3.json", "deepseek-r1": "deepseek-r1.json",
                  "kimi-k2": "kimi-k2-instruct.json", "kimi-k2.5": "kimi-k2.5.json", "glm-4.5-air": "glm-4.5-air.json",
                  "glm-5": "glm-5.json", "gpt-oss-120b": "gpt-oss-120b.json", "gpt-oss-20b": "gpt-oss-20b.json",
                  "llama-3.1-8b": "llama-3.1-8b.json", "llama-4-maverick": "llama-4-maverick-17b-128e-instruct.json",
                  "minimax-m2.5": "minimax-m2.5.json", "mixtral-8x22b": "mixtral-8x22b-v0.1",
                  "mixtral-8x7b": "mixtral-8x7b-v0.1.json", "qwen1.5-moe-a2.7b": "qwen1.5-moe-a2.7b.json",
                  "qwen3-235b-a22b": "qwen3-235b-a22b.json", "qwen3-30b-a3b": "qwen3-30b-a3b.json",
                  "qwen3-32b": "qwen3-32b.json", "qwen3.5-397b-a17b": "qwen3.5-397b-a17b.json"}
_LABELS = {"name", "source", "hf_id", "hf_aliases", "published_total_params", "published_active_params",
           "published_active_excludes"}


@pytest.mark.parametrize("name", sorted(_PRESET_CONFIG))
def test_preset_is_its_config_imported(name):
    """Every shape field of a preset equals its config.json's import (the DeepSeek-V3 and R1 configs state one MTP
    layer, num_nextn_predict_layers 1, which the deepseek_v3 importer once dropped while the R1 preset kept it)."""
    preset = presets.load_model(name).model_dump()
    imported = model_from_hf_config(DATA / _PRESET_CONFIG[name]).model_dump()
    assert {k: v for k, v in preset.items() if k not in _LABELS} == \
        {k: v for k, v in imported.items() if k not in _LABELS}
