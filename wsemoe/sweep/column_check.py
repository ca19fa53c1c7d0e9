"""The one check of a column a user names (objectives, constraints, comparison metrics, output columns,
`compare --metric`, `show --columns/--sort/--where`): it exists, with a reason when a known column is absent, and
holds the kind its use needs. What each column means is `sweep/columns.py`."""

from __future__ import annotations

from wsemoe.sweep.columns import documented

KINDS = ("number", "text", "bool")  # what a column holds, as every column argument is checked against it


# Columns only some points carry, and what gives them (a hint when a config names one its points lack).
NEEDS = {"ttft_s": "workload.mode: prefill, or decode with workload.prompt_len",
         "tpot_s": "workload.mode: decode", "tokens_per_s_per_user": "workload.mode: decode",
         "g_mem_prefill": "workload.mode: decode with workload.prompt_len",
         "prompt_latency_s": "SRAM serving, workload.mode: decode with workload.prompt_len",
         "prompt_busiest_stage_s": "SRAM serving, workload.mode: decode with workload.prompt_len"}


def check_column(name, kinds: dict, what: str, loc, need: str | None = None) -> None:
    """The one check of a column a user names (objectives, constraints, comparison metrics, output columns,
    `compare --metric`, `show --columns/--sort/--where`): it exists (else a did-you-mean) and, where `need`
    is "number", holds numbers (a text or yes/no column as a metric or objective is refused in one line).
    `kinds` maps each column to one of KINDS."""
    import difflib

    from wsemoe.errors import ConfigError

    if name not in kinds:
        close = difflib.get_close_matches(str(name), list(kinds), n=1)
        hint = missing(name) or (f"; did you mean '{close[0]}'?" if close else "")
        raise ConfigError(f"unknown {what} '{name}'{hint}", loc=loc)
    if need is not None and kinds[name] != need:
        held = {"text": "text", "bool": "yes/no values", "number": "numbers"}.get(kinds[name], kinds[name])
        raise ConfigError(f"{what} '{name}' holds {held}, not {'numbers' if need == 'number' else need}", loc=loc)


def missing(name: str) -> str:
    """'; …' saying why a column wsemoe knows is absent from these results ('' for a name it does not know)."""
    if name in NEEDS:
        return f"; no point of this sweep has it (it needs {NEEDS[name]})"
    if documented(name):
        return "; these results do not hold it (the sweep's output.columns leaves it out, or none of its points " \
               "computes it)"
    return ""
