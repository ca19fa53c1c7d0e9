"""Cerebras inference (SRAM-resident serving on CS-3 systems): published dense figures, the configurations the
model reproduces them at, and the tolerances, fixed before the serving model first ran on these rows.

Published (Cerebras, "Introducing Cerebras Inference: AI at Instant Speed", launch blog, 27 Aug 2024; The
Register's and ServeTheHome's Hot Chips 2024 coverage of the same figures):

- Llama 3.1 8B at 1,800 tokens/s per user and Llama 3.1 70B at 450 tokens/s per user, "native 16-bit weights",
  no speculative decoding (Cerebras added it in its October 2024 release);
- "20B models fit on a single CS-3 while 70B models fit on as few as four systems" (weights in SRAM, layers
  split across systems), and the 70B figure ran on four CS-3 systems;
- later (Cerebras blog, 24 Oct 2024): Llama 3.1 70B at 2,100 tokens/s per user after a software release that
  rewrote kernels and added speculative decoding, so that figure folds in an acceptance factor the blog does
  not state.

The configuration of every row: hardware `cs3` with `weight_source: sram`, 16-bit weights and activations,
batch 1 (one micro-batch of one sequence: the per-user figure), context 2,048 tokens (prompts of the launch
demos were short; the launch service served 8K contexts at most), one accepted token per step (no
speculation), the default readings of every PE-level choice. Between consecutive systems of a pipeline the
activations cross the system I/O (150 GB/s per direction, the preset's figure: 12 × 100 GbE) and a hop whose
latency Cerebras does not publish: a calibration unknown (0.5–10 µs), nominal 2 µs (one RDMA-over-Ethernet
hop through a switch), not fitted.

What is fitted (and to what), decided here before any row ran:

- `pe.program_bytes_per_pe` (SRAM a PE's program, runtime and routing state take) is **fitted to the
  capacity claim** "20B models fit on a single CS-3": the largest value, in whole 16-byte lines, for which the
  20B dense model below, at the row configuration, fits one CS-3. The 20B row is therefore fitted (it holds at
  the boundary); the 8B and 70B wafer counts are predictions of the fitted value.
- `pe.op_overhead_cycles` stays as fitted to WaferLLM's WSE-2 GEMVs (validate/waferllm.py).
- `sync_io_stall_s` (added with issue 26, after the rows above first ran): Cerebras' Oct 2024 blog says the
  launch implementation used "only a fraction of its peak bandwidth, compute, and IO capacity" and that its new
  release streamlined wafer I/O "to run asynchronously from compute". The launch rows therefore run
  `mapping.wafer_io: sync`: each system stalls for one transfer through its I/O per step (cost/wafer/serving.py),
  one on 8B's single system (the token out and back), four on 70B's (three hand-offs and the token's return). No
  source gives the stall, so it is **fitted to the 8B launch figure** (the row `cerebras.launch_io`, kind fitted)
  and the 70B launch speed is its held-out prediction (a check in its ±30% band); the ratio row checks both.
- Nothing else is fitted to the per-user speeds: they are predictions of the PE-level operators.

Tolerances, and why (validate/tolerances.py; issue 26 replaced the 0.75–4.67× band that accepted the launch
and the post-launch figures alike):

- per-user tokens/s within ±30% of each figure, at a software reading and a speculation the row names:
  launch rows (8B 1,800, 70B 450; Aug 2024) with `pe_kernels: per_primitive` (the research kernels' overhead,
  WaferLLM's, as launch software), `wafer_io: sync` (the launch software's I/O) and no speculative decoding;
  post-launch rows (70B ~2,100, Oct 2024; 405B 969, Nov 2024) with `pe_kernels: fused` and speculative decoding
  as a named workload input: 3 draft tokens, each accepted with probability 0.7, so (1 − 0.7⁴)/(1 − 0.7) = 2.53
  tokens accepted per step (Leviathan et al., ICML 2023, expected tokens per step; 0.7 the order they report for
  a same-family draft). Cerebras states neither; the figures are named inputs, fixed before the rows first ran,
  never fitted. Each step also pays the draft model's 3 tokens, Llama 3.2 1B's own one-token time on its own CS-3
  (DRAFT, below; charged since December 2026: a free draft makes the step a bound, not a prediction);
- 405B's 0.24 s to first token within ±30%, for a prompt of 1,000 tokens (the request the figure is quoted
  for is not stated);
- the ratio of the two launch speeds, 1,800 / 450 = 4.0: within ±25% ([3.0, 5.0]); it checks how per-token
  time scales with layers, width and wafers, whatever the software's absolute efficiency.
- wafers needed: exactly 1 for 8B, exactly 4 for 70B ("as few as four"), exactly 1 for the 20B model (fitted).
"""

from __future__ import annotations

import math

from types import SimpleNamespace as NS

from wsemoe.config import presets
from wsemoe.cost.wafer import regions, serving
from wsemoe.specs import BalanceSpec, MappingSpec, ModelSpec, WorkloadSpec
from wsemoe.validate.common import claims_only, context, row
from wsemoe.wording import count, number

PUBLISHED_SPEED = {"llama-3.1-8b": 1800.0, "llama-3.1-70b": 450.0}   # tokens/s per user, launch, 16-bit
PUBLISHED_WAFERS = {"llama-3.1-8b": 1, "llama-3.1-70b": 4, "dense-20b": 1}
LATER_70B_SPEED = 2100.0         # Oct 2024 release: kernels rewritten and speculative decoding added
POST_SPEED = {"llama-3.1-70b": (2100.0, "Cerebras blog, Oct 2024"),   # tokens/s per user after launch
              "llama-3.1-405b": (969.0, "Cerebras blog, Nov 2024")}
POST_TTFT = {"llama-3.1-405b": 0.24}   # seconds to first token (Cerebras blog, Nov 2024)
TTFT_PROMPT = 1000                     # tokens of the prompt the TTFT row assumes (not published)

# The software reading and speculation each group of rows names (module docstring), fixed before they ran.
SOFTWARE = {"launch": "per_primitive", "post": "fused", "draft": "fused"}
WAFER_IO = {"launch": "sync", "post": "async", "draft": "async"}   # the Oct 2024 release made the I/O asynchronous
ACCEPT_P, DRAFTS = 0.7, 3
SPECULATION = {"launch": (0, 1.0), "post": (DRAFTS, (1 - ACCEPT_P ** (DRAFTS + 1)) / (1 - ACCEPT_P)),
               "draft": (0, 1.0)}   # a draft model's own one-token step: fused kernels, no speculation

CONTEXT, BATCH, HARDWARE = 2048, 1, "cs3"

# The dense models (Hugging Face config.json shapes of meta-llama/Llama-3.1-8B and -70B; every layer dense).
LLAMA = {
    "llama-3.1-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=128, intermediate_size=14336, vocab_size=128256, published_total_params=8.03e9),
    "llama-3.1-70b": dict(hidden_size=8192, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                          head_dim=128, intermediate_size=28672, vocab_size=128256, published_total_params=70.6e9),
    "llama-3.1-405b": dict(hidden_size=16384, num_hidden_layers=126, num_attention_heads=128, num_key_value_heads=8,
                           head_dim=128, intermediate_size=53248, vocab_size=128256, published_total_params=405.9e9),
}
# Draft models for the post-launch rows' speculation (Cerebras names none), the family's two smallest: Llama 3.2 1B
# (Hugging Face config.json of meta-llama/Llama-3.2-1B: width 2048, 16 layers, 32 query and 8 KV heads of 64, FFN
# 8,192, tied embeddings; 1.24B parameters; released Sep 2024, before both post-launch figures) and Llama 3.1 8B.
# The check rows charge the 1B draft: a draft's tokens come before the target verifies them, so a step without
# them is a bound, not a prediction; the 1B is the family's one draft far cheaper than either target (under a
# tenth of 70B's step, the regime speculative decoding is designed for: Leviathan et al., ICML 2023, cost
# coefficient c << 1), and the 0.7 acceptance is theirs for a small same-family draft. The context rows
# `cerebras.draft:*` show no draft charged (the bound) and the 8B draft.
DRAFTS_SHAPES = {"llama-3.2-1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                      num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=128256,
                                      tie_word_embeddings=True, published_total_params=1.24e9)}
DRAFT = "llama-3.2-1b"                       # the check rows' draft
DRAFT_MODELS = (DRAFT, "llama-3.1-8b")
# A 20B dense model of the same family (no published model: the claim names a size, "20B models"):
# 48 layers of width 6144, 48 query and 8 KV heads, FFN 16,000: 19.96B parameters.
DENSE_20B = dict(hidden_size=6144, num_hidden_layers=48, num_attention_heads=48, num_key_value_heads=8, head_dim=128,
                 intermediate_size=16000, vocab_size=128256)



def dense_model(name: str, shape: dict) -> ModelSpec:
    """A dense model as the spec describes one: every layer dense (first_k_dense_replace = L)."""
    return ModelSpec(name=name, num_experts=1, num_experts_per_tok=1, moe_intermediate_size=shape["intermediate_size"],
                     first_k_dense_replace=shape["num_hidden_layers"], **shape)


def models() -> dict:
    """The Llama models and the 20B one of the rows."""
    out = {name: dense_model(name, shape) for name, shape in {**LLAMA, **DRAFTS_SHAPES}.items()}
    out["dense-20b"] = dense_model("dense-20b", DENSE_20B)
    return out


def hardware(**changes):
    """The row hardware: cs3 serving from SRAM (with `changes`, e.g. pipeline_wafers or PE facts)."""
    fields = presets.load_hardware(HARDWARE).model_dump()
    pe = {**fields.pop("pe"), **changes.pop("pe", {})}
    return {**fields, "weight_source": "sram", "pe": pe, **changes}


def namespaces(model: ModelSpec, era: str = "launch", prompt=None, draft_s: float = 0.0, **hw_changes):
    """(hardware, model, workload, mapping, balance) namespaces of one row's point: the software reading and
    the speculation of `era` (SOFTWARE, SPECULATION), a prompt of `prompt` tokens when given (TTFT), the draft
    model's `draft_s` seconds per draft token (0: not charged, as the rows)."""
    drafts, accepted = SPECULATION[era]
    wl = WorkloadSpec(mode="decode", B=BATCH, seq_len=CONTEXT, draft_tokens=drafts, accepted_tokens_per_step=accepted,
                      prompt_len=prompt, draft_token_s=draft_s if drafts else 0.0)
    return (NS(**hardware(**hw_changes)), NS(**model.model_dump()), NS(**wl.model_dump()),
            NS(**MappingSpec(pe_kernels=SOFTWARE[era], wafer_io=WAFER_IO[era]).model_dump()),
            NS(**BalanceSpec().model_dump()))


def wafers_needed(model: ModelSpec, program_bytes=None) -> float:
    """Wafers the model needs at the row configuration (program bytes per PE as given, else the preset's)."""
    hw, m, wl, _, _ = namespaces(model, **({"pe": {"program_bytes_per_pe": program_bytes}} if program_bytes is not None else {}))
    return float(regions.fewest_wafers(serving.pe_facts(hw), m, wl))


def fit_program_bytes() -> float:
    """The largest program bytes per PE (whole 16-byte lines) at which the 20B dense model fits one CS-3."""
    model = models()["dense-20b"]
    lo, hi = 0, int(presets.load_hardware(HARDWARE).pe.sram_per_pe_bytes) // 16
    if wafers_needed(model, 0.0) != 1.0:
        return float("nan")
    while hi - lo > 1:   # bisection over 16-byte lines: fits at lo, not at hi
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if wafers_needed(model, 16.0 * mid) == 1.0 else (lo, mid)
    return 16.0 * lo


def speed(model: ModelSpec, wafers, era: str = "launch", column: str = "tokens_per_s_per_user", prompt=None,
          draft_s: float = 0.0, **hw_changes) -> float:
    """Tokens/s per user (or another column) of one sequence on `wafers` CS-3 systems (None: the fewest that
    hold it) at the row configuration of `era` (`draft_s`: the draft model's seconds per draft token)."""
    hw, m, wl, mp, bal = namespaces(model, era, prompt, draft_s,
                                    **({} if wafers is None else {"pipeline_wafers": wafers}), **hw_changes)
    out = serving.evaluate(hw, m, wl, mp, bal)
    if str(out["bound"]) == serving.BOUNDS[-1]:   # what does not fit is bound by SRAM: the published service ran,
        # so its row fails (as validate/gpu's workers)
        return math.nan
    return float(out[column])


FIT_IO = "llama-3.1-8b"   # the launch figure the synchronous I/O stall is fitted to (one system: one transfer a step)


def fit_sync_io(ms: dict) -> float:
    """σ, the stall of one synchronous wafer I/O transfer, that makes the fitted launch row's step the published
    per-user time (a step pays one transfer per system: cost/wafer/serving.py)."""
    return launch_fit(ms, FIT_IO)[0]


def launch_rows(ms: dict, src: str) -> tuple[list[dict], dict]:
    """The launch per-user speeds (8B fitted: the I/O stall; 70B its held-out prediction) and their tokens/s."""
    rows, tps = [], {name: speed(ms[name], PUBLISHED_WAFERS[name]) for name in PUBLISHED_SPEED}
    for name, published in PUBLISHED_SPEED.items():
        ratio, fitted = tps[name] / published, name == FIT_IO
        rid = "cerebras.launch_io:" + name if fitted else "cerebras.speed:" + name
        what = "fitted: sync_io_stall_s" if fitted else "prediction of the stall fitted on 8B"
        rows.append(row(rid, f"{name} per-user decode on {PUBLISHED_WAFERS[name]} CS-3, batch 1, 16-bit, "
                        f"per-primitive kernels, synchronous wafer I/O, no speculation (tokens/s; {what})",
                        f"{published:,.0f}", ratio, kind="fitted" if fitted else "check",
                        model=f"{tps[name]:,.0f} ({ratio:.2f}×)", source=src,
                        reading="pe_kernels=per_primitive; wafer_io=sync; no speculation"))
    return rows, tps


def draft_time(ms: dict, draft: str = DRAFT, **hw_changes) -> float:
    """Seconds a draft model takes per draft token: the inverse of its own one-token speed per user on its own
    fewest CS-3, fused kernels, no speculation (cost/wafer/serving.py pays draft_tokens of them each step)."""
    return 1.0 / speed(ms[draft], None, "draft", **hw_changes)


def post_rows(ms: dict) -> list[dict]:
    """The post-launch per-user speeds (the 1B draft's time charged) and 405B's time to first token, at the fused
    software reading with the named speculation (module docstring)."""
    rows, (drafts, accepted), tau = [], SPECULATION["post"], draft_time(ms)
    spec = f"{drafts} draft tokens, {accepted:.2f} accepted per step, {DRAFT} draft ({1e6 * tau:.0f} µs a token)"
    for name, (published, src) in POST_SPEED.items():
        wafers = PUBLISHED_WAFERS.get(name)
        got = speed(ms[name], wafers, "post", draft_s=tau)
        where = f"{wafers} CS-3" if wafers else f"the fewest CS-3 that hold it ({wafers_needed(ms[name]):g})"
        rows.append(row(f"cerebras.post:{name}", f"{name} per-user decode on {where}, batch 1, 16-bit, fused kernels, "
                        f"speculation: {spec} (tokens/s; prediction)", f"{published:,.0f}", got / published,
                        model=f"{got:,.0f} ({got / published:.2f}×)", source=src,
                        reading=f"pe_kernels=fused; speculation {drafts} drafts, {accepted:.2f} accepted; "
                                f"draft_token_s {DRAFT}'s"))
    rows += draft_rows(ms)
    for name, published in POST_TTFT.items():
        got = speed(ms[name], None, "post", "ttft_s", TTFT_PROMPT)
        rows.append(row(f"cerebras.ttft:{name}", f"{name} time to first token, one {TTFT_PROMPT:,}-token prompt on the "
                        "fewest CS-3 that hold it (s; prediction)", f"{published:.2f} s", got / published,
                        model=f"{got:.3f} s ({got / published:.2f}×)", source="Cerebras blog, Nov 2024",
                        reading="pe_kernels=fused"))
    return rows


def draft_rows(ms: dict) -> list[dict]:
    """Context per post-launch row: its speed with no draft time charged (a bound on the step) and with the other
    draft's (each draft on its own fewest CS-3 at the fused reading without speculation)."""
    if claims_only():
        return []
    drafts, out = SPECULATION["post"][0], []
    tau = {"no draft time (a bound)": 0.0, **{f"{d} draft": draft_time(ms, d) for d in DRAFT_MODELS if d != DRAFT}}
    for name, (published, src) in POST_SPEED.items():
        got = {d: speed(ms[name], PUBLISHED_WAFERS.get(name), "post", draft_s=t) for d, t in tau.items()}
        text = "; ".join(f"{d}{f' ({1e6 * tau[d]:.0f} µs a token)' if tau[d] else ''}: {v:,.0f} ({v / published:.2f}×)"
                         for d, v in got.items())
        out.append(context(f"cerebras.draft:{name}", f"{name} post-launch per-user speed under the other draft "
                           f"choices ({drafts} drafts a step; the check row charges {DRAFT}'s)",
                           f"{published:,.0f}", text, "context: Cerebras names no draft model", source=src,
                           reading="pe_kernels=fused; draft_token_s"))
    return out


# What the launch check assumes beside the stall, moved across its range (the inter-system hop's calibration range
# in analysis/uncertainty/data/unknowns.yaml; the inter_wafer_link reading's one 100 GbE port).
LAUNCH_MOVES = (("inter-system hop 0.5 µs", {"inter_wafer_hop_latency_s": 0.5e-6}),
                ("inter-system hop 10 µs", {"inter_wafer_hop_latency_s": 1.0e-5}),
                ("one 100 GbE port between systems", {"inter_wafer_link_bw_bytes_per_s": 1.25e10}))


def launch_fit(ms: dict, fit: str, **hw) -> tuple[float, float]:
    """(σ fitted to the launch figure of `fit`, the other launch row's tokens/s over its figure at that σ)."""
    other = next(n for n in PUBLISHED_SPEED if n != fit)
    free = {n: speed(ms[n], PUBLISHED_WAFERS[n], "launch", "step_latency_s", sync_io_stall_s=0.0, **hw)
            for n in PUBLISHED_SPEED}
    sigma = (1.0 / PUBLISHED_SPEED[fit] - free[fit]) / PUBLISHED_WAFERS[fit]
    return sigma, 1.0 / (free[other] + PUBLISHED_WAFERS[other] * sigma) / PUBLISHED_SPEED[other]


def launch_move_rows(ms: dict) -> list[dict]:
    """Context: how far the held-out launch check moves with what it assumes beside the stall, and with the fit's
    direction (fitted to 70B, 8B predicted)."""
    parts = [f"{what}: 70B {launch_fit(ms, FIT_IO, **hw)[1]:.2f}×" for what, hw in LAUNCH_MOVES]
    sigma, eight = launch_fit(ms, "llama-3.1-70b")
    parts.append(f"fitted to 70B instead ({1e6 * sigma:.0f} µs): 8B {eight:.2f}×")
    return [context("cerebras.launch_io.moves", "the held-out launch check (70B at the stall fitted to 8B) with "
                    "its other assumptions moved, each refitting the stall", "450 tokens/s (70B)", "; ".join(parts),
                    "context: how far the check moves (not a check)", reading="pe_kernels=per_primitive; wafer_io=sync")]


def fabric_rows(ms: dict) -> list[dict]:
    """Context: the speed rows under the other option of the `wse3_hops` reading (WSE-3 hop, turn and relay cycles
    as reported for WSE-3, not as WSE-2's), the launch stall refitted to the 8B figure under it."""
    from wsemoe.config import readings as registry

    option = registry.load()["wse3_hops"].options["characterised"].set
    pe = {path.rsplit(".", 1)[-1]: value for path, value in option.items()}
    sigma, launch = launch_fit(ms, FIT_IO, pe=pe)
    got = {"70B launch": launch,
           **{f"{name[10:].upper()} post": speed(ms[name], PUBLISHED_WAFERS.get(name), "post", pe=pe,
                                                  draft_s=draft_time(ms, pe=pe)) / published
              for name, (published, _) in POST_SPEED.items()}}
    cycles = ", ".join(f"{k} {v:g}" for k, v in pe.items())
    text = f"launch stall refitted {1e6 * sigma:.0f} µs; " + "; ".join(f"{k} {v:.2f}×" for k, v in got.items())
    return [context("cerebras.reading:wse3_hops", f"the speed rows at the wse3_hops reading 'characterised' ({cycles}; "
                    "default as_wse2: 1, 0, 5)", "the rows' figures", text, "context: how far the rows move with "
                    "the fabric's unpublished cycles (not a check)", reading="wse3_hops=characterised")]


def cerebras_rows() -> list[dict]:
    """Every Cerebras inference row (module docstring): wafers needed, per-user speeds, their ratio, context."""
    ms, rows, src = models(), [], "Cerebras launch blog, Aug 2024"
    fitted, preset = fit_program_bytes(), presets.load_hardware(HARDWARE).pe.program_bytes_per_pe
    for name, published in PUBLISHED_WAFERS.items():
        need = wafers_needed(ms[name])
        what = "fitted: program bytes per PE" if name == "dense-20b" else "prediction"
        rows.append(row(f"cerebras.wafers:{name}", f"{name} at 16 bits needs {count(published, 'CS-3 system')} "
                        f"(weights and a {number(CONTEXT)}-token cache in SRAM; {what})", f"{published}", need - published,
                        lambda x: f"{x:+g}", kind="fitted" if name == "dense-20b" else "check",
                        model=f"{need:g}", source=src))
    launch, tps = launch_rows(ms, src)
    rows += launch
    pub = PUBLISHED_SPEED["llama-3.1-8b"] / PUBLISHED_SPEED["llama-3.1-70b"]
    got = tps["llama-3.1-8b"] / tps["llama-3.1-70b"]
    rows.append(row("cerebras.ratio", "per-user speed of 8B over 70B (layers, width and wafers; software "
                    "efficiency cancels)", f"{pub:.2f} (1,800 / 450)", got / pub - 1, lambda x: f"{100 * x:+.0f}%",
                    model=f"{got:.2f} ({100 * (got / pub - 1):+.0f}%)", source=src))
    rows += post_rows(ms)
    if claims_only():
        return rows
    one = speed(ms["llama-3.1-70b"], PUBLISHED_WAFERS["llama-3.1-70b"], "draft")
    rows.append(context("cerebras.speculation", "speculative decoding's acceptance the Oct 2024 70B figure implies "
                        "over the model's one-token step at the post-launch software (fused, asynchronous I/O; "
                        "2,100 / model)", f"{LATER_70B_SPEED:,.0f} tokens/s",
                        f"{LATER_70B_SPEED / one:.2f} tokens per step (model {one:,.0f} tokens/s)",
                        "context: not a check", source="Cerebras blog, Oct 2024"))
    rows += launch_move_rows(ms) + fabric_rows(ms)
    sigma = presets.load_hardware(HARDWARE).sync_io_stall_s
    rows.append(context("cerebras.sync_io_stall", "launch software's synchronous wafer I/O stall per transfer, fitted "
                        "to the 8B launch figure (1,800 tokens/s; one transfer a step on one system)", "—",
                        f"fit {1e6 * fit_sync_io(ms):.1f} µs; preset {1e6 * sigma:.0f} µs", "context: the fitted "
                        "I/O constant", source="Cerebras blog, Oct 2024 (the launch I/O was synchronous)"))
    rows.append(context("cerebras.program_bytes", "program bytes per PE fitted to '20B models fit on a single CS-3'",
                        "—", f"fit {fitted:,.0f} B; preset {preset:,.0f} B", "context: the fitted capacity constant",
                        source=src))
    return rows
