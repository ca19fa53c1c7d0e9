"""One default per reading: what a sweep runs under when it says nothing is the readings registry's default, in
the spec fields, the presets a reading names, `wsemoe new` in every mode, a single-point `eval` and the quickstart
sweep; a shipped sweep that runs under another option says why on the line that sets it."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import pytest

from wsemoe import evaluate, point_config
from wsemoe.config import readings as R
from wsemoe.config.loader import load_config
from wsemoe.config.presets import load_hardware, shipped_sweeps
from wsemoe.config.schema import SECTIONS, Sparsity
from wsemoe.config.starter import MODES, starter_text

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = R.load()
LIVE = [r for r in REGISTRY.values() if not r.pending]


def _field(path: str):
    section, name = path.split(".", 1)
    cls = Sparsity if section == "sparsity" else SECTIONS[section]
    return cls, name


@pytest.mark.parametrize("reading", [r for r in LIVE if "hardware.name" not in r.applies_to], ids=lambda r: r.name)
def test_a_spec_field_defaults_to_the_readings_default(reading):
    """Every field a reading's default sets, on a spec a reading applies to by its fields (not by preset name),
    defaults to that option, where the reading applies."""
    for path, value in reading.options[reading.default].set.items():
        cls, name = _field(path)
        if cls is SECTIONS["hardware"]:
            continue  # hardware fields: the next tests (a preset or the weight source decides them)
        assert cls.model_fields[name].default == value, f"{path}: field default is not the readings' {value!r}"


def test_a_streaming_wafer_keeps_activations_where_the_reading_says():
    """kept_activations applies to weight-streaming wafers: one given by its fields streams them unless it says
    otherwise; a resident machine keeps them in node memory (its only option)."""
    default = REGISTRY["kept_activations"].options[REGISTRY["kept_activations"].default].set
    fields = load_hardware("cs2").model_dump(exclude={"kept_activations", "sources", "pe"})
    hw = SECTIONS["hardware"].model_validate(fields)
    assert {"hardware.kept_activations": hw.kept_activations} == default
    resident = SECTIONS["hardware"].model_validate({**fields, "weight_source": "resident"})
    assert resident.kept_activations == "node"


@pytest.mark.parametrize("reading", [r for r in LIVE if "hardware.name" in r.applies_to], ids=lambda r: r.name)
def test_presets_a_reading_names_carry_its_default(reading):
    for preset in reading.applies_to["hardware.name"]:
        hw = load_hardware(preset)
        for path, value in reading.options[reading.default].set.items():
            have = functools.reduce(getattr, path.split(".")[1:], hw)  # hardware.pe.x: a nested field
            if have is None and path.endswith("inter_wafer_link_bw_bytes_per_s") and tuple(hw.wafers) == (1, 1):
                continue  # one wafer: no wafer boundary to price
            assert have == value, f"{preset}: {path} is {have!r}, the readings' default {value!r}"


def _off_default(cfg) -> dict[str, str]:
    """{reading: option} for every reading that applies to the sweep and runs at an option not its default."""
    out = {}
    for reading in LIVE:
        status = R.status(cfg, reading)
        if status.state in ("varied", "pinned") and R.configured(cfg, reading) != reading.default:
            out[reading.name] = R.configured(cfg, reading)
    return out


@pytest.mark.parametrize("hardware,mode", list(itertools.product(["cs2", "wsc-b200-8x8", "nvl72"], MODES)))
def test_new_starts_at_the_default_readings(hardware, mode, tmp_path):
    text = starter_text("s", hardware, "qwen3-30b-a3b", mode, base_dir=tmp_path)
    (tmp_path / "s.yaml").write_text(text)
    assert _off_default(load_config(tmp_path / "s.yaml")) == {}


@pytest.mark.parametrize("mode", MODES)
def test_single_point_eval_runs_at_the_default_readings(mode):
    cfg = load_config(point_config("cs2", "qwen3-30b-a3b", [f"workload.mode={mode}"]))
    assert _off_default(cfg) == {}


def test_quickstart_runs_at_the_default_readings():
    assert _off_default(load_config(ROOT / "sweeps" / "quickstart.yaml")) == {}


@pytest.mark.parametrize("path", sorted((ROOT / "sweeps").glob("*.yaml")) + shipped_sweeps(), ids=lambda p: p.name)
def test_a_shipped_sweep_off_the_default_says_why_on_that_line(path):
    """A sweep that runs under another option than the default sets it with a comment on that line (why: the
    paper's stated reading, or what does not fit otherwise) naming the default it departs from."""
    off = _off_default(load_config(path))
    lines = path.read_text().splitlines()
    for name, option in off.items():
        fields = [p.split(".", 1)[1] for p in REGISTRY[name].options[option].set]
        hits = [i for i, ln in enumerate(lines) if any(ln.strip().startswith(f"{f}:") for f in fields)]
        assert hits, f"{path.name}: {name}={option} is not set in the file"
        for i in hits:
            comment = " ".join(ln.split("#", 1)[1] for ln in lines[i:i + 3] if "#" in ln)
            assert "default" in comment, f"{path.name}:{i + 1}: {name}={option} without why (and the default)"


def test_new_train_baseline_is_not_capped_by_its_axis(tmp_path):
    """`new --mode train` sweeps B far enough that uniform batching (G = 1) finds its memory limit inside the
    axis: the baseline's best B is below the axis end."""
    text = starter_text("t", "cs2", "qwen3-30b-a3b", "train", base_dir=tmp_path)
    (tmp_path / "t.yaml").write_text(text)
    df = evaluate(load_config(tmp_path / "t.yaml"))
    base = df[(df["workload.G"] == 1) & df["feasible"]]
    best_b = int(base.loc[base["mfu"].idxmax(), "workload.B"])
    assert best_b < int(df["workload.B"].max()), best_b
