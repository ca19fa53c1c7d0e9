"""Axis values: lists, ranges and powers of two expanded (sizes known first), then typed against their spec."""

from __future__ import annotations

import difflib
import math
from pathlib import Path

import numpy as np

from wsemoe.config import presets
from wsemoe.config.hf import model_from_hf_config, name_for_path
from wsemoe.config.schema import PRESET_KIND, SECTIONS, Sparsity
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs.base import build
from wsemoe.specs.hardware import PEFacts

MAX_AXIS_VALUES = 1_000_000  # values of one axis; sweeps grow by combining axes, not by one endless list


def _number(x, loc) -> float:
    """A finite real number from a range/pow2 argument (booleans and text refused)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ConfigError(f"expected a number, got {excerpt(repr(x))}", loc=loc)
    if not math.isfinite(x) or abs(x) > 2**53:
        raise ConfigError(f"expected a finite number of magnitude at most 2**53, got {x!r}", loc=loc)
    return x


def _range_values(args, step, loc) -> list:
    """Inclusive arithmetic progression; its length is computed before anything is expanded."""
    if not isinstance(args, list) or len(args) not in (2, 3) or (len(args) == 3 and step is not None):
        raise ConfigError("range takes [start, stop] or [start, stop, step] (or step: as its own key)", loc=loc)
    start, stop = (_number(a, (*loc, i)) for i, a in enumerate(args[:2]))
    step = _number(args[2] if len(args) == 3 else 1 if step is None else step, (*loc, "step"))
    if step <= 0 or stop < start:
        raise ConfigError("range needs start <= stop and step > 0", loc=loc)
    if all(isinstance(v, int) for v in (start, stop, step)):
        count = (stop - start) // step + 1
    else:  # a relative tolerance keeps 0.1-steps from losing their last value to rounding
        steps = (stop - start) / step * (1 + 1e-12)   # inf for a subnormal step (1e-320): floor() overflowed
        count = math.floor(steps) + 1 if math.isfinite(steps) else math.inf
    if count > MAX_AXIS_VALUES:
        shown = f"{count:,}" if count < 1e12 else f"{float(count):.3g}" if count < math.inf else "countless"
        raise ConfigError(f"range has {shown} values; one axis takes at most {MAX_AXIS_VALUES:,}", loc=loc)
    if isinstance(count, int) and all(isinstance(v, int) for v in (start, stop, step)):
        return list(range(start, stop + 1, step))
    vals = [round(start + i * step, 12) for i in range(int(count))]
    return [int(v) if float(v).is_integer() else v for v in vals]


def _pow2_values(args, loc) -> list:
    if not isinstance(args, list) or len(args) != 2:
        raise ConfigError("pow2 takes [lo, hi]", loc=loc)
    lo, hi = (_number(a, (*loc, i)) for i, a in enumerate(args))
    if not 0 < lo <= hi:
        raise ConfigError("pow2 needs 0 < lo <= hi", loc=loc)
    out = [2**e for e in range(0, 54) if lo <= 2**e <= hi]
    if not out:
        raise ConfigError(f"no power of two lies in [{lo:g}, {hi:g}]", loc=loc)
    return out


def expand(values, loc):
    """Axis values: a list, {range: [start, stop, step]} or {range: [start, stop], step: s} (inclusive),
    or {pow2: [lo, hi]}."""
    if isinstance(values, list):
        if not values:
            raise ConfigError("empty list: an axis needs at least one value", loc=loc)
        if len(values) > MAX_AXIS_VALUES:
            raise ConfigError(f"{len(values):,} values; one axis takes at most {MAX_AXIS_VALUES:,}", loc=loc)
        return values
    if isinstance(values, dict) and "range" in values and set(values) <= {"range", "step"}:
        return _range_values(values["range"], values.get("step"), (*loc, "range"))
    if isinstance(values, dict) and set(values) == {"pow2"}:
        return _pow2_values(values["pow2"], (*loc, "pow2"))
    raise ConfigError("an axis takes a list of values, {range: [start, stop, step]} or {pow2: [lo, hi]}", loc=loc)


def check_path(path: str, loc) -> tuple[str, str | None]:
    """Split 'section.field' and check both exist (did-you-mean on typos); preset axes have no field."""
    section, _, field = path.partition(".")
    if section not in SECTIONS:
        close = difflib.get_close_matches(section, list(SECTIONS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown axis section '{section}'{hint}", loc=loc)
    if not field:
        if section not in PRESET_KIND:
            raise ConfigError(f"axis '{path}' needs a field, e.g. '{section}.<field>'", loc=loc)
        return section, None
    fields = SECTIONS[section].model_fields
    fact = field.partition(".")[2]
    if section == "hardware" and field.startswith("pe.") and fact in PEFacts.model_fields:
        raise ConfigError(f"a PE fact ({field}) is neither an axis nor a --set path: set it in the sweep file's "
                          f"hardware section (hardware: {{preset: …, pe: {{{fact}: …}}}}), or sweep whole hardware "
                          "presets (axis 'hardware')", loc=loc)
    if field not in fields:
        close = difflib.get_close_matches(field, list(fields), n=1)
        hint = f"; did you mean '{section}.{close[0]}'?" if close else ""
        raise ConfigError(f"unknown field '{field}' of {section}{hint}", loc=loc)
    return section, field


FULL_CHECK = 512  # longer numeric axes validate their type per value and the whole spec at the extremes


def typed_values(path, values, base: dict, loc, preset_store: dict, unique: bool = True, base_dir=None,
                 positions: bool = True) -> list:
    """Validate each axis value against its spec (base with the value substituted); return typed values.

    With `unique` (grid axes), a value given twice is refused: it would evaluate every point twice.
    `base_dir` is where relative config.json paths of a model axis resolve. Without `positions`, an error is
    at `loc` itself, not at a value's position in the list (`typed_value`: one value given on its own).
    """
    section, field = check_path(path, loc)
    at = (lambda i: (*loc, i)) if positions else (lambda i: tuple(loc))
    if field is None:  # a preset axis: preset names, or (models) Hugging Face config.json paths
        typed = [_preset_value(section, v, at(i), preset_store, base_dir) for i, v in enumerate(values)]
    elif len(values) > FULL_CHECK and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        typed = _typed_numbers(section, field, values, base, loc)
    else:
        typed = [_field_value(section, field, base, v, at(i)) for i, v in enumerate(values)]
        if any(not _point_value(v) for v in typed):  # points are told apart by their axis values
            raise ConfigError(f"{path} holds a list or a mapping, which an axis cannot vary point by point; set it in "
                              f"the {section} section (or sweep whole {section} presets)", loc=loc)
    if unique:
        no_repeats(typed, loc)
    return typed


def _field_value(section: str, field: str, base: dict, value, loc):
    """`value` typed as `section.field` (its section's spec built with it). An error of the field itself is at
    `loc` (which names the axis or --set), not at `loc -> field` again."""
    try:
        return getattr(build(SECTIONS[section], {**base[section], field: value}, loc=loc), field)
    except ConfigError as exc:
        n = len(loc)
        if exc.loc[:n] == tuple(str(p) for p in loc) and exc.loc[n:n + 1] == (field,):
            raise ConfigError(exc.message, loc=(*loc, *exc.loc[n + 1:])) from None
        raise


def typed_value(path, value, base: dict, loc, preset_store: dict, base_dir=None):
    """One value of `path` (an `eval --set`, a compare baseline or candidate) typed as an axis value of it is:
    the YAML text "1" is G = 1, True is refused."""
    return typed_values(path, [value], base, loc, preset_store, base_dir=base_dir, positions=False)[0]


def _point_value(v) -> bool:
    """Whether an axis can take `v` as one point's value: a scalar, or a tuple of numbers (hardware.wafers)."""
    if isinstance(v, tuple):
        return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
    return not isinstance(v, (list, dict, set))


def no_repeats(values: list, loc, what: str = "value") -> None:
    """Refuse a list that holds one value twice (after typing: 2 and 2.0 are one value), naming both places."""
    if len(values) > FULL_CHECK and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        arr = np.asarray(values, dtype=float)  # a long numeric axis: sorted neighbours, not a Python loop
        order = np.argsort(arr, kind="stable")
        same = np.flatnonzero(arr[order][1:] == arr[order][:-1])
        offsets = [int(order[same[0]]), int(order[same[0] + 1])] if same.size else []
        values = [values[i] for i in offsets]
    else:
        offsets = list(range(len(values)))
    first: dict = {}
    for i, v in zip(offsets, values):
        key = repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else repr(v)
        if key in first:
            raise ConfigError(f"{what} {excerpt(repr(v))} appears twice (at {first[key]} and {i}); each design "
                              "point would be evaluated twice", loc=(*loc, i))
        first[key] = i


def is_model_file(value) -> bool:
    """A model axis value that names a Hugging Face config (a .json path, a folder path, or {hf_config: path})."""
    if isinstance(value, dict):
        return set(value) == {"hf_config"}
    if isinstance(value, str) and presets.by_hf_id(value) and not Path(value).exists():
        return False  # a Hugging Face id a preset carries (deepseek-ai/DeepSeek-V3), not a path
    return isinstance(value, str) and (value.endswith(".json") or "/" in value or "\\" in value)


def _preset_value(section: str, v, loc, preset_store: dict, base_dir) -> str:
    """The name of one preset-axis value, its fields stored in `preset_store` (imported files under their name)."""
    if section == "model" and is_model_file(v):
        raw = v["hf_config"] if isinstance(v, dict) else v
        p = Path(str(raw))
        p = (p if p.is_absolute() else Path(base_dir or ".") / p).absolute()
        spec = model_from_hf_config(p, name=name_for_path(p))
        fields = spec.model_dump()
        if spec.name in preset_store and preset_store[spec.name] != fields:
            raise ConfigError(f"'{excerpt(raw)}' is named '{spec.name}' after its folder or file, like another "
                              "model of this sweep; rename one folder", loc=loc)
        preset_store[spec.name] = fields
        return spec.name
    if not isinstance(v, str):
        raise ConfigError("a preset axis takes preset names" + (" or config.json paths" if section == "model" else ""),
                          loc=loc)
    if v.endswith((".yaml", ".yml")):   # a file of fields is a section of its own, not one value of an axis
        raise ConfigError(f"'{excerpt(v)}': a {section} axis or --set takes preset names"
                          + (" or config.json paths" if section == "model" else "") + f"; a YAML file of {section} "
                          f"fields is the sweep file's {section} section (or --{section} without a sweep file)", loc=loc)
    fields = presets.raw(PRESET_KIND[section], v, loc=loc)
    build(SECTIONS[section], fields, loc=loc)
    if v in preset_store and preset_store[v] != fields:
        raise ConfigError(f"'{v}' names both a preset and an imported model of this sweep; rename the folder",
                          loc=loc)
    preset_store[v] = fields
    return v


def _typed_numbers(section: str, field: str, values: list, base: dict, loc) -> list:
    """A long numeric axis: every spec constraint is a bound (or monotone in the value), so the spec is
    built at the smallest and largest value only; integrality and finiteness are checked for all."""
    arr = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ConfigError(f"not a finite number (got {values[bad[0]]!r})", loc=(*loc, int(bad[0])))
    typed = None
    for i in (int(np.argmin(arr)), int(np.argmax(arr))):
        typed = _field_value(section, field, base, values[i], (*loc, i))
    if isinstance(typed, int):
        frac = np.flatnonzero(arr != np.round(arr))
        if frac.size:
            raise ConfigError(f"Input should be a valid integer (got {values[frac[0]]!r})", loc=(*loc, int(frac[0])))
        return [int(v) for v in values]
    return [float(v) for v in values]


HELD_WITHIN = 0.05   # how far a whole expert width may miss the width that holds the quantity exactly


def sparsity_zip(sp: Sparsity, model: dict) -> dict:
    """Zip group of the sparsity helper: the varied field and the expert width that holds `hold` constant."""
    F0, E0, k0 = model["moe_intermediate_size"], model["num_experts"], model["num_experts_per_tok"]
    no_repeats(list(sp.values), ("sparsity", "values"))   # else found later as a repeated row of a zip never written
    widths = []
    for i, v in enumerate(sp.values):
        E, k = (v, k0) if sp.vary == "num_experts" else (E0, v)
        exact = F0 * {"width": 1.0, "active": k0 / k, "total": E0 / E}[sp.hold]
        width = max(1, round(exact))
        if abs(width - exact) > HELD_WITHIN * exact:   # 1,048,576 experts of width 1 for 0.094: 10.7x the total
            raise ConfigError(f"holding {sp.hold} at {sp.vary} {v} needs an expert width of {exact:.3g}, which a "
                              f"whole width ({width}) misses by more than {HELD_WITHIN:.0%}",
                              loc=("sparsity", "values", i))
        widths.append(width)
    return {f"model.{sp.vary}": list(sp.values), "model.moe_intermediate_size": widths}


