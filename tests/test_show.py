"""`wsemoe show`: fits the terminal, shows the Pareto front with point indices, answers questions (--where,
--sort, --limit, --columns) and formats for tools; filters are checked against pandas and a brute-force
evaluation of the same expression."""

from __future__ import annotations

import io
import json
import operator

import pandas as pd
import pytest
from hypothesis import given, strategies as st
from typer.testing import CliRunner

import wsemoe
from wsemoe.analysis.explain import query
from wsemoe.analysis.explain.where import Where
from wsemoe.cli import app
from wsemoe.errors import ConfigError
from wsemoe.store import store
from wsemoe.sweep.run import run_sweep

# every head's scores held and the expert width held: B >= 8 does not fit (`wide`), so tables mix feasible and
# infeasible rows
BTA = {"name": "bta", "hardware": "cs2", "model": "qwen3-30b-a3b",
       "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "materialized"},
       "sparsity": {"vary": "num_experts_per_tok", "values": [8, 4, 2, 1], "hold": "width"},
       "axes": {"workload.B": [1, 2, 3], "workload.G": {"range": [1, 16]}},
       "objectives": {"mfu": "max", "mem_peak_node_bytes": "min"},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
MESH = {"name": "mesh", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096, "G": 1},
        "axes": {"model": ["deepseek-v3", "qwen3-235b-a22b"], "workload.B": [256, 1024], "mapping.tp": [4, 8],
                 "mapping.strategy": ["block", "er"]},
        "objectives": {"per_device_moe_tokens_per_s": "max", "moe_comm_s": "min"}}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("show")
    return {c["name"]: run_sweep(c, out_root=root, chunk_size=50).path for c in (BTA, MESH)}


def _points(path):
    man = store.load_manifest(path)
    return store.read_points(path, man)


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("name", ["bta", "mesh"])
def test_show_fits_the_terminal_and_lists_the_front_with_indices(folders, runner, name, width):
    r = runner.invoke(app, ["show", str(folders[name])], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= width, r.output
    front = pd.read_csv(folders[name] / "pareto.csv", index_col=0)
    assert "Pareto front" in r.output and "top feasible points" not in r.output
    first_cells = {line.split()[0] for line in r.output.splitlines() if line.strip()[:1].isdigit()}
    from wsemoe.analysis.explain.query import every_front

    groups = store.load_manifest(folders[name])["pareto_groups"]
    shown = every_front(front, groups, 20) if groups else front.head(20)  # the best of every front in turn
    assert {str(i) for i in shown.index} <= first_cells  # every shown row starts with its point index
    assert "1 experts" not in r.output and " experts " not in r.output.replace("[experts]", "")  # units in headers
    assert "…" not in r.output


def test_default_limit_and_what_is_left_out_are_said(folders, runner):
    r = runner.invoke(app, ["show", str(folders["bta"]), "--all", "-n", "5"], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "5 of 192 rows (--limit 0 shows all)" in r.output


def test_where_sort_limit_columns_match_pandas(folders):
    pts = _points(folders["bta"])
    sel = wsemoe.query(folders["bta"], where="mfu > 0.2 and workload.G <= 12", sort=["-mfu", "workload.B"],
                       limit=7, columns=["workload.B", "workload.G", "mfu"], every_point=True)
    ref = pts[(pts["mfu"] > 0.2) & (pts["workload.G"] <= 12)]
    ref = ref.sort_values(["mfu", "workload.B"], ascending=[False, True], kind="stable")
    assert sel.matched == len(ref) and list(sel.rows.columns) == ["workload.B", "workload.G", "mfu"]
    pd.testing.assert_frame_equal(sel.rows, ref[["workload.B", "workload.G", "mfu"]].head(7))


def test_objective_sort_is_best_first_and_text_filters_work(folders):
    pts = _points(folders["mesh"])
    sel = wsemoe.query(folders["mesh"], where="mapping.strategy == 'er' and model in ['qwen3-235b-a22b']",
                       sort=["moe_comm_s"], every_point=True, columns=["moe_comm_s"])
    ref = pts[(pts["mapping.strategy"] == "er") & (pts["model"] == "qwen3-235b-a22b")].sort_values("moe_comm_s")
    assert list(sel.rows.index) == list(ref.index)
    best = wsemoe.query(folders["mesh"], sort=["per_device_moe_tokens_per_s"], every_point=True, limit=1)
    assert best.rows.index[0] == pts["per_device_moe_tokens_per_s"].idxmax()  # max objective: best first


def test_a_filter_reads_the_point_index_show_prints(folders):
    """`point` is the first column `show` prints: --where picks rows by it (front and every point alike)."""
    pts = _points(folders["bta"])
    picked = [int(pts.index[3]), int(pts.index[-1])]
    sel = wsemoe.query(folders["bta"], where=f"point in {picked} or point < 2", every_point=True, limit=0)
    assert sorted(sel.rows.index) == sorted({*picked, *pts.index[pts.index < 2]})
    front = pd.read_csv(folders["bta"] / "pareto.csv", index_col=0)
    sel = wsemoe.query(folders["bta"], where=f"point == {int(front.index[0])}")
    assert list(sel.rows.index) == [front.index[0]]


def test_point_is_a_column_to_name_and_to_sort_by(folders, runner):
    """--columns and --sort take `point` as --where does (it is the index, always shown first): sorted by it
    descending, the rows run from the last point; a markdown page with a limit says how many rows it shows."""
    pts = _points(folders["bta"])
    sel = wsemoe.query(folders["bta"], columns=["point", "mfu"], sort=["-point"], every_point=True, limit=3)
    assert list(sel.rows.columns) == ["mfu"] and list(sel.rows.index) == sorted(pts.index)[-1:-4:-1]
    r = runner.invoke(app, ["show", str(folders["bta"]), "-a", "-F", "markdown", "-n", "2"])
    assert r.exit_code == 0 and "; 2 of them shown (--limit 0 shows all)" in r.output.splitlines()[0], r.output


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown"])
def test_formats_for_tools(folders, runner, fmt):
    r = runner.invoke(app, ["show", str(folders["mesh"]), "-a", "-F", fmt, "-c", "mapping.tp,moe_comm_s,bound"])
    assert r.exit_code == 0, r.output
    pts = _points(folders["mesh"])
    if fmt == "csv":
        got = pd.read_csv(io.StringIO(r.output), index_col="point")
        assert len(got) == len(pts) and list(got.columns) == ["mapping.tp", "moe_comm_s", "bound"]
        assert (got["moe_comm_s"] - pts["moe_comm_s"]).abs().max() < 1e-15  # full precision, no units
    elif fmt == "json":
        rows = json.loads(r.output)
        assert len(rows) == len(pts) and set(rows[0]) == {"point", "mapping.tp", "moe_comm_s", "bound"}
    else:
        lines = r.output.strip().splitlines()
        assert lines[2].startswith("| point | mapping.tp [nodes] | moe_comm_s [µs] | bound |")
        assert len(lines) == 4 + len(pts)


def test_show_reads_only_the_columns_it_needs(folders, monkeypatch):
    asked = []
    real = store.iter_parts

    def spy(path, manifest, columns=None):
        asked.append(columns)
        return real(path, manifest, columns)

    monkeypatch.setattr(store, "iter_parts", spy)
    wsemoe.query(folders["bta"], where="mfu > 0.3", columns=["workload.G"], sort=["step_time_s"], every_point=True)
    assert asked == [["workload.G", "mfu", "step_time_s"]]


@pytest.mark.parametrize("where,needle", [
    ("mfuu > 0.3", "did you mean 'mfu'"),
    ("mapping.strategy == er", "quote it"),
    ("mfu >", "cannot parse"),
    ("mfu + 1", "not a condition"),
    ("mfu > 0.1,", "not a condition"),
    ("__import__('os').system('true')", "unsupported"),
    ("workload.G.real > 1", "unknown column"),
    ("not " * 60 + "mfu > 0", "nested too deeply"),
    ("(" * 995 + "mfu > 0" + ")" * 995, "cannot parse"),
    ("mfu > 'x'", "compares 'mfu' (number) with"),
    ("0/0 > mfu", "division by zero"),
    ("mfu / 0 > 1", "division by zero in 'mfu / 0'"),     # was accepted: every row's quotient infinite
    ("mfu / -0.0 > 1", "division by zero"),
    # a number where a condition goes: 'mfu' alone was refused, these were read as conditions (or failed in numpy)
    ("not mfu", "not takes a condition"),
    ("mfu and mfu > 0", "and/or join conditions"),
    ("mfu > 0.3 and 1", "and/or join conditions"),
    ("1 > 0", "compares no column"),
    ("'x' * 1000000000 == bound", "take numbers"),
    ("ttft_s < 0.1", "it needs workload.mode: prefill"),   # as --sort, objectives and compare --metric say it
])
def test_bad_filters_are_one_line(folders, runner, where, needle):
    r = runner.invoke(app, ["show", str(folders["mesh"]), "--all", "--where", where])
    text = r.output.strip()
    assert r.exit_code != 0 and len(text.splitlines()) == 1 and text.startswith("error: [--where]"), text
    assert needle in text, text


@pytest.mark.parametrize("args,needle", [(["--sort", "mfuu"], "did you mean 'mfu'"),
                                         (["--columns", "bond"], "did you mean 'bound'"),
                                         (["--format", "xml"], "not one of"),
                                         # were accepted: no column showed the default view, '--mfu' sorted by mfu
                                         (["--columns", ","], "no column named"),
                                         (["--sort", "--mfu"], "more than one sign"),
                                         (["--sort", "+-mfu"], "more than one sign"),
                                         (["--sort", "mfu", "--sort", "-mfu"], "sorts by 'mfu' twice")])
def test_bad_options_are_one_line(folders, runner, args, needle):
    r = runner.invoke(app, ["show", str(folders["bta"]), *args])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and needle in r.output, r.output


# ---------------------------------------------------------------- the filter against a brute-force reference

COLS = {"a": [0.5, 1.0, 2.0, -1.0, 3.5], "b.c": [1, 2, 3, 4, 5], "s": ["er", "block", "er", "snake", "block"]}
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
atom = st.one_of(
    st.tuples(st.sampled_from(["a", "b.c", "a * 2", "b.c - a"]), st.sampled_from(list(OPS)),
              st.sampled_from([-1, 0, 1, 2.5, 3])).map(lambda t: (f"{t[0]} {t[1]} {t[2]}", t)),
    st.tuples(st.sampled_from(["er", "block", "x"]), st.booleans()).map(
        lambda t: (f"s {'==' if t[1] else '!='} '{t[0]}'", ("s", t))),
)


def _ref(expr_tree, row) -> bool:
    kind, rest = expr_tree
    if kind == "and":
        return all(_ref(e, row) for e in rest)
    if kind == "or":
        return any(_ref(e, row) for e in rest)
    if kind == "not":
        return not _ref(rest, row)
    text, t = rest
    if t[0] == "s":
        value, eq = t[1]
        return (row["s"] == value) == eq
    left = eval(t[0].replace("b.c", "bc"), {}, {"a": row["a"], "bc": row["b.c"]})  # the reference, on trusted text
    return OPS[t[1]](left, t[2])


exprs = st.recursive(atom.map(lambda a: (a[0], ("atom", a))),
                     lambda kids: st.one_of(
                         st.tuples(kids, kids).map(lambda p: (f"({p[0][0]}) and ({p[1][0]})", ("and", [p[0][1], p[1][1]]))),
                         st.tuples(kids, kids).map(lambda p: (f"({p[0][0]}) or ({p[1][0]})", ("or", [p[0][1], p[1][1]]))),
                         kids.map(lambda k: (f"not ({k[0]})", ("not", k[1])))),
                     max_leaves=6)


@given(exprs)
def test_filter_agrees_with_a_brute_force_reference(expr):
    text, tree = expr
    df = pd.DataFrame(COLS)
    got = Where(text, df.columns).mask(df)
    rows = df.to_dict("records")
    assert list(got) == [_ref(tree, r) for r in rows], text


@given(st.text(max_size=80))
def test_any_filter_text_is_a_result_or_a_config_error(text):
    df = pd.DataFrame(COLS)
    try:
        mask = Where(text, df.columns).mask(df)
    except ConfigError:
        return
    assert mask.dtype == bool and len(mask) == len(df)


def test_selection_without_filter_stops_early(folders, monkeypatch):
    calls = []
    real = store.iter_parts

    def spy(*a, **k):
        for df in real(*a, **k):
            calls.append(len(df))
            yield df

    monkeypatch.setattr(store, "iter_parts", spy)
    sel = query.select(folders["bta"], limit=3, every_point=True)
    assert len(sel.rows) == 3 and calls == [50]  # one 50-point part read, not the whole sweep


# ---------------------------------------------------------------- feasibility is never hidden

@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """B up to 4 at S = 8192: the materialized scores of B 4 and their backward's dP (4 bytes a score in training
    without attention dropout) exceed the CS-2's memory; smaller batches fit."""
    cfg = {**BTA, "name": "wide", "axes": {"workload.B": [1, 2, 3, 4], "workload.G": [1, 2, 4, 8]}}
    return run_sweep(cfg, out_root=tmp_path_factory.mktemp("wide")).path


def _table(path, width, *args):
    out = CliRunner().invoke(app, ["show", str(path), *args], env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
def test_every_point_table_marks_infeasible_rows_at_every_width(wide, width):
    text = _table(wide, width, "--all", "--sort", "-mfu", "--limit", "8")
    points = pd.read_parquet(wide / "points.parquet")
    top = points.sort_values("mfu", ascending=False, kind="stable").head(8)
    assert 0 < top["feasible"].sum() < 8  # the question shows infeasible rows among feasible ones
    assert "feasible" in text and (width >= 120 or "not shown" in " ".join(text.split()))
    body = [ln.split() for ln in text.splitlines() if ln.strip()[:1].isdigit() and ln.split()[0].isdigit()]
    marks = {}  # a narrow table continues below with the same rows: a point's mark is on one of its lines
    for cells in body:
        m = [c for c in cells if c in ("yes", "no")]
        if len(m) == 1:
            marks[int(cells[0])] = m[0]
    assert {p: ("yes" if f else "no") for p, f in top["feasible"].items()} == marks
    narrow = _table(wide, width, "--all", "--columns", "workload.B,mfu", "--sort", "-mfu", "--limit", "8")
    assert "feasible" in narrow and " no" in narrow  # asked columns without it: the table adds it


def test_feasible_keeps_only_feasible_points(wide):
    out = CliRunner().invoke(app, ["show", str(wide), "--all", "--feasible", "--where", "mfu > 0.3",
                                   "--format", "csv"])
    got = pd.read_csv(io.StringIO(out.output), index_col=0)
    points = pd.read_parquet(wide / "points.parquet")
    want = points[points["feasible"] & (points["mfu"] > 0.3)]
    assert len(want) < (points["mfu"] > 0.3).sum()  # the filter takes some rows away
    assert len(want) and got.index.tolist() == want.index.tolist() and got["feasible"].all()


def test_what_binds_says_what_it_leaves_out():
    """The summary listed the five commonest bounds only; cerebras_serving's other four (188 of 1,112 feasible
    points) went unmentioned, so the counts shown did not add up to the feasible points."""
    from rich.console import Console

    from wsemoe.report.terminal.tables import summary

    bounds = {"comm:dispatch": 251, "attention:hbm": 197, "comm:allreduce": 174, "link bandwidth": 154,
              "hop latency": 148, "comm:combine": 94, "local MACs": 84, "attention:compute": 9, "moe:hbm": 1}
    man = {"name": "s", "points": 1485, "feasible": 1112, "objectives": {"mfu": "max"}, "bounds": bounds,
           "config_hash": "0"}
    out = Console(width=300, record=True)
    out.print(summary(man))
    assert "hop latency: 148; 4 others: 188" in out.export_text()


def test_true_and_false_join_conditions_as_words():
    """'mfu > 0 and true' failed inside numpy ('inhomogeneous shape'): a word is broadcast over the rows."""
    from wsemoe.analysis.explain.where import Where

    df = pd.DataFrame({"mfu": [0.0, 0.2, 0.5]})
    kinds = {"mfu": "number"}
    assert Where("mfu > 0.1 and true", kinds).mask(df).tolist() == [False, True, True]
    assert Where("false or mfu > 0.3", kinds).mask(df).tolist() == [False, False, True]


def test_the_api_takes_one_name_where_a_list_goes(tmp_path):
    """`wsemoe.query(path, sort='-mfu')` read the string a character at a time ("unknown sort column ''"), as
    did plot(only='pareto'), explain(sets='workload.G=8') and point_config: one name is the list of that one."""
    from wsemoe.sweep.run import run_sweep

    path = run_sweep({"name": "s", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                     out_root=tmp_path).path
    assert wsemoe.query(path, sort="-tokens_per_s", columns="tokens_per_s").rows.columns.tolist() == ["tokens_per_s"]
    assert wsemoe.point_config("cs2", "qwen3-30b-a3b", "workload.B=2")["workload"] == {"B": 2}
    assert [p.name for p in wsemoe.plot(path, only="pareto", formats="png")] == ["pareto.png", "pareto.txt"]
    row, _ = wsemoe.explain(path, 0, "workload.G=2")
    assert row["workload.G"] == 2


@pytest.mark.parametrize("call", [lambda p: wsemoe.query(None), lambda p: wsemoe.query([p]),
                                  lambda p: wsemoe.query(p, limit=2.5), lambda p: wsemoe.compare(None),
                                  lambda p: wsemoe.compare([p, None]), lambda p: wsemoe.plot(None),
                                  lambda p: wsemoe.write_report(p, 5), lambda p: wsemoe.list_results(None)])
def test_the_api_refuses_a_path_or_count_of_the_wrong_type_in_one_line(tmp_path, call):
    """Each was a raw TypeError from pathlib or pandas."""
    from wsemoe.errors import ConfigError
    from wsemoe.sweep.run import run_sweep

    path = run_sweep({"name": "s", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                     out_root=tmp_path).path
    with pytest.raises(ConfigError):
        call(path)
