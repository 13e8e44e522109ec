"""The chat server (`mera-multi serve`) driven by the official `openai` Python client, as a
real user's code would: the models list, an image chat with its real token counts, a
streamed chat (server-sent chunks) and a wrong key."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

openai = pytest.importorskip("openai")

from mera_multi_hf.data.media_decode import Media  # noqa: E402
from mera_multi_hf.generation.backends.hf import HFBackend  # noqa: E402
from mera_multi_hf.generation.request import Request  # noqa: E402
from mera_multi_hf.serving.chat_server import make_server  # noqa: E402

KEY = "test-key-42"
QUESTION = "Что на картинке? Ответь A или B."


@pytest.fixture(scope="module")
def backend():
    backend = HFBackend(None, batch_size=1)
    backend.load()
    return backend


@pytest.fixture(scope="module")
def server(backend):
    server = make_server(backend, port=0, model_name="tiny-served", api_key=KEY).start()
    yield server
    server.shutdown()
    server.server_close()


def _client(server, key=KEY):
    return openai.OpenAI(
        base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key=key, max_retries=0, timeout=60
    )


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (40, 24), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def _messages(png: bytes):
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": uri}},
                {"type": "text", "text": "\n" + QUESTION},
            ],
        }
    ]


def test_models_lists_the_served_name(server):
    assert [m.id for m in _client(server).models.list()] == ["tiny-served"]


def test_an_image_chat_reports_its_real_token_counts(server, backend):
    png = _png()
    reply = _client(server).chat.completions.create(
        model="tiny-served", messages=_messages(png), max_tokens=4, temperature=0
    )
    answer = reply.choices[0].message.content
    assert isinstance(answer, str) and reply.choices[0].finish_reason == "stop"
    # the prompt tokens are what the processor makes of the prompt with its picture
    # (the image expands to many tokens), the completion at most the 4 asked for
    request = Request(
        task="t",
        split="",
        id=0,
        prompt="<image>\n" + QUESTION,
        media=[Media(kind="image", sha256="x", data=png)],
        max_new_tokens=4,
    )
    expected = int(backend.encode([request])["attention_mask"].sum())
    assert reply.usage.prompt_tokens == expected > len(QUESTION.split())
    assert 1 <= reply.usage.completion_tokens <= 4
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_a_streamed_chat_comes_as_chunks_the_client_reads(server):
    client, png = _client(server), _png()
    whole = client.chat.completions.create(
        model="tiny-served", messages=_messages(png), max_tokens=4
    )
    chunks = list(
        client.chat.completions.create(
            model="tiny-served",
            messages=_messages(png),
            max_tokens=4,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert all(c.object == "chat.completion.chunk" for c in chunks) and len(chunks) >= 3
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and not any(finishes[:-1])
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    # without include_usage no chunk carries one
    plain = list(
        client.chat.completions.create(
            model="tiny-served", messages=_messages(png), max_tokens=4, stream=True
        )
    )
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain) == text


def test_a_wrong_key_is_refused_as_the_client_expects(server):
    with pytest.raises(openai.AuthenticationError) as err:
        _client(server, key="wrong").models.list()
    assert err.value.status_code == 401 and "API key" in str(err.value)
    with pytest.raises(openai.AuthenticationError):
        _client(server, key="wrong").chat.completions.create(
            model="tiny-served", messages=_messages(_png()), stream=True
        )
