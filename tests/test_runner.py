"""The runner end to end on the bundled sample and the built-in tiny model: outputs,
sample log, resumption, settings clashes, private splits, CLI errors."""

from __future__ import annotations

import hashlib
import io
import json
import re
import string
import zipfile

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.generation.generate import make_batches
from mera_multi_hf.generation.samplelog import SampleLog
from mera_multi_hf.pipeline.evaluate import run_evaluation

NO_PUNCT = str.maketrans("", "", string.punctuation)


def _log_lines(out):
    lines = []
    for shard in sorted((out / "logs").glob("samples-rank*.jsonl")):
        lines += [json.loads(x) for x in shard.read_bytes().split(b"\n") if x.strip()]
    return lines


def _samples(out, split="test"):
    path = out / f"samples_ruhhh_image_{split}.jsonl"
    return list(map(json.loads, path.read_text().splitlines()))


def _answers(out, split="test"):
    return {r["id"]: r["generation"] for r in _samples(out, split)}


@pytest.fixture(scope="module")
def sample_ids():
    from mera_multi_hf import load_task

    return sorted(m["id"] for m in load_task("ruhhh_image", source="sample", split="test")["meta"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of the whole sample test split, batch size 1."""
    out = tmp_path_factory.mktemp("reference")
    result = run_evaluation(data=["sample"], batch_size=1, output_dir=str(out), no_progress=True)
    return out, result


def test_demo_cli_writes_everything(tmp_path, capsys, sample_ids):
    out = tmp_path / "demo"
    assert (
        main(
            ["evaluate", "--output-dir", str(out), "--no-progress", "--max-image-pixels", "5000000"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "Exact match" in printed and "random weights" in printed
    assert "no model-index.yaml" in printed  # the bundled sample is not the official test split
    for name in ("results.json", "results.md", "submission.zip", "samples_ruhhh_image_test.jsonl"):
        assert (out / name).is_file(), name
    assert not (out / "model-index.yaml").exists()

    run = json.loads((out / "results.json").read_text())["run"]
    assert run["model"] == "mera-multi-hf/tiny-random-llava" and re.fullmatch(
        r"[0-9a-f]{12}", run["revision"]
    )
    assert run["dtype"] == "float32" and run["seed"] == 1234 and run["split"] == "test"
    # the official harness's generation: greedy, 256 new tokens, stop at a blank line
    assert run["generation"] == {
        "do_sample": False,
        "num_beams": 1,
        "max_new_tokens": {"ruhhh_image": 256},
        "stop": {"ruhhh_image": ["\n\n"]},
        "user_choices": {},
        "dialogue_context": {},
    }
    assert set(run["versions"]) >= {
        "mera-multi-hf",
        "torch",
        "transformers",
        "datasets",
        "evaluate",
        "accelerate",
    }
    assert run["metric_modes"]["ruhhh_image"]["exact_match"] == "mera"
    assert run["official_test_split"] == {"ruhhh_image": False}
    assert run["dataset_source"]["ruhhh_image"] == "sample"
    assert run["limits"] == {**DEFAULT_LIMITS.as_record(), "max_image_pixels": 5_000_000}
    assert "evaluate" in run["command"] and "chat template" in run["prompt_source"]
    # results.json lists every file of its run with its sha256 (a reader can tell a stale one)
    assert {n for n in run["files"] if not n.startswith("results_media/")} == {
        "samples_ruhhh_image_test.jsonl",
        "results.md",
        "results.png",
        "results.html",
        "submission.zip",
    }
    assert any(n.startswith("results_media/") for n in run["files"])  # the page's media
    for name, digest in run["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert run["run_id"] in (out / "results.md").read_text()

    lines = _log_lines(out)
    assert sorted(r["id"] for r in lines) == sample_ids
    for record in lines:  # the log keeps generations, never gold answers or media bytes
        assert re.fullmatch(r"[0-9a-f]{64}", record["media_sha256"][0])
        assert "target" not in record and "<image>" in record["prompt"]
        assert "\n\n" not in record["generation"]  # cut at the first stop string
    text = (out / "logs" / "samples-rank0.jsonl").read_text()
    assert "base64" not in text and "PNG" not in text

    samples = _samples(out)
    for record in samples:
        official = record["generation"].lower().translate(NO_PUNCT) == record["target"].lower()
        assert record["target"] in ("A", "B")
        assert record["metrics"]["exact_match"] == float(official)
        assert set(record) >= {"extracted", "filtered", "time_s", "request_hash", "generation"}
    with zipfile.ZipFile(out / "submission.zip") as zf:
        rows = json.loads(zf.read("ruHHH_Image.json"))["data"]["test"]
        with zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip"))) as logs:
            assert logs.namelist() == ["samples_ruhhh_image_test.jsonl"]
    assert {r["meta"]["id"]: r["outputs"] for r in rows} == _answers(out)
    # the official EM in results.json is the mean of the per-sample EM
    result = json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert result["metrics"]["exact_match"] == pytest.approx(
        sum(r["metrics"]["exact_match"] for r in samples) / len(samples)
    )
    assert result["human_baseline"] == {"exact_match": 0.9529, "group_exact_match": 0.893}
    assert result["judge_not_computed"] == ["judge_score", "group_judge_score"]


def test_batch_size_does_not_change_answers(reference, tmp_path):
    out, result = reference
    again = run_evaluation(
        data=["sample"], batch_size=4, output_dir=str(tmp_path / "b4"), no_progress=True
    )
    assert _answers(tmp_path / "b4") == _answers(out)
    assert again["tasks"][0]["metrics"] == result["tasks"][0]["metrics"]
    assert len(set(_answers(out).values())) > 1


def test_resume_skips_logged_examples_and_gives_the_same_results(reference, tmp_path, sample_ids):
    out = tmp_path / "resume"
    options = dict(data=["sample"], output_dir=str(out), no_progress=True)
    first = run_evaluation(limit=10, batch_size=4, **options)
    assert first["counts"] == {"requested": 10, "resumed": 0, "generated": 10, "generated_here": 10}
    with zipfile.ZipFile(out / "submission.zip") as zf:  # a --limit run's ZIP ...
        assert len(json.loads(zf.read("ruHHH_Image.json"))["data"]["test"]) == 10
    # a torn last line, as a kill in the middle of a write leaves it
    with open(out / "logs" / "samples-rank0.jsonl", "a", encoding="utf-8") as f:
        f.write('{"task": "ruhhh_image", "split": "test", "id": 11, "prom')
    second = run_evaluation(batch_size=3, **options)
    n = len(sample_ids)
    assert second["counts"]["resumed"] == 10 and second["counts"]["generated"] == n - 10
    ids = [r["id"] for r in _log_lines(out) if "request_hash" in r]
    assert sorted(ids) == sample_ids  # every id exactly once, the torn line cut off
    assert _answers(out) == _answers(reference[0])
    assert second["tasks"][0]["metrics"] == reference[1]["tasks"][0]["metrics"]
    with zipfile.ZipFile(out / "submission.zip") as zf:  # ... is replaced by the full run's
        assert len(json.loads(zf.read("ruHHH_Image.json"))["data"]["test"]) == n
    third = run_evaluation(**options)
    assert third["counts"]["generated"] == 0


def test_changed_gold_answers_rebuild_every_derived_file(raw_sample, tmp_path):
    out = tmp_path / "gold"
    options = dict(data=[str(raw_sample)], output_dir=str(out), no_progress=True)
    run_evaluation(**options)
    doc = json.loads((raw_sample / "test.json").read_text(encoding="utf-8"))
    for record in doc["data"]:
        record["outputs"] = "B" if record["outputs"] == "A" else "A"
    (raw_sample / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(MeraError, match="other data"):  # never resumed on other data ...
        run_evaluation(**options)
    again = run_evaluation(overwrite=True, **options)
    assert again["counts"]["resumed"] == 0  # ... but answered afresh with --overwrite
    gold = {r["meta"]["id"]: r["outputs"] for r in doc["data"]}
    samples = _samples(out)
    assert {r["id"]: r["target"] for r in samples} == gold  # ... the targets are today's
    for record in samples:
        correct = record["generation"].lower().translate(NO_PUNCT) == gold[record["id"]].lower()
        assert record["metrics"]["exact_match"] == float(correct)
    result = json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert result["metrics"]["exact_match"] == pytest.approx(
        sum(r["metrics"]["exact_match"] for r in samples) / len(samples)
    )


def test_a_shots_run_removes_the_old_submission_of_its_own_folder(tmp_path):
    out = tmp_path / "stale"
    decoy = out / "my-notes.txt"
    options = dict(data=["sample"], output_dir=str(out), no_progress=True, limit=3)
    run_evaluation(**options)
    decoy.write_text("keep me")
    for overwrite in (False, True):  # someone else's file in the folder: never beside it
        with pytest.raises(MeraError, match="my-notes.txt .not written by this tool"):
            run_evaluation(split="shots", overwrite=overwrite, **options)
    assert decoy.read_text() == "keep me"
    decoy.unlink()
    run_evaluation(split="shots", **options)
    assert not (out / "submission.zip").exists()  # it belonged to the earlier run only
    files = json.loads((out / "results.json").read_text())["run"]["files"]
    assert "submission.zip" not in files and "samples_ruhhh_image_shots.jsonl" in files


def test_other_settings_in_the_output_dir_stop_the_run(tmp_path, capsys):
    out = tmp_path / "clash"
    args = ["evaluate", "--output-dir", str(out), "--limit", "3", "--no-progress"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args + ["--max-new-tokens", "5"]) == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "--overwrite" in err and "--output-dir" in err
    assert len(err.strip().splitlines()) == 1
    assert main(args + ["--max-new-tokens", "5", "--overwrite"]) == 0
    lines = _log_lines(out)
    assert len(lines) == 3 and len({r["request_hash"] for r in lines}) == 3
    generation = json.loads((out / "results.json").read_text())["run"]["generation"]
    assert generation["max_new_tokens"] == {"ruhhh_image": 5}
    assert generation["user_choices"] == {"max_new_tokens": 5}


def test_a_log_line_not_of_its_request_is_never_resumed(tmp_path, capsys):
    """A line that carries a request's hash but another prompt (edited, or written under
    other settings) stops the rerun: it is neither resumed nor silently replaced."""
    out = tmp_path / "edited"
    args = ["evaluate", "--output-dir", str(out), "--limit", "2", "--no-progress"]
    assert main(args) == 0
    shard = out / "logs" / "samples-rank0.jsonl"
    lines = [json.loads(x) for x in shard.read_text(encoding="utf-8").splitlines()]
    lines[1]["prompt"] += " (edited)"
    lines[1]["generation"] = "forged"
    shard.write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8"
    )
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "edited since" in err and len(err.strip().splitlines()) == 1
    assert "forged" not in (out / "samples_ruhhh_image_test.jsonl").read_text(encoding="utf-8")


def test_private_split_logs_and_submits_but_does_not_score(raw_sample, tmp_path, capsys):
    doc = json.loads((raw_sample / "test.json").read_text(encoding="utf-8"))
    doc["access"] = "private"
    for record in doc["data"]:
        record["outputs"] = ""
    (raw_sample / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "private"
    assert (
        main(
            [
                "evaluate",
                "--data",
                str(raw_sample),
                "--output-dir",
                str(out),
                "--limit",
                "5",
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "cannot score" in printed and "submission.zip" in printed
    result = json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert result["scorable"] is False and result["metrics"] == {}
    assert len(_answers(out)) == 5
    assert all(r["metrics"] == {} and r["target"] is None for r in _samples(out))
    with zipfile.ZipFile(out / "submission.zip") as zf:
        assert len(json.loads(zf.read("ruHHH_Image.json"))["data"]["test"]) == 5
    # the shots split of the same folder has answers: it scores
    assert (
        main(
            [
                "evaluate",
                "--data",
                str(raw_sample),
                "--split",
                "shots",
                "--output-dir",
                str(tmp_path / "shots"),
                "--no-progress",
            ]
        )
        == 0
    )
    shots = json.loads((tmp_path / "shots" / "results.json").read_text())["tasks"]["ruhhh_image"]
    assert shots["scorable"] is True and shots["n_examples"] == len(doc_shots(raw_sample))
    assert not (tmp_path / "shots" / "submission.zip").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tasks", "ruhhh_imag"], "unknown task 'ruhhh_imag'"),
        (["--model", "./no/such/model"], "not a model folder"),
        (["--dialogue-context", "-1"], "--dialogue-context -1: give an integer of at least 0"),
        (["--data", "/no/such/folder"], "is not a folder"),
        (["--output-dir", "/dev/null"], "is a file"),
        (["--batch-size", "0"], "at least 1"),
    ],
)
def test_user_mistakes_print_one_line(args, message, tmp_path, capsys):
    code = main(["evaluate", "--output-dir", str(tmp_path / "x"), "--no-progress"] + args)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    for flag in (
        "--model",
        "--tasks",
        "--data",
        "--split",
        "--limit",
        "--batch-size",
        "--output-dir",
        "--max-new-tokens",
        "--dtype",
        "--device",
        "--max-pixels",
        "--trust-remote-code",
        "--seed",
        "--backend",
        "--base-url",
        "--api-key",
        "--concurrency",
        "--judge",
        "--judge-url",
        "--overwrite",
        "accelerate launch",
        "--stop",
        "--judge-tokenizer",
        "--revision",
        "--prompt-mode",
        "--timeout",
        "--max-retries",
        "--em-mode",
        "--no-progress",
    ):
        assert flag in text, flag


def test_batches_group_similar_lengths():
    from mera_multi_hf.generation.request import Request

    reqs = [Request("t", "test", i, "x" * n, [], 4) for i, n in enumerate([5, 50, 6, 49, 7, 48])]
    batches = make_batches(reqs, 3)
    assert [[r.id for r in b] for b in batches] == [[1, 3, 5], [4, 2, 0]]


def test_sample_log_reader_ignores_garbage(tmp_path):
    from mera_multi_hf.core.outputs import OutputFolder

    folder = OutputFolder(tmp_path / "run", kind="run").claim(["logs/samples-rank1.jsonl"])
    log = SampleLog(folder, rank=1)
    log.append([{"task": "t", "split": "test", "id": 1, "request_hash": "h", "generation": "A"}])
    log.close()
    with open(log.path, "a", encoding="utf-8") as f:
        f.write('not json\n{"task": "t"}\n{"task": "t", "split": "test", "id": 2,')
    assert list(SampleLog(folder).read()) == [("t", "test", 1)]
    log = SampleLog(folder, rank=1)
    log.append([{"task": "t", "split": "test", "id": 2, "request_hash": "h", "generation": "B"}])
    log.close()
    assert sorted(SampleLog(folder).read()) == [("t", "test", 1), ("t", "test", 2)]
    folder.close()
    unlisted = OutputFolder(tmp_path / "other", kind="run")
    (tmp_path / "other" / "logs").mkdir(parents=True)
    (tmp_path / "other" / "logs" / "samples-rank0.jsonl").write_bytes(log.path.read_bytes())
    assert not SampleLog(unlisted).read()  # a shard no marker lists is never read


def test_tiny_model_is_built_deterministically(tmp_path):
    from mera_multi_hf.demo.builtin_models import (
        build_tiny_model,
        tiny_model_path,
        tiny_model_revision,
    )

    assert tiny_model_revision(build_tiny_model(tmp_path / "again")) == tiny_model_revision(
        tiny_model_path()
    )
    assert "noise" in (tiny_model_path() / "README.md").read_text()


def test_python_entry_point_rejects_bad_input(tmp_path):
    with pytest.raises(MeraError, match="unknown backend"):
        run_evaluation(backend="vllm", output_dir=str(tmp_path))
    with pytest.raises(MeraError, match="needs --base-url"):
        run_evaluation(model="m", backend="openai", output_dir=str(tmp_path))


def test_modality_selection():
    from mera_multi_hf.generation.run import select_tasks

    keys = [t.key for t in select_tasks("image")]
    assert "ruhhh_image" in keys and "rutie_image" in keys and "ruenvaqa" not in keys
    assert [t.key for t in select_tasks("ruhhh_image,image")][0] == "ruhhh_image"
    with pytest.raises(MeraError, match="no task given"):
        select_tasks(",")


def doc_shots(raw_folder):
    return json.loads((raw_folder / "shots.json").read_text(encoding="utf-8"))["data"]


def test_a_run_of_an_audio_task_alone_names_the_audio_model(tmp_path, capsys):
    """The demo's audio task is answered by the built-in audio model: the run record,
    the console and the titles of results.md and results.html name that model, not the
    image model the run was configured with."""
    from mera_multi_hf.demo.builtin_models import TINY_AUDIO_MODEL_ID

    out = tmp_path / "audio"
    argv = ["evaluate", "--tasks", "ruenvaqa", "--limit", "2", "--max-new-tokens", "2"]
    assert main([*argv, "--output-dir", str(out), "--no-progress"]) == 0
    run = json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]
    assert run["model"] == TINY_AUDIO_MODEL_ID
    assert f"model: {TINY_AUDIO_MODEL_ID}" in capsys.readouterr().out
    title = f"MERA Multi results: {TINY_AUDIO_MODEL_ID}"
    assert (out / "results.md").read_text(encoding="utf-8").startswith(f"# {title}\n")
    assert f"<title>{title}</title>" in (out / "results.html").read_text(encoding="utf-8")
