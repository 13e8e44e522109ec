"""`mera-multi metrics export|push`: the evaluate modules as Hub Spaces.

A Space is one flat folder: the evaluate module (space_modules/<name>.py), every package
module it imports as a sibling file (:mod:`mera_multi_hf.spaces.flat_modules`), its card
README.md, app.py and requirements.txt, the examples rewritten for the Hub name. The
committed metrics/<name>/ folders are this export (a test keeps them equal); `push`
uploads it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.arguments import OVERWRITE_HELP, add_command, opt, output_dir_opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.spaces.flat_modules import flat_folder
from mera_multi_hf.spaces.loading import METRICS

SPACE_SOURCES = Path(__file__).resolve().parent / "space_modules"
DEFAULT_NAMESPACE = "mera_multi"


def _doc_rewrites(namespace: str) -> list[tuple[str, str]]:
    """How the package-facing examples read in a standalone Space."""
    rewrites = [("from mera_multi_hf import load_metric", "import evaluate")]
    for name in METRICS:  # load_metric("x") and load_metric("x", "<task>")
        rewrites += [
            (f'load_metric("{name}")', f'evaluate.load("{namespace}/{name}")'),
            (f'load_metric("{name}", ', f'evaluate.load("{namespace}/{name}", '),
        ]
    return rewrites


TASK_TABLE = "spaces.space_modules.task_options"


def _task_table() -> str:
    """The text of a Space's task_options.py: the package's table written out."""
    from mera_multi_hf.spaces.space_modules.task_options import TASK_OPTIONS

    doc = (SPACE_SOURCES / "task_options.py").read_text(encoding="utf-8").split('"""')[1]
    rows = [f"    {key!r}: {options!r},\n" for key, options in TASK_OPTIONS.items()]
    note = "# Written by `mera-multi metrics export` from the package's task declarations.\n"
    return f'"""{doc}"""\n\n{note}TASK_OPTIONS = {{\n{"".join(rows)}}}\n'


def space_files(name: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
    """{file name: text} of one metric's Space: its module and the package modules it
    imports (flattened; the task table written out), its card, app.py and
    requirements.txt (examples rewritten for the Hub name)."""
    files = flat_folder(f"spaces.space_modules.{name}", {TASK_TABLE: _task_table()})
    own = {
        f"{name}.py": files[f"{name}.py"],
        "README.md": (SPACE_SOURCES / "cards" / f"{name}.md").read_text(encoding="utf-8"),
        "app.py": (SPACE_SOURCES / "app.py").read_text(encoding="utf-8"),
        "requirements.txt": (SPACE_SOURCES / "requirements" / f"{name}.txt").read_text(
            encoding="utf-8"
        ),
    }
    for file, text in own.items():
        for old, new in _doc_rewrites(namespace):
            text = text.replace(old, new)
        files[file] = text
    return files


def export_metrics(
    out: str | Path, namespace: str = DEFAULT_NAMESPACE, names=METRICS
) -> list[Path]:
    """Write one self-contained Space folder per metric under ``out``; returns them.
    ``out`` follows the tool's ownership rule (:mod:`mera_multi_hf.core.outputs`); the files
    of metrics not exported now stay as an earlier export left them."""
    from mera_multi_hf.core.outputs import OutputFolder

    files = {}
    for name in names:
        for file, text in space_files(name, namespace).items():
            # bytes: our own source, written as it is (text would be masked, and
            # masking a header-shaped line of code breaks the file)
            files[f"{name}/{file}"] = text.encode("utf-8")
    folder = OutputFolder(out, kind="metrics")
    others = [n for n in folder.owned() if n.split("/")[0] not in names]
    with folder.claim(others):
        folder.write_set(files)
    return [Path(out) / name for name in names]


# ----------------------------------------------------------------------------------
# Publishing.


def _offline() -> bool:
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return flag or bool(constants.HF_HUB_OFFLINE)


def push_metrics(
    namespace: str, token: str | None = None, folder: str | Path | None = None, names=METRICS
) -> list[str]:
    """Export (or take the export in ``folder``) and upload each metric as the Space
    ``<namespace>/<metric>``; returns the Space URLs."""
    if _offline():
        raise MeraError(
            "cannot push the metric Spaces: HF_HUB_OFFLINE is set (unset it to "
            "publish; nothing was sent)"
        )
    import tempfile

    from huggingface_hub import HfApi

    api = HfApi(token=token)
    urls = []
    with tempfile.TemporaryDirectory(prefix="mera-metrics-") as tmp:
        root = Path(folder) if folder else Path(tmp)
        if not folder:
            export_metrics(root, namespace, names)
        for name in names:
            repo_id = f"{namespace}/{name}"
            try:
                api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
                api.upload_folder(
                    folder_path=str(root / name),
                    repo_id=repo_id,
                    repo_type="space",
                    commit_message="Upload with mera-multi-hf",
                )
            except Exception as err:  # no token, no rights, no network
                first = (str(err).strip().splitlines() or [""])[0][:300]
                raise MeraError(
                    f"could not publish the Space {repo_id}: {type(err).__name__}: {first}"
                ) from None
            urls.append(f"https://huggingface.co/spaces/{repo_id}")
    return urls


@dataclass
class SpaceOptions:
    """Options of both `metrics export` and `metrics push`"""

    namespace: str = opt(
        DEFAULT_NAMESPACE, f"Hub user or organisation of the Spaces (default: {DEFAULT_NAMESPACE})"
    )
    metric: list[str] | None = opt(
        None, "only this metric, repeatable (default: all four)", choices=METRICS
    )

    def names(self) -> tuple[str, ...]:
        return tuple(self.metric) if self.metric else METRICS


@dataclass
class ExportOptions(SpaceOptions):
    """The options of `mera-multi metrics export`."""

    out: str | None = output_dir_opt(
        None,
        "the folder to write one sub-folder per metric into",
        required=True,
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)


@dataclass
class PushOptions(SpaceOptions):
    """The options of `mera-multi metrics push`."""

    token: str | None = opt(None, "a Hub token (default: the logged-in one)", secret=True)
    dir: str | None = opt(None, "upload this earlier export instead of exporting afresh", path=True)


def cmd_export(options: ExportOptions) -> int:
    for folder in export_metrics(options.out, options.namespace, options.names()):
        print(f"wrote {folder}")
    print(
        f"load one with evaluate.load('<folder>'), or push them: "
        f"mera-multi metrics push --namespace {options.namespace}"
    )
    return 0


def cmd_push(options: PushOptions) -> int:
    for url in push_metrics(options.namespace, options.token, options.dir, options.names()):
        print(f"published {url}")
    return 0


def _no_action(args) -> int:
    raise MeraError(
        "metrics: say what to do: `mera-multi metrics export --output-dir DIR` or "
        "`mera-multi metrics push` (see `mera-multi metrics --help`)"
    )


def add_parser(sub) -> None:
    metrics = sub.add_parser(
        "metrics",
        help="export the metrics as Hub Spaces, or push them",
        description="The metrics as Hub Spaces: `metrics export` writes them, `metrics push` "
        "publishes them (see `mera-multi metrics export --help`).",
    )
    metrics.set_defaults(func=_no_action)
    actions = metrics.add_subparsers(dest="metrics_command", metavar="ACTION")
    add_command(
        actions,
        "export",
        ExportOptions,
        cmd_export,
        help="write each metric's Space folder into --output-dir",
        description="Write into --output-dir one Space folder per metric, <metric>/: the "
        "evaluate module, its README.md card, app.py, requirements.txt and, "
        "as flat sibling files, the package modules it imports.",
    )
    add_command(
        actions,
        "push",
        PushOptions,
        cmd_push,
        help="publish the Space folders as <namespace>/<metric>",
        description="Upload each metric's Space folder (exported afresh into a "
        "temporary folder, or --dir) as the Space <namespace>/<metric>; "
        "writes no local file.",
    )
