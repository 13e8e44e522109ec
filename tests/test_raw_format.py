"""The raw layout in the official form (docs/raw-format.md): a test.json without the
`access` key takes the task's declaration, with a note; letter golds outside the options
the prompt shows are named at build time."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import datasets
import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.demo.sample_data import bundled_sample

REPO = Path(__file__).resolve().parent.parent


def _without_access(task: str, tmp_path: Path) -> Path:
    folder = tmp_path / task
    shutil.copytree(bundled_sample(task), folder)
    doc = json.loads((folder / "test.json").read_text(encoding="utf-8"))
    doc.pop("access", None)
    (folder / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.mark.parametrize("task, public", [("ruclevr", True), ("ruhhh_image", False)])
def test_missing_access_takes_the_task_declaration_with_a_note(task, public, tmp_path, capsys):
    folder = _without_access(task, tmp_path)
    assert main(["build", task, "--raw", str(folder), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    notes = [ln for ln in err.splitlines() if 'no "access" key' in ln]
    assert len(notes) == 1 and ("'public'" if public else "'private'") in notes[0]
    outputs = datasets.load_dataset(
        str(tmp_path / "out"), split="test", cache_dir=str(tmp_path / "hf")
    )["outputs"]
    assert all(outputs) == public  # a public task keeps its answers, a private one blanks them


def test_golds_outside_the_answer_space_are_named_at_build(tmp_path, capsys):
    assert main(["build", "rutie_image", "--raw", "sample", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    test_note = next(ln for ln in err.splitlines() if "test.json" in ln and "outside" in ln)
    assert "A, B, C, D" in test_note and "id 1 ('Б')" in test_note
    doc = json.loads((bundled_sample("rutie_image") / "test.json").read_text(encoding="utf-8"))
    cyrillic = [r["meta"]["id"] for r in doc["data"] if r["outputs"] not in "ABCD"]
    assert [int(i) for i in re.findall(r"id (\d+)", test_note)] == cyrillic
    assert main(["build", "ruclevr", "--raw", "sample", "--out", str(tmp_path / "c")]) == 0
    assert "outside" not in capsys.readouterr().err


def test_the_raw_format_is_documented_and_linked():
    doc = (REPO / "docs" / "raw-format.md").read_text(encoding="utf-8")
    for needle in ('{"data": [', '"access"', "raw_dataset_meta.json", "samples/", "<domain>/"):
        assert needle in doc, needle
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/raw-format.md" in readme and "dataset_formatting.md" not in readme
