"""Plain-text views of results for the terminal: what `check` found, and how `compare` titles its table."""

from __future__ import annotations

from wsemoe.wording import count


def check_lines(info: dict) -> list[str]:
    """The lines `wsemoe check` prints for the dict `sweep.plan.check` returns."""
    if info["search"]:
        s = info["search"]
        lines = [f"{info['name']}: valid; a space of {count(info['space_points'], 'point')}, searched with "
                 f"{s['algorithm']} (seed {s['seed']}): at most {count(info['points'], 'evaluation')}"]
    else:
        lines = [f"{info['name']}: valid; {count(info['points'], 'point')}"]
    lines += [f"  axis {axis}: {count(n, 'value')}" for axis, n in info["axes"].items()]
    lines += [f"  zipped: {', '.join(group)}" for group in info["zip_groups"]]
    if "estimated_seconds" in info:
        from wsemoe.report.terminal.tables import fmt

        what = "evaluation time (the search's own work comes on top)" if info["search"] else "time"
        parts = ", ".join(f"{k} {fmt(v, 's')}" for k, v in info.get("estimated_parts", {}).items())
        lines.append(f"  estimated {what} {fmt(info['estimated_seconds'], 's')} on one core"
                     + (f" ({parts})" if parts else "") + f", output ~{fmt(info['estimated_output_bytes'], 'bytes')}")
    if info["over_limit"]:
        lines.append(f"  over the limit of {info['limit']:,} points: `sweep` needs --force")
    return lines


def comparison_view(cmp, terminal: bool):
    """(table, title, column priority) of a cross-run comparison; at the terminal, columns equal in every
    row are said once in the title instead of in each row."""
    title = (f"best feasible point per group by {cmp.metric} ({cmp.sense}); ratios to {cmp.labels[0]}"
             + "".join(f"; {count(n, 'group')} of {lab} left out (not in every folder)" for lab, n in cmp.dropped.items() if n))
    table = cmp.table
    if terminal and cmp.fixed:
        title += "; every row: " + ", ".join(f"{c} = {v}" for c, v in cmp.fixed.items())
        table = table.drop(columns=list(cmp.fixed))
    priority = [*cmp.varying, *(c for c in table.columns if "/" in c and c.endswith(cmp.metric)),
                *(c for c in table.columns if "/" in c and c.endswith(":energy_per_token_j")),   # energy beside speed
                *(f"{lab}:{cmp.metric}" for lab in cmp.labels), *(f"{lab}:bound" for lab in cmp.labels)]
    return table, title, priority

