"""ruSLUn: intent exact match and slot F1, as multimodal_tasks/ruslun/utils.py."""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .errors import MeraError
from .filters import apply_filters_many
from .metric_inputs import check_strings
from .declarations import RUSLUN_CI_METRICS, RUSLUN_FILTERS, RUSLUN_METRICS


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
        raise MeraError(
            f"references[{index}] is not a JSON object with 'intent' and 'slots' "
            f"(got {str(reference)[:80]!r}); ruSLUn gold answers must parse"
        )
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


def ruslun_scores(
    predictions: Sequence[str],
    references: Sequence[str | dict],
    *,
    filtered: bool = False,
    case_insensitive: bool = False,
) -> dict[str, np.ndarray]:
    """Per-example ruSLUn scores, exactly as the official ``process_results``.

    ``filtered=False``: the predictions are raw generations and the official filters
    (``lowercase``, ``slot_clean``; mera_multi_hf.scoring.filters) are applied here; pass
    ``filtered=True`` when they were applied already (never apply them twice). The gold
    is not lowercased, so a CamelCase gold intent never matches: that is official. With
    ``case_insensitive=True`` the corrected reading is added under ``*_ci`` names.

    >>> gold = "{'intent': 'Alarm_Set', 'slots': [{'time': 'семь утра'}]}"
    >>> s = ruslun_scores(['{"intent": "Alarm_Set", "slots": [{"time": "семь утра"}]}'], [gold],
    ...                   case_insensitive=True)
    >>> {k: v.tolist() for k, v in s.items()}
    {'intent_exact_match': [0.0], 'slot_f1': [1.0], 'intent_exact_match_ci': [1.0], 'slot_f1_ci': [1.0]}
    """
    predictions = check_strings(predictions, "predictions")
    references = list(references)
    if len(predictions) != len(references):
        raise MeraError(
            f"got {len(predictions)} predictions but {len(references)} references: "
            "they must pair up one to one"
        )
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
                raise MeraError(
                    f"references[{i}]: 'slots' must be a list of objects, got "
                    f"{str(gold.get('slots'))[:80]!r}"
                ) from None
        pairs = np.array(
            [_one_ruslun(p, g, fold) for p, g in zip(preds, golds)], dtype=np.float64
        ).reshape(-1, 2)
        out[intent_name], out[f1_name] = pairs[:, 0].copy(), pairs[:, 1].copy()
    return out


def slot_f1_scores(
    predictions: Sequence[str], references: Sequence[str | dict], *, filtered: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per-example (intent exact match, slot F1) for ruSLUn: the official pair of
    `ruslun_scores`.

    >>> gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}]}"
    >>> em, f1 = slot_f1_scores(['```json\\n{"intent": "ALARM_SET", "slots": []}\\n```'], [gold])
    >>> em.tolist(), f1.tolist()
    ([1.0], [0.0])
    """
    scores = ruslun_scores(predictions, references, filtered=filtered)
    return scores["intent_exact_match"], scores["slot_f1"]
