"""The package version, in one place below every layer (results manifests record it)."""

__version__ = "0.2.0"
