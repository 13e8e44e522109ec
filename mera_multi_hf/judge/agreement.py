"""How well a judge agrees with human labels: accuracy, Cohen's kappa, confusion matrix.

Input: a JSONL file, one human-labelled answer per line:

    {"prompt": "...", "gold": "..." or [...], "prediction": "...", "label": 0 or 1}

The judge rates every line exactly as it does when scoring (docs/official-protocol.md,
"The judge inputs": the "ОТВЕТ" variant, token windows, max over inputs), so the report
measures the judge as it is used.

Run:  mera-multi judge agreement --data labelled.jsonl --model PATH [--out report.json]
  or: mera-multi judge agreement --data labelled.jsonl --url http://127.0.0.1:8000 --tokenizer PATH
"""

from __future__ import annotations

from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import InputFileError, check_regular, open_binary

FIELDS = ("prompt", "gold", "prediction", "label")


def _bad_field(rec: dict) -> str | None:
    """The first problem with one record's fields, naming the field; None when fine."""
    missing = [k for k in FIELDS if k not in rec]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    for key in FIELDS[:3]:
        value = rec[key]
        texts = value if key == "gold" and isinstance(value, list) and value else [value]
        if not all(isinstance(t, str) for t in texts):
            kind = "a string or a non-empty list of strings" if key == "gold" else "a string"
            return f"field {key!r} must be {kind}, got {str(value)[:60]!r}"
        if any(_has_surrogates(t) for t in texts):
            return f"field {key!r} is not valid UTF-8"
    label = rec["label"]
    if not (isinstance(label, bool) or label in (0, 1)):
        return f"field 'label' must be 0 or 1 (or true/false), got {label!r}"
    return None


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _parse_line(raw: bytes):
    """(record, problem) of one line; bytes that are not UTF-8 survive as surrogates so
    that the problem can name the field that holds them."""
    text = raw.decode("utf-8", "surrogateescape")
    try:
        rec = json_read.loads(text, "")
    except json_read.JsonReadError as err:
        if _has_surrogates(text):
            return None, "not valid UTF-8"
        return None, f"not JSON ({err.reason})"
    if not isinstance(rec, dict):
        return None, "expected a JSON object"
    problem = _bad_field(rec)
    if problem is None:
        rec["label"] = int(rec["label"])
    return rec, problem


def read_labelled(path: str | Path) -> list[dict]:
    """The records of a labelled JSONL file; any bad line is a one-line MeraError naming
    the file, the line and the field (and how many more lines are bad)."""
    path = Path(path)
    try:
        check_regular(path)
    except InputFileError as err:
        raise MeraError(
            f"labelled file {err}: write one JSON object per line "
            f"with the fields {', '.join(FIELDS)}"
        ) from None
    records, problems = [], []
    with open_binary(path) as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            rec, problem = _parse_line(raw)
            if problem:
                problems.append(f"{path}: line {n}: {problem}")
            else:
                records.append(rec)
    if problems:
        more = f" (and {len(problems) - 1} more bad line(s))" if len(problems) > 1 else ""
        raise MeraError(f"{problems[0]}{more}; each line needs {', '.join(FIELDS)}")
    if not records:
        raise MeraError(f"{path} holds no labelled records")
    return records


def agreement_report(human: list[int], judge: list[int]) -> dict:
    """Accuracy, Cohen's kappa and the confusion matrix of two 0/1 raters.

    Kappa is None when it is undefined (both raters gave one and the same label to all).

    >>> r = agreement_report([1, 1, 0, 0], [1, 0, 0, 0])
    >>> r["accuracy"], round(r["cohen_kappa"], 3), r["confusion"]
    (0.75, 0.5, {'tn': 2, 'fp': 0, 'fn': 1, 'tp': 1})
    """
    if len(human) != len(judge) or not human:
        raise MeraError(
            f"need equally many human and judge labels, got {len(human)} and {len(judge)}"
        )
    n = len(human)
    tp = sum(1 for h, j in zip(human, judge) if h == 1 and j == 1)
    tn = sum(1 for h, j in zip(human, judge) if h == 0 and j == 0)
    fp = sum(1 for h, j in zip(human, judge) if h == 0 and j == 1)
    fn = n - tp - tn - fp
    observed = (tp + tn) / n
    human_pos, judge_pos = (tp + fn) / n, (tp + fp) / n
    # Chance agreement: both say 1 by chance, or both say 0 by chance.
    expected = human_pos * judge_pos + (1 - human_pos) * (1 - judge_pos)
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return {
        "n": n,
        "accuracy": observed,
        "cohen_kappa": kappa,
        "confusion": {"tn": tn, "fp": fp, "fn": fn, "tp": tp},
        "matrix": [[tn, fp], [fn, tp]],  # rows: human 0/1, columns: judge 0/1
        "precision": precision,
        "recall": recall,
        "human_positive_rate": human_pos,
        "judge_positive_rate": judge_pos,
    }


def judge_agreement(records: list[dict], judge) -> dict:
    """Rate every record with `judge` (a mera_multi_hf.judge.judges.Judge) and compare with humans."""
    from mera_multi_hf.judge.judges import judge_scores

    scores = judge_scores(
        judge,
        [r["prediction"] for r in records],
        [r["gold"] for r in records],
        [r["prompt"] for r in records],
    )
    report = agreement_report([r["label"] for r in records], [int(s) for s in scores])
    report["judge"] = judge.describe()
    return report


def format_report(report: dict) -> str:
    c = report["confusion"]
    kappa = "undefined" if report["cohen_kappa"] is None else f"{report['cohen_kappa']:.4f}"
    return "\n".join(
        [
            f"examples:       {report['n']}",
            f"accuracy:       {report['accuracy']:.4f}",
            f"Cohen's kappa:  {kappa}",
            "confusion (rows human, columns judge):",
            "              judge 0  judge 1",
            f"  human 0   {c['tn']:8d} {c['fp']:8d}",
            f"  human 1   {c['fn']:8d} {c['tp']:8d}",
        ]
    )
