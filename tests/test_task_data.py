"""The data belongs to the task: another task's data is refused in one line naming both
tasks; data that names no task, or says it is private, is private (its answers stay out
of every upload file). `score` and `evaluate` write the same ZIP layout, and neither lets
a private gold answer or per-example score into it."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.scoring.predictions import DOC_POSITION, read_predictions


def _lines(data: bytes) -> list[dict]:
    return [json.loads(x) for x in data.decode("utf-8").splitlines()]


def _zip(path) -> tuple[list[str], dict[str, list[dict]]]:
    """The ZIP's names and the lines of each file of its logs_public.zip."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        inner = zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip")))
    return names, {n: _lines(inner.read(n)) for n in inner.namelist()}


def _one_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mera-multi: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_another_tasks_data_is_refused_naming_both_tasks(tmp_path, capsys):
    realvqa = bundled_sample("realvqa")
    out = tmp_path / "run"
    assert (
        main(
            [
                "evaluate",
                "--tasks",
                "ruclevr",
                "--data",
                str(realvqa),
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    line = _one_error(capsys)
    assert "RealVQA data (task realvqa), not ruCLEVR (task ruclevr)" in line
    assert "raw_dataset_meta.json (dataset_name)" in line and not out.exists()
    assert (
        main(
            [
                "score",
                "--task",
                "ruclevr",
                "--data",
                str(realvqa),
                "--predictions",
                str(realvqa / "test.json"),
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )
    assert "not ruCLEVR (task ruclevr)" in _one_error(capsys)
    # another task's folder given to build is named as such, not as a list of field errors
    assert main(["build", "ruhhh_image", "--raw", str(realvqa), "--out", str(tmp_path / "b")]) == 2
    assert "RealVQA data (task realvqa), not ruHHH-Image (task ruhhh_image)" in _one_error(capsys)
    # an export says whose it is in its card; a Hub id in its name (offline: not reached)
    export = tmp_path / "RealVQA-export"
    assert main(["build", "realvqa", "--raw", "sample", "--out", str(export)]) == 0
    capsys.readouterr()
    for data in (str(export), "MERA-evaluation/RealVQA"):
        assert (
            main(
                [
                    "evaluate",
                    "--tasks",
                    "ruclevr",
                    "--data",
                    data,
                    "--output-dir",
                    str(out),
                    "--no-progress",
                ]
            )
            == 2
        )
        line = _one_error(capsys)
        assert "not ruCLEVR (task ruclevr)" in line and "out of reach" not in line


def _copy(tmp_path, change) -> str:
    """The public ruCLEVR sample, copied and changed by ``change(meta, test)``."""
    folder = tmp_path / "data"
    shutil.copytree(bundled_sample("ruclevr"), folder)
    files = [folder / "raw_dataset_meta.json", folder / "test.json"]
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    change(*docs)
    for file, doc in zip(files, docs):
        file.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize(
    "change, note",
    [
        (lambda meta, test: meta.pop("dataset_name"), True),  # names no task
        (lambda meta, test: test.update(access="private"), False),  # its access says so
        (lambda meta, test: meta.update(license="MERA_private"), False),  # its licence says so
    ],
    ids=["names-no-task", "access-private", "mera-private-licence"],
)
def test_data_that_is_private_keeps_its_answers_out_of_the_zip(tmp_path, capsys, change, note):
    data = _copy(tmp_path, change)
    out = tmp_path / "run"
    assert (
        main(
            [
                "evaluate",
                "--tasks",
                "ruclevr",
                "--data",
                data,
                "--limit",
                "3",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    said = [x for x in printed.splitlines() if "treated as private" in x]
    assert len(said) == int(note)
    if note:
        assert "names no task" in said[0] and data in said[0]
    names, logs = _zip(out / "submission.zip")
    assert names == ["ruCLEVR.json", "logs_public.zip"]
    public = logs["samples_ruclevr_test.jsonl"]
    assert len(public) == 3 and all("target" not in r and "metrics" not in r for r in public)
    local = _lines((out / "samples_ruclevr_test.jsonl").read_bytes())
    assert all(r["gold_private"] and r["target"] for r in local)  # kept here, for scoring
    run = json.loads((out / "results.json").read_text())["run"]
    assert run["gold_private"]["files"] == [
        "samples_ruclevr_test.jsonl",
        "results.json",
        "results.html",  # its per-example verdicts come from the gold too
        "results_media/",  # the page's media folder follows the page
    ]


def test_the_task_declaration_alone_keeps_a_public_split_public(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "evaluate",
                "--tasks",
                "ruclevr",
                "--data",
                "sample",
                "--limit",
                "2",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "treated as private" not in capsys.readouterr().out
    _, logs = _zip(out / "submission.zip")
    assert all("target" in r for r in logs["samples_ruclevr_test.jsonl"])


def test_score_writes_evaluates_zip_layout_without_private_gold(tmp_path, capsys):
    # ruHHH-Image: a private task, whose sample holds the answers
    full, scored = tmp_path / "full", tmp_path / "scored"
    assert main(["evaluate", "--data", "sample", "--output-dir", str(full), "--no-progress"]) == 0
    evaluated = capsys.readouterr().out
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(full / "samples_ruhhh_image_test.jsonl"),
                "--out",
                str(scored),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    table = [x for x in evaluated.splitlines() if x.startswith(("task ", "ruhhh_image "))]
    assert table and all(row in printed.splitlines() for row in table)  # the same table
    assert "# " not in printed and "|" not in printed  # not results.md
    (run_names, run_logs), (names, logs) = (
        _zip(full / "submission.zip"),
        _zip(scored / "submission.zip"),
    )
    assert names == run_names == ["ruHHH_Image.json", "logs_public.zip"]
    assert list(logs) == list(run_logs) == ["samples_ruhhh_image_test.jsonl"]
    for record in logs["samples_ruhhh_image_test.jsonl"]:
        assert not {"target", "metrics", "gold_private"} & set(record) and record["generation"]


def _lm_eval_rows(examples: dict[int, str]) -> list[dict]:
    return [
        {
            "doc_id": n,
            "doc": {"meta": {"id": i}, "outputs": gold, "inputs": {"q": "?"}},
            "target": gold,
            "target_hash": f"h{gold}",
            "arguments": {"gen_args_0": {}},
            "resps": [[f" {gold}"]],
            "filtered_resps": [gold],
            "filter": "none",
            "metrics": ["exact_match"],
            "exact_match": 1.0,
        }
        for n, (i, gold) in enumerate(examples.items())
    ]


@pytest.mark.parametrize("task, private", [("ruhhh_image", True), ("ruclevr", False)])
def test_score_of_lm_eval_logs_packs_them_gold_free_for_a_private_split(tmp_path, task, private):
    from mera_multi_hf import load_task

    test = load_task(task, source="sample", split="test")
    rows = _lm_eval_rows({m["id"]: o for m, o in zip(test["meta"], test["outputs"])})
    logs = tmp_path / "lm_eval"
    logs.mkdir()
    name = f"samples_{task}_2026-01-01T00-00-00.jsonl"
    (logs / name).write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    out = tmp_path / "scored"
    assert (
        main(
            [
                "score",
                "--task",
                task,
                "--data",
                "sample",
                "--predictions",
                str(logs),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    names, packed = _zip(out / "submission.zip")
    assert names[1:] == ["logs_public.zip"] and list(packed) == [name]
    for given, record in zip(rows, packed[name]):
        assert record["resps"] == given["resps"] and record["doc_id"] == given["doc_id"]
        gold_keys = {"target", "target_hash", "exact_match", "metrics"} & set(record)
        assert (gold_keys == set(), "outputs" in record["doc"]) == (private, not private)


def test_an_identical_duplicate_id_stops_score(tmp_path, capsys):
    preds = tmp_path / "p.jsonl"
    rows = [{"id": i, "prediction": "A"} for i in range(1, 27)] + [{"id": 3, "prediction": "A"}]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(preds),
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )
    assert "ids answered twice with the same answer: 3" in _one_error(capsys)
    assert not (tmp_path / "s").exists()


def test_lm_eval_doc_id_is_a_position_not_an_id(tmp_path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"doc_id": 1, "prediction": "A"}) + "\n", encoding="utf-8")
    with pytest.raises(MeraError) as info:
        read_predictions(plain, "ruhhh_image", "test")
    message = str(info.value).split(": ", 1)[1]  # (the file name holds the test's name)
    assert "doc_id" not in message and '"id" or "meta.id"' in message
    harness = tmp_path / "samples_ruhhh_image_2026-01-01T00-00-00.jsonl"
    line = {"doc_id": 1, "doc": {"meta": {}}, "resps": [["A"]], "filtered_resps": ["A"]}
    harness.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(MeraError, match="0-based position in the split"):
        read_predictions(harness, "ruhhh_image", "test")
    # where the harness's order is known, the position names the example
    assert read_predictions(
        harness, "ruhhh_image", "test", {(DOC_POSITION, 0): 7, (DOC_POSITION, 1): 9}
    ) == {9: "A"}
