"""Card material of the metadata file: the shape of its card fields, and the readme
sections with their ``{meta["field"]}`` placeholders filled."""

from __future__ import annotations

import re

# The card tag of an export that keeps a private split's answers (hub.write_card writes
# it; loading reads it back to tell a private split, without importing datasets).
INTERNAL_TAG = "mera-internal-with-answers"
PRIVATE_LICENSE_NAME = "mera-private"  # the card's licence name for MERA_private

CARD_FIELD_TYPES = {  # field -> (accepted types, what to write)
    "dataset_name": ((str,), "a string"),
    "license": ((str,), "a string"),
    "task_type": ((str,), "a string"),
    "task_description": ((str,), "a string"),
    "description": ((str, dict), 'a string or {"ru": ..., "en": ...}'),
    "modalities": ((list,), "a list of strings"),
    "skills": ((list,), "a list of strings"),
    "domains": ((list,), "a list of strings"),
    "universal_domains": ((list,), "a list of strings"),
    "dataset_size": ((int, str), 'an integer or "len(DATA)"'),
    "synt_source_models": ((list, str), "a list of strings or its official expression"),
    "data_example": ((dict,), "one record"),
    "data_field_descriptions": ((dict,), "an object"),
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
    for metric, score in (
        (meta.get("human_benchmark") or {}).items()
        if isinstance(meta.get("human_benchmark"), dict)
        else ()
    ):
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
