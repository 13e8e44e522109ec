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

from mera_multi_hf.data.examples import Example
from mera_multi_hf.generation.request import Turn
from mera_multi_hf.tasks.dialogue import dialogues, reduce_answer
from mera_multi_hf.tasks.spec import TaskSpec


def walk(
    task: TaskSpec,
    examples: list[Example],
    *,
    context_turns: int,
    answer,
    make,
    rank: int = 0,
    world: int = 1,
):
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
                Turn(
                    text=items[j].instruction,
                    media=requests[d][j].media,
                    answer=reduce_answer(task, answer(requests[d][j])),
                    index=items[j].index,
                )
                for j in range(start, k)
            ]
            wave.append(request)
        yield wave
