"""Reading files of measured GPU serving runs (AIConfigurator silicon_sample.csv format): every column, each row's
layout and concurrency as the model runs it, every row modelled or kept with its reason (never dropped, never a
warning), disaggregated workers, hold-out refits, and `wsemoe validate --silicon` in one line when it refuses.
The serving model by hand: tests/test_silicon.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wsemoe.cli import app
from wsemoe.errors import ConfigError
from wsemoe.validate.silicon import accuracy, reader, runs
from tests.test_silicon import DATA, _row


def _csv(tmp_path, rows) -> Path:
    p = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=list(reader.COLUMNS)).to_csv(p, index=False)
    return p


def test_attention_dp_batch_is_per_rank_and_wide_layouts_read_as_one_server():
    lay = reader.layout(_row(batch_size=4, tp_size=1, attention_dp_size=64, moe_tp_size=8, moe_ep_size=8), server=8)
    assert lay["C"] == 256 and lay["dp"] == 8 and lay["moe_ep"] == 8 and lay["moe_tp"] == 1 and lay["gpus"] == 8
    lay = reader.layout(_row(tp_size=64, moe_tp_size=8, moe_ep_size=8), server=8)
    assert (lay["tp"], lay["moe_tp"], lay["moe_ep"], lay["gpus"]) == (8, 1, 8, 8)
    assert reader.layout(_row(tp_size=64, moe_tp_size=8, moe_ep_size=8), server=None)["gpus"] == 64


def test_recorded_concurrency_outranks_batch_size_times_dp():
    """silicon_data_source's silicon_concurrency is what the benchmark ran; batch_size x dp only stands in."""
    src = "db-dump; silicon_concurrency=32; measured=2026"
    row = _row(batch_size=32, tp_size=1, attention_dp_size=64, moe_tp_size=8, moe_ep_size=8, silicon_data_source=src)
    assert reader.layout(row, server=8)["C"] == 32  # batch_size here is the total, not 32 per rank
    assert reader.layout({**row, "silicon_data_source": "no record"}, server=8)["C"] == 32 * 64
    assert reader.source_concurrency({"silicon_data_source": "x; silicon_concurrency=0; y"}) is None
    disagg = {**row, "decode_batch_size": 4, "decode_attention_dp_size": 2}
    assert reader.layout(disagg, "decode_")["C"] == 8  # a worker's own columns: the run's total does not apply


def test_moe_split_wider_than_tp_is_attention_dp():
    """vLLM's -dp 2 beside -tp 1 splits the experts over 2 GPUs, and both run attention: DP 2, not an idle GPU."""
    lay = reader.layout(_row(tp_size=1, attention_dp_size="", moe_tp_size=2, moe_ep_size=1, batch_size=9))
    assert (lay["tp"], lay["dp"], lay["moe_tp"], lay["gpus"]) == (1, 2, 2, 2)
    assert lay["C"] == 9  # the run's concurrency in all, spread over the two ranks
    lay = reader.layout(_row(tp_size=2, attention_dp_size="", moe_tp_size=4, moe_ep_size=1))
    assert (lay["tp"], lay["dp"]) == (2, 2)
    assert reader.layout(_row(tp_size=8, attention_dp_size="", moe_tp_size=1, moe_ep_size=8))["dp"] == 1


def test_each_weight_only_mode_is_modelled_in_a_file(tmp_path):
    rows = [_row(id="i8", precision="", gemm_quant_mode="int8_wo"),
            _row(id="i4", precision="", gemm_quant_mode="int4_wo"),
            _row(id="mx", model_path="openai/gpt-oss-120b", precision="", gemm_quant_mode="",
                 moe_quant_mode="w4a16_mxfp4")]
    out = accuracy.evaluate(_csv(tmp_path, rows))
    assert [r["reason"] for r in out["rows"]] == [None, None, None]
    assert all(r["pred_ttft_ms"] > 0 and r["pred_tpot_ms"] > 0 for r in out["rows"])


def test_unmodelled_and_unknown_rows_keep_their_reason(tmp_path):
    """The held-back models resolve through their presets' Hugging Face ids (layered ones included); an id no
    preset lists, or an unknown system, is reported with its reason and never dropped."""
    held_back = ["openai/gpt-oss-120b", "Qwen/Qwen3.5-397B-A17B-NVFP4", "moonshotai/Kimi-K2.5", "zhipuai/GLM-5",
                 "MiniMaxAI/MiniMax-M2.5"]
    eight_b200 = dict(system="b200_sxm", precision="fp4", gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4",
                      tp_size=8, moe_tp_size=1, moe_ep_size=8)
    rows = [_row(id=f"a{i}", model_path=m, **eight_b200) for i, m in enumerate(held_back)]
    rows += [_row(id="c", model_path="nobody/NoModel"), _row(id="d", system="tpu_v9"), _row(id="e")]
    out = {r["id"]: r for r in accuracy.evaluate(_csv(tmp_path, rows))["rows"]}
    for i in range(len(held_back)):
        assert out[f"a{i}"]["reason"] is None and out[f"a{i}"]["pred_tpot_ms"] > 0, held_back[i]
    assert "no model preset lists" in out["c"]["reason"] and out["c"]["pred_ttft_ms"] is None
    assert "unknown system" in out["d"]["reason"]
    assert out["e"]["reason"] is None and out["e"]["pred_tpot_ms"] > 0


def test_disaggregated_rows_use_their_workers(tmp_path):
    """TTFT from the prefill worker (no decode in it), TPOT from the decode worker (no prefill in it)."""
    disagg = _row(id="d", mode="disagg", system="gb200", model_path="deepseek-ai/DeepSeek-V3", precision="fp4",
                  gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4", batch_size=64, tp_size="", moe_tp_size="",
                  moe_ep_size="", prefill_batch_size=1, prefill_num_workers=2, prefill_tp_size=4, prefill_pp_size=1,
                  prefill_attention_dp_size=1, prefill_moe_tp_size=1, prefill_moe_ep_size=4, decode_batch_size=64,
                  decode_num_workers=1, decode_tp_size=1, decode_pp_size=1, decode_attention_dp_size=8,
                  decode_moe_tp_size=1, decode_moe_ep_size=8)
    out = accuracy.evaluate(_csv(tmp_path, [disagg]))
    row = out["rows"][0]
    assert row["reason"] is None and row["pred_ttft_ms"] > 0 and row["pred_tpot_ms"] > 0
    r = runs.load(_csv(tmp_path, [disagg]))
    assert r.X_ttft["agg"][0] == 0 and r.X_ttft["tp"][0] == 4 and r.X_tpot["dp"][0] == 8
    assert r.X_tpot["C"][0] == 64 * 8  # decode_batch_size per attention-DP rank


def test_missing_column_is_one_line_error(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("id,backend\nx,trtllm\n")
    with pytest.raises(ConfigError, match="missing column 'silicon_data_source'"):
        reader.read(p)


def test_the_concurrency_shown_is_the_one_modelled(tmp_path):
    """With attention DP the file's batch_size is each rank's: a run of 4 a rank over DP 8 is 32 requests, as the
    model runs it; the output showed 4 (labels only; 59 of the given rows)."""
    dp = dict(attention_dp_size=8, batch_size=4, tp_size=1, moe_tp_size=1, moe_ep_size=8, system="b200_sxm")
    rows = [_row(id="dp", **dp), _row(id="src", silicon_data_source="x; silicon_concurrency=24", **dp), _row(id="one")]
    out = {r["id"]: r["concurrency"] for r in accuracy.evaluate(_csv(tmp_path, rows))["rows"]}
    assert out == {"dp": 32, "src": 24, "one": 8}


def test_a_column_named_twice_is_refused_and_an_empty_cell_is_shown_empty(tmp_path):
    """A header naming `id` twice was read (pandas renamed the second 'id.1'), where a key given twice in YAML
    or JSON is refused; an empty system read "unknown system 'nan'"."""
    p = _csv(tmp_path, [_row()])
    header, body = p.read_text().split("\n", 1)
    p.write_text(f"{header},id\n" + "\n".join(f"{ln},t9" for ln in body.splitlines()) + "\n")
    with pytest.raises(ConfigError, match="the header names column 'id' twice"):
        reader.read(p)
    out = accuracy.evaluate(_csv(tmp_path, [_row(system="")]))["rows"][0]
    assert out["reason"].startswith("unknown system '' (known:"), out["reason"]


def test_holdout_reports_each_left_out_group(tmp_path):
    rows = [_row(id=f"{s}{c}", system=s, batch_size=c, silicon_tpot_ms=5 + c / 8, silicon_ttft_ms=80 + c)
            for s in ("h100_sxm", "h200_sxm") for c in (1, 4, 16, 64)]
    out = accuracy.evaluate(_csv(tmp_path, rows), holdout="system")
    assert [f["group"] for f in out["holdout"]] == ["h100_sxm", "h200_sxm"]
    assert all(f["configs"] == 4 and np.isfinite(f["tpot_mape"]) for f in out["holdout"])


def test_cli_json_lines_and_max_mape(runner, tmp_path):
    p = _csv(tmp_path, [_row(id="x"), _row(id="y", model_path="nobody/NoModel")])
    r = runner.invoke(app, ["validate", "--silicon", str(p), "--format", "json"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.strip().splitlines()]
    assert [x.get("id") for x in lines[:2]] == ["x", "y"]
    assert lines[1]["pred_ttft_ms"] is None and lines[1]["reason"]
    assert "summary" in lines[-1] and lines[-1]["summary"]["overall"]["unmodelled"] == 1
    r = runner.invoke(app, ["validate", "--silicon", str(p), "--max-mape", "0"])
    assert r.exit_code == 1 and "above --max-mape" in r.output
    r = runner.invoke(app, ["validate", "--holdout", "system"])
    assert r.exit_code == 2 and "needs --silicon" in r.output


def test_files_with_nothing_to_model(runner, tmp_path):
    """A header only, or only runs the tool cannot model: every row with its reason, MAPE null, no traceback;
    a --max-mape gate does not pass on nothing."""
    empty = _csv(tmp_path, [])
    r = runner.invoke(app, ["validate", "--silicon", str(empty), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["overall"]["ttft_mape"] is None
    p = _csv(tmp_path, [_row(id="g", model_path="zai-org/GLM-5")])
    r = runner.invoke(app, ["validate", "--silicon", str(p)])
    assert r.exit_code == 0 and "1 runs not modelled" in r.output
    r = runner.invoke(app, ["validate", "--silicon", str(p), "--max-mape", "1"])
    assert r.exit_code == 1 and "no run of the file could be modelled" in r.output


def test_holdout_by_backend_predicts_an_unfitted_backend(tmp_path):
    """A left-out backend has no fit of its own: it is predicted with the pooled stack of the others."""
    rows = [_row(id=f"{b}{c}", backend=b, batch_size=c, silicon_tpot_ms=5 + c / 8, silicon_ttft_ms=80 + c)
            for b in ("trtllm", "vllm") for c in (1, 4, 16)]
    out = accuracy.evaluate(_csv(tmp_path, rows), holdout="backend")
    assert [f["group"] for f in out["holdout"]] == ["trtllm", "vllm"]
    assert all(r["pred_tpot_ms"] > 0 for r in out["rows"])


def test_impossible_counts_and_measurements_keep_a_reason(tmp_path):
    """A fractional or absurd request count, and a measurement that is not a finite positive time, are reported
    with their reason rather than modelled (or scored) as if they were a run."""
    rows = [_row(id="frac", batch_size=2.5), _row(id="huge", batch_size=1e30),
            _row(id="inf", silicon_ttft_ms=float("inf")), _row(id="ok")]
    out = {r["id"]: r for r in accuracy.evaluate(_csv(tmp_path, rows))["rows"]}
    assert "whole numbers" in out["frac"]["reason"] and "whole numbers" in out["huge"]["reason"]
    assert "no measured TTFT and TPOT of at least" in out["inf"]["reason"] and out["inf"]["pred_ttft_ms"] is None
    assert out["ok"]["reason"] is None


@pytest.mark.parametrize("by", ["system", "model", "backend"])
def test_holdout_of_a_file_with_one_group_is_one_line(by, tmp_path, runner):
    """Leaving out the only group leaves nothing to fit: that was an internal error (IndexError in the fit)."""
    from clicheck import one_line_error

    given = pd.read_csv(DATA)
    one = given[(given["system"] == given["system"].iloc[0]) & (given["model_path"] == given["model_path"].iloc[0])
                & (given["backend"] == given["backend"].iloc[0])].head(4)
    path = tmp_path / "one.csv"
    one.to_csv(path, index=False)
    one_line_error(runner.invoke(app, ["validate", "--silicon", str(path), "--holdout", by]), "--holdout", "two")


def test_unbounded_or_fractional_lengths_keep_a_reason_and_warn_nothing(tmp_path):
    """isl or osl of inf or 1e308 ran through the model's arithmetic: numpy overflow warnings on stderr and a
    misleading reason (the KV cache does not fit). They are refused by name, as a fractional length is."""
    import warnings

    rows = [_row(id="inf", isl=float("inf")), _row(id="huge", osl=1e308), _row(id="frac", isl=1024.5),
            _row(id="long", isl=2**24, osl=1), _row(id="ok")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = {r["id"]: r for r in accuracy.evaluate(_csv(tmp_path, rows))["rows"]}
    for bad in ("inf", "huge", "frac", "long"):
        assert "whole token counts, together at most 16,777,216" in out[bad]["reason"], out[bad]
    assert out["ok"]["reason"] is None


def test_impossible_layouts_ids_and_measurements_keep_a_reason(tmp_path):
    """Modelled or scored before: a TP of 1e12 GPUs, a PP of 1,000 stages (61 layers), an unknown precision, a
    second row with the same id, a row with no id, a TPOT of 1e308 ms."""
    rows = [_row(id="tp", tp_size=1e12), _row(id="pp", pp_size=1000), _row(id="prec", precision="fp3"),
            _row(id="twice"), _row(id="twice"), _row(id=""), _row(id="slow", silicon_tpot_ms=1e308), _row(id="ok")]
    out = accuracy.evaluate(_csv(tmp_path, rows))["rows"]
    by = {r["id"]: r for r in out if r["id"] not in ("twice", "")}
    assert "at most 100,000 GPUs" in by["tp"]["reason"]
    assert "pp_size above the model's" in by["pp"]["reason"]
    assert "unknown precision 'fp3'" in by["prec"]["reason"]
    assert "at most 3,600,000 ms" in by["slow"]["reason"]
    twice = [r["reason"] for r in out if r["id"] == "twice"]
    assert twice[0] is None and "is also row 4's" in twice[1]
    assert next(r["reason"] for r in out if r["id"] == "") == "no id"
    assert by["ok"]["reason"] is None


def test_a_vanishing_measurement_keeps_a_reason_and_warns_nothing(tmp_path):
    """A TTFT of 1e-320 ms is above 0, so it was scored: predicted / measured overflowed (numpy warnings on
    stderr) and the file's TTFT MAPE came out null with no reason. Below a microsecond is no measurement."""
    import warnings

    rows = [_row(id="tiny", silicon_ttft_ms=1e-320), _row(id="sub_us", silicon_tpot_ms=5e-4), _row(id="ok")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = accuracy.evaluate(_csv(tmp_path, rows))
    by = {r["id"]: r for r in res["rows"]}
    for bad in ("tiny", "sub_us"):
        assert "of at least 0.001 ms (a microsecond) and at most 3,600,000 ms" in by[bad]["reason"], by[bad]
    assert by["ok"]["reason"] is None
    overall = res["overall"]
    assert overall["configs"] == 1 and np.isfinite(overall["ttft_mape"]) and np.isfinite(overall["tpot_mape"])


def test_a_file_of_shifted_rows_or_an_infinite_gate_is_one_line(tmp_path, runner):
    """A row with more fields than the header was read shifted by one column ('unknown system agg')."""
    from clicheck import one_line_error

    shifted = tmp_path / "shifted.csv"
    good = _csv(tmp_path, [_row(id="ok")]).read_text().splitlines()
    shifted.write_text("\n".join([good[0], good[1] + ",x,y"]) + "\n")
    one_line_error(runner.invoke(app, ["validate", "--silicon", str(shifted)]), "more fields than the header")
    for value in ("inf", "nan", "-0.1"):   # inf let every MAPE pass; NaN "should be greater than or equal to 0"
        one_line_error(runner.invoke(app, ["validate", "--silicon", str(_csv(tmp_path, [_row(id="ok")])),
                                           "--max-mape", value]), "--max-mape", "finite share from 0", value)


@pytest.mark.parametrize("cell", ["abc", "nan", "true", "1x"])
def test_a_number_cell_that_is_not_a_number_keeps_a_reason(cell, tmp_path):
    """A layout cell that is text is the row's reason, never read as the default (tp_size 'abc' was modelled as TP 1,
    pandas reading 'nan' as empty and 'true' as 1); a 400-digit isl is a reason too, never an overflow."""
    rows = [_row(id="a", tp_size=cell), _row(id="b", isl="1" * 400), _row(id="c")]
    result = accuracy.evaluate(_csv(tmp_path, rows))
    out = {r["id"]: r for r in result["rows"]}
    assert out["a"]["pred_tpot_ms"] is None and f"tp_size '{cell}' is not a number" in out["a"]["reason"]
    from wsemoe.report.terminal.silicon import json_lines
    assert [json.loads(line)["id"] for line in json_lines(result).splitlines()[:3]] == ["a", "b", "c"]  # inf: null
    assert out["b"]["pred_tpot_ms"] is None and "isl" in out["b"]["reason"]
    assert out["c"]["reason"] is None
