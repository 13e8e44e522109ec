"""The sample log: one JSON line per finished example, the unit of resumption.

Each process appends to its own shard, ``<out>/logs/samples-rank<r>.jsonl``, and
flushes after every batch. A restarted run reads every shard, whatever the number of
processes that wrote them, and skips an example whose (task, split, id) is logged with
the same request hash. A line torn by a kill is ignored (and cut off before the shard
is appended to again). Media are logged as sha256 hashes, never as bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import json_read
from ..errors import MeraError

LOG_DIR = "logs"


def request_hash(model: str, revision: str | None, settings: dict, prompt: str,
                 media_hashes: list[str], max_new_tokens: int, stop=(), history=()) -> str:
    """What an answer depends on: model, revision, generation settings (the stop strings
    and token limit included), prompt, media, and a dialogue's earlier turns."""
    payload = {"model": model, "revision": revision, "settings": settings,
               "max_new_tokens": max_new_tokens, "stop": list(stop),
               "prompt": prompt, "media": media_hashes}
    if history:
        payload["history"] = list(history)
    payload = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


def read_lines(path: Path, damaged: list | None = None):
    """The complete records of one shard. A torn last line (a kill) is left for the next
    append to cut; any other line that is unreadable (json_read's limits) or not a record
    of this tool is skipped in place, and ``damaged`` gets "file:line: why" for it."""
    with open(path, "rb") as f:
        for number, raw in json_read.bounded_lines(f):
            if not raw.endswith(b"\n") and len(raw) <= json_read.MAX_LINE_BYTES:
                break  # the last line of a killed run
            if not raw.strip():
                continue
            try:
                record = json_read.loads(raw, f"{path}:{number}", max_bytes=json_read.MAX_LINE_BYTES,
                                         object_pairs_hook=None)  # our own lines: no repeats
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
    return (isinstance(record, dict) and isinstance(record.get("id"), int)
            and not isinstance(record.get("id"), bool)
            and all(isinstance(record.get(k), str)
                    for k in ("task", "split", "request_hash", "generation")))


class SampleLog:
    """The shards under ``<out>/logs``; only those that the folder's marker lists
    (``owned``: names relative to ``out``) are read, appended to or cleared: a file of
    someone else's of the same kind of name is never touched."""

    def __init__(self, out_dir: str | Path, rank: int = 0, *, owned=()):
        self.dir = Path(out_dir) / LOG_DIR
        self.path = self.dir / f"samples-rank{rank}.jsonl"
        self.owned = {name for name in owned if name.startswith(f"{LOG_DIR}/")}
        self._file = None
        self.damaged: list[str] = []  # "file:line: why" of the lines the last read skipped

    def shards(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.glob("samples-rank*.jsonl")
                      if f"{LOG_DIR}/{p.name}" in self.owned and p.is_file()
                      and not p.is_symlink())

    def read(self) -> dict[tuple, dict[str, dict]]:
        """Every logged record: (task, split, id) -> {request hash: record} (first wins)."""
        index: dict[tuple, dict[str, dict]] = {}
        self.damaged = []
        for shard in self.shards():
            for record in read_lines(shard, self.damaged):
                key = (record["task"], record["split"], int(record["id"]))
                index.setdefault(key, {}).setdefault(record["request_hash"], record)
        return index

    def append(self, records: list[dict]) -> None:
        if self._file is None:
            if f"{LOG_DIR}/{self.path.name}" not in self.owned:
                raise MeraError(f"{self.path} is not listed in the output folder's marker; "
                                "it is not this run's to write")
            self.dir.mkdir(parents=True, exist_ok=True)
            _cut_torn_tail(self.path)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        self._file.flush()  # a kill after this loses nothing

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def clear(self) -> None:
        for shard in self.shards():
            shard.unlink()


def _cut_torn_tail(path: Path) -> None:
    """Drop a partial last line so that the next record starts on a line of its own."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
        f.truncate(data.rfind(b"\n") + 1)
