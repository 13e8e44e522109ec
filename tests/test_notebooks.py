"""The notebooks run as written: every code cell, in order, in one namespace."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
# What each notebook leaves behind when it ran through (relative to its working folder).
WRITES = {"quickstart.ipynb": ["hub/ruHHH-Image/README.md", "runs/demo/results.json",
                               "runs/demo/submission.zip", "runs/scored/submission.zip"]}


def code_of(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    blocks = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        lines = [line for line in "".join(cell["source"]).splitlines()
                 if not line.lstrip().startswith(("!", "%"))]  # shell / magics: not Python
        blocks.append("\n".join(lines))
    return blocks


def test_there_are_notebooks():
    assert NOTEBOOKS and {n.name for n in NOTEBOOKS} <= set(WRITES)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for number, block in enumerate(code_of(notebook)):
        exec(compile(block, f"{notebook.name}[cell {number}]", "exec"), namespace)
    for path in WRITES[notebook.name]:
        assert (tmp_path / path).is_file(), path
