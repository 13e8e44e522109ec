"""The MERA Multi metric logic, written once (SPEC.md section 3).

The evaluate modules in metrics/ and the scoring report call these functions; nothing
else restates a formula. Everything here is plain Python + numpy and built for large
inputs: model answers repeat a lot (letters, short phrases), so every distinct string
is normalised once and the per-example work is C-level mapping and comparison.

Two exact-match variants exist and stay apart:
- `exact_match_scores` is the official EM (no answer extraction);
- `extract_answer` + `exact_match_scores` is the project's second, clearly named
  "extracted" EM. It is never mixed into the official number.
"""
from __future__ import annotations

import ast
import json
import operator
import re
import string
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from .errors import MeraError

EM_MODES = ("mera", "strict", "squad")

# str.translate tables: deleting punctuation in C is far faster than a regex or a loop.
_DELETE_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _norm_mera(text: str) -> str:
    return text.lower().translate(_DELETE_PUNCT)


def _norm_strict(text: str) -> str:
    return text


def _norm_squad(text: str) -> str:
    text = _ARTICLES.sub(" ", text.lower().translate(_DELETE_PUNCT))
    return " ".join(text.split())


_NORMALIZERS = {"mera": _norm_mera, "strict": _norm_strict, "squad": _norm_squad}


def _normalizer(mode: str):
    try:
        return _NORMALIZERS[mode]
    except (KeyError, TypeError):
        raise MeraError(
            f"unknown exact-match mode {mode!r}: use one of {', '.join(EM_MODES)} "
            "(mera: lowercase + drop punctuation; strict: as is; squad: the later official "
            "revision, for comparison only)") from None


def normalize(text: str, mode: str = "mera") -> str:
    """One answer string normalised the way exact match compares it.

    >>> normalize("Ответ: B.", "mera")
    'ответ b'
    >>> normalize("  The  Cat! ", "squad")
    'cat'
    >>> normalize("A", "squad")  # the squad trap: the letter A is an article
    ''
    """
    return _normalizer(mode)(text)


def _normalize_many(texts: Sequence[str], mode: str) -> list[str]:
    """Normalise a column, each distinct string once (answers repeat a lot)."""
    norm = _normalizer(mode)
    if norm is _norm_strict:
        return list(texts)
    unique = dict.fromkeys(texts)
    # Pure C on the hot path: map over the distinct strings, then a dict lookup per row.
    table = dict(zip(unique, map(norm, unique)))
    return list(map(table.__getitem__, texts))


def _check_strings(values, what: str) -> list:
    if isinstance(values, str):
        raise MeraError(f"{what} must be a list of strings, got one string {values[:40]!r}")
    values = list(values)
    if set(map(type, values)) <= {str}:  # the common case, checked at C speed
        return values
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise MeraError(f"{what}[{i}] is {type(v).__name__} {v!r}, expected a string "
                            "(use '' for a missing answer)")
    return values


def exact_match_scores(predictions: Sequence[str], references: Sequence[str | Sequence[str]],
                       mode: str = "mera") -> np.ndarray:
    """Per-example exact match (0/1, int8) after the named normalisation.

    A reference may be a list of acceptable answers: the example scores 1 when the
    prediction matches any of them (ruCommonVQA).

    >>> exact_match_scores(["b", "Ответ: B", "Да!"], ["B", "B", ["да", "верно"]]).tolist()
    [1, 0, 1]
    >>> exact_match_scores(["b"], ["B"], mode="strict").tolist()
    [0]
    """
    norm = _normalizer(mode)
    predictions = _check_strings(predictions, "predictions")
    references = list(references)
    if len(predictions) != len(references):
        raise MeraError(f"got {len(predictions)} predictions but {len(references)} references: "
                        "they must pair up one to one")
    if set(map(type, references)) <= {str} or all(isinstance(r, str) for r in references):
        preds = _normalize_many(predictions, mode)
        refs = _normalize_many(references, mode)
        return np.fromiter(map(operator.eq, preds, refs), dtype=bool,
                           count=len(preds)).astype(np.int8)
    # Lists of acceptable answers: a slower path, only where a task needs it.
    preds = _normalize_many(predictions, mode)
    out = np.zeros(len(preds), dtype=np.int8)
    for i, (p, ref) in enumerate(zip(preds, references)):
        options = [ref] if isinstance(ref, str) else list(ref)
        if not all(isinstance(o, str) for o in options):
            raise MeraError(f"references[{i}] must be a string or a list of strings, got {ref!r}")
        out[i] = any(p == norm(o) for o in options)
    return out


def mean_score(scores) -> float:
    """The mean of per-example scores; no examples is an error, never a silent 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        raise MeraError("no examples to score: the predictions are empty")
    return float(scores.mean())


def group_scores(scores, group_ids) -> np.ndarray:
    """Per-group 0/1: a group scores 1 only when every one of its examples scores 1.

    Groups come out in sorted order of their ids.

    >>> group_scores([1, 1, 0, 1, 1], [7, 7, 3, 3, 9]).tolist()
    [0, 1, 1]
    """
    scores = np.asarray(scores)
    ids = np.asarray(group_ids)
    if scores.shape != ids.shape or scores.ndim != 1:
        raise MeraError(f"got {scores.size} scores but {ids.size} group ids: every example "
                        "needs exactly one group id")
    if scores.size == 0:
        raise MeraError("no examples to score: the predictions are empty")
    _, inverse = np.unique(ids, return_inverse=True)
    # A group is right iff none of its examples is wrong: count the wrong ones per group.
    wrong = np.bincount(inverse.ravel(), weights=(scores < 1))
    return (wrong == 0).astype(np.int8)


def group_mean(scores, group_ids) -> float:
    """Group exact match (or group judge score): the mean of `group_scores`.

    >>> group_mean([1, 1, 0, 1, 1], [7, 7, 3, 3, 9])
    0.6666666666666666
    """
    return float(group_scores(scores, group_ids).mean())


# ----------------------------------------------------------------------------------
# The second, separate EM variant: answer extraction (never the official number).

_ANSWER_MARK = re.compile("ответ", re.IGNORECASE)
# Cyrillic letters that look like Latin option letters, and back.
_CYR_TO_LAT = dict(zip("АВСЕНКМОРТХ", "ABCEHKMOPTX"))
_LAT_TO_CYR = {v: k for k, v in _CYR_TO_LAT.items()}
# What may surround a lone option letter: "B.", "(B)", "**B**", "«B»", "B)".
_LETTER_WRAP = " \t\r\n:.,;!?()[]{}*\"'«»`-—–"
_LEAD_STRIP = " \t\r\n:"


def extract_answer(text: str, choices: Iterable[str] | None = None) -> str:
    """The answer inside a wordy reply, for the separate "extracted" EM only.

    Takes the text after the last "ОТВЕТ" (any case), strips colons and spaces; if what
    remains is one letter (optionally wrapped in brackets, stars, quotes or followed by
    a dot) it returns that letter. Cyrillic look-alikes are mapped to the letter the
    task's `choices` use (Latin when no choices are given). Anything else comes back
    stripped, unchanged.

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
    last = None
    for last in _ANSWER_MARK.finditer(text):
        pass
    tail = text[last.end():] if last is not None else text
    tail = tail.strip(_LEAD_STRIP)
    letter = tail.strip(_LETTER_WRAP)
    if len(letter) == 1 and letter.isalpha():
        return _map_letter(letter.upper(), choices)
    return tail.strip()


def _map_letter(letter: str, choices: Iterable[str] | None) -> str:
    if choices is None:
        return _CYR_TO_LAT.get(letter, letter)
    allowed = set(choices)
    if letter in allowed:
        return letter
    twin = _CYR_TO_LAT.get(letter) or _LAT_TO_CYR.get(letter)
    return twin if twin in allowed else letter


def warn_if_squad_on_letters(mode: str, answer_kind: str | None) -> None:
    """Warn (UserWarning) when squad normalisation meets a letter task."""
    if mode == "squad" and answer_kind == "letter":
        warnings.warn(
            "exact match mode 'squad' on a letter task: it deletes the article 'a', so gold "
            "'A' becomes '' and an empty answer counts as correct. Use mode='mera' (or "
            "'strict' for video tasks) for the official number.", UserWarning, stacklevel=3)


# ----------------------------------------------------------------------------------
# ruSLUn: intent exact match and slot F1.

def _parse_json_like(text: str):
    """Lowercase, unwrap a code fence / backticks / a leading 'json', parse. None if it fails."""
    # "```json\n{...}\n```", "`{...}`" and "json {...}" all come down to "{...}".
    s = text.lower().strip().strip("`").strip()
    if s.startswith("json"):
        s = s[4:].strip()
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        pass
    try:
        # Models (and the Hub copy of the gold) often write Python dicts with single quotes.
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _lower_all(value):
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict):
        return {_lower_all(k): _lower_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lower_all(v) for v in value]
    return value


def _hashable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _slot_multiset(parsed: dict) -> Counter:
    slots = parsed.get("slots")
    if isinstance(slots, dict):
        slots = [slots]
    if not isinstance(slots, list):
        return Counter()
    return Counter((_hashable(k), _hashable(v))
                   for item in slots if isinstance(item, dict) for k, v in item.items())


def _parse_gold(reference, index: int) -> dict:
    parsed = _lower_all(reference) if isinstance(reference, dict) else (
        _parse_json_like(reference) if isinstance(reference, str) else None)
    if not isinstance(parsed, dict):
        raise MeraError(f"references[{index}] is not a JSON object with 'intent' and 'slots' "
                        f"(got {str(reference)[:80]!r}); ruSLUn gold answers must parse")
    return parsed


def slot_f1_scores(predictions: Sequence[str], references: Sequence[str | dict]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-example (intent exact match, slot F1) for ruSLUn, exactly as SPEC.md section 3.

    >>> gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}]}"
    >>> em, f1 = slot_f1_scores(['```json\\n{"intent": "ALARM_SET", "slots": []}\\n```'], [gold])
    >>> em.tolist(), f1.tolist()
    ([1.0], [0.0])
    """
    predictions = _check_strings(predictions, "predictions")
    references = list(references)
    if len(predictions) != len(references):
        raise MeraError(f"got {len(predictions)} predictions but {len(references)} references: "
                        "they must pair up one to one")
    intent = np.zeros(len(predictions), dtype=np.float64)
    f1 = np.zeros(len(predictions), dtype=np.float64)
    for i, (pred_text, ref) in enumerate(zip(predictions, references)):
        gold = _parse_gold(ref, i)
        pred = _parse_json_like(pred_text)
        if not isinstance(pred, dict):
            continue  # an answer that does not parse scores 0 on both
        intent[i] = float(_hashable(pred.get("intent")) == _hashable(gold.get("intent")))
        p_slots, g_slots = _slot_multiset(pred), _slot_multiset(gold)
        n_pred, n_gold = sum(p_slots.values()), sum(g_slots.values())
        if n_pred == 0 and n_gold == 0:
            f1[i] = 1.0
            continue
        common = sum((p_slots & g_slots).values())
        precision = common / n_pred if n_pred else 0.0
        recall = common / n_gold if n_gold else 0.0
        f1[i] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return intent, f1
