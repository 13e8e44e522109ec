"""Read predictions made elsewhere: this project's sample log, a plain JSONL of
{id, prediction}, or lm-evaluation-harness `samples_<task>_*.jsonl` logs."""

from __future__ import annotations

import re
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import InputFileError, check_regular, files_in

# Keys that hold the model's answer, in the order they are tried.
ANSWER_KEYS = ("prediction", "generation", "raw_generation", "output", "outputs")


def _mapping(value, where: str, field: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MeraError(f"{where}, field {field}: expected an object, got {type(value).__name__}")
    return value


# lm-eval's doc_id is the line's 0-based position in the split the harness read, not an
# example id: ``positions`` maps (DOC_POSITION, doc_id) to an id only where that order is
# known (score against the official copy the harness reads).
DOC_POSITION = "doc_id"


def _harness_id(meta: dict, record: dict, where: str, positions: dict | None):
    """The example id of an lm-evaluation-harness line: meta.id; where ruTiE's
    process_docs nulled it, the example at meta's (dialog_id, question_id) in
    ``positions``, else the official packer's rule (question_id + 500 * dialog_id + 11);
    without a meta.id at all, the example at the doc_id's position, where it is known."""
    if meta.get("id") is not None:
        return meta["id"]
    if "dialog_id" not in meta:
        place = (DOC_POSITION, record["doc_id"])
        if positions is None or place not in positions:
            raise MeraError(
                f"{where}: the line's doc carries no meta.id, and lm-eval's doc_id "
                "is a 0-based position in the split the harness read, not an "
                "example id; it is matched by position only against the official "
                "Hub copy (leave --data out), whose order the harness read"
            )
        return positions[place]
    place = (meta.get("dialog_id"), meta.get("question_id"))
    if not all(isinstance(v, int) for v in place):
        raise MeraError(f"{where}: meta.id is null and dialog_id/question_id are not integers")
    if positions is None:
        from mera_multi_hf.tasks.spec import DialogueSpec

        return DialogueSpec().submission_id(*place)
    if place not in positions:
        raise MeraError(
            f"{where}: dialog_id={place[0]}, question_id={place[1]} is no "
            f"position of the task's split (positions come from meta.id)"
        )
    return positions[place]


def _first(value):
    """The first string of lm-eval's (nested) response lists; None for any other shape."""
    while isinstance(value, list):  # resps is a list of lists of strings
        value = value[0] if value else None
    return value if isinstance(value, str) else None


def _answer_of(record: dict, where: str, positions: dict | None = None) -> tuple[int, str]:
    if "doc_id" in record and ("resps" in record or "filtered_resps" in record):
        # lm-evaluation-harness: the doc carries the MERA meta.id; filtered answers first
        doc = _mapping(record.get("doc"), where, "doc")
        example_id = _harness_id(
            _mapping(doc.get("meta"), where, "doc.meta"), record, where, positions
        )
        answer = _first(record.get("filtered_resps"))
        if answer is None:
            answer = _first(record.get("resps"))
    else:
        example_id = record.get("id", _mapping(record.get("meta"), where, "meta").get("id"))
        answer = next((record[k] for k in ANSWER_KEYS if k in record), None)
    if not isinstance(example_id, int) or isinstance(example_id, bool):
        raise MeraError(
            f'{where}: no integer example id (expected "id" or "meta.id"; an '
            'lm-eval line is read with its "doc" and "resps")'
        )
    if not isinstance(answer, str):
        raise MeraError(
            f"{where}, id={example_id}: no answer text (expected one of "
            f"{', '.join(ANSWER_KEYS)}, or lm-eval's resps)"
        )
    return example_id, answer


def prediction_files(path: str | Path) -> list[Path]:
    """The predictions file, or the logs in a folder of them; each one a regular file (a
    FIFO or a link loop, given or inside the folder, is refused in one line)."""
    path = Path(path)
    if path.is_dir():
        files = files_in(path, "samples_*.jsonl") or files_in(path, "*.jsonl")
        if not files:
            raise MeraError(f"no .jsonl files in {path}")
        return files
    try:
        check_regular(path)
    except InputFileError as err:
        raise MeraError(f"predictions file {err}") from None
    return [path]


def _check_harness_file(file: Path, task_key: str | None) -> None:
    """lm-evaluation-harness names its logs samples_<task>_<date>.jsonl: a log of
    another task is refused rather than scored as the one asked for."""
    match = re.fullmatch(r"samples_(.+)_\d{4}-\d{2}-\d{2}T[\d.:-]+\.jsonl?", file.name)
    if not match or not task_key:
        return
    from mera_multi_hf.tasks.table import get_task

    logged, names = match.group(1), get_task(task_key).harness_names
    if not any(logged == n or logged.startswith(n + "_") for n in names):
        raise MeraError(
            f"{file}: an lm-evaluation-harness log of task {logged!r}, not of "
            f"{task_key} (expected samples_{names[0]}_<date>.jsonl)"
        )


class Predictions(dict):
    """id -> answer, and ``replaced``: id -> how many lone surrogates (no UTF-8 writer
    takes them) its answer held, each replaced by U+FFFD as the answer was read."""

    def __init__(self):
        super().__init__()
        self.replaced: dict[int, int] = {}


def task_lines(path: str | Path, task_key: str | None = None, split: str | None = None):
    """(file, "file:line", record) for every line of the predictions files that belongs
    to the task and split ("task", "split" fields; lines of others are skipped)."""
    for file in prediction_files(path):
        _check_harness_file(file, task_key)
        # the one reader: a duplicate key, deep nesting or a huge integer is one line
        for line_no, record in json_read.iter_jsonl(file):
            where = f"{file}:{line_no}"
            if not isinstance(record, dict):
                raise MeraError(f"{where}: expected a JSON object per line")
            if task_key and record.get("task") not in (None, task_key):
                continue
            if split and record.get("split") not in (None, split):
                continue
            yield file, where, record


def read_predictions(
    path: str | Path,
    task_key: str | None = None,
    split: str | None = None,
    positions: dict | None = None,
) -> Predictions:
    """id -> answer (and the lone surrogates replaced, :class:`Predictions`). Lines of
    other tasks or splits ("task", "split" fields) are skipped; an id answered twice stops
    it (docs/scoring.md: duplicate ids stop `score`). ``positions``: (dialog id, question id) ->
    example id, for official ruTiE harness logs whose meta.id is null, and (DOC_POSITION,
    doc_id) -> example id where the harness's order is known."""
    answers = Predictions()
    conflicts, repeated = [], []
    for _, where, record in task_lines(path, task_key, split):
        example_id, answer = _answer_of(record, where, positions)
        answer, replaced = json_read.replace_unencodable(answer)
        if replaced:
            answers.replaced[example_id] = replaced
        if example_id in answers:
            (conflicts if answers[example_id] != answer else repeated).append(example_id)
        answers.setdefault(example_id, answer)
    for ids, how in ((conflicts, "with different answers"), (repeated, "with the same answer")):
        if ids:
            raise MeraError(
                f"{path}: ids answered twice {how}: "
                f"{', '.join(map(str, sorted(set(ids))[:20]))}; give each id once"
            )
    if not answers:
        raise MeraError(f"{path}: no predictions found")
    return answers
