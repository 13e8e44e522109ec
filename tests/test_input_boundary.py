"""Every file the tool did not create is opened through one reader,
mera_multi_hf/core/input_files.py, which refuses what is not a regular file (a FIFO, a
socket, a device, a link loop) before it can block, for a file given by name and for each
file found inside a folder given as input. This test walks the syntax tree of every other
module and fails on any call that opens or reads a file by other means (``open``,
``Path.open/read_text/read_bytes``, ``os.open/fdopen``, ``json.load``, library loaders
that take a path), except the entries listed below, each with the reason it is safe. It
also proves, on the files themselves, that what the walker guards is refused in one line:
a FIFO or a link loop inside a ``--predictions`` folder, a FIFO as an output folder's
marker."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mera_multi_hf.core import input_files, json_read
from mera_multi_hf.core.input_files import InputFileError

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"
READER = "core/input_files.py"

# calls that read a file whatever their receiver
READERS = {"read_text", "read_bytes", "fdopen"}
# library loaders that take a path (a call on an in-memory buffer is no file read)
LIBRARY_READERS = {
    "read_table",
    "read_parquet",
    "ParquetFile",
    "load_from_disk",
    "load_dataset",
    "SoundFile",
    "memory_map",
    "safe_load_file",
    "spec_from_file_location",
}

# (module, call) -> why it is safe. Every entry must still be used (checked below).
ALLOWED = {
    ("core/outputs/*", "*"): "the write boundary reads back the tool's own files by "
    "descriptor, never following a link (the marker is read through the input reader)",
    ("spaces/export.py", "read_text"): "the package's own Space sources",
    ("data/data_owner.py", "load"): "yaml.load of a string: the card's header, its text "
    "already read through the reader (card_text)",
    ("spaces/flat_modules.py", "read_text"): "the package's own module sources",
    ("core/provenance.py", "read_text"): "an installed distribution's metadata, found and "
    "read by importlib.metadata (its header's Version line is all that is parsed)",
    ("core/paths.py", "spec_from_file_location"): "imports a task's builder module, a "
    "Python file the user declared as code (it is run, not read as data)",
    ("data/loading.py", "load_dataset"): "datasets reads a folder that sources.py has "
    "already classified (its own readers); the raw folder goes through raw/files",
    ("data/publish.py", "read_table"): "reads back the Parquet shards this build has just "
    "staged through core/outputs",
    ("data/media_decode.py", "open"): "PyAV opens a media item's bytes held in memory or "
    "a file that media_bytes already read through the input reader",
    ("data/media_decode.py", "SoundFile"): "soundfile writes a WAV into an in-memory buffer",
    ("demo/sample_data/*", "*"): "the developer command that writes the bundled samples "
    "(python -m mera_multi_hf.demo.sample_data)",
    ("reporting/results_page.py", "open"): "PyAV writes the page's WebM preview into an "
    "in-memory buffer",
}


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _in_memory(call: ast.Call) -> bool:
    """The first argument is a buffer made right there (``io.BytesIO(...)``)."""
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Call) and _name(first.func) in ("BytesIO", "StringIO")


def _from_reader(tree: ast.Module) -> set[str]:
    """The names a module imports from the reader (its calls are the reader's own)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "mera_multi_hf.core.input_files"
        for alias in node.names
    }


def _reads(call: ast.Call, own: set[str]) -> str | None:
    """The name of the reading call, or None when ``call`` reads no file (``own``: the
    names imported from the reader)."""
    func, name = call.func, _name(call.func)
    owner = _name(func.value) if isinstance(func, ast.Attribute) else None
    if owner == "input_files" or (owner is None and name in own):
        return None
    if name == "open" and not _in_memory(call):
        return f"{owner}.open" if owner else "open"
    if name in ("load",) and owner in ("json", "pickle", "np", "numpy", "torch", "yaml"):
        return f"{owner}.load"
    if name in READERS or (name in LIBRARY_READERS and not _in_memory(call)):
        return name
    return None


def _allowed(module: str, call: str) -> tuple | None:
    for key in ((module, call), (module.rsplit("/", 1)[0] + "/*", "*")):
        if key in ALLOWED:
            return key
    return None


def scan(source_of=None):
    """(violations, allowances used): every file-reading call outside the reader."""
    found, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == READER:
            continue
        source = (source_of or {}).get(module) or path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        own = _from_reader(tree)
        for node in ast.walk(tree):
            call = _reads(node, own) if isinstance(node, ast.Call) else None
            if call is None:
                continue
            key = _allowed(module, call.split(".")[-1])
            if key:
                used.add(key)
            else:
                found.append(f"{module}:{node.lineno}: {call}(...)")
    return found, used


def test_no_module_reads_a_file_around_the_reader():
    found, _ = scan()
    assert not found, (
        "these calls open or read files outside mera_multi_hf/core/input_files.py; read "
        "through it (or add an entry to ALLOWED with the reason):\n" + "\n".join(found)
    )


def test_every_allowance_is_still_needed():
    _, used = scan()
    assert set(ALLOWED) - used == set(), "stale entries in ALLOWED"


@pytest.mark.parametrize(
    "planted, call",
    [
        ("open(path, 'rb')", "open"),
        ("Path(p).read_text()", "read_text"),
        ("p.read_bytes()", "read_bytes"),
        ("json.load(fh)", "json.load"),
        ("p.open()", "p.open"),
        ("os.fdopen(os.open(p, os.O_RDONLY))", "fdopen"),
        ("pq.read_table(p)", "read_table"),
        ("soundfile.SoundFile(p)", "SoundFile"),
    ],
)
def test_the_walker_fails_on_a_planted_read(planted, call):
    """The walker itself: a read planted in a module is found (it could not fail
    otherwise), and a read of an in-memory buffer is not."""
    module = "scoring/predictions.py"
    source = (PACKAGE / module).read_text(encoding="utf-8")
    found, _ = scan({module: source + f"\n\ndef planted(p, fh):\n    return {planted}\n"})
    assert any(f.startswith(f"{module}:") and f.endswith(f"{call}(...)") for f in found), found
    clean, _ = scan({module: source + "\n\nx = Image.open(io.BytesIO(b''))\n"})
    assert clean == []


# ---- the reader itself: what is not a regular file is refused before it can block ----


def _special_files(tmp_path: Path) -> dict[str, Path]:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "folder").mkdir()
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    return {
        "a FIFO": tmp_path / "fifo",
        "a loop of symbolic links": tmp_path / "loop",
        "a folder": tmp_path / "folder",
        "a socket": tmp_path / "sock",
        "not found": tmp_path / "missing",
    }


def test_the_reader_refuses_what_is_not_a_regular_file(tmp_path):
    for words, path in _special_files(tmp_path).items():
        for read in (
            input_files.read_bytes,
            json_read.read_file,
            lambda p: list(json_read.iter_jsonl(p)),
        ):
            started = time.monotonic()
            with pytest.raises(InputFileError) as caught:
                read(path)
            assert time.monotonic() - started < 2, f"{path} blocked"
            assert str(caught.value) == f"{path}: {caught.value.reason}" and words in str(
                caught.value
            )
            assert isinstance(caught.value, OSError)  # skipped where an optional file is
    dev = Path("/dev/null")
    with pytest.raises(InputFileError, match="a character device, not a regular file"):
        input_files.read_bytes(dev)


def test_the_reader_reads_regular_files_and_bounds_them(tmp_path):
    file = tmp_path / "a.json"
    file.write_text('{"a": 1}', encoding="utf-8")
    (tmp_path / "link.json").symlink_to(file)
    assert json_read.read_file(tmp_path / "link.json") == {"a": 1}
    with pytest.raises(InputFileError, match="a symbolic link, not a regular file"):
        input_files.read_bytes(tmp_path / "link.json", follow_links=False)
    with pytest.raises(InputFileError, match="larger than the limit of 3 bytes"):
        input_files.read_bytes(file, 3)
    os.link(file, tmp_path / "other.json")
    with pytest.raises(InputFileError, match=r"hard-linked \(2 names"):
        input_files.read_bytes(file, one_name=True)


@pytest.mark.skipif(not os.path.isfile("/proc/self/cmdline"), reason="needs Linux /proc")
def test_a_file_longer_than_its_stat_is_read_to_its_end_or_to_the_limit():
    """A /proc file stats as 0 bytes, as a file that grew after the stat: the reader reads
    past the stat's size to the end, and still refuses it past the limit."""
    whole = input_files.read_bytes("/proc/self/cmdline")
    assert len(whole) > 3  # the command line, at least "python"
    assert whole == Path("/proc/self/cmdline").read_bytes()
    assert input_files.read_bytes("/proc/self/cmdline", len(whole)) == whole
    with pytest.raises(InputFileError, match="larger than the limit of 3 bytes"):
        input_files.read_bytes("/proc/self/cmdline", 3)


# ---- through the command line: one line, no hang, no traceback ----


def _score(tmp_path: Path, raw: Path, predictions: Path, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent), HOME=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", "score", "--task", "ruhhh_image",
         "--predictions", str(predictions), "--data", str(raw), "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip


def _predictions(raw: Path) -> str:
    import json

    doc = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    return "".join(f'{{"id": {r["meta"]["id"]}, "prediction": "A"}}\n' for r in doc["data"])


@pytest.mark.parametrize(
    "plant, words",
    [
        (lambda d: os.mkfifo(d / "samples_b.jsonl"), "samples_b.jsonl: a FIFO, not a regular file"),
        (
            lambda d: (d / "samples_loop.jsonl").symlink_to("samples_loop.jsonl"),
            "samples_loop.jsonl: a loop of symbolic links",
        ),
    ],
)
def test_a_fifo_or_link_loop_inside_a_predictions_folder_is_one_line(
    plant, words, raw_sample, tmp_path
):
    folder = tmp_path / "preds"
    folder.mkdir()
    (folder / "samples_a.jsonl").write_text(_predictions(raw_sample), encoding="utf-8")
    plant(folder)
    proc = _score(tmp_path, raw_sample, folder, tmp_path / "out")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"mera-multi: error: {folder / words}"]
    assert not (tmp_path / "out").exists()


def test_a_fifo_as_a_folders_marker_never_blocks(raw_sample, tmp_path):
    """As the output folder's marker: refused in one line; as the marker of the folder
    the predictions lie in: not read (the predictions are scored)."""
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "samples_a.jsonl").write_text(_predictions(raw_sample), encoding="utf-8")
    os.mkfifo(preds / ".mera-multi-outputs.json")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".mera-multi-outputs.json")
    proc = _score(tmp_path, raw_sample, preds / "samples_a.jsonl", out)
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(errors) == 1 and ".mera-multi-outputs.json is a link or not a plain" in errors[0]
    proc = _score(tmp_path, raw_sample, preds, tmp_path / "out2")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out2" / "results.json").is_file()


def test_a_fifo_given_directly_is_refused_as_inside_a_folder(raw_sample, tmp_path):
    os.mkfifo(tmp_path / "preds.jsonl")
    proc = _score(tmp_path, raw_sample, tmp_path / "preds.jsonl", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"mera-multi: error: predictions file {tmp_path / 'preds.jsonl'}: a FIFO, not a regular file"
    ]
