"""A rerun with nothing new keeps the outputs: the same sample log, data, options and code
write no file again (each keeps its inode and time) and the command says so in one
line, with the results of the first run; a changed option, a missing, edited or opened
output, a new answer or --overwrite write them all again, as a fresh run would."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.generation.backends import Capabilities, cut_at_stop, register_backend
from mera_multi_hf.pipeline.evaluate import run_evaluation
from mera_multi_hf.pipeline.score import score_predictions

# what the command itself keeps writing at every start (its journal and its lock), and
# the sample log it appends to: everything else is an output
JOURNAL = {".mera-multi-outputs.json", ".mera-multi.lock", "run_manifest.json"}


@dataclass
class _Options:
    batch_size: int = 4
    stop: tuple | list | None = None
    seed: int = 0


@register_backend("test-resume", options=_Options, capabilities=Capabilities(media={"image"}))
class _Letters:
    """Answers ``letter`` (a class attribute: a test changes it between two runs, as a
    model served anew may answer otherwise, without changing the run's settings)."""

    name, letter = "test-resume", "A"

    def __init__(self, model, **options):
        o = _Options(**options)
        self.model_id, self.revision, self.batch_size = model or "letters", "v1", o.batch_size
        self.stop = tuple(o.stop or ("\n\n",))

    def settings(self):
        return {"backend": self.name, "stop": list(self.stop)}

    def info(self):
        return {"model": self.model_id, "revision": self.revision, "backend": self.name}

    def load(self):
        pass

    def generate(self, requests):
        return [cut_at_stop(_Letters.letter + "\n\nx", self.stop) for _ in requests]

    def close(self):
        pass


@pytest.fixture(autouse=True)
def _answer_a():
    _Letters.letter = "A"
    yield
    _Letters.letter = "A"


def _evaluate(out, **options) -> dict:
    config = dict(backend="test-resume", data="sample", output_dir=str(out), no_progress=True)
    return run_evaluation(**{**config, **options})


def _outputs(folder) -> dict:
    """Every output file -> (inode, time, size, mode): what a rewrite changes."""
    found = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), folder)
            if name not in JOURNAL and not rel.startswith("logs" + os.sep):
                info = os.lstat(os.path.join(dirpath, name))
                found[rel] = (info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode)
    return found


def _steady(doc: dict) -> dict:
    """An outcome less when it ran (the run record's times and sessions) and its files."""
    run = {k: v for k, v in doc["run"].items() if k not in ("sessions", "started_at")}
    run = {k: v for k, v in run.items() if k not in ("duration_s", "preflight")}
    return {"run": run, "tasks": doc["tasks"], "summary": doc["summary"]}


def test_a_rerun_with_nothing_new_writes_nothing_and_says_so(tmp_path, capsys):
    out = tmp_path / "run"
    command = ["evaluate", "--backend", "test-resume", "--data", "sample", "--output-dir",
               str(out), "--no-progress"]  # fmt: skip
    assert main(command) == 0
    before = _outputs(out)
    assert "results.html" in before and any(n.startswith("results_media") for n in before)
    capsys.readouterr()
    assert main(command) == 0
    shown = capsys.readouterr().out.splitlines()
    assert _outputs(out) == before  # no file written again, none added or removed
    assert [x for x in shown if x.startswith("unchanged: ")] == [
        f"unchanged: {out} (nothing new since its outputs were written: the same answers, "
        "data, options and code; none written again)"
    ]
    assert not [x for x in shown if x.startswith("wrote:")]
    assert "examples: 26  (from the sample log: 26, generated now: 0)" in shown


def test_a_rerun_with_nothing_new_gives_the_results_of_a_fresh_run(tmp_path):
    out = tmp_path / "run"
    first = _evaluate(out)
    before = _outputs(out)
    again = _evaluate(out)  # the Python API: the results the kept files hold
    assert _outputs(out) == before
    assert {k: again[k] for k in ("run", "tasks", "summary")} == {
        k: first[k] for k in ("run", "tasks", "summary")
    }  # the very results the first run gave, its session and times
    assert sorted(again["files"]) == sorted(first["files"])
    assert again["notes"] == first["notes"] and again["table"] != first["table"]
    fresh = _evaluate(tmp_path / "fresh")  # the same inputs into a new folder
    assert _steady(fresh)["tasks"] == _steady(again)["tasks"]
    assert fresh["summary"] == again["summary"]


def _edit(path):
    with open(path, "ab") as fh:
        fh.write(b"\n<!-- edited -->\n")


CHANGES = {
    "an option": lambda out: {"em_mode": "strict"},
    "a deleted report": lambda out: os.unlink(out / "results.md"),
    "a deleted media file": lambda out: os.unlink(next((out / "results_media").iterdir())),
    "an edited page": lambda out: _edit(out / "results.html"),
    "an edited submission": lambda out: _edit(out / "submission.zip"),
    "a private file opened to others": lambda out: os.chmod(out / "results.json", 0o644),
    "--overwrite": lambda out: {"overwrite": True},
}


@pytest.mark.parametrize("change", CHANGES)
def test_anything_changed_writes_every_output_again(change, tmp_path):
    out = tmp_path / "run"
    first = _evaluate(out)
    before = _outputs(out)
    options = CHANGES[change](out) or {}
    again = _evaluate(out, **options)
    after = _outputs(out)
    assert sorted(after) == sorted(before)  # every file there again
    rewritten = [n for n in before if after[n][:2] != before[n][:2]]
    assert sorted(rewritten) == sorted(before)  # each written anew
    assert after["results.json"][3] & 0o777 == 0o600  # the sample's answers are private
    assert b"edited" not in (out / "results.html").read_bytes()
    if change == "an option":
        modes = again["run"]["metric_modes"]["ruhhh_image"]
        assert modes["exact_match"] == "strict" != first["run"]["metric_modes"]["ruhhh_image"]
    else:
        assert _steady(again)["tasks"] == _steady(first)["tasks"]
    if change != "--overwrite":  # (which always writes anew) then nothing new
        _evaluate(out, **options)
        assert _outputs(out) == after


def test_a_new_answer_writes_every_output_again(tmp_path):
    """One example's logged answer gone: the rerun answers it anew ("B" now), and the
    outputs are those of the new sample log."""
    out = tmp_path / "run"
    _evaluate(out)
    before = _outputs(out)
    log = out / "logs" / "samples-rank0.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    dropped = json.loads(lines[-1])["id"]
    log.write_bytes(b"".join(lines[:-1]))
    _Letters.letter = "B"
    again = _evaluate(out)
    assert again["counts"]["generated"] == 1
    assert all(_outputs(out)[n][:2] != before[n][:2] for n in before)
    samples = (out / "samples_ruhhh_image_test.jsonl").read_text(encoding="utf-8")
    answers = {r["id"]: r["generation"] for r in map(json.loads, samples.splitlines())}
    assert answers[dropped] == "B" and set(answers.values()) == {"A", "B"}


def test_score_keeps_its_outputs_of_the_same_predictions(tmp_path):
    run = tmp_path / "run"
    _evaluate(run)
    predictions = run / "samples_ruhhh_image_test.jsonl"
    first = score_predictions("ruhhh_image", predictions, tmp_path / "scored", data="sample")
    before = _outputs(tmp_path / "scored")
    again = score_predictions("ruhhh_image", predictions, tmp_path / "scored", data="sample")
    assert _outputs(tmp_path / "scored") == before
    assert again["table"].splitlines()[-1].startswith("unchanged: ")
    assert {k: v for k, v in again.items() if k != "table"} == {
        k: v for k, v in first.items() if k != "table"
    }
    score_predictions(
        "ruhhh_image", predictions, tmp_path / "scored", data="sample", overwrite=True
    )
    after = _outputs(tmp_path / "scored")
    assert all(after[n][:2] != before[n][:2] for n in before)


def test_the_code_stamp_lists_the_code_files_rglob_finds(tmp_path):
    from mera_multi_hf.pipeline.fingerprint import CODE_SUFFIXES, _code_files

    for name in ("a.py", "a/b.py", "a/b/c.j2", "a.py.txt", "z/__pycache__/d.py", "y.js/e.css"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    want = sorted(
        p
        for p in Path(tmp_path).rglob("*")
        if p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts
    )
    got = sorted(_code_files(str(tmp_path), ()))
    assert [tmp_path.joinpath(*parts) for parts, _ in got] == want
    assert [path for _, path in got] == [str(p) for p in want]
