"""Every option's value checked against the domain its field declares (``opt(low=...,
path=True, ...)`` in :mod:`mera_multi_hf.core.arguments`), in one place: the command
line builds each command's options dataclass, whose ``__post_init__`` calls
:func:`check_options`, and a Python caller builds the same dataclass. A value outside
its domain is one sentence naming the option (a MeraError: one line, exit 2); a value
of the wrong type from Python is a TypeError."""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from urllib.parse import urlsplit

from mera_multi_hf.core.errors import MeraError

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
    hints = typing.get_type_hints(type(options))
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


def _kind(hint):
    """int, float, str or bool: what one value of the field is (list[int] -> int)."""
    for t in typing.get_args(hint) or (hint,):
        if t is type(None):
            continue
        args = typing.get_args(t)
        return _kind(args[0]) if args and t is not typing.Union else t
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
        parts = urlsplit(value)
        parts.port  # noqa: B018 -- a port that is not a number raises here
        reason = "" if parts.hostname else "it has no host"
    except ValueError as err:
        reason = str(err)
    if not reason and parts.scheme not in ("http", "https"):
        reason = "it is not http:// or https://"
    if reason:
        raise MeraError(
            f"{flag}: a malformed URL ({reason}); give one like http://127.0.0.1:8000/v1"
        )
