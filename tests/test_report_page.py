"""The report can be sent: under 3 MB for a shipped-sweep-like folder (16×16 heat maps, a cloud of points, three
systems), relative paths only, manifest without \\u escapes, every table in a sideways-scrolling box, every
figure captioned with its claim, heat maps as click-to-enlarge thumbnails; results/index.html links each
sweep's report and stays current."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.config.presets import SWEEPS
from wsemoe.report.figures import claims, plots
from wsemoe.sweep.run import run_sweep

BUDGET = 3_000_000  # bytes: a report a researcher can attach to an email


@pytest.fixture(scope="module")
def shipped_like(tmp_path_factory):
    """moentwine_vs_nvl72 with fewer workload values: every figure family of the shipped sweep, the same nine
    16×16 heat maps, three systems; written from a sweep file in the project folder."""
    root = tmp_path_factory.mktemp("project")
    cfg = yaml.safe_load((SWEEPS / "moentwine_vs_nvl72.yaml").read_text())
    cfg["axes"].update({"workload.tokens_per_device": [1, 16, 256], "mapping.ring_directions": [2],
                        "workload.comm_overlap": ["microbatch"]})
    (root / "sweeps").mkdir()
    (root / "sweeps" / "like.yaml").write_text(yaml.safe_dump({**cfg, "name": "like"}))
    res = run_sweep(root / "sweeps" / "like.yaml", out_root=root / "results")
    return root, res.path


def test_report_fits_the_budget_with_relative_paths_captions_and_scrolling_tables(shipped_like, runner, monkeypatch):
    root, path = shipped_like
    monkeypatch.chdir(root)
    r = runner.invoke(app, ["report", "results/like"])
    assert r.exit_code == 0, r.output
    html = (path / "report.html").read_text()
    assert len(html.encode()) < BUDGET, f"{len(html.encode()):,} bytes"
    assert str(root) not in html and "/tmp/" not in html  # never an absolute path
    assert "<th>sweep file</th><td>../../sweeps/like.yaml</td>" in html
    manifest = re.search(r'<pre id="manifest">(.*?)</pre>', html, re.S).group(1)
    assert "\\u" not in manifest and "µ" in html  # characters as themselves
    tables = html.count("<table")
    assert tables >= 5 and html.count('<div class="scroll') == tables  # every table scrolls, none is cut
    stems = re.findall(r'<figure id="fig-([^"]+)">', html)
    assert sum(s.startswith("link_heatmap_") for s in stems) == 9 and {"pareto", "crossover", "wsc_vs_nvl72"} <= set(stems)
    for stem in stems:  # the finding first, then the claim it tests: under it, or once above a grid of thumbnails
        family = next(f for f in plots.FAMILIES if claims.claim_of(f, stem))
        claim = escape(claims.claim_of(family, stem))
        block = re.search(rf'<figure id="fig-{re.escape(stem)}">(.*?)</figure>', html, re.S).group(1)
        assert f"Claim tested: {claim.rstrip('.')}." in (block if not stem.startswith(("link_heatmap_", "node_load_"))
                                                         else html), stem
        assert f"<b>{claim}" not in html  # a bold claim read as the finding
        assert len(re.search(r"<figcaption>(.*?)</figcaption>", block, re.S).group(1)) > 80  # what the data say
    assert re.search(r'<div class="thumbs"><details><summary><figure id="fig-link_heatmap_', html)


def test_index_links_every_report_and_stays_current(runner, tmp_path):
    small = {"name": "small", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
             "axes": {"workload.B": [1, 2], "workload.G": [1, 4]}, "objectives": {"tokens_per_s": "max"}}
    root = tmp_path / "results"
    path = run_sweep(small, out_root=root).path
    r = runner.invoke(app, ["report", "--index", str(root)])
    assert r.exit_code == 0, r.output
    index = (root / "index.html").read_text()
    assert 'small/report.html"' not in index and "no report" in index and "wsemoe report results/small" in index
    assert runner.invoke(app, ["report", str(path)]).exit_code == 0  # a report refreshes the index beside it
    index = (root / "index.html").read_text()
    assert 'href="./small/report.html"' in index and str(tmp_path) not in index and "1 row; one front" in index


def test_index_is_written_through_the_guarded_writer(runner, tmp_path):
    """index.html is a file `wsemoe report` owns in the results root (its ledger lists it): a user's own
    index.html is refused by --index and left alone by later reports; once it is ours, an edit makes it the
    user's again, and --force does not change that."""
    small = {"name": "small", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
             "axes": {"workload.B": [1, 2]}, "objectives": {"tokens_per_s": "max"}}
    root = tmp_path / "results"
    path = run_sweep(small, out_root=root).path
    (root / "index.html").write_text("my own page")
    r = runner.invoke(app, ["report", "--index", str(root)])
    assert r.exit_code != 0 and "wsemoe did not write it" in r.output and len(r.output.strip().splitlines()) == 1
    assert runner.invoke(app, ["report", str(path)]).exit_code == 0
    assert (root / "index.html").read_text() == "my own page"  # a report refreshes only an index it wrote
    (root / "index.html").unlink()
    assert runner.invoke(app, ["report", "--index", str(root)]).exit_code == 0
    assert "small" in (root / "index.html").read_text()
    (root / "index.html").write_text((root / "index.html").read_text() + "<!-- my note -->")
    assert runner.invoke(app, ["report", str(path)]).exit_code == 0
    assert (root / "index.html").read_text().endswith("<!-- my note -->")  # edited: the user's now
    r = runner.invoke(app, ["report", "--index", str(root), "--force"])
    assert r.exit_code != 0 and "changed since wsemoe wrote it" in r.output


def test_index_of_a_folder_with_no_results_is_refused(runner, tmp_path):
    """`report --index ANYDIR` wrote an index.html of 'no results' into any folder (a home folder, a source tree)."""
    from clicheck import one_line_error

    (tmp_path / "notes.txt").write_text("mine")
    one_line_error(runner.invoke(app, ["report", "--index", str(tmp_path)]), "holds no results folder to index")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_index_with_an_output_file_is_refused(runner, tmp_path):
    """`report --index -o FILE` wrote <root>/index.html and ignored -o."""
    from clicheck import one_line_error

    one_line_error(runner.invoke(app, ["report", "--index", str(tmp_path), "-o", str(tmp_path / "i.html")]),
                   "--output", "-o does not apply")
    assert not list(tmp_path.iterdir())


def test_what_binds_shows_shares_in_percent():
    """The shares of the feasible points were fractions at 4 significant digits, the smallest in e-notation
    ('0.2257', '8.993e-04'); they are percent, to 0.1, the header saying so."""
    from wsemoe.report.html.page import _binds

    html = _binds({"bounds": {"comm:dispatch": 251, "hop latency": 852, "attention:compute": 9, "moe:hbm": 1}})
    cells = re.findall(r'<td class="n">([^<]*)</td>', html)
    assert "share (%)" in html and "e-0" not in html
    assert cells[1::2] == ["22.6", "76.5", "0.8", "0.09"]


def test_a_hugging_face_models_source_is_shown_relative(tmp_path, runner, monkeypatch):
    """A model read from a config.json keeps `source: hf:<absolute path>` in config.yaml; the page shows every
    absolute path it finds relative, but missed this one behind its `hf:` prefix (a /home/... path in a page
    to send)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    (tmp_path / "hf").mkdir()
    shutil.copy(Path(__file__).parent / "data" / "hf" / "qwen3-30b-a3b.json", tmp_path / "hf" / "config.json")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "hfsrc", "hardware": "cs2", "model": {"hf_config": "hf"},
                                                      "workload": {"mode": "train", "seq_len": 2048},
                                                      "axes": {"workload.G": [1, 2]}}))
    assert runner.invoke(app, ["sweep", "s.yaml", "-q"]).exit_code == 0
    assert f"hf:{tmp_path}" in (tmp_path / "results" / "hfsrc" / "config.yaml").read_text()
    r = runner.invoke(app, ["report", "results/hfsrc"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "results" / "hfsrc" / "report.html").read_text()
    assert str(tmp_path) not in html and "hf:../../hf/config.json" in html


def test_a_changed_readings_folder_is_named_by_the_report_as_by_show(tmp_path, runner, monkeypatch):
    """A readings/ changed since wsemoe wrote it is ignored by every reader; `show` said so, but the report said
    'not computed; `wsemoe readings` computes it', and that command then refused to replace the changed file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "chg", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
        "axes": {"workload.G": [1, 2]}, "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}))
    assert runner.invoke(app, ["sweep", "c.yaml", "-q"]).exit_code == 0
    values = tmp_path / "results" / "chg" / "readings" / "values.csv"
    values.write_text(values.read_text().replace(",1", ",9", 1))
    r = runner.invoke(app, ["report", "results/chg"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "results" / "chg" / "report.html").read_text()
    assert "readings changed since wsemoe wrote it" in html and "not computed" not in html


def test_the_comparison_table_leads_with_its_answer_and_the_readings_detail_wraps(tmp_path):
    """The report's comparison read comparison.csv's order: speedup_vs_uniform came 14th of 15 columns, off the
    right edge of a 1,400-pixel page (show puts it second). The readings' 'detail' is prose held on one line
    (nowrap), running a screen's width past the page."""
    from wsemoe.report.html.page import CSS, page

    cfg = {"hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
           "name": "cmp", "axes": {"model.num_experts": [8, 128], "workload.B": [1, 2], "workload.G": [1, 2]},
           "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
    html = page(run_sweep(cfg, out_root=tmp_path).path)
    table = re.search(r'<table[^>]*id="comparison".*?</table>', html, re.S).group(0)
    heads = re.findall(r"<th[^>]*>([^<]+)", table.split("</thead>")[0])
    assert heads[:2] == ["model.num_experts", "speedup_vs_uniform"], heads
    assert "#readings td.t:last-child" in CSS.split("white-space:normal")[0]
