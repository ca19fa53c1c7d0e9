"""One point without a sweep file: `wsemoe eval --hardware --model --set` (and `wsemoe.point_config`) builds the
mapping a sweep file would hold and goes through the same loader, so it gives what that file gives, with the
same one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import wsemoe
from wsemoe.analysis.explain.point import breakdown, frame
from wsemoe.cli import app

ROOT = Path(__file__).resolve().parents[1]
SETS = ["workload.B=2", "workload.G=8", "workload.seq_len=4096", "mapping.tp=4"]


def _terms(rows):
    """Every term but the inputs, as a frame (NaN equals NaN in `DataFrame.equals`)."""
    df = frame(rows)
    return df[df["group"] != "inputs"].reset_index(drop=True)


def test_flags_give_what_the_equivalent_sweep_file_gives(tmp_path):
    """The file a user would write by hand: the same sections, each set field in its section, no axes."""
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump({"name": "one", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
                                    "workload": {"B": 2, "G": 8, "seq_len": 4096}, "mapping": {"tp": 4}}))
    row_file, rows_file = breakdown(path, 0)
    row_flags, rows_flags = breakdown(None, 0, SETS, hardware="wsc-b200-8x8", model="deepseek-v3")
    assert _terms(rows_flags).equals(_terms(rows_file))
    outputs = [c for c in row_file.index if not c.startswith(("workload.", "mapping."))]
    assert row_flags[outputs].equals(row_file[outputs])
    shown = {n: v for g, n, v, _, _ in rows_flags if g == "inputs"}
    assert shown == {"hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload.B": 2, "workload.G": 8,
                     "workload.seq_len": 4096, "mapping.tp": 4}


def test_python_api_gives_the_one_row():
    cfg = wsemoe.point_config("cs2", "qwen3-30b-a3b", ["workload.B=2", "workload.G=4"])
    assert cfg == {"name": "point", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"B": 2, "G": 4}}
    df = wsemoe.evaluate(cfg)
    row, _ = wsemoe.explain(hardware="cs2", model="qwen3-30b-a3b", sets=["workload.B=2", "workload.G=4"])
    assert len(df) == 1 and df["step_time_s"].iloc[0] == pytest.approx(row["step_time_s"], rel=1e-15)


def test_files_for_hardware_and_model(tmp_path):
    """A YAML file of hardware fields ({preset, overrides}) and a Hugging Face config.json for the model."""
    hw = tmp_path / "faster.yaml"
    hw.write_text("preset: cs2\nio_in_bw_bytes_per_s: 2.4e+12\n")
    model = ROOT / "tests" / "data" / "hf" / "qwen3-30b-a3b.json"
    fast, _ = breakdown(None, 0, ["workload.B=2"], hardware=str(hw), model=str(model))
    base, _ = breakdown(None, 0, ["workload.B=2"], hardware="cs2", model=str(model))
    preset, _ = breakdown(None, 0, ["workload.B=2"], hardware="cs2", model="qwen3-30b-a3b")
    assert fast["step_time_s"] < base["step_time_s"]   # more weight-streaming bandwidth is never slower
    # the HF import and the preset describe one model: the same parameter counts, so the same FLOPs
    assert base["model_flops_per_step"] == pytest.approx(preset["model_flops_per_step"], rel=1e-12)


def test_a_section_set_by_name_replaces_the_flag():
    row, rows = breakdown(None, 0, ["model=deepseek-v3", "workload.mode=decode"], hardware="wsc-b200-8x8",
                          model="qwen3-30b-a3b")
    assert {n: v for g, n, v, _, _ in rows if g == "inputs"}["model"] == "deepseek-v3"
    assert "tpot_s" in row.index


@pytest.mark.parametrize("args,message", [
    (["eval", "--hardware", "cs2"], "[--model] a point without a sweep file needs --model too"),
    (["eval"], "[source] give a sweep file or results folder, or --hardware and --model"),
    # export traffic shares the point's resolution: its errors said '[eval]'
    (["export", "traffic"], "[source] give a sweep file or results folder, or --hardware and --model"),
    (["export", "traffic", "--model", "qwen3-30b-a3b"], "[--hardware] a point without a sweep file needs --hardware"),
    (["eval", "sweeps/quickstart.yaml", "--model", "deepseek-v3"], "use --set hardware=<preset> or --set model="),
    # the flag or --set that gave a value, as a sweep file's point names its --set ([workload -> B] before)
    (["eval", "--hardware", "cs9", "--model", "qwen3-30b-a3b"], "[--hardware] unknown hardware preset 'cs9'"),
    (["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "model=nope"],
     "[--set -> model] unknown model preset 'nope'"),
    (["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "workload.Bx=2"],
     "[--set -> workload.Bx] unknown field 'Bx' of workload; did you mean 'workload.B'?"),
    (["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "workload.B=0"],
     "[--set -> workload.B] Input should be greater than 0"),
    (["eval", "sweeps/quickstart.yaml", "--set", "workload.B=0"], "[--set -> workload.B] Input should be greater than 0"),
    (["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "mapping.tp=4"],
     "on a weight-streaming wafer"),
    # an override a sweep file's point breaks: named as the --set, not as an axis of the file ([axes -> mapping.tp])
    (["eval", "sweeps/quickstart.yaml", "--set", "mapping.tp=5"], "[--set -> mapping.tp] mapping.tp = 5 does not"),
    (["eval", "--hardware", "missing.yaml", "--model", "qwen3-30b-a3b"], "missing.yaml"),
    # a file of fields is a section, not an axis value: said so, not 'unknown hardware preset'
    (["eval", "sweeps/quickstart.yaml", "--set", "hardware=hw.yaml"],
     "a YAML file of hardware fields is the sweep file's hardware section (or --hardware without a sweep file)"),
])
def test_bad_input_is_one_line(runner, args, message):
    r = runner.invoke(app, args)
    assert r.exit_code != 0 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_cli_prints_the_breakdown_and_formats(runner):
    args = ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set", "workload.B=2"]
    r = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert r.exit_code == 0 and "✓" in r.output and "≠" not in r.output and "hardware preset name" in r.output
    r = runner.invoke(app, [*args, "--format", "csv"])
    assert r.exit_code == 0 and r.output.startswith("group,term,value,unit,meaning")


@pytest.mark.parametrize("cfg,needle", [
    ({"objectives": {"bound": "max"}}, "holds text"),                       # was a TypeError in pareto.py
    ({"axes": {"workload.G": [1, 2]}, "compare": {"metric": "bound"}}, "holds text"),   # a pandas TypeError
    ({"axes": {"workload.B": list(range(1, 101)), "workload.G": list(range(1, 101))}}, "exceed the limit"),
])
def test_evaluate_checks_what_a_sweep_checks(cfg, needle, monkeypatch):
    """`wsemoe.evaluate` ran a text objective or comparison metric into a raw TypeError and had no size limit (a
    1e10-point grid ran into a MemoryError). The kinds are checked where the columns are read (a check of every
    named column, as `sweep` runs, evaluates representative points: too dear for every evaluate call)."""
    import wsemoe
    from wsemoe.errors import ConfigError

    monkeypatch.setenv("WSEMOE_MAX_POINTS", "5000")
    with pytest.raises(ConfigError, match=needle):
        wsemoe.evaluate({"name": "e", "hardware": "cs2", "model": "qwen3-30b-a3b", **cfg})
    assert len(wsemoe.evaluate({"name": "e", "hardware": "cs2", "model": "qwen3-30b-a3b",
                                "axes": {"workload.B": [1, 2]}}, start=None, chunk_size=None)) == 2


@pytest.mark.parametrize("kwargs,needle", [({"workers": 0}, "--workers"), ({"workers": 2.5}, "--workers"),
                                           ({"workers": "2"}, "--workers"), ({"chunk_size": float("nan")}, "--chunk")])
def test_run_sweep_takes_workers_and_chunks_as_the_cli_does(tmp_path, kwargs, needle):
    """`run_sweep(workers=0)` ran and wrote results (the CLI takes 1 to 1,024); 2.5 and '2' failed inside
    multiprocessing, a NaN chunk size in int()."""
    from wsemoe.errors import ConfigError
    from wsemoe.sweep.run import run_sweep

    with pytest.raises(ConfigError) as exc:
        run_sweep({"name": "w", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                  out_root=tmp_path, **kwargs)
    assert exc.value.loc[0].startswith(needle) and not list(tmp_path.iterdir())


@pytest.mark.parametrize("point", ["3", 1.5, None, True])
def test_a_point_index_of_another_type_says_so(point):
    """`explain(cfg, "3")` said 'point 3 out of range: the sweep has 24 points (0..23)'."""
    import wsemoe
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError, match="a point index must be a whole number"):
        wsemoe.explain({"name": "p", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                       point)


@pytest.mark.parametrize("args,loc", [
    (("cs2", "qwen3-30b-a3b", ["workload.G=banana"]), ("workload", "G")),
    (("cs9", "qwen3-30b-a3b"), ("hardware",)),
    (("cs2", "qwen3-30b-a3b", ["mapping.tp=3"], "bad name!"), ("name",)),
])
def test_point_config_returns_a_validated_mapping_or_refuses(args, loc):
    """`point_config("cs2", model, ["workload.G=banana"])` returned {'workload': {'G': 'banana'}} and an unknown
    preset came back as a name: the error waited for whoever evaluated it."""
    from wsemoe.errors import WsemoeError

    with pytest.raises(WsemoeError) as exc:
        wsemoe.point_config(*args)
    assert exc.value.loc == loc


def test_eval_and_the_infeasible_reason_give_one_ratio():
    """A point over capacity: `eval`'s '× capacity' and `infeasible_reason` say the same number, both rounded
    away from the limit (174.19× read 174× in eval and 175× in the reason)."""
    import re

    from wsemoe.sweep.feasibility import shown_ratio

    assert shown_ratio(174.19) == "175" and shown_ratio(1.0004) == "1.01" and shown_ratio(0.7777) == "0.777"
    row, rows = breakdown(None, 0, ["workload.B=4096", "workload.mode=train", "workload.seq_len=8192"],
                          hardware="cs2", model="qwen3-30b-a3b")
    said = {n: t for _, n, _, _, t in rows}
    reason = re.search(r"needs ([\d.]+)×", row["infeasible_reason"]).group(1)
    assert f"({reason}× capacity)" in said["g_mem_moe"], (reason, said["g_mem_moe"])
