"""Hostile replies, from a real server on 127.0.0.1 that scripts its bytes by path: every
client of the project (the openai backend, the preflight's GET /models, the served
judge) ends within its deadline, in one line naming the server, whatever the reply does
(drips, cuts itself short, breaks its encoding, redirects in a loop or away, asks to
retry after 100 s, sends names that would flood or forge a line, NaN probabilities).
Each server thread's loop is bounded; the server is shut down by the fixture."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time

import pytest

from mera_multi_hf.core import http_client  # noqa: F401  (imported before a deadline is timed)
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.backends.openai import OpenAIBackend
from mera_multi_hf.generation.checks import check_server
from mera_multi_hf.generation.request import Request
from mera_multi_hf.judge.http_judge import HttpJudge

DEADLINE = 2.0  # seconds: every case must end within it (plus a margin for the slow box)
MARGIN = 2.5


def _head(status: str, headers: dict, body: bytes = b"") -> bytes:
    """A reply's head (and body); the server answers one request per connection."""
    headers = {**headers, "Connection": "close"}
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _drip(conn, data: bytes) -> None:
    """``data`` one byte a second (at most 30 s: the client leaves long before)."""
    for byte in data[:30]:
        conn.sendall(bytes([byte]))
        time.sleep(1)


def _json(payload) -> bytes:
    body = json.dumps(payload).encode()
    return _head("200 OK", {"Content-Length": len(body)}, body)


COMPLETION = {"choices": [{"message": {"content": "ok"}}]}
PLAYS = {  # a path's word -> what the server does on the connection
    "drip-body": lambda c: (
        c.sendall(_head("200 OK", {"Content-Length": 1000})),
        _drip(c, b'{"choices"' * 10),
    ),
    "drip-head": lambda c: _drip(c, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"),
    "retry-after": lambda c: c.sendall(
        _head("429 Too Many Requests", {"Retry-After": 100, "Content-Length": 0})
    ),
    "cut": lambda c: c.sendall(_head("200 OK", {"Content-Length": 500}, b'{"choices": [')),
    "chunked": lambda c: c.sendall(
        _head("200 OK", {"Transfer-Encoding": "chunked"}, b"zz\r\nnot a chunk\r\n0\r\n\r\n")
    ),
    "gzip": lambda c: c.sendall(
        _head("200 OK", {"Content-Encoding": "gzip", "Content-Length": 12}, b"not gzip at all"[:12])
    ),
    "loop": lambda c: c.sendall(_head("302 Found", {"Location": "/loop/x", "Content-Length": 0})),
    "away": lambda c: c.sendall(
        _head("307 Temporary", {"Location": "http://other.invalid/v1/x", "Content-Length": 0})
    ),
    "nan": lambda c: c.sendall(
        _head("200 OK", {"Content-Length": 43}, b'{"data": [{"index": 0, "probs": [NaN, 1]}]}')
    ),
    "negative": lambda c: c.sendall(_json({"data": [{"index": 0, "probs": [-0.5, 1.5]}]})),
    "strings": lambda c: c.sendall(_json({"data": [{"index": 0, "probs": ["0.5", "0.5"]}]})),
    "sum": lambda c: c.sendall(_json({"data": [{"index": 0, "probs": [0.9, 0.9]}]})),
    "fine-probs": lambda c: c.sendall(_json({"data": [{"index": 0, "probs": [0.25, 0.75]}]})),
    "flood": lambda c: c.sendall(_json({"data": [{"id": "m" * 10_000_000}]})),
    "forge": lambda c: c.sendall(
        _json({"data": [{"id": "x\n\x1b[2Kmera-multi: error: forged line\x1b[0m"}]})
    ),
}


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(5)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            part = self.request.recv(4096)
            if not part:
                return
            head += part
        path = head.split(b" ", 2)[1].decode()
        type(self).seen.append(path)
        play = next((p for word, p in PLAYS.items() if f"/{word}/" in path), None)
        try:
            play(self.request) if play else self.request.sendall(_json(COMPLETION))
        except OSError:  # the client left: what a deadline is for
            pass


@pytest.fixture(scope="module")
def hostile():
    _Handler.seen = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _one_line(err: pytest.ExceptionInfo, *words: str) -> str:
    message = str(err.value)
    assert "\n" not in message and "\x1b" not in message, message
    assert "127.0.0.1" in message, message  # the server is named
    for word in words:
        assert word in message, message
    return message


def _generate(url: str, retries: int = 0, key: str | None = None) -> None:
    backend = OpenAIBackend(
        "m", url, timeout=DEADLINE, max_retries=retries, backoff=0.1, concurrency=1, api_key=key
    )
    request = Request(task="t", split="test", id=3, prompt="q", media=[], max_new_tokens=4)
    try:
        backend.generate([request])
    finally:
        backend.close()


def _timed(call, *args, **kwargs):
    started = time.perf_counter()
    with pytest.raises(MeraError) as err:
        call(*args, **kwargs)
    seconds = time.perf_counter() - started
    assert seconds < DEADLINE + MARGIN, f"took {seconds:.1f} s"
    return err


@pytest.mark.parametrize("play", ["drip-body", "drip-head"])
def test_a_dripping_reply_ends_at_the_deadline_in_every_client(hostile, play):
    _one_line(_timed(_generate, f"{hostile}/{play}/v1"), "within 2 s")
    _one_line(_timed(check_server, f"{hostile}/{play}/v1", None, "m", DEADLINE), "within 2 s")
    judge = HttpJudge(f"{hostile}/{play}/classify", "m", sep="[SEP]", timeout=DEADLINE)
    _one_line(_timed(judge.probs, ["a"]), "within 2 s")


def test_retry_after_is_capped_by_the_deadline(hostile):
    """Asked to wait 100 s, with 2 s left: the last answer (HTTP 429) is the answer."""
    _one_line(_timed(_generate, f"{hostile}/retry-after/v1", retries=3), "HTTP 429")


@pytest.mark.parametrize(
    "play, words",
    [
        ("cut", "middle of its reply"),
        ("chunked", "malformed chunked body"),
        ("gzip", "does not decode"),
        ("loop", "redirects more than 5 times"),
    ],
)
def test_a_broken_transport_is_one_line_naming_the_server(hostile, play, words):
    _one_line(_timed(_generate, f"{hostile}/{play}/v1"), words)
    _one_line(_timed(check_server, f"{hostile}/{play}/v1", None, "m", DEADLINE), words)
    judge = HttpJudge(f"{hostile}/{play}/classify", "m", sep="[SEP]", timeout=DEADLINE)
    _one_line(_timed(judge.probs, ["a"]), words)


def test_a_redirect_to_another_host_is_not_followed_with_a_key(hostile):
    _one_line(_timed(_generate, f"{hostile}/away/v1", key="sk-secret-key-1"), "not followed")
    _one_line(_timed(_generate, f"{hostile}/away/v1?api_key=sk-in-the-url"), "not followed")


@pytest.mark.parametrize(
    "play, words",
    [
        ("nan", "not all finite"),
        ("negative", "not all finite"),
        ("strings", "not all numbers"),
        ("sum", "sum to 1.8"),
    ],
)
def test_a_judge_reply_that_is_not_probabilities_is_refused(hostile, play, words):
    judge = HttpJudge(f"{hostile}/{play}/classify", "m", sep="[SEP]", timeout=DEADLINE)
    _one_line(_timed(judge.probs, ["a"]), words)


def test_judge_probabilities_that_are_fine_are_taken(hostile):
    judge = HttpJudge(f"{hostile}/fine-probs/classify", "m", sep="[SEP]", timeout=DEADLINE)
    assert judge.probs(["a"]) == [[0.25, 0.75]]


def test_served_model_names_neither_flood_nor_forge_a_line(hostile):
    flood = _one_line(_timed(check_server, f"{hostile}/flood/v1", None, "m", DEADLINE))
    assert len(flood) < 1000 and "more characters" in flood
    forged = _one_line(_timed(check_server, f"{hostile}/forge/v1", None, "m", DEADLINE))
    assert "x\\n\\x1b[2K" in forged  # shown, escaped


def test_a_server_closing_at_once_is_one_line_after_the_retries():
    with socket.socket() as sock:  # a port that accepts and closes every connection
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        stop = threading.Event()

        def refuse():
            sock.settimeout(0.2)
            while not stop.is_set():  # bounded by the test's end
                try:
                    sock.accept()[0].close()
                except OSError:
                    continue

        thread = threading.Thread(target=refuse, daemon=True)
        thread.start()
        try:
            _one_line(_timed(_generate, url, retries=2), "after 3 tries")
        finally:
            stop.set()
            thread.join(2)
