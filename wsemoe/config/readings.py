"""Readings for one sweep: which the sweep varies, pins or cannot apply (the registry's `applies_to` rules),
the option it is configured as, and the sweep with chosen options set (`apply`): base spec fields, the fields
of the presets a preset axis names (only those the rule selects), or the sparsity helper's held quantity.
The registry itself (presets/readings.yaml, loaded strictly) is config/registry.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wsemoe.config import axes, checks, derived
from wsemoe.config.registry import HOLD, Option, Reading, load, select
from wsemoe.config.schema import PRESET_KIND, SECTIONS, Sparsity, SweepConfig
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs.base import build
from wsemoe.specs.hardware import follow_pe


@dataclass(frozen=True)
class Status:
    """What a reading is for one sweep: varied, pinned, not applicable or pending; and the option it runs as."""

    reading: Reading
    state: str          # "varied" | "pinned" | "not applicable" | "pending"
    detail: str = ""
    configured: str | None = None  # the option the sweep's own values match (None: none of them)

    @property
    def varied(self) -> bool:
        return self.state == "varied"


# ---- one sweep under the readings -------------------------------------------------------------------------

def preset_axis(cfg: SweepConfig, section: str) -> list[str]:
    """The preset names a preset axis of `section` takes (empty when the section is not swept by preset)."""
    if section not in PRESET_KIND:
        return []
    for group in [cfg.axes, *cfg.zip]:
        if section in group:
            return list(dict.fromkeys(group[section]))
    return []


def field_value(fields: dict, name: str):
    """A field of a spec's fields; `pe.<fact>` a PE fact (None where the hardware has no PE fabric)."""
    if name.startswith("pe."):
        return (fields.get("pe") or {}).get(name[3:])
    return derived.value(fields, name) if name in derived.DERIVED else fields.get(name)


def _set_field(fields: dict, name: str, value) -> None:
    """Set a field in a spec's fields; `pe.<fact>` inside the PE facts."""
    if name.startswith("pe."):
        fields["pe"] = {**(fields.get("pe") or {}), name[3:]: value}
    else:
        fields[name] = value


def _merged(fields: dict, changes: dict) -> dict:
    """A spec's fields with a reading's changes; node figures derived from PE facts follow changed facts."""
    out = {**fields, **changes}
    return follow_pe(out, fields["pe"], changes["pe"]) if "pe" in changes and fields.get("pe") else out


def _spec_fields(cfg: SweepConfig, section: str, name: str | None) -> dict:
    """The fields of the base spec (name None) or of one preset the section's axis names."""
    if name is None:
        return getattr(cfg, section).model_dump()
    return build(SECTIONS[section], cfg.presets[name], loc=(section, name)).model_dump()


def sparsity_helper(cfg: SweepConfig) -> tuple[Sparsity, int] | None:
    """The sparsity helper and the index of its zip group: from the config, or recognized in a resolved
    config.yaml (which keeps only the expanded zip) by recomputing each hold's widths."""
    model = cfg.model.model_dump()
    candidates = [cfg.sparsity] if cfg.sparsity else []
    for i, group in enumerate(cfg.zip):
        keys = set(group)
        for vary in ("num_experts", "num_experts_per_tok"):
            if keys != {f"model.{vary}", "model.moe_intermediate_size"}:
                continue
            tries = candidates or [Sparsity(vary=vary, values=group[f"model.{vary}"], hold=h)
                                   for h in ("active", "width", "total")]
            for sp in tries:
                if sp.vary == vary and axes.sparsity_zip(sp, model) == group:
                    return sp, i
    return None


def targets(cfg: SweepConfig, reading: Reading, section: str) -> list[str | None]:
    """Which specs of `section` the reading changes: the base (None) or the presets its axis names, each
    only if it meets the reading's conditions on that section (in some row of its zip, the row's own fields
    of the section over the preset's: a cs3 zipped with weight_source sram serves from SRAM)."""
    names = preset_axis(cfg, section) or [None]
    rule = {p.partition(".")[2]: v for p, v in reading.applies_to.items() if p.partition(".")[0] == section}
    return [n for n in names if any(all(field_value(row, f) in vals for f, vals in rule.items())
                                    for row in _rows(cfg, section, n))]


def _rows(cfg: SweepConfig, section: str, name: str | None) -> list[dict]:
    """The fields of `section` a spec takes: the preset's (or the base's), with each zip row's own fields of the
    section over them where the preset is zipped with some."""
    fields = _spec_fields(cfg, section, name)
    for group in cfg.zip:
        own = [p for p in group if p.partition(".")[0] == section and p != section]
        if name is not None and section in group and own:
            rows = [i for i, v in enumerate(group[section]) if v == name]
            return [{**fields, **{p.partition(".")[2]: group[p][i] for p in own}} for i in rows]
    return [fields]


def sweep_values(cfg: SweepConfig, path: str) -> list:
    """Every value the sweep takes on `path`: an axis's values, each preset's field, or the base field."""
    if path == HOLD:
        helper = sparsity_helper(cfg)
        return [helper[0].hold] if helper else []
    for group in [cfg.axes, *cfg.zip]:
        if path in group:
            return list(group[path])
    if derived.is_derived(path) and set(derived.inputs(path)) & set(cfg.axis_names()):
        return [True, False]   # swept inputs: the fact may take either value
    section, _, name = path.partition(".")
    return [field_value(_spec_fields(cfg, section, n), name) for n in (preset_axis(cfg, section) or [None])]


def status(cfg: SweepConfig, reading: Reading) -> Status:
    """Whether the sweep varies the reading, and the option its own values match."""
    if reading.pending:
        return Status(reading, "pending", reading.pending)
    swept = set(cfg.axis_names())
    pinned = [p for p in reading.paths if p in swept]
    if pinned:
        return Status(reading, "pinned", f"pinned by the sweep: {pinned[0]} is an axis")
    if HOLD in reading.paths and sparsity_helper(cfg) is None:
        return Status(reading, "not applicable", f"the sweep has no sparsity helper ({reading.scope})")
    for path, allowed in reading.applies_to.items():
        seen = sweep_values(cfg, path)
        if not set(seen) & set(allowed):
            shown = ", ".join("unset" if v is None else str(v) for v in dict.fromkeys(seen))
            return Status(reading, "not applicable", f"{path} is {shown}; it applies where {where(path, allowed)} "
                          f"({reading.scope})")
    return Status(reading, "varied", configured=configured(cfg, reading))


def where(path: str, values) -> str:
    """Where a reading applies, in words: `path in a, b`, `path unset` (YAML null: a field left to its default)."""
    named = [str(v) for v in values if v is not None]
    if not named:
        return f"{path} unset"
    return f"{path} in {', '.join(named)}" + (" or unset" if len(named) < len(values) else "")


def configured(cfg: SweepConfig, reading: Reading) -> str | None:
    """The option whose fields the sweep already has (an option that sets nothing matches when none other
    does); an unset optional field inherits from another one, so it contradicts no option."""
    def matches(opt: Option) -> bool:
        for path, value in opt.set.items():
            section = path.partition(".")[0]
            names = targets(cfg, reading, section) if section in PRESET_KIND else [None]
            if path == HOLD:
                if sweep_values(cfg, HOLD) != [value]:
                    return False
                continue
            for n in names:
                have = field_value(_spec_fields(cfg, section, n), path.partition(".")[2])
                if have is not None and have != value:
                    return False
        return True
    hits = [o.name for o in reading.options.values() if o.set and matches(o)]
    empty = [o.name for o in reading.options.values() if not o.set]
    return (hits or empty or [None])[0]


def plan(cfg: SweepConfig, readings: dict[str, Reading]) -> list[Status]:
    """The status of every reading for one sweep, in registry order."""
    return [status(cfg, r) for r in readings.values()]


def apply(cfg: SweepConfig, choice: dict[str, str], readings: dict[str, Reading] | None = None) -> SweepConfig:
    """The sweep with each chosen reading's option set ({reading: option}); a reading the sweep cannot vary
    (pinned, not applicable, pending) is refused in one line."""
    readings = load() if readings is None else readings
    base: dict = {s: {} for s in SECTIONS}
    moved: dict = {}
    zips, sparsity = list(cfg.zip), cfg.sparsity
    for name, opt_name in choice.items():
        loc = ("readings", str(name))
        reading = select(readings, [name], loc)[name]
        if opt_name not in reading.options:
            raise ConfigError(f"'{excerpt(opt_name)}' is not an option of {name} ({', '.join(reading.options)})",
                              loc=loc)
        st = status(cfg, reading)
        if not st.varied:
            raise ConfigError(f"{name} is {st.state} for this sweep: {st.detail}", loc=loc)
        for path, value in reading.options[opt_name].set.items():
            section, _, fname = path.partition(".")
            if path == HOLD:
                helper, index = sparsity_helper(cfg)
                sparsity = helper.model_copy(update={"hold": value})
                zips[index] = axes.sparsity_zip(sparsity, cfg.model.model_dump())
            elif section in PRESET_KIND and preset_axis(cfg, section):
                for n in targets(cfg, reading, section):
                    _set_field(moved.setdefault(n, dict(cfg.presets[n])), fname, value)
            elif section not in PRESET_KIND or targets(cfg, reading, section):
                if fname.startswith("pe.") and "pe" not in base[section]:   # the other PE facts stay
                    base[section]["pe"] = getattr(cfg, section).model_dump().get("pe")
                _set_field(base[section], fname, value)
    update: dict[str, Any] = {s: build(SECTIONS[s], _merged(getattr(cfg, s).model_dump(), f), loc=("readings", s))
                              for s, f in base.items() if f}
    for n, fields in moved.items():
        section = next(s for s in PRESET_KIND if n in preset_axis(cfg, s))
        build(SECTIONS[section], fields, loc=("readings", section, n))
    update.update(presets={**cfg.presets, **moved}, zip=zips, sparsity=sparsity)
    out = cfg.model_copy(update=update)
    checks.check_points(out)
    return out


def spec_fields(choice: dict[str, str], readings: dict[str, Reading] | None = None) -> dict[str, dict]:
    """{section: {field: value}} the chosen options set ({reading: option}): for a study that builds its specs
    itself rather than a sweep (the shipped micro-batches). `sparsity.hold` has no spec and is left out."""
    readings = load() if readings is None else readings
    out: dict[str, dict] = {}
    for name, opt_name in choice.items():
        reading = select(readings, [name], ("readings", str(name)))[name]
        if opt_name not in reading.options:
            raise ConfigError(f"'{excerpt(opt_name)}' is not an option of {name} ({', '.join(reading.options)})",
                              loc=("readings", str(name)))
        for path, value in reading.options[opt_name].set.items():
            if path != HOLD:
                section, _, fname = path.partition(".")
                out.setdefault(section, {})[fname] = value
    return out


def defaults(names, readings: dict[str, Reading] | None = None) -> dict[str, str]:
    """{reading: its default option} for the named readings."""
    readings = load() if readings is None else readings
    return {n: select(readings, [n])[n].default for n in names}
