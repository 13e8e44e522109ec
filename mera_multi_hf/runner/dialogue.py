"""Dialogue tasks (ruTiE-Image, ruTiE-Audio): the questions of a dialogue are asked in
order, each with the last N earlier turns of its dialogue and the model's own earlier
answers, reduced to a letter (docs/official-protocol.md, "ruTiE"; the task's DialogueSpec).

Positions come from meta.id alone, as the official process_docs makes them; the context
of a question is the previous N questions of its dialogue in that order (the official
ruTiEContextFormer's slice of the sorted list).

A dialogue's question k cannot be asked before k-1 is answered, so requests are made
wave by wave: wave k holds question k of every dialogue this process owns, generated
in one batch. Dialogues are split between processes by dialog id. Every answer goes to
the sample log; its request hash covers the history (earlier texts, media and answers),
so a rerun resumes a dialogue from its logged turns and regenerates from the first
turn whose history changed.
"""
from __future__ import annotations

import re
import warnings
from collections import defaultdict

from ..examples import Example
from ..tasks import TaskSpec
from .request import Turn

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
    return [e.id for e in examples
            if (e.meta.get("dialog_id"), e.meta.get("question_id")) not in ((None, None),
                                                                           where[e.id])]


def warn_meta(task: TaskSpec, examples: list[Example]) -> list[int]:
    """Warn (once per task and run) where meta places examples elsewhere than the
    official arithmetic; returns those ids."""
    ids = meta_disagreements(task, examples)
    if ids:
        warnings.warn(f"{task.key}: meta.dialog_id/question_id of {len(ids)} examples (e.g. "
                      f"id={ids[0]}) differ from the positions the official process_docs "
                      f"derives from meta.id; the official positions are used",
                      UserWarning, stacklevel=2)
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


def walk(task: TaskSpec, examples: list[Example], *, context_turns: int, answer, make,
         rank: int = 0, world: int = 1):
    """Yield the waves of this process's dialogues: lists of requests whose histories are
    complete. ``make(examples) -> requests`` builds a dialogue's requests;
    ``answer(request) -> str`` gives a request's generation once known (the caller fills
    it in between waves, from the log or by generating)."""
    own = {d: items for d, items in dialogues(task, examples).items() if d % world == rank}
    requests = {d: make(items) for d, items in own.items()}
    longest = max((len(items) for items in own.values()), default=0)
    for k in range(longest):
        wave = []
        for d, items in own.items():
            if k >= len(items):
                continue
            request = requests[d][k]
            start = max(0, k - context_turns)
            request.history = [
                Turn(text=items[j].instruction, media=requests[d][j].media,
                     answer=reduce_answer(task, answer(requests[d][j])), index=items[j].index)
                for j in range(start, k)]
            wave.append(request)
        yield wave
