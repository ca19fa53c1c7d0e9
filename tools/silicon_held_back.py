"""The held-back models' table of docs/validation.md: TTFT and TPOT with the shipped TensorRT-LLM stack on one B200
server, and the requests the KV cache holds.

Usage: python tools/silicon_held_back.py

Each model on one B200 server (TP 8, EP 8, FP8 weights and experts; gpt-oss: 16-bit attention and MXFP4 experts
multiplied at 16 bits, AIConfigurator's `w4a16_mxfp4`), isl 4,096, osl 1,024, at 1 and 64 concurrent requests,
evaluated as `wsemoe validate --silicon` evaluates a measured row.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wsemoe.config import presets  # noqa: E402
from wsemoe.cost.gpu import serving  # noqa: E402
from wsemoe.validate.silicon import accuracy, features, reader  # noqa: E402

MODELS = (("DeepSeek-V3 (reference)", "deepseek-ai/DeepSeek-V3", "fp8", "fp8"),
          ("Kimi-K2.5", "moonshotai/Kimi-K2.5", "fp8", "fp8"), ("GLM-5 (MLA + DSA)", "zhipuai/GLM-5", "fp8", "fp8"),
          ("MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.5", "fp8", "fp8"),
          ("Qwen3.5-397B-A17B (3 linear : 1 full)", "Qwen/Qwen3.5-397B-A17B", "fp8", "fp8"),
          ("gpt-oss-120b (sliding 128 : full)", "openai/gpt-oss-120b", "", "w4a16_mxfp4"))


def row(model_path: str, gemm: str, moe: str, concurrency: int) -> dict:
    """One upstream-format run of `model_path` on one B200 server (measurements are placeholders)."""
    out = {c: "" for c in reader.COLUMNS}
    out.update({"id": f"{model_path}@{concurrency}", "backend": "trtllm", "model_path": model_path,
                "system": "b200_sxm", "mode": "agg", "isl": 4096, "osl": 1024, "gemm_quant_mode": gemm,
                "moe_quant_mode": moe, "batch_size": concurrency, "tp_size": 8, "pp_size": 1,
                "attention_dp_size": 1, "moe_tp_size": 1, "moe_ep_size": 8, "silicon_ttft_ms": 1.0,
                "silicon_tpot_ms": 1.0})
    return out


def main() -> None:
    runs = [row(m, g, e, c) for _, m, g, e in MODELS for c in (1, 64)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "held_back.csv"
        pd.DataFrame(runs, columns=list(reader.COLUMNS)).to_csv(path, index=False)
        pred = {r["id"]: r for r in accuracy.evaluate(path)["rows"]}
    print("| model | TTFT C=1 | TPOT C=1 | TTFT C=64 | TPOT C=64 | requests the KV cache holds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m, g, e in MODELS:
        res = reader.resolve(row(m, g, e, 1), presets.load_model, presets.load_hardware)
        X = {k: np.array([v], float) for k, v in features.one(res, "agg").items()}
        slots = int(serving.kv_slots(X)[0])
        full = int(serving.kv_slots({**X, "kv_held": np.array([1.0]), "state_bytes": np.array([0.0])})[0])
        held = f"{slots:,}" + (f" ({full:,} with every layer full)" if full != slots else "")
        one, many = pred[f"{m}@1"], pred[f"{m}@64"]
        print(f"| {name} | {one['pred_ttft_ms']:.0f} ms | {one['pred_tpot_ms']:.1f} ms | {many['pred_ttft_ms']:.0f} ms "
              f"| {many['pred_tpot_ms']:.1f} ms | {held} |")


if __name__ == "__main__":
    main()
