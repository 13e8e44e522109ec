"""The two backends on the real tiny model: hf in process, openai against real HTTP
servers on 127.0.0.1 (the project's own OpenAI-compatible server, and small stdlib
servers that fail on purpose)."""

from __future__ import annotations

import base64
import io
import json
import socket
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.media_decode import Media, limit_pixels
from mera_multi_hf.generation.backends import Backend, RoutingBackend, cut_at_stop, make_backend
from mera_multi_hf.generation.backends.hf import HFBackend
from mera_multi_hf.generation.backends.openai import OpenAIBackend
from mera_multi_hf.generation.chat import openai_messages
from mera_multi_hf.generation.request import Request
from mera_multi_hf.pipeline.evaluate import run_evaluation
from mera_multi_hf.serving.chat_requests import prompt_from_openai
from mera_multi_hf.serving.chat_server import make_server
from mera_multi_hf.tasks.prompts import content_parts, plain_prompt


@pytest.fixture(scope="module")
def tiny_backend():
    backend = HFBackend(None, batch_size=4)
    backend.load()
    return backend


@pytest.fixture
def served(tiny_backend):
    """The project's OpenAI-compatible server over the tiny model, on a free port."""
    server = make_server(tiny_backend, port=0, model_name="tiny-served")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def _png(width=40, height=20, color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format="PNG")
    return buf.getvalue()


def _request(
    prompt="<image>\nЧто на картинке? Ответь A или B.",
    data=None,
    max_new=8,
    stop=("\n\n",),
    kind="image",
    rid=1,
):
    data = data or _png()
    return Request(
        task="t",
        split="test",
        id=rid,
        prompt=prompt,
        media=[Media(kind=kind, sha256="x", data=data)],
        max_new_tokens=max_new,
        stop=stop,
    )


def test_content_parts_follow_placeholder_order():
    parts = content_parts("Первое <image_1> между\n<image_2>\nконец")
    # verbatim, as the official harness interleaves: spaces and line breaks are kept
    assert parts == [
        {"type": "text", "text": "Первое "},
        {"type": "image"},
        {"type": "text", "text": " между\n"},
        {"type": "image"},
        {"type": "text", "text": "\nконец"},
    ]
    assert content_parts("<audio>\nВопрос?") == [
        {"type": "audio"},
        {"type": "text", "text": "\nВопрос?"},
    ]
    assert content_parts("<image><image>") == [{"type": "image"}, {"type": "image"}]
    assert plain_prompt("a <image> b <image_2>", "<IMG>") == "a <IMG> b <IMG>"


def test_openai_messages_roundtrip_through_server_parsing():
    png = _png()
    request = _request(prompt="Вот <image> и вопрос", data=png)
    content = openai_messages(request)[0]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    prompt, media = prompt_from_openai(content)
    assert content_parts(prompt) == content_parts(request.prompt)
    assert media == [("image", png)]


def test_pixel_limit_keeps_aspect_ratio():
    img = Image.new("RGB", (400, 100))
    small = limit_pixels(img, 10_000)
    assert small.width * small.height <= 10_000
    assert abs(small.width / small.height - 4) < 0.1
    assert limit_pixels(img, 10**6) is img
    # the data URI of a big picture is downscaled too (what the openai backend sends)
    uri = Media(kind="image", sha256="x", data=_png(400, 100)).data_uri(max_pixels=10_000)
    sent = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert sent.width * sent.height <= 10_000 and sent.width > sent.height


def test_hf_backend_chat_template_and_plain_mode(tiny_backend):
    rendered = tiny_backend.render(_request())
    assert rendered.startswith("<|user|>\n<image>\n") and rendered.endswith("<|assistant|>\n")
    plain = HFBackend(None, prompt_mode="plain")
    plain.load()
    assert plain.render(_request()) == "<image>\nЧто на картинке? Ответь A или B."
    out = plain.generate([_request(), _request(prompt="<image> Вопрос: да или нет?")])
    assert out == ["B", "A"]  # what the tiny model was trained to answer to these two


def test_hf_backend_batch_invariance(tiny_backend):
    """Left padding + attention mask: answers do not depend on the batch they are in."""
    prompts = [
        f"<image>\nВопрос {'очень ' * k}длинный номер {k}? Ответь A или B." for k in range(6)
    ]
    colors = [(30 * k, 200 - 20 * k, 90) for k in range(6)]
    requests = [_request(prompt=p, data=_png(color=c), max_new=12) for p, c in zip(prompts, colors)]
    alone = [tiny_backend.generate([r])[0] for r in requests]
    together = tiny_backend.generate(requests)
    assert together == alone
    assert len(set(alone)) > 1  # the answers depend on the input (else this proves nothing)


def _png_declaring(width: int, height: int) -> bytes:
    """A real 1x1 PNG whose header (with a valid CRC) declares another size."""
    raw = bytearray(_png(1, 1))
    raw[16:24] = struct.pack(">II", width, height)
    raw[29:33] = struct.pack(">I", zlib.crc32(bytes(raw[12:29])))
    return bytes(raw)


def test_decompression_bomb_is_a_clear_error(tiny_backend):
    bomb = Media(kind="image", sha256="ab" * 32, data=_png_declaring(40_000, 40_000), field="image")
    with _no_warnings():
        with pytest.raises(MeraError, match="image image .*decompression bomb"):
            bomb.image()
        with pytest.raises(MeraError, match="decompression bomb"):
            bomb.data_uri()  # what the openai backend would send
    # below PIL's own limit, the project's limit applies (and names the declared size)
    big = _request(data=_png_declaring(50, 40), rid=7)
    for media in big.media:
        media.limits = Limits(max_image_pixels=1000)
    with pytest.raises(MeraError, match=r"^t id=7: image .*declares 50x40 = 2000 pixels"):
        tiny_backend.generate([big])
    with pytest.raises(MeraError, match="not a readable image"):
        Media(kind="image", sha256="x", data=b"not a picture").image()


class _no_warnings:
    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)


def test_audio_goes_as_a_mono_16_bit_wav_at_its_own_rate():
    import numpy as np
    import soundfile

    t = np.arange(2205) / 22050
    stereo = np.stack([np.sin(2 * np.pi * 440 * t), 0.5 * np.sin(2 * np.pi * 220 * t)], axis=1)
    buf = io.BytesIO()
    soundfile.write(buf, stereo * 0.5, 22050, format="FLAC")
    uri = Media(kind="audio", sha256="x", data=buf.getvalue()).data_uri()
    assert uri.startswith("data:audio/wav;base64,")
    sent = io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))
    info = soundfile.info(sent)
    assert (info.samplerate, info.channels, info.subtype) == (22050, 1, "PCM_16")
    sent.seek(0)
    samples, _ = soundfile.read(sent)
    assert np.abs(samples - (stereo * 0.5).mean(axis=1)).max() < 1e-3
    with pytest.raises(MeraError, match="cannot decode the audio"):
        Media(kind="audio", sha256="x", data=b"RIFF....junk").data_uri()


@pytest.fixture(scope="module")
def chatty_backend(tmp_path_factory):
    """A random LLaVA (the tiny model's config and processor, unit-scale random weights,
    no EOS nudge) that writes long, input-dependent noise: stop strings get exercised."""
    from mera_multi_hf.demo.builtin_models import build_random_llava

    out = build_random_llava(tmp_path_factory.mktemp("chatty"), size=None, seed=3)
    backend = HFBackend(str(out), batch_size=4)
    backend.load()
    return backend


def _bare_loop(backend, requests):
    """One request at a time: a plain model.generate for max_new_tokens, then the cut."""
    import torch

    config = backend.generation_config
    out = []
    for request in requests:
        inputs = backend.encode([request])
        with torch.inference_mode():
            tokens = backend.model.generate(
                **inputs, generation_config=config, max_new_tokens=request.max_new_tokens
            )
        text = backend.tokenizer.decode(
            tokens[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True
        )
        out.append(cut_at_stop(text, request.stop))
    return out


def _forward_counter(backend):
    calls = [0]
    handle = backend.model.register_forward_hook(lambda *args: calls.__setitem__(0, calls[0] + 1))
    return calls, handle


def test_hf_stops_each_row_like_a_bare_generate_loop(chatty_backend):
    stop = (" г", "tion")
    requests = [
        _request(
            prompt=f"<image>\nВопрос {'очень ' * k}номер {k}?",
            max_new=40,
            data=_png(color=(30 * k, 200 - 20 * k, 90)),
            stop=stop,
            rid=k,
        )
        for k in range(8)
    ]
    bare = _bare_loop(chatty_backend, requests)
    calls, handle = _forward_counter(chatty_backend)
    try:
        batched = chatty_backend.generate(requests[:4]) + chatty_backend.generate(requests[4:])
        steps = calls[0]
        alone = [chatty_backend.generate([r])[0] for r in requests]
    finally:
        handle.remove()
    assert batched == bare == alone
    assert not any(s in text for text in bare for s in stop)
    lengths = {len(t) for t in bare}
    assert len(lengths) > 3  # rows stop at different places
    # each batch ends when its last row has stopped, not after 40 tokens of padding
    assert steps < 2 * 40


def test_stop_settings_and_the_backend_factory():
    assert cut_at_stop("A\n\nB\n\nC", ("\n\n",)) == "A"
    assert cut_at_stop("xx END yy\n\n", ("\n\n", "END")) == "xx "
    assert cut_at_stop("no stop", ("\n\n",)) == "no stop"
    hf = make_backend("hf", None, batch_size=2, base_url="ignored", concurrency=3)
    # the demo: a routing backend over two plain backends, each serving one model
    assert isinstance(hf, Backend) and isinstance(hf, RoutingBackend) and hf.batch_size == 2
    assert isinstance(hf.main, HFBackend) and isinstance(hf.audio, HFBackend)
    assert hf.main.model_id != hf.audio.model_id and "audio_model" in hf.settings()
    assert hf.settings()["stop"] == ["\n\n"]
    api = make_backend("openai", "m", base_url="http://127.0.0.1:1/v1", stop=["###"], dtype="auto")
    assert isinstance(api, Backend) and api.settings()["stop"] == ["###"]
    assert (
        api.settings() != make_backend("openai", "m", base_url="http://127.0.0.1:1/v1").settings()
    )
    with pytest.raises(TypeError, match="no_such_option"):
        make_backend("hf", None, no_such_option=1)
    with pytest.raises(MeraError, match="unknown backend"):
        make_backend("vllm", None)
    with pytest.raises(MeraError, match="--stop is empty"):
        make_backend("hf", None, stop=[""])


def _config_holder(config):
    from types import SimpleNamespace

    return SimpleNamespace(config=config)  # context_length reads only model.config


def test_max_length_is_derived_as_the_harness_does(tiny_backend):
    """huggingface.py max_length, restated: the config's own n_positions,
    max_position_embeddings or n_ctx, else the tokenizer's model_max_length, else 2048
    where that is transformers' "no limit" int(1e30)."""
    import copy

    from transformers import GPT2Config, LlamaConfig, LlavaConfig

    from mera_multi_hf.generation.backends.hf_model import context_length

    tokenizer = copy.copy(tiny_backend.tokenizer)
    tokenizer.model_max_length = 333
    unset = copy.copy(tiny_backend.tokenizer)
    unset.model_max_length = int(1e30)
    llava = LlavaConfig(text_config=LlamaConfig(max_position_embeddings=64))
    table = [  # config, tokenizer -> max_length
        (GPT2Config(n_positions=77), tokenizer, 77),
        (LlamaConfig(max_position_embeddings=99), tokenizer, 99),
        (llava, tokenizer, 333),  # the text config's 64 is not consulted, as in the harness
        (llava, unset, 2048),
    ]
    for config, tok, expected in table:
        assert context_length(_config_holder(config), tok) == expected
    assert tiny_backend.max_length == 2048  # the tiny LLaVA: no top-level limit, tokenizer unset


@pytest.fixture
def short_context(tiny_backend):
    """The tiny backend with a 300-token max_length (restored afterwards)."""
    saved = tiny_backend.max_length
    tiny_backend.max_length = 300
    yield tiny_backend
    tiny_backend.max_length = saved


def _input_widths(backend):
    widths = []
    handle = backend.model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    return widths, handle


def test_long_prompts_keep_their_last_tokens_and_never_stop_a_run(short_context):
    backend = short_context
    fits = _request(prompt="<image>\nКоротко?", rid=1)
    text_first = _request(prompt="очень " * 400 + "<image>\nВопрос?", rid=2)
    media_first = _request(prompt="<image>\n" + "очень " * 400 + "?", rid=3)
    lengths = {
        r.id: backend.encode([r])["attention_mask"].sum().item()
        for r in (fits, text_first, media_first)
    }
    # the harness's rule by hand: keep the last max_length - max_new_tokens = 300 - 8 = 292
    assert lengths[1] <= 292 < lengths[2]
    expected_cut = {1: 0, 2: lengths[2] - 292, 3: lengths[3] - 292}
    widths, handle = _input_widths(backend)
    try:
        with pytest.warns(UserWarning, match="t id=3: .*media tokens among them"):
            together = backend.generate([fits, text_first, media_first])
        first_width = widths[0]
    finally:
        handle.remove()
    assert first_width == 292  # the batch's prompt columns, cut from the left
    assert {r.id: r.tokens_cut for r in (fits, text_first, media_first)} == expected_cut
    assert together[2] == ""  # its image tokens were cut: no answer, the run goes on
    alone = [backend.generate([_request(prompt="<image>\nКоротко?", rid=1)])[0]]
    with pytest.warns(UserWarning, match="t id=2: the prompt is"):
        alone.append(
            backend.generate([_request(prompt="очень " * 400 + "<image>\nВопрос?", rid=2)])[0]
        )
    assert together[:2] == alone  # a cut row answers as it does alone
    assert {"t id=2", "t id=3"} <= set(backend.info()["prompts_cut_here"])


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(MeraError, match="not a model folder"):
        HFBackend(str(tmp_path / "no-such-model"))


def test_openai_backend_through_served_tiny_model_matches_hf(served, tiny_backend):
    """Same model behind a real HTTP server: the same greedy answers as in process."""
    requests = [
        _request(
            prompt=f"<image>\nВопрос {k}? Ответь A или B.",
            rid=k,
            data=_png(color=(40 * k, 90, 200 - 30 * k)),
        )
        for k in range(6)
    ]
    remote = OpenAIBackend("tiny-served", served, concurrency=3)
    try:
        assert remote.generate(requests) == tiny_backend.generate(requests)
    finally:
        remote.close()


def test_api_key_is_never_written(served, tmp_path):
    result = run_evaluation(
        model="tiny-served",
        tasks="ruhhh_image",
        data=["sample"],
        limit=3,
        backend="openai",
        base_url=served,
        output_dir=str(tmp_path / "run"),
        no_progress=True,
        api_key="sk-secret-123",
    )
    assert result["counts"]["generated"] == 3
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".yaml"):
            assert "sk-secret-123" not in path.read_text(encoding="utf-8")


class _Flaky(BaseHTTPRequestHandler):
    """Fails the first `fail` requests with 503, then answers; records what it got."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.calls += 1
            server.auth.append(self.headers.get("Authorization"))
            server.bodies.append(body)
            fail = server.calls <= server.fail
        if fail:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if server.status != 200:
            payload = json.dumps({"error": {"message": "model 'x' does not exist"}}).encode()
            self.send_response(server.status)
        else:
            payload = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": server.answer}}]}
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def flaky():
    def start(fail=0, status=200):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        server.daemon_threads = True
        server.fail, server.status, server.calls, server.answer = fail, status, 0, "B"
        server.auth, server.bodies, server.lock = [], [], threading.Lock()
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        started.append(server)
        return server

    started = []
    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def test_openai_retries_with_backoff_then_succeeds(flaky):
    server = flaky(fail=2)
    backend = OpenAIBackend(
        "m",
        f"http://127.0.0.1:{server.server_port}/v1",
        api_key="k-1",
        concurrency=1,
        max_retries=3,
        backoff=0.01,
    )
    assert backend.generate([_request()]) == ["B"]
    backend.close()
    assert server.calls == 3
    assert server.auth == ["Bearer k-1"] * 3
    body = server.bodies[-1]
    assert body["model"] == "m" and body["max_tokens"] == 8 and body["temperature"] == 0
    assert body["messages"][0]["content"][0]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def test_openai_sends_the_harness_payload_exactly(flaky):
    """The JSON the server receives, key for key, as the harness's API mode sends it:
    media interleaved at their placeholders as data URIs, max_tokens, temperature 0, the
    stop strings and the seed; the answer is cut at the first stop string here too."""
    import numpy as np
    import soundfile

    server = flaky()
    server.answer = "Ответ: B\n\nи ещё текст"
    png, video = _png(), b"\x00\x00\x00\x18ftypmp42 fake mp4 bytes"
    wav = io.BytesIO()
    soundfile.write(wav, np.zeros(1600), 16000, format="WAV", subtype="PCM_16")
    backend = OpenAIBackend("m", f"http://127.0.0.1:{server.server_port}/v1", concurrency=1)
    requests = [
        _request(prompt="Вот <image> и вопрос\n", data=png, max_new=256, rid=1),
        _request(prompt="<audio>\nЧто звучит?", data=wav.getvalue(), kind="audio", rid=2),
        _request(prompt="Видео: <video>", data=video, kind="video", stop=("END", "!")),
    ]
    try:
        assert backend.generate(requests) == ["Ответ: B", "Ответ: B", "Ответ: B\n\nи ещё текст"]
    finally:
        backend.close()

    def expected(content, max_tokens=256, stop=("\n\n",)):
        return {
            "messages": [{"role": "user", "content": content}],
            "model": "m",
            "max_tokens": max_tokens,
            "temperature": 0,
            "stop": list(stop),
            "seed": 1234,
        }

    assert server.bodies == [
        expected(
            [
                {"type": "text", "text": "Вот "},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _b64(png)}},
                {"type": "text", "text": " и вопрос\n"},
            ]
        ),
        expected(
            [
                {
                    "type": "audio_url",
                    "audio_url": {"url": "data:audio/wav;base64," + _b64(wav.getvalue())},
                },
                {"type": "text", "text": "\nЧто звучит?"},
            ],
            max_tokens=8,
        ),
        expected(
            [
                {"type": "text", "text": "Видео: "},
                {"type": "video_url", "video_url": {"url": "data:video/mp4;base64," + _b64(video)}},
            ],
            max_tokens=8,
            stop=("END", "!"),
        ),
    ]
    assert type(server.bodies[0]["temperature"]) is int


def test_openai_gives_up_with_a_clear_error(flaky):
    server = flaky(fail=100)
    backend = OpenAIBackend(
        "m", f"http://127.0.0.1:{server.server_port}/v1", max_retries=2, backoff=0.01
    )
    with pytest.raises(MeraError, match="after 3 tries .*HTTP 503"):
        backend.generate([_request()])
    backend.close()
    assert server.calls == 3


def test_openai_client_error_is_not_retried(flaky):
    server = flaky(status=404)
    backend = OpenAIBackend("x", f"http://127.0.0.1:{server.server_port}/v1", backoff=0.01)
    with pytest.raises(MeraError, match="HTTP 404 model 'x' does not exist"):
        backend.generate([_request()])
    backend.close()
    assert server.calls == 1


def test_unreachable_server_cli_prints_one_line(tmp_path, capsys):
    from mera_multi_hf.cli.main import main

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(
        [
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--model",
            "m",
            "--data",
            "sample",
            "--limit",
            "2",
            "--max-retries",
            "1",
            "--output-dir",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "unreachable" in err and f"127.0.0.1:{port}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_text_only_model_uses_causal_lm_and_drops_media(tmp_path):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mera_multi_hf.demo.builtin_models import tiny_model_path

    tok = AutoTokenizer.from_pretrained(tiny_model_path())
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    backend = HFBackend(str(tmp_path / "lm"), max_pixels=None)
    backend.load()
    assert backend.text_only and type(backend.model).__name__ == "LlamaForCausalLM"
    assert (
        backend.render(_request())
        == "<|user|>\n\nЧто на картинке? Ответь A или B.\n<|assistant|>\n"
    )
    requests = [_request(), _request(prompt="<image> Да?")]
    with pytest.warns(UserWarning, match="text-only"):
        out = backend.generate(requests)
    reference = []  # transformers' own greedy generate, one prompt at a time, cut at "\n\n"
    for request in requests:
        enc = tok(backend.render(request), return_tensors="pt")
        ids = backend.model.generate(**enc, max_new_tokens=request.max_new_tokens, do_sample=False)
        reference.append(
            tok.decode(ids[0, enc["input_ids"].shape[1] :], skip_special_tokens=True).split("\n\n")[
                0
            ]
        )
    assert out == reference and all(out)
    assert backend.info()["revision"].startswith("local-")


def test_truncated_prompts_are_counted_in_the_results_across_a_resume(short_context, tmp_path):
    short_context.max_length = 8 + 40  # every ruHHH prompt is longer than 40 tokens
    out = tmp_path / "o"
    options = dict(
        tasks="ruhhh_image",
        data="sample",
        limit=4,
        max_new_tokens=8,
        output_dir=str(out),
        no_progress=True,
        engine=short_context,
    )
    with pytest.warns(UserWarning, match="cut to fit"):
        first = run_evaluation(**options)
    again = run_evaluation(**options)  # every answer from the sample log
    assert again["counts"]["generated"] == 0
    for result in (first, again):
        assert result["run"]["truncated_prompts"] == {"ruhhh_image": 4}
    assert "cut from the left as the official harness does: ruhhh_image 4." in (
        out / "results.md"
    ).read_text(encoding="utf-8")
