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


# No ordering hook: under `--dist loadfile` pytest-xdist queues files by their number of tests, largest first
# (its loadscope reorder, on by default), whatever order collection gives them, so a hook putting the slowest files
# first had no effect (the invariants file, with the most tests, is queued first either way).


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
