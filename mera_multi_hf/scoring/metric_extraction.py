"""Answer extraction, for the project's separately named "extracted" EM only (never the
official number), and the judge's official "text after the last ОТВЕТ": one rule, two
named readings."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.declarations import ANSWER_MARKER, official_answer_part

_ANSWER_MARK_ANY_CASE = re.compile(ANSWER_MARKER, re.IGNORECASE)


def lenient_answer_part(text: str) -> str:
    """The unofficial reading, for the separate "extracted" EM only: the official rule
    with the marker matched in any case ("Ответ", "ответ") and colons around the answer
    dropped.

    >>> lenient_answer_part("Думаю... ответ: синий")
    'синий'
    """
    return official_answer_part(_ANSWER_MARK_ANY_CASE.sub(ANSWER_MARKER, text)).strip(":").strip()


# Cyrillic letters that look like Latin option letters, and back.
_CYR_TO_LAT = dict(zip("АВСЕНКМОРТХ", "ABCEHKMOPTX"))
_LAT_TO_CYR = {v: k for k, v in _CYR_TO_LAT.items()}
# What may surround a lone option letter: "B.", "(B)", "**B**", "«B»", "B)".
_LETTER_WRAP = " \t\r\n:.,;!?()[]{}*\"'«»`-—–"


def extract_answer(text: str, choices: Iterable[str] | None = None) -> str:
    """The answer inside a wordy reply, for the separate "extracted" EM only.

    Takes `lenient_answer_part` (the text after the last "ОТВЕТ" in any case, colons
    dropped); if what remains is one letter (optionally wrapped in brackets, stars,
    quotes or followed by a dot) it returns that letter. Cyrillic look-alikes are mapped
    to the letter the task's `choices` use (Latin when no choices are given). Anything
    else comes back as it is.

    >>> extract_answer("Думаю, правильный ответ: B.")
    'B'
    >>> extract_answer("Ответ: (А)")  # Cyrillic А -> Latin A
    'A'
    >>> extract_answer("ОТВЕТ: В", choices=["А", "Б", "В", "Г"])  # Cyrillic choices stay
    'В'
    >>> extract_answer("  синий  ")
    'синий'
    """
    if not isinstance(text, str):
        raise MeraError(f"extract_answer needs a string, got {type(text).__name__}")
    tail = lenient_answer_part(text)
    letter = tail.strip(_LETTER_WRAP)
    if len(letter) == 1 and letter.isalpha():
        return _map_letter(letter.upper(), choices)
    return tail


def _map_letter(letter: str, choices: Iterable[str] | None) -> str:
    if choices is None:
        return _CYR_TO_LAT.get(letter, letter)
    allowed = set(choices)
    if letter in allowed:
        return letter
    twin = _CYR_TO_LAT.get(letter) or _LAT_TO_CYR.get(letter)
    return twin if twin in allowed else letter
