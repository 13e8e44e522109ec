"""Every byte the package writes, replaces or removes goes through one module,
mera_multi_hf/core/outputs/ (a package: its primitives, rules, folders and files): this test walks the syntax tree of every other module and
fails on any call that opens a path for writing, truncates, renames, links or removes,
except the library writers listed below, each with the reason it is safe (they write
into a staging folder that outputs/ made, into memory, or into the system's temporary
folder). A new feature that writes files then has to go through the boundary, and so
gets its rules (no link followed, ownership by kind, inputs untouched) for free."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"
BOUNDARY = "core/outputs/"

WRITE_MODES = set("wax+")
# os.open flags that write
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}
# calls that change the file system whatever their receiver
MUTATORS = {
    "write_text",
    "write_bytes",
    "unlink",
    "rmdir",
    "touch",
    "mkdir",
    "rename",
    "symlink_to",
    "hardlink_to",
    "chmod",
    "truncate",
}
MODULE_MUTATORS = {
    "os": {
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "rename",
        "renames",
        "replace",
        "truncate",
        "ftruncate",
        "mkdir",
        "makedirs",
        "symlink",
        "link",
        "chmod",
        "fchmod",
    },
    "shutil": {"rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat"},
}
TEMP_MAKERS = {
    "mkstemp",
    "mkdtemp",
    "NamedTemporaryFile",
    "TemporaryDirectory",
    "TemporaryFile",
    "SpooledTemporaryFile",
}
# writers of other libraries that take a path
LIBRARY_WRITERS = {
    "save_pretrained",
    "save_model",
    "to_parquet",
    "to_json",
    "to_csv",
    "save_to_disk",
    "download_and_prepare",
    "savefig",
    "push_to_hub",
    "upload_folder",
    "upload_file",
    "save",
    "ZipFile",
}

# (module, call) -> why it is safe. Every entry must still be used (checked below).
ALLOWED = {
    ("data/hub_layout.py", "download_and_prepare"): "datasets writes the Parquet shards into the "
    "staging folder that OutputFolder.staging() made",
    ("data/export_card.py", "save"): "the dataset card, saved into the staging folder",
    (
        "data/hub_layout.py",
        "mkdir",
    ): "inside the staging folder: the domain layout is laid out there",
    ("data/hub_layout.py", "rename"): "inside the staging folder: shards renamed into that layout",
    ("spaces/export.py", "upload_folder"): "uploads (reads) Space folders; writes nothing here",
    ("spaces/export.py", "TemporaryDirectory"): "the system's temporary folder, for a push",
    ("judge/train.py", "save_model"): "the Trainer saves into OutputFolder.staging()",
    ("judge/train.py", "save_pretrained"): "the tokenizer saves into OutputFolder.staging()",
    (
        "demo/builtin_models.py",
        "save_pretrained",
    ): "into outputs.cache_folder()'s staging folder, or a folder a test or benchmark made",
    ("demo/tiny_models/judge.py", "save_pretrained"): "into outputs.cache_folder()'s staging "
    "folder, or a folder a test made",
    (
        "reporting/submission.py",
        "ZipFile",
    ): "into an in-memory buffer (the ZIP's bytes are then written through the boundary)",
    ("data/media_decode.py", "save"): "a reduced image into an in-memory buffer",
    ("reporting/compare_chart.py", "savefig"): "into an in-memory buffer",
    ("reporting/leaderboard.py", "savefig"): "into an in-memory buffer",
    ("reporting/results_page.py", "save"): "a PIL thumbnail into an in-memory buffer",
    ("reporting/chart_canvas.py", "save"): "the chart's PNG into an in-memory buffer",
    ("reporting/results_page.py", "open"): "PyAV writes the WebM preview into an in-memory buffer",
    ("demo/sample_data/*", "*"): "the developer command that rewrites the bundled raw samples "
    "inside the package (python -m mera_multi_hf.demo.sample_data)",
}


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _mode(call: ast.Call, position: int) -> str | None:
    """The literal mode of an open-like call ('r' when none is given; None: not literal)."""
    node = (
        call.args[position]
        if len(call.args) > position
        else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
    if node is None:
        return "r"
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _writes(call: ast.Call) -> str | None:
    """The name of the writing call, or None when ``call`` only reads."""
    func, name = call.func, _name(call.func)
    owner = _name(func.value) if isinstance(func, ast.Attribute) else None
    if name == "open" and owner == "os":
        flags = {n.attr for n in ast.walk(call) if isinstance(n, ast.Attribute)}
        return "os.open" if flags & WRITE_FLAGS else None
    if name in ("open", "fdopen") and owner != "Image":  # PIL's open only reads
        # the mode is open()'s, os.fdopen()'s and av.open()'s second argument, Path.open()'s first
        mode = _mode(call, 1 if owner in (None, "os", "av") else 0)
        return None if mode is not None and not set(mode) & WRITE_MODES else name
    if owner in MODULE_MUTATORS and name in MODULE_MUTATORS[owner]:
        return f"{owner}.{name}"
    if name in MUTATORS or name in LIBRARY_WRITERS:
        return name
    if name in TEMP_MAKERS:
        return name
    return None


def _allowed(module: str, call: str) -> tuple | None:
    for key in ((module, call), (module.rsplit("/", 1)[0] + "/*", "*")):
        if key in ALLOWED:
            return key
    return None


def _scan():
    found, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith(BOUNDARY):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            call = _writes(node)
            if call is None:
                continue
            key = _allowed(module, call.split(".")[-1])
            if key:
                used.add(key)
            else:
                found.append(f"{module}:{node.lineno}: {call}(...)")
    return found, used


def test_no_module_writes_around_the_boundary():
    found, _ = _scan()
    assert not found, (
        "these calls write, rename or remove files outside "
        "mera_multi_hf/core/outputs/; route them through it:\n" + "\n".join(found)
    )


def test_every_allowance_is_still_needed():
    _, used = _scan()
    assert set(ALLOWED) - used == set(), "stale entries in ALLOWED"


def test_the_scan_finds_writes(tmp_path):
    """The walker itself: each way of writing in a module is found (it could not fail
    otherwise)."""
    source = (
        "open(p, 'w'); open(p); p.open('ab'); p.write_text('x'); os.replace(a, b); "
        "os.open(p, os.O_WRONLY | os.O_CREAT); os.open(p, os.O_RDONLY); "
        "shutil.rmtree(p); tempfile.mkdtemp(dir=p); model.save_pretrained(p); "
        "'a'.replace('a', 'b'); Image.open(p); av.open(p); av.open(p, 'w')"
    )
    calls = [_writes(n) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    assert [c for c in calls if c] == [
        "open",
        "open",
        "write_text",
        "os.replace",
        "os.open",
        "shutil.rmtree",
        "mkdtemp",
        "save_pretrained",
        "open",
    ]
