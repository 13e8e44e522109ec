"""Dialogue tasks (ruTiE-Image, ruTiE-Audio): the questions of a dialogue are asked in
order, each with the last N earlier turns of its dialogue and the model's own earlier
answers, reduced to a letter (SPEC.md section 2; the task's DialogueSpec).

A dialogue's question k cannot be asked before k-1 is answered, so requests are made
wave by wave: wave k holds question k of every dialogue this process owns, generated
in one batch. Dialogues are split between processes by dialog id. Every answer goes to
the sample log; its request hash covers the history (earlier texts, media and answers),
so a rerun resumes a dialogue from its logged turns and regenerates from the first
turn whose history changed.
"""
from __future__ import annotations

import re
from collections import defaultdict

from ..errors import MeraError
from ..examples import Example
from ..tasks import TaskSpec
from .request import Turn

Position = tuple[int, int]  # (dialog id, question id)


def positions(task: TaskSpec, examples: list[Example]) -> dict[int, Position]:
    """Example id -> (dialog id, question id): from meta where given, else from the id as
    the official process_docs derives them (offset from the smallest id of the split)."""
    spec = task.dialogue
    first = min((e.id for e in examples), default=0)
    out = {}
    for e in examples:
        if isinstance(e.meta.get("dialog_id"), int) and isinstance(e.meta.get("question_id"), int):
            out[e.id] = (e.meta["dialog_id"], e.meta["question_id"])
        else:
            offset = e.id - first
            out[e.id] = divmod(offset, spec.questions_per_dialogue)
    if len(set(out.values())) != len(out):
        raise MeraError(f"{task.key}: two examples share a dialogue position (dialog_id, "
                        f"question_id): the dialogue order is ambiguous")
    return out


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
