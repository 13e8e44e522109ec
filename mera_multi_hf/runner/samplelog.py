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
from pathlib import Path


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


def read_lines(path: Path):
    """The complete records of one shard; a torn or garbled line is skipped."""
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # the last line of a killed run
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if _well_formed(record):
                yield record


def _well_formed(record) -> bool:
    """A line this project wrote: anything else (edited, foreign) is not trusted, so its
    example is generated again rather than scored from a guess."""
    return (isinstance(record, dict) and isinstance(record.get("id"), int)
            and not isinstance(record.get("id"), bool)
            and all(isinstance(record.get(k), str)
                    for k in ("task", "split", "request_hash", "generation")))


class SampleLog:
    """The shards under ``<out>/logs`` of an output folder (an
    :class:`~mera_multi_hf.outputs.OutputFolder` of kind run); only those that the
    folder's marker lists are read, and every append, cut and removal goes through the
    folder: a file of someone else's, or a link, is never touched."""

    def __init__(self, folder, rank: int = 0):
        self.folder = folder
        self.name = f"{LOG_DIR}/samples-rank{rank}.jsonl"
        self.path = folder.path / self.name
        self._file = None

    def shards(self) -> list[Path]:
        owned = self.folder.owned()
        names = sorted(n for n in owned if n.startswith(f"{LOG_DIR}/samples-rank")
                       and n.endswith(".jsonl"))
        return [self.folder.path / n for n in names
                if (self.folder.path / n).is_file() and not (self.folder.path / n).is_symlink()]

    def read(self) -> dict[tuple, dict[str, dict]]:
        """Every logged record: (task, split, id) -> {request hash: record} (first wins,
        but an answer replaces a failed example's line: a rerun tried it again)."""
        index: dict[tuple, dict[str, dict]] = {}
        for shard in self.shards():
            for record in read_lines(shard):
                key = (record["task"], record["split"], int(record["id"]))
                kept = index.setdefault(key, {})
                first = kept.setdefault(record["request_hash"], record)
                if first.get("failed") and not record.get("failed"):
                    kept[record["request_hash"]] = record
        return index

    def append(self, records: list[dict]) -> None:
        if self._file is None:
            self.folder.cut_torn_tail(self.name)
            self._file = self.folder.open_append(self.name)
        self._file.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        self._file.flush()  # a kill after this loses nothing

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def clear(self) -> None:
        for shard in self.shards():
            self.folder.remove(str(shard.relative_to(self.folder.path)))
