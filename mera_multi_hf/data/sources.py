"""What a dataset source is: ``None`` (the Hub id), ``"sample"``, a raw MERA folder, a
folder exported by ``mera-multi build`` or a Hub id; a folder that holds no dataset, a
missing path and an unreachable Hub id are refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import open_binary
from mera_multi_hf.tasks.spec import TaskSpec


def resolve_source(task: TaskSpec, source: str | Path | None) -> str | Path:
    """The dataset location to read: ``None`` is the official Hub id, ``"sample"`` the
    raw sample bundled with the package."""
    if source is None:
        return task.hub_id
    if str(source) == "sample":
        from mera_multi_hf.demo.sample_data import bundled_sample

        return bundled_sample(task.key)  # a task without one is a MeraError naming those with one
    return source


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
            else "is not a folder: it is a local path that does not exist (nor `sample`, nor a "
            "Hub id org/name)"
        )
        raise MeraError(
            f"dataset source {source!r} {what}"
            f"{did_you_mean(str(source), nearby_names(str(source)))}"
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
            f"a folder written by `mera-multi build`, a Hub id or `sample`"
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
    from mera_multi_hf.core.offline import DATA_ALTERNATIVE, in_hub_cache, offline_reason

    reason = offline_reason()
    if reason and not in_hub_cache(repo_id, "dataset"):
        raise MeraError(
            f"{task.key}: the dataset {repo_id} is no folder here, and as a Hub "
            f"id it is out of reach ({reason}) and not in the local cache: "
            f"{DATA_ALTERNATIVE}"
        )


def _holds_test_json(path: Path) -> bool:
    if os.path.lexists(path / "test.json"):
        return True
    with os.scandir(path) as entries:
        return any(
            e.is_dir() and os.path.lexists(os.path.join(e.path, "test.json")) for e in entries
        )
