"""Data safety, the input cases of the data-safety review (issue 8; numbers in the test names are its cases):
numbers out of range, API ranges, hostile files, every balancer with every per-point field and the size
estimate. Each is refused in one line or evaluated to finite numbers, never a crash."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

import wsemoe
import wsemoe.sweep.run
from wsemoe.cli import app
from wsemoe.errors import ConfigError
from clicheck import one_line_error
from test_data_safety import GOOD


# ---------------------------------------------------------------- 6, 7, 15: numbers

BAD_NUMBERS = {
    "6 G beyond float64": ({"axes": {"workload.G": [9007199254740993]}}, "axes -> workload.G -> 0"),
    "6 seq_len 2**63-1": ({"workload": {"mode": "train", "seq_len": 2**63 - 1}}, "workload -> seq_len"),
    "6 B and G 2**32": ({"workload": {"B": 2**32}, "axes": {"workload.G": [2**32]}}, "workload -> B"),
    "6 tokens product": ({"workload": {"seq_len": 2**24, "B": 2**24}, "axes": {"workload.G": [2**10]}}, "G·B·seq_len"),
    "7 seq_len true": ({"workload": {"seq_len": True}}, "workload -> seq_len"),
    "7 rows true": ({"hardware": {"preset": "cs2", "rows": True}}, "hardware -> rows"),
    "7 G true in axis": ({"axes": {"workload.G": [True, 2]}}, "axes -> workload.G -> 0"),
    "7 ftd booleans": ({"mapping": {"ftd": [True, 2]}}, "mapping -> ftd"),
    "15 seq_len 2**80": ({"workload": {"seq_len": 2**80}}, "workload -> seq_len"),
    "15 G axis 2**80": ({"axes": {"workload.G": [1, 2**80]}}, "axes -> workload.G -> 1"),
    "15 range to inf": ({"axes": {"workload.G": {"range": [1, float("inf")]}}}, "axes -> workload.G -> range"),
    "15 pow2 to 1e308": ({"axes": {"workload.G": {"pow2": [1, 1e308]}}}, "axes -> workload.G -> pow2"),
    "10 huge range": ({"axes": {"workload.G": {"range": [1, 100000000]}}}, "one axis takes at most"),
    "10 tiny step": ({"axes": {"workload.G": {"range": [1, 2, 1e-300]}}}, "one axis takes at most"),
    "15 nan hardware figure": ({"hardware": {"preset": "cs2", "io_in_bw_bytes_per_s": float("nan")}},
                               "hardware -> io_in_bw_bytes_per_s"),
    "15 infinite peak": ({"hardware": {"preset": "cs2", "node_peak_flops": float("inf")}}, "node_peak_flops"),
    # a wafer's node grid divides its PE fabric: these were internal errors (ZeroDivisionError, OverflowError)
    "15 half a row": ({"hardware": {"preset": "cs3", "rows": 0.5}}, "hardware -> rows"),
    "15 rows 1e308": ({"hardware": {"preset": "cs3", "rows": 1e308}}, "hardware -> rows"),
    "15 rows inf": ({"hardware": {"preset": "cs2", "cols": float("inf")}}, "hardware -> cols"),
}


@pytest.mark.parametrize("case", sorted(BAD_NUMBERS))
def test_6_7_10_15_numbers_out_of_range_are_one_line(case, tmp_path, runner):
    patch, needle = BAD_NUMBERS[case]
    cfg = {**GOOD, **patch}
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    for cmd in ("check", "sweep"):
        args = [cmd, str(f)] + (["--results", str(tmp_path / "res")] if cmd == "sweep" else [])
        one_line_error(runner.invoke(app, args), needle)
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


def test_15_nesting_900_deep_is_one_line(tmp_path, runner):
    f = tmp_path / "deep.yaml"
    f.write_text("name: deep\ndescription: " + "[" * 900 + "]" * 900 + "\n")
    one_line_error(runner.invoke(app, ["check", str(f)]), "deep.yaml")


@pytest.mark.parametrize("value", ["1e6", "lots", "-5", "0", "2.5"])
def test_15_max_points_env_is_parsed_or_refused(value, tmp_path, runner, monkeypatch):
    monkeypatch.setenv("WSEMOE_MAX_POINTS", value)
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    r = runner.invoke(app, ["sweep", str(f), "--results", str(tmp_path / "res"), "-q"])
    if value == "1e6":
        assert r.exit_code == 0, r.output
    else:
        one_line_error(r, "WSEMOE_MAX_POINTS")


def test_6_large_valid_values_evaluate_finite():
    cfg = {**GOOD, "workload": {"mode": "train", "seq_len": 2**20}, "axes": {"workload.G": [2**12]}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["tokens_per_microbatch"] == 2**32
    assert np.isfinite(row["tokens_per_s"]) and row["tokens_per_s"] > 0


# ---------------------------------------------------------------- 8: API ranges

@pytest.mark.parametrize("kwargs,needle", [
    (dict(start=-5), "start"), (dict(start=1, stop=1), "stop"), (dict(start=2), "start"),
    (dict(start=0, stop=3), "stop"), (dict(chunk_size=0), "chunk_size"), (dict(chunk_size=-1), "chunk_size"),
    (dict(start=0.5), "start"),
])
def test_8_evaluate_range_arguments(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        wsemoe.evaluate(GOOD, **kwargs)


def test_8_evaluate_slices_are_exact():
    full = wsemoe.evaluate(GOOD)
    assert len(full) == 2 and len(wsemoe.evaluate(GOOD, start=1)) == 1
    assert wsemoe.evaluate(GOOD, start=1).index.tolist() == [1]


# ---------------------------------------------------------------- 9, 11, 19: hostile files

def test_9_alias_bombs_are_refused_fast(tmp_path, runner):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev = chr(ord("a") + i - 1)
        lines.append(f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [{', '.join(['*' + prev] * 9)}]")
    for where in ("description", "compare"):
        body = "\n".join(["name: bomb", "hardware: cs2", "model: qwen3-30b-a3b", "x:"] + ["  " + ln for ln in lines])
        body += f"\n{where}: *j\n" if where == "description" else "\ncompare: {baseline: *j}\n"
        f = tmp_path / "bomb.yaml"
        f.write_text(body)
        t0 = time.perf_counter()
        r = runner.invoke(app, ["check", str(f)])
        assert time.perf_counter() - t0 < 5
        one_line_error(r, "aliases")
        assert len(r.output) < 400


def test_9_long_inputs_are_not_echoed(tmp_path, runner):
    f = tmp_path / "long.yaml"
    f.write_text(yaml.safe_dump({**GOOD, "workload": {"seq_len": "x" * 100000}}))
    r = runner.invoke(app, ["check", str(f)])
    one_line_error(r, "workload -> seq_len")
    assert len(r.output) < 500


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "huge"])
def test_11_hf_config_must_be_a_small_regular_file(kind, tmp_path, runner):
    if kind == "fifo":
        path = tmp_path / "config.json"
        os.mkfifo(path)
    elif kind == "dev_zero":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "config.json"
        path.write_text('{"pad": "' + "x" * (5 * 2**20) + '"}')
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump({**GOOD, "model": {"hf_config": str(path)}}))
    t0 = time.perf_counter()
    r = runner.invoke(app, ["check", str(f)])
    assert time.perf_counter() - t0 < 5
    one_line_error(r, str(path))


def test_11_config_itself_must_be_a_regular_file(tmp_path, runner):
    fifo = tmp_path / "cfg.yaml"
    os.mkfifo(fifo)
    one_line_error(runner.invoke(app, ["check", str(fifo)]), "not a regular file")


def test_19_control_characters_say_what_is_wrong(tmp_path, runner):
    f = tmp_path / "bel.yaml"
    f.write_text("name: a\x07b\n")
    r = runner.invoke(app, ["check", str(f)])
    one_line_error(r, "malformed YAML", "#x0007")
    assert r.output.count("malformed YAML") == 1


def test_19_load_model_from_a_model_folder(tmp_path):
    src = Path(__file__).parent / "data" / "hf" / "deepseek-v3.json"
    (tmp_path / "dsv3").mkdir()
    (tmp_path / "dsv3" / "config.json").write_text(src.read_text())
    m = wsemoe.load_model(tmp_path / "dsv3")
    assert m.num_experts == 256


def test_19_complex_traffic_is_refused():
    from wsemoe.cost.fabric.mesh import xy_link_loads

    with pytest.raises(ValueError, match="real"):
        xy_link_loads(2, 2, np.ones((4, 4)) * (1 + 1j))


def test_19_show_top_must_not_be_negative(tmp_path, runner):
    res = wsemoe.sweep.run.run_sweep(GOOD, out_dir=tmp_path / "out")
    r = runner.invoke(app, ["show", str(res.path), "--top", "-3"])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_19_overlong_output_name_is_one_line(tmp_path, runner):
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    one_line_error(runner.invoke(app, ["sweep", str(f), "-o", str(tmp_path / ("x" * 240))]), "at most")


# ---------------------------------------------------------------- 16: balancers × per-point fields

BALANCED = {"name": "bal", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096, "B": 1024}, "mapping": {"tp": 4, "strategy": "er"},
            "balance": {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 2}}
FIELDS = {"workload.B": [256, 1024], "workload.G": [1, 2], "workload.seq_len": [1024, 4096],
          "balance.churn": [0.25, 0.5], "balance.rebalance_interval": [5, 10],
          "balance.zipf_s": [0.2, 0.4], "balance.spare_slots": [1, 2], "balance.seed": [1, 2],
          "hardware.link_bw_bytes_per_s": [4.5e11, 9.0e11], "hardware.hop_latency_s": [1e-7, 2e-7]}


@pytest.mark.parametrize("balancer", ["none", "replicate", "non-invasive", "stop-the-world"])
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_16_every_balancer_takes_every_per_point_field(balancer, field):
    from wsemoe.config.applies import NEEDS
    from wsemoe.errors import ConfigError
    balance = {**BALANCED["balance"], "balancer": balancer}
    if balancer == "none":   # spare slots hold replicas only a balancer places (config/applies.py)
        balance.pop("spare_slots")
    cfg = {**BALANCED, "balance": balance, "axes": {field: FIELDS[field]}}
    needs = NEEDS.get(field)
    if needs is not None and not needs.where({p: np.array([balance.get(p.split(".")[1])], dtype=object)
                                               for p in needs.fields}).any():
        with pytest.raises(ConfigError, match=f"{field} is swept but can change no result"):
            wsemoe.evaluate(cfg)   # a field this balancer never reads: refused, not run point by point
        return
    df = wsemoe.evaluate(cfg)
    assert len(df) == 2 and np.all(np.isfinite(df["step_time_s"]))
    for i in range(2):  # each point equals the same point evaluated alone
        one = {**cfg, "axes": {field: [FIELDS[field][i]]}}
        assert wsemoe.evaluate(one)["step_time_s"].iloc[0] == pytest.approx(df["step_time_s"].iloc[i], rel=1e-12)


# ---------------------------------------------------------------- 18: size estimate

def test_18_check_estimates_narrow_outputs(tmp_path):
    cfg = {**GOOD, "axes": {"workload.B": list(range(1, 9)), "workload.G": list(range(1, 65))},
           "output": {"columns": ["mfu"]}}
    est = wsemoe.sweep.plan.check(cfg)["estimated_output_bytes"]
    res = wsemoe.sweep.run.run_sweep(cfg, out_dir=tmp_path / "out")
    actual = sum(p["bytes"] for p in res.manifest["parts"])
    assert 0.5 < est / actual < 2.0, (est, actual)


# ---------------------------------------------------------------- API whole numbers: one rule (arguments.whole)

WHOLE_ARGUMENTS = {   # every API argument that counts something, as its entry point takes it
    "run_sweep chunk_size": lambda v, tmp: wsemoe.run_sweep(GOOD, out_root=tmp, chunk_size=v),
    "run_sweep workers": lambda v, tmp: wsemoe.run_sweep(GOOD, out_root=tmp, workers=v),
    "evaluate start": lambda v, tmp: wsemoe.evaluate(GOOD, start=v),
    "evaluate chunk_size": lambda v, tmp: wsemoe.evaluate(GOOD, chunk_size=v),
    "evaluate limit": lambda v, tmp: wsemoe.evaluate(GOOD, start=1, limit=v),
    "explain point": lambda v, tmp: wsemoe.explain(GOOD, point=v),
    "check_invariants points": lambda v, tmp: wsemoe.check_invariants([GOOD], points=v, only=["g1_is_uniform_batching"]),
    "sensitivity seed": lambda v, tmp: wsemoe.sensitivity(GOOD, samples=8, seed=v, out_root=tmp),
    "sensitivity samples": lambda v, tmp: wsemoe.sensitivity(GOOD, samples=v, out_root=tmp),
}


@pytest.mark.parametrize("value", [2.0, True, "2"])
@pytest.mark.parametrize("entry", [*WHOLE_ARGUMENTS, "query limit", "calibrate seed"])
def test_a_count_is_a_whole_number_by_one_rule_at_every_entry_point(entry, value, tmp_path):
    """Five rules disagreed: run_sweep took workers=2.0 and failed on chunk_size=2.0 with a TypeError from range(),
    the rest refused 2.0 but took numpy's integers or not as each happened to test. Now a bool or any float is
    refused in one line (as the CLI refuses '2.0'), and nothing is written."""
    if entry == "query limit":
        folder = wsemoe.run_sweep(GOOD, out_root=tmp_path / "r").path
        call = lambda: wsemoe.query(folder, limit=value)   # noqa: E731
    elif entry == "calibrate seed":
        call = lambda: wsemoe.calibrate("cs2", samples=8, seed=value, out_dir=tmp_path / "c")   # noqa: E731
    else:
        call = lambda: WHOLE_ARGUMENTS[entry](value, tmp_path / "out")   # noqa: E731
    with pytest.raises(ConfigError, match="whole number"):
        call()
    assert not (tmp_path / "out").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize("entry", WHOLE_ARGUMENTS)
def test_numpy_integers_are_whole_numbers_at_every_entry_point(entry, tmp_path):
    """np.int64 (a value read from a DataFrame) is a count: run_sweep refused workers=np.int64(1), sensitivity
    stored seed=np.int64(1) into JSON and failed with a TypeError."""
    WHOLE_ARGUMENTS[entry](np.int64(1), tmp_path / "out")


# ---------------------------------------------------------------- API flags: real booleans (arguments.flag)

FLAGS = {   # every API flag, as its entry point takes it
    "run_sweep force": lambda v, tmp: wsemoe.run_sweep(GOOD, out_root=tmp, force=v),
    "run_sweep resume": lambda v, tmp: wsemoe.run_sweep(GOOD, out_root=tmp, resume=v),
    "check estimate": lambda v, tmp: wsemoe.check(GOOD, estimate=v),
    "robustness write": lambda v, tmp: wsemoe.robustness(GOOD, write=v, out_root=tmp),
    "sensitivity force": lambda v, tmp: wsemoe.sensitivity(GOOD, samples=8, force=v, out_root=tmp),
    "calibrate force": lambda v, tmp: wsemoe.calibrate("cs2", samples=8, force=v, out_dir=tmp),
}


@pytest.mark.parametrize("value", ["no", "false", 0, None])
@pytest.mark.parametrize("entry", [*FLAGS, "query every_point", "query feasible"])
def test_a_flag_is_a_real_boolean_at_every_entry_point(entry, value, tmp_path):
    """`query(folder, every_point="no")` showed every point and `run_sweep(force="no")` re-ran: a string was taken
    by its truth. Now anything but True or False is one line naming the flag, and nothing is written."""
    if entry.startswith("query"):
        folder = wsemoe.run_sweep(GOOD, out_root=tmp_path / "r").path
        name = entry.split()[1]
        call = lambda: wsemoe.query(folder, **{"every_point": True, name: value})   # noqa: E731
    else:
        name = entry.split()[1]
        call = lambda: FLAGS[entry](value, tmp_path / "out")   # noqa: E731
    with pytest.raises(ConfigError, match="must be True or False") as exc:
        call()
    assert exc.value.loc == (name,) and not (tmp_path / "out").exists()


def test_numpy_booleans_are_flags():
    assert wsemoe.check(GOOD, estimate=np.False_)["points"] == 2


# ---------------------------------------------------------------- API selections: [] is not the default

@pytest.mark.parametrize("entry,call", [
    ("columns", lambda folder, tmp: wsemoe.query(folder, columns=[])),
    ("only", lambda folder, tmp: wsemoe.plot(folder, only=[])),
    ("formats", lambda folder, tmp: wsemoe.plot(folder, formats=())),
    ("only", lambda folder, tmp: wsemoe.check_invariants([GOOD], points=4, only=[])),
    ("only", lambda folder, tmp: wsemoe.sensitivity(GOOD, samples=8, only=[], out_root=tmp)),
    ("only", lambda folder, tmp: wsemoe.robustness(GOOD, only=[])),
    ("only", lambda folder, tmp: wsemoe.calibrate("cs2", samples=8, only=[], out_dir=tmp)),
    ("readings", lambda folder, tmp: wsemoe.calibrate("cs2", samples=8, readings=[], out_dir=tmp)),
])
def test_an_empty_selection_is_refused_not_read_as_every_one(entry, call, tmp_path):
    """`query(columns=[])` showed the default columns, `plot(only=[])` and `plot(formats=[])` wrote every figure
    as PNG and SVG, `check_invariants(only=[])` ran every invariant...: [] asked for nothing. None is the default."""
    folder = wsemoe.run_sweep(GOOD, out_root=tmp_path / "r").path
    with pytest.raises(ConfigError, match="is empty") as exc:
        call(folder, tmp_path / "out")
    assert exc.value.loc == (entry,) and not (tmp_path / "out").exists() and not (folder / "plots").exists()


def test_none_is_the_default_selection(tmp_path):
    """calibrate(readings=None) failed with a TypeError inside the readings plan; robustness's default is None."""
    assert len(wsemoe.robustness(GOOD, only=None).runs) >= 1
    # every reading, as None means; one unknown (the argument is the contract, not the fit: 8 s where all took 18)
    assert len(wsemoe.calibrate("cs2", samples=8, readings=None, only=["matmul_efficiency"], out_dir=tmp_path / "c")) > 1
