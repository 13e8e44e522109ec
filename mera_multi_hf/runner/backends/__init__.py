"""Backends: where generations come from. Each one implements :class:`Backend`."""
