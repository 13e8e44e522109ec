"""Data parallel: the same evaluation with 2 processes against 1, on a random LLaVA big
enough that generation is most of the wall time (official settings: up to 256 new
tokens, stop at "\\n\\n"). Goal: >= 1.7x throughput, identical answers.

    python benchmarks/data_parallel.py                      # medium model, 32 examples
    python benchmarks/data_parallel.py --n 64 --procs 4     # 4 processes against 1
    python benchmarks/data_parallel.py --launcher accelerate
    python benchmarks/data_parallel.py --launcher torchrun --launcher processes   # both
    python benchmarks/data_parallel.py --baseline /path/to/older/checkout   # side by side

The launch forms, checked on a CPU-only machine (torch 2.13, accelerate 1.15):
- ``torchrun --nproc_per_node N -m mera_multi_hf evaluate ...``: N processes (gloo);
- ``accelerate launch --multi_gpu --num_processes N -m mera_multi_hf evaluate ...``: N
  processes (gloo on CPU, NCCL on GPUs), even without a GPU;
- ``accelerate launch --cpu --num_processes N ...``: ONE process (do not use it), and
  ``--cpu`` with ``--multi_gpu`` is refused;
- ``mera-multi evaluate --processes N ...`` (launcher ``processes``): N processes started
  by the command itself, without a launcher's start-up (a baseline checkout that lacks
  the option is not run with it).
Both launchers set OMP_NUM_THREADS=1 per process; this script sets it to
cores // processes itself (and cores for the single process), so both sides use every
core. On GPUs each process takes its own device (run one process per GPU).

Each timing is one whole ``mera-multi evaluate`` command (model load, data, generation,
scoring, outputs), rounds interleaved (1, N, 1, N, ...; with ``--baseline``, each
checkout in turn); the median ratio is reported, with the CPU seconds of the launcher and
every process, and where each rank's time went (start-up and loading, generation, then
the merge, scoring and outputs, and the exit; from the times its files were written).
The generation share is the sum of the sample log's per-example generate times over
the single process's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from mera_multi_hf.demo.builtin_models import RANDOM_LLAVA_SIZES as SIZES  # noqa: E402
from mera_multi_hf.demo.builtin_models import build_random_llava  # noqa: E402


def launch_command(launcher: str | None, procs: int, args: list[str]) -> list[str]:
    if launcher is None:
        return [sys.executable, "-m", "mera_multi_hf", *args]
    if launcher == "processes":
        return [sys.executable, "-m", "mera_multi_hf", *args, "--processes", str(procs)]
    if launcher == "accelerate":
        return [
            "accelerate",
            "launch",
            "--multi_gpu",
            "--num_processes",
            str(procs),
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "-m",
            "mera_multi_hf",
            *args,
        ]
    return [
        "torchrun",
        "--standalone",
        "--nproc_per_node",
        str(procs),
        "-m",
        "mera_multi_hf",
        *args,
    ]


ROOT = Path(__file__).resolve().parent.parent
LAUNCHERS = ("torchrun", "accelerate", "processes")


def run_once(
    code: Path, launcher: str | None, procs: int, args: list[str], out: Path, threads: int
) -> dict:
    """One evaluate command of the checkout ``code``: wall and CPU seconds (the launcher
    and every process), answers by id, summed generate seconds, where the time went."""
    env = dict(
        os.environ,
        OMP_NUM_THREADS=str(max(1, threads // procs)),
        MKL_NUM_THREADS=str(max(1, threads // procs)),
        PYTHONPATH=str(code),
    )
    shutil.rmtree(out, ignore_errors=True)
    cpu = _children_cpu()
    launched = time.time()
    # cwd: not a checkout, which `python -m` would put before PYTHONPATH
    done = subprocess.run(
        launch_command(launcher, procs, [*args, "--output-dir", str(out)]),
        env=env,
        capture_output=True,
        text=True,
        cwd=out.parent,
    )
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"{procs} process(es) failed:\n{done.stderr[-3000:]}")
    records = [
        json.loads(line)
        for path in sorted(out.glob("samples_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    ranks = len(list((out / "logs").glob("samples-rank*.jsonl")))
    if ranks != procs:
        raise SystemExit(
            f"asked for {procs} processes but {ranks} wrote a log shard: the "
            f"launcher did not start them all"
        )
    return {
        "wall": ended - launched,
        "cpu": _children_cpu() - cpu,
        "answers": {r["id"]: r["generation"] for r in records},
        "generate": sum(r["time_s"] for r in records),
        **phases(out, launched, ended),
    }


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phases(out: Path, launched: float, ended: float) -> dict:
    """Where one command's wall time went, from its files' times: each rank's start-up
    and loading (from the launch to its last log line, less its generation), its
    generation (its log shard's generate seconds), then the merge, scoring and outputs
    (to results.json, written last) and the exit (the launcher's too)."""
    results = (out / "results.json").stat().st_mtime
    ranks, last = [], []
    for shard in sorted((out / "logs").glob("samples-rank*.jsonl")):
        generate = sum(
            json.loads(x)["time_s"] for x in shard.read_text(encoding="utf-8").splitlines()
        )
        last.append(shard.stat().st_mtime)
        ranks.append((last[-1] - launched - generate, generate))
    return {"ranks": ranks, "outputs": results - max(last), "exit": ended - results}


def show(name: str, procs: int, runs: list[dict]) -> None:
    """The medians of one checkout's runs with ``procs`` processes."""
    med = statistics.median
    ranks = "; ".join(
        f"rank {i}: start-up and loading {med(r['ranks'][i][0] for r in runs):.1f} s, "
        f"generation {med(r['ranks'][i][1] for r in runs):.1f} s"
        for i in range(procs)
    )
    print(
        f"{name}, {procs} process(es), median of {len(runs)}: wall {med(r['wall'] for r in runs):.1f} s, "
        f"CPU {med(r['cpu'] for r in runs):.1f} s; {ranks}; merge, scoring and outputs "
        f"{med(r['outputs'] for r in runs):.1f} s; exit {med(r['exit'] for r in runs):.1f} s"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=32, help="examples")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--size", choices=sorted(SIZES), default="medium")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        action="append",
        help="how to start the N processes (repeatable; default torchrun)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="CPU threads in all (split among the processes)",
    )
    parser.add_argument("--baseline", help="another checkout of this project to run as well")
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from runner_overhead import make_raw

    work = Path(args.keep or tempfile.mkdtemp(prefix="mera-dp-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MERA_MULTI_CACHE", str(work / "cache"))
    try:
        model = build_random_llava(work / f"llava-{args.size}", args.size)
        raw = make_raw(work / "raw", args.n) if not (work / "raw").is_dir() else work / "raw"
        from mera_multi_hf.data.loading import load_task

        load_task("ruhhh_image", source=raw, split="test")  # the one-time Parquet export
        command = [
            "evaluate",
            "--model",
            str(model),
            "--tasks",
            "ruhhh_image",
            "--data",
            str(raw),
            "--batch-size",
            str(args.batch_size),
            "--no-progress",
        ]
        codes = {
            "this": ROOT,
            **({"baseline": Path(args.baseline).resolve()} if args.baseline else {}),
        }
        args.launcher = args.launcher or ["torchrun"]
        runs = {
            (name, launcher): []
            for name in codes
            for launcher in [None, *args.launcher]
            if not (name == "baseline" and launcher == "processes")
        }
        for k in range(args.rounds):  # interleaved: each checkout, 1 then N processes
            for (name, launcher), done in runs.items():
                procs = args.procs if launcher else 1
                done.append(
                    run_once(
                        codes[name],
                        launcher,
                        procs,
                        command,
                        work / f"out-{name}-{launcher}-{k}",
                        args.threads,
                    )
                )
                print(
                    f"round {k}: {name}: {procs} process(es){f' ({launcher})' if launcher else ''}: "
                    f"{done[-1]['wall']:.1f} s (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        return report(args, runs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(args, runs: dict) -> int:
    """The figures of every checkout, each launcher side by side with one process; 0 when
    every run gave the answers of this checkout's first single-process run."""
    med = statistics.median
    expected = runs[("this", None)][0]["answers"]
    same = all(r["answers"] == expected for done in runs.values() for r in done)
    lengths = [len(a) for a in expected.values()]
    print(
        f"model: random LLaVA {args.size} ({SIZES[args.size]}), {args.n} examples, batch "
        f"size {args.batch_size}, {args.threads} threads in all"
    )
    print(
        f"answers: {len(expected)}, median length {med(lengths)} chars; identical in every "
        f"run (1 and {args.procs} processes, every launcher and checkout): {same}"
    )
    for (name, launcher), done in runs.items():
        one = runs[(name, None)]
        if launcher is None:
            print(
                f"{name}: generation share of the 1-process wall time: "
                f"{med(r['generate'] / r['wall'] for r in one):.0%}"
            )
            show(name, 1, one)
            continue
        show(f"{name} ({launcher})", args.procs, done)
        ratios = [a["wall"] / b["wall"] for a, b in zip(one, done)]
        print(
            f"{name} ({launcher}): throughput ratio ({args.procs} vs 1), median of "
            f"{args.rounds}: {med(ratios):.2f}x  (each round: {', '.join(f'{r:.2f}' for r in ratios)})"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
