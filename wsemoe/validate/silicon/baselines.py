"""What the GPU baselines of results folders rest on, a line each: per GPU system its calibration and the fitted
stack that checks it (stacks.baseline_line), and per comparison how far its GPU baseline moves on measured
serving software (onstack.line). show, compare and report print these lines."""

from __future__ import annotations

from pathlib import Path

from wsemoe.validate.silicon.stacks import baseline_line


def folder_baselines(folders) -> list[str]:
    """baseline_line of every GPU system the results folders ran on (their config.yaml: the base hardware, or
    the preset names a hardware axis or zip column takes), each system once; then per folder with a comparison
    how far its GPU baseline moves on measured serving software (`_on_stack`)."""
    from wsemoe.config import presets, yamlio

    seen, lines = set(), []
    for folder in folders:
        try:
            cfg = yamlio.load(Path(folder) / "config.yaml") or {}
        except Exception:  # a damaged config says nothing about its hardware; the command reports the rest
            continue
        base = cfg.get("hardware")
        specs = [base] if isinstance(base, dict) else []
        axis = (cfg.get("axes") or {}).get("hardware")
        names = list(axis) if isinstance(axis, list) else []
        for z in cfg.get("zip") or []:  # a hardware column zipped with others (each side's settings)
            names += list(z.get("hardware") or []) if isinstance(z, dict) else []
        for name in dict.fromkeys(str(n) for n in names):
            try:
                specs.append(presets.load_hardware(str(name)).model_dump())
            except Exception:  # a hardware file, not a preset: its own config names its topology
                continue
        for hw in specs:
            line = baseline_line(hw) if hw.get("name") not in seen else None
            seen.add(hw.get("name"))
            if line:
                lines.append(line)
        moved = _on_stack(Path(folder))
        if moved:
            lines.append(f"{Path(folder).name}: {moved}")
    return lines


def _on_stack(folder) -> str | None:
    """onstack.line of a results folder's comparison with the stack that checks the GPU baselines; None where
    it has no comparison, or a file does not read back (the command reports that itself)."""
    from wsemoe.config.loader import load_config
    from wsemoe.store import store
    from wsemoe.validate.silicon import checks, onstack

    if not (folder / "comparison.csv").is_file():
        return None
    try:
        cfg = load_config(folder / "config.yaml")
        table = store.read_csv(folder, "comparison.csv", store.load_manifest(folder))
    except Exception:  # a damaged or stale folder: show, compare and report say why themselves
        return None
    return onstack.line(table, cfg, checks.BACKEND) if cfg.compare is not None else None
