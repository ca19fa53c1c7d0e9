"""Config reference and what `check` catches: the JSON Schema and docs/config.md come from the models (and
the file is up to date), column names get a did-you-mean, ranges take a step, duplicates are refused, and
Hugging Face configs can be values of a model axis, each named after its folder or file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import wsemoe
from wsemoe.cli import app
from wsemoe.config.loader import load_config
from wsemoe.config.schema import SECTIONS
from wsemoe.errors import ConfigError
from wsemoe.report.configdoc import REGENERATE, markdown

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "hf"
BASE = {"name": "c", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"seq_len": 2048},
        "axes": {"workload.B": [1, 2]}}


def test_docs_config_md_is_up_to_date():
    assert (ROOT / "docs" / "config.md").read_text() == markdown(), f"regenerate it: {REGENERATE}"


def test_docs_commands_md_lists_every_option_of_every_command():
    """Options went undocumented (sweep --results, sensitivity --seed/--unknowns, calibrate --unknowns, ...): the
    page is now written from the command line itself, and stale when an option changes."""
    from typer.main import get_command

    from wsemoe.cli import app
    from wsemoe.commands.reference import markdown as commands_page

    group = get_command(app)
    text = (ROOT / "docs" / "commands.md").read_text()
    assert text == commands_page(group), f"regenerate it: {REGENERATE}"
    for name, cmd in group.commands.items():
        assert f"## wsemoe {name}" in text
        for p in cmd.params:
            assert all(f"`{o}`" in text for o in [*p.opts, *p.secondary_opts] if o.startswith("-")), (name, p.opts)


def test_docs_list_every_key_with_type_unit_default_and_meaning():
    text = markdown()
    for section, cls in SECTIONS.items():
        for field, info in cls.model_fields.items():
            line = next((ln for ln in text.splitlines() if ln.startswith(f"| {field} |")), None)
            assert line is not None, (section, field)
    assert "| bytes_per_act | number, ≥ 0.125, ≤ 64 | bytes | `2.0` | bytes per activation element |" in text
    assert "| expert_weight_format | one of: bf16 \\| fp8 \\| fp4 \\| mxfp4 \\| nvfp4 \\| fp8_block \\| int4_g32 |  | `bf16` |" in text and "bytes_per_weight" not in text
    assert "| B | integer, > 0, ≤ 16,777,216 | sequences | `1` |" in text
    assert "{range: [1024, 8192], step: 1024}" in text  # the step syntax, documented


def test_schema_command_writes_a_json_schema_with_units(runner, tmp_path):
    r = runner.invoke(app, ["schema"])
    assert r.exit_code == 0
    schema = json.loads(r.output)
    wl = schema["properties"]["workload"]["properties"]
    assert wl["seq_len"]["x-unit"] == "tokens" and "tokens" in wl["seq_len"]["description"]
    assert set(wl["mode"]["enum"]) == {"train", "prefill", "decode"}
    assert "qwen3-30b-a3b" in schema["properties"]["model"]["anyOf"][0]["enum"]
    assert "workload.G" in schema["properties"]["axes"]["properties"]
    out = tmp_path / "sweep.schema.json"
    assert runner.invoke(app, ["schema", "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["$id"] == schema["$id"]
    assert runner.invoke(app, ["schema", "-o", str(out)]).exit_code == 0  # ours: replaced
    mine = tmp_path / "mine.json"
    mine.write_text("{}")
    r = runner.invoke(app, ["schema", "-o", str(mine)])
    assert r.exit_code != 0 and "wsemoe did not write it" in r.output and mine.read_text() == "{}"


def _keys(node, schema, path=()):
    """Every mapping key of a shipped sweep exists in the schema (a structural check of the schema)."""
    if isinstance(node, dict):
        props = schema.get("properties") or {}
        if "anyOf" in schema:
            props = {k: v for alt in schema["anyOf"] for k, v in (alt.get("properties") or {}).items()}
        for k, v in node.items():
            extra = schema.get("additionalProperties")
            sub = props.get(k) if k in props else extra if isinstance(extra, dict) else {} if extra is True else None
            assert sub is not None, (*path, k)
            _keys(v, sub, (*path, k))


@pytest.mark.parametrize("sweep", sorted(p.name for p in (ROOT / "sweeps").glob("*.yaml")))
def test_shipped_sweeps_fit_the_schema(sweep):
    _keys(yaml.safe_load((ROOT / "sweeps" / sweep).read_text()), wsemoe.config_schema())


@pytest.mark.parametrize("change,needle", [
    ({"objectives": {"mfuu": "max"}}, "[objectives -> mfuu] unknown objective column 'mfuu'; did you mean 'mfu'?"),
    ({"objectives": {"bound": "max"}}, "objective column 'bound' holds text, not numbers"),
    ({"constraints": [{"column": "step_time", "max": 1}]}, "did you mean 'step_time_s'"),
    ({"compare": {"metric": "tokens_per_sec", "baseline": {"workload.B": 1}}}, "did you mean 'tokens_per_s'"),
    ({"compare": {"baseline": {"workload.GG": 1}}}, "did you mean 'workload.B'"),
    ({"compare": {"baseline": {"workload.B": 3}}}, "3 is not among the values of workload.B"),
    ({"output": {"columns": ["mfu", "tokens_per_second"]}}, "did you mean 'tokens_per_s'"),
    ({"axes": {"workload.B": [1, 2, 1]}}, "[axes -> workload.B -> 2] value 1 appears twice (at 0 and 2)"),
    ({"axes": {"workload.B": [1, 2.0, 2]}}, "value 2 appears twice"),
    ({"axes": {"workload.B": list(range(1, 600)) + [7]}}, "value 7 appears twice (at 6 and 599)"),
    ({"zip": [{"workload.B": [1, 2, 1], "workload.G": [1, 2, 1]}]}, "[zip -> 0 -> 2] row (1, 1) appears twice"),
])
def test_check_catches_what_sweep_would_fail_on(runner, tmp_path, change, needle):
    cfg = {**BASE, **change}
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(cfg))
    for cmd in (["check", str(f)], ["sweep", str(f), "--results", str(tmp_path / "res")]):
        r = runner.invoke(app, cmd)
        text = r.output.strip()
        assert r.exit_code != 0 and len(text.splitlines()) == 1 and needle in text, (cmd, text)
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())  # nothing left, hidden or not


def test_zip_columns_may_repeat_when_rows_differ():
    cfg = {**BASE, "zip": [{"model.num_experts": [64, 128, 128], "model.moe_intermediate_size": [768, 768, 384]}]}
    assert load_config(cfg).size() == 6


@pytest.mark.parametrize("spec,values", [
    ({"range": [1, 16], "step": 2}, [1, 3, 5, 7, 9, 11, 13, 15]),
    ({"range": [1, 16, 5]}, [1, 6, 11, 16]),
    ({"range": [0.5, 1.0], "step": 0.25}, [0.5, 0.75, 1.0]),
    ({"pow2": [3, 40]}, [4, 8, 16, 32]),
])
def test_range_step_syntax(spec, values):
    path = "balance.zipf_s" if isinstance(values[0], float) else "workload.B"
    cfg = {**BASE, "balance": {"distribution": "zipf"}, "axes": {path: spec}}   # a Zipf exponent needs Zipf
    assert load_config(cfg).axes[path] == values


# ---------------------------------------------------------------- Hugging Face configs on a model axis

@pytest.fixture
def hf_sweep(tmp_path):
    shutil.copytree(HF / "mixtral-8x22b-v0.1", tmp_path / "models" / "mixtral-8x22b-v0.1")
    shutil.copy(HF / "mixtral-8x7b-v0.1.json", tmp_path / "models" / "mixtral-8x7b-v0.1.json")
    cfg = {"name": "hf", "hardware": "cs2", "workload": {"seq_len": 4096},
           "axes": {"model": ["models/mixtral-8x7b-v0.1.json", "models/mixtral-8x22b-v0.1", "qwen3-30b-a3b"],
                    "workload.B": [1, 2]}}
    f = tmp_path / "hf.yaml"
    f.write_text(yaml.safe_dump(cfg))
    return f


def test_model_axis_takes_hf_configs_named_after_folder_or_file(hf_sweep, tmp_path):
    cfg = load_config(hf_sweep)
    assert cfg.axes["model"] == ["mixtral-8x7b-v0.1", "mixtral-8x22b-v0.1", "qwen3-30b-a3b"]
    assert cfg.presets["mixtral-8x22b-v0.1"]["hidden_size"] == 6144
    res = wsemoe.run_sweep(hf_sweep, out_root=tmp_path / "res")
    df = wsemoe.query(res.path, every_point=True, columns=["model", "tokens_per_s"]).rows
    assert list(df["model"].unique()) == cfg.axes["model"]
    big = df[df["model"] == "mixtral-8x22b-v0.1"]["tokens_per_s"].iloc[0]
    small = df[df["model"] == "mixtral-8x7b-v0.1"]["tokens_per_s"].iloc[0]
    assert big < small  # 3× the active parameters: slower, so the two imports really differ
    again = load_config(res.path / "config.yaml")  # the resolved config names the files again
    assert again.axes["model"] == cfg.axes["model"] and again.config_hash() == cfg.config_hash()


def test_two_files_with_one_name_are_refused(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d / "mixtral").mkdir(parents=True)
    shutil.copy(HF / "mixtral-8x7b-v0.1.json", tmp_path / "a" / "mixtral" / "config.json")
    shutil.copy(HF / "mixtral-8x22b-v0.1" / "config.json", tmp_path / "b" / "mixtral" / "config.json")
    cfg = {**BASE, "axes": {"model": ["a/mixtral", "b/mixtral/config.json"]}}
    with pytest.raises(ConfigError, match="named 'mixtral' after its folder or file, like another model"):
        load_config(cfg, base_dir=tmp_path)


def test_both_mixtral_sizes_import_under_their_own_names():
    small, big = wsemoe.load_model(HF / "mixtral-8x7b-v0.1.json"), wsemoe.load_model(HF / "mixtral-8x22b-v0.1")
    assert (small.name, big.name) == ("mixtral-8x7b-v0.1", "mixtral-8x22b-v0.1")
    counts = wsemoe.parameter_counts(big)
    assert counts["total"] == pytest.approx(141e9, rel=0.01) and counts["active"] == pytest.approx(39e9, rel=0.01)


def test_every_numeric_input_has_a_unit():
    # every number a sweep may vary is shown with its unit ('1' for a pure number): hardware.pipeline_wafers, the
    # energy and cost figures and the seeds had none
    from wsemoe.config.reference import input_unit
    from wsemoe.sweep.columns import SECTIONS

    bare = [f"{sec}.{f}" for sec, cls in SECTIONS.items() for f, info in cls.model_fields.items()
            if any(t in str(info.annotation) for t in ("int", "float"))
            and not any(t in str(info.annotation) for t in ("Literal", "tuple")) and not input_unit(f"{sec}.{f}")]
    assert bare == []
