"""The runner: MERA Multi tasks through a model into a sample log, resumable.

- :mod:`.request`         examples -> generation requests (prompt + media)
- :mod:`.chat`            requests as chat messages (chat template, chat-completions API)
- :mod:`.dialogue`        ruTiE's dialogues: questions asked in order, earlier turns as history
- :mod:`.backends`        the Backend protocol, the registry; ``hf`` (transformers), ``openai`` (a server)
- :mod:`.samplelog`       the per-sample JSONL log, shards per process, resumption
- :mod:`.config`          :class:`RunConfig`, every option of a run (the CLI is generated from it)
- :mod:`.run`             :func:`run_tasks`: plan, load, requests, resume (data parallel)
- :mod:`.generate`        this process's share through the backend into the sample log
- :mod:`.manifest`        run_manifest.json: the run's fixed settings and its sessions
- :mod:`.launch`          ``evaluate --processes N``: the data-parallel processes, without a launcher
- :mod:`.dialogue`        dialogue tasks (ruTiE): turns, context, official positions
- :mod:`.serve`           a small OpenAI-compatible server over the hf backend
"""
from .config import RunConfig


def __getattr__(name):
    # The run (and datasets behind it) loads on first use: the CLI's parser needs only RunConfig.
    if name == "make_batches":
        from .generate import make_batches
        return make_batches
    raise AttributeError(name)


__all__ = ["RunConfig", "make_batches"]
