"""The notebooks run as a Colab user runs them: every cell top to bottom in a real Jupyter
kernel (nbclient), offline, in a fresh folder; only the cells tagged `install` are skipped
(the package is installed here already). Each notebook's outputs are checked."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# What each notebook leaves behind when it ran through (relative to its working folder).
WRITES = {
    "quickstart.ipynb": [
        "runs/demo/results.json",
        "runs/demo/results.md",
        "runs/demo/results.png",
        "runs/demo/submission.zip",
        "runs/scored/submission.zip",
    ],
    "metrics.ipynb": [
        "spaces/exact_match/exact_match.py",
        "spaces/judge_score/requirements.txt",
        "metric_scores.json",
    ],
    "build_dataset.ipynb": ["raw/ruHHH-Image/test.json", "hub/ruHHH-Image/README.md"],
    "judge.ipynb": ["agreement.json", "trained-judge/config.json"],
}


def _outputs_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.extend(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


def test_every_notebook_is_checked():
    assert {n.name for n in NOTEBOOKS} == set(WRITES)


def test_install_cells_use_what_is_published():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        installs = [c for c in nb.cells if "install" in c.metadata.get("tags", [])]
        assert len(installs) == 1 and nb.cells.index(installs[0]) <= 1, path.name
        source = installs[0].source
        # one variable, SOURCE (the README explains it): a built wheel's path by default,
        # never a placeholder address nor a checkout
        assert re.search(r'^SOURCE = "mera_multi_hf-[\d.]+-py3-none-any\.whl"$', source, re.M)
        assert '!pip install -q "{SOURCE}"' in source, path.name
        assert not re.search(r"<org>|YOUR-|github\.com|git clone", source), path.name
        assert "pip install -q mera-multi-hf\n" not in source + "\n"  # no such PyPI name


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)  # the publishing cell must not publish
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        skip_cells_with_tag="install",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute(env=dict(os.environ))
    for path in WRITES[notebook.name]:
        assert (tmp_path / path).is_file(), path
    text = _outputs_text(nb)
    assert "Traceback" not in text and "Error" not in text.replace("MeraError", ""), text[-2000:]
    assert "TqdmWarning" not in text and "IProgress" not in text  # plain bars, said nothing
    # no stray values (a cell ending in write_text's 150 or a process's -15): only prints
    # and displays
    stray = [
        out["data"].get("text/plain")
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "execute_result"
    ]
    assert not stray, stray
    check = CHECKS.get(notebook.name)
    if check:
        check(tmp_path, nb, text)


def _quickstart(tmp: Path, nb, text: str) -> None:
    doc = json.loads((tmp / "runs/demo/results.json").read_text(encoding="utf-8"))
    assert "results.png" in doc["run"]["files"]
    kinds = {k for c in nb.cells for o in c.get("outputs", []) for k in o.get("data", {})}
    assert "image/png" in kinds  # the example's picture and the chart are shown
    assert "<image>" in text or "image" in text
    evaluated = next(c for c in nb.cells if "run_evaluation(" in c.source)
    printed = "".join(o.get("text", "") for o in evaluated.outputs)
    # the evaluate cell prints the table `mera-multi evaluate` prints
    assert re.search(r"^task +split +n +metric +score +human$", printed, re.M), printed
    assert re.search(r"^ruhhh_image +test +\d+ +Group exact match +0\.\d{4}", printed, re.M)


def _metrics(tmp: Path, nb, text: str) -> None:
    scores = json.loads((tmp / "metric_scores.json").read_text(encoding="utf-8"))
    assert scores["package"] == scores["space"]
    assert 0 < scores["package"]["group_exact_match"] < scores["package"]["exact_match"] < 1


def _build(tmp: Path, nb, text: str) -> None:
    assert list((tmp / "hub/ruHHH-Image/data").glob("*.parquet"))
    assert "no HF_TOKEN" in text and "published" not in text


def _judge(tmp: Path, nb, text: str) -> None:
    report = json.loads((tmp / "agreement.json").read_text(encoding="utf-8"))
    assert report and "judge_score" in text
    assert (tmp / "trained-judge").joinpath("model.safetensors").is_file()


CHECKS = {
    "quickstart.ipynb": _quickstart,
    "metrics.ipynb": _metrics,
    "build_dataset.ipynb": _build,
    "judge.ipynb": _judge,
}
