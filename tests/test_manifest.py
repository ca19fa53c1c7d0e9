"""Manifests are untrusted input (issue 18): one strict schema and bounded parsing; whatever is malformed
comes back as one line, never an internal error, from the parser and from every command that reads."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, strategies as st

from wsemoe.cli import app
from wsemoe.errors import ResultsError
from wsemoe.store import manifest
from wsemoe.sweep.run import run_sweep

CFG = {"name": "mf", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.G": [1, 2, 3, 4]}}


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    res = run_sweep(CFG, out_dir=tmp_path_factory.mktemp("mf") / "mf", chunk_size=2)
    return json.loads((res.path / "manifest.json").read_text())


def _set(m: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(m)
    node = out
    for k in path[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()
PART = ("parts", 0)
BAD = {
    "missing points": (("points",), _DELETE, "points"),
    "missing parts": (("parts",), _DELETE, "parts"),
    "missing part sha256": ((*PART, "sha256"), _DELETE, "sha256"),
    "points as text": (("points",), "4", "points"),
    "points as float": (("points",), 4.0, "points"),
    "points as bool": (("points",), True, "points"),
    "negative points": (("points",), -4, "points"),
    "huge points": (("points",), 10**30, "out of range"),
    "name with a slash": (("name",), "../../etc", "name"),
    "name with an escape": (("name",), "a\x1b[31m", "name"),
    "objectives as a list": (("objectives",), ["mfu"], "objectives"),
    "objective sense": (("objectives",), {"mfu": "most"}, "objectives"),
    "deep nesting": (("description",), json.loads("[" * 500 + "]" * 500), "description"),
    "part traversal": ((*PART, "file"), "../../../etc/passwd", "file"),
    "part name off its range": ((*PART, "file"), "part-000000000000-000000000003.parquet", "does not match its range"),
    "negative range": ((*PART, "start"), -2, "start"),
    "empty range": ((*PART, "stop"), 0, "not after start"),
    "rows off": ((*PART, "rows"), 3, "rows"),
    "overlapping parts": (("parts", 1, "start"), 1, "parts"),
    "sha256 not hex": ((*PART, "sha256"), "z" * 64, "sha256"),
    "unknown key": (("surprise",), 1, "surprise"),
    "chunks off": (("chunks",), 7, "chunks"),
    "feasible beyond points": (("feasible",), 99, "exceed"),
    "eval_seconds negative": (("eval_seconds",), -1.0, "eval_seconds"),
    "columns as a string": (("columns",), "mfu", "columns"),
    "files with a traversal": (("files",), {"../x": {"bytes": 1, "sha256": "0" * 64}}, "files"),
    "search of another algorithm": (("search",), {"algorithm": "cmaes"}, "search"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_malformed_manifest_is_one_line(case, valid):
    path, value, needle = BAD[case]
    with pytest.raises(ResultsError, match=None) as info:
        manifest.parse(json.dumps(_set(valid, path, value)).encode(), "results/mf")
    line = info.value.line()
    assert "\n" not in line and needle in line and len(line) < 400, line


@pytest.mark.parametrize("text,needle", [
    (b"NaN", "not a number JSON allows"), (b'{"points": Infinity}', "not a number JSON allows"),
    (b'{"x": 1e999}', "out of range"), (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"\xff\xfe", "not valid JSON"), (b"[1, 2]", "not an object"), (b'{"format": "other/1"}', "format"),
    (b'{"x": ' + b"9" * 5000 + b"}", "out of range"), (b"", "not valid JSON"),
])
def test_bounded_parsing(text, needle):
    with pytest.raises(ResultsError, match=needle):
        manifest.parse(text, "m")


@pytest.mark.parametrize("text", [b'{"points": 3}', b'{"format": null}'])
def test_a_manifest_without_a_format_says_it_names_none(text):
    """No format field (or null) is said as such, not as the format 'None' (the old wording)."""
    with pytest.raises(ResultsError) as info:
        manifest.parse(text, "m")
    line = info.value.line()
    assert f"manifest.json names no format, not {manifest.FORMAT}" in line and "None" not in line, line


def test_a_manifest_over_the_size_limit_is_refused_before_parsing(monkeypatch, valid):
    monkeypatch.setattr(manifest, "MAX_BYTES", 1000)
    with pytest.raises(ResultsError, match="larger than"):
        manifest.parse(json.dumps(valid).encode(), "m")


@pytest.mark.parametrize("case", ["missing parts", "deep nesting", "part traversal", "huge points", "overlapping parts"])
def test_every_reader_gives_one_line_for_a_malformed_manifest(case, valid, tmp_path, runner):
    res = run_sweep(CFG, out_dir=tmp_path / "mf", chunk_size=2)
    path, value, _ = BAD[case]
    (res.path / "manifest.json").write_text(json.dumps(_set(valid, path, value)))
    for argv in (["show", str(res.path)], ["plot", str(res.path)], ["report", str(res.path)],
                 ["compare", str(res.path), str(res.path)], ["eval", str(res.path)]):
        r = runner.invoke(app, argv)
        text = r.output.strip()
        assert r.exit_code != 0 and len(text.splitlines()) == 1 and "manifest.json" in text, (argv, text)
        assert "internal error" not in text
    ls = runner.invoke(app, ["ls", str(tmp_path)])
    assert ls.exit_code == 0 and "damaged" in ls.output, ls.output


# ---------------------------------------------------------------- property: any mutation is one line or valid

JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
                    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=12)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


@given(data=st.data())
def test_any_mutation_of_a_valid_manifest_parses_or_is_one_line(valid, data):
    paths = [p for p in _paths(valid) if p]
    m = valid
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        value = data.draw(st.one_of(JSON, st.just(_DELETE)))
        try:
            m = _set(m, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # the path no longer exists after an earlier mutation
    text = json.dumps(m, allow_nan=True).encode()
    try:
        out = manifest.parse(text, "results/mf")
    except ResultsError as exc:
        assert "\n" not in exc.line() and len(exc.line()) < 700
        return
    assert out["points"] == sum(p["rows"] for p in out["parts"])  # what parses is whole
    assert all(math.isfinite(out["eval_seconds"]) for _ in [0])
