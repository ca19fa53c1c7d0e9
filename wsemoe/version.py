"""The package version (one place; results manifests record it)."""

__version__ = "0.2.0"
