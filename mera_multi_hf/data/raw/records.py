"""The checks of one record of a split file: its id, its fields (instruction, text and
media inputs, gold answer, metadata) and its prompt, as a run will fill it. Every
problem is noted (``_problem``); a record with any is left out."""

from __future__ import annotations

import functools
import json
import os

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.json_doubts import doubts
from mera_multi_hf.data.raw.files import MAX_MEDIA_BYTES, FieldError, read_inside
from mera_multi_hf.data.raw.layout import META_FILES, domain_key
from mera_multi_hf.data.raw.metadata import drop_fields
from mera_multi_hf.tasks.prompts import placeholder_problems, render_prompt


def json_gold(value: dict, problem) -> str | None:
    """A JSON-object answer (ruSLUn's documented raw form: intent and slots) as the string
    the official gold parser reads, ``json.loads(outputs.replace("'", '"'))``: JSON with
    single quotes, as the Hub copy stores it. Read back by that rule, it must give the
    object again (an apostrophe inside a value cannot survive the rule)."""
    text = json.dumps(value, ensure_ascii=False).replace('"', "'")
    try:
        same = json.loads(text.replace("'", '"')) == value
    except ValueError:
        same = False
    if not same:
        problem(
            "outputs",
            "the official gold parser (json.loads after replacing ' with \") "
            "cannot read this answer back: a key or value holds an apostrophe",
        )
        return None
    return text


class RecordChecks:
    """The record checks of :class:`~mera_multi_hf.data.raw.RawDataset` (it holds ``task``,
    ``root``, ``problems``, ``split_ids``, ``normalize_meta`` and ``_problem``)."""

    def _record_id(self, file, position, record, seen_ids):
        meta = record.get("meta")
        example_id = meta.get("id") if isinstance(meta, dict) else None
        if not isinstance(meta, dict):
            self._problem(file, None, "meta", f"record #{position}: missing or not an object")
            return None
        if not isinstance(example_id, int) or isinstance(example_id, bool):
            self._problem(
                file,
                None,
                "meta.id",
                f"record #{position}: missing or not an integer ({example_id!r:.80})",
            )
            return None
        if example_id in seen_ids:
            other_file, other = seen_ids[example_id]
            where = "" if other_file == file else f" of {other_file}"
            self._problem(
                file,
                example_id,
                "meta.id",
                f"duplicate id (records #{other}{where} and #{position})",
            )
            return None
        for split, ids in self.split_ids.items():  # this split's ids are in seen_ids too
            if example_id in ids:
                self._problem(
                    file,
                    example_id,
                    "meta.id",
                    f"the same id is in the {split} "
                    f"split ({ids[example_id]}): ids are unique across test and shots",
                )
                return None
        seen_ids[example_id] = (file, position)
        return example_id

    def _check_record(
        self, part, file, position, record, has_answers, seen_ids, doubtful=False
    ) -> tuple | None:
        """(example, problem, media) for a record whose own fields are fine, where media
        lists (field, path, bytes) to decode-check; None (problems noted) otherwise."""
        before = len(self.problems)
        if not isinstance(record, dict):
            self._problem(file, None, None, f"record #{position} is not a JSON object")
            return None
        drop_fields(record, part.exclude)
        example_id = self._record_id(file, position, record, seen_ids)
        if example_id is None:
            return None
        problem = functools.partial(self._problem, file, example_id)
        for field, message in doubts(record) if doubtful else ():
            problem(field, message)
        if len(self.problems) > before:
            return None
        for name in ("instruction", "inputs", "outputs"):
            if name not in record:
                problem(name, "missing required field")
        inputs = record.get("inputs")
        if not isinstance(inputs, dict):
            if "inputs" in record:
                problem("inputs", "must be an object")
            return None
        if part.domain is not None:
            self._set_domain(record["meta"], part.domain, problem)
        media: list = []
        example = {
            "instruction": self._instruction(record.get("instruction"), part.prompts, problem),
            "inputs": self._inputs(inputs, part.prefix, problem, media),
            "outputs": self._outputs(record.get("outputs"), has_answers, problem),
            "meta": self._meta(record["meta"], problem),
        }
        if len(self.problems) == before:
            self._check_render(example, problem)
        return (example, problem, media) if len(self.problems) == before else None

    @staticmethod
    def _set_domain(meta: dict, domain: str, problem) -> None:
        """A record of a domain folder belongs to that domain (one naming another is a problem)."""
        named = meta.get("domain")
        if named is not None and domain_key(named) != domain_key(domain):
            problem("meta.domain", f"{named!r:.80} names another domain than its folder {domain}/")
        meta["domain"] = domain

    def _instruction(self, value, prompts: list[str] | None, problem) -> str | None:
        if isinstance(value, bool):
            value = None
        if isinstance(value, int):
            if prompts is None:
                problem(
                    "instruction",
                    "is a prompt index but the folder has no prompt list "
                    f'({" or ".join(META_FILES)} with "prompts" as a list)',
                )
                return None
            if not 0 <= value < len(prompts):
                problem(
                    "instruction",
                    f"prompt index {value} out of range "
                    f"(the prompt list has {len(prompts)} prompts)",
                )
                return None
            value = prompts[value]
        elif not (isinstance(value, str) and value.strip()):
            if value is not None:
                problem("instruction", "must be a non-empty string or a prompt index")
            return None
        try:  # a task whose prompt rules rewrite braces is checked by rendering alone
            why = (
                []
                if getattr(self.task, "prompt_rules", ())
                else placeholder_problems(value, self.task.text_fields)
            )
        except ValueError as err:
            why = [str(err)]
        for message in why:
            problem("instruction", message)
        return value

    def _inputs(self, inputs: dict, prefix: str, problem, media: list) -> dict:
        out: dict = {}
        for name in self.task.text_fields:
            value = inputs.get(name)
            if value is None and name in self.task.optional_text:
                out[name] = None  # left out: prints "None", as the official doc_to_text does
                continue
            if not isinstance(value, str):
                problem(
                    f"inputs.{name}",
                    "missing required field"
                    if value is None
                    else f"must be a string, got {type(value).__name__}",
                )
            out[name] = value
        for name in self.task.media_fields:
            out[name] = self._media(
                inputs.get(name),
                f"inputs.{name}",
                name in self.task.optional_media,
                prefix,
                problem,
                media,
            )
        return out

    def _media(self, value, field, optional, prefix, problem, media: list) -> dict | None:
        """The file's {"bytes", "path"}, read safely; its decode check joins ``media``."""
        if value in (None, "") and optional:
            return None
        if not isinstance(value, str) or not value:
            problem(
                field,
                "missing media path"
                if value in (None, "")
                else f"must be a path string, got {type(value).__name__}",
            )
            return None
        relative = (
            prefix + value
            if prefix and os.path.lexists(os.path.join(self.root, prefix + value))
            else value
        )
        try:
            data = read_inside(self.root, relative, MAX_MEDIA_BYTES)
        except FieldError as err:
            problem(field, err.message)
            return None
        media.append((field, value, data))
        return {"bytes": data, "path": os.path.basename(value)}

    def _outputs(self, value, has_answers, problem):
        if self.task.gold_list:
            return self._answer_list(value, has_answers, problem)
        if isinstance(value, dict) and self.task.answer_kind == "json":
            value = json_gold(value, problem)
        if not isinstance(value, str):
            if value is not None:
                problem("outputs", f"must be a string, got {type(value).__name__}")
            return None
        if self.task.answer_kind == "letter":
            if value == "" and not has_answers:
                return value
            if value not in self.task.choices:
                what = "split has answers" if has_answers else "answer, when given,"
                problem(
                    "outputs",
                    f"{value!r:.80} is not one of {', '.join(self.task.choices)} "
                    f"(this {what} must be a letter)",
                )
        elif has_answers and not value.strip():
            problem("outputs", "empty gold answer in a split that has answers")
        return value

    @staticmethod
    def _answer_list(value, has_answers, problem) -> list[str] | None:
        """The gold of a list task: a list of acceptable answers stays a list, one answer
        becomes ``[answer]``, no answer ("" or [], a private split) becomes []."""
        if value is None:
            return None
        answers = ([value] if value else []) if isinstance(value, str) else value
        if not isinstance(answers, list):
            problem(
                "outputs",
                f"must be an answer or a list of answers (strings), got {type(value).__name__}",
            )
            return None
        if not all(isinstance(a, str) for a in answers):
            problem("outputs", "a list of answers must hold strings only")
            return None
        if has_answers and not (answers and all(a.strip() for a in answers)):
            problem("outputs", "empty gold answer in a split that has answers")
        return answers

    def _meta(self, meta: dict, problem) -> dict | None:
        try:
            return self.normalize_meta(meta)
        except FieldError as err:
            problem(err.field, err.message)
        except (TypeError, ValueError, AttributeError, KeyError) as err:
            problem("meta", f"unexpected shape ({type(err).__name__}: {err})")
        return None

    def _check_render(self, example: dict, problem) -> None:
        """Fill the template exactly as a run will (prompts.render_prompt)."""
        try:
            render_prompt(self.task, example)
        except MeraError as err:
            problem("instruction", str(err).split("field instruction: ", 1)[-1])
        except Exception as err:  # any other failure of str.format on user data
            problem("instruction", f"cannot fill the template ({type(err).__name__}: {err})")
