"""The one sanitiser of foreign text: whatever a server, a client or a file sent that
the tool prints, raises or echoes back goes through :func:`foreign` first, so that a
hostile value can neither flood a line (10 MB of model names) nor forge one (a name
holding a line break and an escape sequence that prints ``mera-multi: error ...``).
tests/test_foreign_text.py walks the modules that handle replies for any that does not.
"""

from __future__ import annotations

import re

MAX_CHARS = 200  # the most of one foreign value a message shows
# C0/C1 controls (line breaks and ESC among them), the Unicode line and paragraph
# separators, and the invisible marks that reorder or hide text
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    if match.group() in _NAMED:
        return _NAMED[match.group()]
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def foreign(value, limit: int = MAX_CHARS, quoted: bool = False) -> str:
    """``value`` (its ``str``) fit for one line of output: control characters escaped
    as ``\\xNN``/``\\uNNNN``, at most ``limit`` characters of it shown and the length
    of the rest said; ``quoted``: between single quotes, as ``repr`` would show it."""
    text = value if isinstance(value, str) else str(value)
    shown = _UNSAFE.sub(_escaped, text[:limit])
    if len(shown) > limit:  # escapes lengthen it
        shown = shown[:limit]
    if quoted:
        shown = "'" + shown.replace("'", "\\'") + "'"
    if len(text) > limit:
        shown += f"... ({len(text) - limit} more characters)"
    return shown
