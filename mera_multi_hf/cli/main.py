"""The `mera-multi` command line. User mistakes print one clear line, never a traceback."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from dataclasses import dataclass

from mera_multi_hf.core import masking
from mera_multi_hf.core.arguments import (
    OVERWRITE_HELP,
    Parser,
    add_command,
    no_abbreviations,
    opt,
    output_dir_opt,
    text_table,
)
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.start_up import program_start, resume_collections
from mera_multi_hf.data.media_checks import MediaLimitOptions


def cmd_tasks(args) -> int:
    from mera_multi_hf.tasks.table import TASKS

    rows = [
        (
            "task",
            "class name",
            "modality",
            "test",
            "public",
            "answer",
            "metrics",
            "domains",
            "hub id",
        )
    ]  # the columns: TASK_COLUMNS, shown by `tasks --help`
    for t in TASKS.values():
        rows.append(
            (
                t.key,
                t.class_name,
                t.modality,
                str(t.test_size),
                "yes" if t.public else "no",
                t.answer_kind,
                ",".join(t.metrics),
                str(len(t.domains) or ""),
                t.hub_id,
            )
        )
    print(text_table(rows))
    return 0


@dataclass
class BuildOptions(MediaLimitOptions):
    """The options of `mera-multi build` (and of the scripts in dataset_scripts/); the media
    limits come from MediaLimitOptions, which `evaluate` shares."""

    task: str | None = opt(
        None, "task key, e.g. ruhhh_image (see `mera-multi tasks`)", positional=True
    )
    raw: str | None = opt(
        None,
        "the raw MERA folder (test.json, shots.json, samples/), or `sample` for the bundled one",
        required=True,
        path=True,
    )
    out: str | None = output_dir_opt(
        None,
        "folder to write the Hub layout into: new, empty, or an "
        "earlier export (a folder holding anything else is refused)",
        required=True,
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)
    internal_with_answers: bool = opt(
        False,
        "keep the gold answers of a private test split "
        "(an internal export: marked so, never pushed)",
    )
    max_shard_size: str = opt("500MB", "largest Parquet shard, e.g. 500MB or 2GB (default: 500MB)")
    num_proc: int | None = opt(
        None,
        "processes that decode media while checking (default: "
        "one per CPU; 1: in the building process)",
        low=1,
    )
    push: str | None = opt(
        None,
        "also publish the export as this Hub dataset: the files its "
        "marker lists, nothing else in the folder",
        metavar="ORG/NAME",
    )
    private: bool = opt(False, "with --push: a private repository")
    token: str | None = opt(
        None, "with --push: a Hub token (default: the logged-in one)", secret=True
    )


def cmd_build(options: BuildOptions) -> int:
    from mera_multi_hf.data.data_owner import check_data_task
    from mera_multi_hf.data.loading import one_line
    from mera_multi_hf.data.publish import export_raw, push, shard_size
    from mera_multi_hf.data.sources import resolve_source
    from mera_multi_hf.pipeline.preflight import check_extras
    from mera_multi_hf.tasks.table import get_task

    if options.internal_with_answers and options.push:  # refused before anything is built or sent
        raise MeraError(
            "--push with --internal-with-answers: an export that keeps private "
            "answers is never published"
        )
    limits = options.limits()
    task = get_task(options.task)
    check_extras([task])  # its media decoders import, before anything is read
    shard_size(options.max_shard_size)
    raw = resolve_source(task, options.raw)
    if os.path.isdir(raw):  # another task's folder is named as such, not as field errors
        check_data_task(task, raw, "raw")
    # no datasets bars (two or more per split): the one line is the "wrote" below, and an
    # error stays one line
    with one_line(task, raw, ""):
        out = export_raw(
            task,
            raw,
            options.out,
            max_shard_size=options.max_shard_size,
            include_private_answers=options.internal_with_answers,
            limits=limits,
            num_proc=options.num_proc,
        )
    print(
        f"wrote {task.key} in the Hub layout to {out}"
        + (
            " (INTERNAL: keeps private answers; never publish it)"
            if options.internal_with_answers
            else ""
        )
    )
    if options.push:
        url = push(out, options.push, private=options.private, token=options.token)
        print(f"published {url}")
    return 0


TASK_COLUMNS = """columns:
  task        the key that --tasks and `build` take
  class name  the official task name (as in MERA's leaderboard and submissions)
  modality    image, audio or video
  test        examples in the official test split
  public      yes: the test answers are public (scores can be computed here);
              no: they are hidden, and only the MERA site scores them
  answer      the kind of answer the task expects (a letter, a number, free text...)
  metrics     the official metrics of the task
  domains     the number of domains (sub-datasets) the task is split into, if any
  hub id      the official dataset on the Hugging Face Hub (the default --data)"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``command``: the first argument; where it names a
    command of COMMAND_MODULES, only that module is imported to register it, and where it
    names one of this module's (`tasks`, `build`), none (quick start-up); otherwise every
    command is registered (`mera-multi --help` lists them; a misspelt one gets a "did
    you mean")."""
    parser = Parser(
        prog="mera-multi",
        description="MERA Multi on the Hugging Face stack: build task datasets, evaluate "
        "models, score predictions and package submissions.",
    )
    from mera_multi_hf import __version__

    parser.add_argument("--version", action="version", version=f"mera-multi-hf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "tasks",
        help="list the 18 MERA Multi tasks",
        epilog=TASK_COLUMNS,
        description="The 18 MERA Multi tasks, one per line. Writes no file.",
    )
    p.set_defaults(func=cmd_tasks)

    add_command(
        sub,
        "build",
        BuildOptions,
        cmd_build,
        help="turn a raw MERA folder into a Hub dataset (Parquet + card)",
        description="Turn a raw MERA folder (docs/raw-format.md) into the Hub's "
        "dataset layout. Writes into --output-dir: data/<split>-*.parquet (a "
        "domain-split task: <domain>/<split>-*.parquet), README.md (the "
        "dataset card) and the hidden marker .mera-multi-outputs.json; "
        "--push also publishes the folder.",
    )
    # Listed for `mera-multi --help`; main hands its options to serve_options, whose
    # parser is built only then.
    sub.add_parser(
        "serve",
        add_help=False,
        help="serve a model as an OpenAI-compatible chat server (options: "
        "`mera-multi serve --help`)",
    )

    for name, module in COMMAND_MODULES.items():
        if command in sub.choices or (command in COMMAND_MODULES and name != command):
            continue
        __import__(f"mera_multi_hf.{module}", fromlist=["add_parser"]).add_parser(sub)
    no_abbreviations(parser)
    return parser


# Further commands register themselves: each module has add_parser(subparsers), which
# adds the command named here (in this order in `mera-multi --help`).
COMMAND_MODULES: dict[str, str] = {
    "score": "cli.score",
    "judge": "cli.judge",
    "evaluate": "cli.evaluate",
    "metrics": "spaces.export",
    "compare": "pipeline.compare",
    "leaderboard": "reporting.leaderboard",
    "view": "cli.view",
    "models": "demo.tiny_models",
}


# OSErrors of a write that the user can act on (space, permissions, read-only folders).
WRITE_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT)


def evaluate_options(args) -> int:
    from mera_multi_hf.cli.evaluate import cmd_evaluate

    return cmd_evaluate(args.options)


def serve_options(args) -> int:
    from mera_multi_hf.serving.chat_options import parse_serve_options

    options = parse_serve_options(args.options)  # --help stops here: no FastAPI, no torch
    from mera_multi_hf.serving.chat_server import run_options

    return run_options(options)


def check_encodable(argv: list[str]) -> None:
    """An argument that is not UTF-8 (a file or folder name in another encoding reaches
    Python as lone surrogates) is refused before any work: every output (the folder's
    marker, results.json) records names as UTF-8 text."""
    for i, arg in enumerate(argv):
        if not _is_utf8(arg):
            option = (
                argv[i - 1]
                if i and argv[i - 1].startswith("--") and "=" not in arg
                else "an argument"
            )
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            raise MeraError(
                f"{option} '{shown}' is not UTF-8 text: name files and folders in "
                "UTF-8 (nothing was written)"
            )


def _is_utf8(arg: str) -> bool:
    try:
        arg.encode("utf-8")  # a lone surrogate does not encode
    except UnicodeEncodeError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the program itself (core.start_up: its collector, its BLAS threads)
        program_start()
        sys.excepthook = masking.excepthook  # an unexpected traceback is masked too
    masking.remember_environment()
    try:
        # whatever the command prints or warns; what it logs from where its work starts
        # (add_command's runner, evaluate's): --help loads no logging
        with masking.masked_console(logs=False):
            return _main(sys.argv[1:] if argv is None else list(argv))
    except BrokenPipeError:  # the reader stopped early (`mera-multi tasks | head -3`)
        from mera_multi_hf.core.outputs import discard_stdout

        discard_stdout()  # nothing more can reach it; the last flush at exit must not fail
        return 0


def _main(argv: list[str]) -> int:
    try:
        check_encodable(argv)
    except MeraError as err:
        print(f"mera-multi: error: {err}", file=sys.stderr)
        return 2
    own = {"evaluate": evaluate_options, "serve": serve_options}
    if argv[:1] and argv[0] in own:  # their parsers are their modules' own (evaluate's from
        # RunConfig); the other commands' parsers are not built (they import what their help needs)
        parser, args = None, argparse.Namespace(func=own[argv[0]], options=argv[1:])
    else:
        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from mera_multi_hf.tasks import import_task_modules

        import_task_modules()  # tasks declared outside the package ($MERA_MULTI_TASKS)
        if args.func is not evaluate_options:  # (evaluate resumes them where its run starts)
            resume_collections()
        return args.func(args) or 0
    except MeraError as err:
        print(f"mera-multi: error: {masking.mask_secrets(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a read-only folder: one line naming the path
        if err.errno not in WRITE_ERRNOS:
            raise
        from mera_multi_hf.core.outputs import write_error

        print(f"mera-multi: error: {write_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mera-multi: interrupted; finished work is kept (rerun to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
