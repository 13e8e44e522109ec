"""The MERA submission ZIP (SPEC.md section 4): one <ClassName>.json per task."""
from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping

from .errors import MeraError
from .tasks import get_task

PairsOrMap = Mapping[int, str] | Iterable[tuple[int, str]]


def _pairs(answers: PairsOrMap) -> list[tuple[int, str]]:
    return list(answers.items()) if isinstance(answers, Mapping) else list(answers)


def _preview(ids) -> str:
    ids = sorted(ids)
    shown = ", ".join(map(str, ids[:20]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > 20 else "")


def check_answers(task_key: str, pairs: list[tuple[int, str]],
                  expected: Iterable[int] | None) -> list[str]:
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
    return {"data": {"test": [{"outputs": out, "meta": {"id": int(i)}}
                              for i, out in sorted(pairs, key=lambda p: p[0])]}}


def write_submission(path: str | Path, answers: Mapping[str, PairsOrMap],
                     expected_ids: Mapping[str, Iterable[int]] | None = None,
                     extra_files: Mapping[str, str | Path] | None = None) -> Path:
    """Write the ZIP after checking every task's answers against its test ids.

    ``answers``: task key -> {id: output} or [(id, output), ...]; ``expected_ids``: task
    key -> the test split's ids (checked when given); ``extra_files``: name in the ZIP ->
    a file to add beside the task files (sample logs; never media).
    """
    problems, payloads = [], {}
    for key, task_answers in answers.items():
        task = get_task(key)
        pairs = _pairs(task_answers)
        problems += check_answers(task.key, pairs, (expected_ids or {}).get(key))
        payloads[f"{task.class_name}.json"] = task_payload(pairs)
    if problems:
        raise MeraError("the submission was not written:\n  - " + "\n  - ".join(problems))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in payloads.items():
            zf.writestr(name, json.dumps(payload, ensure_ascii=False, indent=1))
        for name, file in (extra_files or {}).items():
            zf.write(file, arcname=name)
    partial.replace(path)
    return path


def read_submission(path: str | Path) -> dict[str, dict[int, str]]:
    """Class name -> {id: output}, read back from a submission ZIP."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if "/" in name or not name.endswith(".json"):
                continue
            records = json.loads(zf.read(name))["data"]["test"]
            out[name[:-5]] = {r["meta"]["id"]: r["outputs"] for r in records}
    return out
