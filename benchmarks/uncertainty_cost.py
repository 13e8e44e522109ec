"""What the intervals, the diagnostics and the prompt table cost a scoring, side by side
with scoring alone.

Builds constructed tasks of the official test sizes (UniScienceVQA 7432 examples by
example with 6 domains, SchoolScienceVQA 4227 with 7 domains, ruHHH-Video 911 in groups
of 3 with a category breakdown), each example given one of ten prompt variants in turn
(so ruHHH-Video's groups mix variants, counted within its categories), answers a third
of them wrongly (whatever the variant: the test stops early), and times in CPU seconds of
this process (what another process on a shared machine does is not counted), best of R
rounds:

  (a) score_task as the project runs it (metrics, breakdowns, the per-example table,
      every interval, the diagnostics, the prompt table with its permutation test) +
      summarize (the totals' intervals);
  (b) the same with the intervals and diagnostics switched off (the baseline);
  (c) the prompt table alone (each variant's scores and intervals, the marker share, the
      permutation test) and the permutation test alone, on (a)'s result (best of 10 R
      rounds: they take milliseconds): their share of (a) less themselves is what they
      add to scoring;
  (d) the prompt table where the wording matters (the first five variants answered
      right): the test finds p < 0.05 and draws all its shuffles.

    python benchmarks/uncertainty_cost.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import mera_multi_hf.scoring.score as scoring
from mera_multi_hf.data.examples import Example
from mera_multi_hf.scoring import uncertainty
from mera_multi_hf.tasks.table import get_task

CASES = [
    ("unisciencevqa", 7432, 1, 6),
    ("schoolsciencevqa", 4227, 1, 7),
    ("ruhhh_video", 911, 3, 4),
]


def examples(key: str, n: int, group_size: int, keys: int):
    task = get_task(key)
    names = [name for name, _ in task.breakdowns]
    return task, [
        Example(
            task=key,
            id=i,
            index=i,
            prompt=f"q{i}",
            media_fields=(),
            gold="A",
            group=i // group_size,
            breakdown={b: f"k{i % keys}" for b in names},
            meta={"id": i},
            options=("x", "y"),
            prompt_variant=f"i{i % 10}",
            prompt_variant_number=i % 10 + 1,
            prompt_stratum=f"k{i % keys}" if task.prompt_block else None,
        )
        for i in range(n)
    ]


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def prompt_costs(task, exs, preds, rounds: int) -> tuple[float, float]:
    """CPU seconds of the prompt table, and of its permutation test as the table runs it
    (on the columns it has numbered), on a scored result."""
    import mera_multi_hf.scoring.prompt_table as pt

    result = scoring.score_task(task, exs, preds)
    table = pt._as_arrays(result.examples)
    codes = pt._first_appearance(table["prompt_variant"])[0]
    strata = pt._first_appearance(table["prompt_stratum"])[0] if task.prompt_block else None
    return (
        best(lambda: pt.prompt_table(task, exs, result), rounds),
        best(lambda: pt._effect(result, table, codes, strata), rounds),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    full = scoring._add_uncertainty
    for key, n, group_size, keys in CASES:
        task, exs = examples(key, n, group_size, keys)
        preds = {e.id: "A" if e.id % 3 else "B" for e in exs}

        def run(task=task, exs=exs, preds=preds):
            uncertainty._MADE.clear()  # each round draws its resamples afresh
            scoring.summarize([scoring.score_task(task, exs, preds)])

        with_all = best(run, rounds)
        scoring._add_uncertainty = lambda *args: None
        try:
            alone = best(run, rounds)
        finally:
            scoring._add_uncertainty = full
        table, test = prompt_costs(task, exs, preds, 10 * rounds)
        # the first five variants answered right: an effect, every shuffle drawn
        effect = {e.id: "A" if e.prompt_variant_number <= 5 else "B" for e in exs}
        worded, _ = prompt_costs(task, exs, effect, 10 * rounds)
        print(
            f"{key:18s} n={n:5d}  scoring alone {alone:6.3f} s   with intervals, "
            f"diagnostics and prompt table {with_all:6.3f} s   (+{with_all - alone:.3f} s);  "
            f"prompt table {table * 1000:5.1f} ms (+{table / (with_all - table):.2%} of "
            f"scoring), of which the permutation test {test * 1000:4.1f} ms;  where the "
            f"wording matters {worded * 1000:5.1f} ms (+{worded / (with_all - table):.2%})"
        )


if __name__ == "__main__":
    main()
