"""Every tolerance of `wsemoe validate`, one band per row, each written before the model ran on its row.

A band bounds the row's value (`lo ≤ value ≤ hi`, open at its finite ends when `strict`); `why` says how it
follows from the published wording. A band is changed, or one added, in a commit of its own made before the
model is run on that row, so the repository's history shows that no band was set to fit the model's value
(docs/sources.md, "Validation").
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Band:
    """lo ≤ value ≤ hi (strict: lo < value < hi at the finite ends); `log`: factors, distances as ratios."""

    lo: float | None = None
    hi: float | None = None
    why: str = ""
    strict: bool = False
    log: bool = False

    def holds(self, value: float) -> bool:
        """Whether a finite value lies in the band (NaN never does)."""
        v = float(value)
        if not math.isfinite(v):
            return False
        below = self.lo is not None and (v <= self.lo if self.strict else v < self.lo)
        above = self.hi is not None and (v >= self.hi if self.strict else v > self.hi)
        return not (below or above)

    def outside(self, value: float) -> tuple[str, float] | None:
        """('above', edge) or ('below', edge) when the value is outside the band, None inside."""
        if self.holds(value):
            return None
        if self.hi is not None and (not math.isfinite(value) or value >= self.hi):
            return "above", self.hi
        return "below", self.lo

    def outside_value(self, edge_offset: float = 1e-9) -> list[float]:
        """Values just outside each finite end (for tests that every band can fail)."""
        out = []
        for edge, sign in ((self.lo, -1.0), (self.hi, 1.0)):
            if edge is not None:
                out.append(edge * (1 + sign * 1e-6) if self.log else edge + sign * max(edge_offset, 1e-6 * abs(edge)))
        return out


FACTOR = 1.4  # a published slowdown or speedup factor is reproduced within ×/÷ 1.4

PARAM_TOTAL = 0.01  # published total parameter counts (three significant digits): ±1%

BANDS: dict[str, Band] = {
    # ---- Batch Tiling on Attention (Soboleva et al.; Cerebras' BTA documentation) ----
    "bta.falls.experts": Band(hi=1.0, strict=True, why="'throughput degradation as sparsity increases': every "
                              "step to a sparser point lowers uniform batching's tokens/s (largest step ratio < 1)"),
    "bta.falls.topk": Band(hi=1.0, strict=True, why="as for the expert-count sweep"),
    "bta.flat.experts": Band(hi=1.2, log=True, why="'throughput remains stable ... across all configurations': "
                             "BTA's max/min tokens/s at most 1.2"),
    "bta.flat.topk": Band(hi=1.2, log=True, why="as for the expert-count sweep"),
    "bta.docs.experts": Band(2.0 / FACTOR, 2.0 * FACTOR, log=True,
                             why="'128 experts: up to 53% slower (2x slowdown)': a published factor within ×/÷ 1.4"),
    "bta.docs.topk": Band(7.0 / FACTOR, 7.0 * FACTOR, log=True,
                          why="'Low top_k (high sparsity): up to 86% slower (7x slowdown)': within ×/÷ 1.4"),
    "bta.speedup": Band(4.0, 8.0, log=True, why="'up to 5× performance improvements at higher sparsity levels': the "
                        "speedup at the sparsest point of a sweep the abstract does not publish, 4–8×"),
    "bta.edges": Band(hi=1.0, strict=True, why="property: at BTA's reading (the default), each side's best B and G "
                      "lie below the largest value the sweep tries (largest best value over the axis maximum < 1); "
                      "the headline's range names the readings under which one does not"),
    # ---- MoEntwine on one wafer (ER vs block; NI-Balancer) ----
    "mapping.a2a": Band(lo=0.0, strict=True, why="ER-Mapping 'balance[s] communication pressure': its all-to-all "
                        "shorter than the block mapping's at every setting (smallest cut > 0)"),
    "mapping.allreduce": Band(1.5, 3.0, log=True, why="property: ER ring neighbours 2 hops apart on 2×2 full token "
                              "domains, so the all-reduce about 2× the block mapping's"),
    "mapping.comm.large": Band(lo=0.0, strict=True, why="ER lowers the MoE communication it names (all-reduce, "
                               "dispatch, combine) at every setting"),
    "mapping.comm.small": Band(lo=0.0, strict=True, why="as at the larger batch"),
    "mapping.topk": Band(lo=0.0, strict=True, why="the gain grows with top-k (all-to-all volume k× the all-reduce's): "
                         "cut at top-k 8 minus cut at top-k 2 > 0 everywhere"),
    "mapping.ftd": Band(0.0, 0.0, why="property: under ER dispatch stays inside disjoint full token domains: exactly 0"),
    "balance.skew": Band(1.7, 2.5, log=True, why="property: the Zipf exponent was chosen to give the paper's ≈2×"),
    "balance.replicate.compute": Band(0.40, 0.65, why="property: with the busiest die fitted to 2×, replication's "
                                      "cut is about 1 − 1/2; −54% within ±(14, 11) points"),
    "balance.replicate.comm": Band(0.10, 0.35, why="'22% improvement in MoE communication': −22% within ±12–13 points"),
    "balance.stw": Band(1.5, 2.5, why="fitted: the churn is chosen so that stop-the-world costs 2 iterations in 10; "
                        "checks the affine fit"),
    "balance.hidden": Band(lo=0.90, why="NI-Balancer hides the migration on cold links: at least 90% hidden at every "
                           "decode batch, 1–256 tokens per device"),
    # ---- MoEntwine at its scale (4 wafers, HER, NVL72) ----
    "scale.her": Band(0.47, 0.77, why="'communication reduction up to 62%': one maximum of an unpublished sweep, "
                      "±15 points"),
    "scale.her.wafer": Band(0.0, 0.0, why="property: HER takes each token from the expert's own wafer: exactly 0"),
    "scale.ni.compute.hot": Band(0.40, 0.65, why="'54% ... improvement in MoE computation': −54% within −40…−65%"),
    "scale.ni.compute.fill": Band(0.40, 0.65, why="property: filling every spare slot evens the dies out, so the cut "
                                  "is about 1 − 1/(the fitted 2×)"),
    "scale.ni.comm.hot": Band(0.10, 0.35, why="'22% improvement in MoE communication': within −10…−35%"),
    "scale.ni.comm.fill": Band(0.10, 0.35, why="as with hot replicas"),
    "scale.hidden": Band(lo=0.90, why="NI-Balancer's migration rides the cold links of the communication phases: at "
                         "least 90% hidden in those windows at every load, 1–64 tokens per device"),
    "scale.nvl72.avg": Band(0.24, 0.54, why="'an average 39% higher per-device MoE performance' than NVL72 (abstract), "
                            "reproduced at stated operating points: the mean of the per-load ratios of the whole "
                            "decode step (each system tuned) over 1, 2, 4, 8, 16 and 32 tokens per device, the "
                            "memory-bound decode regime in which the abstract's mechanism acts (EP 'to alleviate "
                            "memory bottleneck', the gain 'owing to its scalability to larger EP'), at the default "
                            "readings, one fixed latency on both systems; +39% within ±15 points (one average of a "
                            "sweep the paper does not publish, as scale.her's one maximum)"),
    # ---- WaferLLM (He et al., OSDI '25) ----
    "waferllm.gemv": Band(-0.10, 0.10, why="fitted: one constant for two points leaves one residual each, ±10%"),
    "waferllm.decode": Band(-0.25, 0.25, why="a prediction over 28 kernels per layer, ±25%"),
    "waferllm.rising": Band(hi=1.0, strict=True, why="'grows': per-token latency rises with the grid side (largest "
                            "step ratio of the inverse < 1)"),
    "waferllm.growth": Band(1.10, 1.35, log=True, why="Table 4: 1.204× from 420² to 660², 1.10–1.35×"),
    "waferllm.binds": Band(lo=1.0, strict=True, why="§7.3: communication is the primary bottleneck: fabric cycles over "
                           "local compute cycles > 1"),
    "waferllm.meshgemm": Band(lo=0.70, why="'over 70% computational efficiency'"),
    "waferllm.cannon": Band(hi=0.50, strict=True, why="'falling below 50% with 720×720 cores'"),
    # ---- Cerebras inference, SRAM-resident serving on CS-3 (launch blog, Aug 2024; validate/cerebras.py) ----
    "cerebras.wafers": Band(0.0, 0.0, why="'20B models fit on a single CS-3 while 70B models fit on as few as four "
                            "systems': wafers needed less the published count, exactly 0 (the 20B row is fitted)"),
    "cerebras.speed": Band(0.70, 1.30, why="per-user tokens/s over each launch figure (8B 1,800, 70B 450; Aug 2024), "
                           "±30%, at the software reading the row names (launch: the research kernels' per-primitive "
                           "overhead) and no speculative decoding (the launch service had none)"),
    "cerebras.launch_io": Band(0.98, 1.02, why="fitted: launch software's synchronous wafer I/O (cs3 preset "
                               "sync_io_stall_s, fitted to the 8B launch figure, 1,800 tokens/s, at the launch rows' "
                               "configuration) reproduces that figure within ±2% (the preset's value is rounded to "
                               "whole microseconds); beyond it the preset no longer carries its own fit"),
    "cerebras.ratio": Band(-0.25, 0.25, why="8B over 70B per-user speed against the published 1,800 / 450 = 4.0, ±25%: "
                           "how per-token time scales with layers, width and wafers, whatever the software's "
                           "absolute efficiency"),
    # ---- serving (issue 26): wafer serving rows that can fail; written before the rows below first ran ----
    "cerebras.post": Band(0.70, 1.30, why="per-user tokens/s over each post-launch figure (70B ~2,100, Oct 2024; 405B "
                          "969, Nov 2024), ±30%, at the software reading the row names (fused operator chains) and "
                          "the speculative decoding it names as a workload input (draft tokens, accepted per step)"),
    "cerebras.ttft": Band(0.70, 1.30, why="time to first token over the published 0.24 s (405B, Nov 2024), ±30%, at "
                          "the prompt length the row names"),
    "waferllm.offset": Band(-0.03, 0.03, why="the decode rows' offset from Table 4 is recorded (+22%, the model "
                            "faster); each grid side's offset less the recorded one within ±3 points, so the offset "
                            "cannot drift unseen"),
    "waferllm.offset.growth": Band(-0.02, 0.02, why="the offset's change from 420² to 660² PEs within ±2 points: "
                                   "the model's latency grows with the grid side as Table 4's does"),
    # --- the node-level GPU baseline against published GPU decode (issue 28; validate/gpu.py), written before the
    # rows first ran ---
    "gpu.node": Band(0.67, 1.5, log=True, why="output tokens/s per GPU of the node-level model (the comparisons' "
                     "GPU baseline) over a published DeepSeek-V3 decode worker's, at its layout, load and context: "
                     "within ×[0.67, 1.5], the band the fitted serving stack's checks of the same points keep"),
    "gpu.prefill": Band(0.67, 1.5, log=True, why="input tokens/s per GPU of the node-level model over a published "
                        "DeepSeek-V3 prefill worker's (LMSYS blog, May 2025, Part I: 32 H100, EP 32, attention DP, "
                        "16,384 tokens per GPU of 4,096-token prompts), at its layout and load: within ×[0.67, 1.5], "
                        "the band of the published decode workers (gpu.node); prefill at that load is bound by the "
                        "matmuls, so a 2× error in the peak or its share falls outside"),
    # --- the node model's expert-parallel dispatch and combine on NVL72 against measured kernels (issue 26: rows
    # that fail when the GPU baseline's link or per-call figures are wrong by 2x), written before the rows first ran ---
    "gpu.a2a": Band(0.70, 1.30, why="one dispatch or combine call of the node-level model on nvl72 (seconds per call) "
                    "over the mean of the measured dispatch and combine kernels at the same EP size and tokens per "
                    "rank (TensorRT-LLM tech blog 18, GB200 NVL72, DeepSeek-V3 profile, BF16): ±30%, the band of the "
                    "wafer speed rows; a single kernel whose volume and fixed terms the model names directly"),
    "gpu.a2a.fixed": Band(0.95, 1.05, why="fitted: nvl72's alltoall_latency_s (26 µs) was taken from the same "
                          "tables' one-token calls (mean 26.4 µs over EP 8-64); the model's one-token call over that "
                          "mean within ±5% (the preset is rounded to whole microseconds); beyond it the preset no "
                          "longer carries its own source"),
    "gpu.a2a.quant": Band(0.70, 1.30, why="one dispatch call of the node-level model on nvl72 with the token quantized "
                          "before it is sent (FP8 or FP4 experts; seconds per call) over the measured post-quant "
                          "dispatch at the same EP size and tokens per rank (TensorRT-LLM tech blog 18, MXFP8 and "
                          "NVFP4): ±30%, as the 16-bit calls' rows"),
    # --- the node model's expert-parallel dispatch and combine over InfiniBand against measured kernels (issue 26),
    # written before the rows first ran ---
    "gpu.ib": Band(0.70, 1.30, why="one dispatch (FP8 out) or combine (16-bit back) call of the node-level model on "
                   "h100-sxm servers joined by InfiniBand (seconds per call) over DeepEP's measured low-latency "
                   "kernels at the same EP size and 128 tokens per GPU (V1 documentation: H800, one CX7 400 Gb/s NIC "
                   "per GPU, as the H100 servers have): ±30%, as the NVLink kernels' rows"),
    # --- the node model's tensor-parallel all-reduce inside one NVLink server against nccl-tests (issue 26: rows
    # that fail when the GPU baseline's NVLink port is wrong by 2x), written before the rows first ran ---
    "gpu.allreduce": Band(0.70, 1.30, why="one all-reduce of the node-level model over h100-sxm's 8 GPUs (seconds per "
                          "call) over nccl-tests' measured all_reduce_perf time of the same message on 8 H100 SXM "
                          "GPUs, under the algorithm the measurement names (NCCL_ALGO Ring: the model's ring, no "
                          "in-switch reduction; NVLS: the preset's in-switch reduction): ±30%, as the NVLink "
                          "kernels' rows (gpu.a2a); at gigabyte messages the per-call costs are under 0.2% of the "
                          "time, so the row reads the port"),
    # --- the node model's small all-reduce against the measurement its per-call cost was taken from (issue 26: a
    # row that fails when the GPU baseline's all-reduce call or switch traversal is wrong by 2x), written before the
    # row first ran ---
    "gpu.allreduce.fixed": Band(0.95, 1.05, why="fitted: h100-sxm's collective_latency_s (4.5 µs) was taken from "
                                "nccl-tests' all_reduce_perf on 2 H100 SXM GPUs of an HGX node, NVLink SHARP, CUDA "
                                "graphs, 128 B (5.56 µs, NVIDIA/nccl issue #1259) less the two 0.5 µs switch "
                                "traversals the model charges itself (hop_latency_s); the model's latency-bound "
                                "all-reduce on 2 GPUs with the in-switch reduction over that time within ±5% (the "
                                "table's 128-512 B points span 5.56-5.99 µs out of place and in place, and the preset "
                                "is rounded to 0.1 µs), as gpu.a2a.fixed; beyond it the preset no longer carries its "
                                "own source"),
    # --- the node model's matmul peaks against measured GEMM speed-ups between formats (issue 26: a row that fails
    # when the GPU baseline's FP8 or FP4 peak is wrong by 2x), written before the row first ran ---
    "gpu.gemm": Band(0.70, 1.30, why="the node-level model's speed-up of the same compute-bound matmuls from one "
                     "format to a narrower one (its time in the wider over its time in the narrower: the ratio of the "
                     "preset's two peaks, the shared matmul_efficiency cancelling) over a published measured speed-up "
                     "of large cuBLAS matmuls between the same formats on the same GPU generation: ±30%, as the kernel "
                     "rows (gpu.a2a, gpu.allreduce, gpu.hbm); a 2x error in either peak moves the ratio 2x"),
    # --- the node model's HBM read against a measured memory-bound kernel (issue 26: a row that fails when the GPU
    # baseline's HBM bandwidth is wrong by 2x), written before the row first ran ---
    "gpu.hbm": Band(0.70, 1.30, why="the node-level model's seconds to read DeepSeek-V3 decode sequences' MLA KV cache "
                    "on h100-sxm (what its attention HBM term adds per layer for the added context) over the same "
                    "bytes at the bandwidth FlashMLA's dense decoding kernel measures in its memory-bound "
                    "configuration on H800 SXM5, whose HBM3 is the H100 SXM5's (80 GB, 3.35 TB/s): ±30%, as the "
                    "kernel rows (gpu.a2a, gpu.allreduce)"),
    # --- the measured-serving model on the given measured runs with the shipped stacks (issue 28's targets, as
    # rows of `validate`; validate/silicon/rows.py), written before the rows first ran ---
    "silicon.ttft": Band(hi=0.35, why="MAPE of TTFT over every given configuration at most 35% (issue 28)"),
    "silicon.tpot": Band(hi=0.20, why="MAPE of TPOT over every given configuration at most 20% (issue 28)"),
    "silicon.group.ttft": Band(hi=0.40, why="no system × model group's TTFT MAPE above 40% (issue 28)"),
    "silicon.group.tpot": Band(hi=0.40, why="no system × model group's TPOT MAPE above 40% (issue 28)"),
    "silicon.bias.ttft": Band(1 / 1.35, 1.35, log=True, why="a system's median predicted/measured TTFT within "
                              "×1.35 either way: a system biased by more than the overall target (35%) cannot meet "
                              "it; the stacks are shared across systems, so a bias is the system's own figures'"),
    "silicon.bias.tpot": Band(1 / 1.2, 1.2, log=True, why="a system's median predicted/measured TPOT within ×1.2 "
                              "either way: as for TTFT, at the TPOT target (20%)"),
    "silicon.published": Band(0.67, 1.5, log=True, why="output tokens/s per GPU of the measured-serving model with the "
                              "SGLang stack over a published DeepSeek-V3 decode worker (issue 28: within ×[0.67, 1.5])"),
    # --- energy (issue 29; wsemoe/validate/energy.py), written before the energy model first ran on these rows ---
    "energy.waferllm": Band(1 / 1.5, 1.5, log=True, why="decode energy of n A100s over a WSE-2 (model over published "
                            "0.92, 2.22, 7.02): within 1.5× either way, a prediction that multiplies two modelled "
                            "decode times by two rated powers; a 2× error in either power falls outside"),
    "energy.views": Band(1 / 1.5, 1.5, log=True, why="bottom-up over top-down energy per token at a point busy on "
                         "compute (prefill): the per-operation figures and the rated power describe one machine, "
                         "within 1.5× either way"),
}


def band(row_id: str) -> Band:
    """The band of a row (its id's family prefix before the first ':' names it)."""
    return BANDS[row_id.split(":")[0]]


def param_active(published: float) -> float:
    """Published active counts have two significant digits: ±max(2%, half a unit of the last digit)."""
    half_unit = 0.5 * 10 ** (math.floor(math.log10(published)) - 1)
    return max(0.02, half_unit / published)
