"""results.json against its JSON Schema (docs/results.schema.json) and its typed records
(mera_multi_hf/scoring/records.py): what `evaluate` (every task of the bundled samples) and
`score` write validates and reads back to the same JSON; a file of an older schema (no
schema_version: version 1) is read by `compare` and `view` with one note naming it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.outputs import MARKER
from mera_multi_hf.scoring.records import SCHEMA_VERSION, Results

SCHEMA = json.loads(
    (Path(__file__).parent.parent / "docs" / "results.schema.json").read_text(encoding="utf-8")
)


def _problems(doc: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, bundled_run):
    """A run of every task on the bundled samples (conftest's, shared), and one task
    scored from its log."""
    root = tmp_path_factory.mktemp("schema")
    run, done = bundled_run
    assert done.returncode == 0, done.stderr[-2000:]
    (root / "run").symlink_to(run, target_is_directory=True)
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(root / "run" / "samples_ruhhh_image_test.jsonl"),
                "--out",
                str(root / "scored"),
            ]
        )
        == 0
    )
    return root


def test_the_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"].endswith("/draft/2020-12/schema")


@pytest.mark.parametrize("folder", ["run", "scored"])
def test_what_evaluate_and_score_write_validates_and_reads_back_the_same(runs, folder):
    text = (runs / folder / "results.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert _problems(doc) == []
    read = Results.read(runs / folder)
    # the records give back the file's JSON exactly: keys, order and values
    assert json.dumps(read.to_dict(), ensure_ascii=False, indent=2) + "\n" == text
    assert read.folder == str(runs / folder)
    assert all(r.scorable == doc["tasks"][k]["scorable"] for k, r in read.tasks.items())


def test_the_schema_refuses_a_task_result_without_its_scores(runs):
    doc = json.loads((runs / "run" / "results.json").read_text(encoding="utf-8"))
    del doc["tasks"]["weird"]["task_score"]
    doc["tasks"]["ruclevr"]["scorable"] = "yes"
    problems = _problems(doc)
    assert any(p.startswith("tasks/weird") and "task_score" in p for p in problems), problems
    assert any(p.startswith("tasks/ruclevr/scorable") for p in problems), problems


def _old_copy(run: Path, old: Path) -> None:
    """The run as a version before schema_version wrote it (the marker lists its files)."""
    shutil.copytree(run, old)
    marker = json.loads((old / MARKER).read_text(encoding="utf-8"))
    (old / MARKER).write_text(json.dumps({**marker, "folder": os.path.realpath(old)}))
    doc = json.loads((old / "results.json").read_text(encoding="utf-8"))
    del doc["schema_version"]
    (old / "results.json").write_text(
        json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )


def test_an_older_file_is_read_by_compare_and_view_with_one_note(runs, tmp_path, capsys):
    old = tmp_path / "old"
    _old_copy(runs / "run", old)
    capsys.readouterr()
    assert main(["compare", str(old), str(runs / "scored"), "--out", str(tmp_path / "cmp")]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "results schema" in line]
    assert len(notes) == 1 and "older" in notes[0] and "version 1" in notes[0], notes
    assert notes[0].startswith("mera-multi: note: ") and str(old / "results.json") in notes[0]
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["tasks"]["ruhhh_image"]
    assert main(["view", str(old)]) == 0
    err = capsys.readouterr().err
    assert err.count("results schema (version 1;") == 1, err


def test_a_newer_version_is_read_with_a_note_that_says_so(runs, capsys):
    doc = json.loads((runs / "scored" / "results.json").read_text(encoding="utf-8"))
    doc["schema_version"] = SCHEMA_VERSION + 1
    doc["tasks"]["ruhhh_image"]["a_future_field"] = [1]
    read = Results.from_dict(doc, "future.json")
    assert (
        f"future.json is of a newer results schema (version {SCHEMA_VERSION + 1}"
        in capsys.readouterr().err
    )
    assert read.tasks["ruhhh_image"].to_dict()["a_future_field"] == [1]  # kept, not refused
    assert read.tasks["ruhhh_image"].scorable is True
