"""The one place that maps the names a silicon file uses to the tool's presets.

SYSTEMS: the file's `system` to a hardware preset. MODELS: a Hugging Face id (`model_path`) to a model
preset. UNMODELLED: ids the tool knows of but cannot serve yet, each with its reason. When the model
presets carry their own Hugging Face ids (an id lookup in wsemoe.config.presets), `model_preset` is the one
function to switch over to it.
"""

from __future__ import annotations

SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200-sxm", "b300_sxm": "b300-sxm",
           "gb200": "gb200", "gb300": "gb300"}

MODELS = {
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",  # R1 is V3's architecture with other weights (same config.json)
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek-v3",
    "nvidia/DeepSeek-R1-FP4": "deepseek-v3",
    "nvidia/DeepSeek-R1-0528-FP4": "deepseek-v3",
    "nvidia/DeepSeek-V3-0324-FP4": "deepseek-v3",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b-instruct",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b-instruct",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b-instruct",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.1-70b",
    "nvidia/Llama-3.1-70B-Instruct-FP8": "llama-3.1-70b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
}

_NO_PRESET = "no model preset yet for this architecture"
UNMODELLED = {
    "openai/gpt-oss-120b": f"{_NO_PRESET} (alternating sliding-window attention, attention sinks, MXFP4 experts)",
    "moonshotai/Kimi-K2.5": f"{_NO_PRESET} (Kimi K2.5: MLA with 384 experts and a vision tower)",
    "zhipuai/GLM-5": f"{_NO_PRESET} (GLM-5: sparse DSA attention)",
    "zai-org/GLM-5": f"{_NO_PRESET} (GLM-5: sparse DSA attention)",
    "MiniMaxAI/MiniMax-M2.5": f"{_NO_PRESET} (MiniMax-M2.5)",
    "Qwen/Qwen3.5-397B-A17B": f"{_NO_PRESET} (Qwen3.5: hybrid linear/full attention layers)",
}


def model_preset(hf_id: str) -> tuple[str | None, str]:
    """(preset name, '') for a Hugging Face id the tool serves, else (None, reason)."""
    if hf_id in MODELS:
        return MODELS[hf_id], ""
    for known, reason in UNMODELLED.items():
        if hf_id == known or hf_id.startswith(known + "-") or hf_id.split("/")[-1].startswith(known.split("/")[-1]):
            return None, reason
    return None, f"unknown Hugging Face id '{hf_id}' (known: wsemoe/validate/silicon/ids.py)"
