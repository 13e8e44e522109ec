"""The metadata file's record rules: excluded fields and computed fields.

Computed metadata fields (``dataset_size``, ``synt_source_models``) may hold one of the
official expression strings. They are recognised by the shape of their syntax tree and
computed here, never evaluated: ``len(DATA)`` (the number of test records) and
``list(set(sample[k1][k2]... for sample in DATA))`` (the sorted distinct values, a list
value counting as its items). Any other expression is a problem in the metadata file.
"""

from __future__ import annotations

import ast

from mera_multi_hf.data.raw.files import FieldError


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
            raise FieldError(
                "exclude_fields",
                'must be an object like {"meta": {"image": '
                '["synt_source"]}} or a list of dotted field paths',
            )
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
        return (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in names
            and len(n.args) == 1
            and not n.keywords
        )

    if not (call(node, ("list", "sorted")) and call(node.args[0], ("set",))):
        return None
    gen = node.args[0].args[0]
    if not (isinstance(gen, (ast.GeneratorExp, ast.ListComp)) and len(gen.generators) == 1):
        return None
    loop = gen.generators[0]
    if not (
        isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Name)
        and loop.iter.id == "DATA"
        and not loop.ifs
        and not loop.is_async
    ):
        return None
    return _sample_path(gen.elt, loop.target.id)


def compute_field(field: str, expression: str, data: list):
    """The value of an official computed-field expression over the test records ``DATA``."""
    known = (
        "it computes len(DATA) and list(set(sample['k1']['k2']... for sample in DATA)); "
        "write the value itself instead"
    )
    try:
        tree = ast.parse(expression.strip(), mode="eval") if len(expression) < 500 else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    node = tree.body if tree else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "DATA"
        and not node.keywords
    ):
        return len(data)
    keys = _distinct_path(node) if node is not None else None
    if keys is None:
        raise FieldError(
            field, f"the expression {expression!r} is not one this project computes ({known})"
        )
    found = set()
    for record in data:
        value = record
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                found.add(item)
    return sorted(found)
