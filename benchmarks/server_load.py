"""Server load: normal requests while 500 slow clients hang on half-sent bodies.

For each server it times the same normal requests twice, alone (the baseline) and
while ``--slow`` clients hold connections open with a request head and a few bytes of
a body they never finish, and samples the process's thread count throughout. Servers:

* ``json``: :class:`mera_multi_hf.http_json.JsonServer` with a trivial judge-style
  handler (POST /classify answers at once);
* ``chat``: the OpenAI-compatible chat server over the built-in tiny model;
* ``stdlib``: for reference, ``http.server.ThreadingHTTPServer`` with the same trivial
  handler (a thread per connection: what the servers were built on before).

    python benchmarks/server_load.py [--slow 500] [--requests 200] [--chat-requests 40]

Goals: p95 under load <= 3x the baseline's p95, and a peak thread count that does not
grow with the slow clients (the loop's thread plus ``--workers``). Everything runs in
one process on 127.0.0.1; the slow clients are cut when the server closes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import requests  # noqa: E402

from mera_multi_hf.http_json import JsonHandler, JsonServer  # noqa: E402

TIME_LIMIT = 120.0  # seconds per measured loop, whatever --requests says


class TrivialJudge(JsonHandler):
    def do_GET(self):
        self.send_json(200, {"status": "ok"})

    def do_POST(self):
        body = self.read_json_or_reply()
        if body is not None:
            self.send_json(200, {"object": "list", "data": [{"index": 0, "label": "correct"}]})


class StdlibJudge(BaseHTTPRequestHandler):
    """The same replies on the bare stdlib handler (a thread per connection)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"object": "list", "data": [{"index": 0, "label": "correct"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StdlibServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # as JsonServer's: the burst of slow clients is accepted

    def handle_error(self, request, client_address):
        pass  # the slow clients' broken pipes at the end


class ThreadSampler:
    """The highest ``threading.active_count()`` seen while it runs (every 5 ms)."""

    def __init__(self):
        self.peak, self._stop = threading.active_count(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, threading.active_count())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def timed_requests(url: str, body: dict, n: int) -> list[float]:
    """Latencies (s) of up to n sequential POSTs on one keep-alive session."""
    latencies, deadline = [], time.monotonic() + TIME_LIMIT
    with requests.Session() as session:
        for _ in range(n):
            if time.monotonic() > deadline:
                break
            start = time.perf_counter()
            reply = session.post(url, json=body, timeout=60)
            latencies.append(time.perf_counter() - start)
            reply.raise_for_status()
    return latencies


def open_slow_clients(port: int, route: str, n: int) -> list[socket.socket]:
    """n connections that each send a request head and 5 bytes of a 1000-byte body."""
    socks, deadline = [], time.monotonic() + TIME_LIMIT
    head = f"POST {route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" \
           f"Content-Length: 1000\r\n\r\n{{\"in".encode()
    for _ in range(n):
        if time.monotonic() > deadline:
            break
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(head)
        socks.append(sock)
    return socks


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def measure(name: str, server, route: str, body: dict, n: int, slow: int) -> dict:
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}{route}"
    try:
        timed_requests(url, body, 3)  # warm up
        alone = timed_requests(url, body, n)
        threads_before = threading.active_count()
        with ThreadSampler() as sampler:
            start = time.monotonic()
            socks = open_slow_clients(server.server_port, route, slow)
            opened = time.monotonic() - start
            time.sleep(0.5)  # let a thread-per-connection server start them all
            loaded = timed_requests(url, body, n)
        for sock in socks:
            sock.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
    row = {"server": name, "requests": len(loaded), "slow_clients": len(socks),
           "open_slow_s": round(opened, 2), "threads_before": threads_before,
           "peak_threads": sampler.peak}
    for label, values in (("alone", alone), ("loaded", loaded)):
        row[f"p50_{label}_ms"] = round(1000 * percentile(values, 50), 2)
        row[f"p95_{label}_ms"] = round(1000 * percentile(values, 95), 2)
    row["p50_ratio"] = round(row["p50_loaded_ms"] / row["p50_alone_ms"], 2)
    row["p95_ratio"] = round(row["p95_loaded_ms"] / row["p95_alone_ms"], 2)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=500, help="slow clients (default 500)")
    parser.add_argument("--requests", type=int, default=200, help="normal requests, trivial servers")
    parser.add_argument("--chat-requests", type=int, default=40, help="normal requests, chat server")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--servers", default="json,chat,stdlib")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.slow + 256)), hard))
    judge_body = {"model": "judge", "input": ["Ответ: синий."]}
    rows = []
    for name in args.servers.split(","):
        if name == "json":
            server = JsonServer(("127.0.0.1", 0), TrivialJudge, read_timeout=60, workers=args.workers)
            rows.append(measure(name, server, "/classify", judge_body, args.requests, args.slow))
        elif name == "stdlib":
            server = StdlibServer(("127.0.0.1", 0), StdlibJudge)
            rows.append(measure(name, server, "/classify", judge_body, args.requests, args.slow))
        elif name == "chat":
            rows.append(_chat_row(args))
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    return 0


def _chat_row(args) -> dict:
    from mera_multi_hf.runner.backends.hf import HFBackend
    from mera_multi_hf.runner.serve import make_server

    backend = HFBackend(None)
    backend.load()
    server = make_server(backend, port=0, read_timeout=60, workers=args.workers)
    body = {"messages": [{"role": "user", "content": "Какого цвета небо?"}], "max_tokens": 4}
    return measure("chat", server, "/v1/chat/completions", body, args.chat_requests, args.slow)


if __name__ == "__main__":
    raise SystemExit(main())
