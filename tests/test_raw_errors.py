"""Bad raw folders: every problem named by file, example id and field, all in one run."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from PIL import Image

from mera_multi_hf import load_task
from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import DataValidationError


def _edit(folder, split, edit):
    path = folder / f"{split}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc["data"])
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def _problems(folder, tmp_path):
    with pytest.raises(DataValidationError) as info:
        from mera_multi_hf.data.publish import export_raw
        from mera_multi_hf.tasks.table import get_task

        export_raw(get_task("ruhhh_image"), folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written
    return info.value.problems


def _find(problems, example_id, field, text):
    hits = [
        p for p in problems if p.example_id == example_id and p.field == field and text in p.message
    ]
    assert hits, f"no problem for id={example_id} {field} ~ {text!r} in:\n" + "\n".join(
        map(str, problems)
    )
    return hits[0]


def test_every_bad_record_is_reported_in_one_run(raw_sample, tmp_path):
    (raw_sample / "samples" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    (raw_sample / "samples" / "notes.png").write_bytes(b"just some text, not a picture")
    jpeg = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(jpeg, format="JPEG")
    (raw_sample / "samples" / "cut.jpg").write_bytes(jpeg.getvalue()[:-300])  # a cut-off download
    (tmp_path / "outside.png").write_bytes((raw_sample / "samples" / "image0000.png").read_bytes())

    def break_test(data):
        data[0]["inputs"]["image"] = "samples/missing.png"
        data[1]["inputs"]["image"] = "../outside.png"
        data[2]["inputs"]["image"] = "samples/broken.png"
        del data[3]["inputs"]["option_b"]
        data[4]["outputs"] = "C"
        data[5]["meta"]["id"] = data[6]["meta"]["id"]
        data[7]["instruction"] = 42
        data[8]["instruction"] = "Вопрос: {question} {answer_hint} A. {option_a} B. {option_b}"
        del data[9]["outputs"]
        data[10]["meta"]["categories"]["category"] = "rude"
        data[11]["inputs"]["image"] = "samples/notes.png"
        data[12]["inputs"]["image"] = "samples/cut.jpg"

    _edit(raw_sample, "test", break_test)
    _edit(raw_sample, "shots", lambda data: data[0].update(outputs=""))
    problems = _problems(raw_sample, tmp_path)
    test_file = str(raw_sample / "test.json")
    p = _find(problems, 1, "inputs.image", "missing file 'samples/missing.png'")
    assert p.file == test_file
    _find(problems, 2, "inputs.image", "escapes the dataset folder")
    _find(problems, 3, "inputs.image", "corrupt image")
    _find(problems, 4, "inputs.option_b", "missing required field")
    _find(problems, 5, "outputs", "'C' is not one of A, B")
    _find(problems, 7, "meta.id", "duplicate id (records #5 and #6)")
    _find(problems, 8, "instruction", "is a prompt index but the folder has no prompt list")
    _find(problems, 9, "instruction", "placeholder {answer_hint} is not an input field")
    _find(problems, 10, "outputs", "missing required field")
    _find(problems, 11, "meta.categories.category", "'rude' is not one of")
    _find(problems, 12, "inputs.image", "corrupt image (UnidentifiedImageError")
    _find(problems, 13, "inputs.image", "corrupt image")
    shots = _find(problems, 27, "outputs", "'' is not one of A, B")
    assert shots.file == str(raw_sample / "shots.json")
    assert len(problems) == 13
    text = str(DataValidationError(problems, str(raw_sample)))
    assert "test.json, id=3, field inputs.image: 'samples/broken.png': corrupt image" in text


def test_malformed_json_names_line_and_column_and_other_files_still_checked(raw_sample, tmp_path):
    (raw_sample / "shots.json").write_text('{"data": [\n  {"instruction": "x",,}\n]}\n')
    _edit(raw_sample, "test", lambda data: data[0].update(outputs="Z"))
    problems = _problems(raw_sample, tmp_path)
    bad_json = [p for p in problems if p.file.endswith("shots.json")]
    assert len(bad_json) == 1 and "malformed JSON at line 2, column 23" in bad_json[0].message
    _find(problems, 1, "outputs", "'Z' is not one of A, B")


def test_private_test_split_may_hide_answers(raw_sample):
    path = raw_sample / "test.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["access"] = "private"
    for record in doc["data"]:
        record["outputs"] = ""
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    test = load_task("ruhhh_image", source=raw_sample, split="test")
    assert set(test["outputs"]) == {""} and len(test) == 26


def test_cli_reports_problems_without_traceback(raw_sample, tmp_path, capsys):
    _edit(raw_sample, "test", lambda data: data[3].update(outputs="maybe"))
    code = main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert "1 problem(s)" in err and "test.json, id=4, field outputs: 'maybe'" in err
    assert "Traceback" not in err


def test_console_script_unknown_task_is_one_clear_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "build",
            "ruhhh_imag",
            "--raw",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("mera-multi: error: unknown task 'ruhhh_imag'")
    assert "Traceback" not in proc.stderr


def test_public_test_split_needs_its_answers(raw_sample, tmp_path):
    meta_path = raw_sample / "raw_dataset_meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["license"] = "CC BY 4.0"
    meta_path.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    path = raw_sample / "test.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["access"] = "public"
    doc["data"][0]["outputs"] = ""
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    _find(_problems(raw_sample, tmp_path), 1, "outputs", "'' is not one of A, B (this split has")
    doc["data"][0]["outputs"] = "A"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    from mera_multi_hf.data.publish import export_raw
    from mera_multi_hf.tasks.table import get_task

    out = export_raw(get_task("ruhhh_image"), raw_sample, tmp_path / "public")
    test = load_task("ruhhh_image", source=out, split="test")
    assert set(test["outputs"]) == {"A", "B"}  # a public split keeps its answers
    assert "license: cc-by-4.0" in (out / "README.md").read_text(encoding="utf-8")


def test_exclude_fields_in_both_forms(raw_sample, tmp_path):
    from mera_multi_hf.data.publish import export_raw
    from mera_multi_hf.tasks.table import get_task

    meta_path = raw_sample / "raw_dataset_meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    kept = export_raw(
        get_task("ruhhh_image"), raw_sample, tmp_path / "kept", include_private_answers=True
    )
    for n, form in enumerate(
        (
            {"meta": {"": [], "categories": [], "x": {}}, "inputs": ["nope"]},
            ["meta.group_id"],
            {"meta": ["group_id"]},
            {},
        )
    ):
        meta["exclude_fields"] = form
        meta_path.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        out = export_raw(
            get_task("ruhhh_image"), raw_sample, tmp_path / f"o{n}", include_private_answers=True
        )
        test = load_task("ruhhh_image", source=out, split="test")
        if n in (1, 2):  # group_id dropped: derived again from image + question
            assert [m["group_id"] for m in test["meta"]] == [
                m["group_id"] for m in load_task("ruhhh_image", source=kept, split="test")["meta"]
            ]
            raw_ids = {
                r["meta"]["id"]
                for r in json.loads((raw_sample / "test.json").read_text(encoding="utf-8"))["data"]
            }
            assert {m["group_id"] for m in test["meta"]} <= raw_ids
        if n == 0:  # "categories": [] drops nothing named; an unknown path is ignored
            assert test[0]["meta"]["categories"]["category"] == "empathetic"
