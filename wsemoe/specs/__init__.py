"""Pydantic specs: hardware, model, workload, mapping and balance (frozen, extra keys forbidden)."""

from wsemoe.specs.base import Spec
from wsemoe.specs.hardware import HardwareSpec, PEFacts
from wsemoe.specs.model import ModelSpec
from wsemoe.specs.workload import WorkloadSpec
from wsemoe.specs.mapping import MappingSpec, BalanceSpec

__all__ = ["Spec", "HardwareSpec", "PEFacts", "ModelSpec", "WorkloadSpec", "MappingSpec", "BalanceSpec"]
