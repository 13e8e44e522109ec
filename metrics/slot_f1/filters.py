"""Prediction filters, each registered under its official name: what the official harness
does to a generation before scoring it and before packing it into the submission
(docs/official-protocol.md, "Filters and metrics per task" and "Submission ids and files").

A filter is registered by ``@register_filter("name")``; a task declares its filters by
name (``TaskSpec.score_filters`` / ``submit_filters``); ``apply_filters`` runs them in
order. The official filter chains are:

- most tasks: none (the full cut generation is compared);
- ruTiE's generate variant (``custom_generate_task.yaml``): ``remove_whitespace``,
  ``take_first``;
- ruSLUn (``multimodal_tasks/ruslun``): ``lowercase``, ``slot_clean``.

``take_first`` picks the first of several sampled answers in the harness; a run here
keeps one answer per example, so on one string it returns the string unchanged. It is
listed so that a declaration reads like the official YAML.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

from .errors import MeraError

# The whole string is one triple-backtick fence, optionally with a language word.
_FENCE = re.compile(r"^```(?:\w+)?\s*(.*)\s*```$", re.DOTALL)
# A leading "json" (any case) followed by ":" or a line break, with the spaces around.
_JSON_PREFIX = re.compile(r"^\s*json\s*[:\n\r]\s*", re.IGNORECASE)

# name -> filter, filled by @register_filter in the order of this file.
FILTERS: dict[str, Callable[[str], str]] = {}


def register_filter(name: str):
    """Register the decorated function as the prediction filter ``name``."""

    def register(fn: Callable[[str], str]) -> Callable[[str], str]:
        if name in FILTERS:
            raise MeraError(f"the prediction filter {name!r} is registered twice")
        FILTERS[name] = fn
        return fn

    return register


@register_filter("remove_whitespace")
def remove_whitespace(text: str) -> str:
    """The harness's ``remove_whitespace``: leading whitespace off.

    >>> remove_whitespace("  \\n B ")
    'B '
    """
    return text.lstrip()


@register_filter("take_first")
def take_first(text: str) -> str:
    """The harness's ``take_first`` on one answer: the answer itself."""
    return text


@register_filter("lowercase")
def lowercase(text: str) -> str:
    """The harness's ``lowercase``.

    >>> lowercase('{"Intent": "Alarm_Set"}')
    '{"intent": "alarm_set"}'
    """
    return text.lower()


def _unquote(text: str) -> str:
    """A string wrapped in matching quotes: its Python literal value, else the quotes cut."""
    try:
        value = ast.literal_eval(text)
    except Exception:  # noqa: BLE001 - the official cleaner falls back on any failure
        return text[1:-1]
    return value if isinstance(value, str) else str(value)


@register_filter("slot_clean")
def slot_clean(text: str) -> str:
    """ruSLUn's cleaner (``ruslunscoring``): the JSON text inside common wrappers.

    In order: strip; unwrap a whole-string ```` ``` ```` fence (with an optional language
    word); drop one pair of surrounding backticks; drop a leading "json" followed by ":"
    or a line break; unwrap matching outer quotes (a Python literal parse, else cut);
    strip. A "json" followed by a space only stays, as in the official code.

    >>> slot_clean('```json\\n{"intent": "x"}\\n```')
    '{"intent": "x"}'
    >>> slot_clean('json:\\n{"a": 1}')
    '{"a": 1}'
    >>> slot_clean('`json {"a": 1}`')
    'json {"a": 1}'
    >>> slot_clean('"{\\\\"a\\\\": 1}"')
    '{"a": 1}'
    """
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if text.startswith("`") and text.endswith("`"):
        text = text[1:-1].strip()
    text = _JSON_PREFIX.sub("", text, count=1)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = _unquote(text)
    return text.strip()


def check_filters(names: Sequence[str]) -> tuple[str, ...]:
    """The names as a tuple; a MeraError names any unknown filter."""
    if isinstance(names, str):
        names = (names,)
    unknown = [n for n in names if n not in FILTERS]
    if unknown:
        raise MeraError(
            f"unknown prediction filter(s) {', '.join(map(repr, unknown))}: "
            f"the filters are {', '.join(FILTERS)}"
        )
    return tuple(names)


def apply_filters(names: Sequence[str], text: str) -> str:
    """``text`` passed through the named filters, in order.

    >>> apply_filters(("lowercase", "slot_clean"), ' ```JSON\\n{"Intent": "A"}``` ')
    '{"intent": "a"}'
    >>> apply_filters((), " B")
    ' B'
    """
    if not isinstance(text, str):
        raise MeraError(f"a prediction to filter must be a string, got {type(text).__name__}")
    for name in check_filters(names):
        text = FILTERS[name](text)
    return text


def apply_filters_many(names: Sequence[str], texts: Sequence[str]) -> list[str]:
    """``apply_filters`` over a column (the names are checked once)."""
    chain = [FILTERS[n] for n in check_filters(names)]
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise MeraError(f"predictions[{i}] is {type(text).__name__}, expected a string")
        for fn in chain:
            text = fn(text)
        out.append(text)
    return out
