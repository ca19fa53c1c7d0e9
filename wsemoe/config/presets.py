"""Hardware and model presets (the YAML files of the wsemoe/presets/ data folder, by name) and the
shipped reproduction sweeps (wsemoe/validate/sweeps/)."""

from __future__ import annotations

import copy
import difflib
import functools
from pathlib import Path

from wsemoe.config import yamlio
from wsemoe.errors import PresetError
from wsemoe.specs import HardwareSpec, ModelSpec
from wsemoe.specs.base import build

FILE_SUFFIXES = (".yaml", ".yml")   # a YAML file of a section's fields (--hardware FILE, --model FILE)

_ROOT = Path(__file__).resolve().parents[1] / "presets"  # package data, next to this package
SWEEPS = _ROOT.parent / "validate" / "sweeps"  # package data: works from an installed wheel
KINDS = ("hardware", "models")


def names(kind: str) -> list[str]:
    """Preset names of one kind ('hardware' or 'models'), sorted."""
    return sorted(p.stem for p in (_ROOT / kind).glob("*.yaml"))


def shipped_sweeps() -> list[Path]:
    """The reproduction sweep configs that ship with the package, sorted by name."""
    return sorted(SWEEPS.glob("*.yaml"))


def by_hf_id(hf_id: str) -> str | None:
    """The model preset whose `hf_id` or `hf_aliases` is `hf_id` (Hugging Face ids compare case-blind), or None."""
    if not isinstance(hf_id, str) or "/" not in hf_id:
        return None
    return _hf_ids().get(hf_id.strip().lower())


def by_hf_repo(repo: str) -> str | None:
    """The model preset one of whose Hugging Face ids has the repository name `repo` (the part after the
    organisation, case-blind), if exactly one preset has it: re-published copies (`nvidia/<repo>`) of a model."""
    found = {name for hf_id, name in _hf_ids().items() if hf_id.split("/")[-1] == repo.strip().lower()}
    return found.pop() if len(found) == 1 else None


@functools.lru_cache(maxsize=1)
def _hf_ids() -> dict:
    """{lower-case Hugging Face id: model preset name} over every model preset."""
    out: dict = {}
    for name in names("models"):
        data = _read(_ROOT / "models" / f"{name}.yaml")
        for hf_id in [data.get("hf_id") or "", *(data.get("hf_aliases") or ())]:
            if hf_id:
                out[str(hf_id).lower()] = name
    return out


def raw(kind: str, name: str, loc=()) -> dict:
    """The preset's fields as a plain dict (to merge user overrides into); a model may be named by its
    Hugging Face id (`deepseek-ai/DeepSeek-V3`), which resolves to the preset carrying it."""
    if kind == "models" and by_hf_id(name):
        name = by_hf_id(name)
    plain = isinstance(name, str) and name == Path(name).name and not name.startswith(".")   # '../models/x': no
    path = _ROOT / kind / f"{name}.yaml"
    if not plain or not path.is_file():
        close = difflib.get_close_matches(str(name), names(kind), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(names(kind))}"
        if not plain or str(name).endswith(FILE_SUFFIXES):   # a path or a file's name ('hw.yaml' beside the sweep)
            hint = (f"; a sweep file names a {kind.rstrip('s')} preset or gives the fields themselves "
                    f"({kind.rstrip('s')}: {{...}}){'' if kind == 'hardware' else ' or a config.json path'}; "
                    f"--{kind.rstrip('s')} FILE reads a file's fields (eval, new)")
        raise PresetError(f"unknown {kind.rstrip('s')} preset '{name}'{hint}", loc=loc)
    return copy.deepcopy(_read(path))


@functools.lru_cache(maxsize=64)
def _read(path: Path) -> dict:
    """A preset file, parsed once per process (package data does not change under a running program)."""
    return dict(yamlio.load(path))


def load_hardware(name: str) -> HardwareSpec:
    """A hardware preset by name."""
    return build(HardwareSpec, raw("hardware", name), loc=("hardware",))


def load_model(name_or_path) -> ModelSpec:
    """A model by preset name, or from a Hugging Face `config.json` path."""
    p = Path(str(name_or_path))
    if p.suffix == ".json" or p.is_file() or (p.is_dir() and (p / "config.json").is_file()):
        from wsemoe.config.hf import model_from_hf_config

        return model_from_hf_config(p)
    return build(ModelSpec, raw("models", str(name_or_path)), loc=("model",))
