"""Shared pydantic base for specs: frozen, unknown keys rejected, SI units in field names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Spec(BaseModel):
    """Base of every spec: immutable, rejects unknown keys, documents every field."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
