"""The MERA submission ZIP (docs/official-protocol.md, "Submission"): one
<ClassName>.json per task."""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import get_task

PairsOrMap = Mapping[int, str] | Iterable[tuple[int, str]]


def _pairs(answers: PairsOrMap) -> list[tuple[int, str]]:
    return list(answers.items()) if isinstance(answers, Mapping) else list(answers)


def _preview(ids) -> str:
    ids = sorted(ids)
    shown = ", ".join(map(str, ids[:20]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > 20 else "")


def check_answers(
    task_key: str, pairs: list[tuple[int, str]], expected: Iterable[int] | None
) -> list[str]:
    """Every expected id answered exactly once, with a string; the problems, if any."""
    problems = []
    counts = Counter(i for i, _ in pairs)
    duplicates = [i for i, n in counts.items() if n > 1]
    if duplicates:
        problems.append(f"{task_key}: duplicate answers for ids {_preview(duplicates)}")
    not_text = [i for i, out in pairs if not isinstance(out, str)]
    if not_text:
        problems.append(f"{task_key}: answers that are not strings for ids {_preview(not_text)}")
    if expected is not None:
        expected = list(expected)
        missing = set(expected) - set(counts)
        extra = set(counts) - set(expected)
        if missing:
            problems.append(f"{task_key}: no answer for test ids {_preview(missing)}")
        if extra:
            problems.append(f"{task_key}: answers for ids not in the test split {_preview(extra)}")
    return problems


def task_payload(pairs: list[tuple[int, str]]) -> dict:
    return {
        "data": {
            "test": [
                {"outputs": out, "meta": {"id": int(i)}}
                for i, out in sorted(pairs, key=lambda p: p[0])
            ]
        }
    }


def _zip_bytes(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def submission_zip(
    tasks: list[tuple[TaskSpec, PairsOrMap, Iterable[int] | None]],
    logs: Mapping[str, bytes] | None = None,
) -> bytes:
    """The ZIP, after checking every task's answers against its test ids.

    ``tasks``: (task declaration, answers, expected ids) per task; the answers {id:
    output} or [(id, output), ...], already filtered as the task declares
    (``ExampleResult.submitted``); the expected ids (the test split's) are checked when
    given. ``logs``: file name -> the sample log, packed as ``logs_public.zip`` the way
    the official packer adds its logs (no media)."""
    problems, files = [], {}
    for task, task_answers, expected in tasks:
        pairs = _pairs(task_answers)
        problems += check_answers(task.key, pairs, expected)
        files[f"{task.class_name}.json"] = json.dumps(
            task_payload(pairs), ensure_ascii=False, indent=1
        ).encode("utf-8")
    if problems:
        raise MeraError("the submission was not written:\n  - " + "\n  - ".join(problems))
    if logs:
        files["logs_public.zip"] = _zip_bytes(logs)
    return _zip_bytes(files)


def submission_ids(task: TaskSpec | str, ids: Iterable[int]) -> dict[int, int]:
    """Example id -> the id the official packer writes for it: the id itself, except for
    a dialogue task (ruTiE), whose process_docs drops meta.id so that the packer rebuilds
    it from the position: question_id + 500 * dialog_id + 11. ``task``: its declaration
    (or its key)."""
    ids = list(ids)
    spec = (get_task(task) if isinstance(task, str) else task).dialogue
    if spec is None or not ids:
        return {i: i for i in ids}
    first = min(ids)
    return {i: spec.submission_id(*spec.position(i, first)) for i in ids}


def packed(task: TaskSpec, answers: Mapping[int, str], ids: Iterable[int]):
    """(answers, expected ids) keyed by the packer's ids (:func:`submission_ids`)."""
    to_sub = submission_ids(task, ids)
    return {to_sub[i]: text for i, text in answers.items()}, sorted(to_sub.values())


def read_submission(path: str | Path) -> dict[str, dict[int, str]]:
    """Class name -> {id: output}, read back from a submission ZIP."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if "/" in name or not name.endswith(".json"):
                continue
            records = json_read.loads(zf.read(name), f"{path}: {name}")["data"]["test"]
            out[name[:-5]] = {r["meta"]["id"]: r["outputs"] for r in records}
    return out
