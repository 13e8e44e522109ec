"""`mera-multi score`: predictions from elsewhere -> reports and the submission ZIP."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from mera_multi_hf import load_task
from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.reporting.submission import read_submission, submission_zip
from mera_multi_hf.tasks.table import get_task


@pytest.fixture
def sample_test(raw_sample):
    return load_task("ruhhh_image", source=raw_sample, split="test")


def _golds(ds):
    return {m["id"]: o for m, o in zip(ds["meta"], ds["outputs"])}


def _jsonl(path, rows):
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def _flip(letter):
    return "B" if letter == "A" else "A"


def test_score_plain_jsonl_end_to_end(raw_sample, sample_test, tmp_path, capsys):
    golds = _golds(sample_test)
    groups = {m["id"]: m["group_id"] for m in sample_test["meta"]}
    answers = dict(golds)
    wrong_id = next(i for i in answers if sum(g == groups[i] for g in groups.values()) == 3)
    answers[wrong_id] = _flip(golds[wrong_id])
    verbose_id = next(i for i in answers if i != wrong_id and groups[i] != groups[wrong_id])
    answers[verbose_id] = f"Ответ: {golds[verbose_id]}."
    preds = _jsonl(
        tmp_path / "preds.jsonl", [{"id": i, "prediction": p} for i, p in answers.items()]
    )
    out = tmp_path / "results"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(preds),
                "--data",
                str(raw_sample),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    n = len(golds)
    # the leaderboard ranks ruHHH by group EM and group JS: plain EM is supplementary;
    # the human baselines of the task card stand beside their metrics
    # (printed as evaluate prints it: the short table, not results.md)
    assert re.search(
        rf"\nruhhh_image +test +{n} +Exact match \(supplementary\) +"
        rf"{(n - 2) / n:.4f} ± 0\.\d{{4}} +0\.9529\n",
        printed,
    )
    assert "| ruhhh_image |" not in printed and "## " not in printed

    doc = json.loads((out / "results.json").read_text())
    result = doc["tasks"]["ruhhh_image"]
    n_groups = len(set(groups.values()))
    assert result["n_groups"] == n_groups and 1 < n_groups < n
    assert result["metrics"]["exact_match"] == pytest.approx((n - 2) / n)
    assert result["metrics"]["group_exact_match"] == pytest.approx((n_groups - 2) / n_groups)
    md = (out / "results.md").read_text(encoding="utf-8")
    assert re.search(
        rf"\| Group exact match \| {(n_groups - 2) / n_groups:.4f} ± 0\.\d{{4}} "
        r"\| 0\.8930 \|",
        md,
    )
    # task score: the leaderboard metrics computed (no judge: group EM alone), said so
    assert result["task_score"] == pytest.approx((n_groups - 2) / n_groups)
    assert result["task_score_metrics"] == ["group_exact_match"]
    assert result["task_score_partial"] is True
    assert doc["summary"]["partial_task_scores"] == ["ruhhh_image"]
    assert (
        "covers only part of the leaderboard metrics (without Group judge score: "
        "see the judge note below)"
    ) in md
    # the verbose answer counts only after extraction, reported apart from the official EM
    assert result["unofficial"]["exact_match_extracted"] == pytest.approx((n - 1) / n)
    assert result["judge_not_computed"] == ["judge_score", "group_judge_score"]
    assert result["metric_modes"] == {"exact_match": "mera", "filters": []}
    category = next(m["categories"]["category"] for m in sample_test["meta"] if m["id"] == wrong_id)
    cat_row = result["breakdown"]["category"][category]
    assert cat_row["exact_match"] < 1 and cat_row["group_exact_match"] < 1
    assert set(result["breakdown"]["category"]) == {
        "empathetic",
        "etiquette",
        "harmless",
        "helpful",
        "honest",
        "open",
    }
    assert sum(r["n_examples"] for r in result["breakdown"]["subcategory"].values()) == n
    run = doc["run"]
    assert run["versions"]["datasets"] and run["predictions_sha256"][str(preds)]
    assert doc["summary"]["official_total"]["n_tasks"] == 1
    assert not (out / "model-index.yaml").exists()  # a local folder is not the official split

    sub = read_submission(out / "submission.zip")
    assert set(sub) == {"ruHHH_Image"} and sub["ruHHH_Image"] == answers
    with zipfile.ZipFile(out / "submission.zip") as zf:
        payload = json.loads(zf.read("ruHHH_Image.json"))
    first = min(answers)
    assert payload["data"]["test"][0] == {"outputs": answers[first], "meta": {"id": first}}


def test_score_reads_lm_eval_sample_logs(raw_sample, sample_test, tmp_path):
    golds = _golds(sample_test)
    logs = tmp_path / "lm_eval_out"
    logs.mkdir()
    rows = [
        {
            "doc_id": n,
            "doc": {"meta": {"id": i}},
            "target": g,
            "resps": [[f"  {g}"]],
            "filtered_resps": [g],
        }
        for n, (i, g) in enumerate(golds.items())
    ]
    _jsonl(logs / "samples_ruhhh_image_2026-01-01T00-00-00.jsonl", rows)
    out = tmp_path / "r"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(logs),
                "--data",
                str(raw_sample),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert result["metrics"]["exact_match"] == 1.0
    assert result["metrics"]["group_exact_match"] == 1.0
    # a log of another task is refused: lm-eval names the task in the file name
    other = tmp_path / "other"
    other.mkdir()
    _jsonl(other / "samples_rucommonvqa_2026-01-01T00-00-00.jsonl", rows)
    with pytest.raises(MeraError, match="rucommonvqa"):
        from mera_multi_hf.pipeline.score import score_predictions

        score_predictions("ruhhh_image", other, tmp_path / "r2", data=raw_sample)


def test_private_split_is_not_scored_but_packaged(raw_sample, tmp_path, capsys):
    doc = json.loads((raw_sample / "test.json").read_text())
    doc["access"] = "private"
    for record in doc["data"]:
        record["outputs"] = ""
    (raw_sample / "test.json").write_text(json.dumps(doc, ensure_ascii=False))
    ids = [r["meta"]["id"] for r in doc["data"]]
    preds = _jsonl(tmp_path / "p.jsonl", [{"id": i, "prediction": "A"} for i in ids])
    out = tmp_path / "r"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(preds),
                "--data",
                str(raw_sample),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "gold answers are hidden" in capsys.readouterr().out
    result = json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert result["scorable"] is False and result["metrics"] == {}
    assert len(read_submission(out / "submission.zip")["ruHHH_Image"]) == len(ids)


def test_score_user_mistakes_are_one_line(raw_sample, sample_test, tmp_path, capsys):
    ids = list(_golds(sample_test))
    cases = {
        "missing": (
            [{"id": i, "prediction": "A"} for i in ids[:-2]],
            f"no prediction for 2 of {len(ids)}",
        ),
        "extra": (
            [{"id": i, "prediction": "A"} for i in ids + [9999]],
            "ids not in ruhhh_image/test: 9999",
        ),
        "conflict": (
            [{"id": i, "prediction": "A"} for i in ids] + [{"id": ids[0], "prediction": "B"}],
            f"answered twice with different answers: {ids[0]}",
        ),
        "no_answer": ([{"id": 1}], "id=1: no answer text"),
    }
    for name, (rows, message) in cases.items():
        preds = _jsonl(tmp_path / f"{name}.jsonl", rows)
        code = main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(preds),
                "--data",
                str(raw_sample),
                "--out",
                str(tmp_path / name),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err, (name, err)
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prediction": "A"}\n{oops\n')
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(tmp_path / "bad.jsonl"),
                "--data",
                str(raw_sample),
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "bad.jsonl:2: malformed JSON" in capsys.readouterr().err


def test_submission_checks_ids(tmp_path):
    with pytest.raises(MeraError) as info:
        submission_zip([(get_task("ruhhh_image"), [(1, "A"), (1, "B"), (5, "A")], [1, 2, 3])])
    message = str(info.value)
    assert "duplicate answers for ids 1" in message
    assert "no answer for test ids 2, 3" in message
    assert "answers for ids not in the test split 5" in message
    path = tmp_path / "s.zip"
    path.write_bytes(
        submission_zip(
            [
                (get_task("ruhhh_image"), {2: "B", 1: "A"}, None),
                (get_task("ruslun"), {7: '{"intent": "x"}'}, None),
            ]
        )
    )
    assert read_submission(path) == {
        "ruHHH_Image": {1: "A", 2: "B"},
        "ruSLUn": {7: '{"intent": "x"}'},
    }


def test_scoring_a_runner_sample_log_reproduces_the_run(tmp_path):
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    run = run_evaluation(
        tasks="ruhhh_image",
        data="sample",
        output_dir=tmp_path / "run",
        batch_size=4,
        no_progress=True,
    )
    log = tmp_path / "run" / "samples_ruhhh_image_test.jsonl"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(log),
                "--data",
                "sample",
                "--out",
                str(tmp_path / "rescored"),
            ]
        )
        == 0
    )
    rescored = json.loads((tmp_path / "rescored" / "results.json").read_text())
    ran = json.loads((tmp_path / "run" / "results.json").read_text())
    assert rescored["tasks"]["ruhhh_image"]["metrics"] == ran["tasks"]["ruhhh_image"]["metrics"]
    assert run["summary"]["overall"] == rescored["summary"]["overall"]
    assert read_submission(tmp_path / "rescored" / "submission.zip") == read_submission(
        tmp_path / "run" / "submission.zip"
    )
    # one record schema: what both commands record reads the same; each adds its own
    same = (
        "tasks",
        "split",
        "n_examples",
        "dataset_source",
        "official_test_split",
        "dataset_fingerprint",
        "metric_modes",
        "judge",
        "bootstrap",
    )
    assert {k: rescored["run"][k] for k in same} == {k: ran["run"][k] for k in same}
    assert (ran["run"]["mode"], rescored["run"]["mode"]) == ("evaluate", "score")
    common = set(ran["run"]) & set(rescored["run"])
    assert common >= {
        "run_id",
        "model",
        "versions",
        "command",
        "preflight",
        "started_at",
        "duration_s",
        *same,
    }
    # ... score: the predictions, and the run folder whose manifest gave the provenance
    assert set(rescored["run"]) - common == {"predictions", "predictions_sha256", "generated_in"}
    protocol = ("revision", "backend", "dtype", "backend_options", "generation", "seed")
    assert {k: rescored["run"][k] for k in protocol} == {k: ran["run"][k] for k in protocol}
    # the private split's gold: in the run's sample file and results.json, the score's results
    assert rescored["run"]["gold_private"]["files"] == [
        "results.json",
        "results.html",
        "results_media/",
    ]
    assert ran["run"]["gold_private"]["files"] == [
        "samples_ruhhh_image_test.jsonl",
        "results.json",
        "results.html",
        "results_media/",
    ]


# An official rutie_vision_gen log of the bundled ruTiE-Image sample: process_docs left
# meta.id null, so a line names its example by (dialog_id, question_id). The official
# packer's file for it, by hand: id = question_id + 500 * dialog_id + 11.
#   dialog, question, filtered answer -> packer's id
RUTIE_LOG = [
    (0, 0, "B"),
    (0, 1, "A"),
    (0, 2, "C"),
    (1, 0, "-1"),
    (1, 1, "B"),
    (1, 2, "D"),
    (2, 0, "C"),
    (2, 1, "B"),
    (2, 2, "A"),
]
PACKER_IDS = [11, 12, 13, 511, 512, 513, 1011, 1012, 1013]


def test_score_reads_official_rutie_logs_with_null_ids(tmp_path):
    logs = tmp_path / "harness"
    logs.mkdir()
    rows = [
        {
            "doc_id": n,
            "doc": {"meta": {"id": None, "dialog_id": d, "question_id": q}},
            "target": f"RUTIE_TARGET_{q}",
            "resps": [[f" {a}"]],
            "filtered_resps": [a],
        }
        for n, (d, q, a) in enumerate(RUTIE_LOG)
    ]
    _jsonl(logs / "samples_rutie_vision_gen_2026-01-01T00-00-00.jsonl", rows)
    out = tmp_path / "r"
    assert (
        main(
            [
                "score",
                "--task",
                "rutie_image",
                "--predictions",
                str(logs),
                "--data",
                "sample",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with zipfile.ZipFile(out / "submission.zip") as zf:
        payload = json.loads(zf.read("ruTiE_Image.json"))
    packer = {
        "data": {
            "test": [
                {"outputs": a, "meta": {"id": i}} for i, (_, _, a) in zip(PACKER_IDS, RUTIE_LOG)
            ]
        }
    }
    assert payload == packer
    # scored against the sample's golds at the example each position names (ids 1.., 501..)
    result = json.loads((out / "results.json").read_text())["tasks"]["rutie_image"]
    golds = {1: "Б", 2: "A", 3: "C", 501: "A", 502: "Б", 503: "D", 1001: "В", 1002: "B", 1003: "A"}
    hits = sum(
        a == golds[i] for i, (_, _, a) in zip([1, 2, 3, 501, 502, 503, 1001, 1002, 1003], RUTIE_LOG)
    )
    assert result["metrics"]["exact_match"] == pytest.approx(hits / 9)


def test_evaluate_takes_the_scoring_options_of_score(tmp_path):
    """`evaluate` and `score` share ScoringOptions: --no-submission works for both."""
    from mera_multi_hf.cli.evaluate import options_parser
    from mera_multi_hf.cli.score import ScoreConfig
    from mera_multi_hf.generation import RunConfig
    from mera_multi_hf.pipeline.evaluate import run_evaluation
    from mera_multi_hf.scoring.options import ScoringOptions

    assert issubclass(RunConfig, ScoringOptions) and issubclass(ScoreConfig, ScoringOptions)
    args = options_parser().parse_args(["--no-submission", "--em-mode", "strict"])
    assert args.no_submission is True and args.em_mode == "strict"
    run = run_evaluation(
        tasks="ruhhh_image",
        data="sample",
        output_dir=tmp_path / "run",
        limit=3,
        no_progress=True,
        no_submission=True,
        em_mode="strict",
    )
    assert not (tmp_path / "run" / "submission.zip").exists()
    assert run["tasks"][0]["metric_modes"]["exact_match"] == "strict"
    # the sample file's per-example scores are the ones scored (with the same EM mode)
    lines = (tmp_path / "run" / "samples_ruhhh_image_test.jsonl").read_text().splitlines()
    ems = [json.loads(line)["metrics"]["exact_match"] for line in lines]
    assert len(ems) == 3 and sum(ems) / 3 == pytest.approx(
        run["tasks"][0]["metrics"]["exact_match"]
    )
