"""The run: tasks -> requests -> backend -> sample log -> scores, reports, submission.

One function, :func:`run_evaluation`, serves the CLI (``mera-multi evaluate``) and
Python. Under ``accelerate launch`` every process runs it: each takes a disjoint
stride of the examples not yet in the sample log and writes its own log shard; the
main process then merges the shards by (task, split, id), scores and writes.
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import MeraError
from ..tasks import MODALITIES, TaskSpec, get_task, resolve_tasks
from ..tiny_model import TINY_MODEL_ID
from .request import Request, arrow_view, build_requests, drop_media, load_media
from .samplelog import SampleLog, request_hash

BACKENDS = ("hf", "openai")


def run_evaluation(model: str | None = None, tasks: str | list[str] = "ruhhh_image", *,
                   data: str | dict | None = None, split: str = "test", limit: int | None = None,
                   output_dir: str | Path | None = None, batch_size: int = 8,
                   max_new_tokens: int | None = None, backend: "str | object" = "hf",
                   dtype: str = "auto", device: str | None = None, max_pixels: int | None = None,
                   trust_remote_code: bool = False, revision: str | None = None,
                   prompt_mode: str = "auto", base_url: str | None = None,
                   api_key: str | None = None, concurrency: int = 8, timeout: float = 300.0,
                   max_retries: int = 4, seed: int = 1234, em_mode: str | None = None,
                   judge=None, judge_url: str | None = None, overwrite: bool = False,
                   progress: bool = True, command: str | None = None) -> dict | None:
    """Evaluate a model on MERA Multi tasks; returns the run summary (None on non-main
    processes of a data-parallel run).

    ``model``: a Hub id, a local folder, or None for the built-in tiny random model (a
    plumbing check). ``tasks``: task keys or a modality, comma-separated. ``data``: the
    dataset source for every task (raw folder, exported folder, Hub id, "sample") or a
    dict task -> source; default: the official Hub copy, or the bundled sample when no
    model is given. Writes into ``output_dir`` (default ``runs/<model name>``): the sample
    log (``logs/`` shards and ``samples_<task>_<split>.jsonl``), ``results.json``,
    ``results.md``, ``model-index.yaml`` and, for the test split, ``submission.zip``.
    ``backend``: "hf", "openai", or a ready backend object (``generate(requests) ->
    list[str]`` plus ``model_id``, ``revision``, ``batch_size``, ``settings()``, ``info()``,
    ``close()``, as :class:`~mera_multi_hf.runner.backends.hf.HFBackend` has).
    """
    from accelerate.utils import set_seed

    started = time.time()
    specs, skipped = _select_tasks(tasks)
    if isinstance(backend, str) and backend not in BACKENDS:
        raise MeraError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "hf" and any(t.modality != "image" for t in specs):
        other = ", ".join(t.key for t in specs if t.modality != "image")
        raise MeraError(f"the hf backend runs image tasks only so far ({other} need audio or "
                        f"video inputs): use --backend openai with a server that accepts them, "
                        f"or --tasks image")
    if batch_size < 1:
        raise MeraError("--batch-size must be at least 1")
    sources = _sources(data, specs, model)
    state = _process_state(device)
    rank, world, main = state.process_index, state.num_processes, state.is_main_process
    if device == "auto" and world > 1:
        raise MeraError("--device auto spreads one model over all GPUs: run it as one process, "
                        "not under a multi-process launch")
    if not main:
        import datasets
        datasets.disable_progress_bars()
    set_seed(seed)

    with state.main_process_first():  # the main process builds the tiny model, others reuse it
        engine = _make_backend(backend, model, revision=revision, dtype=dtype, device=device,
                               max_pixels=max_pixels, trust_remote_code=trust_remote_code,
                               prompt_mode=prompt_mode, batch_size=batch_size, base_url=base_url,
                               api_key=api_key, concurrency=concurrency, timeout=timeout,
                               max_retries=max_retries)
    out = Path(output_dir) if output_dir else Path("runs") / _safe_name(engine.model_id)
    settings = engine.settings()

    loaded: dict[str, object] = {}
    requests: list[Request] = []
    fingerprints, full_sizes = {}, {}
    for task in specs:
        from ..loading import load_task

        with state.main_process_first():  # one process converts a raw folder, the rest read it
            ds = load_task(task, source=sources[task.key], split=split)
        fingerprints[task.key] = ds._fingerprint
        full_sizes[task.key] = len(ds)
        if limit is not None:
            ds = ds.select(range(min(max(limit, 0), len(ds))))
        loaded[task.key] = ds = arrow_view(ds)
        for request in build_requests(task, ds, split, max_new_tokens):
            request.hash = request_hash(engine.model_id, engine.revision, settings, request.prompt,
                                        [m.sha256 for m in request.media], request.max_new_tokens)
            requests.append(request)

    log = SampleLog(out, rank)
    if overwrite and main:
        _clear_outputs(out, log)
    state.wait_for_everyone()
    done = _logged(log, requests)
    state.wait_for_everyone()  # nobody writes before every process has read the log

    pending = [r for r in requests if r.key not in done]
    mine = pending[rank::world]
    try:
        generated = _generate(engine, mine, loaded, log, specs, em_mode,
                              show=progress and main, world=world)
    finally:
        log.close()
        engine.close()
    state.wait_for_everyone()
    if not main:
        return None

    records = _merged(log, requests)
    task_results, answers, expected = [], {}, {}
    from ..scoring import score_task, write_reports
    from ..submission import write_submission

    for task in specs:
        task_requests = [r for r in requests if r.task == task.key]
        task_records = [records[r.key] for r in task_requests]
        _write_samples(out / f"samples_{task.key}_{split}.jsonl", task_records)
        predictions = {r.id: rec["generation"] for r, rec in zip(task_requests, task_records)}
        references = [{"id": r.id, "outputs": r.target, "meta": r.extra["meta"],
                       "prompt": r.prompt} for r in task_requests]
        task_results.append(score_task(task, references, predictions, em_mode=em_mode,
                                       judge=judge, judge_url=judge_url, split=split))
        answers[task.key] = predictions
        expected[task.key] = [r.id for r in task_requests]
    run_info = _run_info(engine, specs, sources, fingerprints, task_results, split=split,
                         limit=limit, batch_size=engine.batch_size, world=world, seed=seed,
                         max_new_tokens=max_new_tokens, judge=judge, judge_url=judge_url,
                         command=command, started=started, loaded=loaded)
    summary = write_reports(out, task_results, run_info)
    files = {name: out / name for name in ("results.json", "results.md", "model-index.yaml")}
    files["samples"] = [out / f"samples_{t.key}_{split}.jsonl" for t in specs]
    notes = [f"skipped {t.key}: a dialogue task (each answer goes into the next prompt), "
             f"not supported by the runner yet" for t in skipped]
    if split == "test":
        files["submission"] = write_submission(out / "submission.zip", answers, expected)
        partial = [t.key for t in specs if len(expected[t.key]) < full_sizes[t.key]]
        if partial:
            notes.append(f"submission.zip covers only the first {limit} examples of "
                         f"{', '.join(partial)} (--limit): not a leaderboard submission")
    for result in task_results:
        if not result.get("scorable"):
            notes.append(f"{result['task']}/{split}: cannot score here: the gold answers are "
                         f"hidden; the sample log and submission.zip are written, submit the ZIP "
                         f"to the MERA site for scores")
    if engine.model_id == TINY_MODEL_ID:
        notes.append("the built-in tiny model has random weights: its answers are noise "
                     "(a plumbing check, not a score)")
    return {"output_dir": str(out), "run": run_info, "tasks": task_results, "summary": summary,
            "files": files, "notes": notes,
            "counts": {"requested": len(requests), "resumed": len(done),
                       "generated": len(pending), "generated_here": generated}}


def _select_tasks(names) -> tuple[list[TaskSpec], list[TaskSpec]]:
    """The tasks to run and the dialogue tasks left out of a modality or `all`.

    A dialogue task (ruTiE) named on its own is an error: the runner cannot run it yet.
    """
    specs = resolve_tasks(names)
    if not specs:
        raise MeraError("no task given: name one with --tasks (see `mera-multi tasks`)")
    if isinstance(names, str):
        names = names.split(",")
    named = {get_task(n).key for n in names if n.strip() and n.strip() not in ("all",) + MODALITIES}
    for task in specs:
        if task.dialogue and task.key in named:
            raise MeraError(f"{task.key} is a dialogue task (each answer goes into the next "
                            f"prompt); the runner does not support it yet")
    skipped = [t for t in specs if t.dialogue]
    specs = [t for t in specs if not t.dialogue]
    if not specs:
        raise MeraError("no task left to run: dialogue tasks are not supported by the runner yet")
    return specs, skipped


def _process_state(device: str | None):
    """This process's place in a data-parallel run (rank, world size, device).

    On a machine without an accelerator the processes that ``torchrun`` or ``accelerate
    launch --multi_gpu`` start join over gloo; ``accelerate launch --cpu`` starts only one.
    """
    import os

    import torch
    from accelerate import PartialState

    if hasattr(torch, "accelerator"):
        has_accelerator = torch.accelerator.is_available()
    else:
        has_accelerator = torch.cuda.is_available()
    cpu = device == "cpu" or not has_accelerator or \
        os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    # A long collective timeout: a rank may wait at the final barrier while another
    # finishes its share of a big task (torch's default is 30 minutes).
    return PartialState(cpu=cpu, timeout=timedelta(hours=24))


def _sources(data, specs: list[TaskSpec], model) -> dict[str, object]:
    if isinstance(data, dict):
        data = {get_task(k).key: v for k, v in data.items()}
        unknown = set(data) - {t.key for t in specs}
        if unknown:
            raise MeraError(f"--data names tasks that are not run: {', '.join(sorted(unknown))}")
        return {t.key: data.get(t.key) for t in specs}
    if data is None and model is None:
        data = "sample"  # the demo: bundled sample + tiny model
    return {t.key: data for t in specs}


def _safe_name(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.rstrip("/").split("/")[-1]) or "model"


def _make_backend(kind, model, *, batch_size, base_url, api_key, concurrency, timeout,
                  max_retries, **hf_options):
    if not isinstance(kind, str):
        return kind  # a ready backend object (the interface of HFBackend)
    if kind == "openai":
        from .backends.openai import OpenAIBackend

        return OpenAIBackend(model, base_url, api_key=api_key, concurrency=concurrency,
                             timeout=timeout, max_retries=max_retries,
                             max_pixels=hf_options["max_pixels"])
    from .backends.hf import HFBackend

    return HFBackend(model, batch_size=batch_size, **hf_options)


def _clear_outputs(out: Path, log: SampleLog) -> None:
    log.clear()
    for pattern in ("samples_*.jsonl", "results.json", "results.md", "model-index.yaml",
                    "submission.zip"):
        for path in out.glob(pattern):
            path.unlink()


def _logged(log: SampleLog, requests: list[Request]) -> dict[tuple, dict]:
    """The requests already answered in the log; other settings on the same ids stop the run."""
    index = log.read()
    done, clashes = {}, []
    for request in requests:
        entries = index.get(request.key)
        if not entries:
            continue
        if request.hash in entries:
            done[request.key] = entries[request.hash]
        else:
            clashes.append(request)
    if clashes:
        first = clashes[0]
        raise MeraError(
            f"{log.dir.parent} holds a run with other settings: {len(clashes)} of the requested "
            f"examples (e.g. {first.task} id={first.id}) were logged for another model, revision, "
            f"generation settings or prompt (the request hashes differ). Use a new --output-dir, "
            f"or --overwrite to replace that run")
    return done


def make_batches(requests: list[Request], batch_size: int) -> list[list[Request]]:
    """Batches of one task each, similar prompt lengths together (less padding)."""
    batches = []
    by_task: dict[str, list[Request]] = {}
    for request in requests:
        by_task.setdefault(request.task, []).append(request)
    for task_requests in by_task.values():
        ordered = sorted(task_requests, key=lambda r: (-len(r.prompt), r.id))
        batches += [ordered[i:i + batch_size] for i in range(0, len(ordered), batch_size)]
    return batches


def _generate(engine, mine, loaded, log, specs, em_mode, *, show: bool, world: int) -> int:
    from tqdm.auto import tqdm

    from ..metric_fns import extract_answer

    by_key = {t.key: t for t in specs}
    if mine and hasattr(engine, "load"):
        engine.load()  # load errors before the progress bar starts
    bar = tqdm(total=len(mine), disable=not show, unit="ex",
               desc="generating" + (f" (rank 0 of {world})" if world > 1 else ""))
    count = 0
    try:
        for batch in make_batches(mine, engine.batch_size):
            task = by_key[batch[0].task]
            load_media(batch, loaded[task.key])
            t0 = time.perf_counter()
            generations = engine.generate(batch)
            seconds = time.perf_counter() - t0
            drop_media(batch)
            scores = _batch_scores(task, batch, generations, em_mode)
            log.append([{
                "task": r.task, "split": r.split, "id": r.id, "prompt": r.prompt,
                "media_sha256": [m.sha256 for m in r.media], "target": r.target,
                "generation": g, "extracted": extract_answer(g, task.choices or None),
                "metrics": scores.get(r.id, {}), "time_s": round(seconds / len(batch), 4),
                "model": engine.model_id, "request_hash": r.hash,
            } for r, g in zip(batch, generations)])
            count += len(batch)
            bar.update(len(batch))
    finally:
        bar.close()
    return count


def _batch_scores(task, batch, generations, em_mode) -> dict[int, dict]:
    """Official per-example metrics for one batch (empty where the gold is hidden)."""
    from ..scoring import per_example_scores

    refs = [{"id": r.id, "outputs": r.target} for r in batch]
    scores = per_example_scores(task, refs, {r.id: g for r, g in zip(batch, generations)},
                                em_mode)
    return {r.id: {m: float(s[i]) for m, s in scores.items()} for i, r in enumerate(batch)}


def _merged(log: SampleLog, requests: list[Request]) -> dict[tuple, dict]:
    index = log.read()
    records, missing = {}, []
    for request in requests:
        record = (index.get(request.key) or {}).get(request.hash)
        if record is None:
            missing.append(request)
        else:
            records[request.key] = record
    if missing:
        raise MeraError(f"{len(missing)} examples have no line in the sample log after "
                        f"generation (e.g. {missing[0].task} id={missing[0].id}); did a process "
                        f"fail? Rerun the same command to finish them")
    return records


def _write_samples(path: Path, records: list[dict]) -> None:
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        for record in sorted(records, key=lambda r: r["id"]):
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.replace(path)


def _run_info(engine, specs, sources, fingerprints, task_results, *, split, limit, batch_size,
              world, seed, max_new_tokens, judge, judge_url, command, started, loaded) -> dict:
    from ..provenance import command_line, package_versions

    info = engine.info()
    return {
        "mode": "evaluate",
        "model": info.pop("model"),
        "revision": info.pop("revision"),
        "backend": info.pop("backend"),
        "dtype": info.pop("dtype", None),
        "backend_options": info,
        "generation": {"do_sample": False, "num_beams": 1,
                       "max_new_tokens": {t.key: max_new_tokens or t.max_new_tokens for t in specs}},
        "prompt_source": "the dataset's per-example `instruction` (MERA prompts), rendered "
                         + ("with the model's chat template" if info.get("prompt_mode") != "plain"
                            else "as plain text") + "; media placeholders in place",
        "tasks": [t.key for t in specs],
        "split": split,
        "limit": limit,
        "n_examples": {t.key: len(loaded[t.key]) for t in specs},
        "dataset_source": {t.key: str(sources[t.key] or t.hub_id) for t in specs},
        "dataset_fingerprint": fingerprints,
        "metric_modes": {r["task"]: r.get("metric_modes", {}) for r in task_results},
        "judge": judge_url or (str(judge) if judge else None),
        "batch_size": batch_size,
        "num_processes": world,
        "seed": seed,
        "versions": package_versions(),
        "command": _scrub(command or command_line()),
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 2),
    }


def _scrub(command: str) -> str:
    """The command line with any API key value masked."""
    return re.sub(r"(--api-key[= ])\S+", r"\1***", command)
