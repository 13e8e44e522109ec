"""What a dataset source is: ``None`` (the Hub id), a registered source kind (a name that
stands for data, such as the demo's bundled samples), a raw MERA folder, a folder
exported by ``mera-multi build`` or a Hub id; a folder that holds no dataset, a missing
path and an unreachable Hub id are refused in one line.

A source kind is a name and a function from a task to the location of its data (and
how messages describe it)::

    register_source_kind("mine", lambda task: f"/data/mera/{task.key}", about="our copy")

The built-in kinds register themselves from the modules in ``BUILT_IN``, imported by
name on the first lookup: they sit above this stage and feed it as a user's code would.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import open_binary
from mera_multi_hf.tasks.spec import TaskSpec


@dataclass(frozen=True)
class SourceKind:
    locate: Callable[[TaskSpec], str | Path]  # task -> the location its data is read from
    about: str = ""  # how the messages describe it
    # whether preparing it says the data's own notes (a bundled sample copies the
    # official data's quirks on purpose: those are not the user's to fix)
    says_notes: bool = True


SOURCE_KINDS: dict[str, SourceKind] = {}
# The modules that register the built-in source kinds (imported by name: see above).
BUILT_IN = ("mera_multi_hf.demo.source_kind",)


def register_source_kind(
    name: str, locate: Callable[[TaskSpec], str | Path], about: str = "", says_notes: bool = True
) -> None:
    """``--data name`` reads, for each task, the location ``locate(task)``."""
    SOURCE_KINDS[name] = SourceKind(locate, about, says_notes)


def named_source(source) -> SourceKind | None:
    """The source kind ``source`` names, or None (a folder, a Hub id, or None)."""
    for module in BUILT_IN:
        importlib.import_module(module)
    return SOURCE_KINDS.get(str(source)) if source is not None else None


def source_names() -> str:
    """The registered source kinds as a message names them: `a`, `b`."""
    named_source(None)
    return ", ".join(f"`{name}`" for name in SOURCE_KINDS)


def data_alternative() -> str:
    """What to pass as --data where the Hub copy is out of reach."""
    named_source(None)
    kinds = [f"--data {n}" + (f" ({k.about})" if k.about else "") for n, k in SOURCE_KINDS.items()]
    return (
        f"use {' or '.join([*kinds, ''])}a local folder (a raw MERA folder with test.json, or "
        "one written by `mera-multi build`)"
    )


def resolve_source(task: TaskSpec, source: str | Path | None) -> str | Path:
    """The dataset location to read: ``None`` is the official Hub id, a source kind's
    name the location it gives for the task."""
    if source is None:
        return task.hub_id
    kind = named_source(source)
    return kind.locate(task) if kind is not None else source


def source_kind(source: str | Path) -> str:
    """'raw' (a raw MERA folder: test.json at the top, or in the official per-domain layout
    in a folder per domain), 'exported' (a Hub-layout folder) or 'hub' (a Hub id)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return "raw" if _holds_test_json(path) else _exported_or_refused(path)
    if (
        path.exists()
        or str(source).startswith((".", "/", "~"))
        or "/" not in str(source)
        or path.parent.is_dir()
        and str(path.parent) not in ("", ".")
    ):
        from mera_multi_hf.core.offline import did_you_mean, nearby_names

        what = (
            "is a file, not a folder"
            if path.exists()
            else "is not a folder: it is a local path that does not exist (nor "
            f"{source_names()}, nor a Hub id org/name)"
        )
        raise MeraError(
            f"dataset source {source!r} {what}"
            f"{did_you_mean(str(source), [*SOURCE_KINDS, *nearby_names(str(source))])}"
        )
    return "hub"


# What a folder without test.json is when it holds no dataset: (marker files, what it
# is, what to do); the first whose marker is present names it.
NOT_A_DATASET = (
    (
        ("raw_dataset_meta.json",),
        "an official MERA task folder without test.json (the "
        "official repository ships only raw_dataset_meta.json and samples/; the test and shots "
        "files live on the Hub)",
        "leave --data out to read the Hub copy, or give a raw folder "
        "with test.json (see docs/raw-format.md)",
    ),
    (
        ("results.json",),
        "a run folder (results, sample logs), not a dataset",
        "pass its sample log to `mera-multi score --predictions`, or look at it with "
        "`mera-multi view`; --data is the dataset it was run on",
    ),
    (
        ("app.py",),
        "a Hugging Face Space folder (app.py), not a dataset",
        "give the dataset it serves (a Hub id, a raw folder or an export)",
    ),
)


def _exported_or_refused(path: Path) -> str:
    """'exported' for a folder that may hold a dataset; one line naming what the folder
    is and what is missing for the known kinds that hold none."""
    names = {p.name for p in path.iterdir()}
    if any(
        n.endswith((".parquet", ".arrow")) or n in ("data", "dataset_dict.json") for n in names
    ) or "configs:" in card_text(path):
        return "exported"
    if any(n.startswith("samples_") and n.endswith(".jsonl") for n in names) or any(
        (path / "logs").glob("samples-rank*.jsonl")
    ):
        names.add("results.json")  # sample logs: a run folder
    for markers, what, todo in NOT_A_DATASET:
        if names & set(markers):
            raise MeraError(
                f"{path} looks like {what}: it has no test.json (a raw MERA folder) "
                f"and no Parquet files (an export); {todo}"
            )
    if not names:
        raise MeraError(
            f"{path} is empty: a dataset source is a raw MERA folder (test.json), "
            f"a folder written by `mera-multi build`, a Hub id or {source_names()}"
        )
    return "exported"


def card_text(path: Path) -> str:
    try:  # the first 20,000 characters (UTF-8 has at most 4 bytes each)
        with open_binary(path / "README.md") as fh:
            return fh.read(80_000).decode("utf-8", errors="replace")[:20000]
    except OSError:
        return ""


def check_hub_source(task: TaskSpec, repo_id: str) -> None:
    """With the Hub out of reach, a dataset that is not in the local cache stops here,
    in one line, instead of after the libraries' retries."""
    from mera_multi_hf.core.offline import in_hub_cache, offline_reason

    reason = offline_reason()
    if reason and not in_hub_cache(repo_id, "dataset"):
        raise MeraError(
            f"{task.key}: the dataset {repo_id} is no folder here, and as a Hub "
            f"id it is out of reach ({reason}) and not in the local cache: "
            f"{data_alternative()}"
        )


def _holds_test_json(path: Path) -> bool:
    if os.path.lexists(path / "test.json"):
        return True
    with os.scandir(path) as entries:
        return any(
            e.is_dir() and os.path.lexists(os.path.join(e.path, "test.json")) for e in entries
        )
