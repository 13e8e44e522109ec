"""The runner: MERA Multi tasks through a model, logged, resumable, scored.

- :mod:`.requests`        examples -> requests (prompt + media) -> chat messages
- :mod:`.hf_backend`      a transformers model in this process (``--backend hf``)
- :mod:`.openai_backend`  an OpenAI-compatible server (``--backend openai``)
- :mod:`.samplelog`       the per-sample JSONL log, shards per process, resumption
- :mod:`.run`             :func:`run_evaluation`, the whole run (data parallel under accelerate)
- :mod:`.serve`           a small OpenAI-compatible server over the hf backend

Backends share one interface: ``generate(requests) -> list[str]``.
"""
from .run import evaluate_model, make_batches, run_evaluation

__all__ = ["run_evaluation", "evaluate_model", "make_batches"]
