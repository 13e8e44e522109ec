"""Prompt variants: which of a task's instruction templates an example carries.

MERA Multi gives each question one of about ten prompts per task. The variant is the
instruction as the example stores it, before its inputs are filled: the raw data's
integer index into its metadata's ``prompts`` where the data has one (``"i3"``), else
the template text itself (``"t"`` and the first 8 hex digits of its sha256). Where a
task's templates embed a block filled per example (ruHHH's task context by category),
the task declares the field that block follows (``TaskSpec.prompt_block``): its value
is the example's stratum, and variants are counted within it: the block's text is
found as the segments (lines, sentences) that every template of a stratum holds and no
template of another stratum does, and stands as ``{block}`` in the variant's text.
"""

from __future__ import annotations

import hashlib
import re

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


# Segments of a template: split at line ends and after a sentence's or a label's end.
_SEGMENT_END = re.compile(r"(\n|(?<=[.!?:;])[ \t]+)")
BLOCK = "{block}"


def _segments(text: str) -> list[str]:
    """Text and separators alternating: segments at even positions."""
    return _SEGMENT_END.split(text)


def without_blocks(texts_by_stratum: dict) -> dict[tuple, str]:
    r"""(stratum, instruction) -> the instruction with its stratum's block as ``{block}``.

    A stratum's block is what every one of its templates holds and no template of
    another stratum does: the same template filled for two strata then reads the same.

    >>> out = without_blocks({"a": ["Q.\nBe kind.\nA?", "R.\nBe kind.\nA?"],
    ...                       "b": ["Q.\nBe safe.\nA?", "R.\nBe safe.\nA?"]})
    >>> out[("a", "Q.\nBe kind.\nA?")] == out[("b", "Q.\nBe safe.\nA?")]
    True
    >>> out[("a", "R.\nBe kind.\nA?")]
    'R.\n{block}\nA?'
    """
    pieces = {s: {t: _segments(t) for t in set(texts)} for s, texts in texts_by_stratum.items()}
    out = {}
    for stratum, own in pieces.items():
        others = {
            seg for s, ts in pieces.items() if s != stratum for p in ts.values() for seg in p[::2]
        }
        shared = set.intersection(*(set(p[::2]) for p in own.values())) if own else set()
        block = {seg for seg in shared - others if seg.strip()}
        for text, parts in own.items():
            out[(stratum, text)] = _replaced(parts, block)
    return out


def _replaced(parts: list[str], block: set) -> str:
    """The text with each run of block segments (and the separators inside it) as one
    ``{block}``."""
    kept: list[str] = []
    for k, part in enumerate(parts):
        in_block = k % 2 == 0 and part in block
        if in_block and len(kept) >= 2 and kept[-2] == BLOCK:
            kept.pop()  # the separator between two block segments
            continue
        kept.append(BLOCK if in_block else part)
    return "".join(kept)
