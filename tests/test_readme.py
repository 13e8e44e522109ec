"""README.md stays true: its offline command blocks (fenced as `bash`) run in order in a
fresh folder, and the quick-start commands are the ones the project promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
QUICK_START = [
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && "
    'pip install -e ".[test]" && mera-multi evaluate',
    ". .venv/bin/activate && python -m pytest -q",
]
BUDGET_S = 240


def blocks(fence: str) -> list[str]:
    return re.findall(rf"^```{fence}\n(.*?)^```$", README, flags=re.DOTALL | re.MULTILINE)


def test_quick_start_comes_first_and_exact():
    first_two = blocks("(?:sh|bash)")[:2]
    assert [b.strip() for b in first_two] == QUICK_START


def test_offline_blocks_use_only_the_tiny_model_and_the_sample():
    offline = blocks("bash")
    assert len(offline) >= 3
    for block in offline:
        assert "--model" not in block and "--push" not in block and "accelerate" not in block


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
    for block in blocks("bash"):
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUDGET_S,
        )
        assert proc.returncode == 0, f"{block}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    assert time.monotonic() - started < BUDGET_S
    text = "\n".join(outputs)
    assert "ruhhh_image" in text and "MERA Multi results" in text
    run = tmp_path / "runs/tiny-random-llava"
    for name in ("results.json", "results.png", "submission.zip"):
        assert (run / name).is_file(), name
    assert (tmp_path / "hub/ruHHH-Image/README.md").is_file()
    assert (tmp_path / "runs/scored/results.png").is_file()
    assert (tmp_path / "spaces/judge_score/requirements.txt").is_file()
    assert (tmp_path / "runs/compare/compare.md").is_file() and "McNemar" in text
    assert (tmp_path / "runs/leaderboard/leaderboard.png").is_file()


def test_readme_names_real_commands_and_options():
    from mera_multi_hf.cli.main import build_parser

    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    for command in re.findall(r"^mera-multi (\w+)", README, flags=re.MULTILINE):
        assert command in commands, command
    assert "--multi_gpu --num_processes" in README and "--cpu` starts ONE" in README
