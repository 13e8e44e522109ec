"""Read predictions made elsewhere: this project's sample log, a plain JSONL of
{id, prediction}, or lm-evaluation-harness `samples_<task>_*.jsonl` logs."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import MeraError
from .json_doubts import unencodable

# Keys that hold the model's answer, in the order they are tried.
ANSWER_KEYS = ("prediction", "generation", "raw_generation", "output", "outputs")


def _mapping(value, where: str, field: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MeraError(f"{where}, field {field}: expected an object, got {type(value).__name__}")
    return value


def _answer_of(record: dict, where: str) -> tuple[int, str]:
    if "doc_id" in record and ("resps" in record or "filtered_resps" in record):
        # lm-evaluation-harness: the doc carries the MERA meta.id; filtered answers first
        doc = _mapping(record.get("doc"), where, "doc")
        example_id = _mapping(doc.get("meta"), where, "doc.meta").get("id", record["doc_id"])
        answer = (record.get("filtered_resps") or [None])[0]
        if answer is None:
            answer = (record.get("resps") or [[None]])[0]
        while isinstance(answer, list):  # resps is a list of lists of strings
            answer = answer[0] if answer else None
    else:
        example_id = record.get("id", _mapping(record.get("meta"), where, "meta").get("id"))
        answer = next((record[k] for k in ANSWER_KEYS if k in record), None)
    if not isinstance(example_id, int) or isinstance(example_id, bool):
        raise MeraError(f"{where}: no integer example id (expected \"id\", \"meta.id\" "
                        "or lm-eval's \"doc_id\")")
    if not isinstance(answer, str):
        raise MeraError(f"{where}, id={example_id}: no answer text (expected one of "
                        f"{', '.join(ANSWER_KEYS)}, or lm-eval's resps)")
    why = unencodable(answer)
    if why:  # it would stop the submission's UTF-8 writer later, with a traceback
        raise MeraError(f"{where}, id={example_id}, field prediction: {why}")
    return example_id, answer


def _lines(fh, file: Path):
    try:
        yield from fh
    except UnicodeDecodeError as err:
        raise MeraError(f"{file}: not UTF-8 text (byte {err.start} of a line: "
                        f"{err.reason})") from None


def prediction_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("samples_*.jsonl")) or sorted(path.glob("*.jsonl"))
        if not files:
            raise MeraError(f"no .jsonl files in {path}")
        return files
    if not path.is_file():
        raise MeraError(f"predictions file not found: {path}")
    return [path]


def _check_harness_file(file: Path, task_key: str | None) -> None:
    """lm-evaluation-harness names its logs samples_<task>_<date>.jsonl: a log of
    another task is refused rather than scored as the one asked for."""
    match = re.fullmatch(r"samples_(.+)_\d{4}-\d{2}-\d{2}T[\d.:-]+\.jsonl?", file.name)
    if not match or not task_key:
        return
    from .tasks import get_task

    logged, names = match.group(1), get_task(task_key).harness_names
    if not any(logged == n or logged.startswith(n + "_") for n in names):
        raise MeraError(f"{file}: an lm-evaluation-harness log of task {logged!r}, not of "
                        f"{task_key} (expected samples_{names[0]}_<date>.jsonl)")


def read_predictions(path: str | Path, task_key: str | None = None,
                     split: str | None = None) -> dict[int, str]:
    """id -> answer. Lines of other tasks or splits ("task", "split" fields) are skipped;
    an id answered twice with different texts is an error."""
    answers: dict[int, str] = {}
    conflicts = []
    for file in prediction_files(path):
        _check_harness_file(file, task_key)
        with open(file, encoding="utf-8", errors="strict") as fh:
            for line_no, line in enumerate(_lines(fh, file), 1):
                if not line.strip():
                    continue
                where = f"{file}:{line_no}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise MeraError(f"{where}: not a JSON line ({err.msg}, column {err.colno})") \
                        from None
                if not isinstance(record, dict):
                    raise MeraError(f"{where}: expected a JSON object per line")
                if task_key and record.get("task") not in (None, task_key):
                    continue
                if split and record.get("split") not in (None, split):
                    continue
                example_id, answer = _answer_of(record, where)
                if answers.setdefault(example_id, answer) != answer:
                    conflicts.append(example_id)
    if conflicts:
        raise MeraError(f"{path}: ids answered twice with different answers: "
                        f"{', '.join(map(str, sorted(set(conflicts))[:20]))}")
    if not answers:
        raise MeraError(f"{path}: no predictions found")
    return answers
