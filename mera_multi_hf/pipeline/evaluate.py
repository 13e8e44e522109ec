"""A whole evaluation as one straight line; each stage returns its record here and
none calls back up (docs/architecture.md draws it):

    plan      select_tasks, task_sources, preflight_run   -> tasks, sources, the checks
    open_run  this process, the engine, the locked folder -> RunPlace (a context)
    load      load_task_split, per task                   -> LoadedTask (private decided)
    generate  start, generate_share, gather               -> Generated (main process)
    score     score_run                                   -> Results
    write     run_files, write_outputs                    -> the files, as one set

The score and write steps are shared with `score` (:mod:`.outcome`)."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING

from mera_multi_hf.core.start_up import resume_collections
from mera_multi_hf.data.loaded import load_task_split
from mera_multi_hf.generation import run as generation
from mera_multi_hf.generation.config import RunConfig
from mera_multi_hf.pipeline.preflight import preflight_run

if TYPE_CHECKING:
    from mera_multi_hf.pipeline.outcome import Outcome


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
    outcome = evaluate(config, engine=engine, typed=typed)
    return None if outcome is None else outcome.as_dict()


def evaluate(config: RunConfig, *, engine=None, typed=None) -> Outcome | None:
    """:func:`run_evaluation`'s stages in order; the typed :class:`Outcome` (None on the
    other processes of a data-parallel run)."""
    started = time.time()
    specs = generation.select_tasks(config.tasks)
    sources = generation.task_sources(config, specs)
    checked = preflight_run(config, specs, sources, engine=engine)  # before any work
    resume_collections()  # the program's start-up is over (core.start_up)
    split, limits, limit = config.split, config.limits(), config.limit
    with generation.open_run(config, sources, engine) as run:  # the folder locked till the end
        specs, sources = generation.extended(run, config, specs, sources)  # earlier tasks too
        loaded = [
            load_task_split(t, sources[t.key], split, limits=limits, limit=limit) for t in specs
        ]
        pending = generation.start(run, config, loaded, typed, started)
        if run.waits_on_server:  # the main process only waits for a server's answers
            warm_up_in_background(loaded)
        here = generation.generate_share(run, config, loaded, pending)
        if run.waits_on_others:  # idle until the other processes finish their shares
            warm_up_in_background(loaded)
        generated = generation.gather(run, config, loaded, pending, here)
        if generated is None:  # only the main process scores and writes
            return None
        from mera_multi_hf.pipeline.run_fields import answered_by_run  # (see score_and_write)

        answered = answered_by_run(config, loaded, generated, checked)
        outcome = score_and_write(
            run.folder, loaded, answered, config.scoring(), started, rewrite=config.overwrite
        )
    outcome.counts = generated.counts
    return outcome


def score_and_write(*args, **kwargs) -> Outcome:
    """:func:`mera_multi_hf.pipeline.outcome.score_and_write`, imported when the answers
    are in, not before the first request (a run that waits has it by then: the warm-up)."""
    from mera_multi_hf.pipeline.outcome import score_and_write as score_and_write_run

    return score_and_write_run(*args, **kwargs)


def warm_up_in_background(loaded=()) -> None:
    """Decide the tasks' privacy (what their data says), import what scoring and the
    outputs need, load the chart's fonts and compile the page's template, in a thread
    while the run only waits, rather than after."""
    threading.Thread(target=warm_up_outputs, args=(loaded,), daemon=True).start()


# what the score and write stages import where they are used (none of it is needed
# before the last answer): every one a module the sample tasks' scoring reaches
AFTER_THE_ANSWERS = (
    "mera_multi_hf.pipeline.outcome",
    "mera_multi_hf.pipeline.run_fields",
    "mera_multi_hf.scoring.run_results",
    "mera_multi_hf.scoring.diagnostics",
    "mera_multi_hf.scoring.uncertainty",
    "mera_multi_hf.scoring.prompt_table",
    "mera_multi_hf.scoring.metric_exact_match",
    "mera_multi_hf.scoring.metric_extraction",
    "mera_multi_hf.reporting.outputs",
    "mera_multi_hf.reporting.reports",
    "mera_multi_hf.reporting.prompt_report",
    "mera_multi_hf.reporting.submission",
    "mera_multi_hf.reporting.page_media",
    "numpy.random",  # the intervals' resampling (not imported by numpy itself)
)


def warm_up_outputs(loaded=()) -> None:
    import importlib

    try:  # (errors and all, each is decided or imported again where it is used)
        for name in AFTER_THE_ANSWERS:
            importlib.import_module(name)
        from PIL import Image

        from mera_multi_hf.pipeline.fingerprint import code_stamp
        from mera_multi_hf.reporting import results_page
        from mera_multi_hf.reporting.charts import warm_up

        code_stamp()  # (cached) what the outputs' fingerprint stats every code file for
        Image.preinit()  # the format plugins that saving the chart's PNG loads
        warm_up()  # the chart's fonts loaded
        results_page.page_template()  # compiled
        for task in loaded:
            task.private  # noqa: B018 - decided (read off the data) once, here
    except Exception:  # noqa: BLE001 - the stage that needs it meets the error
        return
