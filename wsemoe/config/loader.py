"""Sweep YAML → validated SweepConfig: presets resolved, axes expanded and typed, cross-field rules checked.

Validation happens here in one step (ZigZag style); building the design frame is the sweep engine's job.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from wsemoe.config import applies, axes, checks, presets, yamlio
from wsemoe.config.histogram import read_histogram
from wsemoe.config.hf import model_from_hf_config
from wsemoe.config.schema import (NAME_RE, NAME_RULE, PREFILL_SERVING_OBJECTIVES, PRESET_KIND, SECTIONS,
                                  SERVING_OBJECTIVES, TOP_KEYS, RawSweep, SweepConfig)
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs.base import build


def load_config(source, base_dir: Path | None = None, checked: bool = True) -> SweepConfig:
    """Parse and validate a sweep config from a path, YAML text's parsed dict, or SweepConfig. Without `checked`,
    the cross-field rules over every combination of the axes are skipped: what reading a config costs to learn
    its hash (`ls`, `report --index` on a folder that names it), never an evaluation of its space."""
    if isinstance(source, SweepConfig):
        return source
    data, base_dir = _read(source, base_dir)
    specs = _base_specs(data, base_dir)
    base = {k: s.model_dump(exclude_none=True) for k, s in specs.items()}
    raw = build(RawSweep, {k: v for k, v in data.items() if k not in SECTIONS})
    preset_store: dict = {}
    grid = {path: _axis(path, values, ("axes", path), base, preset_store, base_dir=base_dir)
            for path, values in (raw.axes or {}).items()}
    zips = _zips(raw, base, preset_store, base_dir)
    _no_axis_twice(grid, zips)
    cfg = build(SweepConfig, {
        "name": raw.name, "description": raw.description, **specs, "axes": grid, "zip": zips,
        "sparsity": raw.sparsity, "constraints": raw.constraints,
        "objectives": _default_objectives(specs["hardware"], specs["workload"], grid, zips) if raw.objectives is None else
        _some(raw.objectives),
        "compare": _compare(raw.compare, {**grid, **{p: v for z in zips for p, v in z.items()}}, base, preset_store,
                            base_dir),
        "presets": preset_store,
        "expert_histogram": _histogram(specs, grid, zips, base_dir, preset_store),
        "output": raw.output, "search": raw.search, "pareto": raw.pareto, "base_dir": str(base_dir),
    })
    if checked:
        checks.check_points(cfg)
        applies.check_applies(cfg)   # the whole sweep's: a one-point copy of it (eval --point) checks only the rules
    return cfg


def _read(source, base_dir: Path | None) -> tuple[dict, Path]:
    """The raw mapping and the folder its relative paths resolve against; unknown top-level keys refused."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        data, base_dir = yamlio.load(path), path.parent
        if isinstance(data, dict) and "name" not in data:
            if not NAME_RE.match(path.stem):   # say where the name came from: the user wrote none
                raise ConfigError(f"the sweep has no name: key and its file name '{excerpt(path.stem)}' is none "
                                  f"({NAME_RULE}); add a name: key", loc=("name",))
            data["name"] = path.stem
    else:
        data = source
    if not isinstance(data, dict):
        kinds = {bool: "a true/false value", int: "a number", float: "a number", str: "a string", list: "a list"}
        held = "is empty" if data is None else f"holds {kinds.get(type(data), type(data).__name__)}"
        where = (str(source),) if isinstance(source, (str, Path)) else ("config",)
        raise ConfigError(f"a sweep config must be a YAML mapping (name:, hardware:, model:, workload:, axes: ...); "
                          f"this one {held}", loc=where)
    for key in data:
        if key not in TOP_KEYS:
            close = difflib.get_close_matches(str(key), TOP_KEYS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown key '{key}'{hint}", loc=(str(key),))
    # Canonical: an imported model records its file's path (hf:<path>), which the config's hash covers, so a
    # relative path must name the file alike from any working folder and as `ls` reads the sweep file (by the
    # absolute path its manifest records): otherwise results just written would read as "config changed".
    return data, Path(base_dir or Path.cwd()).resolve()


def _base_specs(data: dict, base_dir: Path) -> dict:
    """The five base specs; a preset axis supplies hardware or model when its section is absent."""
    swept = data.get("axes") if isinstance(data.get("axes"), dict) else {}
    if axes.is_model_file(data.get("model")) and isinstance(data.get("model"), str):   # a config.json path, read
        data = {**data, "model": {"hf_config": data["model"]}}                         # as a model axis reads it
    for key in ("hardware", "model"):
        if key not in data and key not in swept:
            raise ConfigError("required section is missing (a preset name or fields)", loc=(key,))
    base = {k: _section(k, data.get(k), base_dir) for k in SECTIONS}
    for k in ("hardware", "model"):
        first = swept.get(k)
        if not base[k] and isinstance(first, list) and first and (isinstance(first[0], str) or axes.is_model_file(first[0])):
            store: dict = {}
            name = axes.typed_values(k, first[:1], {}, ("axes", k), store, base_dir=base_dir)[0]
            base[k] = store[name]
    base["workload"] = {**_checkpoint_formats(data.get("model"), base_dir), **base["workload"]}
    if "mode" not in base["workload"] and "workload.mode" not in swept and base["hardware"].get("weight_source") == "sram":
        base["workload"]["mode"] = "decode"   # SRAM serving is inference: its mode unsaid means serving tokens
    return {k: build(cls, base[k], loc=(k,)) for k, cls in SECTIONS.items()}


def _checkpoint_formats(model, base_dir: Path) -> dict:
    """The workload formats a base model's Hugging Face checkpoint ships in (quantization_config: MXFP4, NVFP4,
    FP8 blocks, INT4 groups); the workload section's own settings win. Presets and YAML models carry none."""
    if not (isinstance(model, dict) and "hf_config" in model):
        return {}
    from wsemoe.config.hf_quant import checkpoint_formats

    path = Path(str(model["hf_config"]))
    return checkpoint_formats(path if path.is_absolute() else base_dir / path)


def _section(key: str, value, base_dir: Path) -> dict:
    """A base section as a dict: a preset name, {preset: name, ...overrides}, {hf_config: path}, or fields."""
    if key in PRESET_KIND and isinstance(value, str):
        return presets.raw(PRESET_KIND[key], value, loc=(key,))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"expected a mapping or preset name, got {type(value).__name__}", loc=(key,))
    value = dict(value)
    if key in PRESET_KIND and "preset" in value:
        base = presets.raw(PRESET_KIND[key], value.pop("preset"), loc=(key, "preset"))
        if isinstance(base.get("pe"), dict) and isinstance(value.get("pe"), dict):   # a few PE facts changed:
            value["pe"] = {**base["pe"], **value["pe"]}                              # the others stay the preset's
        return {**base, **value}
    if key == "model" and "hf_config" in value:
        path = Path(str(value.pop("hf_config")))
        path = path if path.is_absolute() else base_dir / path
        return {**model_from_hf_config(path).model_dump(exclude_defaults=True), **value}
    return value


def _axis(path: str, values, loc, base: dict, preset_store: dict, unique: bool = True, base_dir=None) -> list:
    return axes.typed_values(path, axes.expand(values, loc), base, loc, preset_store, unique, base_dir)


def _compare(compare, swept: dict, base: dict, preset_store: dict, base_dir: Path):
    """The comparison with each baseline and candidate value of a swept axis typed as that axis's values are (the
    YAML text "1" is G = 1, an axis's own reading; True is refused as on an axis, where it matched G = 1 since
    True == 1); whether it is one of the axis's values is checked with the other cross-field rules."""
    if compare is None:
        return None
    sides = {side: {path: axes.typed_value(path, value, base, ("compare", side, path), preset_store, base_dir)
                    if path in swept else value
                    for path, value in getattr(compare, side).items()} for side in ("baseline", "candidate")}
    return compare.model_copy(update=sides)


def _zips(raw: RawSweep, base: dict, preset_store: dict, base_dir: Path) -> list[dict]:
    """Zip groups (the sparsity helper adds one), each of equal-length typed value lists."""
    groups = [dict(g) if isinstance(g, dict) else g for g in (raw.zip or [])]
    if raw.sparsity:
        groups.append(axes.sparsity_zip(raw.sparsity, base["model"]))
    zips = []
    for gi, group in enumerate(groups):
        if not group:
            raise ConfigError("a zip group needs at least one axis", loc=("zip", gi))
        rowwise = {p for p in group if "." in p and p.partition(".")[0] in group}   # fields of a zipped preset
        typed = {path: _axis(path, vals, ("zip", gi, path), base, preset_store, unique=False, base_dir=base_dir)
                 for path, vals in group.items() if path not in rowwise}
        typed.update(_preset_rows(group, typed, rowwise, preset_store, gi))
        typed = {p: typed[p] for p in group}
        if len({len(v) for v in typed.values()}) > 1:   # each list's length named: which one is short?
            each = ", ".join(f"{p} has {len(v)}" + ("" if i else " values") for i, (p, v) in enumerate(typed.items()))
            raise ConfigError(f"the lists of a zip group need one length (row i takes the i-th value of each): {each}",
                              loc=("zip", gi))
        axes.no_repeats(list(zip(*typed.values())), ("zip", gi), "row")  # one column may repeat; a whole row may not
        zips.append(typed)
    return zips


def _preset_rows(group: dict, typed: dict, paths: set, preset_store: dict, gi: int) -> dict:
    """Fields zipped with their section's preset axis, validated row by row together on that row's preset (a
    weight source and a pipeline length on a cs3 row, a TP size on an NVL72 row)."""
    out = {p: [] for p in paths}
    for section in {p.partition(".")[0] for p in paths}:
        names, fields = typed[section], [p for p in paths if p.partition(".")[0] == section]
        if any(not isinstance(group[p], list) or len(group[p]) != len(names) for p in fields):
            raise ConfigError(f"zipped axes need equal lengths, got {sorted({len(group[p]) for p in fields})} and "
                              f"{len(names)}", loc=("zip", gi))
        for i, name in enumerate(names):
            row = {p.partition(".")[2]: group[p][i] for p in fields}
            spec = build(SECTIONS[section], {**preset_store[name], **row}, loc=("zip", gi, fields[0], i))
            for p in fields:
                out[p].append(getattr(spec, p.partition(".")[2]))
    return out


def _some(objectives: dict) -> dict:
    """Objectives as written: `objectives: {}` is refused (it read as the defaults, unsaid)."""
    if not objectives:
        raise ConfigError("names no objective: give at least one (column: max or min), or leave objectives out for "
                          "the defaults", loc=("objectives",))
    return objectives


def _default_objectives(hardware, workload, grid: dict, zips: list) -> dict:
    """Throughput and peak memory per node; a sweep that only serves from SRAM (no hardware or weight-source axis):
    tokens per second per user and in aggregate, or where it only prefills (no mode axis), aggregate tokens per
    second and the time to first token (a prompt's pass has no per-user decode rate)."""
    swept = set(grid) | {p for g in zips for p in g}
    if hardware.weight_source == "sram" and not swept & {"hardware", "hardware.weight_source"}:
        if workload.mode == "prefill" and "workload.mode" not in swept:
            return dict(PREFILL_SERVING_OBJECTIVES)
        return dict(SERVING_OBJECTIVES)
    return SweepConfig.model_fields["objectives"].default_factory()


def _no_axis_twice(grid: dict, zips: list) -> None:
    seen = list(grid) + [p for g in zips for p in g]
    dup = sorted({p for p in seen if seen.count(p) > 1})
    if dup:
        raise ConfigError(f"axis '{dup[0]}' is swept twice", loc=("axes", dup[0]))


def _histogram(specs: dict, grid: dict, zips: list, base_dir: Path, preset_store: dict):
    """Shares of a measured histogram, checked against every expert count the sweep uses (model presets swept
    too); None when no point's distribution is 'histogram'. One histogram per sweep: the engine holds one."""
    swept = [g for g in (grid, *zips) if "balance.histogram" in g]
    if swept:   # every point read the base file whatever its row said: refused, not mislabelled
        loc = ("axes",) if swept[0] is grid else ("zip", zips.index(swept[0]))
        raise ConfigError("balance.histogram cannot be swept: a sweep reads one measured histogram (run one sweep "
                          "per histogram)", loc=(*loc, "balance.histogram"))
    bal = specs["balance"]
    kinds = {bal.distribution, *grid.get("balance.distribution", [])}
    for g in zips:
        kinds |= set(g.get("balance.distribution", []))
    if "histogram" not in kinds:
        return None
    if not bal.histogram:
        raise ConfigError("distribution 'histogram' needs balance.histogram (a CSV path)", loc=("balance", "histogram"))
    path = Path(bal.histogram)
    shares = read_histogram(path if path.is_absolute() else base_dir / path)
    counts = {specs["model"].num_experts, *grid.get("model.num_experts", [])}
    for g in (grid, *zips):
        counts |= set(g.get("model.num_experts", [])) | {preset_store[n].get("num_experts") for n in g.get("model", [])
                                                         if isinstance(preset_store.get(n), dict)}
    counts.discard(None)
    if any(c != len(shares) for c in counts):
        raise ConfigError(f"histogram has {len(shares)} experts but the model has {sorted(counts)}",
                          loc=("balance", "histogram"))
    return shares
