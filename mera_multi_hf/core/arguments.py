"""The parsers of every command: help that shows each option's default, no abbreviated
options, argparse errors with secrets kept out, and the options of a dataclass as flags
(one per field, ``--max-new-tokens``), which is how every command gets its options."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import typing


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
        if (
            not action.option_strings
            or action.default is argparse.SUPPRESS
            or "default" in text.lower()
            or "required" in text.lower()
        ):
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
        kwargs.setdefault("allow_abbrev", False)  # an abbreviated secret option is never taken
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        """A sub-command refuses an unknown option itself: its message then names it, with
        its own options to suggest (argparse would leave them to the top parser)."""
        namespace, extras = super().parse_known_args(args, namespace)
        if any(e.startswith("-") for e in extras):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message):
        """One line, where argparse would print the whole usage first."""
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def text_table(rows: list[tuple[str, ...]]) -> str:
    """Rows of strings as aligned columns, the first row a header underlined with dashes."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """Only whole option names, in the parser and all its subcommands: an abbreviation
    (``--judge-api KEY``) would slip past the masking of secret options."""
    parser.allow_abbrev = False
    parser.error = _masked_error(parser)
    for action in parser._actions:
        if isinstance(action.choices, dict):  # subcommands (a lazy choices list is not read)
            for sub in action.choices.values():
                no_abbreviations(sub)


def _masked_error(parser):
    """argparse's error, with the values of unknown arguments left out (a mistyped secret
    option's value is never echoed), a "did you mean" for each, and URL secrets masked."""
    error = parser.error

    def masked(message: str):
        from mera_multi_hf.core.masking import mask_secrets

        head, sep, rest = message.partition("unrecognized arguments: ")
        if sep:
            flags = [a.split("=")[0] for a in rest.split() if a.startswith("-")]
            message = f"{head}{sep}{' '.join(flags)} (values not shown){_near(parser, flags)}"
        return error(mask_secrets(message))

    return masked


def _near(parser, flags: list[str]) -> str:
    """ "; did you mean --tasks?" for mistyped options (`evaluate --task`)."""
    import difflib

    known = [
        s
        for a in parser._actions
        if a.help != argparse.SUPPRESS
        for s in a.option_strings
        if s.startswith("--")
    ]
    near = [m for f in flags for m in difflib.get_close_matches(f, known, n=1, cutoff=0.7)]
    return f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""


def opt(default, help: str, **extra):
    """A dataclass field that is also an option: its default, its help, and argparse
    extras (choices, metavar, nargs, action, required; ``positional=True`` for an
    argument without a flag, such as `build TASK`; ``aliases``: further flags that set
    it, such as an older spelling; ``secret=True`` for a credential, masked by value
    wherever text is written or printed)."""
    return dataclasses.field(default=default, metadata={"help": help, **extra})


# The attribute that marks an argparse action as made from a dataclass field (its value:
# the field), so a test can tell it from a hand-written add_argument.
FIELD_TAG = "dataclass_field"


def add_dataclass_options(parser: argparse.ArgumentParser, cls) -> None:
    """One flag per field of the dataclass ``cls``, its help and choices from the field's
    metadata. A dataclass's own fields come first; those it inherits (shared option sets
    such as ScoringOptions) follow in a group titled by their class's docstring.

    Built from ``dataclasses.fields`` rather than by ``transformers.HfArgumentParser``:
    importing transformers takes seconds, which `--help` should not pay. The flags are
    HfArgumentParser's (``--max-new-tokens``; ``--max_new_tokens`` is still accepted,
    unlisted); flags are plain switches, list options repeat, and a field marked
    ``positional`` is an argument without a flag. Each action keeps its field
    (:data:`FIELD_TAG`)."""
    hints = typing.get_type_hints(cls)
    inherited = {
        f.name: base
        for base in reversed(cls.__mro__[1:])
        if dataclasses.is_dataclass(base)
        for f in dataclasses.fields(base)
    }
    groups = {}
    for f in sorted(dataclasses.fields(cls), key=lambda f: f.name in inherited):
        base = inherited.get(f.name)
        if base is not None and base not in groups:
            groups[base] = parser.add_argument_group(base.__doc__.strip().splitlines()[0])
        target = groups.get(base, parser)
        options = _argument(f, hints[f.name])
        if options.pop("positional", False):
            del options["dest"]
            setattr(target.add_argument(f.name, **options), FIELD_TAG, f)
            continue
        aliases = options.pop("aliases", ())
        setattr(
            target.add_argument("--" + f.name.replace("_", "-"), *aliases, **options), FIELD_TAG, f
        )
        if "_" in f.name:  # the spelling HfArgumentParser and Python callers use
            hidden = target.add_argument(
                "--" + f.name, **dict(options, help=argparse.SUPPRESS, default=argparse.SUPPRESS)
            )
            setattr(hidden, FIELD_TAG, f)


def _argument(f: dataclasses.Field, hint) -> dict:
    """add_argument's keywords for one field (its metadata: help, choices, required...)."""
    options = dict(f.metadata, dest=f.name, default=f.default)
    options.pop("secret", None)  # masking's mark (masking.remember_options), not argparse's
    kinds = [t for t in (typing.get_args(hint) or (hint,)) if t is not type(None)]
    kind = kinds[0]
    if kind is bool:  # every flag is off by default
        return dict(options, action="store_true")
    if getattr(kind, "__origin__", None) is list:
        kind = kind.__args__[0]
        if "nargs" not in options:  # a list option repeats; a list argument takes several
            options.setdefault("action", "append")
    return dict(options, type=kind)


def add_command(subparsers, name: str, cls, run, **kwargs) -> argparse.ArgumentParser:
    """A sub-command whose options are the fields of the dataclass ``cls``; it runs
    ``run(cls(...))``, so a Python caller builds the same options object and calls
    ``run`` with it."""
    parser = subparsers.add_parser(name, **kwargs)
    add_dataclass_options(parser, cls)
    parser.set_defaults(func=functools.partial(_run_with, cls, run))
    return parser


def _run_with(cls, run, args: argparse.Namespace):
    from mera_multi_hf.core.masking import remember_options

    options = cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})
    remember_options(options)  # its secrets are masked in whatever the command writes
    return run(options)
