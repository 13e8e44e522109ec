"""results.html and compare.html at full size: their size, and how long headless Chromium
takes from opening the file to its first rows painted (goals: at most 20 MB, at most
3 s), this checkout side by side with an older one (--baseline DIR).

The rows: either a real run's (--run DIR: the rows its results.html holds, in either
format), or synthetic at the official test sizes (27,065 rows at --scale 1): each task's
bundled sample examples through the package's own prompt making and row making
(task_rows: breakdowns, prompt variants, a dialogue's earlier turns), repeated to the
test size with every per-example text of the record (question, options, context: the
inputs shared by at most a quarter of the sample) rewritten in each repetition by a
letter permutation of its own (same length and script, no sentence shared with another
repetition), ids renumbered, and a media element per medium whose path is its own per
repetition (ruHHH's pairs still share theirs, as the real data does). The compare rows
are the same examples with a second answer.

Each checkout renders the same rows in its own process (results_page.render,
compare_page.render); the media files the first 300 rows name are written beside both
pages (small placeholders: only the first page of rows is drawn when the page opens). Then
each page is opened --rounds times in headless Chromium, the checkouts alternating, with
a probe at the end of the page that notes, from the navigation start (performance.now()):
the first paint (the browser's paint timing: the page's head, before its rows), the
first rows drawn (the page's scripts have run: the data parsed, the first page of rows in
the document) and the first rows painted (the next frame after that); the medians are
reported, and the Chromium process's own wall time beside that of an empty page.

    python benchmarks/page_paint.py [--run DIR | --scale 1.0] [--baseline DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_BYTES, GOAL_SECONDS = 20_000_000, 3.0
PLACEHOLDERS = 300  # rows whose media files are written beside the pages
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCRIPTS = ("абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "abcdefghijklmnopqrstuvwxyz")


def _scrambler(seed: str):
    """A letter permutation of its own for ``seed``, within each script, case kept (the
    text keeps its length in characters and in UTF-8 bytes)."""
    rng, table = random.Random(seed), {}
    for letters in SCRIPTS:
        shuffled = rng.sample(letters, len(letters))
        table |= dict(zip(letters, shuffled)) | dict(
            zip(letters.upper(), "".join(shuffled).upper())
        )
    return str.maketrans(table)


def _own_texts(records: list[dict], media: set[str]) -> list[set[str]]:
    """Per record, its input texts shared by at most a quarter of the records (the
    question, options, context; not an annotation every example repeats)."""
    counts: dict[str, int] = {}
    for record in records:
        for value in set(_input_texts(record, media)):
            counts[value] = counts.get(value, 0) + 1
    limit = max(2, len(records) // 4)
    return [{v for v in _input_texts(r, media) if counts[v] <= limit} for r in records]


def _input_texts(record: dict, media: set[str]) -> list[str]:
    inputs = record.get("inputs") or {}
    return [v for k, v in inputs.items() if isinstance(v, str) and len(v) > 2 and k not in media]


def _media(task, example, raw: dict, repetition: int) -> list[dict]:
    """The page's media elements of one synthetic row: a path of its own per repetition."""
    out = []
    for field in example.media_fields:
        name = f"{task.key}/{repetition}/{(raw.get('inputs') or {}).get(field, field)}"
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        if field.startswith("audio"):
            seconds = 10 + int(digest[:4], 16) % 21
            out.append(
                {
                    "field": field,
                    "kind": "audio",
                    "src": f"results_media/{digest}.wav",
                    "seconds": seconds,
                }
            )
        elif field.startswith("video"):
            out.append({"field": field, "kind": "video", "src": f"results_media/{digest}.webm"})
        else:
            out.append({"field": field, "kind": "image", "src": f"results_media/{digest}.jpg"})
    return out


def _task_rows(key: str, scale: float) -> list[dict]:
    import math

    from mera_multi_hf.data.examples import make_examples
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.demo.sample_data import bundled_sample
    from mera_multi_hf.reporting.results_page import task_rows
    from mera_multi_hf.tasks.table import TASKS

    task = TASKS[key]
    examples = make_examples(task, load_task(task, source="sample", split="test"))
    raw = json.loads((bundled_sample(key) / "test.json").read_text(encoding="utf-8"))["data"]
    own = _own_texts(raw, set(task.media_fields))
    at = {record["meta"]["id"]: k for k, record in enumerate(raw)}  # not the split's order
    made, media, records = [], {}, []
    for i in range(math.ceil(task.test_size * scale)):
        repetition, k = divmod(i, len(examples))
        e = examples[k]
        prompt, gold = e.prompt, e.gold
        if repetition:
            table = _scrambler(f"{key}:{repetition}")
            for text in sorted(own[at[e.id]], key=len, reverse=True):
                prompt = prompt.replace(text, text.translate(table))
            gold = gold.translate(table) if isinstance(gold, str) and len(gold) > 2 else gold
        made.append(dataclasses.replace(e, id=i + 1, prompt=prompt, gold=gold))
        media[i + 1] = _media(task, e, raw[at[e.id]], repetition)
        answer = gold if isinstance(gold, str) else (gold or ["A"])[0]
        right = i % 3 != 0
        records.append(
            {
                "id": i + 1,
                "prompt": prompt,
                "generation": answer if right else "B",
                "filtered": answer if right else "B",
                "target": gold,
                "metrics": {m: float(right) for m in task.metrics},
            }
        )
    rows = task_rows(key, "test", records, made, private=not task.public)
    for row in rows:
        row["media"] = media[row["id"]]
    return rows


def synthetic_rows(scale: float) -> list[dict]:
    from mera_multi_hf.tasks.table import TASKS

    return [row for key in TASKS for row in _task_rows(key, scale)]


def decoded_rows(page: str) -> list[dict]:
    """The rows a results.html holds, whichever format (cells coded against ``texts``, or
    values as they are)."""
    data = json.loads(re.search(r'id="page-data">(.*?)</script>', page, re.S)[1])
    if "texts" not in data:
        return [dict(zip(data["fields"], values)) for values in data["rows"]]
    texts = data["texts"]

    def value(cell):
        if isinstance(cell, int):
            return json.loads(texts[cell])
        if isinstance(cell, str):
            return json.loads(cell)
        return json.loads("".join(texts[p] if isinstance(p, int) else p for p in cell))

    return [{f: value(c) for f, c in zip(data["fields"], cells)} for cells in data["rows"]]


def compare_rows(rows: list[dict]) -> list[dict]:
    """compare.html's rows of the same examples: run B answers every other row otherwise."""
    out = []
    for n, r in enumerate(rows):
        right_a = r["verdict"] == "right"
        right_b = right_a != (n % 2 == 0)
        outcome = {(True, False): "only-a", (False, True): "only-b"}.get(
            (right_a, right_b), "both-right" if right_a else "both-wrong"
        )
        gold = r["gold"] if r["gold"] != "hidden (private split)" else "(private split: not shown)"
        b = r["generation"] if right_a == right_b else "C"
        media = [
            {**m, "src": m["src"].replace("results_media/", "compare_media/")}
            for m in r["media"]
            if "src" in m
        ]
        out.append(
            {
                "task": r["task"],
                "id": r["id"],
                "prompt": r["prompt"],
                "a": r["generation"],
                "b": b,
                "gold": gold,
                "outcome": outcome,
                "media": media,
            }
        )
    return out


# Runs in the checkout's own process (--render): its renderers, the same rows.


def render_pages(rows_file: Path, out: Path) -> dict:
    from mera_multi_hf.reporting import compare_page, results_page
    from mera_multi_hf.scoring.records import RunRecord, TaskResult
    from mera_multi_hf.tasks.table import TASKS

    rows = json.loads(rows_file.read_text(encoding="utf-8"))
    keys = list(dict.fromkeys(r["task"] for r in rows))
    results = [
        TaskResult(
            k,
            TASKS[k].class_name,
            TASKS[k].modality,
            TASKS[k].public,
            "test",
            sum(r["task"] == k for r in rows),
            list(TASKS[k].metrics),
            [],
            {},
            {},
        )
        for k in keys
    ]
    started, cpu = time.perf_counter(), time.process_time()
    page = results_page.render(results, RunRecord.from_dict({"model": "m"}), rows)
    took = {"results_s": time.perf_counter() - started, "results_cpu_s": time.process_time() - cpu}
    (out / "results.html").write_text(page, encoding="utf-8")
    pairs = compare_rows(rows)
    result = {
        "a": {"label": "model-a"},
        "b": {"label": "model-b"},
        "tasks": {},
        "overall": None,
        "gold_private": True,
    }
    started, cpu = time.perf_counter(), time.process_time()
    page = compare_page.render(result, pairs)
    took |= {"compare_s": time.perf_counter() - started, "compare_cpu_s": time.process_time() - cpu}
    (out / "compare.html").write_text(page, encoding="utf-8")
    return took


# In the measuring process.


def placeholders(rows: list[dict], out: Path) -> None:
    """Small real files for the media the first PLACEHOLDERS rows name, beside the pages."""
    import io

    import numpy as np
    from PIL import Image

    from mera_multi_hf.demo.sample_data import bundled_sample
    from mera_multi_hf.demo.sample_data.av_common import wav
    from mera_multi_hf.reporting.results_page import webm_preview

    jpeg = io.BytesIO()
    Image.new("RGB", (160, 120), (120, 160, 200)).save(jpeg, "JPEG")
    clip = next((bundled_sample("commonvideoqa") / "samples").glob("*.mp4")).read_bytes()
    files = {
        ".jpg": jpeg.getvalue(),
        ".wav": wav(np.zeros((16000, 1)), 16000),
        ".webm": webm_preview(clip),
    }
    for folder in ("results_media", "compare_media"):
        (out / folder).mkdir(exist_ok=True)
        for r in rows[:PLACEHOLDERS]:
            for m in r["media"]:
                if "src" in m:
                    name = Path(m["src"]).name
                    (out / folder / name).write_bytes(files[Path(name).suffix])


PROBE = """<pre id="paint-probe"></pre><script>
(function () {
  var out = document.getElementById("paint-probe");
  var seen = {drawn: performance.now(), rows: document.querySelectorAll("#rows tr").length};
  out.textContent = JSON.stringify(seen);
  requestAnimationFrame(function () { setTimeout(function () {
    seen.painted = performance.now();
    performance.getEntriesByType("paint").forEach(function (e) { seen[e.name] = e.startTime; });
    out.textContent = JSON.stringify(seen);
  }, 0); });
})();
</script>
"""


def open_in_chromium(page: Path) -> dict:
    """One opening of ``page`` (a copy with the probe, beside it): the probe's times in
    seconds and the Chromium process's wall time."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    started = time.perf_counter()
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    found = re.search(r'<pre id="paint-probe">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise SystemExit(f"no probe in {probe}: {done.stderr[-2000:]}")
    times = json.loads(found[1])
    seconds = {k: times.get(k) and times[k] / 1e3 for k in ("first-paint", "drawn", "painted")}
    return seconds | {"rows": times["rows"], "wall": wall}


def empty_page_wall(folder: Path) -> float:
    empty = folder / "empty.html"
    empty.write_text("<!DOCTYPE html><title>x</title><p>x</p>", encoding="utf-8")
    started = time.perf_counter()
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", empty.as_uri()],
        capture_output=True,
        timeout=120,
    )
    return time.perf_counter() - started


def build(checkout: Path, rows_file: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, __file__, "--render", str(rows_file), str(out)],
        env=env,
        capture_output=True,
        text=True,
        cwd=out,
    )
    if done.returncode:
        raise SystemExit(f"{checkout}: render failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="a run folder: its results.html's rows")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--baseline", type=Path, help="an older checkout, side by side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--work", type=Path, help="where the pages are written (default: a temporary folder)"
    )
    parser.add_argument("--render", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render:
        print(json.dumps(render_pages(*args.render)))
        return
    sys.path.insert(0, str(REPO))
    work = args.work or Path(tempfile.mkdtemp(prefix="page-paint-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.run:
        written = args.run / "results.html"
        rows = decoded_rows(written.read_text(encoding="utf-8"))
        source = f"{args.run} ({len(rows)} rows; its own results.html {written.stat().st_size / 1e6:.1f} MB)"
    else:
        rows = synthetic_rows(args.scale)
        source = f"synthetic, scale {args.scale} ({len(rows)} rows)"
    print(f"rows: {source}, made in {time.perf_counter() - started:.1f} s")
    rows_file = work / "rows.json"
    rows_file.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    sides = {"now": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    renders = {}
    for name, checkout in sides.items():
        renders[name] = build(checkout, rows_file, work / name)
        placeholders(rows, work / name)
    opened = {(n, p): [] for n in sides for p in ("results.html", "compare.html")}
    empty = []
    for n in range(args.rounds):  # the checkouts take turns at going first
        empty.append(empty_page_wall(work))
        for name, page in list(opened)[:: 1 if n % 2 == 0 else -1]:
            opened[name, page].append(open_in_chromium(work / name / page))
    report(sides, renders, opened, statistics.median(empty), work)


def _median(runs: list[dict], key: str) -> str:
    values = [r[key] for r in runs if r.get(key) is not None]
    return f"{statistics.median(values):.2f}" if values else "-"


def _spread(runs: list[dict], key: str) -> str:
    """The median, and the fastest and slowest opening (the machine may be busy)."""
    values = [r[key] for r in runs if r.get(key) is not None]
    return f"{_median(runs, key)} ({min(values):.2f}-{max(values):.2f})" if values else "-"


def report(sides, renders, opened, empty: float, work: Path) -> None:
    print(f"\nChromium, an empty page: {empty:.2f} s wall (median)")
    print(
        "| checkout | page | size | render s (CPU s) | first paint s | first rows drawn s "
        "| first rows painted s (fastest-slowest) | Chromium wall s | goals |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, page), runs in opened.items():
        size = (work / name / page).stat().st_size
        kind = page.split(".")[0]
        took = f"{renders[name][kind + '_s']:.2f} ({renders[name][kind + '_cpu_s']:.2f})"
        painted = _median(runs, "painted")
        met = f"size {'met' if size <= GOAL_BYTES else 'NOT met'}, paint " + (
            "met" if painted != "-" and float(painted) <= GOAL_SECONDS else "NOT met"
        )
        print(
            f"| {name} | {page} | {size / 1e6:.1f} MB ({size / 2**20:.1f} MiB) | {took} "
            f"| {_median(runs, 'first-paint')} | {_median(runs, 'drawn')} | {_spread(runs, 'painted')} "
            f"| {_median(runs, 'wall')} | {met} |"
        )
    print(
        f"\ngoals: at most {GOAL_BYTES / 1e6:.0f} MB; the first {runs[0]['rows']} rows painted in "
        f"at most {GOAL_SECONDS:.0f} s from opening the file (medians of {len(runs)} openings)"
    )
    print(f"pages in {work}")


if __name__ == "__main__":
    main()
