"""The parsers of every command: help that shows each option's default, no abbreviated
options, argparse errors with secrets kept out, and the options of a dataclass as flags
(one per field, ``--max-new-tokens``), which is how every command gets its options; and
the one check of every option's value against the domain its field declares
(:func:`check_options`)."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import math
import os
import sys

from mera_multi_hf.core.errors import MeraError


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, or says that it is required, unless
    the help text already tells it. A description or epilog laid out in lines (examples,
    a column legend) is shown as written; a one-line one is wrapped."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        # argparse makes one of these per option it adds; its own default width imports
        # shutil (with bz2 and lzma), which a quick --help should not pay
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _format_action_invocation(self, action):
        """The flags of an option, less its unlisted spellings (``--max_new_tokens``)."""
        unlisted = getattr(action, "unlisted", ())
        if unlisted:
            action = copy.copy(action)
            action.option_strings = [s for s in action.option_strings if s not in unlisted]
        return super()._format_action_invocation(action)

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
        for arg in args or ():  # lm-eval's flags: a pointer before "required" messages
            flag = arg.split("=")[0]
            if flag in LM_EVAL_POINTERS and flag not in self._option_string_actions:
                self.error(f"{flag} is lm-evaluation-harness's option: {LM_EVAL_POINTERS[flag]}")
        namespace, extras = super().parse_known_args(args, namespace)
        if any(e.startswith("-") for e in extras):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message):
        """One line, where argparse would print the whole usage first; an option is named
        by its listed flags (not by its unlisted spellings, --output_path)."""
        for action in self._actions:
            if getattr(action, "unlisted", ()):
                listed = [s for s in action.option_strings if s not in action.unlisted]
                message = message.replace("/".join(action.option_strings), "/".join(listed))
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):  # no terminal (a pipe, a file)
        return 80


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


# lm-evaluation-harness flags that have another spelling or no use here: one line each
LM_EVAL_POINTERS = {
    "--apply_chat_template": "the chat template is --prompt-mode chat here (the default, "
    "auto, uses it whenever the model has one)",
    "--write_out": "the sample log (samples_<task>_<split>.jsonl) is always written here",
    "--log_samples": "the sample log (samples_<task>_<split>.jsonl) is always written here",
    "--model_args": "give --model, --revision, --dtype, --device, --trust-remote-code "
    "(or --base-url and --api-key with --backend openai) as options of their own",
}


def _masked_error(parser):
    """argparse's error, with the values of unknown arguments left out (a mistyped secret
    option's value is never echoed), a "did you mean" for each option or command, a
    pointer for lm-eval's flags, and URL secrets masked."""
    error = parser.error

    def masked(message: str):
        from mera_multi_hf.core.masking import mask_secrets

        head, sep, rest = message.partition("unrecognized arguments: ")
        if sep:
            flags = [a.split("=")[0] for a in rest.split() if a.startswith("-")]
            message = f"{head}{sep}{' '.join(flags)} (values not shown){_near(parser, flags)}"
        return error(mask_secrets(message + _hint(parser, message)))

    return masked


def _hint(parser, message: str) -> str:
    """A field's ``hint`` after argparse's message about that option's value, and "did
    you mean" after an unknown command (`mera-multi evalute`)."""
    import difflib
    import re

    choice = re.match(r"argument (\S+): invalid choice: '([^']*)'", message)
    for action in parser._actions:
        named = message.startswith(f"argument {'/'.join(action.option_strings)}:")
        hint = getattr(action, FIELD_TAG, None) and getattr(action, FIELD_TAG).metadata.get("hint")
        if named and hint and "invalid" in message:
            return f"; {hint}"
        if choice and choice[1] == (action.metavar or action.dest) and action.choices:
            near = difflib.get_close_matches(choice[2], list(action.choices), n=1, cutoff=0.6)
            return f"; did you mean {near[0]}?" if near else ""
    return ""


def _near(parser, flags: list[str]) -> str:
    """ "; did you mean --tasks?" for mistyped options (`evaluate --task`)."""
    import difflib

    known = [
        s
        for a in parser._actions
        if a.help != argparse.SUPPRESS
        for s in a.option_strings
        if s.startswith("--") and s not in getattr(a, "unlisted", ())
    ]
    near = [m for f in flags for m in difflib.get_close_matches(f, known, n=1, cutoff=0.7)]
    return f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""


def opt(
    default,
    help: str,
    *,
    low=None,
    above=None,
    high=None,
    path: bool = False,
    url: bool = False,
    **extra,
):
    """A dataclass field that is also an option: its default, its help, its domain, and
    argparse extras (choices, metavar, nargs, action, required; ``positional=True`` for an
    argument without a flag, such as `build TASK`; ``aliases``: further flags that set
    it, such as an older spelling; ``flag``: its flag when not the field's name;
    ``secret=True`` for a credential, masked by value wherever text is written or
    printed and never shown by repr).

    The domain, checked by :func:`check_options` for the parser and Python callers alike:
    ``low``/``high`` (inclusive) and ``above`` (exclusive) bound a number, which must be
    finite; ``path``: a file or folder name (no name in it over 255 bytes); ``url``: an
    http(s) URL (comma-separated ones each); ``choices``: its values; a text is never
    empty (``blank_ok=True``: whitespace is a value, as a stop string)."""
    domain = dict(low=low, above=above, high=high, path=path, url=url)
    domain = {k: v for k, v in domain.items() if v is not None and v is not False}
    metadata = {"help": help, **extra, **({"domain": domain} if domain else {})}
    return dataclasses.field(default=default, metadata=metadata, repr=not extra.get("secret"))


# what --overwrite means, for every command that takes it (here, not in core.outputs,
# so that building a command's options loads no file machinery)
OVERWRITE_HELP = (
    "also replace or clear this command's own earlier outputs here that a "
    "plain rerun keeps (for evaluate: a sample log made under other "
    "settings); never a file this tool did not write, another command's "
    "file, or a folder"
)


def output_dir_opt(default, help: str, **extra):
    """The option of every command that writes a folder: ``--output-dir DIR``, also taken
    as ``--out`` (the older spelling) and lm-evaluation-harness's ``--output_path``."""
    return opt(
        default,
        help,
        path=True,
        flag="--output-dir",
        aliases=("--out",),
        hidden=("--output_path",),
        metavar="DIR",
        **extra,
    )


def same_as(options_class, name: str):
    """The field ``name`` of another options dataclass, declared there once (default,
    help, domain), as a field of this one too: `RunConfig` takes the backends' options
    by their own declarations."""
    f = options_class.__dataclass_fields__[name]
    return dataclasses.field(
        default=f.default, metadata=dict(f.metadata, declared_in=options_class), repr=f.repr
    )


# metadata of an option's field that add_argument does not take
NOT_ARGPARSE = ("secret", "domain", "blank_ok", "unit", "declared_in", "hint")

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
    hints = _type_hints(cls)
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
        aliases, flag = options.pop("aliases", ()), options.pop("flag", None)
        flag = flag or "--" + f.name.replace("_", "-")
        # unlisted spellings: HfArgumentParser's (--max_new_tokens), an lm-eval user's
        shown = {flag, *aliases}
        unlisted = [
            *dict.fromkeys(s for s in ("--" + f.name, *options.pop("hidden", ())) if s not in shown)
        ]
        action = target.add_argument(flag, *aliases, *unlisted, **options)
        action.unlisted = unlisted
        setattr(action, FIELD_TAG, f)


def _argument(f: dataclasses.Field, hint) -> dict:
    """add_argument's keywords for one field (its metadata: help, choices, required...)."""
    options = dict(f.metadata, dest=f.name, default=f.default)
    for key in NOT_ARGPARSE:  # the domain (core.domains), masking's mark...: not argparse's
        options.pop(key, None)
    kinds = [t for t in (_type_args(hint) or (hint,)) if t is not type(None)]
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
    from mera_multi_hf.core.masking import masked_logs, remember_options

    options = cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})
    check_options(options)  # (an Options dataclass has checked itself as it was made)
    remember_options(options)  # its secrets are masked in whatever the command writes
    with masked_logs():
        return run(options)


# ---- every option's domain, checked in one place ----
# The command line builds each command's options dataclass, whose __post_init__ (Options)
# calls check_options, and a Python caller builds the same dataclass. A value outside its
# domain is one sentence naming the option (a MeraError: one line, exit 2); a number of
# the wrong type from Python is a TypeError.

INT_MAX = 2**63 - 1  # the largest integer an option takes where its field sets no bound
NAME_MAX = 255  # bytes of one file or folder name (ext4, APFS, NTFS, ...)
PATH_MAX = 4095  # bytes of a whole path (Linux's PATH_MAX less its NUL)
SEED_MAX = 2**32 - 1  # numpy's and transformers.set_seed's largest seed


def flag_of(f: dataclasses.Field) -> str:
    """The option's flag as the help shows it (``--max-new-tokens``)."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


class Options:
    """A base of options dataclasses: each instance is checked as it is made."""

    def __post_init__(self):
        check_options(self)


def check_options(options) -> None:
    """TypeError for a number option of the wrong type (RunConfig(limit="5")); MeraError
    for a value outside its field's domain (--seed -1, --timeout nan, --port 70000, an
    empty --data, a folder name over 255 bytes, a malformed --base-url)."""
    hints = _type_hints(type(options))
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        items = value if isinstance(value, (list, tuple)) else [value]
        kind = _kind(hints[f.name])
        for item in items:
            if item is None:
                continue
            if kind in (int, float):
                _check_number(type(options).__name__, f, kind, item)
            elif isinstance(item, (str, os.PathLike)):
                _check_text(f, os.fspath(item))


@functools.cache  # (a class's hints do not change; a run asks for some twice)
def _type_hints(cls) -> dict:
    import typing  # here: `tasks` and the lists of commands never need it (quick start-up)

    return typing.get_type_hints(cls)


def _type_args(hint) -> tuple:
    """typing.get_args for the hints options use: X | None, Optional[X], list[X], tuple[X, ...]."""
    return getattr(hint, "__args__", ())


def _kind(hint):
    """int, float, str or bool: what one value of the field is (list[int] -> int)."""
    for t in _type_args(hint) or (hint,):
        if t is not type(None):
            args = _type_args(t)  # list[str], tuple[str, ...]: their items' kind
            return _kind(args[0]) if args else t
    return hint


def _check_number(owner: str, f: dataclasses.Field, kind, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        what = "an integer" if kind is int else "a number"
        unit = f.metadata.get("unit")
        raise TypeError(
            f"{owner} {f.name} must be {what}{f' of {unit}' if unit else ''}, "
            f"got {type(value).__name__} {value!r:.40}"
        )
    domain = f.metadata.get("domain", {})
    low, above = domain.get("low"), domain.get("above")
    high = domain.get("high", INT_MAX if kind is int else math.inf)
    if not (
        math.isfinite(value)
        and (low is None or value >= low)
        and (above is None or value > above)
        and value <= high
    ):
        shown = f"{value:.3g}" if isinstance(value, float) or abs(value) > 10**12 else value
        raise MeraError(f"{flag_of(f)} {shown}: give {describe(domain, kind)}")


def describe(domain: dict, kind=int) -> str:
    """The domain in words: "an integer from 0 to 65535", "a number above 0"."""
    what = "an integer" if kind is int else "a finite number"
    low, above, high = domain.get("low"), domain.get("above"), domain.get("high")
    if low is not None and high is not None:
        return f"{what} from {low} to {high}"
    if above is not None:
        return f"{what} above {above}" + (f" and at most {high}" if high is not None else "")
    if low is not None:
        return f"{what} of at least {low}"
    return what + (f" of at most {high}" if high is not None else "")


def _check_text(f: dataclasses.Field, value: str) -> None:
    flag, domain = flag_of(f), f.metadata.get("domain", {})
    if not value or (not value.strip() and not f.metadata.get("blank_ok")):
        raise MeraError(f"{flag} is empty: give a value or leave the option out")
    choices = f.metadata.get("choices")
    if isinstance(choices, (tuple, list)) and value not in choices:
        raise MeraError(
            f"unknown {f.name.replace('_', ' ')} {value[:60]!r}; choose one of "
            f"{', '.join(map(str, choices))} ({flag})"
        )
    if domain.get("path"):
        check_path(flag, value)
    if domain.get("url"):
        for part in (p.strip() for p in value.split(",")):
            check_url(flag, part)


def check_path(flag: str, value: str) -> None:
    """A file or folder name that the system can hold: no name over 255 bytes, the
    whole under 4096 (else `OSError: File name too long` after the work)."""
    raw = os.fsencode(value)
    if len(raw) > PATH_MAX:
        raise MeraError(f"{flag}: a path of {len(raw)} bytes; paths are at most {PATH_MAX} bytes")
    for name in raw.split(b"/"):
        if len(name) > NAME_MAX:
            shown = name[:40].decode("utf-8", "replace")
            raise MeraError(
                f"{flag}: the name {shown!r}... is {len(name)} bytes; a file or folder "
                f"name is at most {NAME_MAX} bytes"
            )


def check_url(flag: str, value: str) -> None:
    """An http(s) URL with a host (its text is not repeated: it may hold a password)."""
    try:
        from urllib.parse import urlsplit  # here: only a URL option needs it

        parts = urlsplit(value)
        parts.port  # noqa: B018 -- a port that is not a number raises here
        reason = "" if parts.hostname else "it has no host"
    except ValueError:  # its message quotes the URL's parts, a password among them
        reason = "its host or port does not read"
    if not reason and parts.scheme not in ("http", "https"):
        reason = "it is not http:// or https://"
    if reason:
        raise MeraError(
            f"{flag}: a malformed URL ({reason}); give one like http://127.0.0.1:8000/v1"
        )
