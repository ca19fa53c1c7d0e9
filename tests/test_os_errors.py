"""Every OS error class in one line (issue 18): ENOSPC, EFBIG, EROFS, EACCES, ENAMETOOLONG, EMFILE from every
writer, naming the path, with old results and `--resume` progress intact.

Two ways: the system calls of this process raising each errno on the working folder (every writer × every
class, in-process), and the real mechanisms in a subprocess (a full tmpfs and a read-only mount in a
private mount namespace when the tests may mount, RLIMIT_FSIZE with SIGXFSZ ignored, RLIMIT_NOFILE, a
path longer than the system allows, and a folder of another user under seteuid when running as root).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep

CFG = {"name": "oe", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.G": list(range(1, 9)), "workload.B": [1, 2]}}
AT_WRITE = ("ENOSPC", "EFBIG", "EDQUOT")  # raised by write(2); the rest when a file or folder is created
CLASSES = ("ENOSPC", "EFBIG", "EROFS", "EACCES", "ENAMETOOLONG", "EMFILE")


def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("oe")
    (root / "oe.yaml").write_text(yaml.safe_dump(CFG))
    run_sweep(CFG, out_dir=root / "results" / "oe", chunk_size=4)
    shutil.copytree(root / "results" / "oe", root / "results" / "oe2")   # compare takes two different folders
    (root / "mine.txt").write_text("mine\n")
    return root


@pytest.fixture
def work(template, tmp_path, monkeypatch):
    dst = tmp_path / "w"
    shutil.copytree(template, dst, symlinks=True)
    monkeypatch.chdir(dst)
    return dst


def _inject(monkeypatch, root: Path, name: str, after: int = 0):
    """Make this process's writes (or creations) under `root` fail with errno `name` after `after` succeed."""
    code, seen = getattr(errno, name), {"n": 0}
    real_write, real_open, real_mkdir = os.write, os.open, os.mkdir
    prefix = str(root)

    def hit(path) -> bool:
        if not str(path).startswith(prefix):
            return False
        seen["n"] += 1
        return seen["n"] > after

    def write(fd, data):
        if name in AT_WRITE and hit(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def open_(path, flags, *a, **k):
        if name not in AT_WRITE and flags & os.O_CREAT and hit(os.path.abspath(path)):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *a, **k)

    def mkdir(path, *a, **k):
        if name not in AT_WRITE and hit(os.path.abspath(path)):
            raise OSError(code, os.strerror(code), str(path))
        return real_mkdir(path, *a, **k)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)


WRITERS = {
    "sweep": ["sweep", "oe.yaml", "--results", "results", "--force", "--chunk-size", "4"],
    "report": ["report", "results/oe", "-o", "out.html"],
    "schema": ["schema", "-o", "out.json"],
    "compare --plot": ["compare", "results/oe", "results/oe2", "--plot", "out.svg"],
    "invariants --junit": ["invariants", "oe.yaml", "-n", "2", "--only", "mfu_at_most_matmul_efficiency", "--junit",
                           "out.xml"],
    "calibrate": ["calibrate", "-o", "cal", "-n", "8", "--only", "matmul_efficiency", "--reading", "kept_activations"],
    "sensitivity": ["sensitivity", "oe.yaml", "--results", "results", "-n", "8", "--only", "matmul_efficiency"],
    "plot": ["plot", "results/oe", "--only", "pareto"],
    "readings": ["readings", "oe.yaml", "--results", "results"],  # the full analysis: a what-if is not written
    "export traffic": ["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "qwen3-30b-a3b", "-o", "ex"],
    "new": ["new", "fresh", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-o", "fresh.yaml"],
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_os_error_class_from_every_writer_is_one_line_naming_the_path(writer, work, runner, monkeypatch):
    if writer == "report":  # the page itself is tested elsewhere: here only how it is written
        monkeypatch.setattr("wsemoe.report.html.page.page", lambda path, *rest: "<!DOCTYPE html><p>report</p>")
    if writer == "calibrate":  # likewise the fit: its nominal values stand in
        import numpy as np
        import pandas as pd

        from wsemoe.analysis.uncertainty import calibrate

        monkeypatch.setattr(calibrate, "fit", lambda sweeps, targets, us, samples, seed: calibrate.Fit(
            us, pd.Series([u.nominal for u in us]), pd.DataFrame([[u.low, u.high] for u in us], columns=["low", "high"]),
            pd.DataFrame({"target": [calibrate.SHIPPED], "residual_sigma": [0.0]}), 0.0, 8,
            np.zeros(len(us)), np.zeros(len(us), dtype=bool)))
    before = _files(work)
    for name in CLASSES:
        with monkeypatch.context() as m:
            _inject(m, work, name)
            r = runner.invoke(app, WRITERS[writer])
        text = r.output.strip()
        assert r.exit_code != 0 and len(text.splitlines()) == 1 and text.startswith("error: ["), (name, text)
        assert f"({name})" in text and str(work) in text and "internal error" not in text, (name, text)
        assert _files(work) == before, name  # nothing replaced, no temporary file left
        assert not [p for p in work.rglob("*wsemoe-tmp*")], name


@pytest.mark.parametrize("name", CLASSES)
def test_a_sweep_failing_midway_keeps_old_results_and_resume_progress(name, work, runner, monkeypatch):
    results = work / "results" / "oe"
    before = _files(results)
    cfg = {**CFG, "axes": {**CFG["axes"], "workload.B": [1, 2, 3]}}  # another config: a new run
    (work / "oe.yaml").write_text(yaml.safe_dump(cfg))
    with monkeypatch.context() as m:
        _inject(m, work, name, after=12)  # a few files of the run are written first
        r = runner.invoke(app, ["sweep", "oe.yaml", "--results", "results", "--chunk-size", "4"])
    assert r.exit_code != 0 and f"({name})" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert _files(results) == before  # the old results are whole
    r = runner.invoke(app, ["sweep", "oe.yaml", "--results", "results", "--chunk-size", "4", "--resume"])
    assert r.exit_code == 0, r.output
    assert "resumed: reused" in r.output and "reused 0 of" not in r.output or name not in AT_WRITE, r.output


def test_the_last_line_of_defence_names_the_path(runner, monkeypatch, tmp_path):
    """An OSError a command did not expect still becomes one line with its path (cli.guarded)."""
    def boom(*a, **k):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(tmp_path / "x"))

    monkeypatch.setattr("wsemoe.report.configdoc.reference_text", boom)
    r = runner.invoke(app, ["schema"])
    assert r.exit_code != 0 and r.output.strip() == f"error: [{tmp_path / 'x'}] input/output error on the device (EIO)"


# ---------------------------------------------------------------- the real mechanisms, in a subprocess

SCRIPT = r'''
import json, os, resource, signal, sys
from typer.testing import CliRunner
from wsemoe.cli import app

work, can_mount = sys.argv[1], sys.argv[2] == "1"
os.chdir(work)
runner, out = CliRunner(), {}

def run(case, argv):
    r = runner.invoke(app, argv)
    out[case] = [r.exit_code, r.output.strip()]

run("warm-up", ["schema", "-o", "warm.json"])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))
run("EFBIG sweep", ["sweep", "oe.yaml", "--results", "results", "--force", "--chunk-size", "8"])
run("EFBIG schema", ["schema", "-o", "big.json"])
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
deep = "/".join(["d" * 200] * 25)
run("ENAMETOOLONG schema", ["schema", "-o", f"{deep}/s.json"])
run("ENAMETOOLONG sweep", ["sweep", "oe.yaml", "-o", f"{deep}/r"])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
used = len(os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE, (used, hard))  # one descriptor left (listdir's own is closed)
run("EMFILE schema", ["schema", "-o", "fd.json"])
run("EMFILE sweep", ["sweep", "oe.yaml", "--results", "results", "--force", "--chunk-size", "8"])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
if os.geteuid() == 0:  # root may write anywhere: a folder of root's, written as another user
    import shutil, tempfile
    pub = tempfile.mkdtemp()
    os.chmod(pub, 0o755)
    shutil.copy("oe.yaml", pub)
    os.chmod(f"{pub}/oe.yaml", 0o644)
    os.mkdir(f"{pub}/roots", 0o755)
    os.seteuid(65534)
    run("EACCES schema", ["schema", "-o", f"{pub}/roots/s.json"])
    run("EACCES sweep", ["sweep", f"{pub}/oe.yaml", "-o", f"{pub}/roots/r"])
    run("EACCES sweep into the folder", ["sweep", f"{pub}/oe.yaml", "--results", f"{pub}/roots"])
    os.seteuid(0)
    shutil.rmtree(pub)
if can_mount:
    import subprocess
    os.mkdir("full"); os.mkdir("ro")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", "full"], check=True)
    with open("full/filler", "wb") as fh:
        try:
            fh.write(b"x" * (256 << 10))
        except OSError:
            pass
    run("ENOSPC sweep", ["sweep", "oe.yaml", "-o", "full/r", "--chunk-size", "8"])
    run("ENOSPC schema", ["schema", "-o", "full/s.json"])
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", "ro"], check=True)
    run("EROFS sweep", ["sweep", "oe.yaml", "-o", "ro/r"])
    run("EROFS schema", ["schema", "-o", "ro/s.json"])
    run("EROFS junit", ["invariants", "oe.yaml", "-n", "2", "--only", "mfu_at_most_matmul_efficiency",
                        "--junit", "ro/j.xml"])
print(json.dumps(out))
'''


def _can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True).returncode == 0


def test_real_os_errors_are_one_line_and_keep_the_results(work):
    results = work / "results" / "oe"
    before = _files(results)
    mount = _can_mount()
    cmd = [sys.executable, "-c", SCRIPT, str(work), "1" if mount else "0"]
    if mount:
        cmd = ["unshare", "-m", "--propagation", "private", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out.pop("warm-up")[0] == 0
    expected = {"EFBIG", "ENAMETOOLONG", "EMFILE"} | ({"EACCES"} if os.geteuid() == 0 else set()) \
        | ({"ENOSPC", "EROFS"} if mount else set())
    assert {case.split()[0] for case in out} == expected, out
    for case, (code, text) in out.items():
        assert code != 0 and len(text.splitlines()) == 1 and text.startswith("error: ["), (case, text)
        assert "internal error" not in text, (case, text)
        name = case.split()[0]
        # the class itself, or the check that caught it before the system call did (a folder we may not write)
        assert f"({name})" in text or (name in ("EACCES", "EROFS") and "read-only" in text), (case, text)
    assert _files(results) == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_the_system_refuses_is_one_line():
    """Standard output on a full device: the command's reply cannot be written, and that is one line on stderr
    with a non-zero exit, not a traceback."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "wsemoe.cli", "presets"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == ["error: cannot write the output: no space left on the device (ENOSPC)"]


@pytest.mark.parametrize("name", [n for n in CLASSES if n not in AT_WRITE])
def test_a_partial_folder_the_run_made_and_could_not_prepare_is_removed(name, work, runner, monkeypatch):
    """The partial folder is made, then its marker cannot be (a path past the system's limit, say): the run
    fails in one line and leaves nothing (it left an empty hidden folder without a marker, which `ls --clean`
    cannot claim as its own)."""
    cfg = {**CFG, "axes": {**CFG["axes"], "workload.B": [1, 2, 5]}}  # another config: a new partial folder
    (work / "oe.yaml").write_text(yaml.safe_dump(cfg))
    folders = sorted(p for p in work.rglob("*") if p.is_dir())
    with monkeypatch.context() as m:
        _inject(m, work / "results", name, after=2)   # the lock and the partial folder are made; the marker is not
        r = runner.invoke(app, ["sweep", "oe.yaml", "--results", "results"])
    assert r.exit_code != 0 and f"({name})" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert sorted(p for p in work.rglob("*") if p.is_dir()) == folders
