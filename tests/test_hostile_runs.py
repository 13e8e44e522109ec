"""Hostile input to `score` and `evaluate`: prediction files, sample logs, output paths,
concurrent runs on a fresh cache. Every case ends in a one-line error or a valid result,
and nothing outside the declared output is touched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.pipeline.evaluate import run_evaluation
from mera_multi_hf.scoring.predictions import read_predictions

SAMPLE = bundled_sample()
TEST_IDS = sorted(
    r["meta"]["id"] for r in json.loads((SAMPLE / "test.json").read_text(encoding="utf-8"))["data"]
)
EXAMPLES = int(os.environ.get("MERA_HYPOTHESIS_EXAMPLES", "40"))


def _tree_hash(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def decoy(tmp_path):
    """A tree of someone's files beside the outputs: it must come out unchanged."""
    root = tmp_path / "decoy"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "thesis.txt").write_text("не трогать")
    (root / "results.json").write_text('{"mine": true}')
    (root / "submission.zip").write_bytes(b"not ours")
    before = _tree_hash(root)
    yield root
    assert _tree_hash(root) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
records = st.fixed_dictionaries(
    {},
    optional={
        "id": json_values | st.sampled_from(TEST_IDS),
        "prediction": json_values,
        "meta": json_values,
        "doc": json_values,
        "doc_id": json_values,
        "resps": json_values,
        "filtered_resps": json_values,
        "task": json_values,
        "split": json_values,
    },
)
lines = st.one_of(
    records.map(lambda r: json.dumps(r).encode()),
    st.binary(max_size=30),
    json_values.map(lambda v: json.dumps(v).encode()),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(lines, max_size=6))
def test_any_prediction_file_reads_or_fails_in_one_line(tmp_path, content):
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\n".join(content))
    try:
        answers = read_predictions(path, "ruhhh_image", "test")
    except MeraError as err:
        assert "\n" not in str(err) and str(path) in str(err)
        return
    assert all(isinstance(i, int) and isinstance(a, str) for i, a in answers.items())


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"id": 1, "prediction": "A"}\n\xff\xfe\n', "not UTF-8"),
        (b'{"id": 1, "meta": [1], "prediction": "A"}\n', "field meta"),
        (b'{"doc_id": 0, "doc": "x", "resps": [["A"]]}\n', "field doc"),
        (b'{"doc_id": 0, "doc": {"meta": 5}, "resps": [["A"]]}\n', "field doc.meta"),
        (b'{"id": true, "prediction": "A"}\n', "no integer example id"),
        (b'{"id": 1, "prediction": 5}\n', "no answer text"),
    ],
)
def test_score_bad_prediction_files(content, message, tmp_path, capsys, decoy):
    preds = tmp_path / "p.jsonl"
    preds.write_bytes(content)
    code = main(
        [
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(preds),
            "--data",
            "sample",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_output_paths_that_are_files_are_refused(tmp_path, capsys, decoy):
    target = decoy / "docs" / "thesis.txt"
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in TEST_IDS))
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(preds),
                "--data",
                "sample",
                "--out",
                str(target),
            ]
        )
        == 2
    )
    assert "is a file" in capsys.readouterr().err
    assert main(["evaluate", "--output-dir", str(target), "--no-progress"]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_run_never_touches_files_it_did_not_write(tmp_path, decoy):
    """A run into a folder of someone's files (named like outputs) and a score beside
    them: the decoy fixture checks every byte afterwards."""
    run_evaluation(data="sample", limit=3, output_dir=str(tmp_path / "run"), no_progress=True)
    out = decoy / "runs-here"
    run_evaluation(data="sample", limit=3, output_dir=str(out), no_progress=True)
    assert (out / "results.json").is_file()
    samples = tmp_path / "run" / "samples_ruhhh_image_test.jsonl"
    with pytest.raises(MeraError):  # 3 of 26 answered: refused, nothing written
        from mera_multi_hf.pipeline.score import score_predictions

        score_predictions("ruhhh_image", samples, tmp_path / "scored", data="sample")
    assert not (tmp_path / "scored").exists()
    import shutil

    shutil.rmtree(out)  # the run's own folder, made by this test, not part of the decoy


def test_garbled_sample_log_lines_are_generated_again(tmp_path):
    out = tmp_path / "run"
    options = dict(data="sample", limit=4, output_dir=str(out), no_progress=True)
    first = run_evaluation(**options)
    shard = out / "logs" / "samples-rank0.jsonl"
    records = [json.loads(x) for x in shard.read_text().splitlines()]
    records[0]["id"] = "one"  # a non-integer id
    del records[1]["generation"]  # a missing generation
    records[2]["generation"] = None
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    again = run_evaluation(**options)
    assert again["counts"]["resumed"] == 1 and again["counts"]["generated"] == 3
    assert again["tasks"][0]["metrics"] == first["tasks"][0]["metrics"]


def test_url_credentials_and_keys_are_never_written(tmp_path):
    from mera_multi_hf.core.masking import mask_secrets

    assert (
        mask_secrets(
            "--base-url http://ann:pa55@127.0.0.1:8000/v1 --api-key sk-1 --judge-api-key jk-2"
        )
        == "--base-url http://***@127.0.0.1:8000/v1 --api-key *** --judge-api-key ***"
    )
    assert mask_secrets("https://user@host/x") == "https://***@host/x"


def test_concurrent_runs_share_a_fresh_cache(tmp_path):
    """Several processes convert the same raw folder into an empty cache at once: one
    converts under a file lock, the others wait and read it."""
    env = dict(os.environ, MERA_MULTI_CACHE=str(tmp_path / "fresh-cache"))
    code = (
        "from mera_multi_hf import load_task; "
        "print(len(load_task('ruhhh_image', source='sample', split='test')))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [r[1][-500:] for r in results]
    assert {r[0].strip() for r in results} == {str(len(TEST_IDS))}


def test_files_of_the_same_name_not_written_here_are_never_replaced(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.md").write_text("my own notes")
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "2",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "results.md" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert (out / "results.md").read_text() == "my own notes"
    assert sorted(p.name for p in out.iterdir()) == ["results.md"]  # refused before any work
    # a forged marker grants nothing: the folder still holds someone else's files
    (out / "thesis.txt").write_text("keep")
    (out / ".mera-multi-outputs.json").write_text('["thesis.txt", "results.md"]')
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "2",
                "--output-dir",
                str(out),
                "--no-progress",
                "--split",
                "shots",
            ]
        )
        == 2
    )
    assert (out / "thesis.txt").read_text() == "keep"
    assert (out / "results.md").read_text() == "my own notes"
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "2",
                "--output-dir",
                str(out),
                "--no-progress",
                "--overwrite",
            ]
        )
        == 2
    )  # never replaced, whatever the flags
    assert (out / "results.md").read_text() == "my own notes"
    assert (out / "thesis.txt").read_text() == "keep"
