"""Data parallel: the same evaluation with 2 processes against 1, on a random LLaVA big
enough that generation is most of the wall time (official settings: up to 256 new
tokens, stop at "\\n\\n"). Goal: >= 1.7x throughput, identical answers.

    python benchmarks/data_parallel.py                      # medium model, 32 examples
    python benchmarks/data_parallel.py --n 64 --procs 4     # 4 processes against 1
    python benchmarks/data_parallel.py --launcher accelerate

The launch forms, checked on a CPU-only machine (torch 2.13, accelerate 1.15):
- ``torchrun --nproc_per_node N -m mera_multi_hf evaluate ...``: N processes (gloo);
- ``accelerate launch --multi_gpu --num_processes N -m mera_multi_hf evaluate ...``: N
  processes (gloo on CPU, NCCL on GPUs), even without a GPU;
- ``accelerate launch --cpu --num_processes N ...``: ONE process (do not use it), and
  ``--cpu`` with ``--multi_gpu`` is refused.
Both launchers set OMP_NUM_THREADS=1 per process; this script sets it to
cores // processes itself (and cores for the single process), so both sides use every
core. On GPUs each process takes its own device (run one process per GPU).

Each timing is one whole ``mera-multi evaluate`` command (model load, data, generation,
scoring, outputs), rounds interleaved (1, N, 1, N, ...); the median ratio is reported.
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

from mera_multi_hf.tiny_model import RANDOM_LLAVA_SIZES as SIZES  # noqa: E402
from mera_multi_hf.tiny_model import build_random_llava  # noqa: E402


def launch_command(launcher: str, procs: int, args: list[str]) -> list[str]:
    if procs == 1:
        return [sys.executable, "-m", "mera_multi_hf", *args]
    if launcher == "accelerate":
        return ["accelerate", "launch", "--multi_gpu", "--num_processes", str(procs),
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "-m", "mera_multi_hf", *args]
    return ["torchrun", "--standalone", "--nproc_per_node", str(procs), "-m", "mera_multi_hf", *args]


def run_once(launcher: str, procs: int, args: list[str], out: Path, threads: int) -> tuple[float, dict, float]:
    """(wall seconds, answers by id, summed generate seconds) of one evaluate command."""
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, threads // procs)),
               MKL_NUM_THREADS=str(max(1, threads // procs)))
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(launch_command(launcher, procs, [*args, "--output-dir", str(out)]),
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{procs} process(es) failed:\n{done.stderr[-3000:]}")
    records = [json.loads(line) for path in sorted(out.glob("samples_*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    ranks = len(list((out / "logs").glob("samples-rank*.jsonl")))
    if ranks != procs:
        raise SystemExit(f"asked for {procs} processes but {ranks} wrote a log shard: the "
                         f"launcher did not start them all")
    PHASES.setdefault(procs, []).append(phases(out, wall))
    return wall, {r["id"]: r["generation"] for r in records}, sum(r["time_s"] for r in records)


PHASES: dict[int, list[dict]] = {}


def phases(out: Path, wall: float) -> dict:
    """Where one command's wall time went: start-up (launcher, imports: the time before
    the run began), each rank's generation (its log shard's generate seconds), and the
    rest of the run (model and data loading, barriers, scoring and outputs)."""
    duration = json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]["duration_s"]
    ranks = []
    for shard in sorted((out / "logs").glob("samples-rank*.jsonl")):
        ranks.append(sum(json.loads(x)["time_s"] for x in shard.read_text(encoding="utf-8").splitlines()))
    return {"start-up": wall - duration, "generation per rank": ranks,
            "rest": duration - max(ranks)}


def show_phases() -> None:
    for procs, runs in PHASES.items():
        start = statistics.median(r["start-up"] for r in runs)
        rest = statistics.median(r["rest"] for r in runs)
        gens = [statistics.median(r["generation per rank"][i] for r in runs)
                for i in range(procs)]
        print(f"{procs} process(es), median: start-up {start:.1f} s, generation per rank "
              f"{', '.join(f'{g:.1f}' for g in gens)} s, load + barriers + scoring + "
              f"outputs {rest:.1f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=32, help="examples")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--size", choices=sorted(SIZES), default="medium")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--launcher", choices=("torchrun", "accelerate"), default="torchrun")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="CPU threads in all (split among the processes)")
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
        from mera_multi_hf.loading import load_task

        load_task("ruhhh_image", source=raw, split="test")  # the one-time Parquet export
        command = ["evaluate", "--model", str(model), "--tasks", "ruhhh_image", "--data", str(raw),
                   "--batch-size", str(args.batch_size), "--no-progress"]
        times = {1: [], args.procs: []}
        answers, generate_share = {}, []
        for k in range(args.rounds):
            for procs in (1, args.procs):
                wall, got, gen = run_once(args.launcher, procs, command, work / f"out-{procs}-{k}",
                                          args.threads)
                times[procs].append(wall)
                if procs == 1:
                    generate_share.append(gen / wall)
                answers.setdefault(procs, got)
                assert got == answers[procs], "answers changed between rounds"
                print(f"round {k}: {procs} process(es): {wall:.1f} s", flush=True)
        same = answers[1] == answers[args.procs]
        ratios = [a / b for a, b in zip(times[1], times[args.procs])]
        lengths = [len(a) for a in answers[1].values()]
        print(f"model: random LLaVA {args.size} ({SIZES[args.size]}), {args.n} examples, batch "
              f"size {args.batch_size}, {args.threads} threads in all, launcher {args.launcher}")
        print(f"answers: {len(answers[1])}, median length {statistics.median(lengths)} chars; "
              f"identical with {args.procs} processes: {same}")
        print(f"generation share of the 1-process wall time: {statistics.median(generate_share):.0%}")
        print(f"1 process: median {statistics.median(times[1]):.1f} s; {args.procs} processes: "
              f"median {statistics.median(times[args.procs]):.1f} s")
        show_phases()
        print(f"throughput ratio ({args.procs} vs 1), median of {args.rounds}: "
              f"{statistics.median(ratios):.2f}x  (each round: {', '.join(f'{r:.2f}' for r in ratios)})")
        return 0 if same else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
