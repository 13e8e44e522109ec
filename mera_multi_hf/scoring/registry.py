"""Every metric the project reports, once: how it is made per example, how it is
aggregated, its display name, its direction, and whether the leaderboard ranks by it or
a judge makes it, and how a dataset card describes it. Scoring, the reports, the chart,
the comparisons and the dataset cards read it; the formulas themselves are in the metric_* modules, one per family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mera_multi_hf.scoring.metric_groups import group_mean
from mera_multi_hf.scoring.metric_inputs import mean_score

# The per-example formulas load when a metric is computed: the registry's names and flags
# alone (`mera-multi metrics --help`, the reports' names) import no numpy.


def _exact_match(golds, preds, em_mode, task):
    """EM, and beside it the project's extra: EM of the answer extracted from a wordy reply."""
    from mera_multi_hf.scoring.metric_exact_match import (
        exact_match_scores,
        warn_if_squad_on_letters,
    )
    from mera_multi_hf.scoring.metric_extraction import extract_answer

    warn_if_squad_on_letters(em_mode, task.answer_kind)
    extracted = [extract_answer(p, task.choices or None) for p in preds]
    return {
        "exact_match": exact_match_scores(preds, golds, mode=em_mode),
        "exact_match_extracted": exact_match_scores(extracted, golds, mode=em_mode),
    }


def _slots(golds, preds, em_mode, task):
    from mera_multi_hf.scoring.metric_ruslun import slot_f1_scores

    intent, slots = slot_f1_scores(preds, golds, filtered=True)  # filters applied
    return {"intent_exact_match": intent, "slot_f1": slots}


@dataclass(frozen=True)
class Metric:
    name: str
    display: str  # how reports, the chart and the HTML page name it
    # (golds, filtered predictions, em_mode, task declaration) -> {name: per-example
    # array}; one call may make several metrics (ruSLUn's two, EM and extracted EM).
    # None: made from another metric or by the judge.
    per_example: Callable | None = None
    of: str | None = None  # a group metric: the per-example metric it groups
    # (scores, group ids) -> the task's number: `mean_score` (the mean over examples), or
    # `group_mean` of ``of``'s scores (the mean over groups of "every example scored 1")
    aggregate: Callable[[Sequence, Sequence], float] = mean_score
    higher_is_better: bool = True
    leaderboard: bool = True  # may be a task's leaderboard metric (which
    # ones a task is ranked by is its declaration's `leaderboard`)
    judge: bool = False  # computed only when a judge model is given
    official: bool = True  # False: the project's extra, never an official number
    space: bool = False  # has an evaluate module, the Space folder metrics/<name>/
    task_options: tuple[str, ...] = ()  # compute() options a task declaration gives (load_metric)
    # how a dataset card describes it: (the official cards' name, English, Russian), for a
    # card whose raw metadata gives no text
    card: tuple[str, str, str] | None = None


METRICS = {
    m.name: m
    for m in (
        Metric(
            "exact_match",
            "Exact match",
            _exact_match,
            space=True,
            task_options=("mode", "answer_kind", "choices"),
            card=(
                "Exact match",
                "The share of examples whose answer equals the gold answer (after the "
                "task's normalisation).",
                "Доля примеров, где ответ совпал с правильным (после нормализации задачи).",
            ),
        ),
        Metric(
            "group_exact_match",
            "Group exact match",
            of="exact_match",
            aggregate=group_mean,
            space=True,
            task_options=("mode", "answer_kind"),
            card=(
                "Group Exact match",
                "Examples are grouped (same media and question); a group counts only "
                "when all its examples are right; the mean over groups.",
                "Примеры группируются (одни медиа и вопрос); группа засчитывается, "
                "только если верны все её примеры; среднее по группам.",
            ),
        ),
        Metric(
            "judge_score",
            "Judge score",
            judge=True,
            space=True,
            card=(
                "Judge score",
                "The share of answers a judge model labels correct.",
                "Доля ответов, которые модель-судья признала верными.",
            ),
        ),
        Metric(
            "group_judge_score",
            "Group judge score",
            of="judge_score",
            aggregate=group_mean,
            judge=True,
        ),
        Metric("intent_exact_match", "Intent exact match", _slots),
        Metric("slot_f1", "Slot F1", _slots, space=True),  # its module makes intent EM too
        Metric(
            "exact_match_extracted",
            "Exact match after answer extraction (not official)",
            _exact_match,
            official=False,
            leaderboard=False,
        ),
    )
}

# Group metric -> the per-example metric whose groups it averages.
GROUP_OF = {m.name: m.of for m in METRICS.values() if m.of}
# The project's extra metrics (EM after answer extraction), never official numbers.
UNOFFICIAL = tuple(m.name for m in METRICS.values() if not m.official)
# The per-example metric a judge model makes (its group metric groups it).
JUDGED = next(m.name for m in METRICS.values() if m.judge and not m.of)
# The official cards' name of a metric -> its (English, Russian) description.
CARD_TEXT = {m.card[0]: m.card[1:] for m in METRICS.values() if m.card}
# Names shown for what is not a metric but sits in the same tables.
_OTHER_NAMES = {"task_score": "Task score (mean of the leaderboard metrics computed)"}


def display_name(name: str) -> str:
    """A metric's display name; an unknown name is shown as it is."""
    metric = METRICS.get(name)
    return metric.display if metric else _OTHER_NAMES.get(name, name)


def averaged_over_examples(names) -> list[str]:
    """Those of ``names`` that are means over examples (not over groups), in their order."""
    return [n for n in names if n in METRICS and METRICS[n].aggregate is mean_score]


def per_example_functions(names) -> list[Callable]:
    """The functions that make the per-example scores of ``names``, each once."""
    out = []
    for name in names:
        fn = METRICS[name].per_example if name in METRICS else None
        if fn is not None and fn not in out:
            out.append(fn)
    return out


def aggregate(scores: dict, groups: list, names) -> dict[str, float]:
    """Each of ``names`` that ``scores`` (name -> per-example array) can make, by its
    metric's aggregate: the mean, or for a group metric the group mean of its
    per-example metric (a name not in the registry: the mean). No examples is an error
    (:func:`~.metric_inputs.mean_score`), never a silent 0."""
    out = {}
    for name in names:
        metric = METRICS.get(name)
        source = metric.of if metric is not None and metric.of else name
        if source in scores:
            aggregate = metric.aggregate if metric is not None else mean_score
            out[name] = aggregate(scores[source], groups)
    return out
