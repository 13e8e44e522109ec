"""The sample log: one JSON line per finished example, the unit of resumption.

Each process appends to its own shard, ``<out>/logs/samples-rank<r>.jsonl``, and
flushes after every batch. A restarted run reads every shard, whatever the number of
processes that wrote them, and skips an example whose (task, split, id) is logged with
the same request hash. A line torn by a kill is ignored (and cut off before the shard
is appended to again). Media are logged as sha256 hashes, never as bytes. A record
carries its example's ``prompt_variant`` (the samples file's; shards written before
variants were recorded have none, and are read all the same: it is not in the request
hash and no reader requires it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.input_files import open_binary

LOG_DIR = "logs"
# a line's encoder, made once (json.dumps with an option makes one per call)
_LINE = json.JSONEncoder(ensure_ascii=False)


def request_hash(
    model: str,
    revision: str | None,
    settings: dict,
    prompt: str,
    media_hashes: list[str],
    max_new_tokens: int,
    stop=(),
    history=(),
) -> str:
    """What an answer depends on: model, revision, generation settings (the stop strings
    and token limit included), prompt, media, and a dialogue's earlier turns."""
    payload = {
        "model": model,
        "revision": revision,
        "settings": settings,
        "max_new_tokens": max_new_tokens,
        "stop": list(stop),
        "prompt": prompt,
        "media": media_hashes,
    }
    if history:
        payload["history"] = list(history)
    payload = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


def read_lines(path: Path, damaged: list | None = None):
    """The complete records of one shard. A torn last line (a kill) is left for the next
    append to cut; any other line that is unreadable (json_read's limits) or not a record
    of this tool is skipped in place, and ``damaged`` gets "file:line: why" for it."""
    with open_binary(path) as f:
        for number, raw in json_read.bounded_lines(f):
            if not raw.endswith(b"\n") and len(raw) <= json_read.MAX_LINE_BYTES:
                break  # the last line of a killed run
            if not raw.strip():
                continue
            try:
                record = json_read.loads(
                    raw,
                    f"{path}:{number}",
                    max_bytes=json_read.MAX_LINE_BYTES,
                    object_pairs_hook=None,
                )  # our own lines: no repeats
            except json_read.JsonReadError as err:
                _note(damaged, str(err))
                continue
            if _well_formed(record):
                yield record
            else:
                _note(damaged, f"{path}:{number}: not a sample-log record of this tool")


def _note(damaged: list | None, line: str) -> None:
    if damaged is not None:
        damaged.append(line)


def _well_formed(record) -> bool:
    """A line this project wrote: anything else (edited, foreign) is not trusted, so its
    example is generated again rather than scored from a guess."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), int)
        and not isinstance(record.get("id"), bool)
        and all(
            isinstance(record.get(k), str) for k in ("task", "split", "request_hash", "generation")
        )
    )


class SampleLog:
    """The shards under ``<out>/logs`` of an output folder (an
    :class:`~mera_multi_hf.core.outputs.OutputFolder` of kind run); only those that the
    folder's marker lists are read, and every append, cut and removal goes through the
    folder: a file of someone else's, or a link, is never touched."""

    def __init__(self, folder, rank: int = 0):
        self.folder = folder
        self.name = f"{LOG_DIR}/samples-rank{rank}.jsonl"
        self.path = folder.path / self.name
        self._file = None
        self.damaged: list[str] = []  # "file:line: why" of the lines the last read skipped
        self._before_first = None  # what must be done before the first line (first_waits_for)

    def first_waits_for(self, done) -> None:
        """Call ``done`` (it waits for what must be on disk first) before the first line."""
        self._before_first = done

    def shards(self) -> list[Path]:
        owned = self.folder.owned()
        names = sorted(
            n for n in owned if n.startswith(f"{LOG_DIR}/samples-rank") and n.endswith(".jsonl")
        )
        return [
            self.folder.path / n
            for n in names
            if (self.folder.path / n).is_file() and not (self.folder.path / n).is_symlink()
        ]

    def read(self) -> dict[tuple, dict[str, dict]]:
        """Every logged record: (task, split, id) -> {request hash: record} (first wins,
        but an answer replaces a failed example's line: a rerun tried it again)."""
        index: dict[tuple, dict[str, dict]] = {}
        self.damaged = []
        for shard in self.shards():
            for record in read_lines(shard, self.damaged):
                key = (record["task"], record["split"], int(record["id"]))
                kept = index.setdefault(key, {})
                first = kept.setdefault(record["request_hash"], record)
                if first.get("failed") and not record.get("failed"):
                    kept[record["request_hash"]] = record
        return index

    def append(self, records: list[dict]) -> None:
        if self._file is None:
            if self._before_first is not None:
                self._before_first()
            self.folder.cut_torn_tail(self.name)
            self._file = self.folder.open_append(self.name)
        self._file.write("".join(_LINE.encode(r) + "\n" for r in records))
        self._file.flush()  # a kill after this loses nothing

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def clear(self) -> None:
        for shard in self.shards():
            self.folder.remove(str(shard.relative_to(self.folder.path)))
