"""Every journey from a built wheel, without the checkout: the wheel is built offline,
installed with --no-deps into a fresh venv that sees this environment's packages (but not
the checkout's editable install), and the README's journeys run from there, offline, in a
temporary folder: the demo, `build`, `score`, `mera-multi serve` with `evaluate --backend
openai`, and the judge (`mera-multi models --path judge`, `judge serve`, `score
--judge-url`)."""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A venv holding only the wheel; this environment's packages seen through a .pth."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "-q",
            "-w",
            str(root / "dist"),
            str(REPO),
        ],
        check=True,
    )
    (wheel,) = (root / "dist").glob("mera_multi_hf-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    )
    # A .pth line only appends a folder to sys.path: the .pth files inside it (the
    # checkout's editable finder among them) are not run, so the checkout stays unseen.
    ours = {sysconfig.get_path("purelib"), *site.getsitepackages()}
    Path(purelib.stdout.strip(), "test-env.pth").write_text(
        "\n".join(sorted(p for p in ours if os.path.isdir(p))) + "\n", encoding="utf-8"
    )
    return root / "venv"


@pytest.fixture(scope="module")
def env(venv, tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("home")
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return dict(
        out,
        PATH=f"{venv / 'bin'}{os.pathsep}{out.get('PATH', '')}",
        HOME=str(home),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("journeys")


def _run(env, work, *args, ok=True) -> str:
    proc = subprocess.run(
        ["mera-multi", *args], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert (proc.returncode == 0) == ok, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


class _Served:
    """A command-line server started in the background; its banner names its URL."""

    def __init__(self, env, work, *args):
        self.proc = subprocess.Popen(
            ["mera-multi", *args, "--port", "0"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert match, line
        self.url = match.group(0)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def test_the_installed_package_is_the_wheel(venv, env, work):
    proc = subprocess.run(
        ["python", "-c", "import mera_multi_hf; print(mera_multi_hf.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    location = Path(proc.stdout.strip()).resolve()
    assert location.is_relative_to(venv.resolve()), location
    assert not location.is_relative_to(REPO) and "/work/main" not in str(location)


@pytest.fixture(scope="module")
def demo(env, work) -> tuple[str, Path]:
    """The quick start's demo, run once: (what it printed, its run folder)."""
    return _run(env, work, "evaluate", "--no-progress"), work / "runs" / "tiny-random-llava"


def test_demo_build_and_score(env, work, demo):
    table, run = demo
    assert "ruhhh_image" in table
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert doc["tasks"]["ruhhh_image"]["n_examples"] == 26 and (run / "results.html").is_file()
    _run(env, work, "build", "ruhhh_image", "--raw", "sample", "--out", "hub/ruHHH-Image")
    assert list((work / "hub" / "ruHHH-Image" / "data").glob("*.parquet"))
    _run(
        env,
        work,
        "score",
        "--task",
        "ruhhh_image",
        "--data",
        "sample",
        "--predictions",
        str(run / "samples_ruhhh_image_test.jsonl"),
        "--out",
        "runs/scored",
    )
    scored = json.loads((work / "runs" / "scored" / "results.json").read_text(encoding="utf-8"))
    assert scored["tasks"]["ruhhh_image"]["metrics"] == doc["tasks"]["ruhhh_image"]["metrics"]
    with zipfile.ZipFile(work / "runs" / "scored" / "submission.zip") as z:
        assert "ruHHH_Image.json" in z.namelist()


def test_a_served_model_through_the_openai_backend(env, work, demo):
    server = _Served(env, work, "serve", "--served-model-name", "tiny")
    try:
        _run(
            env,
            work,
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            server.url + "/v1",
            "--model",
            "tiny",
            "--data",
            "sample",
            "--limit",
            "6",
            "--output-dir",
            "runs/served",
            "--no-progress",
        )
    finally:
        server.close()
    served = _generations(work / "runs" / "served")
    local = _generations(demo[1])
    assert len(served) == 6 and all(local[i] == g for i, g in served.items())  # the same model


def _generations(run: Path) -> dict:
    lines = (run / "samples_ruhhh_image_test.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r["generation"] for r in map(json.loads, lines)}


def test_the_judge_journey_with_the_built_in_tiny_judge(env, work, demo):
    judge = _run(env, work, "models", "--path", "judge").strip()
    assert (Path(judge) / "config.json").is_file()
    server = _Served(env, work, "judge", "serve", "--model", judge, "--device", "cpu")
    try:
        _run(
            env,
            work,
            "score",
            "--task",
            "ruhhh_image",
            "--data",
            "sample",
            "--predictions",
            str(demo[1] / "samples_ruhhh_image_test.jsonl"),
            "--out",
            "runs/judged",
            "--judge-url",
            server.url + "/classify",
        )
    finally:
        server.close()
    doc = json.loads((work / "runs" / "judged" / "results.json").read_text(encoding="utf-8"))
    judged = doc["tasks"]["ruhhh_image"]["judge"]
    assert judged and all(0.0 <= v <= 1.0 for v in judged.values()), judged
