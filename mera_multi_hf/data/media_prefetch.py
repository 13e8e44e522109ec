"""The decode checks of a build, started before the build itself.

`mera-multi build` spends its first second or more importing datasets and pyarrow, on
one core. :class:`MediaPrefetch` starts the decoding processes first: each walks the raw
folder's split files for media paths (every record's, checked or not), reads its share
of the files through the same safe reader and decodes them with the same check
(media_checks), and sends back ``(sha256 of the bytes, result)``. The build reads and
checks every record as before; for each media file it looks up the result for the
sha256 of the very bytes it writes, so a file changed after the early decode, or one
the walk did not reach, is decoded again here: the check always judges the written
bytes. Only results travel between the processes, never media bytes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.media_checks import CRASHED, MEDIA_CHECKS, lower_priority
from mera_multi_hf.data.raw.files import (
    MAX_JSON_BYTES,
    MAX_MEDIA_BYTES,
    forget_resolved_paths,
    media_path,
    read_inside,
)
from mera_multi_hf.data.raw.json_files import parse_json
from mera_multi_hf.data.raw.layout import SPLITS, domain_folders
from mera_multi_hf.tasks.spec import TaskSpec

SEND_EVERY = 16  # results per message


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def media_paths(task: TaskSpec, root: Path) -> Iterator[str]:
    """The media paths the split files name, as the build resolves them, in record order
    (a file that does not parse is skipped: the build reports it)."""
    for prefix in [f"{d}/" for d in domain_folders(task, root)] or [""]:
        for split in SPLITS:
            try:
                doc = parse_json(read_inside(root, f"{prefix}{split}.json", MAX_JSON_BYTES))
                records = doc["data"]
            except Exception:  # anything wrong is the build's to report
                continue
            for record in records if isinstance(records, list) else ():
                inputs = record.get("inputs") if isinstance(record, dict) else None
                for name in task.media_fields if isinstance(inputs, dict) else ():
                    value = inputs.get(name)
                    if isinstance(value, str) and value:
                        yield media_path(root, prefix, value)


def _decode_share(task: TaskSpec, root: str, limits: Limits, share: int, shares: int, conn):
    """In a worker process: decode-check the files whose path falls in ``share`` (each
    file once), sending batches of ``(sha256, result)``, then None."""
    lower_priority()
    forget_resolved_paths()
    check, seen, batch = MEDIA_CHECKS[task.modality], set(), []
    try:
        for relative in media_paths(task, Path(root)):
            if relative in seen or zlib.crc32(relative.encode()) % shares != share:
                continue
            seen.add(relative)
            try:
                data = read_inside(root, relative, MAX_MEDIA_BYTES)
            except Exception:  # the build reads it again and reports it
                continue
            batch.append((digest(data), check(data, limits)))
            if len(batch) == SEND_EVERY:
                conn.send(batch)
                batch = []
    except Exception:  # what is not decoded here is decoded by the build
        pass
    conn.send(batch)
    conn.send(None)
    conn.close()


class MediaPrefetch:
    """Decoding processes started before the build (``processes`` of them, at a lower
    priority), and a thread here that collects their results; :meth:`result` gives the
    check's result for bytes the build read. Use as a context manager: the processes
    end with it."""

    def __init__(self, task: TaskSpec, root: str | Path, limits: Limits, processes: int):
        import multiprocessing

        context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
        self.check, self.limits = MEDIA_CHECKS[task.modality], limits
        self._results: dict[bytes, str | None] = {}
        self._changed = threading.Condition()
        self._running, self._crashed = processes, False
        self._processes, pipes = [], []
        for share in range(processes):  # all forked before the thread starts
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_decode_share,
                args=(task, str(root), limits, share, processes, send),
                daemon=True,
            )
            process.start()
            send.close()
            self._processes.append(process)
            pipes.append(receive)
        threading.Thread(target=self._collect, args=(pipes,), daemon=True).start()

    def _collect(self, pipes: list) -> None:
        from multiprocessing.connection import wait

        while pipes:
            for conn in wait(pipes):
                try:
                    batch = conn.recv()
                except (EOFError, OSError):  # ended without its last message: died
                    batch, self._crashed = None, True
                with self._changed:
                    if batch is None:
                        pipes.remove(conn)
                        conn.close()
                        self._running -= 1
                    else:
                        self._results.update(batch)
                    self._changed.notify_all()

    def result(self, data: bytes) -> str | None:
        """The decode check's result for ``data``: the early one for these very bytes,
        else (a file changed since, or not reached) decoded here."""
        key = digest(data)
        with self._changed:
            while key not in self._results and self._running:
                self._changed.wait()
            if key in self._results:
                return self._results[key]
            if self._crashed:
                raise MeraError(CRASHED)
        return self.check(data, self.limits)

    def checks(self, media: list) -> list:
        """check_all's checks of one record's media (``(field, value, bytes)``), run in
        the building process: look-ups of the early results."""
        return [functools.partial(self.result, data) for _, _, data in media]

    def __enter__(self) -> MediaPrefetch:
        return self

    def __exit__(self, *exc) -> None:
        for process in self._processes:
            if process.is_alive():
                process.terminate()
            process.join()


def prefetch(task: TaskSpec, root: str | Path, limits: Limits, num_proc: int | None):
    """A MediaPrefetch over the raw folder ``root`` for a build of ``num_proc`` processes
    (default: one per CPU): the building one, which checks every record and writes, and
    the others, which decode from the start. None where the build decodes in its own
    process (``num_proc`` 1) or ``root`` is not a folder (the build says so)."""
    processes = num_proc or default_workers()
    if processes <= 1 or not os.path.isdir(root):
        return None
    return MediaPrefetch(task, root, limits, processes - 1)
