"""The pages' texts, each once. results.html and compare.html hold their rows as JSON
(:func:`.page_media.page_data`), and most of it would be the prompts: a task's prompts are
a few instruction templates filled with each example's words, so the same sentences
come back in thousands of rows (and the gold "hidden (private split)", the metrics, a
media path's folder in every one).

So every cell of a row is written as its value's JSON text cut into pieces, after each
line end, each sentence end and each "/": a piece that several cells share is kept once,
in the page's ``texts`` (the most used first, so their indices are short), and the cell
names its index; the rest stays in the cell. A cell is an index (that text), a string
(itself) or a list of both (their concatenation); that JSON text parsed is the value.
Cutting only decides what can be shared: whatever the cuts, a cell joins back to its
value's exact text. rows.js decodes the fields the filters look at when the page
opens, and the rest of a row when it is drawn or searched.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from json.encoder import encode_basestring

from markupsafe import Markup

from mera_multi_hf.reporting.page_media import page_data

# after a line end (written \n inside the JSON text), a sentence end or a path's "/"
CUT = re.compile(r"(\\n|[.!?:;] |/)")
SHARED_MIN = 2  # a one-character piece stays where it is (measured: the smallest pages)


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json(value) -> str:
    """The value's JSON text, as json.dumps writes it (strings and ints without its
    overhead: they are most cells)."""
    if isinstance(value, str):
        return encode_basestring(value)
    if type(value) is int:
        return str(value)
    return _ENCODE(value)


def _pieces(text: str) -> list[str]:
    """A JSON text cut after each CUT (a piece ends with it)."""
    parts = CUT.split(text)
    pieces = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)]
    return pieces + [parts[-1]] if parts[-1] else pieces


def _shared(cells: Counter, pieces: dict[str, list[str]]) -> list[str]:
    """Each piece worth naming that more than one cell holds (or one cell twice), the
    most used first (``cells``: how many cells hold each text, in first-seen order)."""
    counts: Counter = Counter()
    for text, n in cells.items():  # (a piece is counted first where it is first seen)
        for piece in pieces[text]:
            if len(piece) >= SHARED_MIN:
                counts[piece] += n
    return [piece for piece, n in counts.most_common() if n > 1]


def _coded(pieces: list[str], index: dict[str, int]):
    """One cell: the indices of its shared pieces (``index``: text -> position in the
    page's texts), the rest as strings, neighbours joined."""
    out: list = []
    for piece in pieces:
        at = index.get(piece)
        if at is not None:
            out.append(at)
        elif out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return out[0] if len(out) == 1 else out


def coded_page_data(rows: list[dict], **extra) -> Markup:
    """The page's JSON (:func:`.page_media.page_data`) with every cell coded and the
    ``texts`` the cells name. Each distinct cell text is cut and coded once (most cells
    repeat another's: one in ten of a page's is new)."""
    fields = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_json(row.get(field)) for field in fields] for row in rows]
    counted = Counter(text for row in cells for text in row)
    pieces = {text: _pieces(text) for text in counted}
    texts = _shared(counted, pieces)
    index = {text: i for i, text in enumerate(texts)}
    coded = {text: _coded(cut, index) for text, cut in pieces.items()}
    return page_data(
        [dict(zip(fields, map(coded.get, row))) for row in cells], texts=texts, **extra
    )
