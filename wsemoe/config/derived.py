"""Facts of a spec that no one field holds, computed from the fields that make them, for a reading's
`applies_to` rule: whether a switch system's GPUs span several servers (only then does anything cross its
scale-out network). Each names the fields it reads, so a sweep that sweeps one of them can take either value.
"""

from __future__ import annotations

import difflib

from pydantic.fields import FieldInfo


def _spans_servers(f: dict) -> bool:
    """A switch system whose scale-up domain (NVLink) is smaller than its devices: servers joined by a
    scale-out network. NVL72 (no scale_up_size: one domain) and one 8-GPU server span none."""
    size = f.get("scale_up_size")
    return f.get("topology") == "switch" and size is not None and size < f.get("rows", 1) * f.get("cols", 1)


# field name -> (the fields it is computed from, how)
DERIVED = {"spans_servers": (("topology", "rows", "cols", "scale_up_size"), _spans_servers)}
SECTION = "hardware"   # every derived fact is of the hardware


def is_derived(path: str) -> bool:
    section, _, name = path.partition(".")
    return section == SECTION and name in DERIVED


def field_info(path: str) -> FieldInfo:
    """The type a rule's values are checked against (a yes/no fact)."""
    return FieldInfo(annotation=bool, description=path)


def value(fields: dict, name: str):
    """The fact `name` of one spec's fields."""
    return DERIVED[name][1](fields)


def inputs(path: str) -> tuple[str, ...]:
    """The spec paths the fact at `path` is computed from."""
    return tuple(f"{SECTION}.{f}" for f in DERIVED[path.partition('.')[2]][0])


def suggestion(path: str, message: str) -> str:
    """'; did you mean 'hardware.spans_servers'?' for a near miss of a derived fact ('' otherwise, or when the
    message already suggests a field)."""
    section, _, name = path.partition(".")
    close = difflib.get_close_matches(name, list(DERIVED), n=1)
    if section != SECTION or not close or "did you mean" in message:
        return ""
    return f"; did you mean '{SECTION}.{close[0]}'?"
