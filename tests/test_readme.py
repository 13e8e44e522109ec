"""README.md and the documentation site stay true: their offline command blocks (fenced
as `bash`) run in order (the README, then the site's pages in mkdocs.yml's nav order) in
one fresh folder, the quick-start commands are the ones the project promises, and every
`mera-multi` command they name exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
QUICK_START = [
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && "
    'pip install -e ".[test]" && mera-multi evaluate',
    ". .venv/bin/activate && python -m pytest -q",
]
BUDGET_S = 240
README_LIMIT = 12 * 1024  # the landing page: everything else is on the site


def site_pages() -> list[Path]:
    """The site's pages, in the order of mkdocs.yml's nav."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def walk(entries):
        for entry in entries:
            value = entry if isinstance(entry, str) else next(iter(entry.values()))
            yield from [value] if isinstance(value, str) else walk(value)

    return [REPO / config["docs_dir"] / page for page in walk(config["nav"])]


DOCUMENTS = [REPO / "README.md", *site_pages()]


def blocks(fence: str, text: str = README) -> list[str]:
    return re.findall(rf"^```{fence}\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def all_blocks(fence: str) -> list[tuple[str, str]]:
    """(document, block) of every document, in order."""
    return [
        (path.relative_to(REPO).as_posix(), block)
        for path in DOCUMENTS
        for block in blocks(fence, path.read_text(encoding="utf-8"))
    ]


def test_readme_is_a_landing_page_with_the_quick_start_first_and_exact():
    assert len(README.encode("utf-8")) <= README_LIMIT
    first_two = blocks("(?:sh|bash)")[:2]
    assert [b.strip() for b in first_two] == QUICK_START
    assert "--backend openai --base-url" in README and "--model Qwen/" in README
    assert README.count("\n| `") == 18  # the task table: one row per task


def test_offline_blocks_use_only_the_tiny_model_and_the_sample():
    offline = all_blocks("bash")
    assert len(offline) >= 5
    for where, block in offline:
        assert "--model" not in block and "--push" not in block, where
        assert "accelerate" not in block, where


def test_offline_blocks_run(tmp_path):
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    started = time.monotonic()
    outputs = []
    for where, block in all_blocks("bash"):
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUDGET_S,
        )
        assert proc.returncode == 0, f"{where}:\n{block}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    assert time.monotonic() - started < BUDGET_S
    text = "\n".join(outputs)
    assert "ruhhh_image" in text and "MERA Multi results" in text
    run = tmp_path / "runs/tiny-random-llava"
    for name in ("results.json", "results.png", "submission.zip"):
        assert (run / name).is_file(), name
    assert (tmp_path / "hub/ruHHH-Image/README.md").is_file()
    assert "dict\n(" in text  # the stored picture is bytes; the card's cast decodes it
    assert (tmp_path / "runs/scored/results.png").is_file()
    assert (tmp_path / "spaces/judge_score/requirements.txt").is_file()
    assert (tmp_path / "runs/compare/compare.md").is_file() and "McNemar" in text
    assert (tmp_path / "runs/leaderboard/leaderboard.png").is_file()


def test_documents_name_real_commands_and_options():
    from mera_multi_hf.cli.main import build_parser

    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for command in re.findall(r"^mera-multi (\w+)", text, flags=re.MULTILINE):
            assert command in commands, f"{path.name}: {command}"
    evaluating = (REPO / "docs/evaluating.md").read_text(encoding="utf-8")
    assert "--multi_gpu --num_processes" in evaluating and "--cpu` starts ONE" in evaluating
