"""Mapping and balance specs: where TP groups and experts sit, and how expert load is spread."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt

from wsemoe.specs.base import MAX_COUNT, MAX_FIGURE, MAX_SEED, Spec


class MappingSpec(Spec):
    """Placement of attention TP groups and experts on the nodes."""

    tp: Optional[PositiveInt] = Field(None, le=MAX_COUNT, description="attention tensor-parallel group size, nodes (unset: one group of all nodes)")
    strategy: Literal["block", "er", "her", "snake", "random", "explicit"] = Field(
        "block", description="placement of TP groups: contiguous blocks, entwined rings (er), hierarchical ER on a "
                             "mesh of wafers (her: ER inside each wafer, tokens gathered across wafers), snake, random, "
                             "or explicit")
    ftd: Optional[tuple[Annotated[int, Field(gt=0, le=MAX_COUNT)], Annotated[int, Field(gt=0, le=MAX_COUNT)]]] = Field(None, description="ER full-token-domain tile (rows, cols); chosen from the group count if unset")
    seed: NonNegativeInt = Field(0, le=MAX_SEED, description="seed of the random strategy")
    placement: Optional[tuple[Annotated[int, Field(ge=0, le=MAX_COUNT)], ...]] = Field(None, description="explicit group id of every node (strategy explicit)")
    token_source: Literal["auto", "nearest", "ftd", "slice"] = Field(
        "auto", description="which TP member sends a token to an expert: after a full all-reduce, the nearest member or "
                            "the member in the host's FTD (then the partial expert outputs are all-reduced again); "
                            "slice: each member sends only its own 1/tp of the tokens (reduce-scatter before, all-gather "
                            "after the MoE; always on a switch with more than one group: the all-to-all of attention DP); "
                            "auto: ftd under er and her, nearest otherwise (a switch with one group: every GPU "
                            "itself, no all-to-all)")
    ring_directions: Literal[1, 2] = Field(
        1, description="ring collectives run one way round (1) or send half of every message each way (2: half the "
                       "bytes per link on rings closed through grid neighbours; none saved at TP 2 or on a line ring "
                       "closed by its wrap-around edge); default 1, the single ring MoEntwine describes")
    combine_routing: Literal["xy", "reverse"] = Field(
        "xy", description="combine routed XY like every packet of a dimension-order router (default), or on the reverse "
                          "of its dispatch path (YX), which needs a router that can route YX")
    scale_out_dispatch: Literal["auto", "per_copy", "per_server"] = Field(
        "auto", description="switch systems across servers: each routed copy of a token crosses the scale-out "
                            "network (per_copy: DeepEP's low-latency kernels), or a token crosses once per server "
                            "that holds any of its experts and NVLink forwards it there (per_server: DeepEP's "
                            "normal kernels); auto (default): per_copy in decode, per_server in prefill and training")
    mla_cache: Literal["replicated", "sharded"] = Field(
        "replicated", description="MLA latent KV cache on every TP rank (default: TP splits heads and every head reads "
                                  "the whole latent) or sharded over the TP ranks (a sequence-split attention kernel; "
                                  "its extra reduction is not charged)")
    pe_placement: Literal["blocked", "interleaved"] = Field(
        "blocked", description="SRAM serving: where a MoE layer's attention sits among its expert regions on the PE "
                               "fabric: blocked (attention in one block, the experts packed beside it) or interleaved "
                               "(attention's column groups spread among the experts, so router-to-expert paths are "
                               "short and attention's row collectives long)")
    pe_dispatch: Literal["multicast", "unicast"] = Field(
        "multicast", description="SRAM serving: how tokens reach expert regions: multicast (every token along static "
                                 "routes to every expert region of its layer, which keeps its routed tokens; combine "
                                 "is a reduction back) or unicast (each token only to its top-k regions; combine the "
                                 "transposed transfers)")
    pe_reduction: Literal["tree", "chain", "ring"] = Field(
        "tree", description="SRAM serving: the all-reduce pattern of every PE-level collective: a 2-level tree "
                            "(WaferLLM's K-tree), a chain, or a ring")
    pe_kernels: Literal["fused", "per_primitive"] = Field(
        "fused", description="SRAM serving: what one operator invocation overhead (op_overhead_cycles) is paid for: "
                             "each fused operator chain (a GEMV, its reduction and its element-wise tail) or each "
                             "primitive kernel and collective (the research kernels the overhead was fitted to)")
    wafer_io: Literal["async", "sync"] = Field(
        "async", description="SRAM serving: the system's wafer I/O runs asynchronously from compute (Cerebras' "
                             "serving software since Oct 2024) or synchronously (its launch software): each transfer "
                             "then stalls the system for hardware.sync_io_stall_s")


class BalanceSpec(Spec):
    """Expert-load distribution and balancer."""

    distribution: Literal["uniform", "zipf", "histogram"] = Field("uniform", description="expert popularity model")
    zipf_s: float = Field(1.0, ge=0, le=64, allow_inf_nan=False, description="Zipf exponent of expert popularity")
    histogram: Optional[str] = Field(None, description="CSV of measured per-expert token counts or shares")
    balancer: Literal["none", "replicate", "non-invasive", "stop-the-world"] = Field("none", description="expert balancer")
    spare_slots: NonNegativeInt = Field(0, le=2**16, description="extra expert slots per node for replicas")
    rebalance_interval: PositiveInt = Field(10, le=2**31, description="iterations between stop-the-world rebalances")
    churn: float = Field(1.0, gt=0, le=1, description="share of the balanced placement's new copies (every expert copy not where the default "
                       "placement holds it, replicas and moved originals) re-placed at each rebalance (popularity drift)")
    seed: NonNegativeInt = Field(0, le=MAX_SEED, description="seed of the expert ranking")
    skew_target: Optional[float] = Field(
        None, ge=1, le=1e6, allow_inf_nan=False,
        description="busiest device over mean expert load without balancing; when set, the Zipf exponent is solved "
                    "for it (zipf_s is ignored) on the layout of skew_devices")
    skew_devices: Optional[PositiveInt] = Field(
        None, le=2**20, description="devices of the layout skew_target is measured on (expert e on device e mod "
                                    "devices); unset: the point's own device count. Set it to compare systems under "
                                    "one expert popularity")
    replica_policy: Literal["hot", "fill"] = Field(
        "hot", description="replicas only while a copy carries more than a mean expert's share (hot, default: no "
                           "replica that buys little), or every spare slot filled as EPLB fills its redundant slots")
    replica_split: Literal["water-fill", "even"] = Field(
        "water-fill", description="how an expert's tokens split over its copies: water-filling that minimises the "
                                  "busiest host (default: a router can weight copies by load), or evenly")
    migration_windows: Literal["all", "comm"] = Field(
        "all", description="non-invasive migration rides idle links in every window of a layer, compute and HBM "
                           "phases included (default: links idle while cores compute), or only in the "
                           "communication phases (all-reduce, all-to-all)")
