"""What the audio and video samples share: clips synthesised with numpy (written with
soundfile) and short videos of a few Pillow-drawn frames (written with PyAV), and the
writer that puts them into the raw MERA layout with the right metadata.

Every clip is deterministic: the same code writes the same bytes (numpy's seeded
generator; PCM WAV; PyAV's mpeg4 encoder with the bit-exact flag)."""

from __future__ import annotations

import importlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from mera_multi_hf.core import json_read
from mera_multi_hf.demo.sample_data.common import COLOURS, Sample, write_raw
from mera_multi_hf.tasks.table import TASKS

RATE = 16_000
OPTIONS = ("option_a", "option_b", "option_c", "option_d")


@dataclass(frozen=True)
class MediaFile:
    """Bytes that ``write_raw`` saves like a picture (it calls ``.save(path, optimize=...)``)."""

    data: bytes

    def save(self, path, optimize: bool = False) -> None:
        Path(path).write_bytes(self.data)


def clip(
    kind: str,
    value: float = 440.0,
    seconds: float = 0.4,
    rate: int = RATE,
    channels: int = 1,
    seed: int = 0,
) -> MediaFile:
    """A WAV clip (16-bit PCM): "tone" (``value`` Hz), "chirp" (rising from ``value`` Hz),
    "noise", "beeps" (``value`` short beeps) or "silence"."""
    t = np.arange(int(seconds * rate)) / rate
    if kind == "tone":
        wave = 0.5 * np.sin(2 * np.pi * value * t)
    elif kind == "chirp":
        wave = 0.5 * np.sin(2 * np.pi * (value + 2000 * t) * t)
    elif kind == "noise":
        wave = 0.3 * np.random.default_rng(seed).standard_normal(len(t)).clip(-3, 3) / 3
    elif kind == "beeps":
        gate = np.floor(t * 2 * value / seconds) % 2 == 0
        wave = 0.5 * np.sin(2 * np.pi * 660 * t) * gate
    else:
        wave = np.zeros_like(t)
    return MediaFile(wav(np.repeat(wave[:, None], channels, axis=1), rate))


def wav(samples: np.ndarray, rate: int) -> bytes:
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def frame(colour: str, x: int, count: int = 1, size: int = 32) -> Image.Image:
    """One frame: ``count`` circles of ``colour`` in a row starting at ``x``."""
    img = Image.new("RGB", (size, size), (235, 238, 242))
    d = ImageDraw.Draw(img)
    for i in range(count):
        cx = x + i * 10
        d.ellipse((cx - 4, size // 2 - 4, cx + 4, size // 2 + 4), fill=COLOURS[colour])
    return img


def movie(
    colour: str,
    direction: int = 1,
    count: int = 1,
    frames: int = 4,
    container: str = "mp4",
    fps: int = 4,
    size: int = 32,
) -> MediaFile:
    """A few frames of circles moving left (-1), right (1) or standing still (0)."""
    start = size // 2 - 6 * direction * (frames - 1) // 2 - (count - 1) * 5
    pictures = [frame(colour, start + 6 * direction * i, count, size) for i in range(frames)]
    return MediaFile(encode_video(pictures, container, fps))


def encode_video(pictures: list[Image.Image], container: str = "mp4", fps: int = 4) -> bytes:
    """Pillow frames as a video file (PyAV, mpeg4 in an mp4 / mov container)."""
    import av

    buf = io.BytesIO()
    with av.open(buf, mode="w", format=container, options={"fflags": "+bitexact"}) as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width, stream.height = pictures[0].size
        stream.pix_fmt = "yuv420p"
        stream.codec_context.options = {"flags": "+bitexact"}
        for picture in pictures:
            for packet in stream.encode(av.VideoFrame.from_image(picture)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return buf.getvalue()


def options(values) -> dict:
    return dict(zip(OPTIONS, values))


def write_av(
    sample: Sample, out_dir: str | Path, modality: str, metrics: dict | None = None
) -> Path:
    """``write_raw`` with the metadata of an audio or video task: its modalities, the
    tools that made the media, its metrics (name -> human score)."""
    out = write_raw(sample, out_dir)
    path = out / "raw_dataset_meta.json"
    meta = json_read.read_file(path)
    metrics = metrics or {"Exact match": 0.0}
    meta.update(
        modalities=["text", modality],
        synt_source_models=["numpy", "soundfile"] if modality == "audio" else ["Pillow", "PyAV"],
        metrics={name: {"ru": "default", "en": "default"} for name in metrics},
        human_benchmark=dict(metrics),
    )
    path.write_text(json.dumps(meta, ensure_ascii=False, indent=4) + "\n", encoding="utf-8")
    return out


def training_texts() -> list[str]:
    """The audio samples' texts (what the tiny audio model's tokenizer is trained on)."""
    texts = []
    from mera_multi_hf.demo.sample_data import SAMPLES

    for key in (k for k in SAMPLES if TASKS[k].modality == "audio"):
        sample = importlib.import_module(f"{__package__}.{key}").sample()
        for record in sample.test + sample.shots:
            texts.append(record["instruction"])
            texts += [
                v for k, v in record["inputs"].items() if k not in ("audio", "audio_1", "audio_2")
            ]
            texts.append(record["outputs"])
    return [t for t in texts if isinstance(t, str) and t]
