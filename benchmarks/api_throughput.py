"""The openai backend against a fake chat server with seeded 20-400 ms latencies: our
whole `mera-multi evaluate --backend openai` process, and its request phase, against an
ideal streaming client (N worker threads, stdlib HTTP, nothing but the requests), side by
side in one script, rounds interleaved. Goals at 240 requests and concurrency 8: whole
process / ideal <= 1.05, request phase / ideal <= 1.05, CPU seconds at most lm-eval's,
identical answers, and a sample log that is complete after a SIGKILL at a random moment
and a rerun.

    python benchmarks/api_throughput.py                       # 240 requests, concurrency 8
    python benchmarks/api_throughput.py --baseline /path/to/older/checkout
    python benchmarks/api_throughput.py --requests 2000 --concurrency 64

The request phase is measured by the server: from the first request received to the
last answer sent. The latency of a request depends only on its content and on how many
times that content came before in the run (seeded), so every client meets the same
latencies whatever order it sends in. The ideal client sends the very bodies our run
sent (captured by the server in a first, warm-up run). ``--baseline DIR`` also runs the
`mera-multi` of another checkout (e.g. the commit before a change). Where lm-eval is
installed, its `local-chat-completions` model (``num_concurrent`` = the concurrency)
sends the same bodies through ``generate_until`` (library start-up included, its task
loading not).

Every side runs with its bytecode compiled, as an installed package has it: our
checkouts with a private ``PYTHONPYCACHEPREFIX`` filled by an untimed first run (with
PYTHONDONTWRITEBYTECODE set, a checkout would compile each of its modules from source at
every start), the ideal client and lm-eval from the site-packages' own bytecode. CPU
seconds (user + system, the process and its children) are printed for every side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 1234
SLOT = re.compile(r"<((?:image|audio|video)(?:_\d+)?)>")


def text_key(text: str) -> str:
    """What the answer depends on: the prompt's words (placeholders and spacing aside)."""
    return hashlib.sha256("".join(SLOT.sub("", text).split()).encode()).hexdigest()


def answer_of(key: str) -> str:
    return "ABCD"[int(key[:8], 16) % 4]


class FakeChat(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM

    def log_message(self, *args):
        pass

    def do_GET(self):  # /v1/models, as the run's preflight asks every server first
        answer = json.dumps({"object": "list", "data": []}).encode()
        self.send_response(200 if self.path.rstrip("/").endswith("/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_POST(self):
        server = self.server
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        arrived = time.perf_counter()
        body = json.loads(raw)
        text = "".join(
            p.get("text", "")
            for m in body["messages"]
            if m["role"] == "user"
            for p in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])
        )
        key = text_key(text)
        with server.lock:
            server.first = min(server.first, arrived)
            nth = server.seen[key] = server.seen.get(key, -1) + 1
            if server.capture is not None:
                server.capture.append(body)
        rng = random.Random(f"{SEED}:{key}:{nth}")
        time.sleep(0.02 + 0.38 * rng.random())
        payload = json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": answer_of(key)},
                    }
                ]
            }
        ).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client was killed (the SIGKILL check)
            return
        with server.lock:
            server.last = max(server.last, time.perf_counter())
            server.count += 1


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # (not a client killed on purpose)


def start_server() -> ThreadingHTTPServer:
    server = _Server(("127.0.0.1", 0), FakeChat)
    server.daemon_threads = True
    server.lock = threading.Lock()
    reset(server)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def reset(server, capture: bool = False) -> None:
    server.first, server.last, server.count, server.seen = float("inf"), 0.0, 0, {}
    server.capture = [] if capture else None


IDEAL = r"""
import http.client, json, sys, threading
from concurrent.futures import ThreadPoolExecutor, as_completed
bodies = [line.encode() for line in open(sys.argv[1], "rb").read().decode().splitlines()]
host, port, workers = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
local = threading.local()
def post(i):
    if not hasattr(local, "conn"):
        local.conn = http.client.HTTPConnection(host, port, timeout=60)
    local.conn.request("POST", "/v1/chat/completions", body=bodies[i],
                       headers={"Content-Type": "application/json"})
    reply = json.loads(local.conn.getresponse().read())
    return i, reply["choices"][0]["message"]["content"]
with ThreadPoolExecutor(workers) as pool:
    answers = dict(f.result() for f in as_completed([pool.submit(post, i) for i in range(len(bodies))]))
json.dump([answers[i] for i in range(len(bodies))], open(sys.argv[5], "w"))
"""

LM_EVAL = r"""
import json, sys
from lm_eval.api.instance import Instance
from lm_eval.models.openai_completions import LocalChatCompletion
from lm_eval.models.api_models import JsonChatStr
bodies = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
model = LocalChatCompletion(base_url=sys.argv[2], model="m", num_concurrent=int(sys.argv[3]),
                            max_retries=3, tokenized_requests=False, max_gen_toks=256)
instances = [Instance("generate_until", {}, (JsonChatStr(json.dumps(b["messages"])),
                      {"until": b["stop"], "max_gen_toks": b["max_tokens"], "do_sample": False}), i)
             for i, b in enumerate(bodies)]
json.dump(model.generate_until(instances, disable_tqdm=True), open(sys.argv[4], "w"))
"""


def env_for(checkout: Path, bytecode: Path | None = None) -> dict:
    """The environment of one client; ``bytecode``: where a checkout's compiled modules
    are kept between its runs."""
    env = dict(
        os.environ,
        PYTHONPATH=str(checkout),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if bytecode is not None:
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def ours_command(server, raw: Path, out: Path, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mera_multi_hf",
        "evaluate",
        "--backend",
        "openai",
        "--base-url",
        f"http://127.0.0.1:{server.server_port}/v1",
        "--model",
        "m",
        "--tasks",
        "ruhhh_image",
        "--data",
        str(raw),
        "--concurrency",
        str(concurrency),
        "--output-dir",
        str(out),
        "--no-progress",
    ]


def timed(server, command: list[str], env: dict) -> tuple[float, float, float]:
    """(whole process, request phase, CPU) seconds of one client command."""
    reset(server)
    cpu = _children_cpu()
    started = time.perf_counter()
    # cwd: not this checkout, which `python -m` would put before PYTHONPATH
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed:\n{done.stderr[-3000:]}")
    return wall, server.last - server.first, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def our_answers(out: Path) -> dict[str, str]:
    """Prompt key -> answer, from a run's samples file (checked to hold every id once)."""
    records = [
        json.loads(x)
        for x in (out / "samples_ruhhh_image_test.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return {text_key(r["prompt"]): r["generation"] for r in records}


def log_keys(out: Path) -> list[tuple]:
    keys = []
    for shard in sorted((out / "logs").glob("samples-rank*.jsonl")):
        for raw in shard.read_bytes().splitlines(keepends=True):
            if raw.endswith(b"\n"):
                record = json.loads(raw)
                keys.append((record["task"], record["id"]))
    return keys


def body_answers(bodies: Path, answers: list[str]) -> dict[str, str]:
    out = {}
    for line, answer in zip(bodies.read_text(encoding="utf-8").splitlines(), answers):
        body = json.loads(line)
        text = "".join(p.get("text", "") for p in body["messages"][0]["content"])
        out[text_key(text)] = answer
    return out


def kill_and_resume(
    server, raw: Path, out: Path, concurrency: int, env: dict, within: float, expected: dict, n: int
) -> str:
    """SIGKILL our run at a random moment, rerun it; the log must hold each id once."""
    reset(server)
    process = subprocess.Popen(
        ours_command(server, raw, out, concurrency),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tempfile.gettempdir(),
    )
    started, target = time.perf_counter(), random.Random(SEED).randint(1, n - 1)
    log = out / "logs" / "samples-rank0.jsonl"  # killed once `target` answers are logged
    while (
        process.poll() is None
        and time.perf_counter() - started < 4 * within
        and (not log.exists() or log.read_bytes().count(b"\n") < target)
    ):
        time.sleep(0.005)
    delay = time.perf_counter() - started
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = len(set(log_keys(out)))
    timed(server, ours_command(server, raw, out, concurrency), env)
    keys = log_keys(out)
    complete = len(keys) == len(set(keys)) == n and our_answers(out) == expected
    return (
        f"killed after {delay:.1f} s with {before} of {n} answers logged; after the rerun "
        f"({server.count} requests sent) the log holds {len(set(keys))} answers, "
        f"{len(keys) - len(set(keys))} twice; complete and identical: {complete}"
    )


def ratio_line(name: str, values: list[float], base: list[float]) -> str:
    ratios = [a / b for a, b in zip(values, base)]
    return (
        f"{name}: median {statistics.median(values):.2f} s, / ideal {statistics.median(ratios):.2f}x"
        f"  (rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
    )


def cpu_line(name: str, cpus: dict, against: str) -> str:
    """``name``'s CPU seconds against another side's, round by round."""
    ratios = [a / b for a, b in zip(cpus[name], cpus[against])]
    return (
        f"{name} CPU: median {statistics.median(cpus[name]):.2f} s, / {against} "
        f"{statistics.median(ratios):.2f}x  (rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=240)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="another checkout of this project to run as well")
    parser.add_argument("--no-lm-eval", action="store_true", help="skip lm-eval even if installed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from runner_overhead import make_raw

    work = Path(tempfile.mkdtemp(prefix="mera-api-"))
    try:
        return run(args, work, make_raw)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path, make_raw) -> int:
    os.environ["MERA_MULTI_CACHE"] = str(work / "cache")
    raw = make_raw(work / "raw", args.requests)
    server = start_server()
    env = env_for(ROOT, work / "bytecode-ours")
    # warm-up: the raw folder's one-time export, our bytecode, the ideal client's bodies
    reset(server, capture=True)
    subprocess.run(
        ours_command(server, raw, work / "warm", args.concurrency),
        env=env,
        check=True,
        capture_output=True,
        cwd=work,
    )
    bodies = work / "bodies.jsonl"
    bodies.write_text(
        "".join(json.dumps(b, ensure_ascii=False) + "\n" for b in server.capture), encoding="utf-8"
    )
    expected = our_answers(work / "warm")
    assert len(server.capture) == args.requests, "the warm-up did not send every request"
    clients = {"ideal": None, "ours": ROOT}
    envs = {"ideal": env_for(ROOT), "ours": env}
    if args.baseline:
        clients["baseline"] = Path(args.baseline).resolve()
        envs["baseline"] = env_for(clients["baseline"], work / "bytecode-baseline")
        subprocess.run(  # untimed: compiles the baseline's bytecode
            ours_command(server, raw, work / "warm-baseline", args.concurrency),
            env=envs["baseline"],
            check=True,
            capture_output=True,
            cwd=work,
        )
    lm_eval = (
        not args.no_lm_eval
        and subprocess.run([sys.executable, "-c", "import lm_eval"], capture_output=True).returncode
        == 0
    )
    if lm_eval:
        clients["lm-eval"], envs["lm-eval"] = None, env_for(ROOT)
    times = {name: [] for name in clients}
    phases = {name: [] for name in clients}
    cpus = {name: [] for name in clients}
    same = {name: True for name in clients}
    for k in range(args.rounds):
        for name, checkout in clients.items():
            answers_file = work / f"answers-{name}.json"
            if name == "ideal":
                command = [
                    sys.executable,
                    "-c",
                    IDEAL,
                    str(bodies),
                    "127.0.0.1",
                    str(server.server_port),
                    str(args.concurrency),
                    str(answers_file),
                ]
            elif name == "lm-eval":
                command = [
                    sys.executable,
                    "-c",
                    LM_EVAL,
                    str(bodies),
                    f"http://127.0.0.1:{server.server_port}/v1/chat/completions",
                    str(args.concurrency),
                    str(answers_file),
                ]
            else:
                out = work / f"out-{name}-{k}"
                command = ours_command(server, raw, out, args.concurrency)
            wall, phase, cpu = timed(server, command, envs[name])
            times[name].append(wall)
            phases[name].append(phase)
            cpus[name].append(cpu)
            got = (
                our_answers(out)
                if checkout
                else body_answers(bodies, json.loads(answers_file.read_text()))
            )
            same[name] &= got == expected
            print(
                f"round {k}: {name}: {wall:.2f} s (request phase {phase:.2f} s, CPU "
                f"{cpu:.2f} s, load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    print(
        f"\n{args.requests} requests, concurrency {args.concurrency}, latencies 20-400 ms "
        f"(seeded), {args.rounds} rounds interleaved"
    )
    for name in clients:
        if name != "ideal":
            print(ratio_line(f"{name} whole process", times[name], times["ideal"]))
            print(ratio_line(f"{name} request phase", phases[name], phases["ideal"]))
    print(
        f"ideal client: whole process {statistics.median(times['ideal']):.2f} s, request "
        f"phase {statistics.median(phases['ideal']):.2f} s"
    )
    print(
        "CPU seconds per process (median; the whole-process ratios grow with the machine's "
        "load, CPU time less so): "
        + ", ".join(f"{n} {statistics.median(c):.2f}" for n, c in cpus.items())
    )
    for name in clients:
        if name != "ideal":
            print(cpu_line(name, cpus, "lm-eval" if lm_eval and name != "lm-eval" else "ideal"))
    print("identical answers: " + ", ".join(f"{n} {same[n]}" for n in clients))
    print(
        kill_and_resume(
            server,
            raw,
            work / "killed",
            args.concurrency,
            env,
            statistics.median(times["ours"]),
            expected,
            args.requests,
        )
    )
    server.shutdown()
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
