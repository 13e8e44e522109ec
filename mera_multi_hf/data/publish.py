"""Raw MERA folder -> the Hub's own dataset layout (Parquet shards + a README card).

The exported folder loads with ``datasets.load_dataset(<folder>)`` and can be pushed
as it is with huggingface_hub; no loading script is involved (datasets 4+ has none).
The card it carries is written by :mod:`~mera_multi_hf.data.export_card`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml
from datasets.utils.py_utils import convert_file_size_to_int

from mera_multi_hf._version import __version__
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import read_text
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.core.outputs import OutputFolder, read_marker
from mera_multi_hf.data.export_card import write_card
from mera_multi_hf.data.hub_layout import build_configs, joined_info, stage_data
from mera_multi_hf.data.raw.card import INTERNAL_TAG
from mera_multi_hf.tasks.spec import TaskSpec


def shard_size(value) -> int:
    """``--max-shard-size`` in bytes ("500MB", "1GB", 1000000); a clear error otherwise."""
    try:
        size = convert_file_size_to_int(value)
    except (ValueError, TypeError):
        size = None
    if not isinstance(size, int) or size <= 0:
        raise MeraError(
            f"--max-shard-size {value!r}: not a positive size (examples: 500MB, 1GB, 100000000)"
        )
    return size


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def export_raw(
    task: TaskSpec,
    raw_dir: str | Path,
    out_dir: str | Path,
    max_shard_size: str | int = "500MB",
    *,
    include_private_answers: bool = False,
    limits: Limits | None = None,
    num_proc: int | None = None,
    say_notes: bool = True,
) -> Path:
    """Build the task from its raw folder and write the Hub layout into ``out_dir``.

    Every problem in the raw folder is reported at once (DataValidationError) and nothing
    is written in that case. The export is built in a staging folder inside ``out_dir``
    and its files are moved in only on success, README.md last, under the tool's
    ownership rule (:mod:`mera_multi_hf.core.outputs`: a folder holding anything but an
    earlier export's files is refused). ``include_private_answers`` keeps a private test split's gold answers:
    an internal export, marked so in its card and marker, which :func:`push` refuses.
    ``limits``: what media may declare; ``num_proc``: processes decoding media (1: this one;
    default: the CPUs this process may use); ``say_notes``: print the raw folder's notes
    (False for the bundled sample, whose quirks are the official data's, on purpose).
    """
    from mera_multi_hf.core.outputs import write_error

    size = shard_size(max_shard_size)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    if not raw_dir.is_dir():
        raise MeraError(f"raw dataset folder not found: {raw_dir}")
    with (
        OutputFolder(out_dir, kind="export", inputs=[raw_dir]).claim() as folder,
        folder.staging() as work,
    ):
        try:
            build_options = {
                "limits": limits,
                "include_private_answers": include_private_answers,
                "workers": num_proc or default_workers(),
            }
            notes = _build_and_move_in(task, raw_dir, folder, work, size, build_options)
        except OSError as err:  # a full disk or a read-only folder while building
            raise write_error(err, work) from None
    for note in notes if say_notes else ():  # said once, after a clean build
        print(f"mera-multi: note: {note}", file=sys.stderr)
    return out_dir


def _build_and_move_in(
    task: TaskSpec, raw_dir: Path, folder: OutputFolder, work: Path, size: int, build_options: dict
) -> list[str]:
    """Build every config in the staging folder ``work``, lay its shards out as the Hub
    keeps them, write the card, then move the files into ``folder`` (README.md last).
    Returns the raw folder's notes."""
    builders = build_configs(task, raw_dir, work, size, build_options)
    raw = next(iter(builders.values())).raw  # the one reading every config shares
    internal = build_options["include_private_answers"] and raw.private
    staged = work / "export"
    configs = stage_data(builders, work / "prepared", staged)
    raw.test_ids = _test_ids(staged)
    write_card(
        task,
        joined_info(builders, configs),
        staged / "README.md",
        raw,
        internal=internal,
        configs=configs,
    )
    files = {str(f.relative_to(staged)): f for f in sorted(staged.rglob("*")) if f.is_file()}
    folder.write_set(
        files,
        index="README.md",
        private=files if internal else (),
        info={"version": __version__, "task": task.key, "internal_with_answers": internal},
    )
    return raw.notes


def _test_ids(staged: Path) -> set:
    """The meta.id of every exported test row (read back from the staged shards)."""
    ids = set()
    for shard in staged.rglob("test-*.parquet"):
        meta = pq.read_table(shard, columns=["meta"]).column("meta")
        ids.update(pc.struct_field(meta, "id").to_pylist())
    return ids


def is_internal(folder: str | Path) -> bool:
    """Whether an exported folder keeps private answers (marker or card tag says so)."""
    folder = Path(folder)
    info = read_marker(folder).get("info")
    if isinstance(info, dict) and info.get("internal_with_answers"):
        return True  # trusted or not: a copied marker can only make a push refused
    try:
        head = read_text(folder / "README.md").split("---\n")[1]
        return INTERNAL_TAG in (yaml.safe_load(head) or {}).get("tags", [])
    except (OSError, IndexError, yaml.YAMLError, AttributeError, TypeError):
        return False


def upload_files(folder: str | Path) -> list[str]:
    """What a push sends: the files the export's marker lists that are there as regular
    files (a foreign file beside the export, such as a private_answers.csv, never goes)."""
    root = Path(folder)

    def plain(name: str) -> bool:  # a regular file, reached through no link
        parts = Path(name).parts
        return (
            not any(os.path.islink(root.joinpath(*parts[: i + 1])) for i in range(len(parts)))
            and (root / name).is_file()
        )

    names = sorted(n for n in OutputFolder(root, kind="export").owned() if plain(n))
    if "README.md" not in names:
        raise MeraError(
            f"{folder} holds no export made by this tool (its marker lists no "
            "README.md): build it again, then push"
        )
    return names


def push(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Publish an exported folder as a dataset repository on the Hub (never an internal
    export: that is refused before anything is sent)."""
    if is_internal(folder):
        raise MeraError(
            f"{folder} is an internal export that keeps the hidden test answers "
            "of a private task; it is never pushed. Rebuild without "
            "--internal-with-answers to publish."
        )
    from huggingface_hub import CommitOperationAdd, HfApi, get_token

    from mera_multi_hf.core.masking import remember

    remember(token or get_token())  # masked in any error printed below
    files = upload_files(folder)
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.create_commit(
            repo_id,
            repo_type="dataset",
            commit_message="Upload with mera-multi-hf",
            operations=[CommitOperationAdd(name, str(Path(folder) / name)) for name in files],
        )
    except Exception as err:  # offline, no token, no rights: the export itself is kept
        raise MeraError(
            f"could not publish {folder} to {repo_id}: {type(err).__name__}: {err}. "
            "The exported folder is intact; push it again once this is fixed."
        ) from None
    return f"https://huggingface.co/datasets/{repo_id}"
