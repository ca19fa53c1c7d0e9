"""The version of wsemoe, in one place (the package, its wheel and every results manifest read it here)."""

__version__ = "0.2.0"
