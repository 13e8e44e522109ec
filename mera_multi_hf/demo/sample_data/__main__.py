"""``python -m mera_multi_hf.demo.sample_data [TASK|all] [DIR]``: rewrite the bundled samples."""

import sys
from dataclasses import dataclass

from mera_multi_hf.core.arguments import Parser, add_dataclass_options, opt
from mera_multi_hf.demo.sample_data import main


@dataclass
class SampleOptions:
    """The arguments of ``python -m mera_multi_hf.demo.sample_data``."""

    task: str = opt("all", "task key, or `all` (default: all)", positional=True, nargs="?")
    dir: str | None = opt(
        None,
        "folder to write one task's sample into (default: the package's samples/ folder)",
        positional=True,
        nargs="?",
    )


def parser() -> Parser:
    made = Parser(
        prog="python -m mera_multi_hf.demo.sample_data",
        description="Write the bundled raw samples (deterministic; all of them into "
        "the package by default).",
    )
    add_dataclass_options(made, SampleOptions)
    return made


if __name__ == "__main__":
    options = SampleOptions(**vars(parser().parse_args(sys.argv[1:])))
    main([options.task] + ([options.dir] if options.dir else []))
