"""Writes docs/cli.md, the command-line reference, from the parsers themselves: every
command's and sub-command's ``--help``, as argparse prints it. Run it after changing an
option (``python docs/cli_reference.py``); tests/test_site.py fails while the committed
page differs from what this renders, so the page cannot drift from the code."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "cli.md"
WIDTH = "100"  # argparse wraps at $COLUMNS: fixed, so the page is the same everywhere

HEAD = """# Command-line reference

Every command of `mera-multi`, with its `--help` as the parser prints it. This page is
generated from the parsers by `python docs/cli_reference.py` (a test fails while it is
stale), so it says what the installed version accepts. Each option's underscore form
(`--max_shard_size`) is accepted too. The guides show the commands in use:
[getting started](getting-started.md), [evaluating a model](evaluating.md).
"""


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command line, parser) of every command and sub-command, in the parser's order."""
    from mera_multi_hf.cli.evaluate import options_parser
    from mera_multi_hf.cli.main import build_parser
    from mera_multi_hf.serving.chat_options import serve_parser

    # evaluate and serve hand their arguments to parsers of their own: those are shown
    own = {"mera-multi evaluate": options_parser, "mera-multi serve": serve_parser}
    found, todo = [], [("mera-multi", build_parser())]
    while todo:
        name, parser = todo.pop(0)
        found.append((name, own[name]() if name in own else parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return found


def render() -> str:
    """The page's text."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parts = [HEAD]
        for name, parser in _commands():
            parser.prog = name
            text = parser.format_help().rstrip()
            parts.append(f"## `{name}`\n\n```text\n{text}\n```\n")
        return "\n".join(parts)
    finally:
        if previous is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = previous


if __name__ == "__main__":
    sys.path.insert(0, str(PAGE.parent.parent))
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE}")
