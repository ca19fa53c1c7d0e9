"""One definition of the Pareto front: a front per group of the sweep's front groups (each hardware and model
by default, or `pareto.group_by`), exact ties in one row with a count, the same in pareto.csv, `show`, the
figure and the report, whatever the chunking."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from wsemoe.cli import app
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError
from wsemoe.report.figures import fig_pareto
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.pareto import nondominated
from wsemoe.sweep.run import run_sweep

CFG = {"name": "two", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
       "axes": {"hardware": ["cs2", "cs3"], "workload.B": [1, 2, 3, 4], "workload.G": [1, 2, 4, 8, 16],
                "workload.attn_kernel": ["materialized", "flash"]},
       "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}}


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    return run_sweep(CFG, out_root=tmp_path_factory.mktemp("r"))


def _brute(points: pd.DataFrame, groups) -> dict:
    """{(group values..., objectives...): number of front points} from every point, group by group."""
    out: dict = {}
    feas = points[points["feasible"]]
    for key, sub in (feas.groupby(groups) if groups else [((), feas)]):
        key = key if isinstance(key, tuple) else (key,)
        pts = sub[["tokens_per_s", "mem_peak_node_bytes"]].to_numpy() * [-1, 1]
        for _, r in sub[nondominated(pts)].iterrows():
            k = (*key, r["tokens_per_s"], r["mem_peak_node_bytes"])
            out[k] = out.get(k, 0) + 1
    return out


def _rows(front: pd.DataFrame, groups) -> dict:
    return {(*(r[g] for g in groups), r["tokens_per_s"], r["mem_peak_node_bytes"]): r["ties"] for _, r in front.iterrows()}


def test_a_front_per_hardware_with_exact_ties_counted(two):
    points = pd.read_parquet(two.path / "points.parquet")
    front = pd.read_csv(two.path / "pareto.csv", index_col=0)
    assert two.manifest["pareto_groups"] == ["hardware"] and two.manifest["pareto_fronts"] == 2
    assert _rows(front, ["hardware"]) == _brute(points, ["hardware"])
    assert two.manifest["pareto_points"] == front["ties"].sum() > len(front) == two.manifest["pareto"]  # flash ties


def test_chunking_does_not_change_the_fronts(two, tmp_path):
    again = run_sweep(CFG, out_dir=tmp_path / "again", chunk_size=7)
    pd.testing.assert_frame_equal(pd.read_csv(again.path / "pareto.csv", index_col=0),
                                  pd.read_csv(two.path / "pareto.csv", index_col=0))


def test_show_and_the_figure_use_the_same_fronts(two):
    out = CliRunner().invoke(app, ["show", str(two.path), "--format", "csv"])
    assert out.exit_code == 0, out.output
    shown = pd.read_csv(pd.io.common.StringIO(out.output), index_col=0)
    front = pd.read_csv(two.path / "pareto.csv", index_col=0)
    assert shown.index.tolist() == front.index.tolist() and shown["ties"].tolist() == front["ties"].tolist()
    fig = fig_pareto.pareto(ResultsView.load(two.path))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    for hw, sub in front.groupby("hardware"):
        n = f"{len(sub)} row{'s' if len(sub) > 1 else ''} for {sub['ties'].sum()} points"
        assert any(lab.startswith(f"Pareto front of {hw} ({n}") for lab in labels), labels


def test_group_by_replaces_the_default(tmp_path):
    one = run_sweep({**CFG, "pareto": {"group_by": []}}, out_dir=tmp_path / "one")
    points = pd.read_parquet(one.path / "points.parquet")
    assert one.manifest["pareto_fronts"] == 1
    assert _rows(one.pareto, []) == _brute(points, [])
    per = run_sweep({**CFG, "pareto": {"group_by": ["workload.attn_kernel", "hardware"]}}, out_dir=tmp_path / "per")
    assert per.manifest["pareto_fronts"] == 4
    assert _rows(per.pareto, ["workload.attn_kernel", "hardware"]) == \
        _brute(points, ["workload.attn_kernel", "hardware"])


def test_group_by_names_swept_axes():
    with pytest.raises(ConfigError) as err:
        load_config({**CFG, "pareto": {"group_by": ["workload.atn_kernel"]}})
    assert "[pareto -> group_by -> workload.atn_kernel]" in err.value.line() and "workload.attn_kernel" in err.value.line()


def test_axes_the_comparison_tunes_over_share_a_front(tmp_path):
    """A hardware field the comparison tunes over (a choice of one system, as a pipeline's wafer count is) is no
    front group; hardware itself still is: 2 fronts, one per hardware, each the brute-force front of its points.
    Without the comparison the field is a hardware axis like any other: 2 × 2 = 4 fronts."""
    base = {**CFG, "axes": {"hardware": ["cs2", "cs3"], "workload.B": [1, 2, 3, 4], "workload.G": [1, 4, 16],
                            "hardware.matmul_efficiency": [0.4, 0.5]}}
    over = ["workload.B", "workload.G", "hardware.matmul_efficiency"]
    tuned = run_sweep({**base, "compare": {"name": "g1", "baseline": {"workload.G": 1}, "over": over}},
                      out_dir=tmp_path / "tuned")
    assert tuned.config.front_groups() == ["hardware"] and tuned.manifest["pareto_fronts"] == 2
    points = pd.read_parquet(tuned.path / "points.parquet")
    assert _rows(tuned.pareto, ["hardware"]) == _brute(points, ["hardware"])
    assert load_config(base).front_groups() == ["hardware", "hardware.matmul_efficiency"]
    assert run_sweep(base, out_dir=tmp_path / "plain").manifest["pareto_fronts"] == 4


def test_scenario_axes_get_a_front_each(tmp_path):
    """A design at context 2K is not better than one at 8K: the context it serves is no choice. Swept, seq_len
    is a front group by default (4 fronts: 2 hardware × 2 contexts), each the brute-force front of its points;
    pooled, the short context's points would dominate every long-context design. The batch stays a choice."""
    cfg = {**CFG, "axes": {"hardware": ["cs2", "cs3"], "workload.seq_len": [2048, 8192], "workload.B": [1, 2, 4],
                           "workload.G": [1, 4, 16]}}
    run = run_sweep(cfg, out_dir=tmp_path / "ctx")
    assert run.config.front_groups() == ["hardware", "workload.seq_len"] and run.manifest["pareto_fronts"] == 4
    points = pd.read_parquet(run.path / "points.parquet")
    assert _rows(run.pareto, ["hardware", "workload.seq_len"]) == _brute(points, ["hardware", "workload.seq_len"])
    fig = fig_pareto.pareto(ResultsView.load(run.path))   # a panel per context, on one scale, each with its fronts
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["S = 2,048", "S = 8,192"]
    assert panels[0].get_ylim() == panels[1].get_ylim() and panels[0].get_xlim() == panels[1].get_xlim()
    for ax, (_, sub) in zip(panels, run.pareto.groupby("workload.seq_len")):
        rings = {round(float(x), 6) for line in ax.get_lines() if line.get_marker() == "o" for x in line.get_xdata()}
        assert rings == {round(float(x), 6) for x in sub["tokens_per_s"]}, ax.get_title()
    skew = load_config({**CFG, "balance": {"distribution": "zipf"}, "axes": {"balance.zipf_s": [0.0, 0.4], "balance.balancer": ["none", "replicate"],
                                        "workload.B": [1, 2]}})
    assert skew.front_groups() == ["balance.zipf_s"]
    tuned = load_config({**cfg, "compare": {"name": "g1", "baseline": {"workload.G": 1},
                                            "over": ["workload.B", "workload.G", "workload.seq_len"]}})
    assert tuned.front_groups() == ["hardware"]
