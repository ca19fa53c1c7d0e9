"""Consistency rules between fields of one spec, written once over numpy arrays: the spec's own validator applies
them to one model (YAML, --set, config.json, the Python API all build a spec), and the sweep's cross-field check
(config/checks.py) applies the same functions to every combination of swept values at once, so a long axis or two
axes that only clash together meet exactly the rules one model meets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Rule:
    """`bad(*columns)` flags the combinations of `fields` that cannot exist; `message(*values)` says why for one
    of them (naming the field); `blame` is the field the message is about."""

    fields: tuple[str, ...]
    bad: Callable
    message: Callable
    blame: str


def _f(x):
    return np.asarray(x, dtype=float)


MODEL_RULES = (
    Rule(("num_attention_heads", "num_key_value_heads"),
         lambda h, kv: np.mod(_f(h), _f(kv)) != 0,
         lambda h, kv: f"num_key_value_heads {kv} does not divide num_attention_heads {h} (each key/value head "
                       "serves a whole group of query heads, so there are at most as many)",
         "num_key_value_heads"),
    Rule(("num_experts_per_tok", "num_experts"),
         lambda k, e: _f(k) > _f(e),
         lambda k, e: f"top-k exceeds the number of experts: num_experts_per_tok ({k}) exceeds num_experts ({e})",
         "num_experts_per_tok"),
    Rule(("first_k_dense_replace", "num_hidden_layers"),
         lambda d, n: _f(d) > _f(n),
         lambda d, n: f"first_k_dense_replace ({d}) exceeds num_hidden_layers ({n})",
         "first_k_dense_replace"),
)

PE_RULES = (
    Rule(("kernel_margin_rows", "fabric_rows"),
         lambda m, r: _f(m) >= _f(r),
         lambda m, r: f"kernel_margin_rows ({m}) leaves no PE rows of the {r} fabric rows for a program",
         "kernel_margin_rows"),
    Rule(("kernel_margin_cols", "fabric_cols"),
         lambda m, c: _f(m) >= _f(c),
         lambda m, c: f"kernel_margin_cols ({m}) leaves no PE columns of the {c} fabric columns for a program",
         "kernel_margin_cols"),
    Rule(("program_bytes_per_pe", "sram_per_pe_bytes"),
         lambda p, s: _f(p) >= _f(s),
         lambda p, s: f"program_bytes_per_pe ({p:g}) leaves no room in a PE's {s:g} bytes of SRAM "
                      "(sram_per_pe_bytes) for weights, cache or buffers",
         "program_bytes_per_pe"),
)


def check(spec, rules) -> None:
    """Raise ValueError (pydantic reports it on the spec) for the first rule `spec` breaks."""
    for rule in rules:
        values = [getattr(spec, f) for f in rule.fields]
        if any(v is None for v in values):
            continue
        if bool(np.any(rule.bad(*values))):
            raise ValueError(rule.message(*values))
