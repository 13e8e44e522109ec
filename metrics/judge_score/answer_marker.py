"""The official answer marker, "ОТВЕТ", and the judge's reading of it: a declaration of
the protocol that both the judge and the project's answer extraction follow."""

from __future__ import annotations

ANSWER_MARKER = "ОТВЕТ"


def official_answer_part(prediction: str) -> str:
    """The judge's second input (official): ``prediction.split("ОТВЕТ")[-1].strip()``.

    Case-sensitive; with no marker this is the whole prediction stripped.

    >>> official_answer_part("Рассуждаю... ОТВЕТ: синий ")
    ': синий'
    >>> official_answer_part("Ответ: синий")
    'Ответ: синий'
    """
    return prediction.split(ANSWER_MARKER)[-1].strip()
