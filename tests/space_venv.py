"""Make the plain venv in which tests/test_metric_spaces.py loads the metric folders as a
Space would: only `evaluate`, each folder's requirements.txt and the `gradio` of the
cards' `sdk_version` (no mera_multi_hf, no system site-packages). An install step, run
before the tests (`.ci/run` does): `python tests/space_venv.py`. Kept in the temporary
folder, keyed by the requirements, so it is made once per machine."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from mera_multi_hf.spaces.loading import METRICS

REPO = Path(__file__).resolve().parent.parent


def _sdk_version() -> str:
    import yaml

    versions = {
        yaml.safe_load(
            (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8").split("---\n")[1]
        )["sdk_version"]
        for name in METRICS
    }
    assert len(versions) == 1, versions
    return versions.pop()


def wanted() -> list[str]:
    lines = {f"gradio=={_sdk_version()}"}
    for name in METRICS:
        text = (REPO / "metrics" / name / "requirements.txt").read_text(encoding="utf-8")
        lines.update(
            ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")
        )
    return ["evaluate", *sorted(lines)]


def venv_root() -> Path:
    key = hashlib.sha256("\n".join([sys.version, *wanted()]).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"mera-multi-space-venv-{key}"


def ready_python() -> str | None:
    root = venv_root()
    return str(root / "bin" / "python") if (root / "ready").exists() else None


def main() -> int:
    from filelock import FileLock

    root = venv_root()
    with FileLock(str(root) + ".lock"):
        if (root / "ready").exists():
            print(f"{root}: ready")
            return 0
        venv.EnvBuilder(clear=True, with_pip=True).create(root)
        subprocess.run(
            [str(root / "bin" / "python"), "-m", "pip", "install", "-q", *wanted()],
            check=True,
            timeout=1800,
        )
        (root / "ready").write_text("ok")
    print(f"{root}: made")
    return 0


if __name__ == "__main__":
    sys.exit(main())
