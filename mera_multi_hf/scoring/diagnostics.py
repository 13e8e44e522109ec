"""Answer diagnostics: how a model answers, reported apart from the official metrics.

- format failures: answers outside the task's answer space after the official filters
  (a letter task: no valid letter; a JSON task: not a JSON object; a free task: empty),
  so a model that cannot follow the format is told apart from one that answers wrongly;
- for letter tasks, the answer distribution against the gold one, with a chi-square test
  of homogeneity (a letter or position bias, e.g. always "A");
- for tasks whose groups are pairs of one item's ranked answers (the declaration's
  ``pairwise_ranking``: ruHHH), ranking consistency: intransitive triads in the model's
  pairwise preferences, Kendall's tau between the model's order and the annotators'
  (rebuilt from the gold answers) per group, position consistency where a pair is shown
  in both orders, and the rate of picking the first-shown option against the gold rate.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter, defaultdict

import numpy as np

from mera_multi_hf.scoring.metric_exact_match import normalize
from mera_multi_hf.scoring.metric_ruslun import _parse_prediction
from mera_multi_hf.scoring.records import TaskResult
from mera_multi_hf.scoring.registry import averaged_over_examples, display_name

SHOWN_IDS = 10  # example ids listed with a count


def _letter_of(task, answer: str, mode: str) -> str | None:
    """The choice an answer names (compared as exact match compares), or None."""
    return _letter(task.choices, mode, answer)


@functools.lru_cache(maxsize=1024)  # a task's answers repeat: each diagnostic asks again
def _letter(choices: tuple[str, ...], mode: str, answer: str) -> str | None:
    return _choice_table(choices, mode).get(normalize(answer, mode))


@functools.lru_cache(maxsize=64)
def _choice_table(choices: tuple[str, ...], mode: str) -> dict[str, str]:
    """Each choice by its normalised form: made once, not once per answer."""
    return {normalize(c, mode): c for c in choices}


def _valid(task, answer: str, mode: str) -> bool:
    if task.answer_kind == "letter":
        return _letter_of(task, answer, mode) is not None
    if task.answer_kind == "json":  # as the official scorer reads it
        return _parse_prediction(answer) is not None
    return bool(answer.strip())


RULES = {
    "letter": "no valid letter (one of the task's choices, compared as exact match does)",
    "json": "not a JSON object (as the official scorer parses it)",
    "free": "empty",
}


def format_failures(task, examples, answers: list[str], mode: str) -> dict:
    bad = [e.id for e, a in zip(examples, answers) if not _valid(task, a, mode)]
    return {
        "rule": RULES.get(task.answer_kind, "empty"),
        "n": len(answers),
        "failures": len(bad),
        "rate": len(bad) / len(answers) if answers else None,
        "ids": bad[:SHOWN_IDS],
    }


def answer_distribution(task, examples, answers: list[str], mode: str) -> dict:
    """Counts of each choice among the model's valid answers and among the golds, and a
    chi-square test that the two come from one distribution."""
    model = Counter(_letter_of(task, a, mode) for a in answers)
    model.pop(None, None)
    gold = Counter(_letter_of(task, e.gold, mode) for e in examples if isinstance(e.gold, str))
    gold.pop(None, None)
    letters = [c for c in task.choices if model[c] or gold[c]]
    out = {
        "model": {c: model[c] for c in letters},
        "gold": {c: gold[c] for c in letters},
        "chi2": None,
        "dof": None,
        "p_value": None,
    }
    if len(letters) >= 2 and sum(model.values()) and sum(gold.values()):
        table = np.array([[model[c] for c in letters], [gold[c] for c in letters]], dtype=float)
        expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
        chi2 = float(np.sum((table - expected) ** 2 / expected))
        out.update(chi2=chi2, dof=len(letters) - 1, p_value=chi2_sf(chi2, len(letters) - 1))
    return out


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for a chi-square variable with an integer number of degrees of freedom
    (the closed forms of the regularised upper incomplete gamma; scipy's import alone
    costs more than a whole scoring)."""
    half = x / 2
    if dof % 2 == 0:
        terms, term = 0.0, 1.0
        for i in range(dof // 2):
            term = 1.0 if i == 0 else term * half / i
            terms += term
        return min(1.0, math.exp(-half) * terms)
    total = math.erfc(math.sqrt(half))
    for i in range(1, (dof + 1) // 2):  # exp(-h) h^(i-1/2) / Gamma(i+1/2)
        total += math.exp(-half + (i - 0.5) * math.log(half) - math.lgamma(i + 0.5)) if half else 0
    return min(1.0, total)


def kendall_tau_b(x, y) -> float | None:
    """Kendall's tau-b of two equally long sequences of numbers (ties allowed); None when
    one is constant. Plain Python: a ranking group has a handful of answers, where
    numpy's per-call overhead would be most of the cost (the sums are whole numbers: the
    same value either way)."""
    signs = [
        (_sign(x[i] - x[j]), _sign(y[i] - y[j]))
        for i, j in itertools.combinations(range(len(x)), 2)
    ]
    denominator = math.sqrt(sum(dx != 0 for dx, _ in signs) * sum(dy != 0 for _, dy in signs))
    return sum(dx * dy for dx, dy in signs) / denominator if denominator else None


def _sign(d) -> int:
    return (d > 0) - (d < 0)


def diagnostics(task, examples, answers: list[str], mode: str) -> dict:
    """The diagnostics of one task's filtered answers (examples with golds)."""
    out = {"format": format_failures(task, examples, answers, mode)}
    if task.answer_kind == "letter" and task.choices:
        out["answer_distribution"] = answer_distribution(task, examples, answers, mode)
    if task.pairwise_ranking:
        out["ranking"] = ranking_consistency(task, examples, answers, mode)
    return out


def _winner(task, example, letter: str | None):
    """The option text a letter picks in this example (None for no valid letter)."""
    if letter is None:
        return None
    position = task.choices.index(letter) % len(example.options)
    return example.options[position]


def _group_prefs(task, items, mode) -> dict:
    """One group's pairwise preferences: ordered shown pair -> (gold winner, model winner)."""
    out = {}
    for example, answer in items:
        shown = tuple(example.options[:2])
        out[shown] = (
            _winner(task, example, _letter_of(task, example.gold, mode)),
            _winner(task, example, _letter_of(task, answer, mode)),
        )
    return out


def _model_winners(prefs: dict) -> dict:
    """Unordered pair -> the model's winner, where it picked one consistently."""
    seen = defaultdict(set)
    for shown, (_, won) in prefs.items():
        if won is not None:
            seen[frozenset(shown)].add(won)
    return {pair: next(iter(w)) for pair, w in seen.items() if len(w) == 1}


def _triads(items: list[str], winners: dict) -> tuple[int, int]:
    """(intransitive triads, triads with all three preferences known)."""
    cyclic = checked = 0
    for triple in itertools.combinations(items, 3):
        pairs = [frozenset(p) for p in itertools.combinations(triple, 2)]
        if all(p in winners for p in pairs):
            checked += 1
            wins = Counter(winners[p] for p in pairs)
            cyclic += all(wins[t] == 1 for t in triple)
    return cyclic, checked


def _tau(items: list[str], prefs: dict) -> float | None:
    """Kendall's tau-b between the annotators' and the model's orders (wins per answer)."""
    gold = Counter(g for g, _ in prefs.values() if g is not None)
    model = Counter(m for _, m in prefs.values() if m is not None)
    if len(items) < 2:
        return None
    return kendall_tau_b([gold[t] for t in items], [model[t] for t in items])


def _position(prefs: dict) -> tuple[int, int]:
    """(pairs shown in both orders with two valid answers, of them answered alike)."""
    both = consistent = 0
    for (x, y), (_, won) in prefs.items():
        if x < y and (y, x) in prefs and won is not None and prefs[(y, x)][1] is not None:
            both += 1
            consistent += won == prefs[(y, x)][1]
    return both, consistent


def ranking_consistency(task, examples, answers: list[str], mode: str) -> dict:
    """The ranking diagnostics over the groups of a pairwise-ranking task."""
    groups = defaultdict(list)
    for example, answer in zip(examples, answers):
        groups[example.group].append((example, answer))
    taus, cyclic, checked, both, consistent = {}, 0, 0, 0, 0
    for group, items in sorted(groups.items()):
        prefs = _group_prefs(task, items, mode)
        texts = sorted({t for shown in prefs for t in shown})
        c, k = _triads(texts, _model_winners(prefs))
        cyclic, checked = cyclic + c, checked + k
        b, s = _position(prefs)
        both, consistent = both + b, consistent + s
        taus[group] = _tau(texts, prefs)
    defined = [t for t in taus.values() if t is not None]
    first = task.choices[0]
    picked = [_letter_of(task, a, mode) for a in answers]
    valid = [p for p in picked if p is not None]
    golds = [_letter_of(task, e.gold, mode) for e in examples]
    return {
        "groups": len(groups),
        "intransitive_triads": cyclic,
        "triads_checked": checked,
        "kendall_tau_mean": float(np.mean(defined)) if defined else None,
        "kendall_tau": {str(g): t for g, t in taus.items()},
        "position_pairs": both,
        "position_consistent": consistent,
        "position_consistency": consistent / both if both else None,
        "first_option_rate": valid.count(first) / len(valid) if valid else None,
        "gold_first_option_rate": golds.count(first) / len(golds) if golds else None,
    }


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ranking_lines(r: dict) -> list[str]:
    tau = "—" if r["kendall_tau_mean"] is None else f"{r['kendall_tau_mean']:.3f}"
    return [
        f"- ranking over {r['groups']} groups: {r['intransitive_triads']} intransitive "
        f"triads of {r['triads_checked']} checked; Kendall's tau with the annotators' "
        f"order, mean over groups {tau}; position consistency "
        f"{_pct(r['position_consistency'])} ({r['position_consistent']} of "
        f"{r['position_pairs']} pairs shown both ways); first-shown option picked "
        f"{_pct(r['first_option_rate'])} (gold {_pct(r['gold_first_option_rate'])})"
    ]


def _task_lines(result: TaskResult) -> list[str]:
    d = result.diagnostics
    scores = result.metrics  # beside the failures: the means over examples
    beside = "".join(
        f"; {display_name(m)} {scores[m]:.4f}"
        for m in averaged_over_examples(result.official_metrics)
        if m in scores
    )
    fmt = d["format"]
    lines = [
        f"### {result.task}",
        "",
        f"- format failures: {fmt['failures']} of {fmt['n']} ({_pct(fmt['rate'])}): "
        f"{fmt['rule']}{beside}",
    ]
    dist = d.get("answer_distribution")
    if dist:
        counts = ", ".join(f"{c} {dist['model'][c]}/{dist['gold'][c]}" for c in dist["model"])
        p = "—" if dist["p_value"] is None else f"{dist['p_value']:.3g}"
        lines.append(f"- answers/golds per letter: {counts}; chi-square p = {p}")
    if d.get("ranking"):
        lines += _ranking_lines(d["ranking"])
    return lines + [""]


def markdown_section(task_results: list[TaskResult]) -> list[str]:
    """The diagnostics section of results.md (tasks with gold answers only)."""
    shown = [r for r in task_results if r.scorable and r.diagnostics]
    if not shown:
        return []
    lines = [
        "",
        "## Answer diagnostics (not official metrics)",
        "",
        "How the model answers: answers outside the task's answer space after the "
        "official filters, letters chosen against the gold letters (a chi-square test "
        "of one distribution), and for ranking tasks how consistent its pairwise "
        "choices are.",
        "",
    ]
    for r in shown:
        lines += _task_lines(r)
    return lines
