"""Words that help: a typo gets a "did you mean" in one line (never the usage, never an
option's value), each kind of --model and --data is named by what it is, and every
command's help says what it writes, with its defaults written one way."""

from __future__ import annotations

import argparse
import re

import pytest
from test_flag_names import COMMANDS

from mera_multi_hf.cli.main import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "usage:" not in err and "Traceback" not in err, err
    return err


def test_a_task_typo_gets_did_you_mean_and_the_other_names(capsys):
    assert main(["evaluate", "--tasks", "ruhh_image", "--no-progress"]) == 2
    line = _one_line(capsys)
    assert "did you mean ruhhh_image?" in line
    assert "a modality (image, audio, video), or all" in line
    assert main(["score", "--task", "ruclevrr", "--predictions", "p", "--out", "o"]) == 2
    assert "did you mean ruclevr?" in _one_line(capsys)


@pytest.mark.parametrize(
    "argv, hint",
    [
        (["evaluate", "--taks", "ruhhh_image"], "did you mean --tasks?"),
        (
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                "p",
                "--out",
                "o",
                "--judge-api",
                "sk-secret-value-123",
            ],
            "did you mean --judge-api-key?",
        ),
        (
            ["build", "ruhhh_image", "--raw", "sample", "--out", "o", "--max-shard", "1GB"],
            "did you mean --max-shard-size?",
        ),
    ],
)
def test_an_unknown_option_is_one_line_pointing_at_the_right_one(argv, hint, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    line = _one_line(capsys)
    assert hint in line and "unrecognized arguments" in line
    assert argv[-1] not in line.split("unrecognized arguments:")[1]  # no value echoed


@pytest.mark.parametrize("flag", ["--model", "--data"])
def test_each_kind_of_source_is_named_by_what_it_is(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "weights.bin").write_bytes(b"x")
    said = {}
    for kind, value in (
        ("missing", "models/none"),
        ("missing", str(tmp_path / "no" / "x")),
        ("file", "weights.bin"),
        ("hub", "someone/no-such-thing"),
    ):
        assert (
            main(["evaluate", flag, value, "--output-dir", str(tmp_path / "o"), "--no-progress"])
            == 2
        )
        said.setdefault(kind, []).append(_one_line(capsys))
    assert all(
        "local path that does not exist" in x and "Hub" not in x.split("exist")[0]
        for x in said["missing"]
    ), said
    assert all("is a file" in x for x in said["file"]), said
    assert all("as a Hub id it is out of reach" in x for x in said["hub"]), said


def test_every_command_says_what_it_writes():
    silent = [
        name
        for name, parser in COMMANDS.items()
        if name and not re.search(r"\b[Ww]rites?\b", parser.description or "")
    ]
    assert not silent, silent
    assert "compare.html" in COMMANDS["compare"].format_help()
    assert "accelerate launch --multi_gpu --num_processes" in COMMANDS["evaluate"].format_help()


def test_defaults_are_written_one_way():
    other = []
    for name, parser in COMMANDS.items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS):
                continue
            text = formatter._get_help_string(action)
            if re.search(r"(?<!\()default\b|\(default\b(?!: )", text, re.I):
                other.append(f"{name} {action.option_strings}: {text}")
    assert not other, other


@pytest.mark.parametrize("action", ["export", "push"])
def test_metrics_subcommands_have_their_own_help(action, capsys):
    with pytest.raises(SystemExit):
        main(["metrics", action, "--help"])
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: mera-multi metrics {action} ")
    assert ("--out" in shown) == (action == "export") and ("--token" in shown) == (action == "push")
