"""Mistakes that used to end in a traceback or a silently wrong run, each now one line:
an argument that is not UTF-8, `judge agreement --out <folder>`, `judge train` on a full
disk, a text classifier as --model, --max-new-tokens beyond the model's context."""

from __future__ import annotations

import json
import subprocess

import pytest
from tiny_judge import build_tiny_judge

from mera_multi_hf.cli.main import main

NOT_UTF8 = "out\udcff"  # what Python makes of the file name b"out\xff"


def _one_line(capsys, *words, bars: bool = False) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if bars:  # progress bars of training come first (tqdm redraws with \r)
        err = err.rsplit("\n", 2)[-2] + "\n"
    assert err.startswith("mera-multi: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(w in err for w in words), err
    return err


@pytest.fixture(scope="module")
def judge_dir(tmp_path_factory):
    return build_tiny_judge(tmp_path_factory.mktemp("judge") / "judge")


@pytest.fixture
def labelled(tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": f"Вопрос {i}?",
                    "gold": "да",
                    "prediction": "да" if i % 2 else "нет",
                    "label": i % 2,
                },
                ensure_ascii=False,
            )
            + "\n"
            for i in range(8)
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--no-progress", "--limit", "1", "--output-dir"],
        ["build", "ruhhh_image", "--raw", "sample", "--out"],
        ["score", "--task", "ruhhh_image", "--predictions", "p.jsonl", "--out"],
        ["metrics", "export", "--out"],
    ],
)
def test_a_folder_name_that_is_not_utf8_is_refused_before_any_work(
    args, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(args + [NOT_UTF8]) == 2
    _one_line(capsys, args[-1], "out\\xff", "not UTF-8")
    assert list(tmp_path.iterdir()) == []  # not even a folder holding only a lock


def test_judge_agreement_out_a_folder_is_refused_before_the_judge_runs(
    judge_dir, labelled, tmp_path, capsys
):
    folder = tmp_path / "reports"
    folder.mkdir()
    assert (
        main(
            [
                "judge",
                "agreement",
                "--data",
                str(labelled),
                "--model",
                str(judge_dir),
                "--device",
                "cpu",
                "--out",
                str(folder),
            ]
        )
        == 2
    )
    _one_line(capsys, f"--out {folder} is a folder", "agreement.json")
    assert list(folder.iterdir()) == []


def test_judge_train_on_a_full_disk_is_one_line(judge_dir, labelled, tmp_path, capsys, monkeypatch):
    """A disk with room for the marker but not for the weights: safetensors fails with its
    own SafetensorError, which used to escape as a traceback."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root and mount)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    try:
        code = main(
            [
                "judge",
                "train",
                "--data",
                str(labelled),
                "--base",
                str(judge_dir),
                "--device",
                "cpu",
                "--batch-size",
                "4",
                "--out",
                str(mount / "judge"),
            ]
        )
        assert code == 2
        _one_line(capsys, "cannot write the trained judge", "No space left on device", bars=True)
        assert not (mount / "judge" / "config.json").exists()
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_text_classifier_as_model_is_one_line(judge_dir, tmp_path, capsys):
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(judge_dir),
                "--data",
                "sample",
                "--limit",
                "1",
                "--no-progress",
                "--output-dir",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    _one_line(capsys, "BertForSequenceClassification", "a text classifier")  # the preflight
    assert "MISSING" not in capsys.readouterr().out  # refused before its weights load


def test_max_new_tokens_beyond_the_context_is_refused(tmp_path, capsys):
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "1",
                "--no-progress",
                "--max-new-tokens",
                "100000000",
                "--output-dir",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    _one_line(capsys, "--max-new-tokens 100000000", "context of 2048 tokens")


def test_a_reader_that_stops_early_gets_no_traceback():
    """`mera-multi tasks | head -1`: the pipe closes before the table is written; the
    command ends quietly (no BrokenPipeError traceback, none at the interpreter's exit)."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "mera_multi_hf", "tasks"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child.stdout.close()  # the reader is gone before the first line is written
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0 and "Traceback" not in err and "Broken" not in err, err
