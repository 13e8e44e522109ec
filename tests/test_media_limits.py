"""Bounded media, decoded at build: one set of limits (mera_multi_hf.core.limits) checked on
every file's header before anything is decoded, at build and again at decode; every
image fully decoded and every audio/video's first frame decoded at build, so a file that
`build` accepts is one that `evaluate` can decode."""

from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import DataValidationError, MeraError
from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.data.media_checks import audio_problem, image_problem, video_problem
from mera_multi_hf.data.media_decode import Media
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.data.raw import RawDataset
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.generation import RunConfig
from mera_multi_hf.tasks.table import get_task


def _copy(tmp_path: Path, task: str) -> Path:
    target = tmp_path / task
    shutil.copytree(bundled_sample(task), target)
    return target


def _point(raw: Path, field: str, name: str, data: bytes, position: int = 0) -> int:
    """Write ``data`` as samples/<name> and make test record #position use it; its id."""
    (raw / "samples" / name).write_bytes(data)
    doc = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    doc["data"][position]["inputs"][field] = f"samples/{name}"
    (raw / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return doc["data"][position]["meta"]["id"]


def _problems(task: str, raw: Path, **options) -> list:
    reader = RawDataset(get_task(task), raw, **options)
    for split in reader.splits():
        for _ in reader.records(split):
            pass
    return reader.problems


def _one(problems, example_id, field, text):
    hits = [
        p for p in problems if p.example_id == example_id and p.field == field and text in p.message
    ]
    assert hits, "\n".join(map(str, problems))
    assert all("\n" not in str(p) for p in problems)
    return hits[0]


def _wav(rate: int = 16_000, seconds: float = 0.2, channels: int = 1) -> bytes:
    buf = io.BytesIO()
    samples = np.zeros((int(rate * seconds), channels), dtype=np.float32)
    soundfile.write(buf, samples, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def _absurd_rate(data: bytes, rate: int = 2_000_000_000) -> bytes:
    """A WAV whose header claims ``rate`` Hz (the fmt chunk's rate and byte rate)."""
    raw = bytearray(data)
    fmt = raw.index(b"fmt ") + 8
    channels = struct.unpack_from("<H", raw, fmt + 2)[0]
    bits = struct.unpack_from("<H", raw, fmt + 14)[0]
    struct.pack_into("<II", raw, fmt + 4, rate, min(rate * channels * bits // 8, 2**32 - 1))
    return bytes(raw)


# ---- audio: the reported case, a small WAV that declares an absurd sample rate ----


def test_absurd_sample_rate_is_refused_at_build_and_at_decode(tmp_path, capsys):
    raw = _copy(tmp_path, "ruslun")
    bomb = _absurd_rate(_wav())
    assert len(bomb) < 10_000
    example_id = _point(raw, "audio", "bomb.wav", bomb)
    code = main(["build", "ruslun", "--raw", str(raw), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out").exists()
    line = next(line for line in err.splitlines() if "bomb.wav" in line)
    assert f"id={example_id}" in line and "field inputs.audio" in line
    assert "sample rate 2000000000 Hz is outside 1000..384000 Hz" in line
    assert "--max-audio-rate" in line and "Traceback" not in err
    # the runner refuses it from the header too, before reading or resampling a sample
    clip = Media(kind="audio", sha256="ab" * 32, data=bomb, field="audio")
    with pytest.raises(MeraError, match="refused: audio sample rate 2000000000 Hz"):
        clip.audio(16_000)
    with pytest.raises(MeraError, match="refused"):
        clip.data_uri()  # what the openai backend would send


def test_audio_limits_are_options_of_build(tmp_path, capsys):
    raw = _copy(tmp_path, "ruslun")
    _point(raw, "audio", "long.wav", _wav(rate=8_000, seconds=3, channels=3))
    assert main(["build", "ruslun", "--raw", str(raw), "--out", str(tmp_path / "a")]) == 0
    for option, value, text in (
        ("--min-audio-rate", "10000", "outside 10000..384000 Hz"),
        ("--max-audio-channels", "2", "3 channels, above the limit"),
        ("--max-audio-seconds", "2.5", "lasts 3 s, above the limit"),
    ):
        code = main(
            ["build", "ruslun", "--raw", str(raw), "--out", str(tmp_path / "b"), option, value]
        )
        assert code == 2 and text in capsys.readouterr().err
    clip = Media(
        kind="audio", sha256="x", data=_wav(8_000, 3, 3), limits=Limits(max_audio_seconds=2.5)
    )
    with pytest.raises(MeraError, match="lasts 3 s"):
        clip.audio(16_000)
    assert clip.__class__(kind="audio", sha256="x", data=_wav(8_000, 3, 3)).audio(16_000).shape == (
        48_000,
    )


@pytest.mark.parametrize(
    "option,value",
    [("--max-audio-rate", "0"), ("--max-image-pixels", "-5"), ("--max-audio-seconds", "nan")],
)
def test_a_limit_must_be_positive(tmp_path, capsys, option, value):
    code = main(["build", "ruslun", "--raw", "sample", "--out", str(tmp_path / "o"), option, value])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"mera-multi: error: {option} {value}: give ")
    assert ("at least 1" in err or "above 0" in err) and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


# ---- images: decoded in full at build ----


def _png(size=(32, 24)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 40)).save(buf, format="PNG")
    return buf.getvalue()


def _corrupt_png() -> bytes:
    """A PNG whose IDAT data is damaged but whose chunks and end are all in place."""
    data = bytearray(_png((64, 64)))
    start = data.index(b"IDAT") + 4
    data[start + 2 : start + 12] = b"\x00" * 10  # inside the zlib stream
    return bytes(data)


def _gif() -> bytes:
    buf = io.BytesIO()
    Image.new("P", (40, 30), 3).save(buf, format="GIF")
    return buf.getvalue()


def _malformed_gif() -> bytes:
    data = _gif()
    return data[: len(data) // 2 + 8]  # the image data stops half-way


def _jpeg_with_trailer() -> bytes:
    """A phone-camera JPEG: vendor data after the end-of-image marker."""
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 120, 200)).save(buf, format="JPEG", quality=90)
    return buf.getvalue() + b"\x00\x00VENDOR-TRAILER" + bytes(range(256)) * 4


def test_undecodable_images_are_refused_and_trailers_accepted(raw_sample, tmp_path):
    bad_png = _point(raw_sample, "image", "bad.png", _corrupt_png(), 0)
    bad_gif = _point(raw_sample, "image", "bad.gif", _malformed_gif(), 1)
    photo = _point(raw_sample, "image", "photo.jpg", _jpeg_with_trailer(), 2)
    gif = _point(raw_sample, "image", "fine.gif", _gif(), 3)
    problems = _problems("ruhhh_image", raw_sample)
    _one(problems, bad_png, "inputs.image", "'samples/bad.png': corrupt image")
    _one(problems, bad_gif, "inputs.image", "'samples/bad.gif': corrupt image")
    assert {p.example_id for p in problems} == {bad_png, bad_gif}  # photo and GIF pass
    assert photo and gif
    # what build accepts, the runner decodes
    for data in (_jpeg_with_trailer(), _gif()):
        assert Media(kind="image", sha256="x", data=data).image().size[0] > 0
    for data in (_corrupt_png(), _malformed_gif()):
        with pytest.raises(MeraError):
            Media(kind="image", sha256="x", data=data).image()


def test_the_jpeg_with_a_trailer_builds(raw_sample, tmp_path):
    _point(raw_sample, "image", "photo.jpg", _jpeg_with_trailer(), 0)
    out = export_raw(get_task("ruhhh_image"), raw_sample, tmp_path / "out")
    assert any(out.glob("data/test-*.parquet"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["png", "jpeg", "gif"]),
    cut=st.floats(0.0, 1.0),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=4),
    progressive=st.booleans(),
)
def test_build_check_and_runner_agree_on_damaged_images(kind, cut, flips, progressive):
    """Whatever the damage, the build check accepts a picture exactly when the runner's
    full decode succeeds (a JPEG is checked at 1/8 scale: the same data is decoded), and
    neither raises anything but its own error."""
    buf = io.BytesIO()
    Image.effect_noise((96, 80), 60).convert("RGB").save(buf, format=kind, progressive=progressive)
    data = bytearray(buf.getvalue()[: max(1, int(len(buf.getvalue()) * (0.5 + cut / 2)))])
    for where, value in flips:
        data[int(where * (len(data) - 1))] = value
    why = image_problem(bytes(data))
    if why is None:
        Media(kind="image", sha256="x", data=bytes(data)).image()
    else:
        assert why.startswith(("corrupt image", "image")) and "\n" not in why
        with pytest.raises(MeraError):
            Media(kind="image", sha256="x", data=bytes(data)).image()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(["RGB", "L", "CMYK"]),
    subsampling=st.sampled_from([0, 1, 2]),
    progressive=st.booleans(),
    cut=st.integers(0, 40),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_the_jpeg_check_agrees_with_a_full_decode_in_every_colour_layout(
    mode, subsampling, progressive, cut, flips
):
    """A colour JPEG is checked as grey at 1/8 scale: damage in any component's data
    (chroma subsampled or not, progressive scans, CMYK and grey files as they are) is
    refused exactly when the runner's full decode fails."""
    buf = io.BytesIO()
    Image.effect_noise((112, 72), 60).convert(mode).save(
        buf, format="JPEG", subsampling=subsampling, progressive=progressive
    )
    data = bytearray(buf.getvalue()[: len(buf.getvalue()) - cut])
    for where, value in flips:
        data[int(where * (len(data) - 1))] = value
    if image_problem(bytes(data)) is None:
        Media(kind="image", sha256="x", data=bytes(data)).image()
    else:
        with pytest.raises(MeraError):
            Media(kind="image", sha256="x", data=bytes(data)).image()


def test_image_pixels_are_a_build_and_evaluate_option(raw_sample, tmp_path, capsys):
    example_id = _point(raw_sample, "image", "wide.png", _png((200, 100)), 0)
    code = main(
        [
            "build",
            "ruhhh_image",
            "--raw",
            str(raw_sample),
            "--out",
            str(tmp_path / "o"),
            "--max-image-pixels",
            "10000",
        ]
    )
    err = capsys.readouterr().err
    assert (
        code == 2
        and f"id={example_id}, field inputs.image: 'samples/wide.png': image "
        "declares 200x100 = 20000 pixels, above the limit of 10000"
        in err
    )
    config = RunConfig(max_image_pixels=10_000, max_audio_rate=48_000)
    assert config.limits() == DEFAULT_LIMITS.with_overrides(
        max_image_pixels=10_000, max_audio_rate=48_000
    )
    with pytest.raises(MeraError, match="--min-audio-rate 1000 is above --max-audio-rate 500"):
        RunConfig(max_audio_rate=500)


# ---- video: header and first frame ----


def test_video_duration_and_frames_are_bounded(tmp_path):
    raw = _copy(tmp_path, "commonvideoqa")
    clip = next((raw / "samples").glob("*.mp4")).read_bytes()
    assert video_problem(clip) is None
    why = video_problem(clip, Limits(max_video_seconds=0.01))
    assert why.startswith("video lasts") and "--max-video-seconds" in why
    assert video_problem(clip[: len(clip) // 3]) is not None  # cut: no frame decodes
    problems = _problems("commonvideoqa", raw, limits=Limits(max_video_seconds=0.01))
    assert problems and all(
        p.field == "inputs.video" and "video lasts" in p.message for p in problems
    )
    media = Media(kind="video", sha256="x", data=clip, limits=Limits(max_video_seconds=0.01))
    with pytest.raises(MeraError, match="refused: video lasts"):
        media.frames(4)
    with pytest.raises(MeraError, match="above the limit of 2"):
        Media(kind="video", sha256="x", data=clip, limits=Limits(max_video_frames=2)).frames(4)
    with pytest.raises(MeraError, match="--max-frames 9 is above --max-video-frames 8"):
        RunConfig(max_frames=9, max_video_frames=8)


def test_audio_check_reads_only_the_header_and_first_block():
    assert audio_problem(_wav()) is None
    assert audio_problem(b"RIFF....WAVEfmt ").startswith("corrupt or unsupported audio")
    assert audio_problem(_wav()[:44]).startswith(("audio without samples", "corrupt"))


# ---- parallel checks: the same problems, in the same order, with any number of workers ----


def test_workers_find_the_same_problems_in_order(raw_sample):
    for position in range(0, 20, 3):
        _point(raw_sample, "image", f"bad{position}.png", _corrupt_png(), position)
    one = _problems("ruhhh_image", raw_sample, workers=1)
    four = _problems("ruhhh_image", raw_sample, workers=4)
    assert len(one) == 7 and one == four
    with pytest.raises(DataValidationError):
        export_raw(get_task("ruhhh_image"), raw_sample, raw_sample.parent / "o", num_proc=2)


def _slow_double(item: int) -> int:
    import random
    import time

    time.sleep(random.random() / 500)
    return item * 2


def test_check_all_keeps_order_and_bounds_the_window(monkeypatch):
    import functools
    import os

    from mera_multi_hf.data import media_checks

    monkeypatch.setattr(media_checks, "WINDOW_BYTES", 250)
    submitted, most = [], [0]

    def checks(item):
        submitted.append(item)
        return [functools.partial(_slow_double, item), os.getpid]

    out = []
    for item, results in media_checks.check_all(
        range(40), checks, workers=4, size=lambda item: 100
    ):
        most[0] = max(most[0], len(submitted) - len(out))
        out.append((item, results[0]))
        assert results[1] != os.getpid()  # run in a worker process
    assert out == [(i, 2 * i) for i in range(40)]
    assert most[0] <= 3  # 250 bytes of 100-byte items: never more than 3 in flight


def test_a_decoder_that_kills_its_worker_is_a_one_line_error():
    import functools
    import os

    from mera_multi_hf.data import media_checks

    with pytest.raises(MeraError, match="a media decoder crashed"):
        list(
            media_checks.check_all(
                range(media_checks.BATCH + 1),
                lambda item: [functools.partial(os._exit, 3)],
                workers=2,
            )
        )
