"""Time to the first error: how long a user waits for the one-line refusal of a run
that cannot succeed (a judge that cannot be reached or refuses the key, a model server
that is down, a Hub default on a machine with no network, a typo in --data, a folder
that holds no dataset).

Each case runs as a fresh `mera-multi` process once with the code under test and once
with a baseline checkout (``--before DIR``: its package goes first on PYTHONPATH), the
two interleaved. Reported per case: seconds to exit, stderr lines, whether any sample
log was written (work done before the refusal), and the ratio before/after.

    python benchmarks/first_error.py --before /path/to/old/checkout
    python benchmarks/first_error.py             # this code only

The machine is expected to have no route to the Hub (these sandboxes have none);
HF_HUB_OFFLINE is unset for the "no network" cases and set for the "offline" ones.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class Refuse401(BaseHTTPRequestHandler):
    def _answer(self):
        body = b'{"error": "invalid api key"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def folders(root: Path) -> dict[str, Path]:
    """A folder of each kind that holds no test.json."""
    official = root / "official" / "ruHHH-Image"
    (official / "samples").mkdir(parents=True)
    (official / "raw_dataset_meta.json").write_text("{}", encoding="utf-8")
    run = root / "run"
    run.mkdir()
    (run / "results.json").write_text("{}", encoding="utf-8")
    (run / "samples_ruhhh_image_test.jsonl").write_text("", encoding="utf-8")
    space = root / "space"
    space.mkdir()
    (space / "app.py").write_text("", encoding="utf-8")
    (space / "README.md").write_text("---\nsdk: gradio\n---\n", encoding="utf-8")
    return {"official": official, "run": run, "space": space}


def cases(root: Path, url401: str, dead: str) -> dict[str, list[str]]:
    f = folders(root)
    preds = root / "preds.jsonl"
    preds.write_text('{"id": 0, "prediction": "A"}\n', encoding="utf-8")
    out = lambda name: ["--output-dir", f"out/{name}"]  # noqa: E731
    score = ["score", "--task", "ruhhh_image", "--predictions", str(preds)]
    return {
        "1 judge url unreachable": ["evaluate", "--judge-url", dead, *out("a")],
        "1 judge url answers 401": ["evaluate", "--judge-url", url401, *out("b")],
        "1 openai base-url unreachable": [
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            dead + "/v1",
            "--model",
            "m",
            "--data",
            "sample",
            *out("c"),
        ],
        "2 --model X, no --data (no network)": [
            "evaluate",
            "--model",
            "Qwen/Qwen2-VL-2B-Instruct",
            *out("d"),
        ],
        "2 score, no --data (no network)": [*score, "--out", "out/e"],
        "2 --data smaple": ["evaluate", "--data", "smaple", *out("f")],
        "2 --judge hub id (no network)": [
            "evaluate",
            "--judge",
            "MERA-evaluation/judge-x",
            *out("g"),
        ],
        "3 official MERA folder": ["evaluate", "--data", str(f["official"]), *out("h")],
        "3 run folder": [*score, "--data", str(f["run"]), "--out", "out/i"],
        "3 Space folder": ["evaluate", "--data", str(f["space"]), *out("j")],
    }


def run_case(code: Path, argv: list[str], cwd: Path) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env["PYTHONPATH"] = str(code)
    env["MERA_MULTI_CACHE"] = str(cwd / "cache")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", *argv, "--no_progress"]
        if argv[0] == "evaluate"
        else [sys.executable, "-m", "mera_multi_hf", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.perf_counter() - started
    logs = list((cwd / "out").rglob("samples*.jsonl")) if (cwd / "out").exists() else []
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return {
        "seconds": round(seconds, 1),
        "rc": proc.returncode,
        "stderr_lines": len(lines),
        "sample_log": bool(logs),
        "last": lines[-1][:160] if lines else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="baseline checkout (its package dir's parent)")
    parser.add_argument("--only", help="substring: run only the matching cases")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--side", choices=("both", "before", "after"), default="both")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse401)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url401 = f"http://127.0.0.1:{server.server_address[1]}"
    dead = f"http://127.0.0.1:{free_port()}"
    sides = [("after", REPO)] + ([("before", Path(args.before))] if args.before else [])
    sides = [s for s in sides if args.side in ("both", s[0])]
    table = {}
    with tempfile.TemporaryDirectory(prefix="first-error-") as tmp:
        for name, argv in cases(Path(tmp), url401, dead).items():
            if args.only and args.only not in name:
                continue
            for side, code in sides:
                cwd = Path(tmp) / side / name.replace(" ", "_").replace("/", "_")
                cwd.mkdir(parents=True)
                table.setdefault(name, {})[side] = run_case(code, argv, cwd)
            row = table[name]
            ratio = (
                f"  x{row['before']['seconds'] / max(row['after']['seconds'], 0.1):.1f}"
                if len(row) == 2
                else ""
            )
            print(f"{name}:{ratio}")
            for side, r in row.items():
                print(
                    f"  {side:6} {r['seconds']:6.1f} s rc={r['rc']} lines={r['stderr_lines']} "
                    f"log={'yes' if r['sample_log'] else 'no'}  {r['last']}"
                )
            sys.stdout.flush()
    server.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
