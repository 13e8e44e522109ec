"""How a dataset card describes a metric: the name the official cards use and a default
(en, ru) text, for a card whose raw metadata gives none. Declarations, beside the task
table, so that building a dataset needs no scoring code."""

from __future__ import annotations

# metric (as the registry names it) -> (the official cards' name, English, Russian)
METRIC_CARDS = {
    "exact_match": (
        "Exact match",
        "The share of examples whose answer equals the gold answer (after the "
        "task's normalisation).",
        "Доля примеров, где ответ совпал с правильным (после нормализации задачи).",
    ),
    "group_exact_match": (
        "Group Exact match",
        "Examples are grouped (same media and question); a group counts only "
        "when all its examples are right; the mean over groups.",
        "Примеры группируются (одни медиа и вопрос); группа засчитывается, "
        "только если верны все её примеры; среднее по группам.",
    ),
    "judge_score": (
        "Judge score",
        "The share of answers a judge model labels correct.",
        "Доля ответов, которые модель-судья признала верными.",
    ),
}
# the official cards' name -> (English, Russian)
CARD_TEXT = {card: (en, ru) for card, en, ru in METRIC_CARDS.values()}
