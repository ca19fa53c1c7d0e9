"""Shared fixtures: small sweep configs and a CLI runner."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner


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
