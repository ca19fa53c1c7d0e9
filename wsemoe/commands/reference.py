"""docs/commands.md: every command with its arguments and options, written from the command line itself (the
help texts `wsemoe COMMAND --help` prints), so no option goes undocumented and no page describes one that is gone.
`tools/update_docs.py` writes it; a test fails when it is stale."""

from __future__ import annotations

HEADER = """# Commands and options

Every `wsemoe` command with its arguments and options, in the order of `wsemoe --help`. Generated from the
command line itself by `make docs` (`tools/update_docs.py`); `wsemoe COMMAND --help` prints the same texts.
What each command is for, with worked examples: [usage.md](usage.md).
"""


def _cell(text) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _default(p) -> str:
    """An option's default as a user types it ('–' when it has none or it is a switch's off)."""
    d = p.default
    if getattr(p, "is_flag", False):
        if p.secondary_opts:   # --readings/--no-readings: which of the two is on
            return p.opts[0] if d else p.secondary_opts[0]
        return "off" if not d else "on"
    return "–" if d is None or d == () or d == [] else f"`{d}`"


def markdown(group) -> str:
    """The page for a click group (typer's `get_command(app)`)."""
    out = [HEADER]
    for name, cmd in group.commands.items():
        if cmd.hidden:
            continue
        args = [p for p in cmd.params if p.param_type_name == "argument"]
        usage = " ".join(p.name.upper() if p.required else f"[{p.name.upper()}]" for p in args)
        out.append(f"\n## wsemoe {name}{' ' + usage if usage else ''}\n")
        out.append("\n" + " ".join((cmd.help or "").split("\n\n")[0].split()) + "\n")
        rows = [(f"`{p.name.upper()}`", "argument", "required" if p.required else "–", getattr(p, "help", ""))
                for p in args]
        rows += [(", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts]),
                  "repeatable" if p.multiple else "switch" if getattr(p, "is_flag", False) else "value",
                  _default(p), p.help) for p in cmd.params if p.param_type_name == "option"]
        if rows:
            out.append("\n| argument or option | kind | default | what it does |\n|---|---|---|---|\n")
            out += [f"| {_cell(a)} | {k} | {_cell(d)} | {_cell(h)} |\n" for a, k, d, h in rows]
    return "".join(out)
