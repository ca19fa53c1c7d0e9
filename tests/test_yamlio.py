"""YAML reading (config/yamlio.py): libyaml's parser when PyYAML has it, the pure-Python strict loader as the
reference: the same values, and every refusal (aliases, duplicate keys, tags, control characters, nesting, bad
syntax) in the same words whichever path met it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wsemoe.config import yamlio
from wsemoe.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
LIBYAML = getattr(yaml, "CSafeLoader", None) is not None
BAD = ["a: &x 1\nb: *x\n", "a: &x [1, 2]\nb: [*x, *x]\n", "a: 1\na: 2\n", "x: !!python/object:os.system 1\n",
       "a: \x07\n", "[" * 5000 + "]" * 5000, "a: [1, 2\n", "a: b: c\n", "- a\nb: 1\n", "{[1]: 2}\n"]


def _pure(monkeypatch):
    monkeypatch.setattr(yamlio, "_FastLoader", None)


@pytest.mark.skipif(not LIBYAML, reason="PyYAML without libyaml")
def test_a_valid_document_is_parsed_by_libyaml(monkeypatch):
    """The pure-Python loader read every document (about 4 s a MiB, 15 s for a 1 MiB axis list on a busy
    machine; libyaml 5x less): a valid document no longer reaches it."""
    def refuse(*args, **kwargs):
        raise AssertionError("the pure-Python loader ran")
    monkeypatch.setattr(yamlio.yaml, "load", refuse)
    text = "name: s\naxes:\n  workload.B: [" + ", ".join(str(i) for i in range(1, 20_000)) + "]\nx: 1e-9\n"
    got = yamlio.loads(text, "s")
    assert got["axes"]["workload.B"][-1] == 19_999 and got["x"] == 1e-9


@pytest.mark.parametrize("text", BAD)
def test_every_refusal_reads_as_the_strict_loaders(text, monkeypatch):
    with pytest.raises(ConfigError) as fast:
        yamlio._parse(text, "s")
    _pure(monkeypatch)
    with pytest.raises(ConfigError) as pure:
        yamlio._parse(text, "s")
    assert (fast.value.message, fast.value.loc) == (pure.value.message, pure.value.loc)


def test_every_shipped_yaml_reads_the_same_on_both_paths(monkeypatch):
    files = [p for p in ROOT.glob("**/*.y*ml") if ".venv" not in p.parts and ".git" not in p.parts]
    fast = {p: yamlio._parse(p.read_text(), str(p)) for p in files}
    _pure(monkeypatch)
    assert len(files) > 30 and all(yamlio._parse(p.read_text(), str(p)) == fast[p] for p in files)


def test_an_aliased_billion_laughs_is_refused_without_expanding():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 30)]
    with pytest.raises(ConfigError, match=r"YAML aliases \(\*a0\) are not supported"):
        yamlio.loads("\n".join(lines) + "\n", "s")


# (text, value): the YAML 1.2 core schema, where PyYAML's YAML 1.1 read 8, 76, 2, True, a date
CORE = [("010", 10), ("0o10", 8), ("0x10", 16), ("1:16", "1:16"), ("0b10", "0b10"), ("yes", "yes"), ("off", "off"),
        ("2024-01-01", "2024-01-01"), ("true", True), ("~", None), ("1e-9", 1e-9), (".5", 0.5), ("-7", -7)]


@pytest.mark.parametrize("text, value", CORE)
def test_plain_scalars_read_by_the_yaml_1_2_core_schema_on_both_paths(text, value, monkeypatch):
    assert yamlio.loads(f"a: {text}\n", "s")["a"] == value and type(yamlio.loads(f"b: {text}\n")["b"]) is type(value)
    _pure(monkeypatch)
    assert yamlio._parse(f"a: {text}\n", "s")["a"] == value


@pytest.mark.parametrize("text", [t for t, _ in CORE] + ["1e3", "1.", "-.inf", "NULL"])
def test_a_string_dumped_reads_back_as_the_same_string(text):
    assert yamlio.loads(yamlio.dumps({"a": text}))["a"] == text


def test_set_and_a_sweep_file_read_a_leading_zero_alike(runner, tmp_path):
    # `--set model.num_experts=010` (and `num_experts: 010` in a model file) was 8 experts, YAML 1.1's octal.
    from wsemoe import point_config
    from wsemoe.cli import app
    from wsemoe.config.loader import load_config

    model = tmp_path / "m.yaml"
    model.write_text("preset: qwen3-30b-a3b\nnum_experts: 010\n")
    assert load_config(point_config("cs2", str(model))).model.num_experts == 10
    assert load_config(point_config("cs2", "qwen3-30b-a3b", sets=["model.num_experts=010"])).model.num_experts == 10
    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "model.num_experts=1:16"])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and "1:16" in r.output, r.output
