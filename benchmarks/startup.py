"""Start-up cost of each command: wall time and imports of `python -m mera_multi_hf ...`
against `python -c pass`, side by side, rounds interleaved. Goals on a 2-core machine:
`evaluate --help` <= 0.12 s and `tasks` <= 0.15 s; no --help and no `tasks` imports torch,
transformers, accelerate, pandas, datasets or numpy.

    python benchmarks/startup.py [--rounds 5]
    python benchmarks/startup.py --baseline /path/to/older/checkout    # before/after

Imports are counted with ``python -X importtime`` (modules, and the heavy libraries
among them with their cumulative import time in that run). Every side runs with its
bytecode compiled, as an installed package has it (a private ``PYTHONPYCACHEPREFIX``,
filled by an untimed first round): with PYTHONDONTWRITEBYTECODE set, a checkout would
compile each of its modules from source at every start.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CWD = tempfile.gettempdir()  # not a checkout: `python -m` puts the cwd before PYTHONPATH
HEAVY = ("torch", "transformers", "accelerate", "pandas", "datasets", "matplotlib", "numpy")
GOALS = {("evaluate", "--help"): 0.12, ("tasks",): 0.15}  # seconds of wall time
COMMANDS = [
    ["--help"],
    ["evaluate", "--help"],
    ["tasks"],
    ["score", "--help"],
    ["serve", "--help"],
    ["build", "--help"],
    ["judge", "train", "--help"],
    ["metrics", "--help"],
]


def argv_of(command: list[str] | None) -> list[str]:
    return (
        [sys.executable, "-c", "pass"]
        if command is None
        else [sys.executable, "-m", "mera_multi_hf", *command]
    )


def wall(command, env) -> tuple[float, float]:
    """(wall, CPU) seconds of one command."""
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv_of(command), env=env, capture_output=True, check=True, cwd=CWD)
    return time.perf_counter() - started, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def imports(command, env) -> tuple[int, dict[str, float]]:
    """(modules imported, heavy library -> cumulative import seconds)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv_of(command)[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=CWD,
    )
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
    with tempfile.TemporaryDirectory() as bytecode:
        envs = {name: _env(path, Path(bytecode) / name) for name, path in checkouts.items()}
        cases = [(None, "now")] + [(tuple(c), name) for c in COMMANDS for name in checkouts]
        times = {case: [] for case in cases}
        for round_ in range(args.rounds + 1):  # the first compiles the bytecode, untimed
            for command, name in cases:
                taken = wall(list(command) if command else None, envs[name])
                times[(command, name)] += [taken] if round_ else []
        _report(args.rounds, cases, times, envs)
    return 0


def _env(checkout: Path, bytecode: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _report(rounds: int, cases: list, times: dict, envs: dict) -> None:
    base = statistics.median(t for t, _ in times[(None, "now")])
    base_cpu = statistics.median(c for _, c in times[(None, "now")])
    print(
        f"python -c pass: {base:.3f} s wall, {base_cpu:.3f} s CPU (median of {rounds}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(
        "| command | checkout | wall s | / python -c pass | CPU s | modules | heavy imports (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for command, name in cases[1:]:
        median = statistics.median(t for t, _ in times[(command, name)])
        cpu = statistics.median(c for _, c in times[(command, name)])
        count, heavy = imports(list(command), envs[name])
        shown = ", ".join(f"{k} {v:.2f}" for k, v in heavy.items()) or "none"
        print(
            f"| `{' '.join(command)}` | {name} | {median:.3f} | {median / base:.1f}x | "
            f"{cpu:.3f} | {count} | {shown} |"
        )
    for command, goal in GOALS.items():
        for name in envs:
            median = statistics.median(t for t, _ in times[(command, name)])
            verdict = "met" if median <= goal else "NOT met"
            print(f"`{' '.join(command)}` ({name}): {median:.3f} s, goal <= {goal} s: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
