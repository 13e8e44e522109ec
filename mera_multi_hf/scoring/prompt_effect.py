"""Does a task's score depend on the prompt variant? A seeded permutation test.

MERA Multi gives each question one of about ten wordings (prompt variants). If the wording
changed no answer's score, the variant labels would be exchangeable within the task's
declared strata (the per-example block a template is filled with, such as ruHHH-Image's
category), so shuffling them there shows how large the statistic gets by chance. The
statistic is the between-variant sum of squares of the scores, centred within strata:
``T = sum over variants of (sum of residuals)^2 / examples``, the numerator of a one-way
ANOVA, large when the variants' means differ. ``p = (1 + #{T_shuffled >= T}) / (1 + rounds)``
(the +1 counts the observed labelling, so p is never 0).

Shuffles are drawn in batches and the test stops early, as Besag and Clifford's sequential
test (1991): once ``stop_after`` shuffles have reached the observed statistic, after ``k``
shuffles, ``p = stop_after / k``, a valid p-value; so where p is large (most tasks) a few
dozen shuffles settle it, and only a small p (where the decision is close) takes all
``rounds``.

Examples of one cluster (the task's ``cluster_by``: a ruHHH group, a ruTiE dialogue) move
together: a cluster carries one variant, and a shuffle deals whole clusters out to the
variants. A cluster that mixes variants shows that the wording was drawn per example; then
the examples are shuffled (within strata) instead, which stays exact under the null (the
test leans on how the wordings were assigned, not on examples being independent), and the
result says so (``unit``, ``mixed_clusters``).

A shuffle is drawn as a table of counts: clusters alike in stratum, size and score sum are
interchangeable, so a shuffle is fixed by how many clusters of each kind go to each variant,
a multivariate hypergeometric draw made one univariate draw at a time, vectorised over the
rounds: for 0/1 scores one numpy draw per stratum, whatever the task's size. With many
kinds (scores of many distinct values) the clusters are shuffled one by one instead. Labels
that are small integers (the table's numbers, ids) are numbered by counting, not sorting.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from mera_multi_hf.scoring.uncertainty import SEED

ROUNDS = 1000  # shuffles per test: p-values down to 1/1001 (a Monte Carlo error of 0.007 at 0.05)
STOP_AFTER = 10  # shuffles reaching the observed statistic that end the test early
FIRST_BATCH = 16  # shuffles drawn at first; each later batch doubles the shuffles drawn
LEVEL = 0.05  # the sentence says "depends" below it
CELLS_PER_CHUNK = 4_000_000  # shuffled labels held at once on the one-by-one path


@dataclass(frozen=True)
class PromptEffect:
    """The test's outcome. ``p_value``: None with fewer than two variants; ``spread``: the
    best variant's mean score minus the worst's (raw means, examples weighted equally);
    ``unit``: what was shuffled, "cluster" or "example" (when ``mixed_clusters`` > 0);
    ``rounds``: the shuffles drawn (fewer than asked when ``stop_after`` of them reached the
    observed statistic first: ``stopped_early``)."""

    p_value: float | None
    spread: float
    best: str | None
    worst: str | None
    rounds: int
    unit: str = "cluster"
    mixed_clusters: int = 0
    n_variants: int = 0
    statistic: float = 0.0
    stopped_early: bool = False
    stop_after: int | None = None

    def to_dict(self) -> dict:
        return dict(vars(self))  # plain values: no deep copy (asdict's) needed

    def sentence(self) -> str:
        """One line for the reports: the verdict, the p-value and the spread."""
        if self.p_value is None:
            return f"one prompt variant ({self.best}): nothing to compare"
        verdict = (
            "the score depends on the prompt"
            if self.p_value < LEVEL
            else "no evidence that the score depends on the prompt"
        )
        shuffled = f"{self.unit}s" + (
            f"; {self.mixed_clusters} clusters mix variants" if self.mixed_clusters else ""
        )
        if self.stopped_early:
            shuffled += f", stopped once {self.stop_after} reached the observed statistic"
        return (
            f"{verdict}: permutation test p = {self.p_value:.3g} ({self.rounds} shuffles of "
            f"{shuffled}); best variant {self.best} − worst {self.worst} = {self.spread:+.4f}"
        )


def _codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Each value's index into the sorted distinct values, and those values."""
    values = np.asarray(values)
    if values.dtype == object:  # labels of mixed types: compare them as text
        values = values.astype(str)
    if values.dtype.kind in "iu" and len(values) and values.min() >= 0:
        if values.max() < 16 * len(values) + 1024:  # small integers (numbers, ids): counted
            present = np.bincount(values) > 0
            if present.all():  # already numbered 0, 1, ... (groups): their own codes
                return values.astype(np.intp, copy=False), np.arange(len(present))
            return (np.cumsum(present) - 1)[values], np.flatnonzero(present)
    names, codes = np.unique(values, return_inverse=True)
    return codes.ravel(), names


def permutation_test(
    scores,
    variants,
    strata=None,
    clusters=None,
    *,
    names=None,
    rounds: int = ROUNDS,
    stop_after: int | None = STOP_AFTER,
    seed=SEED,
) -> PromptEffect:
    """Whether ``scores`` (one number per example) depend on ``variants`` (each example's
    prompt variant), shuffling within ``strata`` (None: one stratum) and keeping
    ``clusters`` together (None: every example its own); at most ``rounds`` shuffles,
    stopping once ``stop_after`` reach the observed statistic (None: all ``rounds``).
    ``seed``: an int or a sequence of ints (numpy's SeedSequence); the same inputs and
    seed give the same p-value. ``names`` given: the labels are already numbered 0, 1, ...
    with no number unused (``variants`` indexes ``names``), as the prompt table has
    numbered its columns for its own rows, and are not numbered again."""
    scores = np.asarray(scores, dtype=float)
    n = len(scores)
    if any(labels is not None and len(labels) != n for labels in (variants, strata, clusters)):
        raise ValueError("scores, variants, strata and clusters must be of one length")
    if not np.isfinite(scores).all():
        raise ValueError("every score must be a finite number")
    if names is None:
        variants, names = _codes(variants)
        strata = None if strata is None else _codes(strata)[0]
        clusters = None if clusters is None else _codes(clusters)[0]
    return _numbered_test(scores, variants, names, strata, clusters, rounds, stop_after, seed)


def _numbered_test(scores, variant, names, stratum, cluster, rounds, stop_after, seed):
    """:func:`permutation_test` on labels numbered 0, 1, ... (``stratum`` None: one
    stratum, ``cluster`` None: every example alone)."""
    n_variants = len(names)
    if n_variants < 2:
        return PromptEffect(None, 0.0, _name(names), _name(names), 0, n_variants=n_variants)
    stratum = np.zeros(len(scores), dtype=int) if stratum is None else stratum
    counts = np.bincount(variant, minlength=n_variants)
    means = np.bincount(variant, weights=scores, minlength=n_variants) / counts
    best, worst = int(np.argmax(means)), int(np.argmin(means))
    centre = np.bincount(stratum, weights=scores) / np.bincount(stratum)
    units = _units(scores, scores - centre[stratum], variant, stratum, cluster)
    observed = float(
        _statistic(
            np.bincount(units["variant"], weights=units["sum"], minlength=n_variants),
            np.bincount(units["variant"], weights=units["size"], minlength=n_variants),
        )
    )
    plan = _plan(units, n_variants)
    p_value, drawn, stopped = _sequential_p(plan, observed, rounds, stop_after, seed)
    return PromptEffect(
        p_value=p_value,
        spread=float(means[best] - means[worst]),
        best=_name(names, best),
        worst=_name(names, worst),
        rounds=drawn,
        unit=units["kind"],
        mixed_clusters=units["mixed"],
        n_variants=n_variants,
        statistic=observed,
        stopped_early=stopped,
        stop_after=stop_after,
    )


def _sequential_p(plan: dict, observed: float, rounds, stop_after, seed) -> tuple:
    """The p-value, the shuffles drawn and whether it stopped early: batches of shuffles
    until ``stop_after`` reach ``observed`` (p = stop_after / shuffles up to that one) or
    ``rounds`` are drawn (p = (1 + reached) / (1 + rounds)). The batches follow a fixed
    schedule, so a seed gives one p-value."""
    # an int seed's SeedSequence made once (default_rng would make it again each test)
    seed = _seed_sequence(seed) if isinstance(seed, int) else seed
    rng, reached, drawn = np.random.default_rng(seed), 0, 0
    reach = observed - 1e-9 * abs(observed) - 1e-12  # float ties count as reaching it
    while drawn < rounds:
        batch = min(rounds - drawn, max(FIRST_BATCH, drawn))
        hits = np.cumsum(_statistic(*_shuffled_totals(plan, batch, rng)) >= reach)
        total = int(hits[-1])
        if stop_after is not None and reached + total >= stop_after:
            last = drawn + 1 + int(np.searchsorted(hits, stop_after - reached))
            return stop_after / last, last, True
        reached, drawn = reached + total, drawn + batch
    return (1 + reached) / (1 + rounds), rounds, False


@cache
def _seed_sequence(seed: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed)


def _name(names, k: int = 0) -> str | None:
    return str(names[k]) if len(names) else None


def _statistic(sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Between-variant sum of squares of centred scores (along the last axis); every
    variant holds a unit, so no size is 0."""
    return (sums**2 / sizes).sum(axis=-1)


def _units(scores, residual, variant, stratum, cluster) -> dict:
    """What a shuffle moves: the clusters (each with its variant, stratum, size, and sums of
    scores and of residuals), or the examples when some cluster mixes variants. A cluster
    whose examples lie in several strata is exchangeable with clusters of the same strata.
    ``cluster`` None: every example is a cluster of its own."""
    examples = {
        "kind": "cluster",  # each example alone: a cluster of one
        "mixed": 0,
        "variant": variant,
        "stratum": stratum,
        "size": np.ones(len(variant), dtype=int),
        "score": scores,
        "sum": residual,
    }
    if cluster is None:
        return examples
    n_clusters = int(cluster.max()) + 1
    own, mixes = _within(variant, cluster, n_clusters)
    mixed = int(mixes.sum())
    if mixed:
        return {**examples, "kind": "example", "mixed": mixed}
    return {
        "kind": "cluster",
        "mixed": 0,
        "variant": own,
        "stratum": _cluster_strata(stratum, cluster, n_clusters),
        "size": np.bincount(cluster, minlength=n_clusters),
        "score": np.bincount(cluster, weights=scores, minlength=n_clusters),
        "sum": np.bincount(cluster, weights=residual, minlength=n_clusters),
    }


def _within(codes, cluster, n_clusters) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's code (one of its examples'), and whether its examples' codes differ."""
    own = np.zeros(n_clusters, dtype=codes.dtype)
    own[cluster] = codes
    return own, np.bincount(cluster, weights=own[cluster] != codes, minlength=n_clusters) > 0


def _cluster_strata(stratum, cluster, n_clusters) -> np.ndarray:
    """Each cluster's stratum; a cluster spanning several is given the set of them."""
    own, spans = _within(stratum, cluster, n_clusters)
    if not spans.any():
        return own
    pairs = np.unique(np.stack([cluster, stratum]), axis=1)
    joined = [[] for _ in range(n_clusters)]
    for c, s in pairs.T:
        joined[c].append(str(s))
    return _codes([",".join(strata) for strata in joined])[0]


def _plan(units: dict, n_variants: int) -> dict:
    """How the shuffles are drawn, prepared once for every batch. On the kinds path every
    unit is first counted as its stratum's last kind (``base``: per variant, what that gives
    every shuffle), and a draw moves units to the other kinds; a stratum of more kinds than
    it has units for each variant is dealt one by one. ``deals``: a function and its
    arguments (before the totals and the generator) per stratum that draws. A task has a
    few strata and kinds: they are walked in Python, numpy's calls cost more there."""
    stratum, variant = units["stratum"], units["variant"]
    n_strata = int(stratum.max()) + 1
    capacity = np.bincount(stratum * n_variants + variant, minlength=n_strata * n_variants)
    capacity = capacity.reshape(n_strata, n_variants)
    kinds, many, bounds = _kinds(units, n_strata)
    base, loose, deals = [], [], []
    for s, row in enumerate(capacity.tolist()):
        first, end = bounds[s], bounds[s + 1]
        last = kinds[end - 1]
        if (end - first) * (n_variants - row.count(0)) > sum(row):
            base.append((0.0, 0.0))
            loose.append((_deal_one_by_one, (units, np.flatnonzero(stratum == s))))
            continue
        base.append(last)
        if end - first > 1:
            # each kind less the last (whose units the base counts); a stratum that every
            # variant holds moves rows in place (no index array)
            moves = [(size - last[0], total - last[1]) for size, total in kinds[first : end - 1]]
            present = np.flatnonzero(capacity[s]) if 0 in row else slice(None)
            deals.append(
                (_deal_kinds, (capacity[s, present], moves, many[first : end - 1], present))
            )
    return {"base": np.array(base).T @ capacity, "deals": loose + deals}


def _kinds(units: dict, n_strata: int) -> tuple[list, list, list]:
    """The units' distinct kinds, stratum by stratum: each one's (size, sum of residuals),
    how many units are of it, and where each stratum's kinds begin (and the last ends).
    Units of one stratum alike in size and sum of scores are alike in residuals (counting
    integers is cheaper than hashing the triples)."""
    size, score = units["size"], units["score"]
    whole, largest = score.astype(int), int(size.max())
    if (whole == score).all() and whole.min() >= 0:  # sums of 0/1 scores: counted
        score_of, n_scores = whole, int(whole.max()) + 1
        if largest == 1 and n_scores <= 2:
            return _binary_kinds(units, n_strata)
    else:
        score_of, names = _codes(score)
        n_scores = len(names)
    span = (largest + 1) * n_scores
    kind_of, keys = _codes(units["stratum"] * span + size * n_scores + score_of)
    one = np.empty(len(keys), dtype=int)  # a unit of each kind: any one, they are alike
    one[kind_of] = np.arange(len(kind_of))
    kinds = np.stack([size[one], units["sum"][one]], axis=1)
    bounds = np.searchsorted(keys // span, np.arange(n_strata + 1))
    many = np.bincount(kind_of, minlength=len(keys))
    return kinds.tolist(), many.tolist(), bounds.tolist()


def _binary_kinds(units: dict, n_strata: int) -> tuple[list, list, list]:
    """:func:`_kinds` where every unit is one example scored 0 or 1: a stratum's kinds are
    its 0s and its 1s, their residuals ``score - centre`` as the units have them (sums of
    0/1 are exact in any order), found from per-stratum counts, not per unit."""
    stratum = units["stratum"]
    count = np.bincount(stratum, minlength=n_strata).tolist()
    ones = np.bincount(stratum, weights=units["score"], minlength=n_strata).tolist()
    kinds, many, bounds = [], [], [0]
    for n, k in zip(count, ones):
        centre = k / n
        for residual, units_of in ((0.0 - centre, n - k), (1.0 - centre, k)):
            if units_of:
                kinds.append((1.0, residual))
                many.append(int(units_of))
        bounds.append(len(kinds))
    return kinds, many, bounds


def _shuffled_totals(plan: dict, rounds: int, rng) -> tuple:
    """(rounds, variants): each shuffle's per-variant sums of residuals and sizes."""
    sizes, sums = np.repeat(plan["base"][:, :, None], rounds, axis=2)
    for deal, args in plan["deals"]:
        deal(*args, sums, sizes, rng)
    return sums.T, sizes.T


def _deal_kinds(capacity, moves, many, present, sums, sizes, rng) -> None:
    """One stratum's shuffles as counts: how many units of each kind but the last (``many``:
    how many units of each kind; ``moves``: each one's (size, sum) less the last kind's,
    whose units are already counted everywhere) each variant (``present``: their rows, a
    slice where all are; with ``capacity`` units) gets: a random permutation's table,
    drawn kind by kind, variant by variant. Arrays are (variants, rounds): a variant's row
    is contiguous."""
    rounds = sums.shape[1]
    # the first kind's units take a random subset of the slots
    got = rng.multivariate_hypergeometric(capacity, int(many[0]), size=rounds).T
    _move(got, moves[0], present, sums, sizes)
    if len(moves) == 1:
        return
    slots = capacity[:, None] - got
    rows = range(len(capacity)) if isinstance(present, slice) else present
    for k in range(1, len(moves)):
        left = np.full(rounds, int(many[k]))
        after = slots.sum(axis=0)  # the slots of this variant and those after it
        for j in range(len(rows)):
            after -= slots[j]
            # the last variant takes the units left
            got = left.copy() if j == len(rows) - 1 else rng.hypergeometric(slots[j], after, left)
            _move(got, moves[k], rows[j], sums, sizes)
            slots[j] -= got
            left -= got


def _move(got, move, variants, sums, sizes) -> None:
    """Count ``got`` units of a kind (``move``: its size and sum less the last kind's) for
    ``variants`` (rows: an index array, a slice or one row)."""
    sums[variants] += got * move[1]
    if move[0]:  # kinds of one size (every example alone): the sizes never change
        sizes[variants] += got * move[0]


def _deal_one_by_one(units, inside, sums, sizes, rng) -> None:
    """One stratum's shuffles as permuted labels (scores of many distinct values)."""
    (n_variants, rounds), labels = sums.shape, units["variant"][inside]
    step = max(1, CELLS_PER_CHUNK // max(1, len(inside)))
    for start in range(0, rounds, step):
        stop = min(rounds, start + step)
        shuffled = rng.permuted(np.tile(labels, (stop - start, 1)), axis=1)
        flat = (shuffled + np.arange(stop - start)[:, None] * n_variants).ravel()
        for totals, weights in ((sums, units["sum"]), (sizes, units["size"])):
            totals[:, start:stop] += (
                np.bincount(
                    flat,
                    weights=np.tile(weights[inside], stop - start),
                    minlength=(stop - start) * n_variants,
                )
                .reshape(stop - start, n_variants)
                .T
            )
