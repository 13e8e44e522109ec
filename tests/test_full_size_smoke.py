"""benchmarks/full_size.py keeps working: its data maker at a tiny scale writes raw
folders the package reads (ids renumbered, ruHHH pairs sharing a picture, every media
copy its own and still a valid file), and a stage runs `evaluate` through its instant
backend, installed as a package's entry point."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import soundfile
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import full_size  # noqa: E402
import full_size_data  # noqa: E402

TASKS = ["ruhhh_image", "ruenvaqa"]


def test_the_data_maker_writes_raw_folders_the_package_reads(tmp_path):
    data = full_size_data.make_all(tmp_path / "data", 0.06, TASKS)
    image = json.loads((data["ruhhh_image"] / "test.json").read_text(encoding="utf-8"))["data"]
    assert len(image) == full_size_data.scaled_size("ruhhh_image", 0.06) == 36
    assert [r["meta"]["id"] for r in image] == list(range(1, 37))
    # ruHHH: the pairs of a group share their picture and question; groups do not
    groups: dict[int, set] = {}
    for r in image:
        groups.setdefault(r["meta"]["group_id"], set()).add(
            (r["inputs"]["image"], r["inputs"]["question"])
        )
    assert all(len(pairs) == 1 for pairs in groups.values()) and len(groups) > 1
    pictures = {r["inputs"]["image"] for r in image}
    assert len(pictures) == len(groups)
    digests = set()
    for path in pictures:
        raw = (data["ruhhh_image"] / path).read_bytes()
        assert 100_000 < len(raw) < 1_000_000  # a few hundred KB
        assert Image.open(io.BytesIO(raw)).size == full_size_data.IMAGE_SIZE
        digests.add(hashlib.sha256(raw).hexdigest())
    assert len(digests) == len(pictures)  # every copy's content its own
    clip = json.loads((data["ruenvaqa"] / "test.json").read_text(encoding="utf-8"))["data"][0]
    info = soundfile.info(str(data["ruenvaqa"] / clip["inputs"]["audio"]))
    assert 10 <= info.duration <= 30
    # made once: a second call keeps the folder as it is
    stamp = (data["ruenvaqa"] / "test.json").stat().st_mtime_ns
    full_size_data.make_all(tmp_path / "data", 0.06, ["ruenvaqa"])
    assert (data["ruenvaqa"] / "test.json").stat().st_mtime_ns == stamp


def test_a_stage_runs_evaluate_through_the_instant_backend(tmp_path):
    work = tmp_path / "work"
    data = full_size_data.make_all(work / "data", 0.01, TASKS)
    full_size.install_backend(work / "site")
    out = work / "run"
    sources = [f"--data={key}={folder}" for key, folder in data.items()]
    figures = full_size.run_stage(
        REPO,
        work,
        ["evaluate", "--backend", "instant", "--model", "m", "--tasks", ",".join(TASKS)]
        + [*sources, "--no-progress", "--output-dir", str(out)],
    )
    assert figures["seconds"] > 0 and figures["rss"] > 10 * 1024**2
    logged = (out / "samples_ruhhh_image_test.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(logged) == 6 and {json.loads(x)["generation"] for x in logged} <= set("ABCD")
    assert "results.html" in full_size.files_since(out, 0)
