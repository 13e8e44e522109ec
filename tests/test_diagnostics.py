"""Answer diagnostics on constructed answers whose diagnostics are known: format
failures, the letter distribution against the gold one (chi-square as scipy computes
it), and ranking consistency over groups of ranked answer pairs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from scipy.stats import chi2, chi2_contingency, kendalltau

from mera_multi_hf.data.examples import Example
from mera_multi_hf.scoring.diagnostics import chi2_sf, diagnostics, kendall_tau_b
from mera_multi_hf.tasks.table import get_task

# a task declared with pairwise ranking that is not ruHHH by name: the declaration drives it
PAIRS = replace(get_task("ruhhh_image"), key="my_pairs")
RANK = ["best", "middle", "worst"]  # the annotators' order of one item's answers


def _pair(i, group, first, second):
    """An example showing two of the group's answers; gold: the better one's letter."""
    gold = "A" if RANK.index(first) < RANK.index(second) else "B"
    return Example(
        task=PAIRS.key,
        id=i,
        index=i,
        prompt="",
        media_fields=(),
        gold=gold,
        group=group,
        options=(first, second),
        meta={"id": i},
    )


def _group(group, shown):
    return [_pair(10 * group + k, group, a, b) for k, (a, b) in enumerate(shown)]


def _answers(examples, prefer):
    """The letter of the option the model prefers by ``prefer(x, y) -> winner``."""
    return ["A" if prefer(*e.options) == e.options[0] else "B" for e in examples]


TRIANGLE = [("best", "middle"), ("worst", "middle"), ("best", "worst")]


def test_agreeing_cyclic_and_reversed_models():
    examples = _group(1, TRIANGLE)
    agree = diagnostics(PAIRS, examples, [e.gold for e in examples], "mera")["ranking"]
    assert (agree["intransitive_triads"], agree["triads_checked"]) == (0, 1)
    assert agree["kendall_tau_mean"] == 1.0
    beats = {
        ("best", "middle"): "best",
        ("middle", "worst"): "middle",
        ("best", "worst"): "worst",
    }  # a cycle: best > middle > worst > best
    cyclic = _answers(examples, lambda x, y: beats.get((x, y)) or beats[(y, x)])
    r = diagnostics(PAIRS, examples, cyclic, "mera")["ranking"]
    assert r["intransitive_triads"] == 1 and r["kendall_tau"]["1"] is None  # all tied
    reverse = _answers(examples, lambda x, y: max(x, y, key=RANK.index))
    assert diagnostics(PAIRS, examples, reverse, "mera")["ranking"]["kendall_tau_mean"] == -1.0


def test_position_consistency_and_first_option_rate():
    examples = _group(2, [("best", "middle"), ("middle", "best")])
    always_a = diagnostics(PAIRS, examples, ["A", "A"], "mera")["ranking"]
    assert (always_a["position_pairs"], always_a["position_consistent"]) == (1, 0)
    assert always_a["first_option_rate"] == 1.0 and always_a["gold_first_option_rate"] == 0.5
    same = diagnostics(PAIRS, examples, ["A", "B"], "mera")["ranking"]
    assert same["position_consistency"] == 1.0 and same["first_option_rate"] == 0.5
    # an answer with no valid letter gives no preference
    none = diagnostics(PAIRS, examples, ["A", "maybe"], "mera")["ranking"]
    assert none["position_pairs"] == 0 and none["first_option_rate"] == 1.0


def test_mean_tau_over_groups_and_other_tasks_have_no_ranking():
    first, second = _group(1, TRIANGLE), _group(2, TRIANGLE)
    answers = [e.gold for e in first] + _answers(second, lambda x, y: max(x, y, key=RANK.index))
    r = diagnostics(PAIRS, first + second, answers, "mera")["ranking"]
    assert r["groups"] == 2 and r["kendall_tau_mean"] == 0.0
    plain = replace(PAIRS, pairwise_ranking=False)
    assert "ranking" not in diagnostics(plain, first, answers[:3], "mera")


def test_format_failures_follow_the_answer_kind_and_em_mode():
    examples = [_pair(i, i, "best", "middle") for i in range(5)]
    answers = ["A", "B", "C", "", "a."]
    assert diagnostics(PAIRS, examples, answers, "mera")["format"]["failures"] == 2
    strict = diagnostics(PAIRS, examples, answers, "strict")["format"]
    assert strict["failures"] == 3 and strict["ids"] == [2, 3, 4] and strict["rate"] == 0.6
    slots = diagnostics(get_task("ruslun"), examples[:2], ['{"intent": "x"}', "intent x"], "mera")
    assert slots["format"]["failures"] == 1 and "answer_distribution" not in slots
    free = diagnostics(get_task("ruclevr"), examples[:2], ["три", "  "], "mera")
    assert free["format"]["failures"] == 1


def test_letter_bias_against_the_gold_distribution_matches_scipy():
    task = get_task("commonvideoqa")
    golds = "ABCD" * 10
    examples = [
        Example(task=task.key, id=i, index=i, prompt="", media_fields=(), gold=g, group=i)
        for i, g in enumerate(golds)
    ]
    answers = ["A"] * 30 + list("BCDB" * 2) + ["x", "y"]
    d = diagnostics(task, examples, answers, "strict")["answer_distribution"]
    assert d["model"] == {"A": 30, "B": 4, "C": 2, "D": 2} and d["gold"]["A"] == 10
    expected = chi2_contingency(
        [list(d["model"].values()), list(d["gold"].values())], correction=False
    )
    assert d["chi2"] == pytest.approx(expected.statistic) and d["dof"] == expected.dof == 3
    assert d["p_value"] == pytest.approx(expected.pvalue) and d["p_value"] < 1e-4


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 7])
def test_chi2_sf_and_kendall_tau_b_match_scipy(dof):
    for x in (0.0, 0.2, 1.5, 6.0, 30.0):
        assert chi2_sf(x, dof) == pytest.approx(chi2.sf(x, dof), rel=1e-9, abs=1e-15)
    a, b = [3, 1, 2, 2, 0, 1][: dof + 2], [1, 1, 2, 3, 0, 2][: dof + 2]
    assert kendall_tau_b(a, b) == pytest.approx(kendalltau(a, b).statistic)
