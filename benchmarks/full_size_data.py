"""The data of benchmarks/full_size.py: all 18 tasks as raw MERA folders at their official
test sizes (times a scale), with synthetic media of realistic size.

Each task's records are its bundled sample's, repeated until the test size is reached:
ids renumbered, group ids and pair ids made new in every repetition, and every media
file new in every repetition (records of one repetition that share a file, as ruHHH's
pairs share their picture and question, still share it). The media are a few base files
made once (JPEG pictures of a few hundred KB, WAV clips of 10-30 s, MP4 videos of
10-60 s) written with a few bytes that make each copy's content its own: a JPEG comment
segment, the last PCM samples, an MP4 `free` box. A folder is written once per scale and
kept (its `.complete` marker holds what it was made with).
"""

from __future__ import annotations

import io
import json
import math
import shutil
import struct
from pathlib import Path

import numpy as np
from PIL import Image

from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.demo.sample_data.av_common import wav
from mera_multi_hf.tasks.table import TASKS

# What a folder was made with: a folder whose marker says otherwise is made again.
VERSION = 2
IMAGE_SIZE = (1024, 768)  # a JPEG of about 250 KB at quality 85 with this much texture
AUDIO_SECONDS = (10, 14, 18, 22, 26, 30)
AUDIO_RATE = 16_000
VIDEO_SECONDS = (10, 25, 40, 60)
VIDEO_SIZE, VIDEO_FPS, VIDEO_BITRATE = (320, 240), 8, 160_000
KINDS = {".png": "image", ".jpg": "image", ".wav": "audio", ".mp4": "video", ".mov": "video"}
SUFFIX = {"image": ".jpg", "audio": ".wav", "video": ".mp4"}


def base_images(count: int = 6) -> list[bytes]:
    rng = np.random.default_rng(0)
    w, h = IMAGE_SIZE
    out = []
    for i in range(count):
        x, y = np.meshgrid(np.linspace(0, 1, w), np.linspace(0, 1, h))
        base = np.stack([x * 200, y * 200, (x + y) * 100 + 20 * i], axis=-1)
        pixels = (base + rng.normal(0, 12, (h, w, 3))).clip(0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, "JPEG", quality=85)
        out.append(buf.getvalue())
    return out


def base_clips() -> list[bytes]:
    rng = np.random.default_rng(1)
    out = []
    for seconds in AUDIO_SECONDS:
        t = np.arange(seconds * AUDIO_RATE) / AUDIO_RATE
        wave = 0.3 * np.sin(2 * np.pi * (220 + 20 * seconds) * t)
        wave += 0.05 * rng.standard_normal(len(t))
        out.append(wav(wave[:, None], AUDIO_RATE))
    return out


def base_videos() -> list[bytes]:
    import av

    rng = np.random.default_rng(2)
    w, h = VIDEO_SIZE
    out = []
    for seconds in VIDEO_SECONDS:
        buf = io.BytesIO()
        with av.open(buf, mode="w", format="mp4") as container:
            stream = container.add_stream("mpeg4", rate=VIDEO_FPS)
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.bit_rate = VIDEO_BITRATE
            for n in range(seconds * VIDEO_FPS):
                pixels = rng.integers(90, 140, (h, w, 3), dtype=np.uint8)
                x = (n * 4) % (w - 40)
                pixels[h // 2 - 20 : h // 2 + 20, x : x + 40] = (200, 40, 40)
                frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        out.append(buf.getvalue())
    return out


def unique_copy(kind: str, base: bytes, n: int) -> bytes:
    """``base`` with bytes of its own for copy ``n`` (still a valid file of its kind)."""
    tag = f"full-size copy {n}".encode()
    if kind == "image":  # a COM segment right after SOI
        return base[:2] + b"\xff\xfe" + struct.pack(">H", len(tag) + 2) + tag + base[2:]
    if kind == "audio":  # the last four PCM samples
        return base[:-8] + struct.pack("<q", n)
    return base + struct.pack(">I", len(tag) + 8) + b"free" + tag  # a top-level MP4 box


class MediaPool:
    """The base files of each kind, made on first use."""

    def __init__(self):
        self._made: dict[str, list[bytes]] = {}
        self.copies = 0

    def new_file(self, kind: str) -> bytes:
        if kind not in self._made:
            self._made[kind] = {"image": base_images, "audio": base_clips, "video": base_videos}[
                kind
            ]()
        pool = self._made[kind]
        self.copies += 1
        return unique_copy(kind, pool[self.copies % len(pool)], self.copies)


def scaled_size(key: str, scale: float) -> int:
    return max(1, math.ceil(TASKS[key].test_size * scale))


def _renumbered(record: dict, i: int, repetition: int, dialogue) -> dict:
    meta = dict(record["meta"], id=i + 1)
    if "group_id" in meta:
        meta["group_id"] = repetition * 1000 + meta["group_id"]
    if "pair_id" in meta:
        meta["pair_id"] = f"{meta['pair_id']}-{repetition}"
    if dialogue is not None:
        meta["dialog_id"], meta["question_id"] = dialogue.position(i + 1, 1)
    return dict(record, meta=meta)


def task_records(key: str, n: int, folder: Path, pool: MediaPool) -> list[dict]:
    """``n`` records from the bundled sample's, their media written under folder/media."""
    task = TASKS[key]
    template = json.loads((folder / "test.json").read_text(encoding="utf-8"))["data"]
    (folder / "media").mkdir(exist_ok=True)
    records, written = [], {}
    for i in range(n):
        repetition, record = divmod(i, len(template))
        record = _renumbered(template[record], i, repetition, task.dialogue)
        inputs = dict(record["inputs"])
        for name in task.media_fields:
            old = inputs.get(name)
            if not old:
                continue
            if (repetition, old) not in written:
                kind = KINDS[Path(old).suffix.lower()]
                path = f"media/{len(written):06d}{SUFFIX[kind]}"
                (folder / path).write_bytes(pool.new_file(kind))
                written[repetition, old] = path
            inputs[name] = written[repetition, old]
        records.append(dict(record, inputs=inputs))
    return records


def make_task(key: str, scale: float, root: Path, pool: MediaPool) -> Path:
    """The raw folder of one task at ``scale`` (kept from an earlier call if complete)."""
    task = TASKS[key]
    folder = root / task.dataset_name
    n = scaled_size(key, scale)
    marker = {"version": VERSION, "examples": n}
    done = folder / ".complete"
    if done.is_file() and json.loads(done.read_text()) == marker:
        return folder
    if folder.exists():
        shutil.rmtree(folder)  # a folder this script made and did not finish
    shutil.copytree(bundled_sample(key), folder)
    access = json.loads((folder / "test.json").read_text(encoding="utf-8"))["access"]
    records = task_records(key, n, folder, pool)
    _dump(folder / "test.json", {"access": access, "data": records})
    shots = json.loads((folder / "shots.json").read_text(encoding="utf-8"))
    for j, shot in enumerate(shots["data"]):  # ids are unique across test and shots
        shot["meta"] = dict(shot["meta"], id=n + 1 + j)
    _dump(folder / "shots.json", shots)
    done.write_text(json.dumps(marker))
    return folder


def _dump(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")


def make_all(root: Path, scale: float, tasks=None) -> dict[str, Path]:
    """Every task's raw folder under ``root`` at ``scale``: task key -> folder."""
    root.mkdir(parents=True, exist_ok=True)
    pool = MediaPool()
    return {key: make_task(key, scale, root, pool) for key in (tasks or TASKS)}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
