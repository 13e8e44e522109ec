"""The benchmark's declared facts that the metric modules carry with them (each metric
Space holds a copy of this file, so it imports nothing): how to cite the benchmark, the
official answer marker and the judge's reading of it, ruSLUn's metric and filter rules
(the task table and the ruSLUn metric both read them)."""

from __future__ import annotations

# How to cite the benchmark: the dataset cards, the builders and the metric modules.
CITATION = """\
@misc{mera_multi_2025,
  title  = {MERA Multi: Multimodal Evaluation for Russian-language Architectures},
  author = {{MERA Team}},
  year   = {2025},
  url    = {https://mera.a-ai.ru/en/multi}
}
"""

# ruSLUn's declared rules.
RUSLUN_METRICS = ("intent_exact_match", "slot_f1")
# The corrected reading (case-insensitive on both sides): reported beside, never instead.
RUSLUN_CI_METRICS = ("intent_exact_match_ci", "slot_f1_ci")

# The official filter chain of ruSLUn, for callers that score raw generations.
RUSLUN_FILTERS = ("lowercase", "slot_clean")

# The exact-match normalisations (scoring.metric_exact_match): the official "mera", "strict"
# (as is) and "squad" (a later revision, for comparison). Here, with no numpy beside it, so
# that the options that offer them (`--em-mode`) load quickly.
EM_MODES = ("mera", "strict", "squad")

# The official answer marker, "ОТВЕТ": a declaration of the protocol that both the judge
# and the project's answer extraction follow.
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
