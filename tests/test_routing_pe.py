"""At PE level every expert is a region of its own, and a step's busiest region is the expected maximum of its
experts' copies over the step's routing (cost/balance/routing.py), not the hottest expert's expected k·p_max·T:
weight streaming's busiest expert region, SRAM serving's routed-expert stage. Hand values: uniform routing gives
each of E experts Binomial(T, k/E) copies of a step's T tokens, and E[max] = Σ_x (1 − F(x)^E) (independent
experts, as routing.py takes them), from scipy here."""

import numpy as np
import pytest
from scipy.stats import binom

import wsemoe

E, K = 128, 8   # Qwen3-30B-A3B: top-8 of 128 experts, uniform routing


def most(tokens: int) -> float:
    """E[max of E experts' copies] at `tokens` tokens: each Binomial(tokens, K/E)."""
    return float((1.0 - binom.cdf(np.arange(tokens + 1), tokens, K / E) ** E).sum())


def test_pe_streaming_busiest_region_takes_the_steps_maximum():
    """Weight streaming at PE level, decode at B = 4 (4 tokens a step): the busiest expert region gets E[max] = 2.053
    copies (most(4)), 8.21× the mean 0.25, where k·p_max·T = 8/128·4 = 0.25 (clipped to 1) read 1 copy and 1×."""
    cfg = {"name": "pe", "hardware": {"preset": "cs2", "pe_fabric": True}, "model": "qwen3-30b-a3b",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 4}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert most(4) == pytest.approx(2.0526, abs=1e-4)
    assert row["expert_tokens"] == pytest.approx(most(4), rel=1e-6)
    assert row["expert_imbalance"] == pytest.approx(most(4) / (4 * K / E), rel=1e-6)


def test_sram_serving_busiest_expert_is_the_decode_steps_maximum():
    """SRAM serving, B = 16 sequences a decode step: the busiest expert region draws E[max] = 4.154 copies of the
    step's 16 tokens, 4.15× the mean 1 (one token's k/E × 16); the expected share read 1×."""
    cfg = {"name": "sram", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
           "workload": {"mode": "decode", "seq_len": 8192, "B": 16}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["expert_imbalance"] == pytest.approx(most(16) / (16 * K / E), rel=1e-6)
    assert row["expert_imbalance"] == pytest.approx(4.1537, abs=1e-4)


def test_sram_prompt_stream_is_paced_by_its_busiest_expert_region():
    """TTFT's stream of B·P prompt tokens where the routed experts pace it (Qwen3-30B-A3B, B = 256 at 32K: the layout
    does not change with P): its busiest region's tokens are E[max] over B·P tokens, so the pace per token is the
    expected share's × most(B·P)/(B·P·k/E), which falls with P (1.0559 at P = 128, 1.0197 at 1,024). The pace's ratio
    between two prompt lengths is the ratio of those factors (the expected share's pace, k·p_max·t, has no P in it:
    it read 1)."""
    cfg = {"name": "sram", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
           "workload": {"mode": "decode", "seq_len": 32768, "B": 256}, "axes": {"workload.prompt_len": [128, 1024]}}
    df = wsemoe.evaluate(cfg)
    assert df["sram_bytes_per_pe"].nunique() == 1   # one layout
    rate = df["prompt_busiest_stage_s"].to_numpy()
    factor = [most(256 * p) / (256 * p * K / E) for p in (128, 1024)]
    assert factor == pytest.approx([1.0559, 1.0197], abs=1e-4)
    assert rate[0] / rate[1] == pytest.approx(factor[0] / factor[1], rel=1e-4)
