"""Safe YAML reading that rejects duplicate keys and object tags, with file-naming errors."""

from __future__ import annotations

from pathlib import Path

import yaml

from wsemoe.errors import ConfigError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise ConfigError(f"duplicate key '{key}' (line {mark.line + 1})", loc=(str(key),))
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def loads(text: str, source: str = "<string>"):
    """Parse YAML text strictly; any problem becomes a one-line ConfigError naming `source`."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except ConfigError as exc:
        raise ConfigError(exc.message, loc=(source, *exc.loc)) from None
    except yaml.constructor.ConstructorError as exc:
        line = f" (line {exc.problem_mark.line + 1})" if exc.problem_mark else ""
        raise ConfigError(f"unsupported YAML tag or value: {exc.problem}{line}", loc=(source,)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise ConfigError(f"malformed YAML{line}: {problem}", loc=(source,)) from None


def load(path) -> object:
    """Read and parse a YAML file; a missing or unreadable file is a ConfigError naming it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", loc=(str(p),)) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a YAML file", loc=(str(p),)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}", loc=(str(p),)) from None
    return loads(text, source=str(p))


def dumps(data) -> str:
    """YAML text of plain data, keys in insertion order, floats in a form PyYAML reads back as floats."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
