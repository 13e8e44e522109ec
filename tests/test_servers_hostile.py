"""Hostile clients against the project's two servers (the OpenAI-compatible chat server
over the tiny model and the judge's /classify server over the tiny judge), on real
sockets on 127.0.0.1: every reply is JSON (a clear 4xx/5xx or a valid 200), the server
lives on, authentication holds, and slow clients neither hold threads nor delay others.
Both run on FastAPI under uvicorn (mera_multi_hf.serving.app)."""

from __future__ import annotations

import collections
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from fastapi import Request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.generation.backends.hf import HFBackend
from mera_multi_hf.serving import judge_server as server_mod
from mera_multi_hf.serving.app import Server, json_app, read_json
from mera_multi_hf.serving.chat_server import make_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_judge import build_tiny_judge  # noqa: E402

KEY = "s3cret-key"
HOSTILE = settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_BODY_BYTES = DEFAULT_LIMITS.max_body_bytes
TALLY: collections.Counter = collections.Counter()  # (case class, outcome) -> count


def _serve(server):
    return server.start()


def _stop(server):
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module", autouse=True)
def _report_tally():
    yield
    print("\nhostile cases (class, outcome): count")
    for key, count in sorted(TALLY.items()):
        print(f"  {key}: {count}")


@pytest.fixture(scope="module")
def tiny_backend():
    backend = HFBackend(None, batch_size=1)
    backend.load()
    return backend


@pytest.fixture(scope="module")
def chat(tiny_backend):
    server = _serve(
        make_server(
            tiny_backend, port=0, model_name="tiny", read_timeout=2.0, workers=4, max_tokens_limit=4
        )
    )
    yield server
    _stop(server)


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    path = build_tiny_judge(tmp_path_factory.mktemp("tiny-judge"))
    server = server_mod.create_server(
        str(path), "127.0.0.1", 0, device="cpu", batch_size=4, read_timeout=2.0
    )
    yield _serve(server)
    _stop(server)


def _echo_server(**options) -> Server:
    """The shared layer alone: /health, and POST /x answering the keys of its JSON body."""
    app = json_app(_echo_error, "echo")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.post("/x")
    async def keys(request: Request):
        return {"keys": sorted(await read_json(request))}

    return Server(app, _echo_error, **options)


def _echo_error(status: int, message: str) -> dict:
    return {"object": "error", "message": message, "code": status}


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def _read_reply(f, method: str = "GET") -> tuple[int, dict, dict | None]:
    """One reply from a socket's file (1xx skipped): (status, headers, JSON body or None
    for HEAD). One file per socket, so that replies read back to back are not lost."""
    status = 100
    while status == 100:
        line = f.readline()
        assert line.startswith(b"HTTP/1.1 "), line
        status, headers = int(line.split()[1]), {}
        for line in iter(f.readline, b"\r\n"):
            assert line.endswith(b"\r\n"), f"closed mid-head: {line!r}"
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
    if method == "HEAD":
        return status, headers, None
    return status, headers, json.loads(f.read(int(headers["content-length"])))


def _raw(server, data: bytes, method: str = "GET") -> tuple[int, dict, dict | None]:
    """Send raw bytes on a new connection and read one reply."""
    with socket.create_connection(("127.0.0.1", server.server_port), timeout=10) as sock:
        sock.sendall(data)
        with sock.makefile("rb") as f:
            return _read_reply(f, method)


def _error_message(server, payload: dict) -> str:
    """The message of an error reply, in the server's format (OpenAI's or vLLM's)."""
    error = payload["error"] if isinstance(payload.get("error"), dict) else payload
    assert isinstance(error["message"], str) and error["message"]
    return error["message"]


def _check_reply(server, status: int, headers: dict, payload, case: str) -> None:
    assert headers.get("content-type") == "application/json"
    assert 200 <= status < 600 and status not in range(300, 400)
    if payload is not None and status >= 400:
        _error_message(server, payload)
    TALLY[(case, "200" if status < 300 else "JSON %dxx error" % (status // 100))] += 1
    assert requests.get(_url(server) + "/health", timeout=10).json() == {"status": "ok"}


# -- hostile bodies ------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
data_uris = st.sampled_from(
    [
        "data:image/png;base64,",
        "data:text/plain;base64,",
        "data:image/png,",
        "http://127.0.0.1:9/x.png",
        "data:audio/wav;base64,",
        "",
    ]
).flatmap(
    lambda head: st.sampled_from(["", "AAAA", "!!!!", "iVBORw0KGgo=", "QUJD\nREVG", "Zm9v"]).map(
        lambda tail: head + tail
    )
)
parts = st.one_of(
    json_values,
    st.fixed_dictionaries({"type": st.just("text"), "text": json_values | st.text(max_size=30)}),
    st.sampled_from(["image_url", "video_url", "audio_url"]).flatmap(
        lambda kind: st.fixed_dictionaries(
            {
                "type": st.just(kind),
                kind: json_values | data_uris | st.builds(lambda u: {"url": u}, data_uris),
            }
        )
    ),
    st.fixed_dictionaries({"type": st.just("input_audio"), "input_audio": json_values}),
    st.fixed_dictionaries({"type": st.text(max_size=12)}),
)
contents = st.text(max_size=40) | json_values | st.lists(parts, max_size=3)
messages = st.lists(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "system", "assistant"]) | json_values,
                "content": contents,
            }
        ),
    ),
    max_size=3,
)
token_counts = st.none() | st.integers(-3, 6) | st.sampled_from([0, 1.5, "8", True, 10**30, [4]])
near_valid = st.builds(
    lambda content, tokens, stop: {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": tokens,
        "stop": stop,
    },
    st.text(max_size=30) | st.lists(parts, min_size=1, max_size=2),
    st.integers(1, 4) | token_counts,
    st.none() | st.text(min_size=1, max_size=2) | json_values,
)
chat_bodies = near_valid | st.fixed_dictionaries(
    {},
    optional={
        "messages": messages | json_values,
        "max_tokens": token_counts,
        "max_completion_tokens": token_counts,
        "stop": st.none() | st.text(max_size=3) | json_values,
        "model": st.sampled_from(["tiny", "other"]) | json_values,
        "stream": st.booleans(),
        "n": st.sampled_from([1, 2, None]),
    },
)


@HOSTILE
@given(body=chat_bodies)
def test_chat_hostile_message_shapes_get_json_replies(chat, body, capfd):
    reply = requests.post(
        _url(chat) + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    if reply.status_code == 200 and body.get("stream") is True:  # server-sent chunks
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        assert reply.text.endswith("data: [DONE]\n\n")
        return
    payload = reply.json()
    if reply.status_code == 200:
        assert isinstance(payload["choices"][0]["message"]["content"], str)
    elif reply.status_code == 404:  # a well-formed request for a model not served here
        assert body.get("model") == "other" and payload["error"]["param"] == "model", payload
    else:
        assert reply.status_code == 400, payload
    _check_reply(
        chat,
        reply.status_code,
        {"content-type": reply.headers["Content-Type"]},
        payload,
        "chat: message shapes",
    )
    assert "Traceback" not in capfd.readouterr().err


def _image_part(url):
    return {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": url}]}]}


def _user(content, **extra):
    return {"messages": [{"role": "user", "content": content}], **extra}


MALFORMED = [  # (body, words the message must hold)
    ({"messages": "Привет"}, ["`messages` must be a non-empty list"]),
    ({"messages": [{"role": "user", "content": {"text": "x"}}]}, ["`content` must be a string or"]),
    (_user(["x"]), ["content[0] must be an object"]),
    (_image_part(None), ["image_url must be an object with a string `url`"]),
    (_image_part(42), ["image_url must be an object with a string `url`"]),
    (_image_part({"url": "data:text/plain;base64,QUJD"}), ["text/plain data URI where image"]),
    (_image_part({"url": "data:image/png;base64,Q!JD"}), ["invalid base64"]),
    (_image_part({"url": "https://example.org/a.png"}), ["no remote URLs"]),
    (_image_part({"url": "data:image/png;base64,QUJD"}), ["not a picture"]),
    (_user([{"type": "file", "file": {}}]), ["unsupported content part type 'file'"]),
    (_user("<image> что это?"), ["placeholder"]),
    (_user("x", max_tokens=0), ["`max_tokens` must be an integer of at least 1"]),
    (_user("x", max_tokens=-5), ["at least 1"]),
    (_user("x", max_tokens=2.5), ["at least 1"]),
    (_user("x", max_tokens="3"), ["at least 1"]),
    (_user("x", max_tokens=10**9), ["at most 4 tokens"]),
    (_user("x", max_tokens=2, max_completion_tokens=3), ["differ"]),
    (_user("x", stop=[""]), ["`stop` must be"]),
    (_user("x", stop=7), ["`stop` must be"]),
    (_user("x", model=["tiny"]), ["`model` must be a string"]),
    # strict field types (pydantic), in the server's own error shape, not FastAPI's 422
    (_user("x", temperature="hot"), ["`temperature` must be a number, not 'hot'"]),
    (_user("x", seed=1.5), ["`seed` must be an integer"]),
    (_user("x", stream="yes"), ["`stream` must be a boolean"]),
    ({"messages": [{"content": "x"}]}, ["`messages` must be a non-empty list"]),
    (_user("x\ud800"), ["lone surrogate"]),  # not valid Unicode: a 400, not a 500
]


@pytest.mark.parametrize("body, words", MALFORMED)
def test_chat_malformed_requests_say_what_is_wrong(chat, body, words):
    reply = requests.post(_url(chat) + "/v1/chat/completions", json=body, timeout=30)
    message = _error_message(chat, reply.json())
    assert reply.status_code == 400 and all(w in message for w in words), message
    _check_reply(
        chat,
        400,
        {"content-type": reply.headers["Content-Type"]},
        reply.json(),
        "chat: malformed (listed)",
    )


def test_chat_stop_cuts_the_answer_and_max_tokens_is_kept(chat):
    url = _url(chat) + "/v1/chat/completions"
    text = requests.post(url, json=_user("Привет", max_tokens=4), timeout=30).json()
    answer = text["choices"][0]["message"]["content"]
    assert answer
    for stop in (answer[0], [answer[0], "zz"]):
        cut = requests.post(url, json=_user("Привет", max_tokens=4, stop=stop), timeout=30)
        assert cut.status_code == 200 and cut.json()["choices"][0]["message"]["content"] == ""


@pytest.mark.parametrize("which", ["chat", "judge"])
@HOSTILE
@given(raw=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_hostile_body_bytes_get_json_replies(which, raw, request, capfd):
    server = request.getfixturevalue(which)
    route = "/v1/chat/completions" if which == "chat" else "/classify"
    reply = requests.post(
        _url(server) + route, data=raw, timeout=30, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code in (200, 400, 411), reply.text  # no body: 411
    _check_reply(
        server,
        reply.status_code,
        {"content-type": reply.headers["Content-Type"]},
        reply.json(),
        f"{which}: body bytes",
    )
    assert "Traceback" not in capfd.readouterr().err


header_text = st.text(
    st.characters(min_codepoint=32, max_codepoint=255, blacklist_characters="\x7f"), max_size=30
)
heads = st.fixed_dictionaries(
    {
        "method": st.sampled_from(
            ["GET", "POST", "PUT", "HEAD", "OPTIONS", "BREW", "get", "P\x00ST"]
        ),
        "path": st.sampled_from(
            ["/health", "/classify", "/v1/chat/completions", "/v1/models", "*", ""]
        )
        | st.text(max_size=20).map(lambda t: "/" + t.replace(" ", "")),
        "version": st.sampled_from(
            ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/x", "FOO", ""]
        ),
        "headers": st.lists(
            st.tuples(
                st.text("ABCXYZ-abcxyz", min_size=1, max_size=12)
                | st.sampled_from(
                    ["Content-Length", "Transfer-Encoding", "Expect", "Authorization", "Connection"]
                ),
                header_text
                | st.sampled_from(
                    ["100-continue", "chunked", "close", "-1", "1e3", "99999999999999999999"]
                ),
            ),
            max_size=5,
        ),
        "length": st.sampled_from(["exact", "missing", "garbage", "huge", "twice"]),
        "body": st.binary(max_size=200),
    }
)


def _waits_for_body(name: str, value: str) -> bool:
    """A Content-Length the server would rightly wait for (the body sent may be shorter)."""
    value = value.strip()
    return (
        name.lower() == "content-length"
        and value.isascii()
        and value.isdigit()
        and 0 < int(value) <= MAX_BODY_BYTES
    )


def _head_bytes(h: dict) -> bytes:
    line = " ".join(x for x in (h["method"], h["path"], h["version"]) if x)
    headers = [(n, v) for n, v in h["headers"] if not _waits_for_body(n, v)]
    length = {"exact": str(len(h["body"])), "garbage": "12abc", "huge": str(100 * 2**20)}.get(
        h["length"]
    )
    if length is not None:
        headers.append(("Content-Length", length))
    if h["length"] == "twice":
        headers += [("Content-Length", str(len(h["body"]))), ("Content-Length", "1")]
    text = line + "\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n"
    return text.encode("utf-8") + h["body"]


@pytest.mark.parametrize("which", ["chat", "judge"])
@HOSTILE
@given(head=heads)
def test_hostile_request_heads_get_json_replies(which, head, request, capfd):
    server = request.getfixturevalue(which)
    status, headers, payload = _raw(server, _head_bytes(head), head["method"])
    _check_reply(server, status, headers, payload, f"{which}: request heads")
    assert "Traceback" not in capfd.readouterr().err


# -- body size and JSON errors, each with its own status and message ----------------------
@pytest.fixture(scope="module")
def echo():
    server = _serve(_echo_server(read_timeout=2.0))
    yield server
    _stop(server)


BAD_BODIES = [  # (head extra, body, status, words the message must hold)
    (f"Content-Length: {100 * 2**20}\r\n", b"{", 413, ["too large", str(MAX_BODY_BYTES)]),
    ("", b"", 411, ["Content-Length"]),
    ("Content-Length: ten\r\n", b"", 400, ["invalid HTTP request", "Content-Length"]),
    ("Content-Length: 3\r\n", b"\xff\xfe{", 400, ["UTF-8"]),
    (f"Content-Length: {200_000}\r\n", b"[" * 200_000, 400, ["nested too deeply"]),
    ("Content-Length: 2\r\n", b"[]", 400, ["JSON object"]),
    ("Transfer-Encoding: chunked\r\n", b"2\r\n{}\r\n0\r\n\r\n", 411, ["chunked"]),
]


@pytest.mark.parametrize("extra, body, status, words", BAD_BODIES)
@pytest.mark.parametrize("which", ["echo", "chat", "judge"])
def test_bad_bodies_get_their_own_status_and_message(which, extra, body, status, words, request):
    server = request.getfixturevalue(which)
    route = {"echo": "/x", "chat": "/v1/chat/completions", "judge": "/classify"}[which]
    got, headers, payload = _raw(
        server, f"POST {route} HTTP/1.1\r\nHost: t\r\n{extra}\r\n".encode() + body, "POST"
    )
    message = _error_message(server, payload)
    assert all(word in message for word in words), message
    assert got == status, (got, message)
    _check_reply(server, got, headers, payload, f"{which}: bad bodies")


# -- authentication ------------------------------------------------------------------
@pytest.mark.parametrize("which", ["chat", "judge"])
def test_api_key_required_except_on_health(which, request):
    server = request.getfixturevalue(which)
    route, body = {
        "chat": (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "Привет"}], "max_tokens": 2},
        ),
        "judge": ("/classify", {"input": ["Ответ: синий."]}),
    }[which]
    url = _url(server)
    server.api_key = KEY
    try:
        for auth in (None, "Bearer wrong", f"Basic {KEY}", f"Bearer {KEY}x", KEY):
            reply = requests.post(
                url + route, json=body, timeout=30, headers={"Authorization": auth} if auth else {}
            )
            assert reply.status_code == 401, (auth, reply.text)
            _error_message(server, reply.json())
        assert requests.get(url + "/v1/models", timeout=10).status_code == 401
        assert requests.get(url + "/health", timeout=10).status_code == 200
        ok = requests.post(
            url + route, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=30
        )
        assert ok.status_code == 200, ok.text
        # a half-sent body without the key is refused at once, not buffered until the timeout
        start = time.monotonic()
        status, _, payload = _raw(
            server, f"POST {route} HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n{{".encode()
        )
        assert status == 401 and time.monotonic() - start < 1.0
    finally:
        server.api_key = None


# -- slow clients and bounds ---------------------------------------------------------------
def _half_sent(server, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
        sock.sendall(
            b'POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{"messages"'
        )
        socks.append(sock)
    return socks


def test_slow_clients_hold_no_threads_and_are_cut_after_the_read_timeout(tiny_backend):
    before = threading.active_count()
    server = _serve(make_server(tiny_backend, port=0, read_timeout=3.0, workers=4))
    body = {"messages": [{"role": "user", "content": "Привет"}], "max_tokens": 2}
    try:
        requests.post(_url(server) + "/v1/chat/completions", json=body, timeout=30)  # warm up
        start = time.monotonic()
        socks = _half_sent(server, 200)
        peak = threading.active_count()
        t0 = time.monotonic()
        reply = requests.post(_url(server) + "/v1/chat/completions", json=body, timeout=30)
        latency = time.monotonic() - t0
        assert reply.status_code == 200 and latency < 1.5, latency
        peak = max(peak, threading.active_count())
        # the loop's thread, the parse pool (4) and the model's thread: nothing per client
        assert peak <= before + 1 + 4 + 1, peak
        cut = []
        for sock in socks:
            with sock.makefile("rb") as f:
                status, _, payload = _read_reply(f)
            cut.append(time.monotonic() - start)
            assert status == 408 and "3 s" in _error_message(server, payload)
            sock.close()
        assert 2.5 < min(cut) and max(cut) < 8, (min(cut), max(cut))
    finally:
        _stop(server)
    assert threading.active_count() <= before  # the loop's thread ended, the pools joined


def test_past_limit_concurrency_a_quick_json_503():
    server = _serve(_echo_server(read_timeout=5.0, limit_concurrency=3))
    try:
        idle = [socket.create_connection(("127.0.0.1", server.server_port)) for _ in range(3)]
        time.sleep(0.3)
        start = time.monotonic()
        status, headers, payload = _raw(server, b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        assert status == 503 and "busy" in payload["message"] and time.monotonic() - start < 2
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 5
        while server.uvicorn.server_state.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _raw(server, b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")[0] == 200
    finally:
        _stop(server)


def test_keep_alive_and_pipelined_requests_on_one_connection(echo):
    body = b'{"a": 1}'
    one = b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with socket.create_connection(("127.0.0.1", echo.server_port), timeout=10) as sock:
        sock.sendall(one * 3)  # three requests in one write
        with sock.makefile("rb") as f:
            for _ in range(3):
                status, _, payload = _read_reply(f)
                assert status == 200 and payload == {"keys": ["a"]}
    assert _raw(echo, b"GET /health HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n")[0] == 200


def test_close_ends_idle_and_half_sent_connections_and_joins_the_workers():
    before = set(threading.enumerate())
    server = _serve(_echo_server(read_timeout=30.0))
    idle = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
    idle.sendall(
        b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
    )  # answered, then left open (keep-alive)
    with idle.makefile("rb") as f:
        assert _read_reply(f)[0] == 200
    half = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
    half.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 50\r\n\r\n{")
    time.sleep(0.2)
    start = time.monotonic()
    _stop(server)
    assert time.monotonic() - start < 2
    assert not [t for t in set(threading.enumerate()) - before if t.is_alive()]
    for sock in (idle, half):
        assert sock.recv(100) == b""  # closed by the server
        sock.close()


# -- per-request limits (mera_multi_hf.core.limits), checked before any work ------------------
class _Counting:
    """The judge's tokenizer, counting its calls (to prove a refusal came before them)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls = tokenizer, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.tokenizer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


@pytest.mark.parametrize(
    "body, words",
    [
        ({"input": ["Ответ: да."] * 5000}, ["5000 inputs", "max_judge_items"]),
        ({"input": ["я" * 300_000]}, ["300000 characters", "max_judge_chars"]),
        ({"input": ["a", "b" * 300_000]}, ["input 1", "max_judge_chars"]),
    ],
)
def test_judge_refuses_too_many_or_too_long_inputs_before_tokenising(judge, body, words):
    local = judge.service.judge
    counting = local.tokenizer = _Counting(local.tokenizer)
    try:
        start = time.monotonic()
        reply = requests.post(_url(judge) + "/classify", json=body, timeout=30)
        assert reply.status_code == 413 and time.monotonic() - start < 5
        message = _error_message(judge, reply.json())
        assert all(w in message for w in words), message
        assert counting.calls == 0
        assert (
            requests.post(
                _url(judge) + "/classify", json={"input": "Ответ: да."}, timeout=30
            ).status_code
            == 200
            and counting.calls > 0
        )
    finally:
        local.tokenizer = counting.tokenizer


def _png(width: int, height: int) -> str:
    import base64
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (width, height)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_chat_refuses_an_image_over_the_pixel_bound_from_its_header(tiny_backend):
    from mera_multi_hf.core.limits import Limits

    server = _serve(
        make_server(
            tiny_backend, port=0, limits=Limits(max_image_pixels=100 * 100), max_tokens_limit=2
        )
    )
    try:
        url = _url(server) + "/v1/chat/completions"
        big = requests.post(url, json=_image_part({"url": _png(101, 100)}), timeout=30)
        assert big.status_code == 413, big.text
        assert "101x100 pixels" in _error_message(server, big.json())
        small = requests.post(
            url, json={**_image_part({"url": _png(100, 100)}), "max_tokens": 2}, timeout=30
        )
        assert small.status_code == 200, small.text
    finally:
        _stop(server)


# -- vLLM's /classify shapes -------------------------------------------------------------
VLLM_REPLY_KEYS = {"id", "object", "created", "model", "data", "usage"}
VLLM_ITEM_KEYS = {"index", "label", "probs", "num_classes"}
VLLM_USAGE_KEYS = {"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details"}


def test_judge_classify_speaks_vllms_request_and_reply_shapes(judge):
    name = requests.get(_url(judge) + "/v1/models", timeout=10).json()["data"][0]["id"]
    for route in ("/classify", "/v1/classify"):
        reply = requests.post(
            _url(judge) + route,
            timeout=30,
            json={
                "model": name,
                "input": ["Ответ: синий.", "Ответ: красный."],
                "truncate_prompt_tokens": 64,
            },
        )
        assert reply.status_code == 200, reply.text
        answer = reply.json()
        assert set(answer) == VLLM_REPLY_KEYS and answer["object"] == "list"
        assert answer["id"].startswith("classify-") and isinstance(answer["created"], int)
        assert answer["model"] == name and [d["index"] for d in answer["data"]] == [0, 1]
        for item in answer["data"]:
            assert set(item) == VLLM_ITEM_KEYS and item["num_classes"] == len(item["probs"])
            assert abs(sum(item["probs"]) - 1) < 1e-5 and isinstance(item["label"], str)
        usage = answer["usage"]
        assert set(usage) == VLLM_USAGE_KEYS and usage["completion_tokens"] == 0
        assert 0 < usage["prompt_tokens"] == usage["total_tokens"] <= 2 * 64
    single = requests.post(
        _url(judge) + "/classify", json={"model": name, "input": "Ответ: да."}, timeout=30
    ).json()
    assert len(single["data"]) == 1
    missing = requests.post(
        _url(judge) + "/classify", json={"model": "other", "input": "x"}, timeout=30
    )
    assert missing.status_code == 404 and set(missing.json()) >= {
        "object",
        "message",
        "type",
        "code",
    }


def test_judge_serve_takes_its_key_from_the_environment(tmp_path):
    import os
    import re
    import subprocess

    path = build_tiny_judge(tmp_path / "judge")
    env = {**os.environ, "MERA_JUDGE_API_KEY": KEY}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "judge",
            "serve",
            "--model",
            str(path),
            "--port",
            "0",
            "--device",
            "cpu",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/classify", line)
        assert match, line
        assert KEY not in " ".join(proc.args)
        url = f"http://127.0.0.1:{match.group(1)}"
        body = {"input": "Ответ: да."}
        assert requests.post(url + "/classify", json=body, timeout=30).status_code == 401
        ok = requests.post(
            url + "/classify", json=body, timeout=30, headers={"Authorization": f"Bearer {KEY}"}
        )
        assert ok.status_code == 200 and requests.get(url + "/health", timeout=10).ok
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class _Gated:
    """The tiny backend, holding each generate until the test opens the gate."""

    def __init__(self, backend):
        self.backend, self.model_id = backend, backend.model_id
        self.gate, self.entered = threading.Event(), threading.Semaphore(0)

    def generate(self, batch):
        self.entered.release()
        self.gate.wait(30)
        return self.backend.generate(batch)


def test_generation_runs_one_at_a_time_and_the_queue_is_bounded(tiny_backend):
    gated = _Gated(tiny_backend)
    server = _serve(make_server(gated, port=0, model_name="tiny", max_queue=1))
    url, body = _url(server) + "/v1/chat/completions", _user("Привет", max_tokens=2)
    replies: list = []
    post = lambda: replies.append(requests.post(url, json=body, timeout=30))  # noqa: E731
    try:
        first = threading.Thread(target=post)
        first.start()
        assert gated.entered.acquire(timeout=10)  # generating, behind the lock
        second = threading.Thread(target=post)
        second.start()
        deadline = time.monotonic() + 10
        while server.service.queue.waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.service.queue.waiting == 1  # queued, not generating alongside
        third = requests.post(url, json=body, timeout=30)
        assert third.status_code == 503 and "max_queue 1" in _error_message(server, third.json())
        assert not gated.entered.acquire(timeout=0.2)  # still one generate at a time
        gated.gate.set()
        first.join(30)
        second.join(30)
        assert [r.status_code for r in replies] == [200, 200]
    finally:
        gated.gate.set()
        _stop(server)
