"""A full-size benchmark, measured: all 18 tasks at their official test sizes (about
27,000 examples) with media of realistic size, run end to end through a backend that
answers at once, each stage in its own process.

The data (benchmarks/full_size_data.py) are raw MERA folders under --work, made once per
scale and kept. The backend is "instant", a registered backend of an installed package
(a dist-info folder with its entry point under --work/site, as a user's package adds
one): it answers every request at once with a letter picked from the prompt's hash and
the model name, and never touches the media, so what is measured is everything but
generation and media decoding. The stages:

  evaluate, cold    `evaluate --tasks all` on an empty cache: the raw folders converted
                    (every record and media file checked: the media decoding is here),
                    the run, scoring, reports, the submission ZIP
  evaluate          the same with another model name into a second folder, the cache
                    prepared: loading, request hashes, generation (instant), the sample
                    logs, scoring, intervals, reports, the submission
  evaluate, resume  the first command again: everything already answered
  score             `score` of the first run's sample log, task by task (summed)
  compare           `compare` of the two runs
  view              `view` of the first run (results.html again)

For each: seconds, seconds per example (over every example of the run), CPU seconds,
peak RSS (the process's own, from wait4: the pages of the memory-mapped Arrow cache it
holds count; the goal, under 2 GiB, is on this figure), its anonymous part, and the size
of every file it wrote.

    python benchmarks/full_size.py [--work DIR] [--scale 1.0] [--baseline DIR]

--scale 0.1 makes every task a tenth of its size (linearity: the per-example figures at
0.1 and 1.0 should match). --baseline DIR runs the same stages with an older checkout on
the same data, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from full_size_data import folder_bytes, make_all  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOAL_MS, GOAL_RSS = 5.0, 2 * 1024**3

INSTANT_BACKEND = '''
import zlib
from dataclasses import dataclass

from mera_multi_hf.generation.backends import cut_at_stop, register_backend


@dataclass
class InstantOptions:
    batch_size: int = 8
    stop: tuple | list | None = None
    seed: int = 0


@register_backend("instant", options=InstantOptions)
class InstantBackend:
    """Answers at once: a letter from the prompt's hash and the model name."""
    name = "instant"

    def __init__(self, model, **options):
        o = InstantOptions(**options)
        self.model_id, self.revision = model or "instant", "v1"
        self.batch_size, self.stop, self.seed = o.batch_size, tuple(o.stop or ("\\n\\n",)), o.seed

    def settings(self):
        return {"backend": self.name, "stop": list(self.stop)}

    def info(self):
        return {"model": self.model_id, "revision": self.revision, "backend": self.name}

    def load(self):
        pass

    def generate(self, requests):
        return [cut_at_stop(self.answer(r.prompt), self.stop) for r in requests]

    def answer(self, prompt):
        return "ABCD"[zlib.crc32((self.model_id + prompt).encode()) % 4]

    def close(self):
        pass
'''


# Each stage's process: `python -m mera_multi_hf` with the CPU seconds of its thread in the
# page renderers and in the masking of what it writes counted (wrapped here, in the
# benchmark's process only, where they exist: the page may change its functions).
STAGE = """
import importlib, json, sys, time

spent = {"page": 0.0, "masking": 0.0}


def timed(module, name, bucket):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return
    fn = getattr(mod, name, None)
    if fn is None:
        return

    def wrapper(*args, **kwargs):
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[bucket] += time.thread_time() - started

    setattr(mod, name, wrapper)


timed("mera_multi_hf.core.masking", "mask_secrets", "masking")
out, sys.argv = sys.argv[1], ["mera-multi", *sys.argv[2:]]
from mera_multi_hf.cli import main as cli

for name in ("task_rows", "render"):
    timed("mera_multi_hf.reporting.results_page", name, "page")
timed("mera_multi_hf.reporting.compare_page", "compare_page", "page")
try:
    code = cli.main()
finally:
    open(out, "w").write(json.dumps(spent))
sys.exit(code)
"""


def install_backend(site: Path) -> Path:
    """The "instant" backend as an installed distribution under ``site``."""
    (site / "instant_backend").mkdir(parents=True, exist_ok=True)
    (site / "instant_backend" / "__init__.py").write_text(INSTANT_BACKEND, encoding="utf-8")
    info = site / "instant_backend-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: instant-backend\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[mera_multi_hf.backends]\ninstant = instant_backend:InstantBackend\n", encoding="utf-8"
    )
    return site


def run_stage(checkout: Path, work: Path, args: list[str]) -> dict:
    """One `mera-multi` command in its own process: seconds, CPU seconds, peak RSS."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(checkout), str(work / "site")]),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MERA_MULTI_CACHE=str(work / "cache" / "mera"),
        HF_DATASETS_CACHE=str(work / "cache" / "datasets"),
    )
    spent = work / "stage-spent.json"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", STAGE, str(spent), *args],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    anon = [0]
    sampler = threading.Thread(target=_sample_anon, args=(proc.pid, anon), daemon=True)
    sampler.start()
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"mera-multi {' '.join(args[:3])} failed:\n{output.decode()[-3000:]}")
    return {
        "seconds": seconds,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss * 1024,
        "anon": anon[0],
        **json.loads(spent.read_text()),
    }


def _sample_anon(pid: int, peak: list) -> None:
    """The largest RssAnon of ``pid`` seen, every 20 ms: its own memory, without the pages
    of the memory-mapped Arrow files (the kernel's to drop) that ru_maxrss counts."""
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            text = status.read_text()
        except OSError:
            return
        for line in text.splitlines():
            if line.startswith("RssAnon:"):
                peak[0] = max(peak[0], int(line.split()[1]) * 1024)
        if "State:\tZ" in text:
            return
        time.sleep(0.02)


STAGES = ("evaluate", "resume", "score", "compare", "view")


def stages(checkout: Path, work: Path, data: dict[str, Path], label: str, args) -> list[tuple]:
    """The stages of one checkout: (name, figures, {file: bytes} of what it wrote)."""
    runs = work / f"runs-{label}"
    if runs.exists():
        shutil.rmtree(runs)  # this script's own outputs of an earlier round
    if not args.keep_cache:
        shutil.rmtree(work / "cache", ignore_errors=True)
    sources = [f"--data={key}={folder}" for key, folder in data.items()]
    common = ["--backend", "instant", "--tasks", ",".join(data), "--no-progress", *sources]
    wanted = args.stages.split(",")

    def stage(name, command, folder):
        since = time.time()
        figures = run_stage(checkout, work, command) if command[0] != "score" else command[1]()
        done.append((name, figures, files_since(folder, since)))
        print(f"  {name}: {figures}", flush=True)

    done: list[tuple] = []
    first = "evaluate" + ("" if args.keep_cache else ", cold")
    stage(first, ["evaluate", *common, "--model", "model-a", "--output-dir", str(runs / "a")], runs)
    if "evaluate" in wanted or "compare" in wanted:
        out = ["--output-dir", str(runs / "b")]
        stage("evaluate", ["evaluate", *common, "--model", "model-b", *out], runs / "b")
    if "resume" in wanted:
        out = ["--output-dir", str(runs / "a")]
        stage("evaluate, resume", ["evaluate", *common, "--model", "model-a", *out], runs / "a")
    if "score" in wanted:
        stage("score", ["score", lambda: score_all(checkout, work, data, runs)], runs / "score")
    if "compare" in wanted:
        cmp = ["compare", str(runs / "a"), str(runs / "b"), "--output-dir", str(runs / "cmp")]
        stage("compare", cmp, runs / "cmp")
    if "view" in wanted:
        stage("view (results.html)", ["view", str(runs / "a")], runs / "a")
    return done


def files_since(folder: Path, since: float) -> dict[str, int]:
    """The files under ``folder`` written since ``since``: path -> bytes."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.stat().st_mtime >= since - 1
    }


def score_all(checkout: Path, work: Path, data: dict[str, Path], runs: Path) -> dict:
    """`score` of every task of the first run, one process each: the figures summed
    (RSS: the largest)."""
    total = {"seconds": 0.0, "cpu": 0.0, "rss": 0, "anon": 0, "page": 0.0, "masking": 0.0}
    for key, folder in data.items():
        log = runs / "a" / f"samples_{key}_test.jsonl"
        out = runs / "score" / key
        figures = run_stage(
            checkout,
            work,
            ["score", "--tasks", key, "--predictions", str(log), "--data", str(folder)]
            + ["--output-dir", str(out)],
        )
        total = {
            k: max(v, figures[k]) if k in ("rss", "anon") else v + figures[k]
            for k, v in total.items()
        }
    return total


def mib(n: int) -> str:
    return f"{n / 1024**2:,.1f} MiB"


def report(label: str, done: list[tuple], examples: int) -> None:
    print(f"\n## {label}: {examples:,} examples\n")
    print(
        "| stage | seconds | ms / example | CPU s | of it the page, masking | CPU ms / example "
        "beyond the page | peak RSS | of it anonymous | written |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, f, files in done:
        per = 1000 * f["seconds"] / examples
        beyond = 1000 * (f["cpu"] - f["page"]) / examples
        flag = "" if "cold" in name or beyond <= GOAL_MS else " (over 5 ms)"
        rss_flag = "" if f["rss"] < GOAL_RSS else " (over 2 GiB)"  # mapped pages counted
        print(
            f"| {name} | {f['seconds']:.1f} | {per:.2f} | {f['cpu']:.1f} | "
            f"{f['page']:.1f}, {f['masking']:.1f} | {beyond:.2f}{flag} | "
            f"{mib(f['rss'])}{rss_flag} | {mib(f['anon'])} | "
            f"{mib(sum(files.values()))} in {len(files)} files |"
        )
    for name, _, files in done:
        if files:
            biggest = sorted(files.items(), key=lambda kv: -kv[1])[:12]
            shown = ", ".join(f"{path} {mib(size)}" for path, size in biggest)
            print(f"\n{name}: {shown}" + (" ..." if len(files) > 12 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/mera-full-size"))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--baseline", type=Path, help="an older checkout, run side by side")
    parser.add_argument("--tasks", help="comma-separated task keys (default: all 18)")
    parser.add_argument(
        "--stages",
        default=",".join(STAGES),
        help="which stages after the first evaluate, of " + ",".join(STAGES),
    )
    parser.add_argument(
        "--keep-cache",
        action="store_true",
        help="keep the prepared cache of an earlier run (the first evaluate is then warm)",
    )
    args = parser.parse_args()
    work = args.work.resolve()
    started = time.perf_counter()
    data = make_all(work / f"data-{args.scale:g}", args.scale, args.tasks and args.tasks.split(","))
    examples = sum(len_of(folder) for folder in data.values())
    size = sum(folder_bytes(folder) for folder in data.values())
    print(
        f"data: {len(data)} tasks, {examples:,} examples, {mib(size)} in "
        f"{work / f'data-{args.scale:g}'} ({time.perf_counter() - started:.0f} s)"
    )
    install_backend(work / "site")
    sides = [("this checkout", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    for label, checkout in sides:
        report(label, stages(checkout.resolve(), work, data, label.split()[0], args), examples)


def len_of(folder: Path) -> int:
    return len(json.loads((folder / "test.json").read_text(encoding="utf-8"))["data"])


if __name__ == "__main__":
    main()
