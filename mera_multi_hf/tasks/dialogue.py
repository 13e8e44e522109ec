"""Where each question of a dialogue task (ruTiE-Image, ruTiE-Audio) stands, as the
official process_docs derives it: (dialog id, question id) from meta.id alone, by its
offset to the smallest id of the split; and how an earlier answer is shown to the next
turn (the first letter the official regex finds). Declarations only: scoring, the
reports and the runner read them (docs/official-protocol.md, "ruTiE")."""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an example's id and meta are all these read
    from mera_multi_hf.data.examples import Example
    from mera_multi_hf.tasks.spec import TaskSpec

Position = tuple[int, int]  # (dialog id, question id)


def positions(task: TaskSpec, examples: list[Example]) -> dict[int, Position]:
    """Example id -> (dialog id, question id), as the official process_docs derives them:
    from the id's offset to the smallest id of the split, whatever meta says."""
    first = min((e.id for e in examples), default=0)
    return {e.id: task.dialogue.position(e.id, first) for e in examples}


def meta_disagreements(task: TaskSpec, examples: list[Example]) -> list[int]:
    """Ids whose meta.dialog_id/question_id differ from the official positions (those
    are used; the count goes to results.json)."""
    where = positions(task, examples)
    return [
        e.id
        for e in examples
        if (e.meta.get("dialog_id"), e.meta.get("question_id")) not in ((None, None), where[e.id])
    ]


def warn_meta(task: TaskSpec, examples: list[Example]) -> list[int]:
    """Warn (once per task and run) where meta places examples elsewhere than the
    official arithmetic; returns those ids."""
    ids = meta_disagreements(task, examples)
    if ids:
        warnings.warn(
            f"{task.key}: meta.dialog_id/question_id of {len(ids)} examples (e.g. "
            f"id={ids[0]}) differ from the positions the official process_docs "
            f"derives from meta.id; the official positions are used",
            UserWarning,
            stacklevel=2,
        )
    return ids


def reduce_answer(task: TaskSpec, generation: str) -> str:
    """The earlier answer as the next turn shows it: the first letter the official regex
    finds in the stripped generation, or the fallback."""
    match = re.search(task.dialogue.answer_pattern, generation.strip())
    return match.group(1) if match else task.dialogue.no_answer


def dialogues(task: TaskSpec, examples: list[Example]) -> dict[int, list[Example]]:
    """Dialog id -> its examples in question order."""
    where = positions(task, examples)
    out: dict[int, list[Example]] = defaultdict(list)
    for e in sorted(examples, key=lambda e: where[e.id]):
        out[where[e.id][0]].append(e)
    return dict(out)
