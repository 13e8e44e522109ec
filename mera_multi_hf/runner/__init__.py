"""The runner: MERA Multi tasks through a model, logged, resumable, scored.

- :mod:`.request`         examples -> generation requests (prompt + media)
- :mod:`.chat`            requests as chat messages (chat template, chat-completions API)
- :mod:`.backends`        the Backend protocol; ``hf`` (transformers) and ``openai`` (a server)
- :mod:`.samplelog`       the per-sample JSONL log, shards per process, resumption
- :mod:`.config`          :class:`RunConfig`, every option of a run (the CLI is generated from it)
- :mod:`.run`             :func:`run_evaluation`: plan, load, requests, resume (data parallel)
- :mod:`.generate`        this process's share through the backend into the sample log
- :mod:`.finish`          merge, score, and write the outputs as one consistent set
- :mod:`.serve`           a small OpenAI-compatible server over the hf backend
"""
from .config import RunConfig
from .generate import make_batches
from .run import run_evaluation

__all__ = ["RunConfig", "run_evaluation", "make_batches"]
