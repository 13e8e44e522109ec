"""Start-up cost of each command: wall time and imports of `python -m mera_multi_hf ...`
against `python -c pass`, side by side, rounds interleaved. Goals on a 2-core machine:
`evaluate --help` < 0.8 s and `tasks` < 0.4 s; no --help and no `tasks` imports torch,
transformers, accelerate, pandas or datasets.

    python benchmarks/startup.py [--rounds 5]
    python benchmarks/startup.py --baseline /path/to/older/checkout    # before/after

Imports are counted with ``python -X importtime`` (modules, and the heavy libraries
among them with their cumulative import time in that run).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "accelerate", "pandas", "datasets", "matplotlib")
COMMANDS = [["--help"], ["evaluate", "--help"], ["tasks"], ["score", "--help"],
            ["build", "--help"], ["judge", "train", "--help"], ["metrics", "--help"]]


def argv_of(command: list[str] | None) -> list[str]:
    return [sys.executable, "-c", "pass"] if command is None else \
        [sys.executable, "-m", "mera_multi_hf", *command]


def wall(command, env) -> float:
    started = time.perf_counter()
    subprocess.run(argv_of(command), env=env, capture_output=True, check=True)
    return time.perf_counter() - started


def imports(command, env) -> tuple[int, dict[str, float]]:
    """(modules imported, heavy library -> cumulative import seconds)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv_of(command)[1:]],
                          env=env, capture_output=True, text=True, check=True)
    count, heavy = 0, {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[12:].split("|"))
        count += 1
        if name in HEAVY:
            heavy[name] = int(cumulative) / 1e6
    return count, heavy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", help="another checkout of this project to time as well")
    args = parser.parse_args(argv)
    checkouts = {"now": ROOT}
    if args.baseline:
        checkouts["before"] = Path(args.baseline).resolve()
    envs = {name: dict(os.environ, PYTHONPATH=str(path), HF_HUB_OFFLINE="1")
            for name, path in checkouts.items()}
    cases = [(None, "now")] + [(tuple(c), name) for c in COMMANDS for name in checkouts]
    times = {case: [] for case in cases}
    for _ in range(args.rounds):
        for command, name in cases:
            times[(command, name)].append(wall(list(command) if command else None, envs[name]))
    base = statistics.median(times[(None, "now")])
    print(f"python -c pass: {base:.3f} s (median of {args.rounds})")
    print("| command | checkout | wall s | / python -c pass | modules | heavy imports (s) |")
    print("|---|---|---|---|---|---|")
    for command, name in cases[1:]:
        median = statistics.median(times[(command, name)])
        count, heavy = imports(list(command), envs[name])
        shown = ", ".join(f"{k} {v:.2f}" for k, v in heavy.items()) or "none"
        print(f"| `{' '.join(command)}` | {name} | {median:.3f} | {median / base:.1f}x | "
              f"{count} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
