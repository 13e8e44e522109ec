"""Errors a user can act on. The CLI prints these as one clear message, no traceback."""

from __future__ import annotations

from dataclasses import dataclass


class MeraError(Exception):
    """A mistake in the user's input or setup: the message says what, where and what to do."""


@dataclass(frozen=True)
class Problem:
    file: str
    example_id: object  # the record's meta.id, or None when the problem is not in one record
    field: str | None
    message: str

    def __str__(self) -> str:
        where = [self.file]
        if self.example_id is not None:
            where.append(f"id={self.example_id}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{': '.join([', '.join(where), self.message])}"


class MediaError(MeraError):
    """One media item that does not decode, or not within the limits and the memory
    budget: mid-run, its example is recorded as failed and the run goes on."""


class DataValidationError(MeraError):
    """Every problem found in a raw dataset folder, reported together."""

    def __init__(self, problems: list[Problem], source: str = ""):
        self.problems = list(problems)
        head = (
            f"{len(self.problems)} problem(s) in {source}"
            if source
            else f"{len(self.problems)} problem(s) in the dataset"
        )
        shown = "\n".join(f"  - {p}" for p in self.problems[:200])
        more = f"\n  ... and {len(self.problems) - 200} more" if len(self.problems) > 200 else ""
        super().__init__(f"{head}:\n{shown}{more}")
