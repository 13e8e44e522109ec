"""JSON that parses but cannot be trusted as written: duplicate keys and unencodable text.

``json.loads`` keeps the last of two equal keys without a word, and turns an escaped lone
surrogate (``"\\ud800"``) into a Python string that no UTF-8 writer (Arrow, the card,
the sample log) accepts. The reader parses with :func:`pairs_hook`, which marks every
object that had a repeated key, and looks for surrogate escapes in the text; only a
file with either is walked (:func:`doubts`) to name the field of each.
"""

from __future__ import annotations


class DuplicateKeys(dict):
    """A parsed JSON object that had a repeated key (the last value kept, as json does)."""

    def __init__(self, pairs: list, duplicates: list[str]):
        super().__init__(pairs)
        self.duplicates = duplicates


def pairs_hook(pairs: list) -> dict:
    """``object_pairs_hook`` for json.loads: a plain dict unless a key repeats."""
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set = set()
    repeated = [k for k, _ in pairs if k in seen or seen.add(k)]
    return DuplicateKeys(pairs, list(dict.fromkeys(repeated)))


def unencodable(text: str) -> str | None:
    """Why ``text`` cannot be written as UTF-8, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"text that is not valid Unicode: a lone surrogate "
            f"\\u{ord(text[err.start]):04x} at character {err.start} (fix the file's "
            f"escapes; a surrogate must come in a high+low pair)"
        )
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def doubts(value, path: str = "", skip: str | None = None) -> list[tuple[str, str]]:
    """(field, message) for each repeated key and unencodable string (or key) in
    ``value``; list items share their list's field name; ``skip``: a top-level key not
    walked (a split file's records are walked one by one)."""
    out, stack = [], [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            out += [
                (
                    _join(where, k),
                    f"duplicate key {k!r:.80}: JSON keeps only the last value; remove the other",
                )
                for k in getattr(node, "duplicates", ())
            ]
            for key, child in reversed(node.items()):
                why = unencodable(key)
                if why:
                    out.append((where or "(top level)", f"a key holds {why}"))
                elif not (key == skip and node is value):
                    stack.append((child, _join(where, key)))
        elif isinstance(node, list):
            stack += [(child, where) for child in reversed(node)]
        elif isinstance(node, str):
            why = unencodable(node)
            if why:
                out.append((where, why))
    return out
