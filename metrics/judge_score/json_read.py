"""The one JSON reader: every JSON and JSONL document the tool reads (predictions, sample
logs, ``results.json``, raw files, server replies, request bodies) is parsed by
:func:`loads`, with limits on size, nesting depth and integer digits, so that a hostile
or broken document ends in one :class:`JsonReadError` line naming where it came from
(``file:line``, or the server and route), never in a ``RecursionError`` or Python's own
integer-string ``ValueError``.

Repeated keys are refused by default (``json`` would keep the last one without a word).
Lone surrogates (``"\\ud800"``, valid JSON but no valid Unicode; no UTF-8 writer takes
them) are replaced by U+FFFD with :func:`replace_unencodable`, which counts them.
Files are opened through the one input reader (``input_files``: a FIFO or a link loop is
refused before it can block). Self-contained but for ``errors`` and ``input_files``: the
judge's Space folder carries a copy.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .errors import MeraError
from .input_files import open_binary

MAX_DEPTH = 64  # MERA records nest about 4 levels; deeper is hostile or broken
# Integer digits: Python's own int-str limit (4,300 by default; it keeps int() linear),
# whose ValueError becomes one line here.
MAX_INT_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or None
MAX_DOCUMENT_BYTES = 2 * 2**30  # one JSON file or body
MAX_LINE_BYTES = 256 * 2**20  # one JSONL line

# \ud800-\udfff as a JSON escape (raw surrogates cannot be in valid UTF-8 bytes)
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE_BYTES = re.compile(SURROGATE_ESCAPE.pattern.encode("ascii"))


def may_hold_surrogates(data: bytes | str) -> bool:
    """Whether a document may parse into a lone surrogate (a cheap scan of its text; walk
    the parsed value with :func:`replace_unencodable` to be sure)."""
    if isinstance(data, (bytes, bytearray)):
        return _SURROGATE_ESCAPE_BYTES.search(data) is not None
    return SURROGATE_ESCAPE.search(data) is not None or SURROGATE.search(data) is not None


class JsonReadError(MeraError, ValueError):
    """A JSON document that is not read: ``where`` (file:line, server and route) and why."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where, self.reason = where, reason


def refuse_duplicates(pairs: list) -> dict:
    """``object_pairs_hook``: an object with a repeated key is an error, not the last value."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Duplicate(key)
    return value


class _Duplicate(ValueError):
    def __init__(self, key: str):
        super().__init__(
            f"duplicate key {key!r:.80}: JSON would keep only the last value; remove the other"
        )


def depth(value) -> int:
    """How deeply a parsed JSON value nests (level by level: no recursion to exhaust).
    A container with items is one level deeper than its own level."""
    if not isinstance(value, (dict, list)):
        return 1
    deepest, level, containers = 1, 1, [value]
    while containers:
        inner: list = []
        for node in containers:
            items = node.values() if isinstance(node, dict) else node
            if items:
                deepest = level + 1
                inner += [c for c in items if isinstance(c, (dict, list))]
        level, containers = level + 1, inner
    return deepest


def loads(
    data: bytes | str,
    where: str,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_depth: int = MAX_DEPTH,
    object_pairs_hook=refuse_duplicates,
):
    """One JSON document (UTF-8 bytes or text) parsed within the limits; JsonReadError
    names ``where`` and says why otherwise. ``object_pairs_hook=None``: repeated keys
    are not looked for (the tool's own sample log, read often: about 1.6x faster)."""
    if len(data) > max_bytes:
        raise JsonReadError(
            where, f"{len(data)} bytes, more than the {max_bytes} a JSON document may have"
        )
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise JsonReadError(
                where, f"not UTF-8 text ({err.reason} at byte {err.start})"
            ) from None
    try:
        value = json.loads(data, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as err:
        raise JsonReadError(
            where, f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None
    except RecursionError:
        raise JsonReadError(
            where, f"JSON nested too deeply to read (the limit is {max_depth} levels)"
        ) from None
    except _Duplicate as err:
        raise JsonReadError(where, str(err)) from None
    except ValueError as err:  # an integer past Python's int-str limit
        digits = re.search(r"value has (\d+) digits", str(err))
        reason = (
            f"an integer of {digits.group(1)} digits (more than {MAX_INT_DIGITS})"
            if digits
            else str(err)
        )
        raise JsonReadError(where, f"unreadable JSON value: {reason}") from None
    # a cheap bound first: n brackets nest at most n + 1 levels (the innermost value counts)
    if data.count("[") + data.count("{") >= max_depth and depth(value) > max_depth:
        raise JsonReadError(where, f"JSON nested deeper than {max_depth} levels")
    return value


def read_file(path: str | Path, where: str | None = None, **limits):
    """One JSON file parsed (OSError, InputFileError among them, is the caller's: it
    knows what the file is for)."""
    path = Path(path)
    with open_binary(path) as fh:
        data = fh.read(limits.get("max_bytes", MAX_DOCUMENT_BYTES) + 1)
    return loads(data, where or str(path), **limits)


def bounded_lines(fh, limit: int = MAX_LINE_BYTES):
    """(line number, line) of a binary file, no line held past ``limit`` bytes: a longer
    one comes back as its first ``limit + 1`` bytes (which :func:`loads` refuses), the
    rest read past in pieces."""
    number = 0
    while line := fh.readline(limit + 1):
        number += 1
        rest = line
        while len(rest) > limit and not rest.endswith(b"\n"):  # skip the rest, piecewise
            rest = fh.readline(limit + 1) or b"\n"
        yield number, line


def iter_jsonl(path: str | Path, **limits):
    """(line number, value) for each non-blank line of a JSONL file; JsonReadError names
    ``file:line``."""
    limits.setdefault("max_bytes", MAX_LINE_BYTES)
    with open_binary(path) as fh:
        for number, line in bounded_lines(fh, limits["max_bytes"]):
            if line.strip():
                yield number, loads(line, f"{path}:{number}", **limits)


def replace_unencodable(value):
    """(value, count): every lone surrogate in the strings (and keys) of ``value``
    replaced by U+FFFD, and how many there were."""
    if isinstance(value, str):
        return SURROGATE.subn("\ufffd", value)
    if isinstance(value, list):
        pairs = [replace_unencodable(v) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    if isinstance(value, dict):
        pairs = [(replace_unencodable(k), replace_unencodable(v)) for k, v in value.items()]
        return {k: v for (k, _), (v, _) in pairs}, sum(a + b for (_, a), (_, b) in pairs)
    return value, 0
