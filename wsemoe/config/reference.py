"""The sweep-config reference, generated from the pydantic models: units of input fields, a JSON Schema of
the YAML people write (editors validate and complete with it), and one row per key for docs/config.md.
"""

from __future__ import annotations

import copy
import math
import types
import typing

from pydantic_core import PydanticUndefined

from wsemoe.config import presets
from wsemoe.config.schema import PRESET_KIND, SECTIONS, Compare, Constraint, Output, Pareto, Sparsity

SCHEMA_ID = "https://wsemoe.invalid/sweep.schema.json"  # a name, not a location: the file ships with the tool

# Units of input fields whose name does not carry one.
INPUT_UNITS = {
    "workload.B": "sequences", "workload.G": "1", "workload.seq_len": "tokens", "mapping.tp": "nodes",
    "balance.zipf_s": "1", "balance.churn": "1", "balance.spare_slots": "slots",
    "balance.rebalance_interval": "steps", "hardware.rows": "nodes",
    "hardware.cols": "nodes", "hardware.wafers": "wafers", "hardware.pipeline_wafers": "wafers",
    "hardware.scale_up_size": "devices",
    "workload.tokens_per_device": "tokens", "workload.prompt_len": "tokens", "mapping.ring_directions": "1",
    "balance.skew_target": "×", "balance.skew_devices": "devices", "workload.bytes_per_act": "bytes",
    "workload.bytes_per_grad": "bytes", "hardware.matmul_efficiency": "1", "hardware.memory_usable_fraction": "1",
    "hardware.expert_half_tokens": "tokens", "hardware.node_peak_flops_fp8": "FLOP/s",
    "hardware.node_peak_flops_fp4": "FLOP/s", "hardware.kernel_launch_s": "s", "workload.draft_token_s": "s",
    "workload.draft_tokens": "tokens", "workload.accepted_tokens_per_step": "tokens",
    "hardware.energy_flop_j": "J", "hardware.energy_sram_j_per_byte": "J/byte",
    "hardware.energy_memory_j_per_byte": "J/byte", "hardware.energy_hop_j_per_byte": "J/byte",
    "hardware.energy_offchip_j_per_byte": "J/byte", "hardware.static_power_w": "W", "hardware.rated_power_w": "W",
    "hardware.pue": "1", "hardware.capital_usd": "USD", "hardware.amortization_years": "years",
    "hardware.power_price_usd_per_kwh": "USD/kWh", "hardware.sync_io_stall_s": "s",
    "workload.optimizer_bytes_per_param": "bytes", "mapping.seed": "1", "balance.seed": "1",
    "model.attention_dropout": "1",   # a probability
}
TOP_LEVEL = {
    "name": "names the results folder (results/<name>); default: the file name",
    "description": "one line shown with the results",
    "axes": "grid axes: 'section.field' (or a preset axis 'hardware'/'model') to a list, {range: [start, stop], "
            "step: s} (inclusive) or {pow2: [lo, hi]}; every combination is a design point",
    "zip": "groups of equal-length axes swept together (row i of each list belongs to one point)",
    "sparsity": "helper: vary E or top-k while holding expert width, active or total expert parameters",
    "constraints": "bounds on output columns; a point is feasible when every one holds",
    "objectives": "output columns to maximize or minimize: they define the Pareto front",
    "compare": "best point per group against the best baseline point (e.g. G = 1) of the same group",
    "pareto": "which points share a Pareto front: one front per value of the group_by axes (default: each "
              "hardware, model and scenario axis swept, e.g. seq_len or Zipf skew, but what compare.over tunes), exact ties in one row with a count",
    "output": "which output columns points.parquet keeps (inputs, feasibility and objectives always)",
}


def unit_of_name(name: str) -> str:
    """A unit read from a field name's suffix ('' when the name carries none)."""
    for suffix, unit in (("_bytes_per_s", "bytes/s"), ("_bytes", "bytes"), ("_flops", "FLOP/s"), ("_hz", "Hz"),
                         ("latency_s", "s")):
        if name.endswith(suffix):
            return unit
    return ""


# The model's shape fields by what they count, so every width reads in one unit (hidden_size and
# intermediate_size were '1' and '' side by side).
MODEL_UNITS = {
    "elements": ("hidden_size", "head_dim", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                 "v_head_dim", "moe_intermediate_size", "shared_expert_intermediate_size", "intermediate_size"),
    "layers": ("num_hidden_layers", "first_k_dense_replace", "num_nextn_predict_layers"),
    "heads": ("num_attention_heads", "num_key_value_heads"),
    "experts": ("num_experts", "num_experts_per_tok", "n_shared_experts"),
    "tokens": ("vocab_size",),
    "params": ("published_total_params", "published_active_params"),
}
_MODEL_UNIT = {f"model.{field}": unit for unit, fields in MODEL_UNITS.items() for field in fields}


def input_unit(path: str) -> str:
    """Unit of an input field 'section.field'."""
    return INPUT_UNITS.get(path) or _MODEL_UNIT.get(path) or unit_of_name(path.partition(".")[2])


def _axis_values() -> dict:
    """Schema of one axis's values: a list, a range or powers of two."""
    return {"anyOf": [
        {"type": "array", "minItems": 1, "description": "the values, in order"},
        {"type": "object", "additionalProperties": False, "required": ["range"],
         "description": "inclusive range: {range: [start, stop]}, {range: [start, stop, step]} or "
                        "{range: [start, stop], step: s}",
         "properties": {"range": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number"}},
                        "step": {"type": "number", "exclusiveMinimum": 0}}},
        {"type": "object", "additionalProperties": False, "required": ["pow2"],
         "description": "every power of two in [lo, hi]",
         "properties": {"pow2": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number"}}}},
    ]}


def axis_paths() -> dict[str, str]:
    """{axis path: meaning} of everything a sweep can vary."""
    out = {k: f"{k} preset names, or Hugging Face config.json paths (models)" for k in PRESET_KIND}
    for section, cls in SECTIONS.items():
        for field, info in cls.model_fields.items():
            if field not in ("name", "source", "sources", "pe"):
                out[f"{section}.{field}"] = info.description or field
    return out


def _with_units(schema: dict, section: str) -> dict:
    """Units appended to each property's description (and as x-unit); infinite defaults described in words."""
    for field, prop in schema.get("properties", {}).items():
        unit = input_unit(f"{section}.{field}")
        if unit and unit != "1":
            prop["x-unit"] = unit
            prop["description"] = f"{prop.get('description', field)} [unit: {unit}]"
        if isinstance(prop.get("default"), float) and not math.isfinite(prop["default"]):
            del prop["default"]
            prop["description"] = f"{prop.get('description', field)} (default: unlimited)"
        prop.pop("title", None)
    schema.get("required", []).clear()  # a preset or an imported config supplies what the user leaves out
    schema.pop("required", None)
    return schema


def _section(section: str, cls) -> dict:
    body = _with_units(copy.deepcopy(cls.model_json_schema(ref_template="#/$defs/{model}")), section)
    defs = body.pop("$defs", {})
    if section in PRESET_KIND:
        names = presets.names(PRESET_KIND[section])
        body["properties"] = {"preset": {"type": "string", "enum": names, "description": "start from this preset; "
                                         "the other keys override its fields"}, **body["properties"]}
        if section == "model":
            body["properties"]["hf_config"] = {"type": "string", "description": "a Hugging Face config.json (or its "
                                               "folder), relative to the sweep file"}
        return {"anyOf": [{"type": "string", "enum": names, "description": f"a {section} preset"}, body]}, defs
    return body, defs


def json_schema() -> dict:
    """JSON Schema (draft 2020-12) of a sweep YAML file, with units and meanings."""
    props, defs = {"name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
                            "description": TOP_LEVEL["name"]},
                   "description": {"type": "string", "description": TOP_LEVEL["description"]}}, {}
    for section, cls in SECTIONS.items():
        props[section], more = _section(section, cls)
        defs.update({k: _with_units(v, section) for k, v in more.items()})
    axes = {"type": "object", "additionalProperties": False, "description": TOP_LEVEL["axes"],
            "properties": {p: {**_axis_values(), "description": d} for p, d in axis_paths().items()}}
    props["axes"] = axes
    props["zip"] = {"type": "array", "items": {**axes, "minProperties": 1}, "description": TOP_LEVEL["zip"]}
    for key, cls in (("sparsity", Sparsity), ("compare", Compare), ("pareto", Pareto), ("output", Output)):
        props[key] = {**_with_units(cls.model_json_schema(), key), "description": TOP_LEVEL[key]}
    props["constraints"] = {"type": "array", "items": _with_units(Constraint.model_json_schema(), "constraints"),
                            "description": TOP_LEVEL["constraints"]}
    props["objectives"] = {"type": "object", "additionalProperties": {"enum": ["min", "max"]},
                           "description": TOP_LEVEL["objectives"]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, "title": "wsemoe sweep",
            "type": "object", "additionalProperties": False, "properties": props, "$defs": defs}


def _type_text(annotation) -> str:
    """A field's type in words: 'integer', 'one of: a | b', 'list of integers', ..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of: " + " | ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type_text(a) for a in inner) + (" (optional)" if len(inner) < len(args) else "")
    if origin in (list, tuple):
        return f"list of {_type_text(args[0]) if args else 'values'}"
    if origin is dict:
        return "mapping"
    if origin is typing.Annotated:
        return _type_text(args[0])
    names = {int: "integer", float: "number", str: "text", bool: "true/false"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _bounds(info) -> str:
    """'> 0, ≤ 65,536': the field's numeric bounds, lower first."""
    parts = []
    for attr, sym in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
        for m in info.metadata:
            v = getattr(m, attr, None)
            if v is not None and not (isinstance(v, float) and math.isinf(v)):
                parts.append(f"{sym} {v:,}" if isinstance(v, int) else f"{sym} {v:g}")
    return ", ".join(parts)


def _default_text(info) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.default_factory() if info.default_factory is not None else info.default
    if isinstance(value, float) and math.isinf(value):
        return "unlimited"
    return "–" if value is None else f"`{value}`"


def field_rows(cls, section: str) -> list[tuple[str, str, str, str, str]]:
    """[(key, type, unit, default, meaning)] of a pydantic model's fields, units from `section.field`."""
    out = []
    for field, info in cls.model_fields.items():
        kind = _type_text(info.annotation)
        bounds = _bounds(info)
        unit = input_unit(f"{section}.{field}")
        out.append((field, f"{kind}{', ' + bounds if bounds else ''}", "" if unit == "1" else unit,
                    _default_text(info), info.description or ""))
    return out
