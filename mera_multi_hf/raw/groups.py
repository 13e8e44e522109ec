"""The one place group ids are derived (the raw reader and the loader of older copies)."""
from __future__ import annotations

import hashlib


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


