"""The run, as stages with one job each:

    plan (tasks, sources) -> load (dataset -> examples) -> requests -> resume (sample log)
    -> generate (this process's share) -> merge -> score -> outputs (one consistent set)

:func:`run_tasks` is the generating part of ``run_evaluation`` (which checks first and
finishes after: :mod:`mera_multi_hf.pipeline.evaluate`). Under a multi-process launch every
process runs it: each takes a disjoint stride of the
requests not yet in the sample log and writes its own log shard; the main process then
merges the shards by (task, split, id), scores and writes. A process's place in the
launch is :mod:`.processes`; what the sample log already holds, :mod:`.resume`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import OutputFolder
from mera_multi_hf.data.examples import Example, make_examples
from mera_multi_hf.generation import dialogue, manifest
from mera_multi_hf.generation.backends import capabilities_of
from mera_multi_hf.generation.backends.model_kinds import model_kind
from mera_multi_hf.generation.config import RunConfig
from mera_multi_hf.generation.generate import generate_into_log
from mera_multi_hf.generation.manifest import MANIFEST
from mera_multi_hf.generation.processes import (
    claim_folder,
    first_if,
    process_state,
    seed_everything,
)
from mera_multi_hf.generation.request import Request, arrow_view, build_requests
from mera_multi_hf.generation.resume import (
    answered,
    logged,
    logged_counts,
    merged,
    reusable_turn,
    warn_damaged,
)
from mera_multi_hf.generation.samplelog import LOG_DIR, SampleLog, request_hash
from mera_multi_hf.tasks.dialogue import warn_meta
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import get_task, resolve_tasks


@dataclass
class TaskData:
    """One task of the run: its split, as loaded, and its examples."""

    task: TaskSpec
    source: object
    dataset: object  # Arrow-formatted split (media read lazily)
    examples: list[Example]
    fingerprint: str
    full_size: int  # examples in the split before --limit
    requests: list[Request] = field(default_factory=list)
    content: str | None = None  # the whole split's rows, hashed (manifest.data_content)


def run_tasks(
    config: RunConfig,
    specs: list[TaskSpec],
    sources: dict,
    *,
    engine=None,
    typed: list[str] | None = None,
    started: float,
    finish,
    warm_up=None,
) -> dict | None:
    """Generate every task's answers into the run folder's sample log (this process's
    share, resuming what is logged), then, on the main process, hand the merged log to
    ``finish(folder, loaded, records, counts=, manifest=, logged=, damaged=)`` inside the
    folder's lock; returns what it returns (None on the other processes).

    ``warm_up()``: run in a thread while this process only waits (for a server's answers
    or the other processes), to import what ``finish`` needs meanwhile.
    """
    state = process_state(config.device, config.backend)
    if config.device == "auto" and state.num_processes > 1:
        raise MeraError(
            "--device auto spreads one model over all GPUs: run it as one process, "
            "not under a multi-process launch"
        )
    if config.no_progress or not state.is_main_process:  # datasets' bars too
        from mera_multi_hf.data.loading import quiet_progress

        quiet_progress()
    seed_everything(state, config.seed)
    with first_if(builds_model(config), state):  # the main process builds a built-in model
        engine = engine or make_engine(config)
    out = output_dir(config, engine)
    inputs = _local([*sources.values(), config.model, config.judge])
    folder = OutputFolder(out, kind="run", flag="--output-dir", inputs=inputs)
    folder.check()  # every process, before any work
    claim_folder(folder, _log_names(folder, state.num_processes) + [MANIFEST], state)
    with folder:
        return _run(config, engine, specs, sources, state, folder, started, typed, finish, warm_up)


def _local(sources) -> list[str]:
    """The inputs that are files or folders here: dataset sources, a model folder, a
    judge folder (an output may not touch them)."""
    from mera_multi_hf.data.sources import named_source

    return [
        str(s) for s in sources if s is not None and named_source(s) is None and Path(s).exists()
    ]


def _log_names(folder, world: int) -> list[str]:
    """The sample log shards of this run and those of earlier runs here (kept; a file of
    someone else's at one of them is foreign, and the folder's check refuses it)."""
    mine = [f"{LOG_DIR}/samples-rank{r}.jsonl" for r in range(world)]
    return mine + [n for n in folder.owned() if n.startswith(f"{LOG_DIR}/samples-rank")]


def new_session(config: RunConfig, engine, loaded, world: int, typed, started: float) -> dict:
    """This start or resume of the run, as the manifest lists it."""
    from mera_multi_hf.core.provenance import command_line, package_versions

    return {
        "started_at": manifest.iso(started),
        "finished_at": None,
        "command": command_line(config, typed),
        "environment": config.environment(),
        "num_processes": world,
        "batch_size": engine.batch_size,
        "tasks": [d.task.key for d in loaded],
        "split": config.split,
        "limit": config.limit,
        "versions": package_versions(),
    }


def open_manifest(folder, config: RunConfig, engine, loaded, session: dict, old) -> dict:
    """The run's manifest with this session begun (``old``: the earlier one); a resume
    under other fixed settings stops here, in one line (every process reads it before
    any is written)."""
    fixed = manifest.fixed_settings(config, engine)
    manifest.check_fixed(old, fixed, folder.path)
    return manifest.start(old, fixed, manifest.task_entries(config, engine, loaded), session)


def write_manifest(folder, doc: dict) -> None:
    import json

    folder.put(MANIFEST, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def _run(
    config: RunConfig, engine, specs, sources, state, folder, started, typed, finish, warm_up
) -> dict | None:
    old = manifest.read_manifest(folder)  # one that cannot be read stops the run here
    say = state.is_main_process
    specs, sources = manifest.with_earlier_tasks(old, config, specs, sources, say)
    loaded = [load_task_data(task, sources[task.key], config, state) for task in specs]
    old = manifest.check_data(old, loaded, config, folder.path, say)
    for data in loaded:
        if not data.task.dialogue:
            data.requests = stamp(make_requests(data, config), engine)
    requests = [r for data in loaded for r in data.requests]
    if config.overwrite and state.is_main_process:
        SampleLog(folder).clear()
    state.wait_for_everyone()  # the main process has claimed the folder and its logs
    log = SampleLog(folder, state.process_index)
    before = log.read()
    if state.is_main_process:
        warn_damaged(log.damaged)
    logged(log, before, requests)  # other settings in the folder stop every process here
    session = new_session(config, engine, loaded, state.num_processes, typed, started)
    doc = open_manifest(folder, config, engine, loaded, session, old)
    state.wait_for_everyone()  # nobody writes before every process has read the log
    if state.is_main_process:
        write_manifest(folder, doc)  # before any generation
    state.wait_for_everyone()
    here = generate_share(config, engine, loaded, log, before, state, warm_up)
    if warm_up and state.is_main_process and state.num_processes > 1:  # idle until the rest finish
        threading.Thread(target=warm_up, daemon=True).start()
    state.wait_for_everyone()
    if not state.is_main_process:
        return None
    index = log.read()
    for data in loaded:  # the main process replays every dialogue from the merged log
        if data.task.dialogue:
            data.requests = []
            run_dialogues(data, config, engine, None, index)
    requests = [r for data in loaded for r in data.requests]
    resumed = sum(1 for r in requests if answered(before, r))
    counts = {
        "requested": len(requests),
        "resumed": resumed,
        "generated": len(requests) - resumed,
        "generated_here": here,
    }
    doc = manifest.finish(doc, engine, counts)
    write_manifest(folder, doc)
    return finish(
        folder,
        loaded,
        merged(index, requests),
        counts=counts,
        manifest=doc,
        logged=logged_counts(index),
        damaged=log.damaged,
    )


def generate_share(
    config: RunConfig,
    engine,
    loaded: list[TaskData],
    log: SampleLog,
    before: dict,
    state,
    warm_up=None,
) -> int:
    """This process's share: a stride of the pending requests, then its dialogues;
    returns how many it generated. The log and the engine are closed after it."""
    rank, world = state.process_index, state.num_processes
    requests = [r for data in loaded for r in data.requests]
    pending = [r for r in requests if not answered(before, r)]
    show = not config.no_progress and state.is_main_process
    if warm_up and capabilities_of(engine).streaming and state.is_main_process:  # a server answers
        threading.Thread(target=warm_up, daemon=True).start()
    try:
        here = len(
            generate_into_log(
                engine,
                pending[rank::world],
                {d.task.key: d.dataset for d in loaded},
                log,
                show=show,
                label="generating" + (f" (rank 0 of {world})" if world > 1 else ""),
            )
        )
        for data in loaded:
            if data.task.dialogue:
                here += run_dialogues(data, config, engine, log, before, rank=rank, world=world)
    finally:
        log.close()
        engine.close()
    return here


def select_tasks(names) -> list[TaskSpec]:
    """The tasks to run: keys, modalities or "all"."""
    specs = resolve_tasks(names)
    if not specs:
        raise MeraError("no task given: name one with --tasks (see `mera-multi tasks`)")
    return specs


def task_sources(config: RunConfig, specs: list[TaskSpec]) -> dict[str, object]:
    """Task -> dataset source: --data as given; else what the model kind reads (the demo's
    bundled samples), else the official data."""
    data = config.sources()
    if isinstance(data, dict):
        data = {get_task(k).key: v for k, v in data.items()}
        unknown = set(data) - {t.key for t in specs}
        if unknown:
            raise MeraError(f"--data names tasks that are not run: {', '.join(sorted(unknown))}")
        return {t.key: data.get(t.key) for t in specs}
    if data is None:
        kind = model_kind(config.model)
        data = kind.data if kind is not None else None
    return {t.key: data for t in specs}


def builds_model(config: RunConfig) -> bool:
    """Whether making the engine may build a model (a model kind's, built on first use)."""
    return config.backend == "hf" and model_kind(config.model) is not None


def make_engine(config: RunConfig):
    from mera_multi_hf.generation.backends import make_backend

    return make_backend(config.backend, config.model, **config.backend_options())


def output_dir(config: RunConfig, engine) -> Path:
    import re

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", engine.model_id.rstrip("/").split("/")[-1]) or "model"
    out = Path(config.output_dir) if config.output_dir else Path("runs") / name
    if out.exists() and not out.is_dir():
        raise MeraError(f"--output-dir {out} is a file, not a folder")
    return out


def load_task_data(task: TaskSpec, source, config: RunConfig, state) -> TaskData:
    from mera_multi_hf.data.datasets_hook import fingerprint
    from mera_multi_hf.data.loading import load_split

    # No process waits for another here: a raw folder's conversion and datasets' own
    # cache are built under file locks (one process builds, the rest wait and read).
    ds = load_split(task, source=source, split=config.split, limits=config.limits())
    full_size, loaded_as = len(ds), fingerprint(ds)  # the split as loaded (as `score` records)
    content = manifest.data_content(ds)  # what a resume's data must be, wherever it is
    if config.limit is not None:
        ds = ds.select(range(min(config.limit, len(ds))))
    ds = arrow_view(ds)
    examples = make_examples(task, ds)
    if task.dialogue and state.is_main_process:
        warn_meta(task, examples)
    return TaskData(task, source, ds, examples, loaded_as, full_size, content=content)


def make_requests(data: TaskData, config: RunConfig, examples=None) -> list[Request]:
    stop = tuple(config.stop) if config.stop is not None else None
    return build_requests(
        data.task,
        data.examples if examples is None else examples,
        data.dataset,
        config.split,
        config.max_new_tokens,
        stop,
        limits=config.limits(),
    )


def stamp(requests: list[Request], engine) -> list[Request]:
    """Set each request's hash: what its answer depends on."""
    settings = engine.settings()
    for r in requests:
        history = [
            {"text": t.text, "media": [m.sha256 for m in t.media], "answer": t.answer}
            for t in r.history
        ]
        r.hash = request_hash(
            engine.model_id,
            engine.revision,
            settings,
            r.prompt,
            [m.sha256 for m in r.media],
            r.max_new_tokens,
            r.stop,
            history,
        )
    return requests


def run_dialogues(
    data: TaskData,
    config: RunConfig,
    engine,
    log: SampleLog | None,
    index: dict,
    *,
    rank: int = 0,
    world: int = 1,
) -> int:
    """Walk this process's dialogues wave by wave: a turn logged with the same request
    hash is resumed, the others are generated into ``log`` (with no log, every turn must
    be logged: the main process's replay). The requests go to ``data.requests``; returns
    how many were generated."""
    answers: dict[tuple, str] = {}
    context = (
        config.dialogue_context
        if config.dialogue_context is not None
        else data.task.dialogue.context_turns
    )
    count = 0
    waves = dialogue.walk(
        data.task,
        data.examples,
        context_turns=context,
        answer=lambda r: answers[r.key],
        make=lambda items: make_requests(data, config, items),
        rank=rank,
        world=world,
    )
    for wave in waves:
        stamp(wave, engine)
        todo = [r for r in wave if not reusable_turn(logged(None, index, [r]).get(r.key), log)]
        for r in wave:
            if r not in todo:
                answers[r.key] = index[r.key][r.hash]["generation"]
        if todo and log is None:
            raise MeraError(
                f"{data.task.key}: {len(todo)} dialogue turns have no line in the "
                f"sample log (e.g. id={todo[0].id}); rerun the same command"
            )
        if todo:
            answers.update(
                generate_into_log(engine, todo, {data.task.key: data.dataset}, log, show=False)
            )
            count += len(todo)
        data.requests += wave
    return count
