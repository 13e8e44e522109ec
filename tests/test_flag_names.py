"""Every flag that a message, a help text or an example names exists: each
`mera-multi <command> ... --flag` in the package's strings, README.md and docs/, and each
bare `--flag` in the messages of a command's own modules, is checked against that
command's parser (a renamed option cannot leave a hint pointing at nothing)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from mera_multi_hf.cli.evaluate import options_parser
from mera_multi_hf.cli.main import build_parser
from mera_multi_hf.serving.chat_options import serve_parser

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "mera_multi_hf"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*[a-z0-9]")
# where an invocation ends: another command, a pipe, the end of a code span or sentence
END = re.compile(r"&&|\|\||[|;`\n]|\)|\"|'|\. ")
# a command module -> the commands whose messages it writes (their options, together)
MODULES = {
    "cli/score.py": ["score"],
    "cli/evaluate.py": ["evaluate"],
    "generation/config.py": ["evaluate"],
    "generation/run.py": ["evaluate"],
    "generation/resume.py": ["evaluate"],
    "pipeline/run_fields.py": ["evaluate"],
    "pipeline/score.py": ["score"],
    "generation/launch.py": ["evaluate"],
    # the whole command line's module: `tasks --help` names evaluate's and score's
    "cli/main.py": ["", "build", "tasks", "evaluate", "score"],
    "cli/view.py": ["view"],
    "reporting/compare.py": ["compare"],
    "pipeline/compare.py": ["compare"],
    "reporting/compare_markdown.py": ["compare"],
    "reporting/leaderboard.py": ["leaderboard"],
    "spaces/export.py": ["metrics export", "metrics push"],
    "cli/judge.py": ["judge serve", "judge agreement", "judge train"],
    "pipeline/preflight.py": ["evaluate", "score"],
    "generation/checks.py": ["evaluate"],
    "judge/checks.py": ["evaluate", "score"],
    "scoring/options.py": ["evaluate", "score", "build"],
    "demo/tiny_models/__init__.py": ["models"],
}
# other programs' command lines, whose flags are theirs
OTHERS = ("accelerate", "torchrun", "vllm", "uvicorn", "pip ", "python -m build")


def _commands() -> dict[str, argparse.ArgumentParser]:
    """'score', 'judge serve', ... -> the parser of that command."""
    found = {"": build_parser()}
    todo = [("", found[""])]
    while todo:
        name, parser = todo.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    found[f"{name} {sub}".strip()] = child
                    todo.append((f"{name} {sub}".strip(), child))
    found["evaluate"] = options_parser()  # these two commands' parsers are their own
    found["serve"] = found["serving.chat_server"] = serve_parser()
    return found


COMMANDS = _commands()


def _flags(*names: str) -> set[str]:
    return {s for n in names for a in COMMANDS[n]._actions for s in a.option_strings}


def _invocations(text: str):
    """(command, the flags its invocation names) for each `mera-multi CMD ...`,
    `-m mera_multi_hf CMD ...` and `python -m mera_multi_hf.serving.chat_server ...` in text."""
    pattern = r"(?:mera-multi|-m mera_multi_hf(?=\s))((?:\s+[a-z]+){0,2})|mera_multi_hf\.serving\.chat_server"
    for match in re.finditer(pattern, text):
        words = (match.group(1) or "").split()
        command = (
            "serving.chat_server"
            if match.group(1) is None
            else next(
                (" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in COMMANDS), None
            )
        )
        if command is None:
            continue
        rest = text[match.end() :]
        rest = rest[: m.start()] if (m := END.search(rest)) else rest
        yield command, FLAG.findall(rest)


def _strings(path: Path) -> list[str]:
    """The string constants of a module, f-strings joined (their fields left out)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            out.append(
                "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def _texts():
    """(where, text): every string of the package, README.md and docs/."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for text in _strings(path):
            yield path.relative_to(PACKAGE).as_posix(), text
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")


def test_every_flag_an_invocation_names_is_its_commands():
    wrong, seen = [], 0
    for where, text in _texts():
        for command, flags in _invocations(text):
            seen += len(flags)
            wrong += [
                f"{where}: mera-multi {command} {f}" for f in flags if f not in _flags(command)
            ]
    assert seen > 100 and not wrong, wrong


def test_every_flag_a_command_module_names_is_its_commands():
    wrong, seen = [], 0
    for module, commands in MODULES.items():
        known = _flags(*commands)
        for text in _strings(PACKAGE / module):
            if "mera-multi" in text or "mera_multi_hf" in text or any(o in text for o in OTHERS):
                continue  # an invocation: checked against its own command above
            flags = FLAG.findall(text)
            seen += len(flags)
            wrong += [
                f"{module}: {f} (not an option of {' / '.join(commands)})"
                for f in flags
                if f not in known
            ]
    assert seen > 50 and not wrong, wrong


def test_the_check_finds_a_flag_that_does_not_exist():
    found = dict(_invocations("run `mera-multi judge serve --model M --no-such-flag 1`"))
    assert found == {"judge serve": ["--model", "--no-such-flag"]}
    assert "--no-such-flag" not in _flags("judge serve") and "--model" in _flags("judge serve")
    assert dict(_invocations("python -m mera_multi_hf.serving.chat_server --port 1 | x --y")) == {
        "serving.chat_server": ["--port"]
    }


# ---- one vocabulary: --tasks and --output-dir everywhere, the old spellings as aliases ----

WRITES_A_FOLDER = [
    "evaluate",
    "build",
    "score",
    "judge train",
    "compare",
    "leaderboard",
    "metrics export",
]


def _action(command: str, flag: str):
    return COMMANDS[command]._option_string_actions.get(flag)


@pytest.mark.parametrize("command", WRITES_A_FOLDER)
def test_every_command_that_writes_a_folder_takes_output_dir(command):
    listed = _action(command, "--output-dir")
    assert listed is not None and listed.option_strings[0] == "--output-dir"
    for old in ("--out", "--output_path"):  # the old spelling, lm-eval's
        assert _action(command, old) is listed, (command, old)
    assert "--output_path" not in COMMANDS[command].format_help()  # accepted, not listed


@pytest.mark.parametrize("command", ["evaluate", "score"])
def test_every_command_that_takes_tasks_takes_tasks(command):
    assert _action(command, "--tasks") is _action(command, "--task") is not None


def test_the_old_spellings_set_the_same_field():
    from mera_multi_hf.cli.evaluate import options_parser

    parsed = options_parser().parse_args(["--out", "x", "--task", "ruclevr"])
    assert (parsed.output_dir, parsed.tasks) == ("x", "ruclevr")
    old = ["score", "--task", "ruclevr", "--predictions", "p", "--out", "o"]
    new = ["score", "--tasks", "ruclevr", "--predictions", "p", "--output_path", "o"]
    assert vars(COMMANDS[""].parse_args(old)) == vars(COMMANDS[""].parse_args(new))
    from mera_multi_hf.cli.score import ScoreConfig  # Python callers keep their keywords

    assert ScoreConfig(task="ruclevr", predictions="p", out="o").out == "o"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["evaluate", "--apply_chat_template"], "--prompt-mode chat"),
        (["evaluate", "--write_out"], "the sample log"),
        (["score", "--log_samples"], "the sample log"),
        (["evaluate", "--model_args", "pretrained=x"], "--model, --revision"),
        (["evaluate", "--limit", "0.1"], "fraction of a split"),
        (["evalute"], "did you mean evaluate?"),
        (["judge", "trian"], "did you mean train?"),
    ],
)
def test_lm_eval_habits_and_typed_commands_get_one_line(argv, words, capsys):
    from mera_multi_hf.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and words in err, err
    assert "--timeout" not in err


def test_view_says_what_its_own_overwrite_does():
    text = " ".join(COMMANDS["view"].format_help().split())
    assert (
        "results.html" in text.split("--overwrite")[-1]
        and "evaluate" not in text.split("--overwrite")[-1]
    )
