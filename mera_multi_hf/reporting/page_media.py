"""The pages' data and media: results.html and compare.html hold their rows as compact
JSON (rendered in the browser a page of rows at a time), and their media live beside
them in a folder (``results_media/``, ``compare_media/``), each file once, named by the
sha256 of its bytes, referenced by relative path. A picture that six rows share is one
file; the page grows by a path per medium, not by the medium."""

from __future__ import annotations

import hashlib
import json
import mimetypes
from pathlib import Path

from markupsafe import Markup

from mera_multi_hf.core.outputs import stage_file

SHORT_SHA = 16  # hex digits of the sha256 in a medium's file name (64 bits)


class MediaFolder:
    """The files of a page's media folder (``name``/...), each once: path -> the file
    written into ``stage`` as it is made (a staging folder of the output folder, which
    the page's set of files then moves into place), or -> its bytes without one. Written
    as made, a full-size page's media (every audio clip whole) are never all held.
    ``shown`` keeps the element made of each source medium, so one shared by many rows
    is converted (thumbnail, preview) once."""

    def __init__(self, name: str, stage: Path | None = None):
        self.name, self.stage = name, stage
        self.files: dict[str, bytes | Path] = {}
        self.shown: dict[tuple[str, str], dict] = {}  # (kind, source sha256) -> element

    def add(self, data: bytes, mime: str) -> str:
        """The relative path of ``data`` in the folder (stored on its first add)."""
        base = f"{hashlib.sha256(data).hexdigest()[:SHORT_SHA]}{extension(mime)}"
        path = f"{self.name}/{base}"
        if path not in self.files:
            self.files[path] = (
                bytes(data) if self.stage is None else stage_file(self.stage, base, data)
            )
        return path


def extension(mime: str) -> str:
    """The file extension of a MIME type (``.bin`` for one not known)."""
    known = {"image/jpeg": ".jpg", "audio/wav": ".wav", "video/webm": ".webm"}
    return known.get(mime) or mimetypes.guess_extension(mime or "") or ".bin"


def page_data(rows: list[dict], **extra) -> Markup:
    """The rows as the page's JSON: ``fields`` (every key the rows have, in first-seen
    order) and one list of values per row; ``extra``: more top-level entries. Safe
    inside a <script> element: ``<``, ``>`` and ``&`` are written as JSON escapes."""
    fields = list(dict.fromkeys(key for row in rows for key in row))
    doc = {"fields": fields, "rows": [[row.get(f) for f in fields] for row in rows], **extra}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
