"""Metric speed: MERA exact match + group exact match against lm-eval's exact match.

Generates N realistic model answers (mostly option letters, some with case, punctuation,
spaces or an "Ответ:" prefix, some short Russian phrases) with gold letters and groups of
1-6 examples (as in ruHHH), then times, best of R rounds:

  (a) mera_multi_hf.scoring.metric_exact_match.exact_match_scores(mode="mera") + group_mean;
  (b) the same exact match alone;
  (c) lm_eval.api.metrics.exact_match_hf_evaluate(ignore_case=True,
      ignore_punctuation=True) over the same strings (no group score: it has none).

and checks that (b) and (c) give the same exact match. A second case, free text, times
(b), (c) and (d) the `exact_match` evaluate module on --free unique Cyrillic answers of
5-40 characters (gold: the answer itself, upper-cased or with punctuation added, or
another answer).

    python benchmarks/metric_speed.py [--examples 1000000] [--free 300000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from mera_multi_hf.scoring.metric_exact_match import exact_match_scores
from mera_multi_hf.scoring.metric_groups import group_mean

LETTERS = "ABCD"
PHRASES = ["синий", "Синий.", "два", "не знаю", "кошка", "На картинке кошка", "да", "Нет!"]


def make_data(n: int, seed: int = 0):
    rng = random.Random(seed)
    sizes, total = [], 0
    while total < n:
        sizes.append(min(rng.randint(1, 6), n - total))
        total += sizes[-1]
    group_ids = np.repeat(np.arange(len(sizes)), sizes)
    refs = [rng.choice(LETTERS) for _ in range(n)]
    preds = []
    for gold in refs:
        r = rng.random()
        letter = gold if rng.random() < 0.8 else rng.choice(LETTERS)
        if r < 0.6:
            preds.append(letter)
        elif r < 0.7:
            preds.append(letter.lower())
        elif r < 0.8:
            preds.append(letter + rng.choice([".", ")", " ", "\n"]))
        elif r < 0.9:
            preds.append(f"Ответ: {letter}")
        else:
            preds.append(rng.choice(PHRASES))
    return preds, refs, group_ids


CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"


def make_free_text(n: int, seed: int = 1):
    """n unique Cyrillic answers of 5-40 characters, and golds that match about half."""
    rng = random.Random(seed)
    alphabet = CYRILLIC + " " * 8 + ",.!?-"
    seen: dict = {}
    while len(seen) < n:
        seen.setdefault("".join(rng.choices(alphabet, k=rng.randint(5, 40))), None)
    preds = list(seen)
    refs = []
    for p in preds:
        r = rng.random()
        refs.append(p.upper() if r < 0.25 else p + "." if r < 0.5 else rng.choice(preds))
    return preds, refs


def best_of(rounds: int, fn):
    times, value = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def time_free_text(n: int, rounds: int, exact_match_hf_evaluate) -> None:
    from mera_multi_hf import load_metric

    preds, refs = make_free_text(n)
    module = load_metric("exact_match")
    t_em, em = best_of(rounds, lambda: float(exact_match_scores(preds, refs).mean()))
    t_mod, mod = best_of(
        rounds, lambda: module.compute(predictions=preds, references=refs)["exact_match"]
    )
    t_lm, lm = best_of(
        rounds,
        lambda: exact_match_hf_evaluate(preds, refs, ignore_case=True, ignore_punctuation=True)[
            "exact_match"
        ],
    )
    assert em == mod and abs(em - float(lm)) < 1e-12, (em, mod, lm)
    print(f"\nfree text: {n:,} unique Cyrillic answers of 5-40 characters; EM={em:.4f}")
    print(f"mera_multi_hf EM only       : {t_em:7.3f} s")
    print(f"exact_match evaluate module : {t_mod:7.3f} s")
    print(f"lm-eval exact_match_hf_eval : {t_lm:7.3f} s")
    print(f"ratio lm-eval / ours (EM)     : {t_lm / t_em:6.2f}x")
    print(f"ratio lm-eval / ours (module) : {t_lm / t_mod:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument(
        "--free", type=int, default=300_000, help="unique free-text answers (0 = skip that case)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from lm_eval.api.metrics import exact_match_hf_evaluate

    preds, refs, group_ids = make_data(args.examples)
    print(
        f"{args.examples:,} predictions, {group_ids[-1] + 1:,} groups, "
        f"{len(set(preds))} distinct answers; best of {args.rounds} rounds"
    )

    def ours_both():
        scores = exact_match_scores(preds, refs, mode="mera")
        return float(scores.mean()), group_mean(scores, group_ids)

    t_both, (em, gem) = best_of(args.rounds, ours_both)
    t_em, em_only = best_of(args.rounds, lambda: float(exact_match_scores(preds, refs).mean()))
    t_lm, lm = best_of(
        args.rounds,
        lambda: exact_match_hf_evaluate(preds, refs, ignore_case=True, ignore_punctuation=True)[
            "exact_match"
        ],
    )
    assert em == em_only and abs(em - float(lm)) < 1e-12, (em, lm)

    print(f"mera_multi_hf EM + group EM : {t_both:7.3f} s   EM={em:.4f} group EM={gem:.4f}")
    print(f"mera_multi_hf EM only       : {t_em:7.3f} s")
    print(f"lm-eval exact_match_hf_eval : {t_lm:7.3f} s   EM={float(lm):.4f}")
    print(f"ratio lm-eval / ours (EM)          : {t_lm / t_em:6.1f}x")
    print(f"ratio lm-eval / ours (EM+group EM) : {t_lm / t_both:6.1f}x")
    if args.free:
        time_free_text(args.free, args.rounds, exact_match_hf_evaluate)


if __name__ == "__main__":
    main()
