"""Vision-language wrappers: configs whose language model is their nested `text_config` (llama4, qwen3_5_moe,
kimi_k25). The vision tower (`vision_config`, the media token ids) is not modelled: Kimi K2.5's published 1T total
and 32B active count its language model. One reader of the language model for the model importers (hf.py) and the
checkpoint formats (hf_quant.py) alike.
"""

from __future__ import annotations

WRAPPED = ("llama4", "qwen3_5_moe", "kimi_k25")
# Keys a wrapper may state at its top level for its language model (released wrappers put `tie_word_embeddings`
# and a quantized checkpoint's `quantization_config` there): taken where `text_config` states none.
HANDED_DOWN = ("tie_word_embeddings", "quantization_config")


def language_model(r, mtype: str | None):
    """The reader of the language model: `r` itself, or for a wrapper type a reader of the same kind of its
    `text_config`, with the HANDED_DOWN keys the top level states and `text_config` does not; the two stating
    different values is refused (transformers releases differ on which one a wrapper's language model obeys)."""
    if mtype not in WRAPPED:
        return r
    text = r.data.get("text_config")
    if not isinstance(text, dict):
        raise r.fail("text_config", f"{mtype} needs its language model's config in 'text_config'")
    text = dict(text)
    for key in HANDED_DOWN:
        if r.data.get(key) is None:
            continue
        if text.get(key) is None:
            text[key] = r.data[key]
        elif text[key] != r.data[key]:
            raise r.fail(key, f"'{key}' at the top level ({str(r.data[key]):.40}) differs from text_config's "
                              f"({str(text[key]):.40}); state it once, in text_config")
    return type(r)(text, f"{r.where} -> text_config")
