"""From dataset examples to generation requests, and from requests to chat messages.

A request keeps the rendered prompt (media placeholders such as ``<image>`` left in
place) and one :class:`Media` per placeholder, in placeholder order. Media carry a
sha256 of their bytes (what the sample log keeps); the bytes themselves are read from
the dataset only for the batch being generated, so memory stays bounded on big tasks.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..media import Media, media_bytes
from ..prompts import render_prompt
from ..tasks import TaskSpec


@dataclass
class Request:
    task: str
    split: str
    id: int
    prompt: str                    # rendered text with media placeholders
    media: list[Media]
    max_new_tokens: int
    target: str = ""
    index: int = -1                # row in the dataset the media come from
    hash: str = ""                 # request hash (model + settings + prompt + media)
    extra: dict = field(default_factory=dict)  # the example's meta, for scoring

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task, self.split, self.id)


def arrow_view(ds):
    """``ds`` formatted as Arrow: rows come back with media undecoded (bytes/path dicts).
    Made once per task: ``with_format`` copies the dataset object."""
    return ds if ds.format["type"] == "arrow" else ds.with_format("arrow")


def _arrow_rows(ds, indices):
    return arrow_view(ds)[list(indices)].to_pylist()


def build_requests(task: TaskSpec, ds, split: str, max_new_tokens: int | None = None,
                   chunk: int = 64) -> list[Request]:
    """One request per example of ``ds`` (one split of a task), in dataset order."""
    out: list[Request] = []
    n_tokens = max_new_tokens or task.max_new_tokens
    ds = arrow_view(ds)
    for start in range(0, len(ds), chunk):
        rows = _arrow_rows(ds, range(start, min(start + chunk, len(ds))))
        for offset, row in enumerate(rows):
            text, items = render_prompt(task, row)
            media = [Media(kind=task.modality, field=name,
                           sha256=hashlib.sha256(media_bytes(value)).hexdigest())
                     for name, value in items]
            out.append(Request(task=task.key, split=split, id=int(row["meta"]["id"]),
                               prompt=text, media=media, max_new_tokens=n_tokens,
                               target=row.get("outputs") or "", index=start + offset,
                               extra={"meta": row["meta"]}))
    return out


def load_media(requests: list[Request], ds) -> None:
    """Read the media bytes of these requests from the dataset they came from."""
    wanted = [r for r in requests if r.media and r.media[0].data is None]
    if not wanted:
        return
    inputs = arrow_view(ds)[[r.index for r in wanted]].column("inputs").to_pylist()
    for request, row in zip(wanted, inputs):
        for media in request.media:
            media.data = media_bytes(row[media.field])


def drop_media(requests: list[Request]) -> None:
    for request in requests:
        for media in request.media:
            media.data = None


