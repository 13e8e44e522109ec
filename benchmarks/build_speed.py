"""Build speed and memory: `mera-multi build` against a bare datasets baseline.

Generates a raw ruHHH-Image folder of N examples with 640x480 JPEGs, then times, in
alternating rounds, (a) `mera-multi build` (checks every record, fully decodes every
image, writes Parquet shards and the card), once in one process (`--num-proc 1`) and
once with one process per CPU (the default: the decoding in the others), and (b) a
baseline that writes the same rows unchecked, in one process, straight through
`datasets.Dataset.from_generator` + `to_parquet`. Each runs in its own process so that
its peak RSS is its own. Afterwards the outputs are read back and compared row by row
(a hash of every row, media bytes included): a ratio over different rows means nothing.
Finally the cost of the decoding alone (the build's image check over every file, one
thread) is timed, so the report says what the check costs. Each side's CPU seconds (its
worker processes' included) are reported beside its wall-clock time.

``--baseline DIR``: also time `mera-multi build` (default num-proc) of the checkout in
DIR (e.g. `git worktree add /tmp/before <commit>`), in the same interleaved rounds, so a
change is shown before and after side by side.

    python benchmarks/build_speed.py [--examples 5000] [--rounds 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageDraw

from mera_multi_hf.demo.sample_data.ruhhh_image import ITEMS, PROMPTS

BASELINE = r"""
import json, resource, sys
from pathlib import Path
import datasets
from mera_multi_hf.data.builders import builder_class
from mera_multi_hf.tasks.table import get_task

raw, out, cache = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
prompts = json.loads((raw / "raw_dataset_meta.json").read_text())["prompts"]
features = builder_class(get_task("ruhhh_image")).features()

def rows():
    for record in json.loads((raw / "test.json").read_text())["data"]:
        inputs = dict(record["inputs"])
        path = raw / inputs["image"]
        inputs["image"] = {"bytes": path.read_bytes(), "path": path.name}
        yield {"instruction": prompts[record["instruction"]], "inputs": inputs,
               "outputs": record["outputs"], "meta": record["meta"]}

ds = datasets.Dataset.from_generator(rows, features=features, cache_dir=cache)
out.mkdir(parents=True)
ds.to_parquet(str(out / "test.parquet"))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
"""

OURS = r"""
import resource, sys
from mera_multi_hf.cli.main import main
assert main(["build", "ruhhh_image", "--raw", sys.argv[1], "--out", sys.argv[2]] + sys.argv[3:]) == 0
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
"""


def picture(rng: random.Random, width: int = 640, height: int = 480) -> Image.Image:
    """A photo-like test picture: a plain ground with 12 coloured rectangles."""
    img = Image.new("RGB", (width, height), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(12):
        x, y = rng.randrange(width - 40), rng.randrange(height - 40)
        draw.rectangle(
            [x, y, x + rng.randrange(20, 200), y + rng.randrange(20, 200)],
            fill=tuple(rng.randrange(256) for _ in range(3)),
        )
    return img


def make_raw(folder: Path, n: int) -> None:
    rng = random.Random(0)
    (folder / "samples").mkdir(parents=True)
    data = []
    for i in range(n):
        img = picture(rng)
        name = f"samples/image{i:05d}.jpg"
        img.save(folder / name, quality=90)
        category, subcategory, _scene, question, answers = ITEMS[i % len(ITEMS)]
        data.append(
            {
                "instruction": i % len(PROMPTS),
                "inputs": {
                    "image": name,
                    "question": question,
                    "option_a": answers[0],
                    "option_b": answers[-1],
                },
                "outputs": "AB"[i % 2],
                "meta": {
                    "id": i,
                    "group_id": i,
                    "image": {
                        "source": ["bench"],
                        "type": ["photo"],
                        "content": ["object"],
                        "context": ["no_context"],
                    },
                    "categories": {"category": category, "subcategory": subcategory},
                },
            }
        )
    (folder / "test.json").write_text(
        json.dumps({"access": "public", "data": data}, ensure_ascii=False)
    )
    (folder / "raw_dataset_meta.json").write_text(
        json.dumps({"prompts": PROMPTS}, ensure_ascii=False)
    )


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(code: str, *args: str, checkout: str | None = None) -> tuple[float, float, float, float]:
    """(seconds, peak RSS in MiB, CPU seconds, CPU seconds of the main process) of one
    side, run in its own process (``checkout``: with that checkout's package on the
    path, not this one's). The main process's CPU is the build's critical path on a
    quiet machine: its decoding workers run beside it."""
    env = dict(os.environ, PYTHONPATH=checkout) if checkout else None
    cpu, start = cpu_of_children(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=checkout
    )
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(proc.stderr)
    rss, main_cpu = proc.stdout.strip().splitlines()[-1].split()
    return elapsed, int(rss) / 1024, cpu_of_children() - cpu, float(main_cpu)  # MiB


def row_digests(files: list[Path]) -> list[str]:
    """One hash per row of the Parquet files, in order (media bytes hashed, not decoded)."""
    import pyarrow.parquet as pq

    digests = []
    for file in files:
        for row in pq.read_table(file).to_pylist():
            digest = hashlib.sha256(row["inputs"]["image"]["bytes"])
            row["inputs"]["image"]["bytes"] = None
            digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
            digests.append(digest.hexdigest())
    return digests


def check_same_rows(ours: Path, baseline: Path, n: int) -> None:
    mine = row_digests(sorted((ours / "data").glob("test-*.parquet")))
    theirs = row_digests([baseline / "test.parquet"])
    if len(mine) != n or mine != theirs:
        differ = sum(a != b for a, b in zip(mine, theirs))
        sys.exit(
            f"the two sides wrote different rows: {len(mine)} vs {len(theirs)} rows "
            f"(expected {n}), {differ} differing"
        )
    print(f"both sides wrote the same {n} rows")


def decode_seconds(folder: Path) -> float:
    """The build's image check (a full decode) over every file, on one thread."""
    from mera_multi_hf.data.media_checks import image_problem

    files = [p.read_bytes() for p in sorted(folder.iterdir())]
    start = time.perf_counter()
    assert not any(image_problem(data) for data in files)
    return time.perf_counter() - start


SIDES = {
    "baseline": (BASELINE, []),
    "build, 1 process": (OURS, ["--num-proc", "1"]),
    "build (default num-proc)": (OURS, []),
}
BEFORE = "before: build (default)"  # --baseline DIR's build


def run_rounds(tmp: Path, sides: dict, rounds: int, examples: int) -> dict:
    """Every side once per round, each round starting one side later (on a shared
    machine no side always runs first); then each side's rows are compared with the
    baseline's of the same round."""
    results: dict[str, list] = {name: [] for name in sides}
    listed = list(enumerate(sides.items()))
    for r in range(rounds):
        turn = r % len(listed)
        for i, (name, (code, extra, checkout)) in listed[turn:] + listed[:turn]:
            out = [str(tmp / f"{i}-{r}")] + ([str(tmp / f"cache{r}")] if i == 0 else extra)
            results[name].append(timed(code, str(tmp / "raw"), *out, checkout=checkout))
    for r in range(rounds):
        for i in range(1, len(sides)):
            check_same_rows(tmp / f"{i}-{r}", tmp / f"0-{r}", examples)
    return results


def report(results: dict, examples: int, decode: float) -> None:
    best = {name: min(run[0] for run in runs) for name, runs in results.items()}
    median = {name: statistics.median(run[0] for run in runs) for name, runs in results.items()}
    cpu = {name: statistics.median(run[2] for run in runs) for name, runs in results.items()}
    for name, runs in results.items():
        rss = max(run[1] for run in runs)
        main_cpu = statistics.median(run[3] for run in runs)
        print(
            f"{name:24s} median {median[name]:6.2f} s  best {best[name]:6.2f} s  "
            f"{examples / median[name]:5.0f} examples/s  "
            f"CPU {cpu[name]:5.2f} s (main process {main_cpu:5.2f})  peak RSS {rss:5.0f} MiB  "
            f"(runs: {', '.join(f'{run[0]:.2f}' for run in runs)}; "
            f"CPU: {', '.join(f'{run[2]:.2f}' for run in runs)})"
        )
    print(f"decoding every image once (the build's check, one thread): {decode:.2f} s")
    # Where other work shares the machine, its scheduler shares the CPU between sessions
    # (Linux autogroups), not between processes: a side's worker processes then add no
    # CPU to it, and its time follows its CPU seconds, so the CPU ratio is the figure
    # that the throughput ratio tends to on a busy machine.
    for name in list(results)[1:]:
        print(
            f"throughput ratio ({name} / baseline): {median['baseline'] / median[name]:.2f} "
            f"median, {best['baseline'] / best[name]:.2f} best  (goal >= 0.8 median); "
            f"CPU {cpu['baseline'] / cpu[name]:.2f}"
        )
    print(
        f"  the same without the decode's one-thread cost: "
        f"{best['baseline'] / (best['build, 1 process'] - decode):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--baseline", metavar="DIR", help="also time the build of the checkout in DIR"
    )
    args = parser.parse_args()
    sides = {name: (code, extra, None) for name, (code, extra) in SIDES.items()}
    if args.baseline:
        sides[BEFORE] = (OURS, [], str(Path(args.baseline).resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        make_raw(tmp / "raw", args.examples)
        size = sum(p.stat().st_size for p in (tmp / "raw" / "samples").iterdir()) / 2**20
        print(
            f"generated {args.examples} examples ({size:.0f} MiB of JPEG) "
            f"in {time.perf_counter() - start:.1f} s"
        )
        results = run_rounds(tmp, sides, args.rounds, args.examples)
        report(results, args.examples, decode_seconds(tmp / "raw" / "samples"))


if __name__ == "__main__":
    main()
