"""JSON files of a dataset folder: parsed with every failure as a FieldError that says
why, nesting bounded, repeated keys and unencodable text noted (json_doubts)."""

from __future__ import annotations

from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.json_doubts import DuplicateKeys, doubts, pairs_hook
from mera_multi_hf.data.raw.files import MAX_JSON_BYTES, FieldError, read_inside

MAX_JSON_DEPTH = json_read.MAX_DEPTH


json_depth = json_read.depth  # kept under its old name


def parse_json(data: bytes):
    """Parse JSON bytes; every failure becomes a FieldError that says why (field "", or
    the field of a repeated key or of unencodable text: json_doubts)."""
    value, doubtful = parse_json_doubtful(data)
    for field, message in doubts(value) if doubtful else ():
        raise FieldError(field, message)
    return value


def parse_json_doubtful(data: bytes):
    """(value, doubtful): JSON bytes parsed by the one reader (json_read: size, nesting
    and integer limits), and whether a repeated key or a surrogate escape may lie in it
    (walk it with json_doubts.doubts)."""
    found: list = []
    try:
        value = json_read.loads(
            data, "", max_depth=MAX_JSON_DEPTH, object_pairs_hook=lambda pairs: _noted(pairs, found)
        )
    except json_read.JsonReadError as err:
        raise FieldError("", err.reason) from None
    return value, bool(found) or json_read.may_hold_surrogates(data)


def _noted(pairs: list, found: list) -> dict:
    value = pairs_hook(pairs)
    if isinstance(value, DuplicateKeys):
        found.append(value)
    return value


def read_json(path: Path, limit: int = MAX_JSON_BYTES):
    """Parse one JSON file of a dataset folder (the file must lie inside its folder)."""
    return parse_json(read_inside(path.parent, path.name, limit))
