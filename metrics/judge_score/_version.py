"""The package version (one place: the root package, hatch and every cache key read it)."""

__version__ = "0.1.0"
