"""The MERA Multi metric logic, written once (docs/official-protocol.md, "Filters and
metrics per task").

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


_PUNCT_BYTES = string.punctuation.encode("ascii")
_JOIN = "\x00"  # neither cased nor case-ignorable: str.lower's final-sigma rule stops at it


def _mera_keys(texts: list[str]) -> list:
    """The mera normalisation of a column as comparable keys (UTF-8 bytes), in one pass.

    The column is joined into one string, lowercased at once, encoded, and the ASCII
    punctuation deleted with ``bytes.translate`` (ASCII bytes never occur inside a
    multi-byte UTF-8 character), then split back. Equal keys <=> equal normalised
    strings, with unique free-text answers about 3x faster than per-string
    ``str.translate``. A column that holds the joining character falls back to strings.
    """
    if not texts:
        return []
    joined = _JOIN.join(texts)
    if joined.count(_JOIN) != len(texts) - 1:
        return _normalize_many(texts, "mera")
    encoded = joined.lower().encode("utf-8", "surrogatepass")
    return encoded.translate(None, _PUNCT_BYTES).split(_JOIN.encode("ascii"))


def _keys(texts: list[str], mode: str) -> list:
    return _mera_keys(texts) if mode == "mera" else _normalize_many(texts, mode)


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
        preds, refs = _keys(predictions, mode), _keys(references, mode)
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


class MetricInputError(MeraError, ValueError):
    """Inputs of the wrong shape or type for a metric: one sentence saying which and why."""


def check_batch(batch: dict, integers: tuple[str, ...] = ("group_ids",)) -> None:
    """The columns of one ``compute``/``add_batch`` call, checked before evaluate encodes
    them: each a sequence with one item per example (a string would be split into its
    characters), all of one length, and no float in the ``integers`` columns (a float
    group id would be truncated into another group)."""
    sizes = {}
    for name, column in batch.items():
        if column is None:
            continue
        if isinstance(column, (str, bytes, dict)) or not hasattr(column, "__len__"):
            raise MetricInputError(f"`{name}` must be a list with one item per example, not "
                                   f"{type(column).__name__} {str(column)[:40]!r}")
        sizes[name] = len(column)
    if len(set(sizes.values())) > 1:
        raise MetricInputError("the inputs must pair up one to one, but their lengths differ: " +
                               ", ".join(f"{k} {v}" for k, v in sizes.items()))
    for name in integers:
        if batch.get(name) is not None:
            _check_integers(batch[name], name)


def _check_integers(values, name: str) -> None:
    """No float, complex or bool among the ids (strings are ids too: they sort)."""
    array = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if array.dtype.kind in "iuUS":
        return
    for i, v in enumerate(values):
        if isinstance(v, (bool, float, complex, np.bool_, np.floating, np.complexfloating)):
            raise MetricInputError(f"`{name}[{i}]` is {type(v).__name__} {v!r}: {name} must be "
                                   "integers (a float would be truncated into another group)")


def require_examples(batch: dict) -> None:
    """No examples is an error with a sentence (evaluate would read the first example's
    type off an empty batch and fail with a bare IndexError)."""
    if not any(len(values) for values in batch.values()):
        raise MeraError("no examples to score: the predictions are empty")


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
    check_batch({"group_ids": group_ids})
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
# "The text after the last ОТВЕТ": one rule, two named readings.

ANSWER_MARKER = "ОТВЕТ"
_ANSWER_MARK_ANY_CASE = re.compile(ANSWER_MARKER, re.IGNORECASE)


def official_answer_part(prediction: str) -> str:
    """The judge's second input (official): ``prediction.split("ОТВЕТ")[-1].strip()``.

    Case-sensitive; with no marker this is the whole prediction stripped.

    >>> official_answer_part("Рассуждаю... ОТВЕТ: синий ")
    ': синий'
    >>> official_answer_part("Ответ: синий")
    'Ответ: синий'
    """
    return prediction.split(ANSWER_MARKER)[-1].strip()


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


def warn_if_squad_on_letters(mode: str, answer_kind: str | None) -> None:
    """Warn (UserWarning) when squad normalisation meets a letter task."""
    if mode == "squad" and answer_kind == "letter":
        warnings.warn(
            "exact match mode 'squad' on a letter task: it deletes the article 'a', so gold "
            "'A' becomes '' and an empty answer counts as correct. Use mode='mera' (or "
            "'strict' for video tasks) for the official number.", UserWarning, stacklevel=3)


# ----------------------------------------------------------------------------------
# ruSLUn: intent exact match and slot F1, as multimodal_tasks/ruslun/utils.py.

RUSLUN_METRICS = ("intent_exact_match", "slot_f1")
# The corrected reading (case-insensitive on both sides): reported beside, never instead.
RUSLUN_CI_METRICS = ("intent_exact_match_ci", "slot_f1_ci")


class _Malformed(Exception):
    """A parsed answer that the official scorer could not read (it would abort)."""


def _parse_prediction(text: str):
    """The filtered prediction as a dict; None when it is not JSON, null or not an object."""
    try:
        parsed = json.loads(text)  # json only: the official code has no literal_eval here
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _parse_gold(reference, index: int) -> dict:
    """The official gold: ``json.loads(outputs.replace("'", '"'))``, not lowercased.

    Where the official parse would crash (an apostrophe inside a value) a Python literal
    parse of the original is tried; a gold that is no object is a MeraError.
    """
    parsed = reference
    if isinstance(reference, str):
        try:
            parsed = json.loads(reference.replace("'", '"'))
        except (ValueError, RecursionError):
            try:
                parsed = ast.literal_eval(reference)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                parsed = None
    if not isinstance(parsed, dict):
        raise MeraError(f"references[{index}] is not a JSON object with 'intent' and 'slots' "
                        f"(got {str(reference)[:80]!r}); ruSLUn gold answers must parse")
    return parsed


def _slot_pairs(parsed: dict, fold) -> Counter:
    """The multiset of (str(slot_type), str(value)) over all dicts in ``slots``.

    ``slots`` may be missing, null or empty; anything else but a list of dicts is
    malformed (the official code would raise).
    """
    slots = parsed.get("slots", []) or []
    if not isinstance(slots, list) or not all(isinstance(item, dict) for item in slots):
        raise _Malformed
    return Counter((fold(str(k)), fold(str(v))) for item in slots for k, v in item.items())


def _slot_f1(pred: Counter, gold: Counter) -> float:
    n_pred, n_gold = sum(pred.values()), sum(gold.values())
    if n_pred == 0 and n_gold == 0:
        return 1.0
    common = sum((pred & gold).values())
    precision = common / n_pred if n_pred else 0.0
    recall = common / n_gold if n_gold else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _same(fold):
    def equal(a, b) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            return fold(a) == fold(b)
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001 - an odd value never aborts the scoring
            return False
    return equal


def _one_ruslun(pred: dict | None, gold: dict, fold) -> tuple[float, float]:
    """(intent EM, slot F1) of one example under a case fold (identity = official)."""
    if pred is None:
        return 0.0, 0.0
    gold_pairs = _slot_pairs(gold, fold)
    try:
        pred_pairs = _slot_pairs(pred, fold)
    except _Malformed:
        return 0.0, 0.0
    intent = float(_same(fold)(pred.get("intent"), gold.get("intent")))
    return intent, _slot_f1(pred_pairs, gold_pairs)


def _identity(text: str) -> str:
    return text


def ruslun_scores(predictions: Sequence[str], references: Sequence[str | dict], *,
                  filtered: bool = False, case_insensitive: bool = False) -> dict[str, np.ndarray]:
    """Per-example ruSLUn scores, exactly as the official ``process_results``.

    ``filtered=False``: the predictions are raw generations and the official filters
    (``lowercase``, ``slot_clean``; mera_multi_hf.filters) are applied here; pass
    ``filtered=True`` when they were applied already (never apply them twice). The gold
    is not lowercased, so a CamelCase gold intent never matches: that is official. With
    ``case_insensitive=True`` the corrected reading is added under ``*_ci`` names.

    >>> gold = "{'intent': 'Alarm_Set', 'slots': [{'time': 'семь утра'}]}"
    >>> s = ruslun_scores(['{"intent": "Alarm_Set", "slots": [{"time": "семь утра"}]}'], [gold],
    ...                   case_insensitive=True)
    >>> {k: v.tolist() for k, v in s.items()}
    {'intent_exact_match': [0.0], 'slot_f1': [1.0], 'intent_exact_match_ci': [1.0], 'slot_f1_ci': [1.0]}
    """
    from .filters import RUSLUN_FILTERS, apply_filters_many

    predictions = _check_strings(predictions, "predictions")
    references = list(references)
    if len(predictions) != len(references):
        raise MeraError(f"got {len(predictions)} predictions but {len(references)} references: "
                        "they must pair up one to one")
    if not filtered:
        predictions = apply_filters_many(RUSLUN_FILTERS, predictions)
    golds = [_parse_gold(ref, i) for i, ref in enumerate(references)]
    preds = [_parse_prediction(p) for p in predictions]
    variants = [(RUSLUN_METRICS, _identity)]
    if case_insensitive:
        variants.append((RUSLUN_CI_METRICS, str.lower))
    out = {}
    for (intent_name, f1_name), fold in variants:
        for i, gold in enumerate(golds):
            try:
                _slot_pairs(gold, fold)
            except _Malformed:
                raise MeraError(f"references[{i}]: 'slots' must be a list of objects, got "
                                f"{str(gold.get('slots'))[:80]!r}") from None
        pairs = np.array([_one_ruslun(p, g, fold) for p, g in zip(preds, golds)],
                         dtype=np.float64).reshape(-1, 2)
        out[intent_name], out[f1_name] = pairs[:, 0].copy(), pairs[:, 1].copy()
    return out


def slot_f1_scores(predictions: Sequence[str], references: Sequence[str | dict], *,
                   filtered: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-example (intent exact match, slot F1) for ruSLUn: the official pair of
    `ruslun_scores`.

    >>> gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}]}"
    >>> em, f1 = slot_f1_scores(['```json\\n{"intent": "ALARM_SET", "slots": []}\\n```'], [gold])
    >>> em.tolist(), f1.tolist()
    ([1.0], [0.0])
    """
    scores = ruslun_scores(predictions, references, filtered=filtered)
    return scores["intent_exact_match"], scores["slot_f1"]
