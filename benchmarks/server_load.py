"""Server load, old against new: normal requests while 500 slow clients hang on half-sent
bodies, for the stdlib servers of commit 9aed840 (``http_json.JsonServer``) and for the
FastAPI/uvicorn servers of this checkout, side by side in one run.

The old package is extracted from git (``git archive 9aed840``) into a temporary folder;
each server runs in its own process (its PYTHONPATH picks the old or the new package),
so its threads and memory are its own. Servers: ``judge`` (the /classify server over
the tiny judge) and ``chat`` (the OpenAI-compatible server over the built-in tiny model).
Old and new alternate, ``--rounds`` times, since the machine may be shared.

For each run: the same normal requests timed alone, then while ``--slow`` clients each
hold a connection with a request head and 5 bytes of a 1000-byte body; the server
process's thread count and RSS are sampled from /proc throughout; at the end it counts
the slow clients still connected (held, not dropped). Each server gets
``--torch-threads`` intra-op threads (default 1): with more, on a busy machine, the
times measure how torch's spinning OpenMP threads share the cores, not the server.

    python benchmarks/server_load.py [--slow 500] [--requests 100] [--chat-requests 30] [--rounds 2] [--torch-threads 1]

Goals: new p95 under load <= 1.2x old p95 under load, and as many slow clients held.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
OLD_COMMIT = "9aed840"
START = {  # code run in the server's process: prints its port, serves until killed
    # the judge server: mera_multi_hf.serving.judge_server now, judge_model/server.py at 9aed840
    "judge": "import sys, importlib, importlib.util as u; from mera_multi_hf.core.paths import load_module_from_file as L; "
    "m = importlib.import_module('mera_multi_hf.serving.judge_server') "
    "if u.find_spec('mera_multi_hf.serving.judge_server') else "
    "L(sys.argv[1] + '/judge_model/server.py', 'judge_server'); "
    "s = m.create_server(sys.argv[2], '127.0.0.1', 0, device='cpu', read_timeout=60); "
    "print(s.server_address[1], flush=True); m.run_foreground(s)",
    "chat": "import sys; from mera_multi_hf.generation.backends.hf import HFBackend; "
    "from mera_multi_hf.serving.chat_server import make_server; b = HFBackend(None); b.load(); "
    "s = make_server(b, port=0, read_timeout=60, workers=8); "
    "print(s.server_address[1], flush=True); s.serve_until_interrupted('')",
}
ROUTES = {
    "judge": ("/classify", {"input": ["Ответ: синий."]}),
    "chat": (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "Какого цвета небо?"}], "max_tokens": 4},
    ),
}


class ProcSampler:
    """The peak thread count and RSS of a process, read from /proc every 10 ms."""

    def __init__(self, pid: int):
        self.pid, self.threads, self.rss_mib = pid, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        fields = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines()
            if ":" in line
        )
        self.threads = max(self.threads, int(fields["Threads"]))
        self.rss_mib = max(self.rss_mib, int(fields["VmRSS"].split()[0]) / 1024)

    def _run(self):
        while not self._stop.wait(0.01):
            self.sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def timed_requests(url: str, body: dict, n: int) -> list[float]:
    """Latencies (s) of n sequential POSTs on one keep-alive session."""
    latencies = []
    with requests.Session() as session:
        for _ in range(n):
            start = time.perf_counter()
            reply = session.post(url, json=body, timeout=60)
            latencies.append(time.perf_counter() - start)
            reply.raise_for_status()
    return latencies


def open_slow_clients(port: int, route: str, n: int) -> list[socket.socket]:
    head = (
        f"POST {route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f'Content-Length: 1000\r\n\r\n{{"in'
    ).encode()
    socks = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(head)
        socks.append(sock)
    return socks


def still_held(socks: list[socket.socket]) -> int:
    """Slow clients whose connection the server has neither closed nor answered."""
    held = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            sock.recv(1)  # b"": closed; bytes: answered
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    return held


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def start_server(
    kind: str, tree: Path, judge_dir: Path, threads: int
) -> tuple[subprocess.Popen, int]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": str(threads),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", START[kind], str(tree), str(judge_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    return proc, int(proc.stdout.readline())


def measure(kind: str, version: str, tree: Path, judge_dir: Path, args) -> dict:
    proc, port = start_server(kind, tree, judge_dir, args.torch_threads)
    route, body = ROUTES[kind]
    url = f"http://127.0.0.1:{port}{route}"
    n = args.requests if kind == "judge" else args.chat_requests
    try:
        timed_requests(url, body, 3)  # warm up
        alone = timed_requests(url, body, n)
        with ProcSampler(proc.pid) as sampler:
            socks = open_slow_clients(port, route, args.slow)
            time.sleep(0.5)
            loaded = timed_requests(url, body, n)
            held = still_held(socks)
        for sock in socks:
            sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ms = lambda values, q: round(1000 * percentile(values, q), 2)  # noqa: E731
    return {
        "server": kind,
        "version": version,
        "requests": n,
        "slow_clients": args.slow,
        "held": held,
        "p50_alone_ms": ms(alone, 50),
        "p95_alone_ms": ms(alone, 95),
        "p50_loaded_ms": ms(loaded, 50),
        "p95_loaded_ms": ms(loaded, 95),
        "peak_threads": sampler.threads,
        "peak_rss_mib": round(sampler.rss_mib, 1),
    }


def old_tree(folder: Path) -> Path:
    """The package and judge_model/ of commit 9aed840, extracted from git."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", OLD_COMMIT, "mera_multi_hf", "judge_model"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def summary(rows: list[dict]) -> list[dict]:
    """Per server: the median over rounds of new/old p95 (loaded) and held clients."""
    out = []
    for kind in dict.fromkeys(r["server"] for r in rows):
        by = {
            v: [r for r in rows if r["server"] == kind and r["version"] == v]
            for v in ("old", "new")
        }
        p95 = {v: statistics.median(r["p95_loaded_ms"] for r in by[v]) for v in by}
        out.append(
            {
                "server": kind,
                "p95_loaded_new_over_old": round(p95["new"] / p95["old"], 2),
                "held_old": min(r["held"] for r in by["old"]),
                "held_new": min(r["held"] for r in by["new"]),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=500, help="slow clients (default 500)")
    parser.add_argument("--requests", type=int, default=100, help="normal requests, judge")
    parser.add_argument("--chat-requests", type=int, default=30, help="normal requests, chat")
    parser.add_argument("--rounds", type=int, default=2, help="old/new alternations")
    parser.add_argument("--servers", default="judge,chat")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS of each server (default 1: on a shared machine "
        "torch's spinning intra-op threads, not the server, set the times)",
    )
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.slow + 256)), hard))
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_judge import build_tiny_judge

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": old_tree(Path(tmp)), "new": ROOT}
        judge_dir = build_tiny_judge(Path(tmp) / "tiny-judge")
        for kind in args.servers.split(","):
            for _ in range(args.rounds):
                for version in ("old", "new"):
                    rows.append(measure(kind, version, trees[version], judge_dir, args))
                    print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    for row in summary(rows):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
