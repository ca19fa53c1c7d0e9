"""Shared fixtures (small sweep configs, a CLI runner) and the hypothesis profiles.

Profiles (nothing is stored: `.hypothesis/` is never read or written, so no failure found once can
linger and fail every later run in a checkout):
- `ci` (default): derandomized, the same examples every run, so CI passes or fails on the code alone;
- `dev`: randomized, taken automatically when `--hypothesis-seed` is given, so several seeds explore;
- `fuzz`: randomized and long (`make fuzz`: at least 10,000 examples per fuzz test).
"""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

_COMMON = {"database": None, "deadline": None, "print_blob": True,
           "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, max_examples=100, **_COMMON)
settings.register_profile("dev", derandomize=False, max_examples=100, **_COMMON)
settings.register_profile("fuzz", derandomize=False, max_examples=10_000, **_COMMON)
settings.load_profile("ci")

# Verified checksums are cached per user (`store/verified.py`): tests keep theirs apart from the user's.
os.environ["WSEMOE_CACHE_DIR"] = tempfile.mkdtemp(prefix="wsemoe-test-cache-")


def pytest_configure(config):
    """`--hypothesis-seed N` alone means "explore with seed N": a derandomized profile would ignore it."""
    if config.getoption("hypothesis_seed", None) is not None and not config.getoption("hypothesis_profile", None):
        settings.load_profile("dev")


# The files that take longest on the 2-core machine (test seconds in a junit report of `make test`'s command,
# 2026-12-07: the invariants registry 146, the README's Use block 143 (before its csv example ran one family, not all
# of validate again), validate's perturbations 45 and 38, kill/resume 43, writers 29 (since split: what writers
# replace and the target table), the report page 27, progress bars 23, reproductions 19, compare and report 19,
# mesh plots 18, fuzz 12), queued first so that the two workers end together: `make test` runs `--dist loadfile
# --no-loadscope-reorder`, which queues files in this order (xdist's default queues them by their number of tests,
# which put the README's few long tests last and left one worker idle for the final minute and a half). A stale
# list only costs time, never a test.
SLOWEST_FIRST = ("test_cost_invariants.py", "test_readme.py", "test_validate_perturb_moentwine.py",
                 "test_kill_resume.py", "test_validate_perturb.py", "test_writers_replace.py",
                 "test_report_page.py", "test_progress.py", "test_writers.py", "test_reproduction.py",
                 "test_compare_report.py", "test_plot_mesh.py", "test_fuzz.py")


def pytest_collection_modifyitems(config, items):
    """The slowest files first (SLOWEST_FIRST), every file's tests in their own order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def small_config():
    """A 2×4×2-point BTA sweep on cs2 (fast)."""
    return {
        "name": "small",
        "hardware": "cs2",
        "model": "qwen3-30b-a3b",
        "workload": {"mode": "train", "seq_len": 8192},
        "sparsity": {"vary": "num_experts", "values": [8, 128]},
        "axes": {"workload.B": [1, 2], "workload.G": [1, 2, 4, 8]},
        "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
    }
