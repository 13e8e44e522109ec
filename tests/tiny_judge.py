"""The tests' tiny judge is the package's own (`mera-multi models --path judge`)."""

from mera_multi_hf.demo.tiny_models.judge import build_tiny_judge  # noqa: F401
