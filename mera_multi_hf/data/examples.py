"""One example model, made once from a dataset row: requests, scoring, the judge and
the submission all read it; nothing else rebuilds reference rows.

Made from the Arrow columns without reading or decoding any media: a media field is
only known to be present (the bytes are read for the batch being generated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mera_multi_hf.data.arrow_split import ArrowSplit, flat_columns, validity
from mera_multi_hf.tasks.prompts import render_prompt
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.variants import numbered, variant_id, without_blocks

Gold = str | list[str]


@dataclass
class Example:
    task: str
    id: int
    index: int  # the row in its split (where the media are read from)
    prompt: str  # the official doc_to_text, media placeholders in place
    media_fields: tuple[str, ...]  # the present media, in the order they are passed
    gold: Gold | None  # typed: a string, or a list of acceptable answers; None = hidden
    group: int  # group id (its own id where the task has no groups)
    breakdown: dict[str, str] = field(default_factory=dict)  # breakdown name -> key
    meta: dict = field(default_factory=dict)
    instruction: str = ""  # as stored (a dialogue's history shows it)
    options: tuple = ()  # the texts of the task's option_* inputs, in letter order
    # its prompt variant (mera_multi_hf.tasks.variants): the template's short id, its number
    # in order of first appearance in the split, and the stratum it is counted within
    prompt_variant: str = ""
    prompt_variant_number: int = 0
    prompt_stratum: str | None = None


def _nest(target: dict, keys: list[str], value) -> None:
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = value


def _lookup(meta: dict, path: str):
    value = meta
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _typed_gold(outputs) -> Gold | None:
    """The gold as the task stores it; an empty one (a private split) is hidden."""
    if isinstance(outputs, (list, tuple)):
        answers = [str(a) for a in outputs]
        return answers if answers else None
    if outputs is None or outputs == "":
        return None
    return str(outputs)


def _present_media(task: TaskSpec, columns: dict, n: int) -> dict[str, list[bool]]:
    """Media field -> per row "has an item", read from Arrow validity only."""
    present = {}
    for name in task.media_fields:
        valid = [
            validity(column)
            for c, column in columns.items()
            if c == f"inputs.{name}" or c.startswith(f"inputs.{name}.")
        ]
        present[name] = [any(v) for v in zip(*valid)] if valid else [False] * n
    return present


def _flat_rows(columns: dict, keep: list[str], n: int) -> list[dict]:
    values = [columns[c].to_pylist() for c in keep]
    return [dict(zip(keep, row)) for row in zip(*values)] if keep else [{}] * n


def make_examples(
    task: TaskSpec, ds, prompt_list: list[str] | None = None, whole=None
) -> list[Example]:
    """The examples of one split (an :class:`~mera_multi_hf.data.arrow_split.ArrowSplit` or a
    `datasets.Dataset`), in dataset order; ``prompt_list``: the raw folder's prompts, which
    its records indexed (their prompt variants are named by index); ``whole``: the split
    ``ds`` was cut from, over which the prompt variants are found."""
    split = ArrowSplit.of(ds)
    columns = flat_columns(split)
    present = _present_media(task, columns, len(split))
    keep = [
        c
        for c in columns
        if not any(c == f"inputs.{m}" or c.startswith(f"inputs.{m}.") for m in task.media_fields)
    ]
    option_fields, out = task.option_fields, []
    for position, row in enumerate(_flat_rows(columns, keep, len(split))):
        meta, inputs = {}, {}
        for column, value in row.items():
            if column.startswith("meta."):
                _nest(meta, column[5:].split("."), value)
            elif column.startswith("inputs."):
                inputs[column[7:]] = value
        for name in task.media_fields:  # a marker: present or not, never the bytes
            inputs[name] = True if present[name][position] else None
        example = {"instruction": row["instruction"], "inputs": inputs, "meta": meta}
        prompt, media = render_prompt(task, example)
        group = meta.get("group_id")
        out.append(
            Example(
                task=task.key,
                id=int(meta["id"]),
                index=position,
                prompt=prompt,
                media_fields=tuple(name for name, _ in media),
                gold=_typed_gold(row["outputs"]),
                group=int(group) if group is not None else int(meta["id"]),
                breakdown={
                    name: str(_lookup(meta, path))
                    for name, path in task.breakdowns
                    if _lookup(meta, path) is not None
                },
                meta=meta,
                instruction=row["instruction"],
                options=tuple(inputs.get(f) for f in option_fields),
            )
        )
    _set_variants(task, out, split if whole is None else whole, prompt_list)
    return out


def _set_variants(task: TaskSpec, examples: list[Example], ds, prompt_list) -> None:
    """Each example's prompt variant, its number and its stratum, found over the whole
    split ``ds`` (a run's --limit takes its first examples: their variants stay the same)."""
    variants = split_variants(task, ds, prompt_list)
    for example in examples:
        if task.prompt_block:
            example.prompt_stratum = example.breakdown.get(task.prompt_block)
        variant = variants[(example.prompt_stratum, example.instruction)]
        example.prompt_variant, example.prompt_variant_number = variant


def split_variants(task: TaskSpec, ds, prompt_list=None) -> dict[tuple, tuple[str, int]]:
    """(stratum, instruction) -> (variant id, its number in order of first appearance)
    over a split; the stratum is the value of the task's declared block (None without
    one), whose text stands as a placeholder in the variant's template."""
    columns = flat_columns(ArrowSplit.of(ds))
    instructions = columns["instruction"].to_pylist()
    path = dict(task.breakdowns).get(task.prompt_block)
    strata = (
        [None if v is None else str(v) for v in columns[f"meta.{path}"].to_pylist()]
        if path and f"meta.{path}" in columns
        else [None] * len(instructions)
    )
    pairs = list(zip(strata, instructions))
    templates: dict = {}
    if path:
        for stratum, instruction in pairs:
            templates.setdefault(stratum, []).append(instruction)
        templates = without_blocks(templates)
    ids = [variant_id(templates.get(pair, pair[1]), prompt_list) for pair in pairs]
    return {pair: (i, n) for pair, i, n in zip(pairs, ids, numbered(ids))}


def arrow_view(ds):
    """``ds`` formatted as Arrow: rows come back with media undecoded (bytes/path dicts).
    Made once per task: ``with_format`` copies the dataset object."""
    return ds if ds.format["type"] == "arrow" else ds.with_format("arrow")


def example_inputs(task: TaskSpec, examples: list[Example], ds, chunk: int = 64):
    """(example, its row's undecoded inputs) in order, read from ``ds`` ``chunk`` rows at a
    time ({} for a task without media: nothing is read)."""
    ds = arrow_view(ds)
    for start in range(0, len(examples), chunk):
        part = examples[start : start + chunk]
        inputs = [{}] * len(part)
        if task.media_fields:
            inputs = ds[[e.index for e in part]].column("inputs").to_pylist()
            release_pages(ds)  # the bytes are copied out: the mapped pages go back
        yield from zip(part, inputs)


def release_pages(ds, sizes: list[int] | None = None) -> None:
    """Hand back the resident pages of a split this module memory-mapped
    (:meth:`ArrowSplit.release`); nothing for any other. ``sizes``: those of the values
    just read, the pages handed back only once enough have come in
    (:meth:`ArrowSplit.pages_read`)."""
    if not isinstance(ds, ArrowSplit):
        return
    if sizes is None:
        ds.release()
    else:
        ds.pages_read(sizes)


def media_of(task: TaskSpec, examples: list[Example], ds, chunk: int = 64):
    """(example id, its media as :class:`~mera_multi_hf.data.media_decode.Media` with their
    bytes) for each example, what results.html and compare.html show: read one chunk at a
    time as the page takes them, so a big split's media are never all held. An item whose
    bytes cannot be read comes without them (``data`` None)."""
    import hashlib

    from mera_multi_hf.core.errors import MediaError
    from mera_multi_hf.data.media_decode import Media, media_bytes

    if not task.media_fields:
        return
    for example, row in example_inputs(task, examples, ds, chunk):
        items = []
        for name in example.media_fields:
            try:
                raw = media_bytes(row[name])
            except MediaError:  # the page says it is not shown
                raw = None
            digest = hashlib.sha256(raw).hexdigest() if raw is not None else ""
            items.append(Media(kind=task.modality, sha256=digest, data=raw, field=name))
        yield example.id, items
