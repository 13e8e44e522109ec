"""The generation stage: this process's share of the pending requests through the
backend into the sample log. A backend with ``stream`` (openai) answers request by
request, each logged (and flushed) as it completes; the others (hf) go in batches of one
task each, the log flushed after every batch."""

from __future__ import annotations

import time

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MediaError
from mera_multi_hf.generation.backends import capabilities_of, model_for
from mera_multi_hf.generation.request import Request, drop_media, load_media
from mera_multi_hf.generation.samplelog import SampleLog


def make_batches(requests: list[Request], batch_size: int) -> list[list[Request]]:
    """Batches of one task each, similar prompt lengths together (less padding)."""
    batches = []
    by_task: dict[str, list[Request]] = {}
    for request in requests:
        by_task.setdefault(request.task, []).append(request)
    for task_requests in by_task.values():
        ordered = sorted(task_requests, key=lambda r: (-len(r.prompt), r.id))
        batches += [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    return batches


def log_record(request: Request, generation: str, seconds: float, model_id: str) -> dict:
    """What the sample log keeps of one answer: never media bytes, never gold answers
    (the derived files take those from the current references). A lone surrogate in
    the generation (a server's reply may hold one; no UTF-8 writer takes it) is replaced
    by U+FFFD here, where every generation enters the log, and counted."""
    generation, replaced = json_read.replace_unencodable(generation)
    record = {
        "task": request.task,
        "split": request.split,
        "id": request.id,
        "prompt": request.prompt,
        "media_sha256": [m.sha256 for m in request.media],
        "generation": generation,
        "time_s": round(seconds, 4),
        "model": model_id,
        "request_hash": request.hash,
    }
    if request.prompt_variant:  # as the samples file has it (older logs: none)
        record["prompt_variant"] = request.prompt_variant
    if request.tokens_cut:  # the prompt was cut to fit the model's context
        record["prompt_tokens_cut"] = request.tokens_cut
    if request.failed:
        record["failed"] = request.failed
    notes = list(dict.fromkeys(n for m in request.all_media() for n in m.notes))
    if notes:  # what decoding did (a video scan cut short)
        record["media_notes"] = notes
    if replaced:
        record["unencodable_replaced"] = replaced
    return record


class _NoBar:
    """The progress bar of a run that shows none."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool, label: str):
    """tqdm's bar, or none (tqdm.auto, imported, costs a run a fifth of a second)."""
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="ex", desc=label)


def generate_into_log(
    engine,
    mine: list[Request],
    datasets: dict,
    log: SampleLog,
    *,
    show: bool,
    label: str = "generating",
) -> dict[tuple, str]:
    """Generate ``mine`` (a list of requests) into the log; returns the generations by
    request key."""
    if mine:
        engine.load()  # load errors before the progress bar starts
    bar = _progress(len(mine), show, label)
    generated: dict[tuple, str] = {}
    try:
        steps = (
            _streamed(engine, mine, datasets)
            if capabilities_of(engine).streaming
            else _batched(engine, mine, datasets)
        )
        for done in steps:  # (request, generation, seconds) triples, logged as they come
            records = [
                log_record(r, g, s, model_for(engine, {m.kind for m in r.all_media()}))
                for r, g, s in done
            ]
            log.append(records)  # a dialogue's next turn sees the answer as logged
            generated.update((r.key, rec["generation"]) for (r, _, _), rec in zip(done, records))
            bar.update(len(done))
    finally:
        bar.close()
    return generated


def _batched(engine, mine: list[Request], datasets: dict):
    for batch in make_batches(mine, engine.batch_size):
        load_media(batch, datasets[batch[0].task])
        for part in budget_parts(batch, getattr(engine, "max_frames", 1)):
            yield from _generated(engine, part)
        drop_media(batch)


def budget_parts(batch: list[Request], max_frames: int) -> list[list[Request]]:
    """The batch split so that each part's media, by the memory rule, fit the budget
    together (an item over it alone goes alone, and fails when it is decoded)."""
    parts, held = [[]], 0
    for request in batch:
        media = request.all_media()
        cost = sum(m.cost(max_frames) for m in media)
        budget = media[0].limits.memory_budget if media else cost
        if parts[-1] and held + cost > budget:
            parts.append([])
            held = 0
        parts[-1].append(request)
        held += cost
    return parts


def _generated(engine, part: list[Request]):
    """The part generated; a media item that does not decode fails only its example."""
    started = time.perf_counter()
    try:
        generations = engine.generate(part)
    except MediaError as err:
        if len(part) > 1:  # which one: each alone
            for request in part:
                yield from _generated(engine, [request])
            return
        part[0].failed = str(err)
        yield [(part[0], "", 0.0)]
        return
    seconds = (time.perf_counter() - started) / len(part)
    yield [(r, g, seconds) for r, g in zip(part, generations)]


def _streamed(engine, mine: list[Request], datasets: dict):
    def prepare(requests: list[Request]) -> None:  # media read just before sending
        for task in dict.fromkeys(r.task for r in requests):
            load_media([r for r in requests if r.task == task], datasets[task])

    for request, generation, seconds in engine.stream(mine, prepare):
        drop_media([request])
        yield [(request, generation, seconds)]
