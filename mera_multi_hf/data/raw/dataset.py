"""Read and check a dataset folder in the raw MERA layout (docs/official-protocol.md,
"Raw data layout and group ids").

The reader streams one record at a time and never stops at the first problem: every
problem found goes into ``problems`` so that one run reports them all.

Hostile folders are expected: every file is read only when it is a regular file whose
resolved path lies inside the dataset folder (symbolic links leading out, FIFOs and
devices and hard-linked files are refused before anything is opened), under a size
limit; every media file must decode within the limits (media_checks, run in worker
processes); JSON nesting too deep for the parser, repeated keys and unencodable text
(json_doubts) are problems like any other.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import string
from collections.abc import Callable, Iterator
from pathlib import Path

from mera_multi_hf.core.errors import MeraError, Problem
from mera_multi_hf.core.json_doubts import doubts
from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.data.media_checks import MEDIA_CHECKS, check_all
from mera_multi_hf.data.raw.card import card_meta_problems
from mera_multi_hf.data.raw.files import (
    MAX_JSON_BYTES,
    FieldError,
    forget_resolved_paths,
    read_inside,
)
from mera_multi_hf.data.raw.groups import GroupIds
from mera_multi_hf.data.raw.json_files import parse_json, parse_json_doubtful
from mera_multi_hf.data.raw.layout import (
    META_FILES,
    README_FILES,
    SPLITS,
    RawPart,
    domain_folders,
    record_domain,
)
from mera_multi_hf.data.raw.metadata import compute_field, exclusion_paths
from mera_multi_hf.data.raw.records import RecordChecks
from mera_multi_hf.tasks.spec import TaskSpec


class RawDataset(RecordChecks):
    """One raw MERA folder for one task: the single-folder form, or for a domain-split task
    the official per-domain layout, one folder per domain config (records get the folder's
    name as ``meta.domain``; a domain folder without its own metadata file uses the top one;
    a media path is looked up in the domain folder first, then at the top).

    ``include_private_answers``: keep the gold answers of a private test split (an
    internal export, or the local cache that scoring reads); by default they are hidden.
    ``limits``: what media may declare; ``workers``: processes that decode media
    (1: this one).
    """

    def __init__(
        self,
        task: TaskSpec,
        root: str | Path,
        normalize_meta: Callable[[dict], dict] | None = None,
        *,
        limits: Limits | None = None,
        include_private_answers: bool = False,
        workers: int = 1,
    ):
        self.task = task
        self.root = Path(root)
        if not self.root.is_dir():
            raise MeraError(f"raw dataset folder not found: {self.root}")
        forget_resolved_paths()  # folders are resolved afresh for every read
        self.limits, self.workers = limits or DEFAULT_LIMITS, max(1, workers)
        self.split_ids: dict[str, dict[int, str]] = {}  # split -> id -> file (test vs shots)
        self.include_private_answers = include_private_answers
        self.normalize_meta = normalize_meta or (lambda meta: dict(meta))
        self.problems: list[Problem] = []
        self.access, self.access_file = "private", None
        self._notes: list[str] = []  # see notes
        self.counts: dict[str, int] = {}
        self.computed: dict = {}
        # a split read domain by domain is checked as one: its ids, groups and parsed files
        self._split_state: dict[str, tuple[dict, GroupIds]] = {}
        self._docs: dict[str, tuple[dict | None, bool]] = {}
        self._unreachable: dict[str, list] = {}
        self._found_splits: list[str] | None = None
        top = self._part(None, "")
        self.parts = [self._part(d, f"{d}/", top) for d in domain_folders(task, self.root)] or [top]
        card = top if top.own_meta else next((p for p in self.parts if p.own_meta), top)
        self.meta_file, self.meta = card.meta_file, card.meta
        self.readme = {
            lang: self._read_readme(card.prefix + name) for lang, name in README_FILES.items()
        }

    @property
    def private(self) -> bool:
        """Private unless test.json says "public" (a MERA_private licence always is)."""
        return self.access != "public" or self.meta.get("license") == "MERA_private"

    @property
    def hidden_answer(self):
        """What a hidden gold answer is: "" (a list task: no answers, [])."""
        return [] if self.task.gold_list else ""

    def card_meta(self) -> dict:
        """The metadata with its computed fields filled in (after the test split is read)."""
        return {**self.meta, **self.computed}

    def splits(self) -> list[str]:
        """The splits the folder has (a missing one noted once, however often asked)."""
        if self._found_splits is None:
            self._found_splits = self._find_splits()
        return self._found_splits

    def _find_splits(self) -> list[str]:
        found = []
        for split in SPLITS:
            have = [p for p in self.parts if os.path.lexists(self.root / f"{p.prefix}{split}.json")]
            found += [split] if have else []
            for part in self.parts if have or split == "test" else ():
                if part not in have:
                    self._problem(
                        str(self.root / f"{part.prefix}{split}.json"),
                        None,
                        None,
                        self._missing(split),
                    )
        return found

    def _missing(self, split: str) -> str:
        if self.parts[0].domain is not None:
            return f"missing: every domain folder needs {split}.json" + (
                " (the other domain folders have one)" if split != "test" else ""
            )
        folders = ", ".join(f"{d}/test.json" for d in self.task.domains)
        hint = f" (or one folder per domain: {folders})" if folders else ""
        return "missing: a raw MERA folder needs test.json" + hint

    def _problem(self, file: str, example_id, field: str | None, message: str) -> None:
        self.problems.append(Problem(file, example_id, field, message))

    def _load(self, relative: str):
        return parse_json(read_inside(self.root, relative, MAX_JSON_BYTES))

    def _part(self, domain: str | None, prefix: str, fallback: RawPart | None = None) -> RawPart:
        """A folder's part: its own metadata file, else (a domain folder) the top one's."""
        meta_file, meta = self._read_meta(prefix)
        if meta_file is None and fallback is not None:
            return dataclasses.replace(fallback, domain=domain, prefix=prefix)
        own = meta_file is not None
        meta_file = meta_file or str(self.root / f"{prefix}{META_FILES[0]}")
        return RawPart(
            domain,
            prefix,
            meta_file,
            meta,
            self._prompt_list(meta, meta_file),
            self._exclusions(meta, meta_file),
            own,
        )

    def _read_meta(self, prefix: str) -> tuple[str | None, dict]:
        for name in META_FILES:
            if not os.path.lexists(self.root / f"{prefix}{name}"):
                continue
            meta_file = str(self.root / f"{prefix}{name}")
            try:
                meta = self._load(prefix + name)
            except FieldError as err:
                self._problem(meta_file, None, err.field or None, err.message)
                return meta_file, {}
            if not isinstance(meta, dict):
                self._problem(meta_file, None, None, "must be a JSON object")
                return meta_file, {}
            for field, message in card_meta_problems(meta):
                self._problem(meta_file, None, field, message)
            return meta_file, meta
        return None, {}

    def _prompt_list(self, meta: dict, meta_file: str) -> list[str] | None:
        prompts = meta.get("prompts")
        if isinstance(prompts, list) and all(isinstance(p, str) for p in prompts):
            return prompts  # documented form: records index into it
        if prompts is not None and not isinstance(prompts, dict):  # a dict: card material only
            self._problem(
                meta_file,
                None,
                "prompts",
                "must be a list of prompt strings "
                "(documented form) or an object of prompt blocks (published form)",
            )
        return None

    def _exclusions(self, meta: dict, meta_file: str) -> list[tuple[str, ...]]:
        try:
            return exclusion_paths(meta.get("exclude_fields"))
        except FieldError as err:
            self._problem(meta_file, None, err.field, err.message)
            return []

    def _read_readme(self, relative: str) -> dict:
        if not os.path.lexists(self.root / relative):
            return {}
        try:
            sections = self._load(relative)
        except FieldError as err:
            self._problem(str(self.root / relative), None, err.field or None, err.message)
            return {}
        if not isinstance(sections, dict) or not all(isinstance(v, str) for v in sections.values()):
            self._problem(
                str(self.root / relative),
                None,
                None,
                'must be one JSON object {"Section title": "Markdown text", ...}',
            )
            return {}
        return sections

    def _start_test(self, file: str, doc: dict) -> None:
        """Read the test split's access level and compute the metadata's computed fields
        (over every domain folder's test split: sizes add up, distinct values merge)."""
        first, access = self.access_file is None, doc.get("access")
        if access is None:  # the task declares whether its answers are published
            access = "public" if self.task.public else "private"
            self._notes.append(
                f'{file}: no "access" key; taken as {access!r}, as the task '
                f"{self.task.class_name} is declared (see docs/raw-format.md)"
            )
        if access not in ("private", "public"):
            self._problem(file, None, "access", f'must be "private" or "public", got {access!r}')
            access = "private"
        if not first and access != self.access:
            self._problem(
                file,
                None,
                "access",
                f"{access!r} here but {self.access!r} in "
                f"{self.access_file}: every domain folder must say the same",
            )
            access = "private"
        self.access, self.access_file = access, self.access_file or file
        for field in ("dataset_size", "synt_source_models"):
            if isinstance(self.meta.get(field), str):
                try:
                    value = compute_field(field, self.meta[field], doc["data"])
                except FieldError as err:
                    if first:
                        self._problem(self.meta_file, None, err.field, err.message)
                    continue
                old = self.computed.get(field)
                if old is not None:  # another domain folder's value
                    value = old + value if isinstance(value, int) else sorted({*old, *value})
                self.computed[field] = value

    def _split_doc(self, file: str, relative: str, split: str) -> tuple[dict | None, bool]:
        """The split file parsed, and whether its records must be walked for doubts: read,
        parsed and checked once, however many domain configs take their records from it."""
        if relative not in self._docs:
            self._docs[relative] = self._parse_split(file, relative, split)
            if split == "test" and self._docs[relative][0] is not None:
                self._start_test(file, self._docs[relative][0])
        return self._docs[relative]

    def _parse_split(self, file: str, relative: str, split: str) -> tuple[dict | None, bool]:
        try:
            doc, doubtful = parse_json_doubtful(read_inside(self.root, relative, MAX_JSON_BYTES))
        except FieldError as err:
            self._problem(file, None, None, err.message)
            return None, False
        for field, message in doubts(doc, skip="data") if doubtful else ():
            self._problem(file, None, field, message)
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
            self._problem(file, None, "data", 'expected {"data": [record, ...]}')
            return None, False
        if not doc["data"]:
            self._problem(
                file, None, "data", f"the {split} split is empty: it needs at least one example"
            )
            return None, False
        return doc, doubtful

    def records(self, split: str, domain: str | None = None) -> Iterator[dict]:
        """Yield the split's valid examples, normalised, folder by folder; record problems
        as they are found. Ids are unique across the whole split. ``domain``: only that
        domain config's records (its folder, or the records of a single-folder file that
        name it, picked before any media is read; records naming no known domain go with
        the first domain, whose checks report them). Reading a split domain by domain
        checks it as one: ids and group ids are shared and each file is read once."""
        if split not in self._split_state:
            self._split_state[split] = ({}, GroupIds(self.task.group_by))
            self.counts[split], self.split_ids[split] = 0, {}
        seen_ids, groups = self._split_state[split]
        for part in self.parts:
            if domain is not None and part.domain not in (None, domain):
                continue
            if os.path.lexists(self.root / f"{part.prefix}{split}.json"):
                yield from self._part_records(part, split, seen_ids, groups, domain)

    def _in_domain(self, part: RawPart, record, domain: str | None) -> bool:
        if domain is None or part.domain is not None:
            return True
        named = record_domain(
            record.get("meta") if isinstance(record, dict) else None, self.task.domains
        )
        return named == domain or (named is None and domain == self.task.domains[0])

    def _part_records(
        self, part: RawPart, split: str, seen_ids: dict, groups: GroupIds, domain: str | None
    ):
        relative = f"{part.prefix}{split}.json"
        file = str(self.root / relative)
        doc, doubtful = self._split_doc(file, relative, split)
        if doc is None:
            return
        blank = split == "test" and self.private and not self.include_private_answers
        has_answers = split != "test" or not self.private
        checked = (
            self._check_record(part, file, position, record, has_answers, seen_ids, doubtful)
            for position, record in enumerate(doc["data"])
            if self._in_domain(part, record, domain)
        )
        for (example, problem, media), found in check_all(
            filter(None, checked),
            self._media_checks,
            self.workers,
            size=lambda item: sum(len(data) for _, _, data in item[2]),
        ):
            for (field, value, _), why in zip(media, found):
                if why:
                    problem(field, f"{value!r}: {why}")
            if any(found):
                continue
            space = self.answer_space
            if space and example["outputs"] and example["outputs"] not in space:
                self._unreachable.setdefault(file, []).append(
                    (example["meta"]["id"], example["outputs"])
                )
            meta = example["meta"]
            self.split_ids[split][meta["id"]] = file
            if self.task.has_groups:
                groups.assign(meta, example["inputs"])
            if blank:
                example["outputs"] = self.hidden_answer  # private answers never leave the folder
            self.counts[split] += 1
            yield example

    @property
    def notes(self) -> list[str]:
        """What a build says once, after it is clean; never a reason to stop."""
        space = ", ".join(self.answer_space)
        return self._notes + [
            f"{file}: gold answers outside the options {space} the prompt shows can never "
            "be matched: " + ", ".join(f"id {i} ({gold!r})" for i, gold in found[:20])
            for file, found in self._unreachable.items()
        ]

    @property
    def answer_space(self) -> tuple[str, ...]:
        """The letters a letter task's prompt labels its options with (Latin); empty for
        other tasks (no closed answer space)."""
        if self.task.answer_kind != "letter" or self.task.gold_list:
            return ()
        return tuple(c for c in self.task.choices if c in string.ascii_uppercase)

    def _media_checks(self, checked) -> list:
        """The decode checks of one record's media (run in the worker processes)."""
        check = MEDIA_CHECKS[self.task.modality]
        return [functools.partial(check, data, self.limits) for _, _, data in checked[2]]
