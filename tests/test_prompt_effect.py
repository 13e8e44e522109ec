"""The prompt-variant permutation test against an independent computation: every distinct
labelling of small constructed data enumerated here (and scipy's exact permutation test
where there are no strata), with a known effect (small p) and with none (large p),
clusters moved whole, strata respected, both ways of drawing a shuffle."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import product

import numpy as np
import pytest
from scipy import stats

from mera_multi_hf.scoring.prompt_effect import permutation_test

ROUNDS = 20_000
# the sequential test stops once this many shuffles reach the observed statistic: high
# here, so its p (STOP / shuffles drawn) is within a few percent of the exact p
STOP = 2_000


def arrangements(labels):
    """Every distinct ordering of a multiset of labels (each once)."""
    if not labels:
        yield ()
        return
    for first in sorted(set(labels)):
        rest = list(labels)
        rest.remove(first)
        for tail in arrangements(rest):
            yield (first, *tail)


def between_sum_of_squares(scores, labels, strata) -> float:
    """sum over labels of n * (mean of the stratum-centred scores)^2, plainly."""
    by_stratum = defaultdict(list)
    for x, s in zip(scores, strata):
        by_stratum[s].append(x)
    centre = {s: sum(xs) / len(xs) for s, xs in by_stratum.items()}
    total, count = defaultdict(float), defaultdict(int)
    for x, label, s in zip(scores, labels, strata):
        total[label] += x - centre[s]
        count[label] += 1
    return sum(total[v] ** 2 / count[v] for v in total)


def exact_p(scores, variants, strata=None, clusters=None) -> float:
    """The share of all labellings of whole units (clusters, or examples), each kept in
    its stratum, whose statistic reaches the observed one."""
    n = len(scores)
    strata = [0] * n if strata is None else list(strata)
    clusters = list(range(n)) if clusters is None else list(clusters)
    members = defaultdict(list)
    for i, c in enumerate(clusters):
        members[c].append(i)
    units = sorted(members)
    # a cluster whose examples lie in several strata is exchangeable with those of the same
    unit_stratum = {c: tuple(sorted({strata[i] for i in members[c]})) for c in units}
    groups = [
        [c for c in units if unit_stratum[c] == s] for s in sorted(set(unit_stratum.values()))
    ]
    observed = between_sum_of_squares(scores, variants, strata)
    reach = total = 0
    for choice in product(
        *(list(arrangements([variants[members[c][0]] for c in g])) for g in groups)
    ):
        labels = [None] * n
        for group, assigned in zip(groups, choice):
            for c, label in zip(group, assigned):
                for i in members[c]:
                    labels[i] = label
        total += 1
        reach += between_sum_of_squares(scores, labels, strata) >= observed - 1e-9
    return reach / total


def close(effect, p: float) -> bool:
    """Within Monte Carlo error of the exact p: p_hat = (1 + hits) / (1 + rounds) after all
    the rounds (binomial error), or stop_after / shuffles when it stopped early (Besag and
    Clifford: a relative error of about sqrt((1 - p) / stop_after))."""
    p_hat = effect.p_value
    if effect.stopped_early:
        return abs(p_hat - p) <= 4 * p * math.sqrt((1 - p) / STOP) + 2 / ROUNDS
    return abs(p_hat - p) <= 4 * math.sqrt(p * (1 - p) / ROUNDS) + 2 / ROUNDS


def test_a_known_effect_gives_a_small_p_equal_to_the_exact_one():
    scores = [1, 1, 1, 1, 1, 0.5, 1, 0, 0, 0, 0.5, 0, 0, 0, 0, 0]
    variants = list("aaaaaaaabbbbbbbb")
    effect = permutation_test(scores, variants, rounds=ROUNDS, stop_after=STOP, seed=1)
    p = exact_p(scores, variants)
    assert p < 0.01 and close(effect, p)
    assert effect.unit == "cluster" and effect.n_variants == 2
    assert (effect.best, effect.worst) == ("a", "b")
    assert effect.spread == pytest.approx(6.5 / 8 - 0.5 / 8)
    assert "depends on the prompt" in effect.sentence() and "no evidence" not in effect.sentence()


def test_no_effect_gives_a_large_p_equal_to_the_exact_one_and_to_scipys():
    scores = [1, 0, 1, 0, 1, 1, 0, 1, 0]
    variants = list("aaabbbccc")
    effect = permutation_test(scores, variants, rounds=ROUNDS, stop_after=STOP, seed=2)
    p = exact_p(scores, variants)
    samples = [np.array([s for s, v in zip(scores, variants) if v == k], float) for k in "abc"]
    scipy_p = stats.permutation_test(
        samples,
        lambda *xs: between_sum_of_squares(
            np.concatenate(xs), np.repeat(range(len(xs)), [len(x) for x in xs]), [0] * 9
        ),
        permutation_type="independent",
        n_resamples=np.inf,
        alternative="greater",
        vectorized=False,
    ).pvalue
    assert p > 0.5 and scipy_p == pytest.approx(p)
    assert close(effect, p)
    assert effect.sentence().startswith("no evidence")


def test_clusters_move_whole():
    """Four clusters of three equal scores, two per variant: by examples the gap looks
    certain; moved whole there are only six labellings, so p is 2/6."""
    scores = [1] * 6 + [0] * 6
    clusters = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    variants = ["a"] * 6 + ["b"] * 6
    effect = permutation_test(
        scores, variants, clusters=clusters, rounds=ROUNDS, stop_after=STOP, seed=3
    )
    assert exact_p(scores, variants, clusters=clusters) == pytest.approx(2 / 6)
    assert close(effect, 2 / 6)
    by_example = permutation_test(scores, variants, rounds=ROUNDS, stop_after=STOP, seed=3)
    assert by_example.p_value < 0.01 and close(by_example, exact_p(scores, variants))


def test_clusters_of_unequal_sizes_with_strata():
    scores = [1, 1, 0, 1, 0.5, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0]
    clusters = [0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 6, 6, 7, 7, 8, 9, 9, 10]
    strata = ["x"] * 9 + ["y"] * 9
    label = {
        0: "a",
        1: "a",
        2: "b",
        3: "c",
        4: "b",
        5: "a",
        6: "c",
        7: "a",
        8: "b",
        9: "c",
        10: "c",
    }
    variants = [label[c] for c in clusters]
    effect = permutation_test(
        scores, variants, strata, clusters, rounds=ROUNDS, stop_after=STOP, seed=4
    )
    assert close(effect, exact_p(scores, variants, strata, clusters))


def test_a_cluster_spanning_strata_moves_among_its_like():
    scores = [1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0]
    strata = list("xxxyxyxyyyxxyy")
    clusters = [0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9]
    label = dict(enumerate("abbaababab"))
    variants = [label[c] for c in clusters]
    effect = permutation_test(
        scores, variants, strata, clusters, rounds=ROUNDS, stop_after=STOP, seed=8
    )
    assert effect.unit == "cluster"
    assert close(effect, exact_p(scores, variants, strata, clusters))


def test_strata_are_respected():
    """Stratum x scores high and mostly gets variant a, y low and mostly b: pooled, the
    wording seems to matter; shuffled within the strata, it does not."""
    scores = [1, 1, 1, 1, 1, 1, 0, 1] + [0] * 8
    variants = list("aaaaaaab" + "abbbbbbb")
    strata = ["x"] * 8 + ["y"] * 8
    pooled = permutation_test(scores, variants, rounds=ROUNDS, stop_after=STOP, seed=5)
    within = permutation_test(scores, variants, strata, rounds=ROUNDS, stop_after=STOP, seed=5)
    assert pooled.p_value < 0.05 and close(pooled, exact_p(scores, variants))
    p = exact_p(scores, variants, strata)
    assert p > 0.5 and close(within, p)


def test_scores_of_many_values_are_shuffled_one_by_one_to_the_same_p():
    rng = np.random.default_rng(6)
    variants = list("aaabbbbccc")
    scores = rng.random(10) + np.where(np.array(variants) == "a", 0.6, 0.0)
    effect = permutation_test(scores, variants, rounds=ROUNDS, stop_after=STOP, seed=6)
    assert close(effect, exact_p(list(scores), variants))


def test_a_cluster_that_mixes_variants_shuffles_examples():
    scores = [1, 1, 0, 1, 0, 0, 1, 0, 1, 1]
    variants = list("ababacccab")
    clusters = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    effect = permutation_test(
        scores, variants, clusters=clusters, rounds=ROUNDS, stop_after=STOP, seed=7
    )
    assert effect.unit == "example" and effect.mixed_clusters == 4
    assert close(effect, exact_p(scores, variants))
    assert "4 clusters mix variants" in effect.sentence()


def test_a_prompt_tables_interval_is_the_normal_one_of_the_cluster_robust_error():
    from mera_multi_hf.scoring.uncertainty import normal_interval, table_units

    right = [1, 0, 0, 1] * 5
    table = {
        "cluster_by": "example",
        "id": list(range(20)),
        "group": list(range(20)),
        "cluster": list(range(20)),
        "scores": {"exact_match": right},
    }
    units = table_units(table, ["exact_match"], np.arange(1, 17))
    record = normal_interval(units["exact_match"], "example")
    picked = np.array(right[1:17], dtype=float)
    se = picked.std(ddof=1) / math.sqrt(len(picked))  # one example per cluster: sd/sqrt(n)
    assert units["exact_match"].value == pytest.approx(picked.mean())
    assert record["stderr"] == pytest.approx(se)
    assert (record["low"], record["high"]) == pytest.approx(
        (picked.mean() - 1.959964 * se, picked.mean() + 1.959964 * se), rel=1e-6
    )
    assert record["n"] == 16 and record["n_clusters"] == 16 and record["method"] == "normal"
    nearly_all = table_units(table, ["exact_match"], [0, 1, 3, 4, 7])["exact_match"]
    assert normal_interval(nearly_all, "example")["high"] == 1.0  # 0.8 + 1.96 * 0.2 > 1


def test_seeded_and_one_variant_is_nothing_to_test():
    scores, variants = [1, 0, 1, 1, 0, 0], list("aabbcc")
    assert permutation_test(scores, variants, seed=9) == permutation_test(scores, variants, seed=9)
    one = permutation_test(scores, ["v1"] * 6)
    assert one.p_value is None and one.best == "v1" and one.spread == 0
    assert one.sentence() == "one prompt variant (v1): nothing to compare"
    with pytest.raises(ValueError, match="one length"):
        permutation_test(scores, variants[:5])


def test_the_default_test_stops_early_where_p_is_large_and_draws_every_round_where_small():
    """Besag and Clifford's sequential p: with no effect, stop_after (10) shuffles reach the
    observed statistic within a few dozen, and p = 10 / shuffles drawn, near the exact p;
    with a strong effect hardly any shuffle reaches it, so all the rounds are drawn."""
    from mera_multi_hf.scoring.prompt_effect import ROUNDS as DEFAULT
    from mera_multi_hf.scoring.prompt_effect import STOP_AFTER

    scores = [1, 0, 1, 0, 1, 1, 0, 1, 0]
    variants = list("aaabbbccc")
    none = permutation_test(scores, variants, seed=10)
    assert none.rounds < 100 and none.p_value == pytest.approx(STOP_AFTER / none.rounds)
    p = exact_p(scores, variants)
    assert abs(none.p_value - p) <= 4 * p * math.sqrt((1 - p) / STOP_AFTER)
    assert permutation_test(scores, variants, seed=10) == none  # seeded
    strong = permutation_test([1] * 8 + [0] * 8, ["a"] * 8 + ["b"] * 8, seed=11)
    assert strong.rounds == DEFAULT and strong.p_value == pytest.approx(1 / (1 + DEFAULT))
    assert f"({DEFAULT} shuffles of clusters)" in strong.sentence() and not strong.stopped_early
    assert none.stopped_early and "stopped once 10 reached" in none.sentence()
