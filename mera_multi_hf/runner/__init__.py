"""The runner: MERA Multi tasks through a model, logged, resumable, scored.

- :mod:`.request`         examples -> generation requests (prompt + media)
- :mod:`.chat`            requests as chat messages (chat template, chat-completions API)
- :mod:`.backends`        the Backend protocol; ``hf`` (transformers) and ``openai`` (a server)
- :mod:`.samplelog`       the per-sample JSONL log, shards per process, resumption
- :mod:`.run`             :func:`run_evaluation`, the whole run (data parallel under accelerate)
- :mod:`.serve`           a small OpenAI-compatible server over the hf backend
"""
from .run import make_batches, run_evaluation

__all__ = ["run_evaluation", "make_batches"]
