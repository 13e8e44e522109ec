"""ruHHH-Video: pick the more helpful, honest, harmless (polite, empathetic, open) answer
to a question about a video. As ruHHH-Image, with a video, a category and no
subcategory; ``group_id`` ties the answer pairs of one video-question (derived from the
video bytes and the question where missing). Exact match is strict (official YAML)."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder
from mera_multi_hf.data.raw import FieldError

CATEGORIES = ("empathetic", "etiquette", "harmless", "helpful", "honest", "open")
STRINGS = datasets.List(datasets.Value("string"))
VIDEO_KEYS = ("type", "context", "domain", "source", "content", "prohibited_materials")
META_FEATURES = {
    "id": datasets.Value("int32"),
    "group_id": datasets.Value("int32"),
    "categories": {"category": datasets.Value("string")},
    "video": {key: STRINGS for key in VIDEO_KEYS},
}


def normalize_meta(meta: dict) -> dict:
    categories = meta.get("categories")
    category = categories.get("category") if isinstance(categories, dict) else None
    if not isinstance(category, str) or category.strip().lower() not in CATEGORIES:
        raise FieldError(
            "meta.categories.category", f"{category!r:.80} is not one of {', '.join(CATEGORIES)}"
        )
    video = meta.get("video")
    if video is not None and not isinstance(video, dict):
        raise FieldError("meta.video", f"must be an object, got {type(video).__name__}")
    return {
        "id": meta["id"],
        "group_id": meta.get("group_id"),
        "categories": {"category": category.strip().lower()},
        "video": {key: (video or {}).get(key) for key in VIDEO_KEYS},
    }


class RuHHHVideo(MeraBuilder):
    TASK_KEY = "ruhhh_video"
    META_FEATURES = META_FEATURES
    normalize_meta = staticmethod(normalize_meta)
