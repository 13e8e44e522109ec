"""Media decoding: the project's path against the underlying libraries, and memory
against video length. A timed comparison, not a test.

    python benchmarks/media_decode.py [--clips 300] [--frames 8]

1. Throughput over ``--clips`` generated audio clips (1 s, stereo, 22.05 kHz, resampled to
   16 kHz mono) and as many generated videos (2 s, 96x72, 25 fps): the project's
   ``Media.audio`` / ``Media.frames`` against soundfile + scipy and PyAV called directly
   for the same result (mono 16 kHz samples; ``--frames`` evenly spread RGB frames).
   Goal: the project keeps >= 0.9 of the direct throughput.
2. Peak RSS of one process decoding a 10 s and a 60 s video (160x120, 25 fps) through
   the project's path, beside a naive "decode every frame, then pick" loop. The
   project's peak must not grow with the video's length.
Each measurement runs in a fresh process (peak RSS is per process).
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
from math import gcd

import numpy as np


def audio_clips(n: int) -> list[bytes]:
    from mera_multi_hf.demo.sample_data.av_common import clip

    return [clip("tone", 200 + 7 * i, seconds=1.0, rate=22_050, channels=2).data for i in range(n)]


def videos(n: int, seconds: float, size=(96, 72), fps: int = 25) -> list[bytes]:
    from PIL import Image

    from mera_multi_hf.demo.sample_data.av_common import encode_video

    frames = int(seconds * fps)
    out = []
    for i in range(n):
        pictures = [Image.new("RGB", size, ((i * 3 + 5 * k) % 256, 90, 160)) for k in range(frames)]
        out.append(encode_video(pictures, fps=fps))
    return out


def project_audio(clips):
    from mera_multi_hf.data.media_decode import Media

    return [Media("audio", "x", data).audio(16_000) for data in clips]


def direct_audio(clips):
    import soundfile
    from scipy.signal import resample_poly

    out = []
    for data in clips:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
        step = gcd(rate, 16_000)
        out.append(
            resample_poly(samples.mean(axis=1), 16_000 // step, rate // step).astype(np.float32)
        )
    return out


def project_video(clips, frames: int):
    from mera_multi_hf.data.media_decode import Media

    return [Media("video", "x", data).frames(frames) for data in clips]


def direct_video(clips, frames: int):
    """PyAV straight: decode the stream, convert the evenly spread frames to pictures."""
    import av

    out = []
    for data in clips:
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            total = stream.frames
            wanted = {int((i + 0.5) * total / frames) for i in range(frames)}
            out.append(
                [f.to_image() for k, f in enumerate(container.decode(stream)) if k in wanted]
            )
    return out


def naive_video(clips, frames: int):
    """Every frame decoded into memory first, then the spread ones picked."""
    import av

    out = []
    for data in clips:
        with av.open(io.BytesIO(data)) as container:
            every = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        out.append([every[int((i + 0.5) * len(every) / frames)] for i in range(frames)])
    return out


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def write_long_video(path: str, seconds: float, size=(160, 120), fps: int = 25) -> None:
    """A long video written frame by frame (never all frames in memory)."""
    import av
    from PIL import Image

    with av.open(path, mode="w") as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        for k in range(int(seconds * fps)):
            picture = Image.new("RGB", size, ((7 * k) % 256, (3 * k) % 256, 160))
            for packet in stream.encode(av.VideoFrame.from_image(picture)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def child(kind: str, path: str, frames: int) -> None:
    """One RSS measurement in this fresh process: print the peak in MiB."""
    import av  # noqa: F401 (loaded before the baseline)

    import mera_multi_hf.data.media_decode  # noqa: F401

    with open(path, "rb") as fh:
        clip = [fh.read()]
    decode = project_video if kind == "project" else naive_video
    decode(videos(1, 0.2), 1)  # the libraries warmed on a short clip
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    decode(clip, frames)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "peak_mib": peak / 1024,
                "growth_mib": (peak - before) / 1024,
                "video_bytes": len(clip[0]),
            }
        )
    )


def rss(kind: str, path: str, frames: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--video", path, "--frames", str(frames)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def throughput(n: int, frames: int) -> dict:
    clips, movies = audio_clips(n), videos(n, 2.0)
    result = {}
    for name, project, direct, args in (
        ("audio", project_audio, direct_audio, (clips,)),
        ("video", project_video, direct_video, (movies, frames)),
    ):
        timed(project, *(a[:5] if i == 0 else a for i, a in enumerate(args)))  # warm up
        p = min(timed(project, *args) for _ in range(3))
        d = min(timed(direct, *args) for _ in range(3))
        result[name] = {
            "clips": n,
            "project_clips_per_s": n / p,
            "direct_clips_per_s": n / d,
            "ratio": d / p,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=300)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--child", choices=("project", "naive"))
    parser.add_argument("--video", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.video, args.frames)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        paths = {s: f"{tmp}/{s}s.mp4" for s in (10, 60)}
        for s, path in paths.items():
            write_long_video(path, s)
        peaks = {
            f"{kind} {s}s": rss(kind, path, args.frames)
            for kind in ("project", "naive")
            for s, path in paths.items()
        }
    report = {"throughput": throughput(args.clips, args.frames), "peak_rss": peaks}
    print(json.dumps(report, indent=1))
    for name, r in report["throughput"].items():
        print(
            f"{name}: project {r['project_clips_per_s']:.0f} clips/s, direct "
            f"{r['direct_clips_per_s']:.0f} clips/s, ratio {r['ratio']:.2f} (goal >= 0.9)"
        )
    for name, r in report["peak_rss"].items():
        print(
            f"peak RSS {name}: {r['peak_mib']:.0f} MiB (+{r['growth_mib']:.0f} MiB while decoding)"
        )


if __name__ == "__main__":
    main()
