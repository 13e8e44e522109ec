"""What a command's outputs are made from, as one sha256: the answers and sample-log
records, the run record's fields (but when it ran: the sessions, the preflight's
timings), the scoring options, each task's declaration and data (its rows hashed), this
package's code files and the libraries' versions. The outputs are a function of these and of
nothing else, so a rerun whose fingerprint is the one recorded with the outputs, and
whose outputs still hold what was written, would write the same files again
(:func:`mera_multi_hf.pipeline.outcome.score_and_write` then keeps them)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

# the package's own files that make outputs (the bundled sample data are data: hashed
# with the rows of the split they make)
CODE_SUFFIXES = (".py", ".j2", ".js", ".css", ".html")


def outputs_fingerprint(loaded: list, answered, options) -> str:
    """sha256 of everything the score and write steps read (``answered``: an
    :class:`~mera_multi_hf.pipeline.outcome.Answered`; ``options``: ScoringOptions)."""
    from mera_multi_hf.core.provenance import package_versions

    inputs = {
        "code": code_stamp(),
        "versions": package_versions(),
        "options": dataclasses.asdict(options),
        "tasks": [_task_inputs(d) for d in loaded],
        "answers": answered.answers,
        "logs": answered.logs,
        "given_logs": answered.given_logs,
        "fields": steady_fields(answered.fields),
        "notes": answered.notes,
        "models": answered.models,
        "logged": sorted([*key, n] for key, n in answered.logged.items()),
        "context": answered.context,
    }
    # in the order they were made (the sample log's is the examples'): a mixed-type key
    # never stops a run here, and another order only means the outputs written again
    text = json.dumps(inputs, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _task_inputs(d) -> dict:
    """A loaded task as far as the outputs see it: its declaration (a frozen dataclass of
    plain values), where it was read, its rows' hash, the examples taken, its privacy."""
    return {
        "declaration": repr(d.task),
        "split": d.split,
        "source": str(d.source),
        "content": d.content,
        "fingerprint": d.fingerprint,
        "examples": [e.id for e in d.examples],
        "full_size": d.full_size,
        "private": d.private,
        "privacy_note": d.privacy_note,
    }


def steady_fields(fields: dict) -> dict:
    """The run record's fields less when the command ran: the sessions (the manifest
    lists every one) and how long the preflight's checks took."""
    steady = {k: v for k, v in fields.items() if k != "sessions"}
    preflight = steady.get("preflight")
    if isinstance(preflight, dict):
        checks = [
            {k: v for k, v in check.items() if k != "seconds"}
            for check in preflight.get("checks") or []
        ]
        steady["preflight"] = {
            **{k: v for k, v in preflight.items() if k != "seconds"},
            "checks": checks,
        }
    return steady


@functools.cache  # the code does not change while a command runs
def code_stamp() -> str:
    """sha256 of this package's code files: each one's name, size and modification time
    (read from the folder alone: a file read whole would cost a second on a busy disk).
    Any edit, checkout or reinstall of the code, released or not, changes it, and the
    outputs of a rerun are written again."""
    digest = hashlib.sha256()
    for parts, path in sorted(_code_files(str(Path(__file__).resolve().parent.parent), ())):
        info = os.stat(path)
        digest.update(f"{'/'.join(parts)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _code_files(folder: str, parts: tuple):
    """(path parts below the package, path) of each code file, as ``Path.rglob("*")``
    finds them (links to folders not followed, unreadable folders skipped), in a fifth
    of its time: os.scandir's entries, not a Path object each."""
    try:
        with os.scandir(folder) as found:
            entries = list(found)
    except OSError:
        return
    for entry in entries:
        named = (*parts, entry.name)
        if entry.name == "__pycache__":
            continue
        if os.path.splitext(entry.name)[1] in CODE_SUFFIXES:
            yield named, entry.path
        if entry.is_dir() and not entry.is_symlink():
            yield from _code_files(entry.path, named)
