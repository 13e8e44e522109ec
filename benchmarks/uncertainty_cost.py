"""What the intervals and diagnostics cost a scoring, side by side with scoring alone.

Builds constructed tasks of the official test sizes (UniScienceVQA 7432 examples by
example with 6 domains, SchoolScienceVQA 4227 with 7 domains, ruHHH-Video 911 in groups
of 3 with a category breakdown), answers a third of them wrongly, and times, best of R
rounds:

  (a) score_task as the project runs it (metrics, breakdowns, the per-example table,
      every interval and the diagnostics) + summarize (the totals' intervals);
  (b) the same with the intervals and diagnostics switched off (the baseline).

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
        )
        for i in range(n)
    ]


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


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
        print(
            f"{key:18s} n={n:5d}  scoring alone {alone:6.3f} s   with intervals and "
            f"diagnostics {with_all:6.3f} s   (+{with_all - alone:.3f} s)"
        )


if __name__ == "__main__":
    main()
