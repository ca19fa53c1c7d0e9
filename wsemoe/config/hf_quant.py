"""A checkpoint's native number formats, read from its config.json `quantization_config` (or a ModelOpt
`hf_quant_config.json` beside it), as the per-stage workload formats (docs/formats.md).

The workload has three format fields: `attn_weight_format` (attention projections, shared experts, dense FFNs),
`expert_weight_format` (routed experts) and `kv_format` (KV cache). A quantization scheme covers some of the
checkpoint's linear layers; the ones its ignore list names (attention, shared experts, router, embeddings,
head) stay 16-bit. Router, norms, embedding and head are 16-bit in wsemoe whatever the checkpoint says.
A scheme or parameter wsemoe does not know is a one-line error naming its key, never a silent 16-bit default.
"""

from __future__ import annotations

import re
from pathlib import Path

from wsemoe.config.files import model_json, read_text
from wsemoe.errors import PresetError

MAX_QUANT_BYTES = 2**20  # a ModelOpt hf_quant_config.json is a few hundred bytes

# Module names an ignore pattern may use for the attention block and for the non-routed FFN weights.
# An attention entry counts when it names the whole block (`self_attn`, `self_attn*`, `re:.*self_attn.*`) or a
# projection of it; one naming only a norm or the sparse-attention indexer inside it does not.
_ATTN = re.compile(r"(self_attn|linear_attn|attention|attn)(\.?\*?$|\.\*|\*|\.(q|k|v|o|qkv|q_a|q_b|kv_a|kv_b|in|out)_proj"
                   r"|\.kv_a_proj_with_mqa|\.in_proj_\w+)")
_ROUTED_EXPERTS = re.compile(r"(?<!shared_)experts|block_sparse_moe|mlp\.experts")


def _fail(where: str, key: str, message: str) -> PresetError:
    return PresetError(message, (where, key))


def _patterns(q: dict, key: str, where: str) -> list:
    """An ignore list (`ignore`, `exclude_modules`, ...): absent, or a list of module names or patterns. A string
    was read character by character and other entries were skipped, so `"self_attn"` or `[3]` left every layer
    in the scheme without a word."""
    value = q.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise _fail(where, key, f"'{key}' must be a list of module names or patterns, got {value!r:.60}")
    return value


def _names_attention(patterns) -> bool:
    """True when the ignore list keeps attention projections out of the scheme (a wildcard, a regex or every
    layer's name: one per-layer entry is taken as the rule for all, as released checkpoints list every layer)."""
    return any(isinstance(p, str) and _ATTN.search(p) for p in patterns or ())


def _names_routed_experts(patterns) -> bool:
    return any(isinstance(p, str) and _ROUTED_EXPERTS.search(p) for p in patterns or ())


def _scheme(fmt: str, ignore, kv: str | None = None) -> dict:
    """Formats of one scheme applied to every linear layer but those `ignore` names."""
    out = {"expert_weight_format": "bf16" if _names_routed_experts(ignore) else fmt,
           "attn_weight_format": "bf16" if _names_attention(ignore) else fmt}
    if kv:
        out["kv_format"] = kv
    return out


def _fp8(q: dict, where: str) -> dict:
    """DeepSeek-style FP8: E4M3 weights with one FP32 scale per `weight_block_size` block (or per tensor)."""
    block = q.get("weight_block_size")
    if block is None:
        fmt = "fp8"  # one scale per tensor: 4 bytes per matrix, nothing per value
    elif block == [128, 128]:
        fmt = "fp8_block"
    else:
        raise _fail(where, "weight_block_size", f"FP8 blocks of {block!r:.40} are not modelled; 128 × 128 is")
    return _scheme(fmt, _patterns(q, "modules_to_not_convert", where) or _patterns(q, "ignored_layers", where))


def _group_weights(group: dict, where: str) -> str:
    """The format of one compressed-tensors / ModelOpt weight group."""
    w = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(w, dict):
        raise _fail(where, "weights", "a quantization group without a 'weights' scheme")
    kind, bits, size = w.get("type"), w.get("num_bits"), w.get("group_size")
    if kind == "int" and bits == 4 and size == 32 and w.get("symmetric", True):
        return "int4_g32"
    if kind == "float" and bits == 4 and size == 16:
        return "nvfp4"
    if kind == "float" and bits == 8:
        return "fp8"
    raise _fail(where, "weights", f"weights of type {kind!r}, {bits!r} bits, group {size!r} are not modelled "
                                  "(known: int 4-bit group 32, float 4-bit group 16, float 8-bit)")


def _config_groups(q: dict, where: str) -> dict:
    """compressed-tensors and ModelOpt `config_groups`: one weight scheme over the `Linear` targets."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise _fail(where, "config_groups", "a quantization_config without config_groups")
    formats = {_group_weights(g, f"{where} -> config_groups -> {name}") for name, g in groups.items()}
    if len(formats) != 1:
        raise _fail(where, "config_groups", f"groups in several formats ({sorted(formats)}) are not modelled")
    kv = q.get("kv_cache_scheme")
    kv_fmt = "fp8" if isinstance(kv, dict) and kv.get("num_bits") == 8 else None
    return _scheme(formats.pop(), _patterns(q, "ignore", where), kv_fmt)


def _modelopt_file(folder: Path | None, where: str) -> dict | None:
    """A ModelOpt `hf_quant_config.json` beside the config (NVIDIA's NVFP4 releases), if there is one."""
    path = folder / "hf_quant_config.json" if folder else None
    if path is None or not path.is_file():
        return None
    try:
        # one reading rule for every JSON file a model brings: bounded size, huge integers caught by digits
        q = model_json(read_text(path, MAX_QUANT_BYTES, "hf_quant_config.json"))["quantization"]
    except (ValueError, KeyError, TypeError):
        q = None
    if not isinstance(q, dict):   # a list or number there has no .get: it was an internal error
        raise _fail(str(path), "quantization", "hf_quant_config.json without a readable 'quantization' mapping")
    algo, size = q.get("quant_algo"), q.get("group_size")
    if algo != "NVFP4" or size not in (None, 16):
        raise _fail(str(path), "quant_algo", f"ModelOpt {algo!r} (group {size!r}) is not modelled; NVFP4 group 16 is")
    kv = {"FP8": "fp8", None: None}.get(q.get("kv_cache_quant_algo"), "unknown")
    if kv == "unknown":
        raise _fail(str(path), "kv_cache_quant_algo", f"KV cache in {q.get('kv_cache_quant_algo')!r} is not modelled")
    return _scheme("nvfp4", _patterns(q, "exclude_modules", str(path)), kv)


def native_formats(data: dict, where: str, folder: Path | None = None) -> dict:
    """{workload format field: format} of the checkpoint `data` describes ({} when it is 16-bit throughout).

    `data` is the language model's config (a wrapper's `text_config`); `folder` holds its files, where a ModelOpt
    `hf_quant_config.json` may say more than config.json does.
    """
    from_file = _modelopt_file(folder, where)
    from_config = _config_formats(data, where)
    if from_file is not None and data.get("quantization_config") is not None and from_config != from_file:
        # two statements of one checkpoint's formats: neither is dropped in silence
        raise _fail(where, "quantization_config", f"config.json's quantization_config reads {from_config} but "
                                                  f"hf_quant_config.json beside it {from_file}; remove one")
    return from_file if from_file is not None else from_config


def _config_formats(data: dict, where: str) -> dict:
    """The formats config.json's own `quantization_config` states ({} when it has none)."""
    q = data.get("quantization_config")
    if q is None:
        return {}
    if not isinstance(q, dict):
        raise _fail(where, "quantization_config", "quantization_config must be a mapping")
    loc = f"{where} -> quantization_config"
    method = q.get("quant_method")
    if method == "mxfp4":  # gpt-oss: routed experts in MXFP4; modules_to_not_convert keeps the rest 16-bit
        return _scheme("mxfp4", _patterns(q, "modules_to_not_convert", loc))
    if method == "fp8":
        return _fp8(q, loc)
    if method in ("compressed-tensors", "modelopt"):
        return _config_groups(q, loc)
    raise _fail(loc, "quant_method", f"quant_method {method!r:.40} is not modelled (known: mxfp4, fp8, "
                                     "compressed-tensors, modelopt)")


def checkpoint_formats(source) -> dict:
    """The native formats of the checkpoint at `source` (a config.json path or its folder, or a parsed dict)."""
    from wsemoe.config import hf, hf_wrappers

    data, where = hf._load(source)
    r = hf_wrappers.language_model(hf._Reader(data, where), data.get("model_type"))  # formats read alike
    folder = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        folder = path if path.is_dir() else path.parent if path.name == "config.json" else None
    return native_formats(r.data, r.where, folder)
