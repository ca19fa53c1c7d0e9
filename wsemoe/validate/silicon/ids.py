"""The one place that maps the names a silicon file uses to the tool's presets.

SYSTEMS: the file's `system` to a hardware preset. A model (`model_path`, a Hugging Face id) resolves through
the presets' own ids (`hf_id`, `hf_aliases`); MODELS holds only the ids a silicon file uses that no preset
lists. An id neither knows is reported with its reason, never dropped.
"""

from __future__ import annotations

from wsemoe.config import presets

SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200-sxm", "b300_sxm": "b300-sxm",
           "gb200": "gb200", "gb300": "gb300"}

# Ids a silicon file uses that no preset lists among its own (`hf_id`, `hf_aliases`): the preset serving them.
MODELS = {
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.1-70b",   # Llama 3.1 70B's shape, other weights
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "nvidia/Llama-3.1-70B-Instruct-FP8": "llama-3.1-70b",
}

# Format suffixes of re-published checkpoints: the weights' format changes (the row's quant columns say how),
# the architecture does not.
QUANT_SUFFIXES = ("-NVFP4", "-MXFP4", "-FP4", "-FP8", "-INT4", "-AWQ")


def model_preset(hf_id: str) -> tuple[str | None, str]:
    """(preset name, '') for a Hugging Face id the tool serves, else (None, reason)."""
    name = presets.by_hf_id(hf_id) or MODELS.get(hf_id)
    if not name and isinstance(hf_id, str) and "/" in hf_id:
        # a quantized re-publication of a listed model (another organisation, a format suffix): same shape
        repo = hf_id.split("/")[-1]
        suffix = next((s for s in QUANT_SUFFIXES if repo.upper().endswith(s)), "")
        name = presets.by_hf_repo(repo) or (suffix and presets.by_hf_repo(repo[: -len(suffix)]))
    if name:
        return name, ""
    return None, (f"no model preset lists the Hugging Face id '{hf_id}' (presets carry hf_id/hf_aliases; "
                  "wsemoe presets lists them)")
