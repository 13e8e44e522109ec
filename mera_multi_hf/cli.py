"""The `mera-multi` command line. User mistakes print one clear line, never a traceback."""
from __future__ import annotations

import argparse
import sys

from .errors import MeraError


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, or says that it is required, unless
    the help text already tells it. A description or epilog laid out in lines (examples,
    a column legend) is shown as written; a one-line one is wrapped."""

    def _fill_text(self, text, width, indent):
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action):
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS \
                or "default" in text.lower() or "required" in text.lower():
            return text
        if action.required:
            return f"{text} (required)"
        if action.nargs == 0:  # a flag
            return f"{text} (default: off)"
        shown = "none" if action.default is None else action.default
        return f"{text} (default: {shown})".replace("%", "%%")


class Parser(argparse.ArgumentParser):
    """The parser of every command: its sub-commands' parsers are of this class too
    (argparse makes them with the class of the parser they belong to), so they all
    show their defaults the same way."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def text_table(rows: list[tuple[str, ...]]) -> str:
    """Rows of strings as aligned columns, the first row a header underlined with dashes."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_tasks(args) -> int:
    from .tasks import TASKS

    rows = [("task", "class name", "modality", "test", "public", "answer", "metrics",
             "domains", "hub id")]  # the columns: TASK_COLUMNS, shown by `tasks --help`
    for t in TASKS.values():
        rows.append((t.key, t.class_name, t.modality, str(t.test_size), "yes" if t.public else "no",
                     t.answer_kind, ",".join(t.metrics), str(len(t.domains) or ""), t.hub_id))
    print(text_table(rows))
    return 0


def cmd_build(args) -> int:
    from .hub import export_raw, push, shard_size
    from .loading import resolve_source
    from .raw import RawLimits
    from .tasks import get_task

    if args.internal_with_answers and args.push:  # refused before anything is built or sent
        raise MeraError("--push with --internal-with-answers: an export that keeps private "
                        "answers is never published")
    if args.max_image_pixels <= 0:
        raise MeraError(f"--max-image-pixels {args.max_image_pixels}: must be positive")
    task = get_task(args.task)
    shard_size(args.max_shard_size)
    out = export_raw(task, resolve_source(task, args.raw), args.out,
                     max_shard_size=args.max_shard_size, overwrite=args.overwrite,
                     include_private_answers=args.internal_with_answers,
                     limits=RawLimits(max_image_pixels=args.max_image_pixels))
    print(f"wrote {task.key} in the Hub layout to {out}"
          + (" (INTERNAL: keeps private answers; never publish it)"
             if args.internal_with_answers else ""))
    if args.push:
        url = push(out, args.push, private=args.private, token=args.token)
        print(f"published {url}")
    return 0


TASK_COLUMNS = """columns:
  task        the key that --tasks, --task and `build` take
  class name  the official task name (as in MERA's leaderboard and submissions)
  modality    image, audio or video
  test        examples in the official test split
  public      yes: the test answers are public (scores can be computed here);
              no: they are hidden, and only the MERA site scores them
  answer      the kind of answer the task expects (a letter, a number, free text...)
  metrics     the official metrics of the task
  domains     the number of domains (sub-datasets) the task is split into, if any
  hub id      the official dataset on the Hugging Face Hub (the default --data)"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mera-multi",
        description="MERA Multi on the Hugging Face stack: build task datasets, evaluate "
                    "models, score predictions and package submissions.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"mera-multi-hf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("tasks", help="list the 18 MERA Multi tasks", epilog=TASK_COLUMNS,
                       description="The 18 MERA Multi tasks, one per line.")
    p.set_defaults(func=cmd_tasks)

    p = sub.add_parser("build", help="turn a raw MERA folder into a Hub dataset (Parquet + card)")
    p.add_argument("task", help="task key, e.g. ruhhh_image (see `mera-multi tasks`)")
    p.add_argument("--raw", required=True, help="the raw MERA folder (test.json, shots.json, "
                   "samples/), or `sample` for the bundled one")
    p.add_argument("--out", required=True, help="folder to write the Hub layout into; an "
                   "existing one is replaced only if an earlier build wrote it (or --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing, non-empty "
                   "--out folder that an earlier build did not write: its whole content goes "
                   "(never the raw folder, the current directory or a folder holding them)")
    p.add_argument("--internal-with-answers", action="store_true", help="keep the gold answers "
                   "of a private test split (an internal export: marked so, never pushed)")
    p.add_argument("--max-shard-size", default="500MB", help="largest Parquet shard, e.g. 500MB or 2GB (default 500MB)")
    p.add_argument("--max-image-pixels", type=int, default=100_000_000, help="refuse images "
                   "whose header declares more pixels (default 100000000)")
    p.add_argument("--push", metavar="ORG/NAME", help="also publish the folder as this Hub dataset")
    p.add_argument("--private", action="store_true", help="with --push: a private repository")
    p.add_argument("--token", help="with --push: a Hub token (default: the logged-in one)")
    p.set_defaults(func=cmd_build)

    for module in COMMAND_MODULES:
        __import__(f"mera_multi_hf.{module}", fromlist=["add_parser"]).add_parser(sub)
    return parser


# Further commands register themselves: each module has add_parser(subparsers).
COMMAND_MODULES: list[str] = ["score_cmd", "judge_cmd", "evaluate_cmd", "metrics_export"]


def evaluate_options(args) -> int:
    from .evaluate_cmd import cmd_evaluate

    return cmd_evaluate(args.options)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["evaluate"]:  # its options come from RunConfig (evaluate_cmd); the
        # other commands' parsers are not built (they import what their help needs)
        parser, args = None, argparse.Namespace(func=evaluate_options, options=argv[1:])
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except MeraError as err:
        print(f"mera-multi: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mera-multi: interrupted; finished work is kept (rerun to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
