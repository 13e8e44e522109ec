"""Prompt variants: which of a task's instruction templates an example carries.

MERA Multi gives each question one of about ten prompts per task. The variant is the
instruction as the example stores it, before its inputs are filled: the raw data's
integer index into its metadata's ``prompts`` where the data has one (``"i3"``), else
the template text itself (``"t"`` and the first 8 hex digits of its sha256). Where a
task's templates embed a block filled per example (ruHHH's task context by category),
the task declares the field that block follows (``TaskSpec.prompt_block``): its value
is the example's stratum, and variants are counted within it.
"""

from __future__ import annotations

import hashlib

from mera_multi_hf.tasks.declarations import ANSWER_MARKER


def variant_id(instruction: str, prompt_list: list[str] | None = None) -> str:
    """The stable short id of a template: ``i<N>`` when it is prompt N of the raw
    folder's prompt list, else ``t`` + 8 hex digits of its sha256.

    >>> variant_id("Вопрос: {question}", ["Ответь.", "Вопрос: {question}"])
    'i1'
    >>> variant_id("Вопрос: {question}")
    't86c04bad'
    """
    if prompt_list and instruction in prompt_list:
        return f"i{prompt_list.index(instruction)}"
    return "t" + hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:8]


def numbered(ids: list[str]) -> list[int]:
    """Each id's number, 1-based, in order of first appearance.

    >>> numbered(["t2", "t1", "t2", "t9"])
    [1, 2, 1, 3]
    """
    order: dict[str, int] = {}
    return [order.setdefault(i, len(order) + 1) for i in ids]


def asks_reasoning_before_marker(template: str) -> bool:
    """Whether a template asks for the answer after the official marker (``ОТВЕТ``, as
    the official prompts write it: reasoning first, then the marker and the answer). A
    reply that follows it is not a whole-answer match however right it is."""
    return ANSWER_MARKER in template
