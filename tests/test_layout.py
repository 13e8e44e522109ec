"""The house keeps its shape: package code lives in the package (the top-level folders
hold scripts that call it), docs/layout.md's tables name files that exist, every
relative Markdown link resolves, and vulture finds no dead code in mera_multi_hf/."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from mera_multi_hf.tasks.table import TASKS

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "mera_multi_hf"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _tracked(pattern: str) -> list[Path]:
    """The checkout's files matching pattern (git's list; a tree without git: a walk that
    skips hidden and virtual-environment folders)."""
    done = subprocess.run(["git", "ls-files", "-z", pattern], cwd=REPO, capture_output=True)
    if done.returncode == 0 and done.stdout:
        return [REPO / name for name in done.stdout.decode().split("\0") if name]
    return [
        p
        for p in REPO.rglob(pattern)
        if not any(part.startswith(".") for part in p.relative_to(REPO).parts)
    ]


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else None]


def _table_cells(text: str, column: int) -> list[str]:
    """One column of the Markdown tables in text (header and rule rows left out)."""
    rows = [
        line.strip().strip("|").split("|")
        for line in text.splitlines()
        if line.startswith("|") and not set(line) <= set("|-: ")
    ]
    return [row[column] for row in rows[1:] if len(row) > column]


def _paths(cells: list[str]) -> list[str]:
    """Backticked names that are paths (a .py file or a folder), not options or names."""
    names = [n for cell in cells for n in re.findall(r"`([^`\s]+)`", cell)]
    return [n for n in names if n.endswith((".py", "/"))]


def _listed(path: Path, names: list[str]) -> bool:
    """path is named in the table: by itself, a pattern (`*_cmd.py`) or its folder."""
    return any(
        path.match(n) if not n.endswith("/") else path.as_posix().startswith(n) for n in names
    )


def test_every_relative_markdown_link_resolves():
    broken = []
    for md in _tracked("*.md"):
        text = md.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = (md.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{md.relative_to(REPO)}: {target}")
    assert not broken, broken


def test_the_readme_layout_tables_name_files_that_exist():
    layout = _section(
        (REPO / "docs" / "layout.md").read_text(encoding="utf-8"), "# Layout: the data goes one way"
    )
    stages, folders = layout.split("### Folders")
    modules = _paths(_table_cells(stages, 1))
    missing = [n for n in modules if not list(PACKAGE.glob(n.rstrip("/")))]
    listed = set(_paths(_table_cells(folders, 0)))
    missing += [n for n in listed if not (REPO / n).is_dir()]
    assert not missing, missing
    unlisted = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and not _listed(p.relative_to(PACKAGE), modules)
    ]
    assert not unlisted, f"modules missing from docs/layout.md's stage table: {unlisted}"
    top = {
        p.relative_to(REPO).parts[0] + "/"
        for p in _tracked("*")
        if len(p.relative_to(REPO).parts) > 1
    }
    assert not {t for t in top if not t.startswith(".")} - listed, "folders missing from the table"


def test_the_generation_module_map_lists_every_generation_module():
    import mera_multi_hf.generation as generation

    modules = {p.stem for p in (PACKAGE / "generation").glob("*.py")} - {"__init__"}
    modules |= {p.parent.name for p in (PACKAGE / "generation").glob("*/__init__.py")}
    listed = set(re.findall(r":mod:`\.(\w+)`", generation.__doc__))
    assert listed == modules, sorted(modules ^ listed)


def test_the_package_never_loads_the_top_level_folders():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "bundled_dir":
                assert [a.value for a in node.args] == ["metrics"], path
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(
                    n.split(".")[0] in ("dataset_scripts", "judge_model") for n in names
                ), path


def test_every_task_has_a_builder_module_and_a_build_script():
    builders = {p.stem for p in (PACKAGE / "data" / "builders").glob("*.py")} - {"__init__"}
    scripts = {p.stem for p in (REPO / "dataset_scripts").glob("*.py")}
    assert builders == scripts == set(TASKS)
    for key in scripts:
        text = (REPO / "dataset_scripts" / f"{key}.py").read_text(encoding="utf-8")
        assert f'main(["build", "{key}", *sys.argv[1:]])' in text


def test_a_missing_builder_is_one_clear_line(tmp_path):
    import dataclasses

    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.data.builders import builder_class

    task = TASKS["ruhhh_image"]
    assert builder_class(task).__module__ == "mera_multi_hf.data.builders.ruhhh_image"
    with pytest.raises(
        MeraError, match=r"no dataset builder yet \(expected mera_multi_hf/data/builders/nope.py\)"
    ):
        builder_class(dataclasses.replace(task, key="nope"))
    with pytest.raises(MeraError, match="its builder file .*gone.py does not exist"):
        builder_class(dataclasses.replace(task, key="nope", builder=str(tmp_path / "gone.py")))
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(MeraError, match="declares no class with TASK_KEY = 'nope2'"):
        builder_class(dataclasses.replace(task, key="nope2", builder=str(tmp_path / "empty.py")))


def test_a_build_script_builds_what_the_command_builds(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "dataset_scripts" / "ruhhh_image.py"),
            "--raw",
            "sample",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(datasets.load_dataset(str(out), split="test")) == 26
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "dataset_scripts" / "ruhhh_image.py"),
            "--raw",
            str(tmp_path / "nowhere"),
            "--out",
            str(tmp_path / "o2"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.startswith("mera-multi: error:"), done.stderr


@pytest.mark.parametrize(
    "script,command", [("server", "serve"), ("agreement", "agreement"), ("train", "train")]
)
def test_the_judge_scripts_are_the_judge_commands(script, command):
    done = subprocess.run(
        [sys.executable, str(REPO / "judge_model" / f"{script}.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: mera-multi judge {command} ")


def test_vulture_finds_no_dead_code():
    """Run over the package, with the folders that use it and a short whitelist of names
    that libraries call (tests/vulture_whitelist.py)."""
    users = [
        "notebooks/make_notebooks.py",
        "dataset_scripts",
        "judge_model",
        "metrics",
        "tests/vulture_whitelist.py",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "vulture", "mera_multi_hf", *users],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 3), done.stderr[-2000:]  # 3: vulture found something
    dead = [line for line in done.stdout.splitlines() if line.startswith("mera_multi_hf")]
    assert not dead, "\n".join(dead)
