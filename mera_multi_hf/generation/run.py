"""The generate stage of a run, as steps the pipeline calls in order
(:mod:`mera_multi_hf.pipeline.evaluate`):

    open_run (this process's place, the engine, the claimed and locked folder)
    -> start (requests, what the sample log holds, the manifest)
    -> generate_share (this process's share into its log shard)
    -> gather (the main process: the merged answers, as :class:`Generated`)

Under a multi-process launch every process runs them: each takes a disjoint stride of
the requests not yet in the sample log and writes its own log shard; the main process
then merges the shards by (task, split, id). Nothing here scores or writes a report,
and nothing calls back up. A process's place in the launch is :mod:`.processes`; what
the sample log already holds, :mod:`.resume`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import OutputFolder
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
from mera_multi_hf.generation.request import Request, build_requests
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
class RunPlace:
    """Where this process runs: its place in the launch, the engine, the run folder
    (claimed and locked while the pipeline holds :func:`open_run`)."""

    state: object
    engine: object
    folder: OutputFolder

    @property
    def is_main(self) -> bool:
        return self.state.is_main_process

    @property
    def waits_on_server(self) -> bool:
        """The main process only waits for a server's answers while it generates."""
        return self.is_main and capabilities_of(self.engine).streaming

    @property
    def waits_on_others(self) -> bool:
        """The main process waits for the other processes after its own share."""
        return self.is_main and self.state.num_processes > 1


@dataclass
class Pending:
    """What a run has to generate: each task's requests, the sample log as it was, and
    the manifest with this session begun."""

    requests: dict[str, list[Request]]
    log: SampleLog
    before: dict
    manifest: dict
    written: Callable[[], None]  # waits till the manifest is written (raises its error)


@dataclass
class Generated:
    """The generate stage's result on the main process: the merged sample log."""

    logs: dict[str, list[dict]]  # task key -> its sample-log records, in example order
    counts: dict  # requested, resumed, generated, generated_here
    manifest: dict  # the run's manifest, this session finished
    logged: dict  # (task, split) -> examples in the sample log
    models: dict[str, str]  # task key -> the model that answered it (the manifest's)
    damaged: list[str] = field(default_factory=list)  # sample-log lines skipped

    def answers(self) -> dict[str, dict[int, str]]:
        """Task key -> {example id: generation}."""
        return {
            key: {r["id"]: r["generation"] for r in records} for key, records in self.logs.items()
        }


@contextlib.contextmanager
def open_run(config: RunConfig, sources: dict, engine=None) -> Iterator[RunPlace]:
    """This process's place in the launch, the engine (``engine``, or the one the config
    names) and the run folder, checked by every process and claimed by the main one;
    the folder stays locked until the block ends (the pipeline scores and writes in it)."""
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
        yield RunPlace(state, engine, folder)


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
    from mera_multi_hf.core.provenance import command_line

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
        "versions": None,  # (looked up as the manifest is written: no request needs them)
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


def _write_begun(folder, doc: dict) -> None:
    """The manifest with this session begun, its package versions looked up first."""
    from mera_multi_hf.core.provenance import package_versions

    doc["sessions"][-1]["versions"] = package_versions()
    write_manifest(folder, doc)


def manifest_written(state, folder, doc: dict) -> Callable[[], None]:
    """Write the manifest with this session begun; returns what waits till it is written
    (and raises its error). One process writes it in a thread while its first requests
    go out (the versions and the syncs take longer than building them), and its sample
    log waits for it before its first line: no answer is logged before the manifest is
    on disk. Under a multi-process launch the main process writes it at once, and all
    wait for it (nobody writes before every process has read the log)."""
    if state.num_processes == 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(1, thread_name_prefix="mera-manifest")
        future = pool.submit(_write_begun, folder, doc)
        pool.shutdown(wait=False)
        return future.result
    state.wait_for_everyone()  # nobody writes before every process has read the log
    if state.is_main_process:
        _write_begun(folder, doc)  # before any generation
    state.wait_for_everyone()
    return lambda: None


def extended(run: RunPlace, config: RunConfig, specs: list, sources: dict):
    """(tasks, sources): those named, and the earlier tasks of the run in the folder (a
    manifest that cannot be read stops the run here, before anything is loaded)."""
    old = manifest.read_manifest(run.folder)
    return manifest.with_earlier_tasks(old, config, specs, sources, run.is_main)


def start(run: RunPlace, config: RunConfig, loaded: list, typed, started: float) -> Pending:
    """The requests of every task (a dialogue's come turn by turn, as it is walked),
    what the sample log holds, and the manifest with this session begun (checked here;
    on disk before any answer is logged: :func:`manifest_written`). ``loaded``: the
    load stage's LoadedTask records."""
    state, engine, folder = run.state, run.engine, run.folder
    old = manifest.read_manifest(folder)  # checked against this data before anything changes
    old = manifest.check_data(old, loaded, config, folder.path, state.is_main_process)
    for d in loaded:
        if d.task.dialogue and state.is_main_process:
            warn_meta(d.task, d.examples)
    requests = {
        d.key: [] if d.task.dialogue else stamp(make_requests(d, config), engine) for d in loaded
    }
    if config.overwrite and state.is_main_process:
        SampleLog(folder).clear()
    state.wait_for_everyone()  # the main process has claimed the folder and its logs
    log = SampleLog(folder, state.process_index)
    before = log.read()
    if state.is_main_process:
        warn_damaged(log.damaged)
    # other settings in the folder stop every process here
    logged(log, before, [r for task in requests.values() for r in task])
    session = new_session(config, engine, loaded, state.num_processes, typed, started)
    doc = open_manifest(folder, config, engine, loaded, session, old)
    written = manifest_written(state, folder, doc)
    log.first_waits_for(written)  # the manifest on disk before any answer is logged
    return Pending(requests, log, before, doc, written)


def gather(run: RunPlace, config: RunConfig, loaded: list, pending: Pending, here: int):
    """Wait for every process's share; on the main process, the merged sample log
    (:class:`Generated`), the manifest's session finished; None on the others."""
    run.state.wait_for_everyone()
    if not run.is_main:
        return None
    log = pending.log
    index = log.read()
    requests = pending.requests
    for data in loaded:  # the main process replays every dialogue from the merged log
        if data.task.dialogue:
            requests[data.key] = []
            run_dialogues(data, config, run.engine, None, index, requests[data.key])
    every = [r for task in requests.values() for r in task]
    resumed = sum(1 for r in every if answered(pending.before, r))
    counts = {
        "requested": len(every),
        "resumed": resumed,
        "generated": len(every) - resumed,
        "generated_here": here,
    }
    doc = manifest.finish(pending.manifest, run.engine, counts)
    write_manifest(run.folder, doc)
    records = merged(index, every)
    logs = {d.key: [records[(d.key, d.split, e.id)] for e in d.examples] for d in loaded}
    models = {d.key: doc["tasks"][f"{d.key}/{d.split}"]["model"] for d in loaded}
    return Generated(logs, counts, doc, logged_counts(index), models, log.damaged)


def generate_share(run: RunPlace, config: RunConfig, loaded: list, pending: Pending) -> int:
    """This process's share: a stride of the pending requests, then its dialogues;
    returns how many it generated. The log and the engine are closed after it."""
    state, engine, log = run.state, run.engine, pending.log
    rank, world = state.process_index, state.num_processes
    every = [r for task in pending.requests.values() for r in task]
    todo = [r for r in every if not answered(pending.before, r)]
    show = not config.no_progress and state.is_main_process
    try:
        here = len(
            generate_into_log(
                engine,
                todo[rank::world],
                {d.key: d.dataset for d in loaded},
                log,
                show=show,
                label="generating" + (f" (rank 0 of {world})" if world > 1 else ""),
            )
        )
        for data in loaded:
            if data.task.dialogue:
                here += run_dialogues(
                    data,
                    config,
                    engine,
                    log,
                    pending.before,
                    pending.requests[data.key],
                    rank=rank,
                    world=world,
                )
    finally:
        try:
            pending.written()  # (whatever came of the generation) before the folder closes
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


def make_requests(data, config: RunConfig, examples=None) -> list[Request]:
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
    data,
    config: RunConfig,
    engine,
    log: SampleLog | None,
    index: dict,
    requests: list[Request],
    *,
    rank: int = 0,
    world: int = 1,
) -> int:
    """Walk this process's dialogues wave by wave (``data``: the task's LoadedTask): a
    turn logged with the same request hash is resumed, the others are generated into
    ``log`` (with no log, every turn must be logged: the main process's replay). The
    requests go to ``requests``; returns how many were generated."""
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
        requests += wave
    return count
