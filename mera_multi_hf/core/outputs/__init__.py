"""The one boundary for every byte a command writes, replaces or removes in a place the
user named: an output folder (build, evaluate, score, compare, leaderboard, view,
metrics export, judge train), an ``--out FILE`` (judge agreement), and this project's
own cache. No other package code writes there (tests/test_write_boundary.py walks the
code to prove it); library writers (``save_pretrained``, ``to_parquet``, the card) write
into a staging folder that this module makes inside the output folder.

- **No link is followed below the folder the user named.** Every step below it is
  opened relative to its parent's descriptor with ``O_NOFOLLOW`` (folders with
  ``O_DIRECTORY`` too), a file must be a regular file with one link, and renames and
  removals name the entry itself. The path the user typed may pass through links.
- **Ownership by what the marker lists and what the files hold.** A folder's marker
  (``.mera-multi-outputs.json``) names the kind of output (export, run, score, report,
  ...) that wrote each file it lists, with the file's content (size and sha256; a
  sample log's first complete lines). In the folder it was written in (the same path,
  or the folder renamed) every listed name is the tool's; anywhere else (a copy, ``cp
  -a``, ``tar``, another machine, a stray marker) only the listed files that still hold
  what it records. A command writes only into a folder that is new, empty, or holds
  nothing but its own kind's listed files (and output folders of their own, nested).
  Anything else is foreign: the folder is refused, with or without ``--overwrite``, and
  nothing in it is touched. A temporary is listed in the marker before it is made, and
  a leftover is removed only when the marker lists it, whatever else is named like it.
- **Never written at all:** the command's inputs, anything inside them or holding them;
  the current directory, the home directory and their parents; the package's own tree;
  the Hugging Face caches; the filesystem root.
- **One lock per folder** (``flock`` on a file opened without following a link).
- **A set of files is written whole:** each file goes to a temporary first (a full disk
  stops it there, the previous outputs untouched), then each is renamed into place, the
  index file (results.json, README.md) last.
- Created files honour the umask, except those that hold a private split's gold
  answers: those are 0600. A rewritten file keeps the mode of the one it replaces.
- **This tool's cache is never an output folder** (however the path is spelled); only
  the entry whose lock (``<entry>.lock``) this process holds is written, as the cache.
"""

from mera_multi_hf.core.outputs.files import (
    cache_file,
    cache_folder,
    cache_lock,
    check_report_file,
    report_kind,
    stage_file,
    write_report_file,
)
from mera_multi_hf.core.outputs.folder import OutputFolder, add_files
from mera_multi_hf.core.outputs.fs import (
    LOCK,
    MARKER,
    OWN,
    PLAIN_MODE,
    PRIVATE_MODE,
    LinkRefused,
    as_written,
    discard_stdout,
    shown,
    write_error,
)
from mera_multi_hf.core.outputs.kept import still_written
from mera_multi_hf.core.outputs.rules import (
    KINDS,
    folder_kind,
    legacy_kinds,
    read_marker,
    refusal,
    trusted_listing,
)

__all__ = [
    "KINDS",
    "LOCK",
    "MARKER",
    "OWN",
    "PLAIN_MODE",
    "PRIVATE_MODE",
    "LinkRefused",
    "OutputFolder",
    "add_files",
    "as_written",
    "cache_file",
    "cache_folder",
    "cache_lock",
    "check_report_file",
    "discard_stdout",
    "folder_kind",
    "legacy_kinds",
    "read_marker",
    "refusal",
    "report_kind",
    "shown",
    "stage_file",
    "still_written",
    "trusted_listing",
    "write_error",
    "write_report_file",
]
