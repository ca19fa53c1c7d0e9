"""A GPU's HBM as the serving engines see it: nvidia-smi's memory.total (H200 SXM 143,771 MiB = 150.75e9 bytes,
H100 SXM5 81,559 MiB, B200 183,359 MiB), the figure vLLM's gpu_memory_utilization and SGLang's mem_fraction_static
take their shares of. The datasheets' '141 / 80 / 180 GB' read as decimal bytes left the KV budget 6.4-6.5% of
the HBM short."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.gpu import serving
from wsemoe.validate.silicon import features, reader

MIB = 2**20
H200_MEMORY_TOTAL = 143_771 * MIB   # nvidia-smi memory.total of an H200 SXM, MiB
MEMORY_TOTAL = {"h200-sxm": H200_MEMORY_TOTAL, "h100-sxm": 81_559 * MIB, "b200-sxm": 183_359 * MIB}


@pytest.mark.parametrize("preset", sorted(MEMORY_TOTAL))
def test_memory_is_nvidia_smi_s_total(preset):
    assert presets.load_hardware(preset).node_memory_bytes == pytest.approx(MEMORY_TOTAL[preset], rel=1e-6)


def test_vllm_kv_slots_of_llama_8b_on_one_h200_by_hand():
    """vLLM keeps 0.9 of the whole HBM for weights and cache. Llama-3.1-8B in BF16 (config.json: 32 layers,
    hidden 4096, 8 KV heads of 128, FFN 14336, vocabulary 128256, untied head): 218,103,808 weights a layer
    (2·4096² + 2·4096·1024 + 3·4096·14336) and 2 × 525,336,576 embedding and head, 16,059,990,016 bytes; a request
    of 1,000 + 1,000 tokens holds 1,500 at its mean context, 32 · 2,048 BF16 values a token: 196,608,000 bytes.
    (0.9 · 150,754,820,096 − 16,059,990,016) / 196,608,000 = 608.4 → 608 requests (563 at 141e9 bytes)."""
    row = {c: "" for c in reader.COLUMNS}
    row.update({"id": "h200", "backend": "vllm", "model_path": "meta-llama/Llama-3.1-8B-Instruct", "system": "h200_sxm",
                "precision": "bf16", "mode": "agg", "isl": 1000, "osl": 1000, "gemm_quant_mode": "bf16",
                "batch_size": 8, "tp_size": 1, "pp_size": 1, "attention_dp_size": 1, "moe_tp_size": 1,
                "moe_ep_size": 1, "silicon_ttft_ms": 100.0, "silicon_tpot_ms": 10.0})
    res = reader.resolve(row, presets.load_model, presets.load_hardware)
    X = {k: np.array([v], float) for k, v in features.one(res, "agg").items()}
    assert serving.weights_per_gpu(X)[0] == pytest.approx(16_059_990_016, rel=1e-3)
    assert serving.kv_slots(X)[0] == 608
