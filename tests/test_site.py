"""The documentation site (mkdocs.yml, docs/): its command-line reference is what the
parsers print today, and every page is in the nav. (`mkdocs build --strict`, which
checks every link and anchor, runs in .ci/run; the pages' command blocks run in
tests/test_readme.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_readme import site_pages

REPO = Path(__file__).resolve().parent.parent


def _rendered_reference() -> str:
    """docs/cli.md as the script renders it, in a fresh interpreter: a backend that another
    test module registers in this one would join `--backend`'s choices."""
    code = "import sys; sys.path.insert(0, 'docs'); import cli_reference as c; print(c.render(), end='')"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, check=True
    )
    return done.stdout.decode("utf-8")


def test_the_command_line_reference_is_generated_from_the_parsers():
    rendered = _rendered_reference()
    committed = (REPO / "docs/cli.md").read_text(encoding="utf-8")
    assert committed == rendered, "docs/cli.md is stale: run `python docs/cli_reference.py`"
    for command in ("evaluate", "score", "build", "serve", "judge serve", "metrics export"):
        assert f"## `mera-multi {command}`" in rendered, command
    assert "usage: mera-multi evaluate [-h]" in rendered  # evaluate's own options parser
    assert "--dialogue-context" in rendered and "--served-model-name" in rendered


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    pages = site_pages()
    assert all(page.is_file() for page in pages), [p for p in pages if not p.is_file()]
    on_disk = set((REPO / "docs").glob("*.md"))
    assert on_disk == set(pages), sorted(p.name for p in on_disk ^ set(pages))
