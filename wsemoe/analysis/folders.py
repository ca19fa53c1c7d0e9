"""Atomic output folders: built under a hidden name beside the target, then swapped into place."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def replace_folder(target, files: dict[str, str]) -> Path:
    """Write {file name: text} as the folder `target`, replacing an earlier one only once all is written."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for name, text in files.items():
            (tmp / name).write_text(text)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return target
