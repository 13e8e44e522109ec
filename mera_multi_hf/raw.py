"""Read and check a dataset folder in the raw MERA layout (docs/official-protocol.md,
"Raw data layout and group ids").

The reader streams one record at a time and never stops at the first problem: every
problem found goes into ``problems`` so that one run reports them all.

Hostile folders are expected: every file is read only when it is a regular file whose
resolved path lies inside the dataset folder (symbolic links leading out, FIFOs and
devices and hard-linked files are refused before anything is opened), under a size
limit; every media file must decode within the limits (media_checks, run on worker
threads); JSON nesting too deep for the parser, repeated keys and unencodable text
(json_doubts) are problems like any other.

Computed metadata fields (``dataset_size``, ``synt_source_models``) may hold one of the
official expression strings. They are recognised by the shape of their syntax tree and
computed here, never evaluated: ``len(DATA)`` (the number of test records) and
``list(set(sample[k1][k2]... for sample in DATA))`` (the sorted distinct values, a list
value counting as its items). Any other expression is a problem in the metadata file.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
import re
import stat
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .errors import MeraError, Problem
from .json_doubts import SURROGATE_ESCAPE, DuplicateKeys, doubts, pairs_hook
from .limits import DEFAULT_LIMITS, Limits
from .media_checks import MEDIA_CHECKS, check_all
from .prompts import render_prompt
from .tasks import TaskSpec

SPLITS = ("test", "shots")
META_FILES = ("raw_dataset_meta.json", "dataset_meta.json")
README_FILES = {"en": "raw_readme_en.json", "ru": "raw_readme_ru.json"}


# What the reader reads at most (hostile or broken folders must not exhaust memory);
# what media may declare (pixels, rates, durations) is in limits.Limits.
MAX_MEDIA_BYTES = 512 * 2**20   # one media file
MAX_JSON_BYTES = 2 * 2**30      # one JSON file


class FieldError(ValueError):
    """A bad value in one field of a record; the reader turns it into a Problem."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


@functools.lru_cache(maxsize=64)
def _root_paths(root: str) -> tuple[str, str]:
    """A dataset folder as written (absolute) and resolved: once per folder, not per file."""
    return os.path.abspath(root), os.path.realpath(root)


@functools.lru_cache(maxsize=1024)
def _real_dir(path: str) -> str:
    """A folder's resolved path, once per folder (RawDataset clears it for each read)."""
    return os.path.realpath(path)


def forget_resolved_paths() -> None:
    _root_paths.cache_clear()
    _real_dir.cache_clear()


def read_inside(root: str | Path, relative: str, limit: int) -> bytes:
    """The bytes of ``relative`` under ``root``, read only if it is safe to.

    Refused (FieldError with field ""): a NUL byte, a path that leaves the folder as
    written or once symbolic links are resolved, anything but a regular file (checked
    with stat before opening, so a FIFO never blocks), a hard-linked file (as symbolic
    links leading out are: its other name may be anywhere), a file over ``limit`` bytes.
    """
    if "\0" in relative:
        raise FieldError("", f"path {relative!r} contains a NUL byte")
    root_abs, root_real = _root_paths(str(root))
    lexical = os.path.normpath(os.path.join(root_abs, relative))
    if not lexical.startswith(os.path.join(root_abs, "")):
        raise FieldError("", f"path {relative!r} escapes the dataset folder")
    try:
        # the file's own link is checked here, its folders once per read (_real_dir)
        link = stat.S_ISLNK(os.lstat(lexical).st_mode)
    except FileNotFoundError:
        raise FieldError("", f"missing file {relative!r}") from None
    except OSError as err:
        raise FieldError("", f"cannot read {relative!r}: {err.strerror}") from None
    real = os.path.realpath(lexical) if link else \
        os.path.join(_real_dir(os.path.dirname(lexical)), os.path.basename(lexical))
    if not real.startswith(os.path.join(root_real, "")):
        raise FieldError("", f"{relative!r} is a symbolic link (or lies under one) that leads "
                             "outside the dataset folder")
    try:
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            raise FieldError("", f"{relative!r} is {_file_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise FieldError("", f"{relative!r} is {info.st_size} bytes, above the limit of {limit}")
        if info.st_nlink > 1:  # another name of the same file may lie anywhere on the disk
            raise FieldError("", f"{relative!r} is hard-linked ({info.st_nlink} names for one "
                                 "file): links are refused; copy the file into the folder")
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FieldError("", f"missing file {relative!r}") from None
    except OSError as err:
        raise FieldError("", f"cannot read {relative!r}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())
        if not stat.S_ISREG(opened.st_mode) or opened.st_nlink > 1:  # swapped after the stat
            raise FieldError("", f"{relative!r} is not a regular file with one name")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FieldError("", f"{relative!r} is larger than the limit of {limit} bytes")
    return data


MAX_JSON_DEPTH = 64  # MERA records nest about 4 levels; deeper is hostile or broken


def json_depth(value) -> int:
    """How deeply a parsed JSON value nests (iteratively: no recursion to exhaust)."""
    if not isinstance(value, (dict, list)):
        return 1
    deepest, stack = 1, [(value, 1)]
    while stack:  # only containers go on the stack; a node's items are one level deeper
        node, depth = stack.pop()
        items = node.values() if isinstance(node, dict) else node
        if items:
            deepest = max(deepest, depth + 1)
        stack += [(c, depth + 1) for c in items if isinstance(c, (dict, list))]
    return deepest


def parse_json(data: bytes):
    """Parse JSON bytes; every failure becomes a FieldError that says why (field "", or
    the field of a repeated key or of unencodable text: json_doubts)."""
    value, doubtful = parse_json_doubtful(data)
    for field, message in doubts(value) if doubtful else ():
        raise FieldError(field, message)
    return value


def parse_json_doubtful(data: bytes):
    """(value, doubtful): JSON bytes parsed, and whether a repeated key or a surrogate
    escape may lie in it (walk it with json_doubts.doubts). Nesting beyond
    MAX_JSON_DEPTH is refused, so nothing downstream recurses too deep."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FieldError("", f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        found: list = []
        value = json.loads(text, object_pairs_hook=lambda pairs: _noted(pairs, found))
    except json.JSONDecodeError as err:
        raise FieldError("", f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}") \
            from None
    except RecursionError:
        raise FieldError("", "JSON nested too deeply to read") from None
    except ValueError as err:  # e.g. an integer with more digits than Python converts
        raise FieldError("", f"unreadable JSON value: {err}") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise FieldError("", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value, bool(found) or SURROGATE_ESCAPE.search(text) is not None


def _noted(pairs: list, found: list) -> dict:
    value = pairs_hook(pairs)
    if isinstance(value, DuplicateKeys):
        found.append(value)
    return value


def read_json(path: Path, limit: int = MAX_JSON_BYTES):
    """Parse one JSON file of a dataset folder (the file must lie inside its folder)."""
    return parse_json(read_inside(path.parent, path.name, limit))


@functools.lru_cache(maxsize=1024)  # a task has ~10 prompts: parse each once
def placeholders(template: str) -> tuple[tuple[str, str, str | None], ...]:
    """The (name, format spec, conversion) of each {field} of a str.format template."""
    try:
        return tuple((name, spec or "", conv) for _, name, spec, conv
                     in string.Formatter().parse(template) if name is not None)
    except ValueError as err:
        raise FieldError("instruction", f"not a valid format template: {err}") from None


def placeholder_problems(template: str, fields: tuple[str, ...]) -> list[str]:
    """Why the template's placeholders are not plain ``{field}`` names of ``fields``."""
    out = []
    for name, spec, conv in placeholders(template):
        shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
        if not name or name.isdigit():
            out.append(f"positional placeholder {shown}: name an input field instead")
        elif name not in fields:
            out.append(f"placeholder {shown} is not an input field "
                       f"(text fields: {', '.join(fields)})")
        elif conv or spec:
            out.append(f"placeholder {shown}: conversions and format specs are not allowed")
    return out


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
        problem("outputs", "the official gold parser (json.loads after replacing ' with \") "
                "cannot read this answer back: a key or value holds an apostrophe")
        return None
    return text


class GroupIds:
    """Derived group ids (docs/official-protocol.md, "Raw data layout and group
    ids"): examples with the same media bytes and the same
    question share a group, whose id is the first such example's id."""

    def __init__(self):
        self.first: dict[str, int] = {}

    def assign(self, meta: dict, media_bytes: bytes | None, question: str | None) -> None:
        """Fill ``meta["group_id"]`` when it is missing."""
        if meta.get("group_id") is not None:
            return
        digest = hashlib.sha1(media_bytes or b"")
        digest.update(b"\0" + (question or "").encode("utf-8"))
        meta["group_id"] = self.first.setdefault(digest.hexdigest(), meta["id"])


# ---- the metadata file: prompts, excluded fields, computed fields, card material ----

def exclusion_paths(spec) -> list[tuple[str, ...]]:
    """``exclude_fields`` as field paths. Official form: a nested object whose leaves are
    lists of names ({"meta": {"image": ["synt_source"]}}); also a list of dotted paths."""
    if spec in (None, {}, []):
        return []
    if isinstance(spec, list) and all(isinstance(p, str) and p for p in spec):
        return [tuple(p.split(".")) for p in spec]
    paths = []
    for key, sub in spec.items() if isinstance(spec, dict) else [(None, None)]:
        if isinstance(sub, list) and all(isinstance(n, str) for n in sub):
            paths += [(key, name) for name in sub]
        elif isinstance(sub, dict):  # {} keeps everything, as in the official notebook
            paths += [(key,) + rest for rest in exclusion_paths(sub)]
        else:
            raise FieldError("exclude_fields", 'must be an object like {"meta": {"image": '
                             '["synt_source"]}} or a list of dotted field paths')
    return paths


def drop_fields(record: dict, paths: list[tuple[str, ...]]) -> dict:
    """The record without the excluded fields (the parsed record is changed in place)."""
    for path in paths:
        node = record
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return record


def _sample_path(node, var: str) -> list[str] | None:
    """The constant string keys of ``var[k1][k2]...``, or None for any other shape."""
    keys = []
    while isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return None
        keys.insert(0, node.slice.value)
        node = node.value
    return keys if isinstance(node, ast.Name) and node.id == var and keys else None


def _distinct_path(node) -> list[str] | None:
    """The key path of ``list(set(sample[..]... for sample in DATA))`` (or sorted(...))."""
    def call(n, names):
        return (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
                and len(n.args) == 1 and not n.keywords)
    if not (call(node, ("list", "sorted")) and call(node.args[0], ("set",))):
        return None
    gen = node.args[0].args[0]
    if not (isinstance(gen, (ast.GeneratorExp, ast.ListComp)) and len(gen.generators) == 1):
        return None
    loop = gen.generators[0]
    if not (isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Name)
            and loop.iter.id == "DATA" and not loop.ifs and not loop.is_async):
        return None
    return _sample_path(gen.elt, loop.target.id)


def compute_field(field: str, expression: str, data: list):
    """The value of an official computed-field expression over the test records ``DATA``."""
    known = ("it computes len(DATA) and list(set(sample['k1']['k2']... for sample in DATA)); "
             "write the value itself instead")
    try:
        tree = ast.parse(expression.strip(), mode="eval") if len(expression) < 500 else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    node = tree.body if tree else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) \
            and node.args[0].id == "DATA" and not node.keywords:
        return len(data)
    keys = _distinct_path(node) if node is not None else None
    if keys is None:
        raise FieldError(field, f"the expression {expression!r} is not one this project computes "
                                f"({known})")
    found = set()
    for record in data:
        value = record
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                found.add(item)
    return sorted(found)


CARD_FIELD_TYPES = {  # field -> (accepted types, what to write)
    "dataset_name": ((str,), "a string"), "license": ((str,), "a string"),
    "task_type": ((str,), "a string"), "task_description": ((str,), "a string"),
    "description": ((str, dict), 'a string or {"ru": ..., "en": ...}'),
    "modalities": ((list,), "a list of strings"), "skills": ((list,), "a list of strings"),
    "domains": ((list,), "a list of strings"), "universal_domains": ((list,), "a list of strings"),
    "dataset_size": ((int, str), 'an integer or "len(DATA)"'),
    "synt_source_models": ((list, str), "a list of strings or its official expression"),
    "data_example": ((dict,), "one record"), "data_field_descriptions": ((dict,), "an object"),
    "metrics": ((dict,), 'an object {"Metric name": {"ru": ..., "en": ...}}'),
    "human_benchmark": ((dict,), 'an object {"Metric name": number}'),
}


def card_meta_problems(meta: dict) -> list[tuple[str, str]]:
    """(field, message) for each card field of the metadata that has the wrong shape."""
    out = []
    for name, (types, what) in CARD_FIELD_TYPES.items():
        value = meta.get(name)
        if value is None:
            continue
        if not isinstance(value, types) or isinstance(value, bool):
            out.append((name, f"must be {what}, got {type(value).__name__}"))
        elif isinstance(value, list) and not all(isinstance(v, str) for v in value):
            out.append((name, f"must be {what}"))
    for metric, score in (meta.get("human_benchmark") or {}).items() \
            if isinstance(meta.get("human_benchmark"), dict) else ():
        if not isinstance(score, (int, float)) or isinstance(score, bool):
            out.append((f"human_benchmark.{metric}", f"must be a number, got {score!r}"))
    return out


README_PLACEHOLDER = re.compile(r"""\{meta\[(["'])(\w+)\1\]\}""")


def fill_readme(sections: dict, meta: dict) -> dict:
    """Sections with the official ``{meta["field"]}`` placeholders filled in (the only
    substitution the official templates use; nothing else is interpreted)."""
    def fill(match):
        value = meta.get(match.group(2))
        return match.group(0) if value is None else str(value)
    return {title: README_PLACEHOLDER.sub(fill, text) for title, text in sections.items()}


def domain_key(name) -> str | None:
    """A domain name as compared with a task's domain configs ("Earth science" and
    "earth_science" are the same domain); None for anything but a string."""
    return name.strip().lower().replace(" ", "_") if isinstance(name, str) else None


def domain_folders(task: TaskSpec, root: str | Path) -> list[str]:
    """The task's domain folders under ``root``, in the task's domain order: the official
    per-domain layout (``<domain>/test.json``, ``<domain>/shots.json``, as the upload
    notebooks of the domain-split tasks read it). Empty for the single-folder form (a
    ``test.json`` at the top, each record naming its domain)."""
    root = Path(root)
    if not task.domains or os.path.lexists(root / "test.json"):
        return []
    return [d for d in task.domains if os.path.isdir(root / d)]


@dataclass(frozen=True)
class RawPart:
    """One folder of split files: the dataset folder itself, or one domain folder."""
    domain: str | None             # the domain config its records belong to (domain folders)
    prefix: str                    # its path inside the dataset folder: "" or "<domain>/"
    meta_file: str                 # the metadata file its prompts and exclusions come from
    meta: dict
    prompts: list[str] | None
    exclude: list[tuple[str, ...]]
    own_meta: bool                 # the metadata file lies in this folder


class RawDataset:
    """One raw MERA folder for one task: the single-folder form, or for a domain-split task
    the official per-domain layout, one folder per domain config (records get the folder's
    name as ``meta.domain``; a domain folder without its own metadata file uses the top one;
    a media path is looked up in the domain folder first, then at the top).

    ``include_private_answers``: keep the gold answers of a private test split (an
    internal export, or the local cache that scoring reads); by default they are hidden.
    ``limits``: what media may declare; ``workers``: threads that decode media.
    """

    def __init__(self, task: TaskSpec, root: str | Path,
                 normalize_meta: Callable[[dict], dict] | None = None, *,
                 limits: Limits | None = None, include_private_answers: bool = False,
                 workers: int = 1):
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
        self.notes: list[str] = []  # said once at build, never a reason to stop
        self.counts: dict[str, int] = {}
        self.computed: dict = {}
        top = self._part(None, "")
        self.parts = [self._part(d, f"{d}/", top)
                      for d in domain_folders(task, self.root)] or [top]
        card = top if top.own_meta else next((p for p in self.parts if p.own_meta), top)
        self.meta_file, self.meta = card.meta_file, card.meta
        self.readme = {lang: self._read_readme(card.prefix + name)
                       for lang, name in README_FILES.items()}

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
        found = []
        for split in SPLITS:
            have = [p for p in self.parts if os.path.lexists(self.root / f"{p.prefix}{split}.json")]
            found += [split] if have else []
            for part in self.parts if have or split == "test" else ():
                if part not in have:
                    self._problem(str(self.root / f"{part.prefix}{split}.json"), None, None,
                                  self._missing(split))
        return found

    def _missing(self, split: str) -> str:
        if self.parts[0].domain is not None:
            return f"missing: every domain folder needs {split}.json" + \
                (" (the other domain folders have one)" if split != "test" else "")
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
        return RawPart(domain, prefix, meta_file, meta, self._prompt_list(meta, meta_file),
                       self._exclusions(meta, meta_file), own)

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
            self._problem(meta_file, None, "prompts", "must be a list of prompt strings "
                          "(documented form) or an object of prompt blocks (published form)")
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
        if not isinstance(sections, dict) or \
                not all(isinstance(v, str) for v in sections.values()):
            self._problem(str(self.root / relative), None, None,
                          'must be one JSON object {"Section title": "Markdown text", ...}')
            return {}
        return sections

    def _start_test(self, file: str, doc: dict) -> None:
        """Read the test split's access level and compute the metadata's computed fields
        (over every domain folder's test split: sizes add up, distinct values merge)."""
        first, access = self.access_file is None, doc.get("access")
        if access is None:  # the task declares whether its answers are published
            access = "public" if self.task.public else "private"
            self.notes.append(f"{file}: no \"access\" key; taken as {access!r}, as the task "
                              f"{self.task.class_name} is declared (see docs/raw-format.md)")
        if access not in ("private", "public"):
            self._problem(file, None, "access", f'must be "private" or "public", got {access!r}')
            access = "private"
        if not first and access != self.access:
            self._problem(file, None, "access", f"{access!r} here but {self.access!r} in "
                          f"{self.access_file}: every domain folder must say the same")
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
        """The split file parsed, and whether its records must be walked for doubts."""
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
            self._problem(file, None, "data", f"the {split} split is empty: it needs at least "
                                              "one example")
            return None, False
        return doc, doubtful

    def records(self, split: str) -> Iterator[dict]:
        """Yield the split's valid examples, normalised, folder by folder; record problems
        as they are found. Ids are unique across the whole split."""
        seen_ids: dict[int, tuple] = {}
        groups = GroupIds()
        self.counts[split] = 0
        self.split_ids[split] = {}
        for part in self.parts:
            if os.path.lexists(self.root / f"{part.prefix}{split}.json"):
                yield from self._part_records(part, split, seen_ids, groups)

    def _part_records(self, part: RawPart, split: str, seen_ids: dict, groups: GroupIds):
        relative = f"{part.prefix}{split}.json"
        file = str(self.root / relative)
        doc, doubtful = self._split_doc(file, relative, split)
        if doc is None:
            return
        if split == "test":
            self._start_test(file, doc)
        blank = split == "test" and self.private and not self.include_private_answers
        has_answers = split != "test" or not self.private
        unreachable = []
        checked = (self._check_record(part, file, position, record, has_answers, seen_ids,
                                      doubtful) for position, record in enumerate(doc["data"]))
        for (example, problem, media), found in check_all(
                filter(None, checked), self._media_checks, self.workers,
                size=lambda item: sum(len(data) for _, _, data in item[2])):
            for (field, value, _), why in zip(media, found):
                if why:
                    problem(field, f"{value!r}: {why}")
            if any(found):
                continue
            space = self.answer_space
            if space and example["outputs"] and example["outputs"] not in space:
                unreachable.append((example["meta"]["id"], example["outputs"]))
            meta = example["meta"]
            self.split_ids[split][meta["id"]] = file
            if self.task.has_groups:
                media = example["inputs"].get(self.task.media_fields[0]) or {}
                groups.assign(meta, media.get("bytes"), example["inputs"].get("question"))
            if blank:
                example["outputs"] = self.hidden_answer  # private answers never leave the folder
            self.counts[split] += 1
            yield example
        if unreachable:
            self.notes.append(
                f"{file}: gold answers outside the options {', '.join(space)} the "
                f"prompt shows can never be matched: " + ", ".join(
                    f"id {i} ({gold!r})" for i, gold in unreachable[:20]))

    @property
    def answer_space(self) -> tuple[str, ...]:
        """The letters a letter task's prompt labels its options with (Latin); empty for
        other tasks (no closed answer space)."""
        if self.task.answer_kind != "letter" or self.task.gold_list:
            return ()
        return tuple(c for c in self.task.choices if c in string.ascii_uppercase)

    def _media_checks(self, checked) -> list:
        """The decode checks of one record's media (run on the worker threads)."""
        check = MEDIA_CHECKS[self.task.modality]
        return [functools.partial(check, data, self.limits) for _, _, data in checked[2]]

    def _record_id(self, file, position, record, seen_ids):
        meta = record.get("meta")
        example_id = meta.get("id") if isinstance(meta, dict) else None
        if not isinstance(meta, dict):
            self._problem(file, None, "meta", f"record #{position}: missing or not an object")
            return None
        if not isinstance(example_id, int) or isinstance(example_id, bool):
            self._problem(file, None, "meta.id",
                          f"record #{position}: missing or not an integer ({example_id!r:.80})")
            return None
        if example_id in seen_ids:
            other_file, other = seen_ids[example_id]
            where = "" if other_file == file else f" of {other_file}"
            self._problem(file, example_id, "meta.id",
                          f"duplicate id (records #{other}{where} and #{position})")
            return None
        for split, ids in self.split_ids.items():  # this split's ids are in seen_ids too
            if example_id in ids:
                self._problem(file, example_id, "meta.id", f"the same id is in the {split} "
                              f"split ({ids[example_id]}): ids are unique across test and shots")
                return None
        seen_ids[example_id] = (file, position)
        return example_id

    def _check_record(self, part, file, position, record, has_answers, seen_ids,
                      doubtful=False) -> tuple | None:
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
        example = {"instruction": self._instruction(record.get("instruction"), part.prompts,
                                                    problem),
                   "inputs": self._inputs(inputs, part.prefix, problem, media),
                   "outputs": self._outputs(record.get("outputs"), has_answers, problem),
                   "meta": self._meta(record["meta"], problem)}
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
                problem("instruction", "is a prompt index but the folder has no prompt list "
                        f"({' or '.join(META_FILES)} with \"prompts\" as a list)")
                return None
            if not 0 <= value < len(prompts):
                problem("instruction", f"prompt index {value} out of range "
                        f"(the prompt list has {len(prompts)} prompts)")
                return None
            value = prompts[value]
        elif not (isinstance(value, str) and value.strip()):
            if value is not None:
                problem("instruction", "must be a non-empty string or a prompt index")
            return None
        try:  # a task whose prompt rules rewrite braces is checked by rendering alone
            why = [] if getattr(self.task, "prompt_rules", ()) else \
                placeholder_problems(value, self.task.text_fields)
        except FieldError as err:
            why = [err.message]
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
                problem(f"inputs.{name}", "missing required field" if value is None
                        else f"must be a string, got {type(value).__name__}")
            out[name] = value
        for name in self.task.media_fields:
            out[name] = self._media(inputs.get(name), f"inputs.{name}",
                                    name in self.task.optional_media, prefix, problem, media)
        return out

    def _media(self, value, field, optional, prefix, problem, media: list) -> dict | None:
        """The file's {"bytes", "path"}, read safely; its decode check joins ``media``."""
        if value in (None, "") and optional:
            return None
        if not isinstance(value, str) or not value:
            problem(field, "missing media path" if value in (None, "")
                    else f"must be a path string, got {type(value).__name__}")
            return None
        relative = prefix + value if prefix and \
            os.path.lexists(os.path.join(self.root, prefix + value)) else value
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
                problem("outputs", f"{value!r:.80} is not one of {', '.join(self.task.choices)} "
                        f"(this {what} must be a letter)")
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
            problem("outputs", "must be an answer or a list of answers (strings), "
                    f"got {type(value).__name__}")
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
