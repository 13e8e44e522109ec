"""The rules of the boundary: the kinds of output, what may never be written, and the
marker that says which kind wrote which file."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.input_files import open_binary
from mera_multi_hf.core.outputs.fs import MARKER, _safe_name

STAGING_PREFIX = ".mera-multi-staging-"
# the cache entries this process writes now, each under its lock (files.cache_lock): the
# only folders inside the tool's cache that may be written as an output folder
CACHE_WRITERS: set[str] = set()
MARKER_FORMAT = 3

# kind -> the command that writes it (how a refusal names another kind's folder)
KINDS = {
    "export": "build",
    "run": "evaluate",
    "score": "score",
    "report": "compare/leaderboard",
    "metrics": "metrics export",
    "judge_model": "judge train",
    "agreement": "judge agreement",
}


def _real(path) -> str:
    return os.path.realpath(os.path.expanduser(os.fsdecode(path)))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _hf_caches() -> list[str]:
    """The Hugging Face caches: others' to manage (this project's own cache root is
    written through this module too, under the same no-link rule)."""
    from huggingface_hub import constants

    return [constants.HF_HOME, constants.HF_HUB_CACHE, _datasets_cache(constants.HF_HOME)]


def _datasets_cache(hf_home: str) -> str:
    """`datasets`' cache folder, as datasets.config sets it, without importing `datasets`
    (and pandas) where it is not imported yet."""
    config = sys.modules.get("datasets.config")
    if config is not None:
        return str(config.HF_DATASETS_CACHE)
    return os.getenv("HF_DATASETS_CACHE") or os.path.join(hf_home, "datasets")


def refusal(path, inputs=()) -> str | None:
    """Why ``path`` may never be written (None: it may). ``inputs``: what the command
    reads (the raw folder, --data, the predictions, a base model, a judge)."""
    out = _real(path)
    for other in inputs:
        if other is not None and os.path.lexists(os.fsdecode(other)):
            if _inside(out, _real(other)) or _inside(_real(other), out):
                return f"the input {other}, inside it or a folder that holds it"
    for other, what in ((os.getcwd(), "the current directory"), (Path.home(), "the home folder")):
        if _inside(_real(other), out):
            return f"{what} or a folder that holds it"
    from mera_multi_hf.core.paths import PACKAGE_DIR

    package = os.fspath(PACKAGE_DIR)
    if _inside(out, _real(package)) or _inside(_real(package), out):
        return "the package's own files"
    from mera_multi_hf.core.paths import cache_root

    for root in _hf_caches():
        if _inside(_real(root), out) or _inside(out, _real(root)):
            return f"the cache {root}, inside it or a folder that holds it"
    cache = _real(cache_root())
    if _inside(cache, out) or (_inside(out, cache) and out not in CACHE_WRITERS):
        return f"this tool's cache {cache_root()}, inside it or a folder that holds it"
    if out == os.path.abspath(os.sep):
        return "the filesystem root"
    return None


# ---- the marker: which kind wrote which file ----


def read_marker(folder) -> dict:
    """The marker of ``folder`` as written ({} when there is none or it is garbled)."""
    try:
        # the one input reader: a FIFO planted as the marker is refused, never waited on
        with open_binary(Path(os.fsdecode(folder)) / MARKER, follow_links=False) as fh:
            doc = json_read.loads(fh.read(8 << 20), str(folder))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


# the temporary of the marker's next rewrite, named in the marker before it is made
_MARKER_TEMP = re.compile(re.escape(f".{MARKER}.") + "[0-9a-f]{8}" + re.escape(".partial"))


def marker_temp(doc: dict) -> str | None:
    """The temporary that the next rewrite of the marker ``doc`` goes through."""
    name = doc.get("next_temp")
    return name if isinstance(name, str) and _MARKER_TEMP.fullmatch(name) else None


def temporaries(folder) -> set[str]:
    """The temporaries the marker of ``folder`` lists (those of a set being written,
    and its own next one): a kill leaves only these, and only these are ever removed
    as leftovers, whatever else is named like them."""
    doc = read_marker(folder)
    names = {
        n
        for n in doc.get("temporaries") or []
        if _safe_name(n) and n.rsplit("/", 1)[-1].startswith(".") and n.endswith(".partial")
    }
    return names | ({marker_temp(doc)} - {None})


def identity(folder) -> str | None:
    """The folder itself (device and inode): the same after a rename, another after a
    copy or a move to another disk or machine."""
    try:
        info = os.stat(os.fsdecode(folder))
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}"


def in_place(doc: dict, folder) -> bool:
    """The marker was written in this very folder (its path, or the folder renamed)."""
    return doc.get("folder") == _real(folder) or (
        doc.get("identity") is not None and doc.get("identity") == identity(folder)
    )


def entries(doc: dict) -> dict[str, dict]:
    """name -> {"kind": ..., and what the marker records of its content} of every file
    a marker lists (an older marker's bare names: kinds from the names, no content)."""
    files, content = doc.get("files"), doc.get("content")
    if isinstance(files, list):
        files = legacy_kinds([n for n in files if _safe_name(n)])
    if not isinstance(files, dict):
        return {}
    content = content if isinstance(content, dict) else {}
    return {
        name: {**(content.get(name) if isinstance(content.get(name), dict) else {}), "kind": kind}
        for name, kind in files.items()
        if _safe_name(name) and kind in KINDS
    }


def trusted_listing(folder) -> dict[str, str]:
    """name -> kind of every file the marker of ``folder`` lists and this tool may treat
    as its own: every listed name when the marker was written in this very folder;
    else (a renamed, copied or moved folder, or a stray marker) only the files that
    still hold what the marker records of them (an older marker, with no records, only
    in its own folder)."""
    doc = read_marker(folder)
    listed = entries(doc)
    if in_place(doc, folder):
        return {n: e["kind"] for n, e in listed.items()}
    if doc.get("format") != MARKER_FORMAT:
        return {}
    from mera_multi_hf.core.outputs.content import holds_as_written

    base = Path(os.fsdecode(folder))
    return {n: e["kind"] for n, e in listed.items() if holds_as_written(base / n, e)}


REPORT_STEMS = ("compare.", "leaderboard.")


def legacy_kinds(names: list[str]) -> dict[str, str]:
    """The kinds of the files an old marker lists, from their names: a run folder has
    ``logs/``; an export its card and Parquet shards; a judge its config.json; a metrics
    export ``<metric>/<metric>.py``; compare and leaderboard files are reports."""
    if any(n.startswith("logs/") for n in names):
        kind = "run"
    elif "README.md" in names and any(n.endswith(".parquet") for n in names):
        kind = "export"
    elif "config.json" in names:
        kind = "judge_model"
    elif any(n.count("/") == 1 and n.endswith(".py") for n in names):
        kind = "metrics"
    elif any(n.startswith("results.") for n in names):
        kind = "score"
    else:
        kind = "report"
    return {n: "report" if n.startswith(REPORT_STEMS) else kind for n in names}


def folder_kind(folder) -> str | None:
    """The kind of output a folder holds, by its trusted marker (None: not one of ours,
    or a mix)."""
    kinds = set(trusted_listing(folder).values())
    return kinds.pop() if len(kinds) == 1 else None


SUGGESTED_SUBFOLDER = {
    "score": "scored",
    "export": "export",
    "report": "reports",
    "metrics": "metrics",
    "judge_model": "judge",
    "run": "run",
    "agreement": "agreement",
}
