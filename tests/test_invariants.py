"""`wsemoe invariants`: the registry on users' configs, a deliberately broken model, bounded grids,
CI output (exit codes, JUnit XML, JSON, quiet pipes) and the documented CI workflow."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.analysis.invariants import cases as cases_mod
from wsemoe.analysis.invariants.laws import REGISTRY, hardware_fields
from wsemoe.cli import app
from wsemoe.config.loader import load_config
from wsemoe.cost import stagecost
from wsemoe.sweep import space

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ci"


def _write(tmp_path, cfg, name="cfg.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg))
    return p


@pytest.fixture
def broken_io(monkeypatch):
    """A wafer whose I/O is wired backwards: streaming time grows with the I/O bandwidth (the formula
    sees 1.5e11²/bandwidth), equal to the real model at the CS-2's 150 GB/s and slower above it."""
    real = stagecost.io_time

    def backwards(hw, wl, part, *args, **kwargs):
        if hw.weight_source != "streamed":
            return real(hw, wl, part, *args, **kwargs)
        flipped = SimpleNamespace(**{**vars(hw), "io_in_bw_bytes_per_s": 1.5e11 ** 2 / hw.io_in_bw_bytes_per_s})
        return real(flipped, wl, part, *args, **kwargs)
    monkeypatch.setattr(stagecost, "io_time", backwards)


def test_broken_io_fails_its_invariant_naming_the_inputs_and_nothing_else(broken_io, small_config):
    report = wsemoe.check_invariants([small_config], points=64)
    status = {r.invariant.name: r.status for r in report.results}
    assert status.pop("more_bandwidth_is_never_slower") == "fail"
    assert set(status.values()) <= {"pass", "skip"}, status
    bad = next(r for r in report.results if r.status == "fail")
    worst = bad.outcome.worst
    assert worst.inputs["hardware.io_in_bw_bytes_per_s"] == "1.5e+11 → 3e+11"
    assert {"point", "workload.B", "workload.G", "model.num_experts"} <= set(worst.inputs)
    assert worst.quantity in ("step_time_s", "moe_layer_time_s", "dense_layer_time_s", "head_time_s")
    assert worst.lhs > worst.rhs and worst.ratio == pytest.approx(worst.lhs / worst.rhs)
    # the named point reproduces the violation with `wsemoe eval --point`
    row = wsemoe.evaluate(small_config, start=worst.inputs["point"], stop=worst.inputs["point"] + 1).iloc[0]
    assert row[worst.quantity] == pytest.approx(worst.rhs)
    assert "io_in_bw_bytes_per_s" in bad.message() and "ratio" in bad.message()


def test_cli_on_broken_model_exits_1_and_junit_lists_every_case(broken_io, runner, tmp_path, small_config):
    other = {**small_config, "name": "other", "sparsity": None, "compare": None, "axes": {"workload.B": [1, 2]}}
    paths = [_write(tmp_path, small_config, "a.yaml"), _write(tmp_path, other, "b.yaml")]
    report = tmp_path / "out" / "junit.xml"
    r = runner.invoke(app, ["invariants", *map(str, paths), "--junit", str(report)])
    assert r.exit_code == 1, r.output
    # in a pipe only the failures are printed, one line each, naming the changed input
    lines = r.output.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("FAIL more_bandwidth_is_never_slower [") for line in lines)
    assert all("hardware.io_in_bw_bytes_per_s=1.5e+11 → 3e+11" in line for line in lines)
    root = ET.parse(report).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(REGISTRY) * 2 and root.get("tests") == str(len(cases))
    assert {(c.get("classname"), c.get("name")) for c in cases} == {(s, n) for s in ("small", "other") for n in REGISTRY}
    failed = [c for c in cases if c.find("failure") is not None]
    assert root.get("failures") == "2" == str(len(failed))
    assert {c.get("name") for c in failed} == {"more_bandwidth_is_never_slower"}
    assert "io_in_bw_bytes_per_s" in failed[0].find("failure").get("message")
    assert int(root.get("skipped")) == len([c for c in cases if c.find("skipped") is not None])


def test_passing_configs_exit_0_quietly_in_a_pipe_with_a_table_on_request(runner, tmp_path, small_config):
    path = _write(tmp_path, small_config)
    r = runner.invoke(app, ["invariants", str(path)])
    assert r.exit_code == 0 and r.output == ""
    r = runner.invoke(app, ["invariants", str(path), "-v"])
    assert r.exit_code == 0 and "cost-model invariants" in r.output and "hold, 0 fail" in r.output
    r = runner.invoke(app, ["invariants", str(path), "--format", "json", "--only", "step_time_adds_up"])
    data = json.loads(r.output)
    assert r.exit_code == 0 and data["ok"] is True and data["counts"]["pass"] == 1
    assert data["results"][0]["invariant"] == "step_time_adds_up" and data["results"][0]["checked"] > 0
    assert {i["name"] for i in data["invariants"]} == set(REGISTRY)
    r = runner.invoke(app, ["invariants", "--list"])
    assert r.exit_code == 0 and all(name in r.output for name in REGISTRY)


def test_a_run_in_which_every_check_skips_checked_nothing_and_exits_1(runner, tmp_path, small_config):
    """A CI gate that compared nothing cannot fail: a training sweep asked only for a serving invariant."""
    r = runner.invoke(app, ["invariants", str(_write(tmp_path, small_config)), "--only", "serving_time_adds_up"])
    assert r.exit_code == 1 and r.output.strip().splitlines()[-1].startswith("error: no invariant applies")


def test_json_of_a_failure_is_valid_and_complete(broken_io, runner, tmp_path, small_config):
    r = runner.invoke(app, ["invariants", str(_write(tmp_path, small_config)), "--format", "json"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    bad = [x for x in data["results"] if x["status"] == "fail"]
    assert data["ok"] is False and len(bad) == 1
    worst = bad[0]["worst"]
    assert {"quantity", "lhs", "rhs", "ratio", "inputs"} <= set(worst) and worst["ratio"] > 1


@pytest.mark.parametrize("args, needle", [
    (["missing.yaml"], "not found"),
    (["{cfg}", "--only", "no_such_invariant"], "unknown invariant"),
    (["{cfg}", "--junit", "{dir}"], "is a folder"),
    (["{bad}"], "workload"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(runner, tmp_path, small_config, args, needle):
    cfg = _write(tmp_path, small_config)
    bad = _write(tmp_path, {**small_config, "workload": {"G": 2.5}}, "bad.yaml")
    (tmp_path / "folder").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    args = [a.format(cfg=cfg, dir=tmp_path / "folder", bad=bad) for a in args]
    if "--junit" not in args:  # a report file must not appear when the input is bad
        args += ["--junit", str(tmp_path / "r.xml")]
    r = runner.invoke(app, ["invariants", *args])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("error:") and needle in r.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_unwritable_junit_target_is_refused_before_running(runner, tmp_path, small_config):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = runner.invoke(app, ["invariants", str(_write(tmp_path, small_config)), "--junit", str(blocker / "r.xml")])
    assert r.exit_code == 2 and "not a folder" in r.output


def test_a_check_that_raises_is_an_error_result_and_exit_1(runner, tmp_path, small_config, monkeypatch):
    def explode(chk, case):
        raise FloatingPointError("overflow in a formula")
    inv = REGISTRY["mfu_at_most_matmul_efficiency"]
    monkeypatch.setitem(REGISTRY, inv.name, dataclasses.replace(inv, check=explode))
    r = runner.invoke(app, ["invariants", str(_write(tmp_path, small_config)), "--junit", str(tmp_path / "r.xml")])
    assert r.exit_code == 1 and "ERROR mfu_at_most_matmul_efficiency [small]: FloatingPointError" in r.output
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert root.get("errors") == "1" and root.find(".//testcase/error") is not None


def test_user_config_with_hf_model_and_custom_hardware_holds():
    report = wsemoe.check_invariants([EXAMPLE / "configs" / "my-wafer-olmoe.yaml"])
    assert report.ok, [r.message() for r in report.results if r.status != "pass"]
    # a hardware written without energy figures gets no energy columns (NaN), so the energy laws skip
    node = [r for r in report.results if not r.invariant.name.startswith(("serving_", "streaming_"))
            and "energy" not in r.invariant.name]
    assert {r.status for r in node} == {"pass"}  # a mesh exercises every node-level invariant
    assert {r.status for r in report.results if r not in node} == {"skip"}  # no SRAM-serving, PE-fabric or energy
    cfg = load_config(EXAMPLE / "configs" / "my-wafer-olmoe.yaml")
    assert cfg.model.num_experts == 64 and cfg.hardware.name == "my-4x4-wafer"


def _workflow_in_docs() -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    return re.search(r"```yaml\n(# Check the cost model.*?)```", text, re.S).group(1)


def test_documented_workflow_is_the_example_and_runs(tmp_path):
    """docs/ci.md shows exactly the example workflow; its `wsemoe invariants` step passes on the example
    repository and writes the JUnit file the publishing steps read."""
    wf_path = EXAMPLE / ".github" / "workflows" / "wsemoe-invariants.yml"
    assert _workflow_in_docs() == wf_path.read_text()
    steps = yaml.safe_load(wf_path.read_text())["jobs"]["invariants"]["steps"]
    command = next(s["run"] for s in steps if "wsemoe invariants" in s.get("run", ""))
    report = next(s["with"]["report_paths"] for s in steps if "junit-report" in s.get("uses", ""))
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    cli = Path(sys.executable).with_name("wsemoe")
    done = subprocess.run(["bash", "-c", command.replace("wsemoe ", f"{cli} ", 1)], cwd=repo,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    root = ET.parse(repo / report).getroot()
    assert root.get("tests") == str(len(REGISTRY) * len(list((repo / "configs").glob("*.yaml"))))
    assert root.get("failures") == "0" and root.get("errors") == "0"


def test_docs_list_every_invariant():
    text = (ROOT / "docs" / "ci.md").read_text()
    assert not [n for n in REGISTRY if f"`{n}`" not in text]


@pytest.mark.parametrize("lengths, limit", [([2, 16, 64], 512), ([5, 16, 64], 512), ([10**6], 7), ([3] * 9, 100),
                                            ([1, 1], 1), ([4, 4], 16)])
def test_thinned_grid_is_bounded_and_keeps_every_factor(lengths, limit):
    keep = cases_mod.thinned_counts(lengths, limit)
    assert np.prod(keep) <= limit and all(1 <= k <= n for k, n in zip(keep, lengths))
    if np.prod(lengths) <= limit:
        assert keep == lengths


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(1, 60), st.integers(0, 3))
def test_bounded_grid_rows_are_the_sweeps_own_points(lengths, points, zipped):
    """Each grid row is the sweep's own point at the reported index, and a factor's ends are kept."""
    axes = {f"workload.{f}": list(range(1, n + 1)) for f, n in zip(("B", "G", "seq_len"), lengths)}
    zips = [{"model.num_experts": [128] * lengths[-1], "model.moe_intermediate_size": list(range(1, lengths[-1] + 1))}] \
        if zipped and len(lengths) == 4 else []
    cfg = load_config({"name": "g", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": axes, "zip": zips})
    grid, point = cases_mod.bounded_grid(cfg, points)
    assert grid.size() <= points and len(point) == grid.size() and len(set(point)) == len(point)
    full = space.build_frame(cfg)
    assert (space.build_frame(grid).to_numpy() == full.iloc[point].to_numpy()).all()
    for f, values in grid.axes.items():
        if len(values) > 1:
            assert values[0] == cfg.axes[f][0] and values[-1] == cfg.axes[f][-1]


def test_hardware_fields_are_discovered_from_the_spec():
    assert {"io_in_bw_bytes_per_s", "io_out_bw_bytes_per_s", "link_bw_bytes_per_s", "port_bw_bytes_per_s",
            "node_memory_bw_bytes_per_s"} == set(hardware_fields("_bw_bytes_per_s"))
    assert hardware_fields("_peak_flops") == ["node_peak_flops"]
    assert hardware_fields("_memory_bytes") == ["node_memory_bytes"]


def test_duplicate_config_names_are_labelled_by_path(tmp_path, small_config):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = [_write(tmp_path / d, small_config) for d in ("a", "b")]
    report = wsemoe.check_invariants(paths, points=8, only=["step_time_adds_up"])
    assert [r.config for r in report.results] == [str(p) for p in paths]


def test_a_negative_term_is_caught_and_named(monkeypatch, small_config):
    """A head whose FLOPs come out negative: the finiteness check names the column and the point."""
    from wsemoe.cost.node import compute

    monkeypatch.setattr(compute, "head_flops", lambda m, T: -2.0 * T * m.vocab_size * m.hidden_size)
    report = wsemoe.check_invariants([small_config], only=["terms_are_finite_and_nonnegative"])
    (result,) = report.results
    assert result.status == "fail"
    assert result.outcome.worst.quantity in ("head_compute_s", "head_time_s", "step_time_s", "moe_layer_time_s",
                                             "dense_layer_time_s")
    assert result.outcome.worst.lhs < 0 and "workload.G" in result.outcome.worst.inputs


def test_cli_default_points_is_the_library_default():
    import inspect

    from wsemoe.commands import study

    assert inspect.signature(study.invariants_cmd).parameters["points"].default.default == cases_mod.DEFAULT_POINTS


def test_an_undocumented_overlap_mode_fails_the_layer_invariant(monkeypatch, small_config):
    """A mode the invariant does not know (as a new one would be before docs/cost-model.md states it)."""
    from wsemoe.analysis.invariants import laws as invariants

    monkeypatch.delitem(invariants.CORE, "stage")
    cfg = {**small_config, "axes": {**small_config["axes"], "workload.overlap": ["layer", "stage"]}}
    (result,) = wsemoe.check_invariants([cfg], only=["layer_time_is_its_documented_combination"]).results
    assert result.status == "fail"
    assert result.outcome.worst.quantity == "workload.overlap" and result.outcome.worst.lhs == "stage"


def test_an_unset_optional_figure_stays_unset_when_others_double(monkeypatch, small_config):
    """A hardware figure that may be left unset (None) is doubled only where it is set."""
    from wsemoe.analysis.invariants import laws as invariants

    case = cases_mod.Case(load_config(small_config), points=4)
    given = np.array([None, 3.0e11, None, 1.0e11], dtype=object)
    monkeypatch.setattr(invariants, "hardware_fields", lambda suffix: ["io_in_bw_bytes_per_s"])
    monkeypatch.setattr(case, "inputs", lambda path: given)
    ((path, before, after, rows),) = invariants.scalings(case, "_bw_bytes_per_s")
    assert path == "hardware.io_in_bw_bytes_per_s" and rows.tolist() == [False, True, False, True]
    assert after.tolist() == [None, 6.0e11, None, 2.0e11] and np.isnan(before[0])


def test_junit_write_failure_is_one_error_and_leaves_no_temporary_file(monkeypatch, tmp_path, small_config):
    from wsemoe.errors import WsemoeError
    from wsemoe.report import junit

    report = wsemoe.check_invariants([small_config], points=4, only=["mfu_at_most_matmul_efficiency"])
    from wsemoe.store import writer

    monkeypatch.setattr(writer.os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(WsemoeError, match="no space left.*ENOSPC"):
        junit.write_junit(report, tmp_path / "r.xml")
    assert list(tmp_path.iterdir()) == []


def test_a_format_wider_than_it_claims_fails_the_format_invariant(monkeypatch, small_config):
    """fp8 read as 4 bytes per weight (wider than bf16): streaming the experts takes longer, which the format
    invariant must call a failure and name the format that changed."""
    from wsemoe.cost.node import formats

    monkeypatch.setitem(formats.BYTES, "fp8", 4.0)
    (result,) = wsemoe.check_invariants([small_config], only=["narrower_formats_are_never_slower"]).results
    assert result.status == "fail"
    worst = result.outcome.worst
    assert worst.lhs > worst.rhs and any("format" in k for k in worst.inputs)


def test_the_example_workflow_installs_wsemoe_only_from_where_it_is_told():
    """The install step fell back to a bare `pip install wsemoe`: whatever a package index serves under that name.
    With WSEMOE_SPEC unset it now stops with an instruction; set, it installs exactly that."""
    wf_path = EXAMPLE / ".github" / "workflows" / "wsemoe-invariants.yml"
    steps = yaml.safe_load(wf_path.read_text())["jobs"]["invariants"]["steps"]
    install = next(s["run"] for s in steps if s.get("name") == "Install wsemoe").replace("python -m pip", "echo pip")
    unset = subprocess.run(["bash", "-c", install], env={"PATH": os.environ["PATH"], "WSEMOE_SPEC": ""},
                           capture_output=True, text=True)
    assert unset.returncode == 1 and "::error::set the repository variable WSEMOE_SPEC" in unset.stdout
    assert "pip install" not in unset.stdout
    spec = "wsemoe @ git+https://example.org/fork@v1"
    given = subprocess.run(["bash", "-c", install], env={"PATH": os.environ["PATH"], "WSEMOE_SPEC": spec},
                           capture_output=True, text=True)
    assert given.returncode == 0 and given.stdout.strip() == f"pip install {spec}"


@pytest.mark.parametrize("kwargs,needle", [({"configs": []}, "empty list of configs"),
                                           ({"configs": ["sweeps/quickstart.yaml"], "points": 2.5}, "whole number")])
def test_the_api_refuses_no_configs_and_fractional_points(kwargs, needle, monkeypatch):
    """`check_invariants([])` ran every shipped config (550 checks); `points=2.5` was accepted."""
    import wsemoe
    from wsemoe.errors import ConfigError

    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError, match=needle):
        wsemoe.check_invariants(**kwargs)


def test_interleaving_never_shortens_a_wait_and_catches_a_ttft_of_one_step(monkeypatch):
    """Two micro-batches taking turns: TPOT and TTFT at least their serial values, on decode with a prompt and on
    prefill. A TTFT of one prefill step under microbatch (what the model gave before: half the schedule) fails it."""
    import wsemoe
    from wsemoe.cost import serving

    cfg = {"name": "mbw", "hardware": "nvl72", "model": "qwen3-30b-a3b", "mapping": {"tp": 4},
           "workload": {"mode": "decode", "seq_len": 4096},
           "zip": [{"workload.mode": ["decode", "prefill"], "workload.seq_len": [4096, 1024],
                    "workload.prompt_len": [1024, None]}],
           "axes": {"workload.B": [1, 8, 64], "workload.comm_overlap": ["none", "microbatch"]}}
    only = ["interleaving_never_shortens_a_tokens_wait"]
    (held,) = wsemoe.check_invariants([cfg], only=only).results
    assert held.status == "pass" and held.outcome.checked > 0
    real = serving.serving_columns

    def one_step(hw, m, wl, mp, bal, histogram, out):
        cols = real(hw, m, wl, mp, bal, histogram, out)
        if "ttft_s" in cols:
            cols["ttft_s"] = cols["ttft_s"] / serving.turns(getattr(wl, "comm_overlap", "none"))
        return cols

    monkeypatch.setattr(serving, "serving_columns", one_step)
    (broken,) = wsemoe.check_invariants([cfg], only=only).results
    assert broken.status == "fail" and broken.outcome.worst.quantity == "ttft_s"


def test_a_larger_top_k_is_never_faster_on_a_weight_streaming_decode():
    """Once a finding of more_work_is_never_faster: the router ran at the experts' few-rows efficiency eff·n/(n + 64)
    with n = T·k/E, so on a CS-2 decode of one token (n = k/128 for Llama-4-Maverick) top-2 made its MoE layer 1.37 µs
    shorter than top-1: the router's 2·H·E = 1.31 MFLOP at 7.48 PFLOP/s × 0.5·n/(n + 64) took 2.87 µs at n = 1/128 and
    half that at 2/128, while the experts' time grows by 2·3HF·E/(peak·eff)·Δn = 0.067 µs. The router is one GEMM
    over every token, its time k-free, so top-2 is now the 0.067 µs slower."""
    cfg = {"name": "topk", "hardware": "cs2", "model": "llama-4-maverick",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 1, "G": 1, "overlap": "none"},
           "axes": {"model.num_experts_per_tok": [1, 2], "workload.B": [1, 8]}}
    (held,) = wsemoe.check_invariants([cfg], only=["more_work_is_never_faster"]).results
    assert held.status == "pass" and held.outcome.checked > 0, held.message()
