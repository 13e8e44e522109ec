"""From dataset examples to generation requests, and from requests to chat messages.

A request keeps the rendered prompt (media placeholders such as ``<image>`` left in
place) and one :class:`Media` per placeholder, in placeholder order. Media carry a
sha256 of their bytes (what the sample log keeps); the bytes themselves are read from
the dataset only for the batch being generated, so memory stays bounded on big tasks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.data.examples import arrow_view, example_inputs, release_pages
from mera_multi_hf.data.media_decode import Media, media_bytes
from mera_multi_hf.tasks.spec import DEFAULT_STOP, TaskSpec


@dataclass
class Turn:
    """An earlier question of a dialogue (ruTiE) as the history shows it: its text, its
    media (placeholders in the text mark where) and the model's earlier answer."""

    text: str
    media: list[Media]
    answer: str
    index: int = -1  # row in the dataset its media come from


@dataclass
class Request:
    task: str
    split: str
    id: int
    prompt: str  # rendered text with media placeholders
    media: list[Media]
    max_new_tokens: int
    index: int = -1  # row in the dataset the media come from
    hash: str = ""  # request hash (model + settings + prompt + media)
    prompt_variant: str = ""  # the example's prompt variant: logged, not in the hash
    # generation stops at the first of these strings (or EOS) and the text is cut there
    stop: tuple[str, ...] = DEFAULT_STOP
    history: list[Turn] = field(default_factory=list)  # earlier turns (dialogue tasks)
    # prompt tokens the backend cut from the left to fit the model (the harness's rule)
    tokens_cut: int = 0
    # tokens the model read and wrote, as the backend counted them (the chat server's `usage`)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # why its media could not be decoded (within the limits and the memory budget): the
    # example is logged as failed, with an empty answer, and retried by a rerun
    failed: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task, self.split, self.id)

    def all_media(self) -> list[Media]:
        """Every media item the model gets, in order: the history's, then its own."""
        return [m for turn in self.history for m in turn.media] + self.media

    def media_rows(self) -> list[tuple[int, list[Media]]]:
        return [(t.index, t.media) for t in self.history] + [(self.index, self.media)]


def hash_media(
    task: TaskSpec, examples: list, ds, chunk: int = 64, limits: Limits = DEFAULT_LIMITS
) -> list[list[Media]]:
    """The media of each example (hashes only, no bytes kept), read chunk by chunk."""
    return [
        [
            Media(
                kind=task.modality,
                field=name,
                limits=limits,
                sha256=hashlib.sha256(media_bytes(row[name])).hexdigest(),
            )
            for name in example.media_fields
        ]
        for example, row in example_inputs(task, examples, ds, chunk)
    ]


def build_requests(
    task: TaskSpec,
    examples: list,
    ds,
    split: str,
    max_new_tokens: int | None = None,
    stop: tuple[str, ...] | None = None,
    chunk: int = 64,
    limits: Limits = DEFAULT_LIMITS,
) -> list[Request]:
    """One request per example (:class:`mera_multi_hf.data.examples.Example`) of one split of a
    task, in order. Media bytes are read chunk by chunk, only to hash them; ``limits``
    bound what they may declare when they are decoded."""
    n_tokens = max_new_tokens or task.max_new_tokens
    stops = tuple(stop if stop is not None else task.stop)
    return [
        Request(
            task=task.key,
            split=split,
            id=example.id,
            prompt=example.prompt,
            media=media,
            max_new_tokens=n_tokens,
            index=example.index,
            stop=stops,
            prompt_variant=example.prompt_variant,
        )
        for example, media in zip(examples, hash_media(task, examples, ds, chunk, limits))
    ]


def load_media(requests: list[Request], ds) -> None:
    """Read the media bytes of these requests (their history's too) from their dataset:
    only the media fields' values are read from Arrow, not the rows' other inputs."""
    wanted = [
        (row, media)
        for r in requests
        for row, media in r.media_rows()
        if media and media[0].data is None
    ]
    if not wanted:
        return
    inputs = arrow_view(ds)[[row for row, _ in wanted]].column("inputs")
    values = {
        name: [v for chunk in inputs.chunks for v in chunk.field(name).to_pylist()]
        for name in {item.field for _, media in wanted for item in media}
    }
    for i, (_, media) in enumerate(wanted):
        for item in media:
            item.data = media_bytes(values[item.field][i])
    # the bytes are copied out: the mapped pages go back once enough have come in
    release_pages(ds, [len(item.data) for _, media in wanted for item in media])


def drop_media(requests: list[Request]) -> None:
    for request in requests:
        for media in request.all_media():
            media.data = None
