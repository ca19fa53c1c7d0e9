"""Settings that apply only beside another: one given where it can change no point of the sweep is refused.

A setting is given when the sweep sweeps it or its base value differs from the field's default (a resolved
config.yaml writes every default back, so a default alone says nothing). It is refused, in one line naming it
and what it needs, when no combination of the sweep meets its condition: then no result can depend on it and a
user who set it believes something the numbers do not show (`zipf_s` under uniform popularity). A setting that
applies to some points of the sweep (distribution swept over uniform and zipf) passes. Each condition below is
read off the code that uses the setting (cited); settings refused per point where they do not apply (prompt_len,
tokens_per_device, speculative decoding, wafer_io, TP and balancers at PE level) are checks.py's.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from wsemoe.config.combos import field_values
from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.errors import ConfigError


class Needs(NamedTuple):
    """Where a setting applies: `fields` read, `where(columns)` true on the combinations it applies to, `says`
    what it needs (ends the refusal)."""

    fields: tuple[str, ...]
    where: Callable[[dict], np.ndarray]
    says: str


def _is(path: str, *values) -> Callable[[dict], np.ndarray]:
    return lambda c: np.isin(c[path].astype(str), [str(v) for v in values])


def _given(path: str) -> Callable[[dict], np.ndarray]:
    return lambda c: ~np.equal(c[path], None)


def _both(*tests) -> Callable[[dict], np.ndarray]:
    return lambda c: np.logical_and.reduce([t(c) for t in tests])


def _either(*tests) -> Callable[[dict], np.ndarray]:
    return lambda c: np.logical_or.reduce([t(c) for t in tests])


_ZIPF = _is("balance.distribution", "zipf")
_BALANCED = lambda c: ~_is("balance.balancer", "none")(c)   # noqa: E731
_MIGRATES = _is("balance.balancer", "non-invasive", "stop-the-world")
_SRAM = _is("hardware.weight_source", "sram")
_TRAIN = _is("workload.mode", "train")

NEEDS = {
    # cost/structure.expert_shares: the exponent shapes Zipf popularity; a skew target solves for its own
    "balance.zipf_s": Needs(("balance.distribution", "balance.skew_target"),
                            _both(_ZIPF, lambda c: np.equal(c["balance.skew_target"], None)),
                            "distribution: zipf without a skew_target (which solves for the exponent)"),
    "balance.skew_target": Needs(("balance.distribution",), _ZIPF, "distribution: zipf"),
    "balance.skew_devices": Needs(("balance.distribution", "balance.skew_target"),
                                  _both(_ZIPF, _given("balance.skew_target")), "distribution: zipf and a skew_target"),
    "balance.seed": Needs(("balance.distribution",), _ZIPF, "distribution: zipf (it ranks the experts)"),
    "balance.histogram": Needs(("balance.distribution",), _is("balance.distribution", "histogram"),
                               "distribution: histogram"),
    # cost/balance/popularity.balance_experts: balancer none keeps the default placement
    "balance.spare_slots": Needs(("balance.balancer",), _BALANCED, "a balancer (replicate, non-invasive, stop-the-world)"),
    "balance.replica_policy": Needs(("balance.balancer",), _BALANCED, "a balancer (replicate, non-invasive, stop-the-world)"),
    "balance.replica_split": Needs(("balance.balancer",), _BALANCED, "a balancer (replicate, non-invasive, stop-the-world)"),
    # cost/comm.CommModel.migration: only the migrating balancers move copies; migration.migration_columns
    "balance.rebalance_interval": Needs(("balance.balancer",), _MIGRATES, "balancer non-invasive or stop-the-world"),
    "balance.churn": Needs(("balance.balancer",), _MIGRATES, "balancer non-invasive or stop-the-world"),
    "balance.migration_windows": Needs(("balance.balancer",), _is("balance.balancer", "non-invasive"),
                                       "balancer non-invasive (stop-the-world pays the whole migration)"),
    # cost/fabric/mapping.place_groups: each strategy reads its own argument
    "mapping.seed": Needs(("mapping.strategy",), _is("mapping.strategy", "random"), "strategy random"),
    "mapping.ftd": Needs(("mapping.strategy",), _is("mapping.strategy", "er", "her"), "strategy er or her"),
    "mapping.placement": Needs(("mapping.strategy",), _is("mapping.strategy", "explicit"), "strategy explicit"),
    # cost/node/memory.kv_bytes_per_rank: a GQA cache splits by heads whatever this says
    "mapping.mla_cache": Needs(("model.attention",), _is("model.attention", "mla"), "an MLA model (attention: mla)"),
    # cost/wafer/serving.py and geometry.py (SRAM serving); pe_dispatch also wafer/streaming.py (pe_fabric)
    "mapping.pe_placement": Needs(("hardware.weight_source",), _SRAM, "weight_source: sram"),
    "mapping.pe_reduction": Needs(("hardware.weight_source",), _SRAM, "weight_source: sram"),
    "mapping.pe_kernels": Needs(("hardware.weight_source",), _SRAM, "weight_source: sram"),
    "mapping.pe_dispatch": Needs(("hardware.weight_source", "hardware.pe_fabric"),
                                 _either(_SRAM, lambda c: c["hardware.pe_fabric"].astype(bool)),
                                 "weight_source: sram or hardware.pe_fabric"),
    # cost/node/compute.recomputed_shares and memory.kept_bytes_per_token_layer: nothing is kept outside training
    "workload.recompute": Needs(("workload.mode",), _TRAIN, "mode train"),
    "workload.bytes_per_grad": Needs(("workload.mode",), _TRAIN, "mode train"),
    # cost/node/weights.training_state_node: resident weights in training only
    "workload.optimizer_bytes_per_param": Needs(("workload.mode", "hardware.weight_source"),
                                                _both(_TRAIN, _is("hardware.weight_source", "resident")),
                                                "mode train on resident weights"),
    "workload.optimizer_sharding": Needs(("workload.mode", "hardware.weight_source"),
                                         _both(_TRAIN, _is("hardware.weight_source", "resident")),
                                         "mode train on resident weights"),
}


def _given_setting(cfg: SweepConfig, path: str) -> bool:
    """Swept, or a base value other than the field's default."""
    if path in cfg.axis_names():
        return True
    section, name = path.split(".", 1)
    value = getattr(getattr(cfg, section), name)
    default = SECTIONS[section].model_fields[name].default
    return value != default and not (isinstance(value, (list, tuple)) and default is not None
                                     and tuple(value) == tuple(default))


def check_applies(cfg: SweepConfig) -> None:
    """Refuse the first given setting (NEEDS) that applies to no combination of the sweep."""
    for path, needs in NEEDS.items():
        if not _given_setting(cfg, path):
            continue
        if any(np.any(needs.where(c)) for c in field_values(cfg, needs.fields)):
            continue
        swept = path in cfg.axis_names()
        loc = ("axes", path) if swept else tuple(path.split("."))
        raise ConfigError(f"{path} {'is swept' if swept else 'is set'} but can change no result: it applies only "
                          f"with {needs.says}, which no point here has", loc=loc)
