"""The fitted software stacks (wsemoe/presets/gpu/stacks.yaml): per backend each value with its spread; and the
one line saying what a GPU system's baseline rests on (validate/silicon/baselines.py gathers them per folder)."""

from __future__ import annotations

from pathlib import Path

from wsemoe.errors import PresetError
from wsemoe.validate.silicon.fit import NAMES, UNITS

STACKS = Path(__file__).resolve().parents[2] / "presets" / "gpu" / "stacks.yaml"


def load(path: Path = STACKS) -> dict:
    """{backend: {name: value}} in the units fit.UNITS names; the whole file as `meta` beside it."""
    import yaml

    try:
        # libyaml when PyYAML has it (a safe loader either way)
        data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except (OSError, yaml.YAMLError) as exc:
        raise PresetError(f"cannot read the fitted GPU stacks ({type(exc).__name__})", loc=(str(path),)) from None
    stacks = {}
    for backend, entry in (data or {}).get("backends", {}).items():
        missing = [n for n in NAMES if n not in entry]
        if missing:
            raise PresetError(f"no fitted value for '{missing[0]}'", loc=(str(path), "backends", backend))
        stacks[backend] = {n: float(entry[n]["value"]) for n in NAMES}
    return stacks, data


def dump(stacks: dict, spread: dict, meta: dict) -> str:
    """The stacks file's text: meta, then per backend each value with its unit and bootstrap spread."""
    import yaml

    body = {**meta, "backends": {b: {n: {"value": round(v[n], 4), "spread": round(spread[b][n], 4), "unit": UNITS[n]}
                                     for n in NAMES} for b, v in sorted(stacks.items())}}
    head = ("# Software stacks of GPU serving backends, fitted to measured runs (wsemoe/validate/silicon/fit.py).\n"
            "# Written by tools/fit_silicon.py; do not edit by hand. spread: bootstrap standard deviation over\n"
            "# configurations drawn with replacement.\n")
    return head + yaml.safe_dump(body, sort_keys=False, width=120)


CALIBRATION = ("matmul_efficiency", "memory_usable_fraction")  # the node-level model's GPU calibration fields
SHOWN = ("eta_mm", "eta_xmm", "eta_bw")  # the stack's values that set a decode or prefill step's kernels


def baseline_line(hw: dict) -> str | None:
    """What the baseline of GPU system `hw` (a hardware spec as a dict) rests on, in one line; None for a wafer."""
    from wsemoe.validate.silicon import checks

    if hw.get("topology", "mesh") == "mesh":
        return None
    stacks, data = load()
    entry = data["backends"][checks.BACKEND]
    values = ", ".join(f"{n} {entry[n]['value']:.2f} ± {entry[n]['spread']:.2f}" for n in SHOWN)
    ratios = " and ".join(f"×{p['ratio']:.2f} ({p['system']})" for p in checks.published(stacks))
    calib = ", ".join(f"{k} {hw[k]:g}" for k in CALIBRATION if isinstance(hw.get(k), (int, float)))
    side = "within" if bracketed(hw) else "outside"
    origin = (f"matmul_efficiency {side} the {checks.BACKEND} stack's eta_xmm {stacks[checks.BACKEND]['eta_xmm']:.2f} "
              f"(experts' grouped GEMMs) … eta_mm {stacks[checks.BACKEND]['eta_mm']:.2f} (dense GEMMs)")
    return (f"GPU baseline {hw.get('name', '?')}: node-level model at its preset's calibration ({calib}; "
            f"{origin}), checked against published decode, prefill and kernels by `wsemoe validate --only gpu`; "
            f"the fitted stack: {checks.BACKEND} ({STACKS.name}, {data.get('configurations', '?'):,} measured configurations; "
            f"{values}), DeepSeek-V3 decode at {ratios} of published")


def bracketed(hw: dict) -> bool:
    """Whether GPU spec `hw`'s one matmul share lies between the shares the stack that checks the baselines reaches
    on the experts' grouped GEMMs (eta_xmm) and on dense GEMMs (eta_mm): the node-level model runs both kinds at
    that one share, so a share outside the two is contradicted by the measured runs."""
    from wsemoe.validate.silicon import checks

    stack = load()[0][checks.BACKEND]
    eff = hw.get("matmul_efficiency")
    return isinstance(eff, (int, float)) and round(stack["eta_xmm"], 2) <= eff <= round(stack["eta_mm"], 2)
