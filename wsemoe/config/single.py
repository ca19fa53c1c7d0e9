"""One design point without a sweep file: the mapping a sweep file would hold, built from a hardware, a model
and `section.field=value` settings, so it is validated by the loader exactly as a sweep file is.

`wsemoe eval --hardware cs2 --model qwen3-30b-a3b --set workload.B=2` and `wsemoe.point_config(...)` use it;
every section the settings leave alone takes its spec defaults, as in a sweep file that omits it.
"""

from __future__ import annotations

from pathlib import Path

from wsemoe.config import axes, presets, yamlio
from wsemoe.config.presets import FILE_SUFFIXES
from wsemoe.errors import ConfigError


def parse_sets(sets) -> dict:
    """{path: value} from 'section.field=value' items (values parsed as YAML, e.g. 8, 0.5, er, [2, 2])."""
    out = {}
    for item in sets or []:
        path, sep, text = str(item).partition("=")
        path = path.strip()
        if not sep or not path:
            raise ConfigError("use --set section.field=value (e.g. workload.G=8) or --set model=<preset>",
                              loc=("--set", item))
        axes.check_path(path, ("--set", path))
        if path in out:  # the last would win silently: which one was meant?
            raise ConfigError("set twice; set each field once", loc=("--set", path))
        if not text.strip():  # YAML reads nothing as null, which a field then refuses as "got None" or drops
            raise ConfigError(f"no value after '=': give one ({path}=<value>)", loc=("--set", path))
        out[path] = yamlio.loads(text, source="--set")
    return out


def section_source(kind: str, value, option: str):
    """A hardware or model section as a sweep file gives it: a preset name, the fields of a YAML file
    ({preset: name, ...} allowed), or (models) a Hugging Face config.json path or folder."""
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ConfigError(f"give a {kind} preset name or file", loc=(option,))
    text = str(value)
    if text.endswith(FILE_SUFFIXES):
        data = yamlio.load(Path(text))
        if not isinstance(data, dict):
            raise ConfigError(f"a {kind} file holds a mapping of {kind} fields", loc=(option, text))
        return data
    if kind == "model" and (axes.is_model_file(text) or _local_folder(text)):
        return {"hf_config": str(Path(text).absolute())}
    return text


def _local_folder(text: str) -> bool:
    """A folder here named like no preset (`--model mymodel` for ./mymodel/config.json): the user's model, as a
    Hugging Face loader reads a local folder; a folder named like a preset does not hide the preset."""
    return Path(text).is_dir() and text not in presets.names("models")


def point_mapping(hardware, model, sets: dict | None = None, name: str = "point") -> dict:
    """The sweep-file mapping of one point: hardware and model sections, then each setting in its section
    (a whole section set by name, e.g. model=deepseek-v3, replaces the flag's)."""
    data: dict = {"name": name, "hardware": section_source("hardware", hardware, "--hardware"),
                  "model": section_source("model", model, "--model")}
    for path, value in (sets or {}).items():
        section, _, field = path.partition(".")
        if not field:
            data[section] = section_source(section, value, "--set") if section in ("hardware", "model") else value
            continue
        current = data.get(section, {})
        if isinstance(current, str):  # a preset name: its fields, then the setting
            current = {"preset": current}
        data[section] = {**current, field: value}
    return data
