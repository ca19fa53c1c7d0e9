"""The README and docs/usage.md work as written: the README is a short front page (at most 250 lines, a table of
contents) whose set-up step comes before the first bare `wsemoe`; every `wsemoe` command either shows exists with
the options it uses (and the Python API names exist); usage.md's Use block runs in order, exactly as written, in a
fresh folder holding the shipped sweeps, followed by its Python block, and runs every command the README shows;
the shipped sweeps are real files, equal to the package's copies."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

import wsemoe
from wsemoe.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
USAGE = (ROOT / "docs" / "usage.md").read_text()


def _code_lines(text: str = README + USAGE) -> list[str]:
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", text, flags=re.S)
    return [ln.split("#")[0].strip() for b in blocks for ln in b.splitlines() if ln.strip()]


def test_activation_comes_before_the_first_bare_command():
    lines = _code_lines(README)
    first = next(i for i, ln in enumerate(lines) if ln.startswith("wsemoe "))
    assert any("source .venv/bin/activate" in ln for ln in lines[:first]), lines[: first + 1]


def test_every_command_and_option_shown_exists():
    group = typer.main.get_command(app)
    shown = [ln for ln in _code_lines() if ln.startswith("wsemoe ")]
    assert len(shown) >= 12
    for line in shown:
        args = shlex.split(line)[1:]
        if args[0].startswith("-"):
            assert args[0] in {o for p in group.params for o in p.opts}, line
            continue
        assert args[0] in group.commands, line
        cmd = group.commands[args[0]]
        cmd.make_context(args[0], [a for a in args[1:] if a != ">" and not a.endswith(".csv")])  # parses, or raises


def test_every_whole_config_the_docs_show_checks_as_written():
    """A sweep file the docs show whole (it has a name) is valid as printed: it read mapping.tp 4 on a
    weight-streaming wafer, which `check` refuses."""
    from wsemoe.config import yamlio
    from wsemoe.config.loader import load_config

    blocks = [(p.name, b) for p in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
              for b in re.findall(r"```ya?ml\n(.*?)```", p.read_text(), flags=re.S)
              if re.search(r"^name:", b, re.M) and re.search(r"^hardware:", b, re.M)]   # not a CI workflow
    assert blocks
    for name, block in blocks:
        load_config(yamlio.loads(block, name), base_dir=ROOT)


def test_python_api_names_exist():
    for name in re.findall(r"wsemoe\.([a-z_]+)\(", README + USAGE):
        assert hasattr(wsemoe, name), name


# ---------------------------------------------------------------- the Use block runs as written

def _use_blocks() -> tuple[list[str], str]:
    """(the Use section's shell lines, its Python block) as docs/usage.md shows them."""
    use = USAGE.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    bash = re.search(r"```bash\n(.*?)```", use, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", use, re.S).group(1)
    return [ln for ln in bash.splitlines() if ln.strip()], python


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh folder holding what a clone holds for the Use block: the shipped sweeps and the CI example."""
    root = Path(__file__).resolve().parents[1]
    folder = tmp_path_factory.mktemp("clone")
    shutil.copytree(root / "sweeps", folder / "sweeps", symlinks=True)  # as a copy of the folder has it
    shutil.copytree(root / "examples", folder / "examples")
    return folder


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100", "CI": "1"}


def test_use_block_runs_in_order_as_written_then_the_python_block(clone):
    lines, python = _use_blocks()
    assert len(lines) >= 20 and any("compare" in ln for ln in lines)
    for line in lines:  # exactly as written: the shell parses quotes, redirections, globs and comments
        r = subprocess.run(["bash", "-c", line], cwd=clone, env=_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        if "--feasible --where" in line:  # the README's question returns feasible designs
            assert " yes" in r.stdout and " no " not in r.stdout
    assert (clone / "points.csv").read_text().startswith("point,workload.B,workload.G,mfu,feasible")
    assert (clone / "results" / "index.html").is_file() and (clone / "invariants.xml").is_file()
    r = subprocess.run([sys.executable, "-c", python], cwd=clone, env=_env(), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def test_every_readme_command_runs_in_the_use_block():
    """The front page shows a few commands; the executed block of docs/usage.md runs each of them (the worked
    example's sweep and show included), so the README cannot show a command that does not run."""
    lines, _ = _use_blocks()
    ran = {" ".join(shlex.split(ln.split("#")[0])) for ln in lines}
    shown = [" ".join(shlex.split(ln)) for ln in _code_lines(README) if ln.startswith("wsemoe ")]
    missing = [ln for ln in shown if ln not in ran]
    assert not missing, missing


# ---------------------------------------------------------------- a front page

def test_readme_is_a_front_page_with_a_table_of_contents():
    """At most 250 lines; a Contents list linking every second-level section; the Documentation list links
    every page under docs/ (a new page is linked from the front page, or this fails)."""
    lines = README.splitlines()
    assert len(lines) <= 250, len(lines)
    sections = re.findall(r"^## (.+)$", README, flags=re.M)
    contents = README.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    anchors = re.findall(r"\]\(#([^)]+)\)", contents)
    for title in sections[1:]:
        anchor = re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
        assert anchor in anchors, title
    docs = README.split("\n## Documentation\n", 1)[1]
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in docs, page.name


def test_every_relative_link_in_the_readme_and_docs_resolves():
    """Moving sections between pages breaks links: every relative link of README.md and docs/*.md names a
    file that exists, and an anchor into a Markdown page names one of its headings."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            path, anchor = target
            if path.startswith(("http:", "https:", "mailto:")):
                continue
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name}: {path}"
            if anchor and file.suffix == ".md":
                heads = re.findall(r"^#+ (.+)$", file.read_text(), flags=re.M)
                slugs = {re.sub(r"[^a-z0-9 _-]", "", h.lower().strip()).replace(" ", "-") for h in heads}
                assert anchor in slugs, f"{page.name}: {path}#{anchor}"


def test_shipped_sweeps_are_real_files_equal_to_the_package_copies():
    """Copying sweeps/ into a project must not break it: no symbolic links, and every sweep the package also
    ships (validate runs those) is byte-for-byte the package's copy."""
    from wsemoe.config.presets import shipped_sweeps

    folder = ROOT / "sweeps"
    links = [p.name for p in folder.iterdir() if p.is_symlink()]
    assert not links, links
    for packaged in shipped_sweeps():
        mine = folder / packaged.name
        assert mine.is_file(), packaged.name
        assert mine.read_bytes() == packaged.read_bytes(), f"sweeps/{packaged.name} differs from the package copy"


def test_the_worked_example_shows_what_the_quickstart_sweep_gives_today(tmp_path, runner):
    """The README's worked example quotes `wsemoe show results/quickstart`: its comparison rows and the readings
    line under them must be what the sweep gives now (nothing compared them; a physics change would leave the
    front page quoting numbers no run prints)."""
    import pandas as pd

    block = re.search(r"`wsemoe show` ends with the comparison.*?```\n(.*?)```", README, re.S).group(1)
    rows = [ln.split() for ln in block.splitlines() if re.match(r"\s+\d+\s+\d", ln)]
    out = tmp_path / "quickstart"
    r = runner.invoke(app, ["sweep", str(ROOT / "sweeps" / "quickstart.yaml"), "--output", str(out), "-q"])
    assert r.exit_code == 0, r.output
    cmp = pd.read_csv(out / "comparison.csv").set_index("model.num_experts")
    assert len(rows) == len(cmp) == 2
    for e, speedup, g, b, best, base, bound in rows:
        got = cmp.loc[int(e)]
        assert (int(got["best_G"]), int(got["best_B"]), got["best_bound"]) == (int(g), int(b), bound), e
        assert float(speedup) == pytest.approx(got["speedup_vs_uniform"], abs=0.005)
        assert (best, base) == tuple(f"{got[c] / 1e3:.4g}" for c in ("best_tokens_per_s", "baseline_tokens_per_s"))
    said = " ".join(block.split("\n\n")[-1].split())
    shown = runner.invoke(app, ["show", str(out)], env={"COLUMNS": "200"})
    assert said in " ".join(shown.output.split()), (said, shown.output[-800:])


def test_every_image_the_docs_show_names_the_output_it_is_copied_from(tmp_path):
    """docs/img held nine PNGs and nothing said which results file each is: three BTA images had drifted from a
    fresh `wsemoe plot`. tools/update_img.py names a source for each image the docs show (and only those), and
    copies it from a results root."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_img", ROOT / "tools" / "update_img.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shown = {Path(p).name for page in (ROOT / "docs").glob("*.md") for p in re.findall(r"\]\((img/[^)\s]+)\)", page.read_text())}
    assert shown == set(tool.SOURCES) | set(tool.WRITTEN) == {p.name for p in (ROOT / "docs" / "img").glob("*.png")}
    folder, file, _ = tool.SOURCES["pe_binding.png"]
    (tmp_path / folder / file).parent.mkdir(parents=True)
    (tmp_path / folder / file).write_bytes(b"png")
    img = tmp_path / "img"
    img.mkdir()
    tool.IMG = img
    assert tool.main([str(tmp_path)]) == 1 and [p.name for p in img.iterdir()] == ["pe_binding.png"]
