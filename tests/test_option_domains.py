"""Every value has a domain, checked in one place: each option's field declares it
(``opt(low=..., high=..., path=True, url=True, choices=...)``), and the parser and the
Python entry points check through ``core.domains.check_options`` in :mod:`mera_multi_hf.core.arguments`.

A walk over every command's options (and the backends' options dataclasses) fails on a
number or path field without a declared domain; a hypothesis test feeds NaN, infinities,
negatives, zero, huge and empty values to every option of every command, in-process, and
asserts one line naming the option, exit 2, no traceback and nothing written."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_flag_names import COMMANDS

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.arguments import (
    FIELD_TAG,
    Parser,
    add_dataclass_options,
    check_options,
    opt,
)
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.backends.hf_options import HFOptions
from mera_multi_hf.generation.backends.openai_options import OpenAIOptions

# a text field that names a file or folder (its help says so, or its name does)
PATH_WORDS = re.compile(r"\b(folders?|files?|path)\b", re.I)
PATH_NAMES = {"out", "output_dir", "data", "raw", "predictions", "dir", "run_dir", "runs"}
# a Hub repository to create; `models --path`: a family name; `score --model-name`: a
# name to show
NOT_PATHS = {"push", "path", "model_name"}


def _kind(f: dataclasses.Field) -> str | None:
    """'int', 'float' or 'str' from the field's annotation (a string under
    `from __future__ import annotations`), None for a flag."""
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return next((k for k in ("bool", "int", "float", "str") if re.search(rf"\b{k}\b", text)), None)


def _fields(parser) -> list[dataclasses.Field]:
    seen = {}
    for action in parser._actions:
        f = getattr(action, FIELD_TAG, None)
        if f is not None:
            seen.setdefault(id(f), f)
    return list(seen.values())


def undeclared(where: str, fields) -> list[str]:
    """The fields among ``fields`` that hold a number or a path and declare no domain."""
    missing = []
    for f in fields:
        domain, kind = f.metadata.get("domain", {}), _kind(f)
        if kind in ("int", "float") and not {"low", "above"} & set(domain):
            missing.append(f"{where} {f.name}: a number without a range (low=/above=)")
        if kind == "float" and "high" not in domain:
            missing.append(f"{where} {f.name}: a float without an upper bound (high=)")
        names_a_path = f.name in PATH_NAMES or PATH_WORDS.search(f.metadata.get("help", ""))
        if kind == "str" and names_a_path and f.name not in NOT_PATHS:
            if not domain.get("path") and not domain.get("url") and "choices" not in f.metadata:
                missing.append(f"{where} {f.name}: a path without path=True")
    return missing


def test_every_number_and_path_option_declares_its_domain():
    missing = [m for name, parser in COMMANDS.items() for m in undeclared(name, _fields(parser))]
    for cls in (HFOptions, OpenAIOptions):
        missing += undeclared(cls.__name__, dataclasses.fields(cls))
    assert not missing, missing
    assert sum(len(_fields(p)) for p in COMMANDS.values()) > 150


def test_the_walk_finds_a_planted_field_without_a_domain():
    @dataclasses.dataclass
    class Planted:
        count: int = opt(1, "how many")
        ratio: float = opt(0.5, "a share", low=0)
        out: str | None = opt(None, "the folder to write into")
        checked: int = opt(1, "a bounded one", low=1)

    parser = Parser(prog="planted")
    add_dataclass_options(parser, Planted)
    assert undeclared("planted", _fields(parser)) == [
        "planted count: a number without a range (low=/above=)",
        "planted ratio: a float without an upper bound (high=)",
        "planted out: a path without path=True",
    ]


def test_python_callers_are_checked_by_the_same_function():
    from mera_multi_hf.generation.config import RunConfig
    from mera_multi_hf.judge.train import train
    from mera_multi_hf.serving.options import ServerOptions

    with pytest.raises(MeraError, match=r"^--seed -1: give an integer from 0 to 4294967295$"):
        RunConfig(seed=-1)
    with pytest.raises(MeraError, match=r"^--port 70000: give an integer from 0 to 65535$"):
        ServerOptions(port=70000)
    with pytest.raises(MeraError, match=r"^--lr nan: give a finite number above 0"):
        train("d.jsonl", "base", "out", learning_rate=math.nan)
    with pytest.raises(MeraError, match=r"^--concurrency 0:"):
        OpenAIOptions(concurrency=0)
    with pytest.raises(MeraError, match=r"^--max-frames 0:"):
        HFOptions(max_frames=0)
    assert HFOptions(max_frames=None).max_frames == 8  # a Python caller's None: the default

    @dataclasses.dataclass
    class Named:
        folder: str = opt("x", "a folder", path=True)

    with pytest.raises(MeraError, match="is 300 bytes; a file or folder name is at most 255"):
        check_options(Named(folder="runs/" + "é" * 150))


def test_run_config_takes_the_backends_declarations():
    """One declaration per fact: RunConfig's backend fields are the backends' fields
    (default, help, domain), under the same type."""
    from typing import get_type_hints

    from mera_multi_hf.generation.config import RunConfig

    run = {f.name: f for f in dataclasses.fields(RunConfig)}
    taken = 0
    for cls in (HFOptions, OpenAIOptions):
        for f in dataclasses.fields(cls):
            if f.name in run and run[f.name].metadata.get("declared_in") is cls:
                taken += 1
                assert run[f.name].default == f.default
                assert dict(run[f.name].metadata, declared_in=None) == dict(
                    f.metadata, declared_in=None
                )
                assert get_type_hints(RunConfig)[f.name] in (
                    get_type_hints(cls)[f.name],
                    int,  # RunConfig's max_frames is never None
                    list[str] | None,  # RunConfig's stop strings: a list, as the CLI gives
                    str | None,  # one --base-url string (several joined by commas)
                ), f.name
    assert taken == 15


# ---- hostile values through the command line, in-process ----

# the arguments each command needs besides the option under test; every path is in the
# test's own empty folder, so that nothing there is an input and anything new is a write
BASE = {
    "evaluate": ["evaluate", "--output-dir", "{t}/o", "--no-progress"],
    "build": ["build", "ruhhh_image", "--raw", "sample", "--output-dir", "{t}/o"],
    "score": ["score", "--tasks", "ruhhh_image", "--predictions", "{t}/p", "--output-dir", "{t}/o"],
    "serve": ["serve", "--model", "{t}/no-model"],
    "judge serve": ["judge", "serve", "--model", "{t}/no-model"],
    "judge agreement": ["judge", "agreement", "--data", "{t}/d.jsonl", "--model", "{t}/m"],
    "judge train": [
        "judge",
        "train",
        "--data",
        "{t}/d",
        "--base",
        "{t}/b",
        "--output-dir",
        "{t}/o",
    ],
    "compare": ["compare", "{t}/a", "{t}/b", "--output-dir", "{t}/o"],
    "leaderboard": ["leaderboard", "{t}/a", "--output-dir", "{t}/o"],
    "view": ["view", "{t}/a"],
    "metrics export": ["metrics", "export", "--output-dir", "{t}/o"],
    "metrics push": ["metrics", "push", "--dir", "{t}/no-export"],
    "models": ["models"],
}
NUMBERS = ["nan", "inf", "-inf", "-1", "1e400", str(10**30), ""]


def _bad_values(f: dataclasses.Field) -> list[str]:
    """Values outside the field's domain: for a number, NaN, infinities, a negative, a
    huge one, an empty one (and zero where it is below the range); for a text, empty
    and blank ones, a name over 255 bytes for a path, a malformed URL."""
    kind, domain = _kind(f), f.metadata.get("domain", {})
    if kind in ("int", "float"):
        zero_out = domain.get("low", 0) > 0 or "above" in domain
        return NUMBERS + (["0"] if zero_out else [])
    if kind != "str":
        return []
    values = [""] + ([] if f.metadata.get("blank_ok") else ["  "])
    values += ["x" * 300] if domain.get("path") else []
    values += ["http://[::1", "ftp://host/v1"] if domain.get("url") else []
    return values + (["no-such-choice"] if isinstance(f.metadata.get("choices"), tuple) else [])


def _cases():
    cases = []
    for name in BASE:
        for action in COMMANDS[name]._actions:
            f = getattr(action, FIELD_TAG, None)
            if f is None or not action.option_strings or action.help == "==SUPPRESS==":
                continue
            cases += [(name, action.option_strings[0], value) for value in _bad_values(f)]
    return sorted(set(cases))


CASES = _cases()


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@settings(
    max_examples=250,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=st.sampled_from(CASES))
def test_a_value_outside_its_domain_is_one_line_exit_2_nothing_written(case):
    name, flag, value = case
    with tempfile.TemporaryDirectory() as t:
        argv = [a.format(t=t) for a in BASE[name]] + [flag, value]
        before, here = _tree(Path(t)), os.getcwd()
        err = io.StringIO()
        try:
            os.chdir(t)
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code = main(argv)
                except SystemExit as stop:
                    code = stop.code
        finally:
            os.chdir(here)
        lines = err.getvalue().strip().splitlines()
        assert code == 2, (argv, err.getvalue()[-2000:])
        assert len(lines) == 1 and "Traceback" not in lines[0], (argv, lines)
        assert lines[0].startswith("mera-multi"), lines
        names = {s for s in COMMANDS[name]._option_string_actions if s.startswith("--")}
        shown = {s for s in re.findall(r"--[a-z][\w-]*", lines[0])}
        assert flag in shown or shown & {
            s for s in names if COMMANDS[name]._option_string_actions[s].dest == _dest(name, flag)
        }, (argv, lines)
        assert _tree(Path(t)) == before, (argv, _tree(Path(t)))


def _dest(name: str, flag: str) -> str:
    return COMMANDS[name]._option_string_actions[flag].dest


def test_the_hostile_values_reach_every_option_of_every_command():
    covered = {(name, flag) for name, flag, _ in CASES}
    assert len(covered) > 100 and len(CASES) > 400
    for wanted in [
        ("evaluate", "--seed"),
        ("evaluate", "--timeout"),
        ("serve", "--port"),
        ("serve", "--memory-budget"),
        ("judge serve", "--timeout-keep-alive"),
        ("judge train", "--epochs"),
        ("judge agreement", "--window"),
        ("evaluate", "--base-url"),
    ]:
        assert wanted in covered, wanted


@pytest.mark.parametrize(
    "argv, line",
    [
        (["evaluate", "--seed", "-1"], "--seed -1: give an integer from 0 to 4294967295"),
        (["evaluate", "--timeout", "nan"], "--timeout nan: give a finite number above 0"),
        (["evaluate", "--data", "ruhhh_image="], "--data 'ruhhh_image=': give a source after"),
        (["evaluate", "--base-url", "http://[::1"], "--base-url: a malformed URL"),
        (["serve", "--port", "70000"], "--port 70000: give an integer from 0 to 65535"),
        (["serve", "--read-timeout", "nan"], "--read-timeout nan"),
        (["serve", "--max-body-bytes", "-1"], "--max-body-bytes -1"),
        (["serve", "--memory-budget", "-1"], "--memory-budget -1"),
        (["judge", "serve", "--model", "m", "--batch-size", "0"], "--batch-size 0"),
        (["judge", "serve", "--model", "m", "--timeout-keep-alive", "-1"], "--timeout-keep-alive"),
        (["judge", "agreement", "--data", "d", "--model", "m", "--window", "0"], "--window 0"),
        (["judge", "train", "--data", "d", "--base", "b", "--out", "o", "--epochs", "-1"], "-1"),
    ],
)
def test_the_cases_of_the_report_are_one_line(argv, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err and err.startswith("mera-multi: error: "), err
    assert list(tmp_path.iterdir()) == []


def test_judge_train_on_cuda_without_cuda_saves_nothing(tmp_path, monkeypatch, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: --device cuda is a real device here")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text(
        '{"prompt": "p", "gold": "a", "prediction": "a", "label": 1}\n'
    )
    argv = ["judge", "train", "--data", "d.jsonl", "--base", "b", "--output-dir", "o"]
    assert main([*argv, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--device cuda: this torch has no usable CUDA" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]
