"""A made-up 19th task, shipped as a contributor adds one and nothing else: its
declaration (toy_task/tasks.py), its builder (toy_task/builders/toy_colours.py) and its
bundled raw sample (toy_task/samples/ToyColours/: test.json, shots.json,
raw_dataset_meta.json, samples/*.png). The real `mera-multi` commands find it through
$MERA_MULTI_TASKS and take it from build to evaluate to score to the submission; groups
are made of its own inputs (the same picture), its breakdown is its own meta field."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import datasets
import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import TASKS

TOY = Path(__file__).resolve().parent / "toy_task"


@pytest.fixture
def toy_commands(monkeypatch, tmp_path):
    """The command line with the toy task's declaration module named, run in tmp_path;
    afterwards the process forgets the task (its modules and its registry entry)."""
    monkeypatch.setenv("MERA_MULTI_TASKS", str(TOY / "tasks.py"))
    monkeypatch.chdir(tmp_path)
    yield lambda *argv: main(list(argv))
    TASKS.pop("toy_colours", None)
    for name in [
        n
        for n in sys.modules
        if n.startswith(
            ("mera_multi_hf._task_modules.", "mera_multi_hf._task_builders.", "toy_task")
        )
    ]:
        del sys.modules[name]


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _submitted(path: Path) -> dict[int, str]:
    with zipfile.ZipFile(path) as zf:
        assert [n for n in zf.namelist() if n.endswith(".json")] == ["ToyColours.json"]
        rows = json.loads(zf.read("ToyColours.json"))["data"]["test"]
    return {r["meta"]["id"]: r["outputs"] for r in rows}


def test_a_new_task_builds_evaluates_scores_and_submits(toy_commands, tmp_path):
    # build: the bundled sample -> the Hub layout, groups derived from the same picture
    assert toy_commands("build", "toy_colours", "--raw", "sample", "--out", "hub/ToyColours") == 0
    built = datasets.load_dataset(str(tmp_path / "hub/ToyColours"), split="test")
    assert [m["group_id"] for m in built["meta"]] == [1, 2, 3, 1, 3]  # red1 red4, blue3 blue5
    assert [m["shade"] for m in built["meta"]] == ["light", "dark", "light", "dark", "light"]
    assert "ToyColours" in (tmp_path / "hub/ToyColours/README.md").read_text(encoding="utf-8")

    # evaluate: the built folder through the tiny model
    assert (
        toy_commands(
            "evaluate",
            "--tasks",
            "toy_colours",
            "--data",
            "hub/ToyColours",
            "--output-dir",
            "run",
            "--no-progress",
            "--max-new-tokens",
            "4",
        )
        == 0
    )
    run = json.loads((tmp_path / "run/results.json").read_text())["tasks"]["toy_colours"]
    log = _log(tmp_path / "run/samples_toy_colours_test.jsonl")
    assert [r["target"] for r in log] == ["A", "B", "C", "A", "C"]
    em = {r["id"]: r["metrics"]["exact_match"] for r in log}
    groups = ([1, 4], [2], [3, 5])
    assert run["n_examples"] == 5 and run["n_groups"] == 3 and run["scorable"]
    assert run["metrics"] == pytest.approx(
        {
            "exact_match": sum(em.values()) / 5,
            "group_exact_match": sum(all(em[i] == 1 for i in g) for g in groups) / 3,
        }
    )
    assert {k: v["n_examples"] for k, v in run["breakdown"]["shade"].items()} == {
        "light": 3,
        "dark": 2,
    }
    assert run["human_baseline"] == {"exact_match": 1.0}
    assert "toy_colours" in (tmp_path / "run/results.md").read_text(encoding="utf-8")

    # score: the same answers scored again against the bundled sample
    assert (
        toy_commands(
            "score",
            "--task",
            "toy_colours",
            "--data",
            "sample",
            "--predictions",
            "run/samples_toy_colours_test.jsonl",
            "--out",
            "scored",
        )
        == 0
    )
    scored = json.loads((tmp_path / "scored/results.json").read_text())["tasks"]["toy_colours"]
    assert scored["metrics"] == pytest.approx(run["metrics"]) and scored["n_groups"] == 3

    # submission: one class-named file, every test id, the model's answers
    answers = {r["id"]: r["generation"] for r in log}
    assert _submitted(tmp_path / "run/submission.zip") == answers
    assert _submitted(tmp_path / "scored/submission.zip") == answers


def test_the_new_task_is_listed_and_its_sample_is_bundled(toy_commands, tmp_path, capsys):
    from mera_multi_hf.demo.sample_data import bundled_sample, write_sample

    assert toy_commands("tasks") == 0
    assert "toy_colours" in capsys.readouterr().out
    assert bundled_sample("toy_colours") == TOY / "samples" / "ToyColours"
    copy = write_sample(tmp_path / "copy", "toy_colours")
    assert sorted(p.name for p in copy.rglob("*")) == sorted(
        p.name for p in bundled_sample("toy_colours").rglob("*")
    )
    # the console script itself, in a process of its own
    done = subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", "tasks"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "toy_colours" in done.stdout, done.stderr[-2000:]


def test_the_declaration_may_be_named_as_an_importable_module(toy_commands, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TOY.parent))
    monkeypatch.setenv("MERA_MULTI_TASKS", " toy_task.tasks, ")
    assert toy_commands("tasks") == 0 and "toy_colours" in capsys.readouterr().out
    assert sys.modules["toy_task.tasks"].TOY_COLOURS is TASKS["toy_colours"]


def test_a_task_module_that_is_not_there_is_one_clear_line(monkeypatch, capsys):
    for named, said in (
        ("nowhere/tasks.py", "the task module nowhere/tasks.py does not exist"),
        ("no_such_tasks", "cannot import the task module no_such_tasks"),
    ):
        monkeypatch.setenv("MERA_MULTI_TASKS", named)
        assert main(["tasks"]) == 2
        assert capsys.readouterr().err == f"mera-multi: error: MERA_MULTI_TASKS: {said}" + (
            " (no module no_such_tasks)\n" if named == "no_such_tasks" else "\n"
        )


def test_group_by_must_name_the_inputs_and_match_the_group_metric():
    from mera_multi_hf.core.errors import MeraError

    base = dict(choices=("A", "B"))
    for metrics, group_by in (
        (("exact_match", "group_exact_match"), ()),
        (("exact_match",), ("image",)),
        (("exact_match", "group_exact_match"), ("nowhere",)),
    ):
        with pytest.raises(MeraError, match="group_by must name its inputs"):
            TaskSpec(
                "bad",
                "x/Bad",
                "Bad",
                "image",
                ("image",),
                ("question",),
                "letter",
                metrics,
                group_by=group_by,
                **base,
            )
