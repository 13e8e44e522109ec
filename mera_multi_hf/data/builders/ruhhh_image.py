"""ruHHH-Image: pick the more helpful, honest, harmless (and polite, empathetic, open) answer.

Raw records and the published Hub copy differ in the image-metadata names; both become
source/type/content/context here (docs/official-protocol.md, "Raw data layout and group
ids").
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder
from mera_multi_hf.data.raw import FieldError

CATEGORIES = ("empathetic", "etiquette", "harmless", "helpful", "honest", "open")
IMAGE_META_KEYS = ("source", "type", "content", "context")
HUB_ALIASES = {"origin": "source", "image_content": "content"}

META_FEATURES = {
    "id": datasets.Value("int32"),
    "group_id": datasets.Value("int32"),
    "image": {key: datasets.List(datasets.Value("string")) for key in IMAGE_META_KEYS},
    "categories": {
        "category": datasets.Value("string"),
        "subcategory": datasets.Value("string"),
    },
}


def _string_list(value, field):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise FieldError(field, "must be a string or a list of strings")


def _object(meta: dict, key: str) -> dict:
    value = meta.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError(f"meta.{key}", f"must be an object, got {type(value).__name__}")
    return dict(value)


def normalize_meta(meta: dict) -> dict:
    image = _object(meta, "image")
    for old, new in HUB_ALIASES.items():
        if old in image:
            image.setdefault(new, image.pop(old))
    categories = _object(meta, "categories")
    category = categories.get("category")
    if not isinstance(category, str) or category.strip().lower() not in CATEGORIES:
        raise FieldError(
            "meta.categories.category", f"{category!r:.80} is not one of {', '.join(CATEGORIES)}"
        )
    subcategory = categories.get("subcategory")
    if not isinstance(subcategory, str) or not subcategory.strip():
        raise FieldError("meta.categories.subcategory", "missing or empty")
    return {
        "id": meta["id"],
        "group_id": meta.get("group_id"),
        "image": {
            key: _string_list(image.get(key), f"meta.image.{key}") for key in IMAGE_META_KEYS
        },
        "categories": {"category": category.strip().lower(), "subcategory": subcategory},
    }


class RuHHHImage(MeraBuilder):
    TASK_KEY = "ruhhh_image"
    META_FEATURES = META_FEATURES
    normalize_meta = staticmethod(normalize_meta)
