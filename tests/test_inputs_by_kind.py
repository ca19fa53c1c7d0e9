"""Inputs validated by kind, once per kind (issue 18): names reach matplotlib, the terminal and HTML as
literal text; Hugging Face configs are checked as a model loader would; every column argument is checked
against the column's kind by one shared check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.dom import minidom

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.config.hf import model_from_hf_config
from wsemoe.errors import PresetError, printable
from wsemoe.sweep.run import run_sweep

HF = Path(__file__).parent / "data" / "hf"
HOSTILE = "$\\frac{x$\x1b]0;pwned\x07\x1b[31mred\u202e<script>alert(1)[link=x]L"  # a folder name: no '/'
PLAIN_MATH = "$x^2$ & co"
CONTROL = ("\x1b", "\x07", "\u202e")


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """Results whose model axis holds two Hugging Face models named by their folders: one hostile, one with math."""
    root = tmp_path_factory.mktemp("named")
    for name, src in ((HOSTILE, "qwen3-30b-a3b.json"), (PLAIN_MATH, "mixtral-8x7b-v0.1.json")):
        (root / "hf" / name).mkdir(parents=True)
        shutil.copy(HF / src, root / "hf" / name / "config.json")
    cfg = {"name": "named", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
           "axes": {"workload.G": [1, 2], "workload.B": [1, 2],
                    "model": [str(root / "hf" / HOSTILE), str(root / "hf" / PLAIN_MATH)]}}
    out = root / f"res\x1b]0;title\x07"
    out.mkdir()
    run_sweep(cfg, out_dir=out / "named")
    run_sweep({**cfg, "name": "named2"}, out_dir=out / "named2")
    return out


def _clean(text: str) -> None:
    for ch in CONTROL:
        assert ch not in text, (repr(ch), text[:300])


def test_names_in_plots_are_literal_and_every_svg_is_well_formed(named, runner):
    r = runner.invoke(app, ["plot", str(named / "named"), "--only", "pareto", "--only", "memory"])
    assert r.exit_code == 0, r.output
    svgs = list((named / "named" / "plots").glob("*.svg"))
    assert svgs
    texts = ""
    for svg in svgs:
        minidom.parse(str(svg))  # control characters would make it malformed XML
        texts += svg.read_text()
    _clean(texts)
    assert "$x^2$ &amp; co" in texts and "\\frac{x$" in texts  # shown as written, not as math
    r = runner.invoke(app, ["compare", str(named / "named"), str(named / "named2"), "--plot", str(named / "c.svg")])
    assert r.exit_code == 0, r.output
    minidom.parse(str(named / "c.svg"))


@pytest.mark.parametrize("text, shown", [
    ("162\u00a0PFLOP/s", "162\u00a0PFLOP/s"),      # a no-break space between number and unit shows as a space
    ("a\u2009b\u3000c", "a\u2009b\u3000c"),      # thin and ideographic spaces likewise
    ("a\x1b[31mb", "a\\x1b[31mb"),               # an escape sequence is written out
    ("x\u202ey", "x\\u202ey"),                   # a direction override too
    ("a\u2028b", "a\\u2028b"),                   # a line separator is not a space
])
def test_the_sanitiser_keeps_spaces_and_escapes_controls(text, shown):
    assert printable(text) == shown


def test_names_in_the_html_report_are_escaped(named, runner):
    r = runner.invoke(app, ["report", str(named / "named"), "-o", str(named / "r.html")])
    assert r.exit_code == 0, r.output
    html = (named / "r.html").read_text()
    _clean(html)
    assert "<script>" not in html and "&lt;script&gt;alert(1)" in html


@pytest.mark.parametrize("argv", [["ls", "{root}"], ["show", "{root}/named"], ["show", "{root}/named", "--all"],
                                  ["show", "{root}/named", "-F", "csv"], ["show", "{root}/named", "-F", "markdown"],
                                  ["compare", "{root}/named", "{root}/named2"], ["eval", "{root}/named", "-p", "1"],
                                  ["show", "{root}/missing"]])
def test_names_on_the_terminal_cannot_carry_escape_sequences(named, runner, argv):
    r = runner.invoke(app, [a.format(root=named) for a in argv])
    assert r.exit_code in (0, 2), r.output
    _clean(r.output)
    if "-F" in argv or argv[0] == "ls":
        assert "\\x1b" in r.output  # shown, escaped


# ---------------------------------------------------------------- Hugging Face configs, as a loader checks them

QWEN = json.loads((HF / "qwen3-30b-a3b.json").read_text())
DSV3 = json.loads((HF / "deepseek-v3.json").read_text())
BROKEN = {
    "more kv heads than heads": (QWEN, {"num_key_value_heads": 64}, "num_key_value_heads"),
    "kv heads not dividing": (QWEN, {"num_key_value_heads": 3}, "num_key_value_heads"),
    "zero heads": (QWEN, {"num_attention_heads": 0}, "num_attention_heads"),
    "negative hidden": (QWEN, {"hidden_size": -2048}, "hidden_size"),
    "zero layers": (QWEN, {"num_hidden_layers": 0}, "num_hidden_layers"),
    "top-k over experts": (QWEN, {"num_experts_per_tok": 200}, "num_experts_per_tok"),
    "zero experts": (QWEN, {"num_experts": 0}, "num_experts"),
    "odd head_dim": (QWEN, {"head_dim": 127}, "head_dim"),
    "negative rope_theta": (QWEN, {"rope_theta": -1}, "rope_theta"),
    "NaN-like rope_theta": (QWEN, {"rope_theta": "fast"}, "rope_theta"),
    "partial rotary above 1": (QWEN, {"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    "zero vocab": (QWEN, {"vocab_size": 0}, "vocab_size"),
    "head_dim the family ignores": ({**json.loads((HF / "olmoe-1b-7b-0924.json").read_text())}, {"head_dim": 64},
                                    "head_dim"),
    # head_dim derived from the sizes: a negative hidden_size was named as heads that do not divide it
    "negative hidden, head_dim from it": ({**json.loads((HF / "olmoe-1b-7b-0924.json").read_text())},
                                          {"hidden_size": -1}, "hidden_size"),
    "MLA without kv rank": (DSV3, {"kv_lora_rank": 0}, "kv_lora_rank"),
    "MLA odd rotary width": (DSV3, {"qk_rope_head_dim": 63}, "qk_rope_head_dim"),
    "expert groups not dividing": (DSV3, {"n_group": 7}, "n_group"),
    "topk_group above n_group": (DSV3, {"topk_group": 9}, "topk_group"),
    "top-k beyond the chosen groups": (DSV3, {"topk_group": 1, "num_experts_per_tok": 40}, "num_experts_per_tok"),
    # a list of one entry per layer was built before the spec bounded the count: gpt-oss's repetition failed
    # (OverflowError, an internal error), Qwen3-Next's list grew until memory ran out; an interval of 0 divided by 0
    "1e308 layers, per-layer list": (json.loads((HF / "gpt-oss-20b.json").read_text()), {"num_hidden_layers": 1e308},
                                     "num_hidden_layers"),
    "full-attention interval 0": (json.loads((HF / "qwen3-next-80b-a3b-thinking.json").read_text()),
                                  {"full_attention_interval": 0}, "full_attention_interval"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_an_inconsistent_hf_config_is_one_line_naming_the_field(case, tmp_path, runner):
    base, change, field = BROKEN[case]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, **change}))
    with pytest.raises(PresetError) as info:
        model_from_hf_config(path)
    assert info.value.loc[-1] == field, info.value.line()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"name": "hf", "hardware": "cs2", "model": {"hf_config": str(path)}}))
    r = runner.invoke(app, ["check", str(cfg)])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and field in r.output, r.output


def test_a_huge_layer_count_is_refused_before_memory_runs_out(tmp_path):
    """Qwen3-Next with num_hidden_layers 1e308 (an integral float, read as a whole number) built its list of layer
    kinds until memory ran out (13 GB in 3 minutes). Run apart, with 2 GB of address space: now one line at once."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads((HF / "qwen3-next-80b-a3b-thinking.json").read_text()),
                                "num_hidden_layers": 1e308}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run([sys.executable, "-c", "import sys; from wsemoe.cli import app; sys.argv[0] = 'wsemoe'; app()",
                        "eval", "--hardware", "cs2", "--model", str(path)],
                       capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "num_hidden_layers] Input should be less than or equal to 65536" in r.stderr, r.stderr


@pytest.mark.parametrize("src", sorted(p.name for p in HF.glob("*.json")))
def test_every_shipped_hf_config_passes_the_loader_checks(src):
    from wsemoe.config.hf import SUPPORTED_MODEL_TYPES

    mtype = json.loads((HF / src).read_text()).get("model_type")
    if mtype in SUPPORTED_MODEL_TYPES:
        model_from_hf_config(HF / src)
        return
    with pytest.raises(PresetError) as info:  # a type no importer reads yet: refused by name, in one line
        model_from_hf_config(HF / src)
    assert info.value.loc[-1] == "model_type" and "\n" not in info.value.message


# ---------------------------------------------------------------- column arguments, checked by kind

@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    cfg = {"name": "plain", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
           "axes": {"workload.G": [1, 2], "mapping.strategy": ["block", "er"]}}
    path = run_sweep(cfg, out_dir=tmp_path_factory.mktemp("plain") / "plain").path
    shutil.copytree(path, path.parent / "again")   # compare takes two different folders
    return path


@pytest.mark.parametrize("argv,needle", [
    (["compare", "{p}", "{p}/../again", "--metric", "bound"], "'bound' holds text"),
    (["compare", "{p}", "{p}/../again", "--metric", "feasible:max"], "'feasible' holds yes/no"),
    (["compare", "{p}", "{p}/../again", "--metric", "mapping.strategy"], "holds text"),
    (["show", "{p}", "--all", "--where", "bound > 1"], "compares 'bound' (text)"),
    (["show", "{p}", "--all", "--where", "mapping.strategy == 2"], "compares 'mapping.strategy' (text)"),
    (["show", "{p}", "--all", "--where", "mfu == 'high'"], "compares 'mfu' (number)"),
    (["show", "{p}", "--all", "--where", "-bound < 0"], "take numbers"),
    (["show", "{p}", "--all", "--where", "feasible in [1, 2]"], "compares 'feasible' (bool)"),
    (["show", "{p}", "--sort", "bond"], "did you mean 'bound'"),
])
def test_column_options_are_checked_against_the_column_kind(plain, runner, argv, needle):
    r = runner.invoke(app, [a.format(p=plain) for a in argv])
    text = r.output.strip()
    assert r.exit_code != 0 and len(text.splitlines()) == 1 and needle in text, text


def test_filters_of_matching_kinds_still_run(plain, runner):
    for where in ("bound != 'x' and mfu > 0", "mapping.strategy in ['er']", "feasible == true", "workload.G * 2 > 3"):
        r = runner.invoke(app, ["show", str(plain), "--all", "--where", where, "-F", "csv"])
        assert r.exit_code == 0, (where, r.output)


@pytest.mark.parametrize("change,needle", [
    ({"objectives": {"bound": "max"}}, "objectives -> bound"),
    ({"objectives": {"feasible": "max"}}, "holds yes/no"),
    ({"constraints": [{"column": "infeasible_reason", "max": 1}]}, "holds text"),
    ({"compare": {"name": "u", "baseline": {"workload.G": 1}, "metric": "bound"}}, "compare -> metric"),
    # a time below zero can never be reached, as min above max cannot (it passed check; every point infeasible)
    ({"constraints": [{"column": "step_time_s", "max": -1}]}, "never negative (s): no point could satisfy it"),
])
def test_config_columns_are_checked_by_the_same_rule(change, needle, tmp_path, runner):
    cfg = {"name": "cc", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
           "axes": {"workload.G": [1, 2]}, **change}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    for cmd in ("check", "sweep"):
        r = runner.invoke(app, [cmd, str(tmp_path / "c.yaml")] + (["--results", str(tmp_path / "r")] if cmd == "sweep" else []))
        assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and needle in r.output, r.output


def test_index_links_stay_relative_paths_under_the_root_whatever_the_folder_names(tmp_path, runner):
    """A results folder named like a URL scheme or like markup becomes a link to ./<its name, percent-encoded>/
    report.html, text escaped: no href the browser could run or send elsewhere."""
    import html.parser
    import re

    names = ["javascript:alert(document.domain)", "data:text,x", "\"><img src=x onerror=alert(1)>", "..", "a b%2e"]
    cfg = {"name": "idx", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
           "axes": {"workload.G": [1, 2]}}
    root = tmp_path / "root"
    root.mkdir()
    for i, name in enumerate(n for n in names if n != ".."):
        run_sweep({**cfg, "name": f"idx{i}", "description": f"<script>alert({i})</script>\x1b[31m"},
                  out_dir=root / name)
        assert runner.invoke(app, ["report", str(root / name)]).exit_code == 0
    r = runner.invoke(app, ["report", str(root), "--index"])
    assert r.exit_code == 0, r.output
    page = (root / "index.html").read_text()

    class Links(html.parser.HTMLParser):
        hrefs, tags = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.hrefs += [v for k, v in attrs if k in ("href", "src")]

    parser = Links()
    parser.feed(page)
    assert set(parser.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "div", "table", "thead", "tr",
                                "th", "tbody", "td", "a", "br", "span", "p"}, parser.tags  # no img, no script
    assert len(parser.hrefs) == 4
    for href in parser.hrefs:
        assert href.startswith("./") and re.fullmatch(r"\./[A-Za-z0-9%._~-]+/report\.html", href), href
        assert ":" not in href and ".." not in href.split("/")
    _clean(page)
    assert "&lt;script&gt;alert(" in page and "<script>" not in page


def test_a_model_file_reads_alike_as_the_model_section_and_as_a_model_axis(tmp_path):
    """`model: path/config.json` was refused as an unknown preset, while `axes: {model: [path/config.json]}` and
    `eval --set model=path` read it: one rule (`axes.is_model_file`) for a model value wherever it is given."""
    from wsemoe.config.loader import load_config

    src = next(HF.glob("*.json"))
    shutil.copy(src, tmp_path / "config.json")
    base = {"name": "m", "hardware": "cs2", "workload": {"mode": "train", "seq_len": 2048},
            "axes": {"workload.B": [1, 2]}}
    as_path = load_config({**base, "model": "config.json"}, base_dir=tmp_path)
    as_fields = load_config({**base, "model": {"hf_config": "config.json"}}, base_dir=tmp_path)
    assert as_path.model == as_fields.model == model_from_hf_config(tmp_path / "config.json")


def test_a_folder_name_with_a_line_break_prints_as_one_line(runner, small_config, tmp_path, monkeypatch):
    """A reply's text keeps its own line breaks, so the path of results written to a folder named 'two\\nlines'
    came out as two lines: `sweep -q` (which prints only the path, for scripts) and the up-to-date line.
    Every shown path escapes what cannot show as itself, as names in tables already did."""
    import yaml

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(small_config))
    out = "two\nlines"
    r = runner.invoke(app, ["sweep", "s.yaml", "-o", out, "-q"])
    assert r.exit_code == 0 and r.output == f"{tmp_path}/two\\nlines\n", r.output
    r = runner.invoke(app, ["sweep", "s.yaml", "-o", out])
    assert r.exit_code == 0 and r.output == "small: up to date (two\\nlines); use --force to re-run\n", r.output
