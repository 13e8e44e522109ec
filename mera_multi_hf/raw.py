"""Read and check a dataset folder in the raw MERA layout (SPEC.md section 2).

The reader streams one record at a time and never stops at the first problem: every
problem found goes into ``problems`` so that one run reports them all.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import string
from pathlib import Path
from typing import Callable, Iterator

from PIL import Image

from .errors import MeraError, Problem
from .tasks import TaskSpec

SPLITS = ("test", "shots")
META_FILES = ("raw_dataset_meta.json", "dataset_meta.json")


class FieldError(ValueError):
    """A bad value in one field of a record; the reader turns it into a Problem."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def read_json(path: Path):
    """Parse one JSON file; malformed JSON becomes a FieldError with line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise FieldError("", f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FieldError("", f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}") \
            from None


@functools.lru_cache(maxsize=1024)  # a task has ~10 prompts: parse each once
def placeholders(template: str) -> tuple[str, ...]:
    """The {field} names a str.format template uses (media <slots> are not among them)."""
    try:
        return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name is not None)
    except ValueError as err:
        raise FieldError("instruction", f"not a valid format template: {err}") from None


JPEG_START, JPEG_END = b"\xff\xd8\xff", b"\xff\xd9"
PNG_START, PNG_END = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"


def image_problem(data: bytes) -> str | None:
    """Why these bytes are not a complete image, or None when they are.

    JPEG and PNG (what MERA ships) are checked by their start and end markers, which
    catches truncated files that Pillow would open without complaint, at a fraction of
    the cost of parsing; other formats are opened with Pillow.
    """
    if data.startswith(JPEG_START):
        # a few padding bytes after the end marker are common and harmless
        return None if JPEG_END in data[-32:] else "corrupt image (truncated JPEG: no end marker)"
    if data.startswith(PNG_START):
        return None if data.rstrip(b"\0").endswith(PNG_END) else \
            "corrupt image (truncated PNG: no IEND chunk)"
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.verify()
    except Exception as err:  # PIL raises many types for bad data
        return f"corrupt image ({type(err).__name__}: {err})"
    return None


def group_key(image_bytes: bytes | None, question: str) -> str:
    """Same image bytes + same question => same group (SPEC.md: derived group_id)."""
    digest = hashlib.sha1(image_bytes or b"")
    digest.update(b"\0" + question.encode("utf-8"))
    return digest.hexdigest()


class RawDataset:
    """One raw MERA folder for one task."""

    def __init__(self, task: TaskSpec, root: str | Path,
                 normalize_meta: Callable[[dict], dict] | None = None):
        self.task = task
        self.root = Path(root)
        if not self.root.is_dir():
            raise MeraError(f"raw dataset folder not found: {self.root}")
        self._root_abs = os.path.abspath(self.root)
        self._root_prefix = os.path.join(self._root_abs, "")
        self.normalize_meta = normalize_meta or (lambda meta: dict(meta))
        self.problems: list[Problem] = []
        self.prompts = self._read_prompts()
        self.access = "private"

    def splits(self) -> list[str]:
        found = [s for s in SPLITS if (self.root / f"{s}.json").is_file()]
        if "test" not in found:
            self.problems.append(Problem(str(self.root / "test.json"), None, None,
                                         "missing: a raw MERA folder needs test.json"))
        return found

    def _problem(self, file: str, example_id, field: str | None, message: str) -> None:
        self.problems.append(Problem(file, example_id, field, message))

    def _read_prompts(self) -> list[str] | None:
        for name in META_FILES:
            path = self.root / name
            if path.is_file():
                try:
                    meta = read_json(path)
                except FieldError as err:
                    self._problem(str(path), None, None, err.message)
                    return None
                prompts = meta.get("prompts") if isinstance(meta, dict) else None
                if prompts is None:
                    return None
                if not (isinstance(prompts, list) and all(isinstance(p, str) for p in prompts)):
                    self._problem(str(path), None, "prompts", "must be a list of strings")
                    return None
                return prompts
        return None

    def records(self, split: str) -> Iterator[dict]:
        """Yield the split's valid examples, normalised; record problems as they are found."""
        path = self.root / f"{split}.json"
        file = str(path)
        try:
            doc = read_json(path)
        except FieldError as err:
            self._problem(file, None, None, err.message)
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
            self._problem(file, None, "data", 'expected {"data": [record, ...]}')
            return
        if split == "test":
            self.access = doc.get("access", "private")
        has_answers = split != "test" or self.access == "public"
        seen_ids: dict[int, int] = {}
        first_of_group: dict[str, int] = {}
        for position, record in enumerate(doc["data"]):
            example = self._check_record(file, position, record, has_answers, seen_ids)
            if example is None:
                continue
            meta = example["meta"]
            if self.task.has_groups and meta.get("group_id") is None:
                media = example["inputs"].get(self.task.media_fields[0]) or {}
                key = group_key(media.get("bytes"), example["inputs"].get("question", ""))
                meta["group_id"] = first_of_group.setdefault(key, meta["id"])
            yield example

    def _check_record(self, file, position, record, has_answers, seen_ids) -> dict | None:
        before = len(self.problems)
        if not isinstance(record, dict):
            self._problem(file, None, None, f"record #{position} is not a JSON object")
            return None
        meta = record.get("meta")
        example_id = meta.get("id") if isinstance(meta, dict) else None
        if not isinstance(example_id, int) or isinstance(example_id, bool):
            self._problem(file, None, "meta.id",
                          f"record #{position}: missing or not an integer ({example_id!r})")
            return None
        if example_id in seen_ids:
            self._problem(file, example_id, "meta.id",
                          f"duplicate id (records #{seen_ids[example_id]} and #{position})")
            return None
        seen_ids[example_id] = position

        def problem(field, message):
            self._problem(file, example_id, field, message)

        for name in ("instruction", "inputs", "outputs"):
            if name not in record:
                problem(name, "missing required field")
        inputs = record.get("inputs")
        if not isinstance(inputs, dict):
            if "inputs" in record:
                problem("inputs", "must be an object")
            return None

        instruction = self._instruction(record.get("instruction"), problem)
        out_inputs: dict = {}
        for name in self.task.text_fields:
            value = inputs.get(name)
            if not isinstance(value, str):
                problem(f"inputs.{name}", "missing required field" if value is None
                        else f"must be a string, got {type(value).__name__}")
            out_inputs[name] = value
        for name in self.task.media_fields:
            out_inputs[name] = self._media(inputs.get(name), f"inputs.{name}",
                                           name in self.task.optional_media, problem)
        if instruction is not None:
            try:
                unknown = [p for p in placeholders(instruction) if p not in self.task.text_fields]
            except FieldError as err:
                problem("instruction", err.message)
            else:
                for name in unknown:
                    problem("instruction", f"placeholder {{{name}}} is not an input field "
                            f"(text fields: {', '.join(self.task.text_fields)})")

        outputs = self._outputs(record.get("outputs"), has_answers, problem)
        try:
            out_meta = self.normalize_meta(meta)
        except FieldError as err:
            problem(err.field, err.message)
            out_meta = None
        if len(self.problems) > before:
            return None
        return {"instruction": instruction, "inputs": out_inputs, "outputs": outputs,
                "meta": out_meta}

    def _instruction(self, value, problem) -> str | None:
        if isinstance(value, bool):
            value = None
        if isinstance(value, int):
            if self.prompts is None:
                problem("instruction", "is a prompt index but the folder has no prompt list "
                        f"({' or '.join(META_FILES)} with \"prompts\")")
                return None
            if not 0 <= value < len(self.prompts):
                problem("instruction", f"prompt index {value} out of range "
                        f"(the prompt list has {len(self.prompts)} prompts)")
                return None
            return self.prompts[value]
        if isinstance(value, str) and value.strip():
            return value
        if value is not None:
            problem("instruction", "must be a non-empty string or a prompt index")
        return None

    def _media(self, value, field, optional, problem) -> dict | None:
        if value in (None, "") and optional:
            return None
        if not isinstance(value, str) or not value:
            problem(field, "missing media path")
            return None
        # A lexical check (no symlink resolution): fast, and it catches "../" and absolute paths.
        path = os.path.normpath(os.path.join(self._root_abs, value))
        if not path.startswith(self._root_prefix):
            problem(field, f"media path {value!r} escapes the dataset folder")
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            problem(field, f"missing media file {value!r}")
            return None
        if self.task.modality == "image":
            why = image_problem(data)
            if why:
                problem(field, f"{value!r}: {why}")
                return None
        return {"bytes": data, "path": os.path.basename(path)}

    def _outputs(self, value, has_answers, problem):
        if self.task.answer_kind == "free" and isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                problem("outputs", "a list of answers must hold strings only")
            return json.dumps(value, ensure_ascii=False)
        if not isinstance(value, str):
            if value is not None:
                problem("outputs", f"must be a string, got {type(value).__name__}")
            return value
        if self.task.answer_kind == "letter":
            if value == "" and not has_answers:
                return value
            if value not in self.task.choices:
                what = "split has answers" if has_answers else "answer, when given,"
                problem("outputs", f"{value!r} is not one of {', '.join(self.task.choices)} "
                        f"(this {what} must be a letter)")
        elif has_answers and not value.strip():
            problem("outputs", "empty gold answer in a split that has answers")
        return value
