"""The installed package carries everything `wsemoe validate` and the presets need (no checkout required)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from wsemoe import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_presets_and_reproduction_sweeps(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    noise = [ln for ln in (r.stdout + r.stderr).splitlines() if re.search(r"deprecat|warning", ln, re.I)
             and "Location" not in ln]  # a pip index location the machine lacks is the machine's, not ours
    assert not noise, noise
    wheel = next(tmp_path.glob("wsemoe-*.whl"))
    assert wheel.name.startswith(f"wsemoe-{__version__}-")  # one version: the package's
    names = set(zipfile.ZipFile(wheel).namelist())
    for sweep in (ROOT / "wsemoe" / "validate" / "sweeps").glob("*.yaml"):
        assert f"wsemoe/validate/sweeps/{sweep.name}" in names
    for preset in (ROOT / "wsemoe" / "presets").rglob("*.yaml"):
        assert f"wsemoe/{preset.relative_to(ROOT / 'wsemoe').as_posix()}" in names
    for data in ("shipped_microbatches.yaml", "unknowns.yaml"):
        assert f"wsemoe/analysis/uncertainty/data/{data}" in names
    assert not any(n.startswith(("tests/", "sweeps/", "bench/")) for n in names)
