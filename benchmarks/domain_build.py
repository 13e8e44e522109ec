"""A domain-split task's `mera-multi build`: this checkout against an older one.

Generates a raw UniScienceVQA folder (six domain configs) of N examples in the
single-folder form (one test.json whose records name their domain; the form where
building the domain configs one by one could read every picture once per domain), each
with a JPEG of its own, and times `mera-multi build` of this checkout and of the
checkout given by ``--before`` (e.g. `git archive 5ccde3e | tar -x -C /tmp/old`),
rounds interleaved, each run in its own process so that its peak RSS is its own. Then
both exports are compared file by file (same names, same rows in every file, media bytes
included), and the parse of test.json alone is timed: what reading it again for each
domain would have cost.

    python benchmarks/domain_build.py --before /tmp/old [--examples 3000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_speed import picture  # benchmarks/ is the script's folder

from mera_multi_hf.data.raw import parse_json_doubtful
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import get_task

TASK = get_task("unisciencevqa")
BUILD = r"""
import resource, sys
from mera_multi_hf.cli.main import main
assert main(["build", "unisciencevqa", "--raw", sys.argv[1], "--out", sys.argv[2]]) == 0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_raw(folder: Path, n: int) -> None:
    """The bundled sample with a test split of ``n`` records, domains shuffled."""
    sample = bundled_sample(TASK.key)
    rng = random.Random(0)
    folder.mkdir(parents=True)
    for name in ("raw_dataset_meta.json", "raw_readme_en.json", "raw_readme_ru.json", "shots.json"):
        (folder / name).write_bytes((sample / name).read_bytes())
    (folder / "samples").mkdir()
    for shot in json.loads((sample / "shots.json").read_text())["data"]:
        (folder / shot["inputs"]["image"]).write_bytes(
            (sample / shot["inputs"]["image"]).read_bytes()
        )
    templates = json.loads((sample / "test.json").read_text())["data"]
    data = []
    for i in range(n):
        record = copy.deepcopy(templates[i % len(templates)])
        record["meta"].update(id=1000 + i, domain=rng.choice(TASK.domains))
        record["inputs"]["image"] = f"samples/img{i:05d}.jpg"
        picture(rng, 480, 360).save(folder / record["inputs"]["image"], quality=90)
        data.append(record)
    (folder / "test.json").write_text(
        json.dumps({"access": "private", "data": data}, ensure_ascii=False)
    )


def timed(tree: str, raw: Path, out: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(raw), str(out)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return elapsed, int(proc.stdout.strip().splitlines()[-1]) / 1024  # MiB


def file_digests(export: Path) -> dict[str, list[str]]:
    """Every Parquet file of an export -> one hash per row (media bytes included)."""
    import pyarrow.parquet as pq

    out = {}
    for file in sorted(export.rglob("*.parquet")):
        out[str(file.relative_to(export))] = [
            hashlib.sha256(
                json.dumps(row, sort_keys=True, ensure_ascii=False, default=bytes.hex).encode()
            ).hexdigest()
            for row in pq.read_table(file).to_pylist()
        ]
    return out


def check_same(now: Path, before: Path) -> None:
    mine, theirs = file_digests(now), file_digests(before)
    if mine != theirs:
        sys.exit(f"the exports differ: files {sorted(mine)} vs {sorted(theirs)}")
    rows = sum(len(r) for r in mine.values())
    print(f"both exports hold the same {len(mine)} files, {rows} rows, row for row")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="an older checkout to compare with")
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sides = {
        "before": str(Path(args.before).resolve()),
        "now": str(Path(__file__).resolve().parents[1]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_raw(tmp / "raw", args.examples)
        results: dict[str, list] = {name: [] for name in sides}
        for r in range(args.rounds):
            for name, tree in sides.items():
                results[name].append(timed(tree, tmp / "raw", tmp / f"{name}-{r}"))
        check_same(tmp / f"now-{args.rounds - 1}", tmp / f"before-{args.rounds - 1}")
        for name, runs in results.items():
            print(
                f"{name:7s} best {min(t for t, _ in runs):6.2f} s  median "
                f"{statistics.median(t for t, _ in runs):6.2f} s  peak RSS "
                f"{max(m for _, m in runs):5.0f} MiB  (runs: "
                f"{', '.join(f'{t:.2f}' for t, _ in runs)})"
            )
        best = {name: min(t for t, _ in runs) for name, runs in results.items()}
        print(
            f"time ratio now / before: {best['now'] / best['before']:.2f} (best of {args.rounds})"
        )
        data = (tmp / "raw" / "test.json").read_bytes()
        start = time.perf_counter()
        parse_json_doubtful(data)
        parse = time.perf_counter() - start
        print(
            f"parsing test.json ({len(data) / 2**20:.1f} MiB) once: {parse * 1000:.0f} ms; "
            f"read again for each of the {len(TASK.domains)} domains it would add "
            f"{parse * (len(TASK.domains) - 1) * 1000:.0f} ms (it is parsed once)"
        )


if __name__ == "__main__":
    main()
