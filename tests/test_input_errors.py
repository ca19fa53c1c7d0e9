"""Inputs that used to end in "internal error" end in one line naming the field: integer literals too long for
any field (YAML, --set, an axis, config.json), rope_theta of 10**400, an explicit placement with the wrong number
of ids, a NUL byte or a lone surrogate in an ownership-record entry name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.store import ledger
from wsemoe.sweep.run import run_sweep
from clicheck import one_line_error

HF = Path(__file__).parent / "data" / "hf"
HUGE = "9" * 5000   # beyond Python's 4,300-digit conversion limit
BIG = "1" + "0" * 400  # converts, but no float holds it



@pytest.mark.parametrize("where, text, field", [
    ("base", "name: x\nhardware: cs2\nmodel: qwen3-30b-a3b\nworkload: {{seq_len: {n}}}\n", "workload -> seq_len"),
    ("figure", "name: x\nhardware: {{preset: cs2, node_peak_flops: {n}}}\nmodel: qwen3-30b-a3b\n",
     "hardware -> node_peak_flops"),
    ("axis", "name: x\nhardware: cs2\nmodel: qwen3-30b-a3b\naxes:\n  workload.B: [1, {n}]\n", "axes -> workload.B"),
    ("range", "name: x\nhardware: cs2\nmodel: qwen3-30b-a3b\naxes:\n  workload.B: {{range: [1, {n}]}}\n",
     "axes -> workload.B -> range"),
])
@pytest.mark.parametrize("n", [HUGE, BIG, "-" + HUGE])
def test_integer_literals_too_long_for_any_field_in_yaml(tmp_path, runner, where, text, field, n):
    (tmp_path / "x.yaml").write_text(text.format(n=n))
    one_line_error(runner.invoke(app, ["check", str(tmp_path / "x.yaml")]), field, "digits")


@pytest.mark.parametrize("n", [HUGE, BIG])
def test_integer_literals_too_long_through_eval_set(runner, n):
    one_line_error(runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", f"workload.B={n}"]),
              "B", "digits")


@pytest.mark.parametrize("key, n", [("vocab_size", HUGE), ("rope_theta", BIG), ("rope_theta", HUGE),
                                    ("num_attention_heads", BIG)])
def test_integer_literals_too_long_in_config_json(tmp_path, runner, key, n):
    text = json.dumps({**json.loads((HF / "qwen3-30b-a3b.json").read_text()), key: 7}).replace(f'"{key}": 7',
                                                                                               f'"{key}": {n}')
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(text)
    one_line_error(runner.invoke(app, ["eval", "--hardware", "cs2", "--model", str(tmp_path / "m" / "config.json")]), key)


PLACED = ["eval", "--hardware", "wsc-b200-8x8", "--model", "qwen3-30b-a3b", "--set", "mapping.strategy=explicit",
          "--set", "mapping.tp=4"]


@pytest.mark.parametrize("ids, needle", [
    ([0, 1, 2], "has 3 group ids"),
    ([i // 4 for i in range(65)], "has 65 group ids"),
    ([i // 5 for i in range(64)], "exactly tp = 4 times"),
    ([i // 4 + 1 for i in range(64)], "exactly tp = 4 times"),
    (None, "needs mapping.placement"),
])
def test_explicit_placement_must_name_every_node_once(runner, tmp_path, ids, needle):
    sets = [] if ids is None else ["--set", f"mapping.placement={ids}"]
    one_line_error(runner.invoke(app, PLACED + sets), "--set -> mapping.placement" if ids else "--set -> mapping.strategy",
                   needle)
    cfg = {"name": "pl", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
           "mapping": {"strategy": "block", "tp": 4, **({} if ids is None else {"placement": ids})},
           "axes": {"mapping.strategy": ["block", "explicit"]}}
    (tmp_path / "pl.yaml").write_text(yaml.safe_dump(cfg))
    one_line_error(runner.invoke(app, ["check", str(tmp_path / "pl.yaml")]), "placement", needle)


def test_a_whole_explicit_placement_runs(runner):
    ids = [i // 4 for i in range(64)]
    assert runner.invoke(app, PLACED + ["--set", f"mapping.placement={ids}"]).exit_code == 0


@pytest.mark.parametrize("name", ["a\x00b", "\ud800x", "x/y"])
def test_an_ownership_record_naming_an_impossible_file_is_not_ours(tmp_path, runner, monkeypatch, name):
    """A ledger whose entry names no possible file (NUL, a lone surrogate, a '/') is malformed: the folder is not
    taken as wsemoe's, so nothing is replaced, and every command answers in one line."""
    monkeypatch.chdir(tmp_path)
    cfg = {"name": "own", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
           "axes": {"workload.G": [1, 2]}}
    res = run_sweep(cfg, out_root="results")
    body = json.loads((res.path / ledger.NAME).read_text())
    body["entries"][name] = {"kind": "file", "writer": "sweep", "bytes": 1, "sha256": "0" * 64}
    (res.path / ledger.NAME).write_text(json.dumps(body))
    assert ledger.read(res.path).entries == {}
    for argv in (["ls", "results"], ["sweep", "own.yaml", "--force"], ["report", "results/own"], ["ls", "--clean"]):
        (tmp_path / "own.yaml").write_text(yaml.safe_dump(cfg))
        r = runner.invoke(app, argv)
        assert "internal error" not in r.output and "Traceback" not in r.output, (argv, r.output)
