"""The seven audio and video tasks end to end on real components: the project-made raw
samples, the builders, real decoding (soundfile, PyAV), the tiny random Qwen2-Audio and
LLaVA models built offline, and real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import base64
import importlib
import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import datasets
import numpy as np
import pytest
import soundfile

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.data.media_decode import Media, frame_indices, sample_frames
from mera_multi_hf.data.raw import RawDataset
from mera_multi_hf.demo.builtin_models import TINY_AUDIO_MODEL_ID
from mera_multi_hf.demo.sample_data import SAMPLES_DIR
from mera_multi_hf.demo.sample_data.av_common import clip, encode_video
from mera_multi_hf.generation.backends import make_backend
from mera_multi_hf.generation.backends.hf_media import FRAMES_AS_IMAGES
from mera_multi_hf.generation.backends.openai import OpenAIBackend
from mera_multi_hf.generation.request import Request
from mera_multi_hf.serving.chat_server import make_server
from mera_multi_hf.tasks.prompts import render_prompt
from mera_multi_hf.tasks.table import get_task

NAMES = {
    "ruenvaqa": "ruEnvAQA",
    "ruslun": "ruSLUn",
    "aquaria": "AQUARIA",
    "rutie_audio": "ruTiE-Audio",
    "ruhhh_video": "ruHHH-Video",
    "commonvideoqa": "CommonVideoQA",
    "realvideoqa": "RealVideoQA",
}
AUDIO = ("ruenvaqa", "ruslun", "aquaria", "rutie_audio")
VIDEO = ("ruhhh_video", "commonvideoqa", "realvideoqa")
SIXTEEN = ("красный", "синий", "зелёный", "жёлтый")


def _raw(key: str, split: str = "test") -> list[dict]:
    return json.loads((SAMPLES_DIR / NAMES[key] / f"{split}.json").read_text())["data"]


def _data_args(keys) -> list[str]:
    return [f"{key}={SAMPLES_DIR / NAMES[key]}" for key in keys]


@pytest.mark.parametrize("key", list(NAMES))
def test_bundled_sample_is_what_the_generator_writes(key, tmp_path):
    module = importlib.import_module(f"mera_multi_hf.demo.sample_data.{key}")
    fresh, shipped = module.write_sample(tmp_path / key), SAMPLES_DIR / NAMES[key]
    files = sorted(p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    for name in files:
        assert (fresh / name).read_bytes() == (shipped / name).read_bytes(), name
    assert 6 <= len(_raw(key)) <= 10 and 2 <= len(_raw(key, "shots")) <= 4


@pytest.mark.parametrize("key", list(NAMES))
def test_build_gives_the_hub_features_and_blanks_private_answers(key, tmp_path):
    out = tmp_path / "out"
    assert main(["build", key, "--raw", str(SAMPLES_DIR / NAMES[key]), "--out", str(out)]) == 0
    dsd = datasets.load_dataset(str(out))
    task, test = get_task(key), dsd["test"]
    # the official upload notebooks' features: Audio(), Video(decode=True) (decoding a
    # row needs torchcodec, as with the Hub copy: columns are read here without media)
    media = datasets.Audio() if task.modality == "audio" else datasets.Video(decode=True)
    for name in task.media_fields:
        assert test.features["inputs"][name] == media
    assert [m["id"] for m in test["meta"]] == [r["meta"]["id"] for r in _raw(key)]
    golds = test["outputs"]
    assert golds == ([r["outputs"] for r in _raw(key)] if task.public else [""] * len(golds))
    assert all(dsd["shots"]["outputs"])


def test_aquaria_second_clip_optional_tags_rewritten_music_meta_excluded(tmp_path):
    task = get_task("aquaria")
    raw = RawDataset(task, SAMPLES_DIR / "AQUARIA", include_private_answers=True)
    records = list(raw.records("test"))
    assert not raw.problems
    one = [r for r in records if r["inputs"]["audio_2"] is None]
    assert one and len(one) < len(records)
    assert all(set(r["meta"]["audio"]) == {"synt_source"} for r in records)
    prompt, media = render_prompt(task, records[0])
    assert "<audio_1>" not in prompt and prompt.count("<audio>") == 2
    assert [name for name, _ in media] == ["audio_1", "audio_2"]
    prompt, media = render_prompt(task, one[0])
    assert prompt.count("<audio>") == 1 and [name for name, _ in media] == ["audio_1"]


def test_bad_audio_and_video_files_are_problems_naming_file_id_field(tmp_path):
    import shutil

    for key, media in (
        ("ruenvaqa", "samples/high.wav"),
        ("commonvideoqa", "samples/red_right.mp4"),
    ):
        folder = tmp_path / key
        shutil.copytree(SAMPLES_DIR / NAMES[key], folder)
        (folder / media).write_bytes(b"RIFF\x00\x00garbage" * 8)
        raw = RawDataset(get_task(key), folder)
        list(raw.records("test"))
        bad = [p for p in raw.problems if p.field and p.field.startswith("inputs.")]
        assert bad and bad[0].example_id == 1 and media in bad[0].message, raw.problems


def test_audio_decoding_mixes_down_and_resamples():
    stereo = Media("audio", "x", clip("tone", 1000, seconds=0.5, rate=22_050, channels=2).data)
    samples = stereo.audio(16_000)
    assert samples.dtype == np.float32 and samples.shape == (8000,)
    spectrum = np.abs(np.fft.rfft(samples))
    assert abs(np.argmax(spectrum) * 16_000 / len(samples) - 1000) <= 2  # the pitch kept
    with pytest.raises(MeraError, match="cannot decode the audio"):
        Media("audio", "y", b"not audio at all", field="audio").audio(16_000)


def _colour_video(n: int, container="mp4") -> bytes:
    """Frame i is a whole-frame colour that encodes i (red channel = 6 * i)."""
    from PIL import Image

    return encode_video(
        [Image.new("RGB", (16, 16), (6 * i, 80, 160)) for i in range(n)], container, fps=8
    )


def test_frames_spread_evenly_and_bounded():
    assert frame_indices(40, 4) == [5, 15, 25, 35] and frame_indices(3, 8) == [0, 1, 2]
    frames = sample_frames(io.BytesIO(_colour_video(40)), 4)
    reds = [round(f.getpixel((8, 8))[0] / 6) for f in frames]
    assert reds == [5, 15, 25, 35] and frames[0].size == (16, 16)
    # a raw MPEG-4 stream declares no frame count: the doubling stride keeps the bound
    frames = sample_frames(io.BytesIO(_colour_video(40, "m4v")), 4)
    reds = [round(f.getpixel((8, 8))[0] / 6) for f in frames]
    assert len(reds) == 4 and reds == sorted(reds) and reds[-1] >= 24
    with pytest.raises(MeraError, match="cannot decode the video|no video stream"):
        Media("video", "z", b"\x00" * 64, field="video").frames(4)


@pytest.fixture(scope="module")
def tiny():
    backend = make_backend("hf", None, batch_size=4, max_frames=3)
    backend.load()
    backend.audio.load()
    return backend


def _req(prompt: str, kind: str, data: bytes, rid: int = 1) -> Request:
    return Request(
        task="t",
        split="test",
        id=rid,
        prompt=prompt,
        media=[Media(kind, f"sha{rid}", data, field=kind)],
        max_new_tokens=6,
    )


def test_audio_reaches_the_processor_at_its_rate_where_the_placeholder_stands(tiny):
    audio = tiny.audio
    assert audio.model_id == TINY_AUDIO_MODEL_ID and tiny.settings()["audio_model"]
    request = _req(
        "Слушай <audio> и ответь: A или B?",
        "audio",
        clip("tone", 500, seconds=0.4, rate=22_050, channels=2).data,
    )
    rendered = audio.render(request)
    assert "Слушай <|audio_bos|><|AUDIO|><|audio_eos|>" in rendered
    batch = audio.encode([request])
    assert batch["input_features"].shape[-1] == 300  # the 3-second window
    assert int(batch["feature_attention_mask"].sum()) == 40  # 0.4 s at 16 kHz, 10 ms hop
    tokens = int((batch["input_ids"] == audio.processor.audio_token_id).sum())
    assert tokens == ((40 - 1) // 2 + 1 - 2) // 2 + 1  # Qwen2-Audio's own count


def test_video_frames_go_in_as_pictures_on_an_image_model(tiny):
    tiny = tiny.main  # the demo's image model
    assert tiny.video_input == FRAMES_AS_IMAGES and tiny.info()["video_input"] == FRAMES_AS_IMAGES
    long_video = _req("Видео: <video>\nЧто там?", "video", _colour_video(40))
    short_video = _req("<video> Что там?", "video", _colour_video(2), rid=2)
    assert tiny.render(long_video, [3]).count("<image>") == 3
    batch = tiny.encode([long_video, short_video])
    assert batch["pixel_values"].shape[0] == 3 + 2  # max_frames=3, then all 2
    # the frames stand where the placeholder stood, the text around it verbatim
    assert "Видео: <image>\n<image>\n<image>\n\nЧто там?" in tiny.render(long_video, [3])


def test_answers_do_not_depend_on_the_batch(tiny):
    requests = [
        _req(f"<audio> Вопрос {i}: A или B?", "audio", clip("tone", 200 + 150 * i).data, i)
        for i in range(4)
    ]
    requests += [
        _req(f"<video> Вопрос {i}?", "video", _colour_video(4 + i), 10 + i) for i in range(3)
    ]
    together = tiny.generate(requests)
    assert together == [tiny.generate([r])[0] for r in requests]


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        payload = json.dumps({"choices": [{"message": {"content": "A\n\nлишнее"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def _serve(server):
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/v1"


def test_openai_sends_wav_at_the_clip_rate_and_the_whole_video(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.bodies = []
    try:
        url = _serve(server)
        stereo = clip("tone", 700, seconds=0.3, rate=22_050, channels=2).data
        video = _colour_video(5, "mov")
        backend = OpenAIBackend("m", url, concurrency=2)
        assert backend.generate(
            [
                _req("Звук: <audio> Какой?", "audio", stereo),
                _req("<video>\nСколько?", "video", video, 2),
            ]
        ) == ["A", "A"]
    finally:
        server.shutdown()
        server.server_close()
    audio_body, video_body = sorted(server.bodies, key=lambda b: len(b["messages"][0]["content"]))[
        ::-1
    ]
    parts = audio_body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "audio_url", "text"]
    assert parts[0]["text"] == "Звук: " and parts[2]["text"] == " Какой?"
    head, data = parts[1]["audio_url"]["url"].split(",", 1)
    assert head == "data:audio/wav;base64"
    samples, rate = soundfile.read(io.BytesIO(base64.b64decode(data)))
    assert rate == 22_050 and samples.ndim == 1 and len(samples) == 6615
    head, data = video_body["messages"][0]["content"][0]["video_url"]["url"].split(",", 1)
    assert head == "data:video/mp4;base64" and base64.b64decode(data) == video


def test_served_tiny_models_answer_audio_and_video_as_in_process(tiny):
    server = make_server(tiny, port=0, model_name="tiny-served")
    try:
        remote = OpenAIBackend("tiny-served", _serve(server), concurrency=2)
        requests = [
            _req("<audio> A или B?", "audio", clip("tone", 300 + 200 * i).data, i) for i in range(3)
        ] + [_req("<video> A или B?", "video", _colour_video(6), 9)]
        assert remote.generate(requests) == tiny.generate(requests)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("modality", ["audio", "video"])
def test_evaluate_a_modality_with_no_model_writes_the_submission(modality, tmp_path):
    out = tmp_path / "run"
    args = [
        "evaluate",
        "--tasks",
        modality,
        "--output-dir",
        str(out),
        "--no-progress",
        "--max-frames",
        "2",
    ]
    keys = AUDIO if modality == "audio" else VIDEO
    for item in _data_args(keys):
        args += ["--data", item]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    with zipfile.ZipFile(out / "submission.zip") as zf:
        names = {n for n in zf.namelist() if n.endswith(".json")}
        assert names == {f"{get_task(k).class_name}.json" for k in keys}
        for key in keys:
            rows = json.loads(zf.read(f"{get_task(key).class_name}.json"))["data"]["test"]
            ids = [r["meta"]["id"] for r in _raw(key)]
            if get_task(key).dialogue:  # the packer's ids: (id - smallest id) + 11 here
                ids = [i - min(ids) + 11 for i in ids]
            assert [r["meta"]["id"] for r in rows] == ids
    options = results["run"]["backend_options"]
    assert options["max_frames"] == 2
    if modality == "audio":
        assert options["audio_model"]["model_class"] == "Qwen2AudioForConditionalGeneration"
    else:
        assert options["video_input"] == FRAMES_AS_IMAGES
    assert set(results["tasks"]) == set(keys)
    assert all(results["tasks"][k].get("scorable") for k in keys)
