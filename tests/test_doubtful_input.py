"""Input that parses but must not be trusted, and misuses that must read as a sentence:
lone surrogates, repeated JSON keys, ids in both splits, hard links, ruSLUn's documented
object answers, Python API misuses and blank command-line options."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.data.raw import RawDataset
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import get_task

TASK = get_task("ruhhh_image")


def _problems(raw: Path, task=TASK) -> list:
    reader = RawDataset(task, raw)
    for split in reader.splits():
        for _ in reader.records(split):
            pass
    return reader.problems


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
    assert all("\n" not in str(p) for p in problems)


def _load(raw: Path, name: str) -> dict:
    return json.loads((raw / name).read_text(encoding="utf-8"))


def _save(raw: Path, name: str, doc, ensure_ascii=False) -> None:
    (raw / name).write_text(json.dumps(doc, ensure_ascii=ensure_ascii), encoding="utf-8")


# ---- lone surrogates: one problem naming file, id and field, never a traceback ----

FIELDS = [
    "inputs.question",
    "inputs.option_a",
    "instruction",
    "outputs",
    "meta.categories.category",
    "inputs.image",
]


def _set_path(record: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        record = record[key]
    record[last] = value


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    field=st.sampled_from(FIELDS),
    position=st.integers(0, 5),
    text=st.text(max_size=6),
    surrogate=st.integers(0xD800, 0xDFFF),
)
def test_a_lone_surrogate_in_any_text_field_is_one_problem(
    tmp_path, field, position, text, surrogate
):
    raw_sample = Path(tempfile.mkdtemp(dir=tmp_path)) / "raw"
    shutil.copytree(bundled_sample(), raw_sample)  # a fresh copy for every example
    doc = _load(raw_sample, "test.json")
    bad = text[:3] + chr(surrogate) + text[3:]
    _set_path(doc["data"][position], field, bad)
    _save(raw_sample, "test.json", doc, ensure_ascii=True)  # written as a \\udXXX escape
    example_id = doc["data"][position]["meta"]["id"]
    problems = _problems(raw_sample)
    _has(problems, "test.json", example_id, field, "lone surrogate")
    assert len(problems) == 1


def test_surrogates_in_keys_and_metadata_and_the_cli_line(raw_sample, tmp_path, capsys):
    meta = _load(raw_sample, "raw_dataset_meta.json")
    meta["description"] = "ok \ud83d then"
    _save(raw_sample, "raw_dataset_meta.json", meta, ensure_ascii=True)
    doc = _load(raw_sample, "test.json")
    doc["data"][1]["meta"]["\udc00key"] = 1
    _save(raw_sample, "test.json", doc, ensure_ascii=True)
    problems = _problems(raw_sample)
    _has(problems, "raw_dataset_meta.json", None, "description", "lone surrogate \\ud83d")
    _has(problems, "test.json", doc["data"][1]["meta"]["id"], "meta", "a key holds")
    code = main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "lone surrogate" in err


# ---- repeated keys and ids ----


def test_duplicate_json_keys_are_refused(raw_sample):
    text = (raw_sample / "test.json").read_text(encoding="utf-8")
    first = json.loads(text)["data"][0]
    twice = text.replace('"question": ', '"question": "shadowed", "question": ', 1)
    (raw_sample / "test.json").write_text(
        twice.replace('"access": ', '"access": "public", "access": ', 1), encoding="utf-8"
    )
    meta = (raw_sample / "raw_dataset_meta.json").read_text(encoding="utf-8")
    (raw_sample / "raw_dataset_meta.json").write_text(
        meta.replace('"license": ', '"license": "x", "license": ', 1), encoding="utf-8"
    )
    problems = _problems(raw_sample)
    _has(problems, "test.json", first["meta"]["id"], "inputs.question", "duplicate key 'question'")
    _has(problems, "test.json", None, "access", "duplicate key 'access'")
    _has(problems, "raw_dataset_meta.json", None, "license", "duplicate key 'license'")


def test_an_id_in_test_and_shots_is_refused(raw_sample):
    shots = _load(raw_sample, "shots.json")
    test_id = _load(raw_sample, "test.json")["data"][3]["meta"]["id"]
    shots["data"][1]["meta"]["id"] = test_id
    _save(raw_sample, "shots.json", shots)
    problems = _problems(raw_sample)
    _has(problems, "shots.json", test_id, "meta.id", "the same id is in the test split")
    assert len(problems) == 1


# ---- hard links are refused as symbolic links leading out are ----


def test_hard_linked_files_are_refused(raw_sample, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.png"
    shutil.copy(raw_sample / "samples" / "image0000.png", secret)
    doc = _load(raw_sample, "test.json")
    os.link(secret, raw_sample / "samples" / "linked.png")
    doc["data"][2]["inputs"]["image"] = "samples/linked.png"
    _save(raw_sample, "test.json", doc)
    problems = _problems(raw_sample)
    _has(problems, "test.json", doc["data"][2]["meta"]["id"], "inputs.image", "hard-linked")
    os.link(raw_sample / "shots.json", outside / "shots.json")
    problems = _problems(raw_sample)
    _has(problems, "shots.json", None, None, "hard-linked (2 names for one file)")
    assert secret.read_bytes() and (outside / "shots.json").exists()  # nothing touched


# ---- ruSLUn: the documented raw form has the answer as a JSON object ----


def _official_gold(outputs: str):
    """The official ruSLUn gold parser's rule (multimodal_tasks/ruslun/utils.py)."""
    return json.loads(outputs.replace("'", '"'))


def test_ruslun_object_answers_are_stored_as_the_official_string(tmp_path):
    raw = tmp_path / "ruSLUn"
    shutil.copytree(bundled_sample("ruslun"), raw)
    doc = _load(raw, "test.json")
    answer = {
        "intent": "RateBook",
        "slots": [{"object_name": "доктор живаго"}, {"rating_value": "три"}],
    }
    as_string = doc["data"][1]["outputs"]
    doc["data"][0]["outputs"] = answer
    doc["data"][2]["outputs"] = {"intent": "PlayMusic", "slots": [{"artist": "rock'n'roll"}]}
    _save(raw, "test.json", doc)
    problems = _problems(raw, get_task("ruslun"))
    _has(problems, "test.json", doc["data"][2]["meta"]["id"], "outputs", "apostrophe")
    assert len(problems) == 1
    doc["data"][2]["outputs"] = as_string
    _save(raw, "test.json", doc)
    out = export_raw(get_task("ruslun"), raw, tmp_path / "out", include_private_answers=True)
    import datasets

    stored = datasets.load_dataset(str(out), split="test")["outputs"]
    assert (
        stored[0] == "{'intent': 'RateBook', 'slots': [{'object_name': 'доктор живаго'}, "
        "{'rating_value': 'три'}]}"
    )
    assert _official_gold(stored[0]) == answer and stored[1] == as_string


# ---- Python API misuses: a sentence, never a bare IndexError/AttributeError ----


def test_api_misuses_raise_a_sentence():
    from mera_multi_hf import load_metric, load_task, render_prompt
    from mera_multi_hf.generation import RunConfig
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    cases = [
        (lambda: load_task(None), TypeError, "a task is named by its key"),
        (lambda: render_prompt(TASK, {}), MeraError, "must be a row of ruhhh_image"),
        (
            lambda: render_prompt("ruhhh_image", {"instruction": 3, "inputs": {}}),
            MeraError,
            "an `instruction` string",
        ),
        (lambda: RunConfig(limit="5"), TypeError, "limit must be an integer, got str '5'"),
        (lambda: RunConfig(timeout="soon"), TypeError, "timeout must be a number of seconds"),
        (lambda: run_evaluation(tasks=None), TypeError, "tasks must name tasks"),
        # a metric module raises its own copy's MeraError (a Space has no package)
        (
            lambda: load_metric("exact_match").compute(predictions=[], references=[]),
            Exception,
            "the predictions are empty",
        ),
        (
            lambda: load_metric("judge_score").compute(predictions=[], references=[], prompts=[]),
            Exception,
            "the predictions are empty",
        ),
    ]
    for call, kind, text in cases:
        with pytest.raises(kind, match=text) as raised:
            call()
        assert type(raised.value).__name__ in {"MeraError", "TypeError"}


# ---- blank option values: one line ----


@pytest.mark.parametrize(
    "argv, option",
    [
        (["evaluate", "--data", ""], "--data"),
        (["evaluate", "--tasks", " "], "--tasks"),
        (["evaluate", "--output-dir", ""], "--output-dir"),
        (["build", "ruhhh_image", "--raw", "", "--output-dir", "OUT"], "--raw"),
        (["build", "ruhhh_image", "--raw", "sample", "--out", ""], "--output-dir"),
    ],
)
def test_blank_options_are_one_line(tmp_path, capsys, argv, option):
    argv = [str(tmp_path / "o") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"mera-multi: error: {option} is empty: give a value or leave the option out\n"
    assert not (tmp_path / "o").exists()


def test_a_lone_surrogate_in_a_prediction_is_replaced_and_counted(tmp_path, capsys):
    """Text is validated where it enters: the answer is scored with U+FFFD in place of the
    surrogate (it never reaches a UTF-8 writer), counted in results.json and on its row."""
    import zipfile

    from mera_multi_hf import load_task

    ids = sorted(m["id"] for m in load_task("ruhhh_image", source="sample", split="test")["meta"])
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"id": i, "prediction": "A" if i != ids[2] else "A\udfff"}) + "\n"
            for i in ids
        ),
        encoding="utf-8",
    )
    args = [
        "score",
        "--task",
        "ruhhh_image",
        "--predictions",
        str(preds),
        "--out",
        str(tmp_path / "out"),
        "--data",
        "sample",
    ]
    assert main(args) == 0, capsys.readouterr().err
    run = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["run"]
    assert run["unencodable_replaced"] == {"ruhhh_image": 1}
    with zipfile.ZipFile(tmp_path / "out" / "submission.zip") as zf:
        rows = json.loads(zf.read("ruHHH_Image.json"))["data"]["test"]
    assert {r["meta"]["id"]: r["outputs"] for r in rows}[ids[2]] == "A\ufffd"
    assert main(args) == 0  # a rerun does not fail on it either
