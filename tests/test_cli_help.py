"""Every command's help: every option explained with its default, in the README's
spelling, in the forms the parser accepts, generated from the command's dataclass; help
and `tasks` load no heavy library, nor does an openai run on a prepared dataset."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mera_multi_hf.cli.evaluate import options_parser
from mera_multi_hf.cli.main import TASK_COLUMNS, build_parser, main
from mera_multi_hf.core.arguments import Parser
from mera_multi_hf.serving.chat_options import serve_parser


def _parsers():
    """(name, parser) of every command and sub-command."""
    found = [
        ("mera-multi", build_parser()),
        ("evaluate", options_parser()),
        ("serving.chat_server", serve_parser()),
    ]
    todo = [found[0]]
    while todo:
        name, parser = todo.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    if sub_name != "evaluate":  # its options come from options_parser()
                        found.append((f"{name} {sub_name}", sub))
                        todo.append(found[-1])
    return found


PARSERS = _parsers()


@pytest.mark.parametrize("name,parser", PARSERS, ids=[n for n, _ in PARSERS])
def test_every_option_has_help_and_a_shown_default(name, parser):
    formatter = parser._get_formatter()
    for action in parser._actions:
        if (
            isinstance(
                action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
            )
            or action.help == argparse.SUPPRESS
        ):
            continue
        text = formatter._get_help_string(action) or ""
        assert action.help, f"{name} {action.option_strings or action.dest}: no help"
        if action.option_strings:
            assert "default" in text.lower() or "required" in text.lower(), (
                f"{name} {action.option_strings[0]}: the help shows no default: {text!r}"
            )
    usage = parser.format_help()
    for wrong in (
        "[OVERWRITE]",
        "--output_dir",
        "SOURCE [SOURCE ...]",
        "STOP [STOP ...]",
        "--no_progress",
        "[NO_PROGRESS]",
    ):
        assert wrong not in usage, f"{name}: {wrong}"


def test_evaluate_flags_take_both_spellings_and_repeat():
    parser = options_parser()
    args = parser.parse_args(
        [
            "--output_dir",
            "a",
            "--no-progress",
            "--data",
            "x=1",
            "--data",
            "y=2",
            "--base-url",
            "http://a/v1",
            "--base-url",
            "http://b/v1",
            "--max_new_tokens",
            "5",
        ]
    )
    assert args.output_dir == "a" and args.no_progress is True and args.overwrite is False
    assert args.data == ["x=1", "y=2"] and args.max_new_tokens == 5
    assert args.base_url == ["http://a/v1", "http://b/v1"]
    assert "64" in parser.format_help()  # the default concurrency is shown
    with pytest.raises(SystemExit):
        parser.parse_args(["--overwrite", "true"])  # a switch takes no value


def test_metrics_without_subcommand_is_one_clear_line(capsys):
    assert main(["metrics"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mera-multi: error: metrics:") and "export" in err
    assert len(err.splitlines()) == 1 and "action" not in err


def test_tasks_help_explains_every_column(capsys):
    with pytest.raises(SystemExit):
        main(["tasks", "--help"])
    shown = capsys.readouterr().out
    main(["tasks"])
    header = capsys.readouterr().out.splitlines()[0]
    for column in (
        "task",
        "class name",
        "modality",
        "test",
        "public",
        "answer",
        "metrics",
        "domains",
        "hub id",
    ):
        assert column in header and f"\n  {column} " in shown
    assert TASK_COLUMNS.splitlines()[0] in shown


HEAVY = ("torch", "transformers", "accelerate", "pandas", "datasets", "matplotlib")
PROBE = """
import json, sys
from mera_multi_hf.cli.main import main
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)))
"""
HELP_COMMANDS = (
    [["--help"], ["tasks"]]
    + [name.split()[1:] + ["--help"] for name, _ in PARSERS[3:]]
    + [["evaluate", "--help"]]
)


def _loaded(commands: list[list[str]], modules) -> list[str]:
    """Those of ``modules`` that running ``commands`` in one fresh interpreter imports."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(commands), json.dumps(list(modules))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_help_and_tasks_load_no_heavy_library():
    assert _loaded(HELP_COMMANDS, HEAVY) == []


def test_help_and_tasks_load_no_numpy():
    """numpy neither (a quick start-up): every command's --help and `tasks`; `serve --help`
    reads its options apart from the server module, without FastAPI or uvicorn."""
    assert ["serve", "--help"] in HELP_COMMANDS
    assert _loaded(HELP_COMMANDS, ["numpy", "fastapi", "uvicorn", "PIL"]) == []


def test_every_option_comes_from_a_dataclass_field():
    """A hand-written add_argument fails here: every option and argument of every command
    and sub-command is made by parsing.add_dataclass_options from a field of the command's
    dataclass, and names that field."""
    from dataclasses import MISSING

    from mera_multi_hf.core.arguments import FIELD_TAG
    from mera_multi_hf.demo.sample_data.__main__ import parser as sample_parser

    checked = 0
    for name, parser in PARSERS + [("sample_data", sample_parser())]:
        for action in parser._actions:
            if isinstance(
                action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
            ):
                continue
            field = getattr(action, FIELD_TAG, None)
            assert field is not None, (
                f"{name} {action.option_strings or action.dest}: not from a dataclass field"
            )
            assert field.name == action.dest and field.default is not MISSING
            checked += 1
    assert checked > 100
    hand_made = Parser()
    hand_made.add_argument("--by-hand")
    assert getattr(hand_made._actions[-1], FIELD_TAG, None) is None


def _options_of(argv):
    """The options object that `mera-multi ARGV` would hand to its command function."""
    args = build_parser().parse_args(argv)
    run_with, cls = args.func.func, args.func.args[0]
    return run_with(cls, lambda options: options, args)


def test_a_command_gets_the_dataclass_a_python_caller_builds():
    from mera_multi_hf.cli.main import BuildOptions
    from mera_multi_hf.judge.train import TrainOptions
    from mera_multi_hf.reporting.leaderboard import LeaderboardOptions
    from mera_multi_hf.spaces.export import ExportOptions

    assert _options_of(
        [
            "build",
            "ruhhh_image",
            "--raw",
            "sample",
            "--out",
            "o",
            "--max_image_pixels",
            "5",
            "--max-audio-seconds",
            "2.5",
        ]
    ) == BuildOptions(
        task="ruhhh_image", raw="sample", out="o", max_image_pixels=5, max_audio_seconds=2.5
    )
    assert _options_of(["leaderboard", "a", "b", "--overwrite"]) == LeaderboardOptions(
        runs=["a", "b"], overwrite=True
    )
    assert _options_of(
        ["metrics", "export", "--out", "o", "--metric", "slot_f1", "--metric", "exact_match"]
    ) == ExportOptions(out="o", metric=["slot_f1", "exact_match"])
    assert _options_of(
        ["judge", "train", "--data", "d", "--base", "b", "--output-dir", "o", "--lr", "0.5"]
    ) == TrainOptions("d", "b", "o", lr=0.5)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["metrics", "export", "--out", "o", "--metric", "nope"])


def test_a_fields_help_and_default_show_in_help():
    """What a field says (help, default, choices, metavar, positional, list) is what the
    generated option shows and takes."""
    from dataclasses import dataclass

    from mera_multi_hf.core.arguments import add_dataclass_options, opt

    @dataclass
    class Shared:
        """shared things"""

        speed: float = opt(2.5, "how fast")

    @dataclass
    class Options(Shared):
        target: str | None = opt(None, "what to hit", positional=True, metavar="TARGET")
        colour: str = opt("red", "paint", choices=("red", "blue"))
        max_hits: int | None = opt(None, "stop after N", metavar="N")
        tag: list[str] | None = opt(None, "a label (repeatable)")
        loud: bool = opt(False, "shout")

    parser = Parser(prog="demo")
    add_dataclass_options(parser, Options)
    shown = " ".join(parser.format_help().split())
    for text in (
        "what to hit",
        "paint (default: red)",
        "--max-hits N stop after N (default: none)",
        "shout (default: off)",
        "shared things: --speed SPEED how fast (default: 2.5)",
        "{red,blue}",
    ):
        assert text in shown, text
    assert "--max_hits" not in shown  # the underscore spelling is taken, never listed
    args = parser.parse_args(["x", "--max_hits", "3", "--tag", "a", "--tag", "b", "--loud"])
    assert Options(**vars(args)) == Options(target="x", max_hits=3, tag=["a", "b"], loud=True)
    assert Options(**vars(parser.parse_args(["x"]))) == Options(target="x")
    with pytest.raises(SystemExit):
        parser.parse_args(["x", "--colour", "green"])


class _Chat(BaseHTTPRequestHandler):
    """A chat server that answers "A" to everything."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):  # /v1/models, the run's preflight
        self._send({"object": "list", "data": []})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send({"choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}}]})


OPENAI_HEAVY = ("torch", "transformers", "accelerate", "pandas", "datasets")
RUN_PROBE = """
import atexit, sys
from mera_multi_hf.cli.main import main
atexit.register(lambda: print("HEAVY", sorted(m for m in %r if m in sys.modules)))
sys.exit(main(sys.argv[1:]))
""" % (OPENAI_HEAVY,)


def test_an_openai_run_on_a_prepared_dataset_loads_no_heavy_library(tmp_path):
    """The second run on a dataset (its Arrow files prepared by the first) imports none
    of datasets, pandas, torch, transformers, accelerate; both give the same answers."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    env = dict(os.environ, MERA_MULTI_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path))
    try:
        shown = []
        for run in ("first", "second"):
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    RUN_PROBE,
                    "evaluate",
                    "--backend",
                    "openai",
                    "--model",
                    "m",
                    "--base-url",
                    f"http://127.0.0.1:{server.server_port}/v1",
                    "--tasks",
                    "ruhhh_image",
                    "--data",
                    "sample",
                    "--no-progress",
                    "--output-dir",
                    str(tmp_path / run),
                ],
                capture_output=True,
                text=True,
                timeout=180,
                env=env,
                cwd=tmp_path,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            shown.append(done.stdout.strip().splitlines()[-1])
    finally:
        server.shutdown()
        server.server_close()
    assert "datasets" in shown[0]  # the first run prepares the Arrow files with datasets
    assert shown[1] == "HEAVY []"
    first, second = (
        json.loads((tmp_path / r / "results.json").read_text(encoding="utf-8"))
        for r in ("first", "second")
    )
    assert first["run"]["dataset_fingerprint"] == second["run"]["dataset_fingerprint"]
    assert first["tasks"] == second["tasks"]


def test_serve_is_a_command_spelled_as_the_judge_server(capsys):
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith("usage: mera-multi serve")
    assert "--served-model-name" in out and "stream" in out
    assert "serve" in build_parser().format_help()
    for flag in ("--served-model-name", "--served-name"):  # the older spelling stays an alias
        assert serve_parser().parse_args([flag, "tiny"]).served_model_name == "tiny"
    judge = next(p for n, p in PARSERS if n == "mera-multi judge serve")
    assert (
        judge.parse_args(["--model", "m", "--served-model-name", "tiny"]).served_model_name
        == "tiny"
    )
