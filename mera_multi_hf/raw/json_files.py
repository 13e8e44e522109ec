"""JSON files of a dataset folder: parsed with every failure as a FieldError that says
why, nesting bounded, repeated keys and unencodable text noted (json_doubts)."""
from __future__ import annotations

import json
from pathlib import Path

from ..json_doubts import SURROGATE_ESCAPE, DuplicateKeys, doubts, pairs_hook
from .files import MAX_JSON_BYTES, FieldError, read_inside

MAX_JSON_DEPTH = 64  # MERA records nest about 4 levels; deeper is hostile or broken


def json_depth(value) -> int:
    """How deeply a parsed JSON value nests (iteratively: no recursion to exhaust)."""
    if not isinstance(value, (dict, list)):
        return 1
    deepest, stack = 1, [(value, 1)]
    while stack:  # only containers go on the stack; a node's items are one level deeper
        node, depth = stack.pop()
        items = node.values() if isinstance(node, dict) else node
        if items:
            deepest = max(deepest, depth + 1)
        stack += [(c, depth + 1) for c in items if isinstance(c, (dict, list))]
    return deepest


def parse_json(data: bytes):
    """Parse JSON bytes; every failure becomes a FieldError that says why (field "", or
    the field of a repeated key or of unencodable text: json_doubts)."""
    value, doubtful = parse_json_doubtful(data)
    for field, message in doubts(value) if doubtful else ():
        raise FieldError(field, message)
    return value


def parse_json_doubtful(data: bytes):
    """(value, doubtful): JSON bytes parsed, and whether a repeated key or a surrogate
    escape may lie in it (walk it with json_doubts.doubts). Nesting beyond
    MAX_JSON_DEPTH is refused, so nothing downstream recurses too deep."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FieldError("", f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        found: list = []
        value = json.loads(text, object_pairs_hook=lambda pairs: _noted(pairs, found))
    except json.JSONDecodeError as err:
        raise FieldError("", f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}") \
            from None
    except RecursionError:
        raise FieldError("", "JSON nested too deeply to read") from None
    except ValueError as err:  # e.g. an integer with more digits than Python converts
        raise FieldError("", f"unreadable JSON value: {err}") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise FieldError("", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value, bool(found) or SURROGATE_ESCAPE.search(text) is not None


def _noted(pairs: list, found: list) -> dict:
    value = pairs_hook(pairs)
    if isinstance(value, DuplicateKeys):
        found.append(value)
    return value


def read_json(path: Path, limit: int = MAX_JSON_BYTES):
    """Parse one JSON file of a dataset folder (the file must lie inside its folder)."""
    return parse_json(read_inside(path.parent, path.name, limit))

