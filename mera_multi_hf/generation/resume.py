"""What the sample log already holds for a run: the requests answered there (resumed),
a clash with a run under other settings, the merged records the scores are made of, and
the lines skipped as damaged."""

from __future__ import annotations

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.request import Request
from mera_multi_hf.generation.samplelog import SampleLog


def answered(before: dict, request: Request) -> bool:
    """The log holds an answer to resume (a failed example is tried again)."""
    record = before.get(request.key, {}).get(request.hash)
    return record is not None and not record.get("failed")


def logged(log: SampleLog | None, index: dict, requests: list[Request]) -> dict[tuple, dict]:
    """The requests already answered in the log; other settings on the same ids stop the run."""
    done, clashes = {}, []
    for request in requests:
        entries = index.get(request.key)
        if not entries:
            continue
        if request.hash in entries and _same_request(entries[request.hash], request):
            done[request.key] = entries[request.hash]
        elif request.hash in entries or not request.history:
            clashes.append(request)  # (a dialogue turn may follow a changed earlier answer)
    if clashes:
        first = clashes[0]
        where = log.folder.path if log else "the output folder"
        raise MeraError(
            f"{where} holds a run with other settings: {len(clashes)} of the requested "
            f"examples (e.g. {first.task} id={first.id}) were logged for another model, revision, "
            f"generation settings or prompt, or edited since. Use a new --output-dir, "
            f"or --overwrite to replace that run"
        )
    return done


def _same_request(record: dict, request: Request) -> bool:
    """A line with the request's hash whose prompt and media are the request's own (an
    edited line, or one written under other settings, is never resumed)."""
    return record.get("prompt") == request.prompt and record.get("media_sha256") == [
        m.sha256 for m in request.media
    ]


def reusable_turn(record: dict | None, log: SampleLog | None) -> bool:
    """A logged dialogue turn to reuse: not a failed one while generating (a rerun tries
    it again); the main process's replay (no log) takes what the log holds."""
    return record is not None and not (log is not None and record.get("failed"))


def merged(index: dict, requests: list[Request]) -> dict[tuple, dict]:
    records, missing = {}, []
    for request in requests:
        record = (index.get(request.key) or {}).get(request.hash)
        if record is None:
            missing.append(request)
        else:
            records[request.key] = record
    if missing:
        raise MeraError(
            f"{len(missing)} examples have no line in the sample log after "
            f"generation (e.g. {missing[0].task} id={missing[0].id}); did a process "
            f"fail? Rerun the same command to finish them"
        )
    return records


def logged_counts(index: dict) -> dict[tuple, int]:
    """(task, split) -> examples in the sample log (what a report may cover)."""
    counts: dict[tuple, int] = {}
    for task, split, _ in index:
        counts[(task, split)] = counts.get((task, split), 0) + 1
    return counts


def warn_damaged(damaged: list[str]) -> None:
    """One line per sample-log line skipped: the file is left as it is (never rewritten
    for it) and the example is generated again; results.json counts them."""
    import sys

    for line in damaged[:20]:
        print(
            f"mera-multi: warning: {line}; skipped (its example is generated again)",
            file=sys.stderr,
        )
    if len(damaged) > 20:
        print(
            f"mera-multi: warning: ... and {len(damaged) - 20} more damaged sample-log lines",
            file=sys.stderr,
        )
