"""Mapping and balance specs: where TP groups and experts sit, and how expert load is spread."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt

from wsemoe.specs.base import MAX_COUNT, MAX_FIGURE, MAX_SEED, Spec


class MappingSpec(Spec):
    """Placement of attention TP groups and experts on the nodes."""

    tp: Optional[PositiveInt] = Field(None, le=MAX_COUNT, description="attention tensor-parallel group size, nodes (unset: one group of all nodes)")
    strategy: Literal["block", "er", "snake", "random", "explicit"] = Field(
        "block", description="placement of TP groups: contiguous blocks, entwined rings, snake, random, or explicit")
    ftd: Optional[tuple[Annotated[int, Field(gt=0, le=MAX_COUNT)], Annotated[int, Field(gt=0, le=MAX_COUNT)]]] = Field(None, description="ER full-token-domain tile (rows, cols); chosen from the group count if unset")
    seed: NonNegativeInt = Field(0, le=MAX_SEED, description="seed of the random strategy")
    placement: Optional[tuple[Annotated[int, Field(ge=0, le=MAX_COUNT)], ...]] = Field(None, description="explicit group id of every node (strategy explicit)")
    token_source: Literal["auto", "nearest", "ftd"] = Field(
        "auto", description="which TP member sends a token to an expert: nearest member, the member in the host's FTD, or auto (ftd under er)")


class BalanceSpec(Spec):
    """Expert-load distribution and balancer."""

    distribution: Literal["uniform", "zipf", "histogram"] = Field("uniform", description="expert popularity model")
    zipf_s: float = Field(1.0, ge=0, le=64, allow_inf_nan=False, description="Zipf exponent of expert popularity")
    histogram: Optional[str] = Field(None, description="CSV of measured per-expert token counts or shares")
    balancer: Literal["none", "replicate", "non-invasive", "stop-the-world"] = Field("none", description="expert balancer")
    spare_slots: NonNegativeInt = Field(0, le=2**16, description="extra expert slots per node for replicas")
    rebalance_interval: PositiveInt = Field(10, le=2**31, description="iterations between stop-the-world rebalances")
    piece_bytes: PositiveFloat = Field(1.0e6, le=MAX_FIGURE, allow_inf_nan=False, description="migration piece size, bytes")
    churn: float = Field(1.0, gt=0, le=1, description="share of replica copies re-placed at each rebalance (popularity drift)")
    seed: NonNegativeInt = Field(0, le=MAX_SEED, description="seed of the expert ranking")
