"""Safe YAML reading that rejects duplicate keys, aliases and object tags, with file-naming errors."""

from __future__ import annotations

import copy
import hashlib
import re
import threading
from collections import OrderedDict

import yaml

from wsemoe.errors import ConfigError
from wsemoe.config.files import MAX_INT_DIGITS, HugeNumber, read_text

# A sweep config is hand-written: megabytes would be an accident, and pure-Python YAML reads about 4 s a MiB (a
# 16 MiB file, the bound before, took over a minute to reach its refusal; libyaml's parser, used when PyYAML has
# it, reads a MiB in a few tenths of a second, the bound stays for what comes after parsing)
MAX_CONFIG_BYTES = 2**20


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys and aliases.

    PyYAML silently keeps the last of duplicate keys; aliases let a few lines expand into
    gigabytes (a "billion laughs" document), so a config must write its values out.
    """

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise ConfigError(f"YAML aliases (*{event.anchor}) are not supported; write the values out "
                              f"(line {event.start_mark.line + 1})")
        return super().compose_node(parent, index)


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            dup = key in seen
        except TypeError:  # an unhashable key (a list as key): let the constructor report it
            break
        if dup:
            mark = key_node.start_mark
            raise ConfigError(f"duplicate key '{key}' (line {mark.line + 1})", loc=(str(key),))
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _int(loader, node):
    """An int as YAML 1.2 writes one (decimal, 0o octal, 0x hex: 010 is ten), with a literal too long for any field
    kept as a HugeNumber (the field names it)."""
    text = loader.construct_scalar(node)
    digits = text.lstrip("+-")
    if len(text) > MAX_INT_DIGITS:
        return HugeNumber(len(digits))
    sign = -1 if text.startswith("-") else 1
    base = {"0x": 16, "0o": 8}.get(digits[:2].lower(), 10)
    try:
        return sign * int(digits[2:] if base != 10 else digits, base)
    except ValueError:   # an explicit !!int on what is no int
        raise yaml.constructor.ConstructorError(None, None, f"'{text}' is not an integer", node.start_mark) from None


# Plain scalars are read as the YAML 1.2 core schema reads them, in config files and --set values alike (both
# come through loads): PyYAML's YAML 1.1 reads 010 as 8, 1:16 as 76, 0b10 as 2, 1_6 as 16, yes/on/no/off as
# true/false, 2024-01-01 as a date, and 1e-9 (no dot) as text, where YAML 1.2 and every user read 010 as ten and
# the rest as text or numbers. https://yaml.org/spec/1.2.2/#1032-tag-resolution
CORE = (("tag:yaml.org,2002:null", r"~|null|Null|NULL|", "~nN"),
        ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
        ("tag:yaml.org,2002:int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
        ("tag:yaml.org,2002:float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", "-+.0123456789"))
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in CORE:
    _StrictLoader.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern})$"), list(_first) + (
        [""] if _tag.endswith("null") else []))
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _int)

_FastLoader = None
if getattr(yaml, "CSafeLoader", None) is not None:   # PyYAML built with libyaml
    class _FastLoader(yaml.CSafeLoader):   # type: ignore[no-redef]
        """libyaml's parser and composer with _StrictLoader's resolvers and constructors. Its composer is C, so
        _StrictLoader.compose_node's alias refusal cannot run in it: an alias shows as a node met twice
        (`_shared`), and any document it refuses or that fails here is parsed again by _StrictLoader, whose
        refusal (or value) is the answer: every error reads as before."""

    _FastLoader.yaml_implicit_resolvers = _StrictLoader.yaml_implicit_resolvers
    _FastLoader.yaml_constructors = _StrictLoader.yaml_constructors


class _Fallback(Exception):
    """The fast path cannot answer: _StrictLoader parses the text."""


# Deeper than this, the strict loader decides: libyaml composes any depth, but what it builds would meet Python's
# recursion limit later (copying, validation), where the strict loader says "nested too deeply" in one line.
FAST_DEPTH = 100


def _shared(root) -> bool:
    """Whether a composed document reaches some node twice (an alias; each node is visited once, so a "billion
    laughs" document costs its written size) or nests deeper than FAST_DEPTH."""
    seen, todo = set(), [(root, 1)]
    while todo:
        node, depth = todo.pop()
        if id(node) in seen or depth > FAST_DEPTH:
            return True
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            todo.extend((x, depth + 1) for pair in node.value for x in pair)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((x, depth + 1) for x in node.value)
    return False


def _fast(text: str):
    """The document through libyaml, or _Fallback (no libyaml, a character the pure-Python reader refuses, an
    alias, or any failure: the pure-Python path then says what is wrong)."""
    if _FastLoader is None or yaml.reader.Reader.NON_PRINTABLE.search(text):
        raise _Fallback
    loader = _FastLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _shared(node):
            raise _Fallback
        return None if node is None else loader.construct_document(node)
    except Exception:   # noqa: BLE001 - the strict loader re-parses and raises its own error
        raise _Fallback from None
    finally:
        loader.dispose()


# Documents parsed, by their text's digest: a results folder's config is read by several steps of one command
# (listing, columns, figures) and pure-Python YAML parsing is ~100× a copy of what it gives. Each caller gets
# its own copy (callers may change what they get); a document that fails to parse is never kept.
_PARSED: OrderedDict = OrderedDict()
_PARSED_MAX = 256
_PARSED_MAX_CHARS = 1 << 16   # hand-written configs and presets: a few kB each
_PARSED_LOCK = threading.Lock()   # threads of a Dask worker may read configs at once


def loads(text: str, source: str = "<string>"):
    """Parse YAML text strictly; any problem becomes a one-line ConfigError naming `source`."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass")).digest() if len(text) <= _PARSED_MAX_CHARS else None
    with _PARSED_LOCK:
        kept = _PARSED.get(key) if key is not None else None
        if kept is not None:
            _PARSED.move_to_end(key)
    if kept is not None:
        return copy.deepcopy(kept[0])
    value = _parse(text, source)
    if key is not None:
        with _PARSED_LOCK:
            _PARSED[key] = (copy.deepcopy(value),)
            while len(_PARSED) > _PARSED_MAX:
                _PARSED.popitem(last=False)
    return value


def _parse(text: str, source: str):
    try:
        return _fast(text)
    except _Fallback:
        pass
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except ConfigError as exc:
        raise ConfigError(exc.message, loc=(source, *exc.loc)) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", loc=(source,)) from None
    except yaml.constructor.ConstructorError as exc:
        line = f" (line {exc.problem_mark.line + 1})" if exc.problem_mark else ""
        raise ConfigError(f"unsupported YAML tag or value: {exc.problem}{line}", loc=(source,)) from None
    except yaml.reader.ReaderError as exc:  # control characters and bad encodings
        raise ConfigError(f"malformed YAML: {exc.reason}, character #x{exc.character:04x} "
                          f"at position {exc.position}", loc=(source,)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or "cannot parse"
        raise ConfigError(f"malformed YAML{line}: {problem}", loc=(source,)) from None


def load(path) -> object:
    """Read and parse a YAML file; a missing, unreadable, special or huge file is a ConfigError naming it."""
    return loads(read_text(path, MAX_CONFIG_BYTES, "YAML file"), source=str(path))


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):   # type: ignore[misc]
    """PyYAML's safe dumper (libyaml's emitter when PyYAML has it: the same text, ten times faster) that also
    quotes a string the YAML 1.2 core schema would read as another type ('0o10', '1e3'), as it quotes one YAML 1.1
    would ('yes', '010'): the text reads back as the same value under either."""


_Dumper.yaml_implicit_resolvers = {k: list(v) for k, v in _Dumper.yaml_implicit_resolvers.items()}
for _tag, _pattern, _first in CORE:
    _Dumper.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern})$"), list(_first))


def dumps(data) -> str:
    """YAML text of plain data, keys in insertion order, floats in a form PyYAML reads back as floats."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None)
