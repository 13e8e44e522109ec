"""Hostile raw folders and dangerous --out folders: every fault is one clear problem that
names the file, the example id and the field, nothing is written, and no file outside
the declared output is touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import datasets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import DataValidationError, MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.core.outputs import MARKER
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import get_task

TASK = get_task("ruhhh_image")


def tree_hash(root: Path) -> str:
    """Names, kinds and bytes of everything under root (links are not followed)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}:{stat.S_IFMT(info.st_mode)}".encode())
            if stat.S_ISREG(info.st_mode):
                digest.update(Path(path).read_bytes())
            elif stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode())
    return digest.hexdigest()


@pytest.fixture
def decoy(tmp_path) -> Path:
    """Files beside the raw folder and the output that no build may touch."""
    root = tmp_path / "decoy"
    (root / "sub").mkdir(parents=True)
    (root / "secret.txt").write_text("do not read or change")
    (root / "sub" / "picture.png").write_bytes(
        (bundled_sample() / "samples" / "image0000.png").read_bytes()
    )
    return root


def _edit(folder: Path, split: str, edit) -> None:
    path = folder / f"{split}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc["data"])
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def _set(path: str, value):
    """An edit that sets record #0's dotted field to value."""

    def edit(data):
        node = data[0]
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return edit


def _fails(raw: Path, out: Path, **kwargs) -> list:
    """Build, expect a DataValidationError, check nothing was left behind."""
    siblings = set(os.listdir(out.parent)) if out.parent.exists() else None
    with pytest.raises(DataValidationError) as info:
        export_raw(TASK, raw, out, **kwargs)
    assert not out.exists()
    if siblings is not None:
        assert set(os.listdir(out.parent)) == siblings  # no temporary folder left
    for problem in info.value.problems:
        assert "\n" not in str(problem)
    return info.value.problems


def _has(problems, file_end, example_id, field, text):
    hits = [
        p
        for p in problems
        if p.file.endswith(file_end)
        and p.example_id == example_id
        and p.field == field
        and text in p.message
    ]
    assert hits, f"no {file_end} id={example_id} {field} ~ {text!r} in:\n" + "\n".join(
        map(str, problems)
    )


# ---- files that are not what they claim: links, FIFOs, devices, bombs, NUL bytes ----


def test_symlink_out_of_the_folder_is_refused(raw_sample, tmp_path, decoy):
    os.symlink(decoy / "sub" / "picture.png", raw_sample / "samples" / "link.png")
    os.symlink(raw_sample / "samples" / "image0001.png", raw_sample / "samples" / "inner.png")
    _edit(
        raw_sample,
        "test",
        lambda d: (
            d[0]["inputs"].update(image="samples/link.png"),
            d[1]["inputs"].update(image="samples/inner.png"),
        ),
    )
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", 1, "inputs.image", "leads outside the dataset folder")
    assert len(problems) == 1  # a link that stays inside the folder is fine


def test_symlinked_samples_folder_is_refused(raw_sample, tmp_path, decoy):
    moved = tmp_path / "elsewhere"
    shutil.move(raw_sample / "samples", moved)
    os.symlink(moved, raw_sample / "samples")
    before = tree_hash(decoy)
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", 1, "inputs.image", "leads outside the dataset folder")
    _has(problems, "shots.json", 27, "inputs.image", "leads outside the dataset folder")
    assert tree_hash(decoy) == before


def test_fifo_and_device_are_refused_without_blocking(raw_sample, tmp_path):
    os.mkfifo(raw_sample / "samples" / "pipe.png")
    edits = [
        lambda d: d[0]["inputs"].update(image="samples/pipe.png"),
        lambda d: d[1]["inputs"].update(image="samples"),
    ]
    try:
        os.mknod(raw_sample / "samples" / "dev.png", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        edits.append(lambda d: d[2]["inputs"].update(image="samples/dev.png"))
    except PermissionError:
        pass  # not root: the FIFO covers special files
    for edit in edits:
        _edit(raw_sample, "test", edit)
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", 1, "inputs.image", "is a FIFO, not a regular file")
    _has(problems, "test.json", 2, "inputs.image", "is a folder, not a regular file")
    if len(edits) == 3:
        _has(problems, "test.json", 3, "inputs.image", "is a character device")


def test_fifo_in_place_of_test_json_through_the_cli(raw_sample, tmp_path):
    (raw_sample / "shots.json").unlink()
    (raw_sample / "test.json").unlink()
    os.mkfifo(raw_sample / "test.json")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "build",
            "ruhhh_image",
            "--raw",
            str(raw_sample),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("mera-multi: error: 1 problem(s)")  # no progress bars before it
    assert "test.json: 'test.json' is a FIFO, not a regular file" in proc.stderr
    assert not (tmp_path / "out").exists()


def _png_declaring(width: int, height: int) -> bytes:
    """A small valid PNG whose header claims width x height (a decompression bomb)."""
    raw = zlib.compress(b"\0\0")
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def test_decompression_bombs_are_refused_from_the_header(raw_sample, tmp_path):
    (raw_sample / "samples" / "bomb.png").write_bytes(_png_declaring(200_000, 200_000))
    (raw_sample / "samples" / "big.png").write_bytes(_png_declaring(12_000, 10_000))
    _edit(
        raw_sample,
        "test",
        lambda d: (
            d[0]["inputs"].update(image="samples/bomb.png"),
            d[1]["inputs"].update(image="samples/big.png"),
        ),
    )
    problems = _fails(raw_sample, tmp_path / "out", limits=Limits(max_image_pixels=100_000_000))
    _has(problems, "test.json", 1, "inputs.image", "too large")
    _has(
        problems,
        "test.json",
        2,
        "inputs.image",
        "12000x10000 = 120000000 pixels, above the limit of 100000000",
    )
    code = main(
        [
            "build",
            "ruhhh_image",
            "--raw",
            str(bundled_sample()),
            "--out",
            str(tmp_path / "o2"),
            "--max-image-pixels",
            "1000",
        ]
    )
    assert code == 2 and not (tmp_path / "o2").exists()  # the limit is configurable


def test_nul_byte_and_escaping_paths(raw_sample, tmp_path):
    _edit(
        raw_sample,
        "test",
        lambda d: (
            d[0]["inputs"].update(image="samples/a\0.png"),
            d[1]["inputs"].update(image="/etc/hostname"),
            d[2]["inputs"].update(image=["samples/x.png"]),
        ),
    )
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", 1, "inputs.image", "contains a NUL byte")
    _has(problems, "test.json", 2, "inputs.image", "escapes the dataset folder")
    _has(problems, "test.json", 3, "inputs.image", "must be a path string, got list")


# ---- templates: every record of every split is rendered at build time ----

BAD_TEMPLATES = {
    "{question:d}": "format specs are not allowed",
    "{option_a:{question}}": "format specs are not allowed",
    "{question!x}": "conversions and format specs are not allowed",
    "{0}": "positional placeholder {0}",
    "{}": "positional placeholder {}",
    "{question.upper}": "placeholder {question.upper} is not an input field",
    "{question[0]}": "placeholder {question[0]} is not an input field",
    "{question": "not a valid format template",
    "текст } лишняя скобка": "not a valid format template",
}


def test_format_specs_in_instructions_are_reported_per_record(raw_sample, tmp_path):
    templates = list(BAD_TEMPLATES)

    def edit(data):
        for record, template in zip(data, templates):
            record["instruction"] = "<image> " + template + " A. {option_a} B. {option_b}"

    _edit(raw_sample, "test", edit)
    _edit(raw_sample, "shots", lambda d: d[0].update(instruction="{option_b!r}"))
    problems = _fails(raw_sample, tmp_path / "out")
    for position, message in enumerate(BAD_TEMPLATES.values()):
        _has(problems, "test.json", position + 1, "instruction", message)
    _has(problems, "shots.json", 27, "instruction", "{option_b!r}")
    assert len(problems) == len(BAD_TEMPLATES) + 1


# ---- values of the wrong shape or out of range ----


def test_meta_shapes_and_integer_ranges(raw_sample, tmp_path):
    _edit(
        raw_sample,
        "test",
        lambda d: (
            d[0]["meta"].update(image="photo"),
            d[1]["meta"].update(image=["photo"]),
            d[2]["meta"].update(categories=["helpful", "solutions"]),
            d[3]["meta"].update(id=2**31),
            d[4]["meta"].update(group_id=-(2**40)),
            d[5]["meta"]["image"].update(type=[1, 2]),
            d[6]["meta"].update(id=True),
            d[7]["meta"].update(group_id="7"),
        ),
    )
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", 1, "meta.image", "must be an object, got str")
    _has(problems, "test.json", 2, "meta.image", "must be an object, got list")
    _has(problems, "test.json", 3, "meta.categories", "must be an object, got list")
    _has(problems, "test.json", 2**31, "meta.id", "out of range for int32")
    _has(problems, "test.json", 5, "meta.group_id", "out of range for int32")
    _has(problems, "test.json", 6, "meta.image.type", "must be a string or a list of strings")
    _has(problems, "test.json", None, "meta.id", "record #6: missing or not an integer (True)")
    _has(problems, "test.json", 8, "meta.group_id", "must be an integer, got str")
    assert len(problems) == 8


def test_unreadable_json_files(raw_sample, tmp_path):
    (raw_sample / "shots.json").write_bytes(b'{"data": ["\xff\xfe"]}')
    (raw_sample / "raw_readme_en.json").write_bytes(b'{"Motivation": "\xc3\x28"}')
    (raw_sample / "raw_readme_ru.json").write_text('["not", "an", "object"]')
    deep = "[" * 200_000 + "]" * 200_000
    (raw_sample / "test.json").write_text('{"data": [{"meta": ' + deep + "}]}")
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "shots.json", None, None, "not UTF-8 text (invalid start byte at byte 11)")
    _has(problems, "raw_readme_en.json", None, None, "not UTF-8 text")
    _has(problems, "raw_readme_ru.json", None, None, "must be one JSON object")
    _has(problems, "test.json", None, None, "JSON nested too deeply to read")


def test_huge_integer_and_empty_splits(raw_sample, tmp_path):
    (raw_sample / "test.json").write_text('{"data": [{"meta": {"id": ' + "9" * 5000 + "}}]}")
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", None, None, "unreadable JSON value")
    (raw_sample / "test.json").write_text('{"access": "private", "data": []}')
    (raw_sample / "shots.json").write_text('{"data": []}')
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "test.json", None, "data", "the test split is empty")
    _has(problems, "shots.json", None, "data", "the shots split is empty")


def test_metadata_is_never_evaluated(raw_sample, tmp_path):
    canary = tmp_path / "canary"
    meta_path = raw_sample / "raw_dataset_meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(
        dataset_size=f"__import__('pathlib').Path({str(canary)!r}).touch()",
        synt_source_models="list(set(open('/etc/passwd') for sample in DATA))",
        prompts=42,
        exclude_fields="meta",
        human_benchmark={"Exact match": "high"},
        skills="Ethics",
    )
    meta_path.write_text(json.dumps(meta))
    problems = _fails(raw_sample, tmp_path / "out")
    assert not canary.exists()
    for field, text in [
        ("dataset_size", "is not one this project computes"),
        ("synt_source_models", "is not one this project computes"),
        ("prompts", "must be a list of prompt strings"),
        ("exclude_fields", "must be an object like"),
        ("human_benchmark.Exact match", "must be a number"),
        ("skills", "must be a list of strings, got str"),
    ]:
        _has(problems, "raw_dataset_meta.json", None, field, text)


def test_bad_shard_sizes_are_refused_before_anything_is_written(raw_sample, tmp_path, capsys):
    for size in ("abc", "0", "-5MB", "5XB"):
        code = main(
            [
                "build",
                "ruhhh_image",
                "--raw",
                str(raw_sample),
                "--out",
                str(tmp_path / "new" / "out"),
                f"--max-shard-size={size}",
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"mera-multi: error: --max-shard-size {size!r}: not a positive size")
    assert not (tmp_path / "new").exists()


# ---- the output folder ----


def test_out_never_replaces_what_the_tool_did_not_write(raw_sample, tmp_path, monkeypatch, decoy):
    before_raw, before_decoy = tree_hash(raw_sample), tree_hash(decoy)
    monkeypatch.chdir(decoy / "sub")
    for out in (raw_sample, raw_sample.parent, decoy / "sub", decoy):  # raw, its parent, cwd..
        with pytest.raises(MeraError, match="choose a new folder"):
            export_raw(TASK, raw_sample, out)
    monkeypatch.chdir(raw_sample / "samples")
    with pytest.raises(MeraError, match="not written by this tool"):
        export_raw(TASK, raw_sample, decoy)
    os.symlink(tmp_path / "nowhere", tmp_path / "link-out")
    with pytest.raises(MeraError, match="symbolic link"):
        export_raw(TASK, raw_sample, tmp_path / "link-out")
    assert tree_hash(raw_sample) == before_raw and tree_hash(decoy) == before_decoy

    user_dir = tmp_path / "mine"
    (user_dir / "notes").mkdir(parents=True)
    (user_dir / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(MeraError, match="notes/keep.txt"):
        export_raw(TASK, raw_sample, user_dir)
    assert (user_dir / "notes" / "keep.txt").read_text() == "mine"
    assert not (user_dir / MARKER).exists()


def test_rebuild_replaces_its_own_export_and_fills_an_empty_folder(raw_sample, tmp_path, decoy):
    before = tree_hash(decoy)
    out = tmp_path / "out"
    export_raw(TASK, raw_sample, out)
    export_raw(TASK, raw_sample, out)  # our marker: replaced without --overwrite
    empty = tmp_path / "empty"
    empty.mkdir()
    export_raw(TASK, raw_sample, empty)
    assert len(datasets.load_dataset(str(empty), split="test")) == 26
    assert sorted(os.listdir(tmp_path)) == sorted(["decoy", "empty", "out", raw_sample.name])
    _edit(raw_sample, "test", _set("outputs", "C"))
    with pytest.raises(DataValidationError):
        export_raw(TASK, raw_sample, out)  # a failed rebuild keeps the previous export
    assert len(datasets.load_dataset(str(out), split="test")) == 26
    with pytest.raises(DataValidationError):
        export_raw(TASK, raw_sample, tmp_path / "a" / "b" / "c")
    assert not (tmp_path / "a").exists()  # parents it made are removed again
    assert tree_hash(decoy) == before


# ---- property-based: any JSON value in any field ----

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.sampled_from(["A", "B", "", "samples/image0000.png", "{question}", "{0}", "x" * 300]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
RECORD_FIELDS = [
    "instruction",
    "inputs",
    "inputs.image",
    "inputs.question",
    "inputs.option_a",
    "outputs",
    "meta",
    "meta.id",
    "meta.group_id",
    "meta.image",
    "meta.image.source",
    "meta.categories",
    "meta.categories.category",
    "meta.categories.subcategory",
]
META_FIELDS = [
    "dataset_name",
    "license",
    "dataset_size",
    "description",
    "skills",
    "synt_source_models",
    "data_example",
    "data_field_descriptions",
    "prompts",
    "exclude_fields",
    "metrics",
    "human_benchmark",
]


# Few examples per run (the CPUs are shared); MERA_HYPOTHESIS_EXAMPLES=500 for a long hunt.
# No example database: the tests write nothing into the working tree.
HOSTILE_SETTINGS = settings(
    max_examples=int(os.environ.get("MERA_HYPOTHESIS_EXAMPLES", "25")),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _small_raw(root: Path) -> Path:
    """A copy of the sample trimmed to two records per split (fast builds)."""
    raw = root / "raw"
    shutil.copytree(bundled_sample(), raw)
    for split in ("test", "shots"):
        _edit(raw, split, lambda data: data.__delitem__(slice(2, None)))
    return raw


def _build_or_clean_error(raw: Path, out: Path) -> None:
    try:
        export_raw(TASK, raw, out, include_private_answers=True)
    except MeraError as err:
        assert str(err).strip() and not out.exists()
        assert not [n for n in os.listdir(out.parent) if n.startswith(".")]
    else:
        assert len(datasets.load_dataset(str(out), split="test")) >= 1


@HOSTILE_SETTINGS
@given(field=st.sampled_from(RECORD_FIELDS), value=JSON, split=st.sampled_from(["test", "shots"]))
def test_any_value_in_any_record_field_builds_or_fails_cleanly(field, value, split):
    with tempfile.TemporaryDirectory() as tmp:
        raw = _small_raw(Path(tmp))
        try:
            _edit(raw, split, _set(field, value))
        except TypeError:  # the parent field was replaced by a non-object earlier: skip
            return
        _build_or_clean_error(raw, Path(tmp) / "out")


@HOSTILE_SETTINGS
@given(field=st.sampled_from(META_FIELDS), value=JSON)
def test_any_value_in_any_metadata_field_builds_or_fails_cleanly(field, value):
    with tempfile.TemporaryDirectory() as tmp:
        raw = _small_raw(Path(tmp))
        meta_path = raw / "raw_dataset_meta.json"
        meta = json.loads(meta_path.read_text())
        meta[field] = value
        meta_path.write_text(json.dumps(meta))
        _build_or_clean_error(raw, Path(tmp) / "out")
        out = Path(tmp) / "out"
        if out.exists():  # the card was written from whatever the field held
            assert (out / "README.md").read_text(encoding="utf-8").startswith("---\n")


def test_nesting_deep_enough_to_parse_is_still_refused(raw_sample, tmp_path):
    meta_path = raw_sample / "raw_dataset_meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(
        json.dumps(meta)[:-1] + ', "exclude_fields": ' + '{"a": ' * 900 + "{}" + "}" * 900 + "}"
    )
    problems = _fails(raw_sample, tmp_path / "out")
    _has(problems, "raw_dataset_meta.json", None, None, "JSON nested deeper than 64 levels")
