"""The committed metric folders are real Spaces: in a fresh virtual environment with only
`evaluate` and each folder's requirements.txt (no mera_multi_hf, no system site-packages),
`evaluate.load(<folder>)` from another directory computes what the package computes;
`evaluate.load("mera_multi/judge_score")`, the promised name, works offline from a folder
holding `mera-multi metrics export --out mera_multi`; and each folder's `app.py` builds its
Gradio interface (the `gradio` of the cards' `sdk_version`, which a Space installs itself,
is in the environment too) and answers through it.

The environment is built beforehand by `python tests/space_venv.py` (`.ci/run` does it
as an install step: pip from the machine's configured index) and kept in the temporary
folder, keyed by the requirements; without it these tests are skipped, since a test never
downloads. The first build takes about a minute on an idle machine, three on a busy one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mera_multi_hf import load_metric
from mera_multi_hf.spaces.export import export_metrics
from mera_multi_hf.spaces.loading import METRICS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import space_venv  # noqa: E402
from test_metrics_export import CASES, JUDGE_CASE  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RUN = r"""
import json, sys
import evaluate
job = json.load(sys.stdin)
try:
    import mera_multi_hf
    visible = True
except ImportError:
    visible = False
out = {"visible": visible, "results": []}
for name, kwargs in job["cases"]:
    out["results"].append(evaluate.load(job["root"] + name).compute(**kwargs))
judge = evaluate.load(job["root"] + "judge_score")
out["judge"] = judge.compute(judge_url=job["judge_url"], **job["judge_case"])
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def space_python() -> str:
    """The Python of a plain venv holding evaluate and the four folders' requirements,
    made beforehand by `python tests/space_venv.py` (.ci/run does): a test never
    downloads."""
    python = space_venv.ready_python()
    if python is None:
        pytest.skip(
            f"no Space venv at {space_venv.venv_root()}: make it first with "
            "`python tests/space_venv.py` (it installs evaluate, gradio and the "
            "folders' requirements from the package index)"
        )
    return python


def _run(python: str, root: str, cwd: Path, url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(cwd / "modules"), HF_HOME=str(cwd / "hf-home")
    )
    job = {"root": root, "cases": CASES, "judge_url": url, "judge_case": JUDGE_CASE}
    proc = subprocess.run(
        [python, "-c", RUN],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _expected(url: str) -> tuple[list[dict], dict]:
    judge = load_metric("judge_score").compute(judge_url=url, **JUDGE_CASE)
    return [load_metric(name).compute(**kwargs) for name, kwargs in CASES], judge


def test_committed_folders_load_in_a_clean_venv_from_another_directory(
    space_python, served_judge, tmp_path
):
    url = served_judge.url + "/classify"
    out = _run(space_python, str(REPO / "metrics") + "/", tmp_path, url)
    assert out["visible"] is False
    results, judge = _expected(url)
    assert out["results"] == results and out["judge"] == judge
    assert results[0] == {"exact_match": 0.5} and 0 <= judge["judge_score"] <= 1


def test_promised_hub_names_load_offline_from_an_export(space_python, served_judge, tmp_path):
    """`evaluate.load("mera_multi/<metric>")` reads ./mera_multi/<metric>/ when it exists,
    before asking the Hub: an export into a folder named mera_multi serves the names."""
    export_metrics(tmp_path / "mera_multi", namespace="mera_multi")
    url = served_judge.url + "/classify"
    out = _run(space_python, "mera_multi/", tmp_path, url)
    results, judge = _expected(url)
    assert out["results"] == results and out["judge"] == judge


APP = r"""
import json, runpy, sys
import gradio as gr
import pandas as pd
out = {}
for folder in sys.argv[1:]:
    ns = runpy.run_path(folder + "/app.py")  # not __main__: builds, does not launch
    assert isinstance(ns["demo"], gr.Blocks), type(ns["demo"])
    out[folder.rsplit("/", 1)[-1]] = ns["columns"]
    if folder.endswith("/exact_match"):
        table = pd.DataFrame({"predictions": ["a", "B"], "references": ["A", "B"]})
        out["computed"] = ns["compute"](table, json.dumps({"mode": "strict"}))
    if folder.endswith("/group_exact_match"):
        table = pd.DataFrame({"predictions": ["A", "B", "a"], "references": ["A", "B", "B"],
                              "group_ids": ["1", "1", "2"]})
        out["grouped"] = ns["compute"](table)
print(json.dumps(out))
"""


def test_space_apps_build_their_interface(space_python, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        HF_HUB_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        HF_HOME=str(tmp_path / "hf-home"),
    )
    folders = [str(REPO / "metrics" / name) for name in METRICS]
    proc = subprocess.run(
        [space_python, "-c", APP, *folders],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["exact_match"] == ["predictions", "references"]
    assert out["group_exact_match"] == ["predictions", "references", "group_ids"]
    assert out["judge_score"] == ["predictions", "references", "prompts"]
    assert out["computed"] == {"exact_match": 0.5}
    assert out["grouped"] == {"group_exact_match": 0.5, "exact_match": 2 / 3}


TASKS = r"""
import json, sys
import evaluate
folder = sys.argv[1]
out = {}
for how, load, compute in [
    ("config_name", ("commonvideoqa",), {}),
    ("load task=", (), {"task": "commonvideoqa"}),
]:
    em = evaluate.load(folder, *load, **compute)
    out[how] = em.compute(predictions=["a", "B"], references=["A", "B"])
em = evaluate.load(folder)
out["plain"] = em.compute(predictions=["a", "B"], references=["A", "B"])
out["compute task="] = em.compute(predictions=["a", "B"], references=["A", "B"], task="commonvideoqa")
try:
    evaluate.load(folder, "commonvideo")
except ValueError as err:
    out["unknown"] = str(err)
print(json.dumps(out))
"""


def test_a_task_key_takes_the_tasks_mode_in_a_plain_venv(space_python, tmp_path):
    """Without the package: the folder's own task table makes CommonVideoQA's EM strict,
    named as evaluate's config_name, as task= to load or task= to compute."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    proc = subprocess.run(
        [space_python, "-c", TASKS, str(REPO / "metrics" / "exact_match")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("plain") == {"exact_match": 1.0}
    assert out.pop("unknown").startswith("unknown task 'commonvideo' (did you mean commonvideoqa?)")
    assert out == dict.fromkeys(
        ["config_name", "load task=", "compute task="], {"exact_match": 0.5}
    )
