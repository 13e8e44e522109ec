"""The shape the code keeps: the package is its stage folders, each imports only the ones
below it (import-linter's contracts in pyproject.toml; `.ci/run` runs them too), and no
library function is longer than a screen."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"

STAGES = [
    "core",
    "tasks",
    "judge",
    "scoring",
    "data",
    "generation",
    "reporting",
    "serving",
    "spaces",
    "demo",
    "pipeline",
    "cli",
]  # bottom up, as pyproject's layers contract


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "mera_multi_hf"


def _library_files():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "_bundled" not in p.parts]


def test_the_root_holds_only_the_public_api_and_the_stage_folders():
    root = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    assert root == {"__init__.py", "__main__.py", "_version.py", *STAGES}, root


def test_every_stage_folder_says_what_it_owns_and_may_import():
    import importlib

    for stage in STAGES:
        doc = importlib.import_module(f"mera_multi_hf.{stage}").__doc__ or ""
        assert doc.startswith(f"{stage}: ") and "\nMay import: " in doc, stage


def test_the_layers_contract_lists_the_stages_in_order():
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}
    assert contracts["stages"]["layers"] == STAGES[::-1]


def test_the_import_contracts_hold():
    """import-linter over the package (pyproject's contracts): no import runs back down
    the stage order, and no circle between the modules of any folder."""
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run(
        [lint, "--no-cache", "--no-logo"], cwd=PACKAGE.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_no_library_function_is_longer_than_a_screen():
    long = []
    for path in _library_files():
        if "sample_data" in path.parts:  # generated-data helpers: tables of sample content
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long.append(f"{_module_name(path)}.{node.name}: {length} lines")
    assert not long, long


def test_no_library_file_is_over_500_lines():
    """Outside the sample tables (sample_data/), a module that grows past 500 lines is doing
    more than one job: split it."""
    long = [
        f"{_module_name(p)}: {n} lines"
        for p in _library_files()
        if "sample_data" not in p.parts
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    ]
    assert not long, long
