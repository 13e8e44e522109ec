"""The load stage of a run: one :class:`LoadedTask` per task, the split as loaded with
its examples, and whether its answers are private, decided once (the task's default,
then what the data says: :func:`mera_multi_hf.data.data_owner.split_privacy`). Data
of another task stops the load; what an export's card says is read when first asked
(no request needs it: a run reads it while the first answers are awaited). Every later
stage and every writer reads these records."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.data_owner import check_data_task, split_privacy
from mera_multi_hf.data.examples import Example, arrow_view, make_examples, media_of
from mera_multi_hf.tasks.spec import TaskSpec


@dataclass
class LoadedTask:
    """One task's split as the run loaded it."""

    task: TaskSpec
    split: str
    source: str  # where it was read from, as the run record names it
    dataset: object  # the split, Arrow-formatted (media read lazily)
    examples: list[Example]
    fingerprint: str | None
    full_size: int  # examples in the split before a --limit
    # (private, note): whether its gold answers stay out of every upload file, and why
    # data that names no task is treated as private (a note of the run); or what
    # decides them when first asked
    privacy: tuple[bool, str | None] | Callable[[], tuple[bool, str | None]] = (False, None)
    content: str | None = None  # the whole split's rows, hashed (data_content)
    _decided: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def key(self) -> str:
        return self.task.key

    @property
    def private(self) -> bool:
        """Its gold answers stay out of every upload file."""
        return self._privacy()[0]

    @property
    def privacy_note(self) -> str | None:
        return self._privacy()[1]

    def _privacy(self) -> tuple[bool, str | None]:
        with self._decided:  # once, whichever thread asks first
            if callable(self.privacy):
                self.privacy = self.privacy()
            return self.privacy

    def media_of(self, examples: list[Example] | None = None):
        """(example id, its media with their bytes) of these examples (default: all),
        read chunk by chunk: what the pages show (:func:`~.examples.media_of`)."""
        return media_of(self.task, self.examples if examples is None else examples, self.dataset)

    @property
    def official(self) -> bool:
        """The whole official test split from the official Hub copy (what a model card
        may claim)."""
        return (
            self.split == "test"
            and self.source == self.task.hub_id
            and len(self.examples) == self.full_size
        )


def load_task_split(
    task: TaskSpec,
    source,
    split: str,
    *,
    limits: Limits | None = None,
    limit: int | None = None,
) -> LoadedTask:
    """The task's split from ``source`` (None: the official Hub copy), its first
    ``limit`` examples, and whether its answers are private."""
    from mera_multi_hf.data.datasets_hook import fingerprint
    from mera_multi_hf.data.loading import load_split

    # No process waits for another here: a raw folder's conversion and datasets' own
    # cache are built under file locks (one process builds, the rest wait and read).
    ds = load_split(task, source=source, split=split, limits=limits)
    full_size, loaded_as = len(ds), fingerprint(ds)  # the split as loaded (as `score` records)
    content = ds.content()  # what a resume's data must be, wherever it is read from
    whole = ds  # the prompt variants are found over the whole split
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    ds = arrow_view(ds)
    _another_tasks_data(task, source)  # stops here, as before any work
    return LoadedTask(
        task,
        split,
        str(source or task.hub_id),
        ds,
        make_examples(task, ds, raw_prompt_list(task, source), whole),
        loaded_as,
        full_size,
        # after loading: a raw folder's export (its card) is there
        lambda: split_privacy(task, source, split),
        content,
    )


def _another_tasks_data(task: TaskSpec, source) -> None:
    """MeraError when ``source`` is another task's data (the name it declares)."""
    from mera_multi_hf.data.sources import resolve_source, source_kind

    resolved = resolve_source(task, source)
    check_data_task(task, resolved, source_kind(resolved))


def raw_prompt_list(task: TaskSpec, source) -> list[str] | None:
    """The prompt list of a raw folder's metadata, where its records may index into one
    (their prompt variants are then named by index); None for any other source, or where
    the folder's parts (domain folders with their own metadata) list different prompts.
    Read by the raw reader itself, with its rules for what a metadata file may be."""
    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.data.raw.dataset import RawDataset
    from mera_multi_hf.data.sources import resolve_source, source_kind

    try:
        path = resolve_source(task, source)
        if source is None or source_kind(path) != "raw":
            return None
        lists = {tuple(part.prompts or ()) for part in RawDataset(task, path).parts}
    except MeraError:
        return None
    return list(lists.pop()) if len(lists) == 1 and () not in lists else None
