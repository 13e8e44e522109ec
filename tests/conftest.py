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
