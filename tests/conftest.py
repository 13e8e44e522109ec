"""Shared fixtures: every test runs offline, with its own cache folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Caches of datasets and evaluate modules stay inside this test session (read at import).
_SESSION_CACHE = tempfile.mkdtemp(prefix="mera-tests-")
os.environ.setdefault("HF_DATASETS_CACHE", os.path.join(_SESSION_CACHE, "datasets"))
os.environ.setdefault("HF_MODULES_CACHE", os.path.join(_SESSION_CACHE, "modules"))
os.environ["MERA_MULTI_CACHE"] = os.path.join(_SESSION_CACHE, "mera")  # module fixtures too

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "mera-cache"
    monkeypatch.setenv("MERA_MULTI_CACHE", str(cache))


@pytest.fixture
def raw_sample(tmp_path) -> Path:
    """A private, writable copy of the bundled raw ruHHH-Image sample."""
    from mera_multi_hf.demo.sample_data import bundled_sample

    target = tmp_path / "ruHHH-Image"
    shutil.copytree(bundled_sample(), target)
    return target


@pytest.fixture(scope="module")
def served_judge(tmp_path_factory):
    """The tiny judge (tests/tiny_judge.py) behind the package's judge server on 127.0.0.1."""
    from tiny_judge import build_tiny_judge

    from mera_multi_hf.serving import judge_server

    judge_dir = build_tiny_judge(tmp_path_factory.mktemp("tiny-judge"))
    server = judge_server.serve(str(judge_dir), "127.0.0.1", 0, device="cpu", batch_size=8)
    yield server
    server.shutdown()


@pytest.fixture(scope="session")
def bundled_run(tmp_path_factory):
    """`python -m mera_multi_hf evaluate --tasks all` on the bundled samples with the
    built-in tiny models, run once for the whole session: the first test worker to ask
    runs it, the others wait for it and read the same folder (the golden numbers, the
    ZIP's files and the results schema are checked on it; no test writes into it).
    Returns the output folder and the finished process (its stdout and stderr)."""
    import json
    import subprocess
    import sys

    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's
    out, record = root / "bundled-run", root / "bundled-run.json"
    with FileLock(str(root / "bundled-run.lock")):
        if not record.is_file():
            done = subprocess.run(
                [sys.executable, "-m", "mera_multi_hf", "evaluate", "--tasks", "all"]
                + ["--output-dir", str(out), "--no-progress", "--max-new-tokens", "4"],
                env={
                    **os.environ,
                    "MERA_MULTI_CACHE": str(root / "bundled-run-cache"),
                    "HF_HUB_OFFLINE": "1",
                    "HF_DATASETS_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1",
                },
                capture_output=True,
                text=True,
            )
            finished = {"args": done.args, "returncode": done.returncode}
            finished.update(stdout=done.stdout, stderr=done.stderr)
            record.write_text(json.dumps(finished), encoding="utf-8")
    return out, subprocess.CompletedProcess(**json.loads(record.read_text(encoding="utf-8")))
