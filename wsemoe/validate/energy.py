"""Energy per token where published numbers exist: WaferLLM's decode energy of A100 clusters over a WSE-2, and
the two views of the energy model against each other at a point busy on compute.

WaferLLM (He et al., OSDI '25) reports the decode energy of A100 clusters over a WSE-2 as 0.92 (1 GPU), 2.22
(8 GPUs in one server) and 7.02 (2 × 8 GPUs). Its GEMV figures ("606× faster and 16× more energy-efficient
than an A100") put the WSE-2 at 606 / 16 ≈ 37.9× an A100's power, as its text says (~37×): its energy is
nominal power × time. The rows take that reading (validate/figures.py): energy per token = rated power × the
modelled decode time, the wafer's from the PE-level decode of validate/waferllm.py (LLaMA3-8B, 4K context,
the authors' configurations; the fastest of the three grids, as a deployment would pick) and the GPUs' from
the node-level cost model on the `a100-x8` preset at tensor parallelism over all n GPUs (bf16, batch 1, context
4,096). Powers: `rated_power_w` of cs2 (14.8 kW over 84 dies) and of a100-x8 (400 W per GPU). A 2× error in
either power moves every row by 2×, outside its band (tests/test_energy_validate.py perturbs them).

The views row: a DeepSeek-V3 prefill on an NVL72 (8,192 tokens per sequence, 4 sequences per group, fp8
weights), where the GPUs are busy on compute: bottom-up energy per token (the per-operation figures) over
top-down (rated power × the utilisation-dependent fraction). Both describe one machine, so they must agree.
The bands (validate/tolerances.py, `energy.*`) were committed before these rows first ran.
"""

from __future__ import annotations

from types import SimpleNamespace as NS

from wsemoe.config import presets
from wsemoe.cost import serving
from wsemoe.specs import BalanceSpec, MappingSpec, WorkloadSpec
from wsemoe.validate import waferllm
from wsemoe.validate.cerebras import LLAMA, dense_model
from wsemoe.validate.common import row
from wsemoe.wording import count

PUBLISHED = {1: 0.92, 8: 2.22, 16: 7.02}   # decode energy of n A100s over one WSE-2 (WaferLLM)
CONTEXT = 4096


def wafer_seconds(pe=None) -> float:
    """Seconds per decoded token on the WSE-2: the fastest of WaferLLM's three grids (32 layers each)."""
    pe = waferllm.cs2_pe() if pe is None else pe
    return min(waferllm.LAYERS * float(waferllm.decode_layer(side, pe)["seconds"]) for side in waferllm.DECODE)


def gpu_hardware(n: int, **changes) -> NS:
    """The a100-x8 preset at n GPUs: one server up to 8, two joined by InfiniBand HDR beyond (25 GB/s per GPU: a DGX
    A100's 8 compute NICs at 200 Gb/s, 200 GB/s a server, the field's unit: a scale-up domain's network)."""
    fields = presets.load_hardware("a100-x8").model_dump()
    fields.update(cols=n, scale_up_size=8 if n > 8 else None, scale_out_bw_bytes_per_s=8 * 2.5e10 if n > 8 else None,
                  scale_out_latency_s=3e-6 if n > 8 else None, **changes)
    return NS(**fields)


def gpu_seconds(n: int, **changes) -> float:
    """Seconds per decoded token of LLaMA3-8B on n A100s (TP n, batch 1, bf16, context 4,096)."""
    m = dense_model("llama-3-8b", LLAMA["llama-3.1-8b"])
    wl = WorkloadSpec(mode="decode", B=1, seq_len=CONTEXT)
    out = serving.evaluate(gpu_hardware(n, **changes), NS(**m.model_dump()), NS(**wl.model_dump()),
                           NS(**MappingSpec(tp=n).model_dump()), NS(**BalanceSpec().model_dump()))
    return float(out["tpot_s"])


def waferllm_ratios(wafer_power=None, gpu_power=None) -> dict:
    """{n: energy per token of n A100s over the WSE-2's} at the presets' rated powers (or those given, W per
    die and per GPU)."""
    cs2 = presets.load_hardware("cs2")
    per_die = cs2.rated_power_w if wafer_power is None else wafer_power
    per_gpu = presets.load_hardware("a100-x8").rated_power_w if gpu_power is None else gpu_power
    wafer = per_die * cs2.nodes * wafer_seconds()
    return {n: n * per_gpu * gpu_seconds(n) / wafer for n in PUBLISHED}


def waferllm_rows(ratios: dict | None = None) -> list[dict]:
    """One row per GPU count: model ratio over the published one."""
    ratios = waferllm_ratios() if ratios is None else ratios
    rows = []
    for n, published in PUBLISHED.items():
        v = ratios[n] / published
        rows.append(row(f"energy.waferllm:{n}", f"decode energy per token of {count(n, 'A100')} over a "
                        "WSE-2 (LLaMA3-8B; rated power × modelled time)", f"{published:g}× (WaferLLM)", v,
                        lambda x: f"{x:.2f}×", model=f"{ratios[n]:.2f}× ({v:.2f}× the published)",
                        source="WaferLLM, OSDI '25", reading="energy = nominal power × time (GEMV: 606× faster, "
                        "16× more energy-efficient)"))
    return rows


def views_point(**changes) -> dict:
    """The columns of the views row's point: DeepSeek-V3 prefill on an NVL72 (TP 8, G 4, S 8,192, fp8)."""
    hw = NS(**{**presets.load_hardware("nvl72").model_dump(), **changes})
    m = NS(**presets.load_model("deepseek-v3").model_dump())
    wl = WorkloadSpec(mode="prefill", B=1, G=4, seq_len=8192, attn_weight_format="fp8", expert_weight_format="fp8")
    return serving.evaluate(hw, m, NS(**wl.model_dump()), NS(**MappingSpec(tp=8).model_dump()),
                            NS(**BalanceSpec().model_dump()))


def views_rows(out: dict | None = None) -> list[dict]:
    """Bottom-up over top-down energy per token at a compute-busy point."""
    out = views_point() if out is None else out
    v = float(out["energy_view_ratio"])
    return [row("energy.views:nvl72-prefill", "bottom-up over top-down energy per token, NVL72, DeepSeek-V3 "
                "prefill (compute-busy)", "1× (one machine, two views)", v, lambda x: f"{x:.2f}×",
                model=f"{float(out['energy_per_token_j']):.3g} J vs {float(out['topdown_energy_per_token_j']):.3g} "
                f"J per token", source="docs/energy.md")]


def energy_rows() -> list[dict]:
    """Every energy row."""
    return waferllm_rows() + views_rows()
