"""What the memory-budget checks cost: `build` and `evaluate` on the bundled samples with
the checks on, against the same commands with them switched off, side by side in this
process, rounds interleaved. A timed comparison, not a test.

    python benchmarks/budget_checks.py [--rounds 5] [--tasks ruhhh_image,ruenvaqa,commonvideoqa]

"Off" replaces the three places the budget is asked (the rule's refusal
``budget_problem``, each item's header cost ``Media.cost`` and the batch split
``budget_parts``) by no-ops; everything else, the figure limits included, runs as
shipped. Both sides must write the same Parquet files and the same answers. Goal: the checks
cost under 2% of each command (ratio on/off <= 1.02, by the median of the rounds).
On a loaded machine the ratio's noise exceeds 2%, so the script also times the checks
themselves inside the "on" runs (the refusal rule and the batch split, which reads
every item's header) and reports their share of the command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path


@contextlib.contextmanager
def budget_off():
    """The budget checks replaced by no-ops (the decoders unchanged otherwise)."""
    from mera_multi_hf.data import media_checks
    from mera_multi_hf.data import media_decode as media
    from mera_multi_hf.generation import generate

    saved = (media_checks.budget_problem, media.Media.cost, generate.budget_parts)
    # the one rule's refusal (build's checks and evaluate's decoding both ask media_checks)
    media_checks.budget_problem = lambda *args: None
    media.Media.cost = lambda self, max_frames=1: 0
    generate.budget_parts = lambda batch, max_frames: [batch]
    try:
        yield
    finally:
        media_checks.budget_problem, media.Media.cost, generate.budget_parts = saved


@contextlib.contextmanager
def budget_timed(spent: list):
    """The budget checks as shipped, their own seconds added to ``spent[0]``."""
    from mera_multi_hf.data import media_checks
    from mera_multi_hf.data import media_decode as media
    from mera_multi_hf.generation import generate

    def timed(fn):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return run

    saved = (media_checks.budget_problem, media.Media.cost, generate.budget_parts)
    media_checks.budget_problem = timed(saved[0])
    generate.budget_parts = timed(saved[2])  # Media.cost: inside it, in a run
    try:
        yield
    finally:
        media_checks.budget_problem, media.Media.cost, generate.budget_parts = saved


def build_all(tasks: list[str], root: Path) -> tuple[float, list]:
    import hashlib

    from mera_multi_hf.cli.main import BuildOptions, cmd_build

    started, rows = time.perf_counter(), []
    for task in tasks:
        out = root / f"hub-{task}"
        with contextlib.redirect_stdout(None):
            cmd_build(BuildOptions(task=task, raw="sample", out=str(out), num_proc=1))
        rows += [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*.parquet"))]
        shutil.rmtree(out)
    return time.perf_counter() - started, rows


def evaluate_all(tasks: list[str], root: Path) -> tuple[float, list]:
    from mera_multi_hf.generation import RunConfig
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    out = root / "run"
    started = time.perf_counter()
    with contextlib.redirect_stdout(None):
        run_evaluation(
            RunConfig(
                tasks=",".join(tasks),
                data=["sample"],
                output_dir=str(out),
                no_progress=True,
                max_frames=4,
            )
        )
    seconds = time.perf_counter() - started
    answers = [
        json.loads(line)["generation"]
        for name in sorted(out.glob("samples_*.jsonl"))
        for line in name.read_text().splitlines()
    ]
    shutil.rmtree(out)
    return seconds, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", default="ruhhh_image,ruenvaqa,commonvideoqa")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    from mera_multi_hf.data.loading import quiet_progress

    quiet_progress()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for command in (build_all, evaluate_all):
            command(tasks, root)  # warm: imports, the tiny models, caches
            ratios, times, shares = [], {"on": [], "off": []}, []
            for round_ in range(args.rounds):
                spent = [0.0]
                if round_ % 2:  # the order alternates: neither side always goes first
                    with budget_off():
                        off, made_off = command(tasks, root)
                with budget_timed(spent):
                    on, made_on = command(tasks, root)
                shares.append(spent[0] / on)
                if not round_ % 2:
                    with budget_off():
                        off, made_off = command(tasks, root)
                assert made_on == made_off, f"{command.__name__}: the outputs differ"
                times["on"].append(on)
                times["off"].append(off)
                ratios.append(on / off)
            print(
                f"{command.__name__:13s} on/off: min {min(ratios):.3f}, median "
                f"{statistics.median(ratios):.3f} over {args.rounds} rounds; seconds on "
                f"{statistics.median(times['on']):.2f}, off {statistics.median(times['off']):.2f}"
                f" (medians); inside the checks: {100 * statistics.median(shares):.3f}% "
                f"(max {100 * max(shares):.3f}%)",
                flush=True,
            )


if __name__ == "__main__":
    main()
