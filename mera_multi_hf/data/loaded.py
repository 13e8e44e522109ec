"""The load stage of a run: one :class:`LoadedTask` per task, the split as loaded with
its examples, and whether its answers are private, decided here once (the task's
default, then what the data says: :func:`mera_multi_hf.data.data_owner.split_privacy`).
Every later stage and every writer reads these records."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.data_owner import split_privacy
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
    private: bool = False  # its gold answers stay out of every upload file
    # why data that names no task is treated as private (a note of the run)
    privacy_note: str | None = None
    content: str | None = None  # the whole split's rows, hashed (data_content)

    @property
    def key(self) -> str:
        return self.task.key

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
    private, note = split_privacy(task, source, split)  # after loading: a raw folder's export
    return LoadedTask(
        task,
        split,
        str(source or task.hub_id),
        ds,
        make_examples(task, ds, raw_prompt_list(task, source), whole),
        loaded_as,
        full_size,
        private,
        note,
        content,
    )


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
