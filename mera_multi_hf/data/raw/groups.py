"""The one place group ids are derived (the raw reader and the loader of older copies)."""

from __future__ import annotations

import hashlib


class GroupIds:
    """Derived group ids (docs/official-protocol.md, "Raw data layout and group ids"):
    examples whose ``fields`` (a task's ``group_by``: media bytes, text) are all the same
    share a group, whose id is the first such example's id."""

    def __init__(self, fields: tuple[str, ...]):
        self.fields = fields
        self.first: dict[str, int] = {}

    def assign(self, meta: dict, inputs: dict) -> None:
        """Fill ``meta["group_id"]`` when it is missing, from the example's inputs."""
        if meta.get("group_id") is not None:
            return
        digest = hashlib.sha1()
        for name in self.fields:
            value = inputs.get(name)
            value = value.get("bytes") if isinstance(value, dict) else value
            digest.update(
                (value or b"") if isinstance(value, bytes) else (value or "").encode("utf-8")
            )
            digest.update(b"\0")
        meta["group_id"] = self.first.setdefault(digest.hexdigest(), meta["id"])
