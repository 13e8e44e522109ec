"""A whole evaluation, as the command layer orchestrates it: the preflight checks, then
the run (generation into the sample log, resumable), then finalize (scores, reports,
submission), each stage from its own folder; the runner imports neither end."""

from __future__ import annotations

import dataclasses
import time

from mera_multi_hf.generation.config import RunConfig
from mera_multi_hf.generation.run import run_tasks, select_tasks, task_sources
from mera_multi_hf.pipeline.preflight import preflight_run


def run_evaluation(
    config: RunConfig | None = None, *, engine=None, typed: list[str] | None = None, **options
) -> dict | None:
    """Evaluate a model on MERA Multi tasks; returns the run summary (None on the other
    processes of a data-parallel run).

    ``config``: a :class:`RunConfig`; keyword ``options`` set or override its fields
    (``run_evaluation(model="Qwen/Qwen2.5-VL-3B-Instruct", tasks="ruhhh_image")``).
    ``engine``: a ready :class:`~mera_multi_hf.generation.backends.Backend` instead of the one
    the config names. ``typed``: the options as typed on the command line (the CLI's, for
    the record). Writes into ``output_dir`` (default ``runs/<model name>``).
    """
    config = dataclasses.replace(config, **options) if config else RunConfig(**options)
    started = time.time()
    specs = select_tasks(config.tasks)
    sources = task_sources(config, specs)
    checked = preflight_run(config, specs, sources, engine=engine)  # before any work

    def finish(folder, loaded, records, **parts):
        from mera_multi_hf.pipeline.finish import finish_run

        return finish_run(
            folder, config, loaded, records, started=started, preflight=checked, **parts
        )

    return run_tasks(
        config,
        specs,
        sources,
        engine=engine,
        typed=typed,
        started=started,
        finish=finish,
        warm_up=warm_up_outputs,
    )


def warm_up_outputs() -> None:
    """Import what scoring and the outputs need (the chart's matplotlib most of all), and
    draw a first chart, while the run only waits (for a server's answers, or for the
    other processes to finish their shares), rather than after."""
    try:
        from mera_multi_hf.pipeline import finish  # noqa: F401 - finalize and everything it imports
        from mera_multi_hf.reporting.charts import warm_up

        warm_up()  # fonts loaded, caches full
    except Exception:  # noqa: BLE001 - imported again where it is used, errors and all
        return
