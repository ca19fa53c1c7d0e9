"""`wsemoe compare` (checked against a pandas reference) and `wsemoe report` (a self-contained HTML page that
parses, with every figure the results support inline as SVG and every table present)."""

from __future__ import annotations

import io
import re
import shutil
from html.parser import HTMLParser

import pandas as pd
import pytest
import yaml
from matplotlib import image

import wsemoe
from wsemoe.cli import app
from wsemoe.report.figures import plots
from wsemoe.sweep.run import run_sweep

from clicheck import one_line_error

# the scenario these tests were built on: every head's scores held, the expert width held (768 in every row)
BTA = {"hardware": "cs2", "model": "qwen3-30b-a3b",
       "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "materialized"},
       "sparsity": {"vary": "num_experts_per_tok", "values": [8, 2], "hold": "width"},
       "axes": {"workload.B": [1, 2], "workload.G": [1, 2, 4, 8, 14]},
       "objectives": {"mfu": "max", "mem_peak_node_bytes": "min"},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    a = run_sweep({**BTA, "name": "on_cs2"}, out_root=root, chunk_size=7).path
    b = run_sweep({**BTA, "name": "on_cs3", "hardware": "cs3"}, out_root=root).path
    return a, b


def _best(path, metric):
    pts = pd.read_parquet(path / "points.parquet")
    feas = pts[pts["feasible"]].reset_index()
    return feas.loc[feas.groupby("model.num_experts_per_tok")[metric].idxmax()].set_index("model.num_experts_per_tok")


def test_compare_matches_a_pandas_reference(runs):
    a, b = runs
    cmp = wsemoe.compare([a, b])
    assert cmp.metric == "mfu" and cmp.group == ["model.num_experts_per_tok", "model.moe_intermediate_size"]
    ra, rb = _best(a, "mfu"), _best(b, "mfu")
    t = cmp.table.set_index("model.num_experts_per_tok")
    for k in (8, 2):
        assert t.loc[k, "on_cs2:point"] == ra.loc[k, "point"] and t.loc[k, "on_cs2:mfu"] == ra.loc[k, "mfu"]
        assert t.loc[k, "on_cs3:mfu"] == rb.loc[k, "mfu"] and t.loc[k, "on_cs3:bound"] == rb.loc[k, "bound"]
        assert t.loc[k, "on_cs3/on_cs2:mem_peak_node_bytes"] == pytest.approx(
            rb.loc[k, "mem_peak_node_bytes"] / ra.loc[k, "mem_peak_node_bytes"])
    cmp = wsemoe.compare([a, b], metric="step_time_s:min")
    assert cmp.sense == "min"


def test_compare_cli_table_formats_and_plot(runs, runner, tmp_path):
    a, b = runs
    r = runner.invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and max(len(x) for x in r.output.splitlines()) <= 100, r.output
    flat = " ".join(r.output.split())
    assert "every row: model.moe_intermediate_size = 768" in flat and "on_cs3/" in flat
    r = runner.invoke(app, ["compare", str(a), str(b), "-F", "csv", "--plot", str(tmp_path / "c.png")])
    assert r.exit_code == 0
    df = pd.read_csv(io.StringIO(r.stdout))
    assert len(df) == 2 and "on_cs2:bound" in df
    h, w = image.imread(tmp_path / "c.png").shape[:2]
    assert w == 1400 and h >= 900
    assert runner.invoke(app, ["compare", str(a), str(b), "--plot", str(tmp_path / "c.svg")]).exit_code == 0
    svg = (tmp_path / "c.svg").read_text()
    assert "on_cs3" in svg and "ratio to" in svg and "what binds" in svg and "×" in svg


def test_compare_screens_its_readings_one_at_a_time_when_the_factorial_is_too_large(runs, runner, monkeypatch):
    """The comparison stands and its range is over each reading moved alone, said so (as `wsemoe readings`);
    never an error (two folders with many readings, e.g. a BTA sweep beside cerebras_serving, have thousands of
    combinations). It said only 'not computed' before."""
    from wsemoe.analysis.uncertainty import readings

    monkeypatch.setattr(readings, "MAX_COMBINATIONS", 1)
    a, b = runs
    r = runner.invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    flat = " ".join(r.output.split())
    assert r.exit_code == 0 and "one reading at a time" in flat and "interactions unseen" in flat, r.output
    assert "exceed 1" in flat and "not computed" not in flat
    assert "on_cs3/" in flat   # the table itself


@pytest.mark.parametrize("args,needle", [(["only-one"], "two or more"), (["--metric", "mfuu"], "unknown metric column"),
                                         (["--metric", "mfu:best"], "Input should be 'min' or 'max' (got 'best')")])
def test_compare_refuses_in_one_line(runs, runner, args, needle):
    a, b = runs
    cmd = ["compare", str(a)] if args == ["only-one"] else ["compare", str(a), str(b), *args]
    r = runner.invoke(app, cmd)
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and needle in r.output, r.output


def test_compare_plot_never_replaces_a_users_file(runs, runner, tmp_path):
    mine = tmp_path / "figure.png"
    mine.write_bytes(b"my figure")
    r = runner.invoke(app, ["compare", *map(str, runs), "--plot", str(mine)])
    assert r.exit_code != 0 and "wsemoe did not write it" in r.output and mine.read_bytes() == b"my figure"


def test_a_file_made_from_other_sources_is_replaced_only_with_force(runs, runner, tmp_path):
    """A report of other results, or a comparison plot of other runs, replaces the file only with --force (an
    export of another point and a calibration of another preset already asked for it): the same command made
    it, but from something else. The same sources rewrite it freely."""
    a, b = map(str, runs)
    page, fig = tmp_path / "r.html", tmp_path / "c.png"
    assert runner.invoke(app, ["report", a, "-o", str(page)]).exit_code == 0
    before = page.read_bytes()
    r = runner.invoke(app, ["report", b, "-o", str(page)])
    assert r.exit_code != 0 and "pass --force to replace it with one made from" in r.output, r.output
    assert page.read_bytes() == before
    assert runner.invoke(app, ["report", a, "-o", str(page)]).exit_code == 0
    assert runner.invoke(app, ["report", b, "-o", str(page), "--force"]).exit_code == 0
    assert runner.invoke(app, ["compare", a, b, "--plot", str(fig)]).exit_code == 0
    r = runner.invoke(app, ["compare", b, a, "--plot", str(fig)])
    assert r.exit_code != 0 and "--force" in r.output, r.output


# ---------------------------------------------------------------- the HTML report

class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.tags, self.stack, self.svg_in, self.external = [], [], [], {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "svg" and self.stack:
            self.svg_in[self.stack[-1]] = self.svg_in.get(self.stack[-1], 0) + 1
        if tag == "figure":
            self.stack.append(a.get("id"))
        if tag == "img" and self.stack:  # a figure embedded as PNG (a large one) counts as its image too
            self.svg_in[self.stack[-1]] = self.svg_in.get(self.stack[-1], 0) + 1
        for k in ("src", "href"):
            if k in a and not str(a[k]).startswith(("#", "data:image/png;base64,")):
                self.external.append(a[k])

    def handle_endtag(self, tag):
        if tag == "figure":
            self.stack.pop()


def test_report_is_one_self_contained_page_with_every_figure_and_table(runs, runner):
    a, _ = runs
    r = runner.invoke(app, ["report", str(a)])
    assert r.exit_code == 0, r.output
    html = (a / "report.html").read_text()
    page = _Page()
    page.feed(html)
    page.close()
    stems = [s for s, fig in plots.figures(a) if fig is not None]
    assert stems and set(page.svg_in) == {f"fig-{s}" for s in stems}
    assert all(n == 1 for n in page.svg_in.values())
    for table in ("summary", "binds", "pareto", "comparison", "columns"):
        assert table in page.ids, table
    for block in ("config", "manifest"):
        assert block in page.ids
    assert not page.external  # nothing to fetch: the page travels as one file
    figure_ids = [i for i in page.ids if re.match(r"f\d+-", i)]
    assert len(figure_ids) == len(set(figure_ids))  # prefixed: figures on one page never share an id
    assert "<script" not in html.lower()
    front = pd.read_csv(a / "pareto.csv", index_col=0)
    for point in front.index:
        assert f'<td class="n">{point}</td>' in html


def test_report_refuses_to_overwrite_a_users_file(runs, runner, tmp_path):
    mine = tmp_path / "index.html"
    mine.write_text("<p>mine</p>")
    r = runner.invoke(app, ["report", str(runs[0]), "-o", str(mine)])
    assert r.exit_code != 0 and "wsemoe did not write it" in r.output and mine.read_text() == "<p>mine</p>"
    assert runner.invoke(app, ["report", str(runs[0]), "-o", str(tmp_path / "r.html")]).exit_code == 0
    assert runner.invoke(app, ["report", str(runs[0]), "-o", str(tmp_path / "r.html")]).exit_code == 0  # ours


def test_compare_and_show_say_what_a_gpu_baseline_rests_on(runs, runner, tmp_path):
    """One line per GPU system: the node-level calibration it is costed with, and the fitted stack (backend,
    stacks.yaml values with their spread) that checks it; none for wafers."""
    from wsemoe.validate.silicon import checks
    from wsemoe.validate.silicon.stacks import load

    gpu = run_sweep({**BTA, "name": "on_nvl72", "hardware": "nvl72"}, out_root=tmp_path).path
    a, _ = runs
    entry = load()[1]["backends"][checks.BACKEND]
    want = f"eta_mm {entry['eta_mm']['value']:.2f} ± {entry['eta_mm']['spread']:.2f}"
    for args in (["compare", str(a), str(gpu)], ["show", str(gpu)]):
        r = runner.invoke(app, args, env={"COLUMNS": "300"})
        flat = " ".join(r.output.split())
        assert r.exit_code == 0 and flat.count("GPU baseline nvl72:") == 1, r.output
        assert "matmul_efficiency 0.4" in flat and f"the fitted stack: {checks.BACKEND}" in flat and want in flat
    r = runner.invoke(app, ["compare", str(a), str(gpu), "-F", "csv"])
    assert "GPU baseline" not in r.stdout and "GPU baseline nvl72" in r.stderr  # CSV on stdout stays parseable
    r = runner.invoke(app, ["compare", *map(str, runs)])
    assert "GPU baseline" not in r.output  # two wafers: nothing to say
    page = tmp_path / "gpu.html"   # the report says it on the page too, under the comparison
    assert runner.invoke(app, ["report", str(gpu), "-o", str(page)]).exit_code == 0
    assert page.read_text().count("GPU baseline nvl72:") == 1


# DeepSeek-V3 at 32K on 48 CS-3 wafers against NVL72 at TP 72: B 1 and B 16 tie on tokens/s per user (B 64 did
# too until December 2026's whole-tile lattice, where B 64's caches need a denser layout than B 1's: 187.0 against
# 189.8 tokens/s; B 1, 4 and 16 still take one layout)
TIE = {"name": "tie", "hardware": {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": 48},
       "model": "deepseek-v3",
       "workload": {"mode": "decode", "seq_len": 32768, "prompt_len": 1024, "attn_weight_format": "fp8",
                    "expert_weight_format": "fp8"},
       "zip": [{"hardware": ["cs3", "nvl72"], "hardware.weight_source": ["sram", "resident"],
                "hardware.pipeline_wafers": [48, None], "mapping.tp": [None, 72]}],
       "axes": {"workload.B": [1, 16]},
       "objectives": {"tokens_per_s_per_user": "max", "ttft_s": "min"},   # B 16 off the front
       "compare": {"name": "nvl72", "metric": "tokens_per_s_per_user", "over": ["workload.B"],
                   "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "cs3"}}}


def test_the_sweeps_comparison_follows_the_tie_rule_whole_or_in_chunks(tmp_path):
    """DeepSeek-V3 at 32K on 48 CS-3 wafers: B 1 and B 16 reach the same tokens/s per user (the pipeline keeps 48
    sequences in flight without slowing any) at 1,662 and 27 J/token. The sweep's per-chunk reduction kept only the
    first of the tied rows (B 16, off the Pareto front here, was not kept otherwise), so comparison.csv quoted B 1
    while `best_rows`' rule picks B 16, and the same sweep cut into chunks of one point quoted B 16."""
    picked = []
    for chunk in (None, 1):
        path = run_sweep({**TIE, "name": f"tie{chunk}"}, out_root=tmp_path, chunk_size=chunk).path
        table = pd.read_csv(path / "comparison.csv")
        pts = pd.read_parquet(path / "points.parquet")
        wafer = pts[pts["hardware"] == "cs3"].set_index("workload.B")
        assert wafer.loc[1, "tokens_per_s_per_user"] == wafer.loc[16, "tokens_per_s_per_user"]   # the tie itself
        assert wafer.loc[16, "energy_per_token_j"] < wafer.loc[1, "energy_per_token_j"]
        picked.append(int(table["best_B"].iloc[0]))
    assert picked == [16, 16], picked


def test_sensitivity_quotes_the_point_comparison_csv_quotes(tmp_path):
    """Sensitivity's per-sample best took the first of tied points: at the nominal values it quoted B 1 and an
    energy ratio of 11 where comparison.csv quoted B 64 and 0.18 (B 16 since the whole-tile lattice; the same rule,
    `best_rows`', everywhere)."""
    from wsemoe.analysis.uncertainty import unknowns
    from wsemoe.analysis.uncertainty.sampled import Sampled

    table = pd.read_csv(run_sweep(TIE, out_root=tmp_path).path / "comparison.csv")
    us = unknowns.select(unknowns.load("cs3"), ["energy_flop_cs3"])
    got = Sampled(TIE, us).evaluate([[u.nominal for u in us]])
    assert got["best_B"][0, 0] == table["best_B"].iloc[0] == 16
    assert got["energy_vs_nvl72"][0, 0] == pytest.approx(table["energy_vs_nvl72"].iloc[0], rel=1e-9)


def test_figures_quote_the_best_point_the_comparison_quotes(tmp_path, monkeypatch):
    """The serving heatmap is drawn 'at each model's best per-user point'; it took the first of the tied points
    (B 1) where comparison.csv quotes B 16. Roofline, Pareto, streaming, versus and BTA figures pick through
    `best_rows` alike."""
    from wsemoe.report.figures import fig_serving
    from wsemoe.report.figures.view import ResultsView

    path = run_sweep({**TIE, "objectives": {"ttft_s": "min", "tokens_per_s_per_user": "max"}}, out_root=tmp_path).path
    shared = ResultsView.load(path, columns=())   # as `plot` loads a family's view: its own columns on the shared
    view = ResultsView.load(path, fig_serving.COLUMNS, base=shared.points, like=shared)
    drawn = []
    monkeypatch.setattr(fig_serving, "_placed", lambda v, row, strategy: drawn.append(row["workload.B"]))
    wafer = view.feasible[view.feasible["hardware"] == "cs3"].sort_values("workload.B")
    list(fig_serving.heatmaps(view, wafer))
    assert set(drawn) == {16}, drawn


SMALL = {"name": "small", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
         "axes": {"workload.B": [1, 2], "workload.G": [1, 2]}, "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


@pytest.mark.parametrize("compare,needle", [
    ({"metric": "step_time_s"}, "'step_time_s' is better smaller (s)"),           # picked the slowest as best
    ({"metric": "mem_peak_node_bytes"}, "better smaller (bytes)"),
    ({"also": ["tokens_per_s"]}, "named twice"),                                   # was an internal error
    ({"also": ["mfu"]}, "mfu is reported at the compared points already"),         # was an internal error
])
def test_a_comparison_that_cannot_mean_what_it_says_is_refused(compare, needle):
    from wsemoe.errors import ConfigError
    from wsemoe.sweep.outputs import check_columns

    cfg = wsemoe.load_config({**SMALL, "compare": {**SMALL["compare"], **compare}})
    with pytest.raises(ConfigError, match=re.escape(needle)):
        check_columns(cfg)


def test_a_comparison_by_mfu_runs_and_compare_ranks_a_time_smallest_first(tmp_path, runner):
    """`compare.metric: mfu` was an internal error (mfu twice among the kept columns); `wsemoe compare -m
    step_time_s` ranked by the largest time unless told ':min'."""
    path = run_sweep({**SMALL, "compare": {**SMALL["compare"], "metric": "mfu"}}, out_root=tmp_path).path
    table = pd.read_csv(path / "comparison.csv")
    pts = pd.read_parquet(path / "points.parquet")
    assert table["best_mfu"].iloc[0] == pts["mfu"].max()
    again = shutil.copytree(path, tmp_path / "again")
    r = runner.invoke(app, ["compare", str(path), str(again), "-m", "step_time_s"])
    assert r.exit_code == 0 and "by step_time_s (min)" in r.output, r.output
    r = runner.invoke(app, ["compare", str(path), str(path) + "/"])   # one folder twice, however spelt
    assert r.exit_code == 2 and r.output.strip() == f"error: [{path}] is named twice: compare needs two or more " \
        "different results folders", r.output


def test_folders_that_share_no_group_are_one_line(tmp_path, runner, monkeypatch):
    # each folder swept over values the other does not hold: nothing to put side by side, said in one line (with
    # the readings' robustness too, which had failed on the empty table)
    monkeypatch.chdir(tmp_path)
    for name, values in (("x1", [0.5, 0.6]), ("x2", [0.7, 0.8])):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": name, "hardware": "cs2", "model": "qwen3-30b-a3b", "objectives": {"tokens_per_s": "max"},
            "axes": {"hardware.matmul_efficiency": values}}))
        assert runner.invoke(app, ["sweep", f"{name}.yaml", "-q"]).exit_code == 0
    for extra in ([], ["--no-readings"]):
        one_line_error(runner.invoke(app, ["compare", "results/x1", "results/x2", *extra]), "share no group")
