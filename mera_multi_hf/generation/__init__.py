"""generation: MERA Multi tasks through a model into the run's sample log, resumable.

- :mod:`.request`         examples -> generation requests (prompt + media)
- :mod:`.chat`            requests as chat messages (chat template, chat-completions API)
- :mod:`.dialogue`        ruTiE's dialogues asked in order, earlier turns as history
- :mod:`.backends`        the Backend protocol, the registry; ``hf`` (transformers), ``openai`` (a server)
- :mod:`.samplelog`       the per-sample JSONL log, shards per process, resumption
- :mod:`.config`          :class:`RunConfig`, every option of a run (the CLI is generated from it)
- :mod:`.run`             the generate stage: open_run, start, generate_share, gather (data parallel)
- :mod:`.processes`       this process's place in a data-parallel run, the folder claimed for all
- :mod:`.resume`          what the sample log holds: answers resumed, clashes, the merge
- :mod:`.generate`        this process's share through the backend into the sample log
- :mod:`.manifest`        run_manifest.json: the run's fixed settings and its sessions
- :mod:`.launch`          ``evaluate --processes N``: the data-parallel processes, without a launcher
- :mod:`.checks`          what the run needs, checked before any work: media, device, model or server

A run's configuration carries its scoring options (one flat set of keywords for
``run_evaluation``), so generation sits above scoring; it holds its own checks (run
before any work by :mod:`mera_multi_hf.pipeline.preflight`) and never imports the outputs
after it (:mod:`mera_multi_hf.pipeline` joins them).

May import: core, tasks, data, judge, scoring.
"""

from mera_multi_hf.generation.config import RunConfig

__all__ = ["RunConfig"]
