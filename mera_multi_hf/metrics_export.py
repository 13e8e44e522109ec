"""`mera-multi metrics export|push`: the evaluate modules as self-contained Hub Spaces.

The modules in metrics/ are thin wrappers that import the metric logic from this
package. A Space on the Hub cannot import this package, so `export` writes each module
with the package code it needs inlined: the wrapper's ``from mera_multi_hf.x import y``
lines are replaced by the source of ``y`` and of everything ``y`` reaches (functions,
classes, constants, imports), read from the package's own files. Nothing is written
twice by hand: change a formula in metric_fns.py and the next export carries it.

Task declarations are not inlined (they reach the whole registry): the exported module
gets the few fields a metric reads (``TASK_FIELDS``) as generated data.
"""
from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import sys
from pathlib import Path

from .errors import MeraError
from .metrics_loading import METRICS, metric_path

PACKAGE = "mera_multi_hf"
PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_NAMESPACE = "mera_multi"
SPACE_FILES = ("README.md", "app.py")
# What a metric reads from a task declaration; the exported module carries these only.
TASK_FIELDS = ("key", "class_name", "em_mode", "answer_kind", "choices")
# Import names whose distribution on PyPI has another name.
DISTRIBUTION = {"PIL": "pillow", "yaml": "pyyaml"}


# ----------------------------------------------------------------------------------
# Reading the package's modules.

class _Module:
    """One package module: its top-level definitions, imports and the names each uses."""

    def __init__(self, name: str):
        self.name = name
        self.path = PACKAGE_DIR / (name.replace(".", "/") + ".py")
        self.lines = self.path.read_text(encoding="utf-8").splitlines()
        self.defs: dict[str, ast.stmt] = {}
        self.imports: dict[str, str] = {}        # bound name -> its import line
        self.relative: dict[str, tuple[str, str]] = {}  # bound name -> (module, name)
        for node in ast.parse("\n".join(self.lines)).body:
            self._add(node)

    def _add(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self.defs[name.id] = node
        elif isinstance(node, ast.ImportFrom) and node.level:
            for alias in node.names:
                self.relative[alias.asname or alias.name] = (_resolve(self.name, node), alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                self.imports[alias.asname or alias.name] = \
                    f"from {node.module} import {_alias(alias)}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.imports[(alias.asname or alias.name).split(".")[0]] = f"import {_alias(alias)}"

    def source(self, node: ast.stmt) -> str:
        """The definition's text with its function-local package imports made no-ops (the
        names they bring are defined at the top of the generated module)."""
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        lines = self.lines[start - 1:node.end_lineno]
        for inner in _local_package_imports(node):
            first, last = inner.lineno - start, inner.end_lineno - start
            indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
            lines[first:last + 1] = [f"{indent}pass  # {', '.join(a.name for a in inner.names)}: "
                                     "defined in this file"] + [""] * (last - first)
        return "\n".join(lines)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    parts = module.split(".")[:-node.level]
    return ".".join(parts + ([node.module] if node.module else []))


def _alias(alias: ast.alias) -> str:
    return alias.name + (f" as {alias.asname}" if alias.asname else "")


def _local_package_imports(node: ast.stmt) -> list[ast.ImportFrom]:
    return [n for n in ast.walk(node) if n is not node and isinstance(n, ast.ImportFrom)
            and (n.level or (n.module or "").startswith(PACKAGE))]


def _used_names(node: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# ----------------------------------------------------------------------------------
# The closure of what a wrapper imports.

class _Inliner:
    """Collects the definitions a set of package names needs, module by module."""

    def __init__(self):
        self.modules: dict[str, _Module] = {}
        self.chosen: dict[str, dict[str, ast.stmt]] = {}  # module -> name -> node
        self.imports: dict[str, None] = {}
        self.owner: dict[str, str] = {}  # defined name -> module, to catch clashes

    def module(self, name: str) -> _Module:
        if name not in self.modules:
            self.modules[name] = _Module(name)
        return self.modules[name]

    def need(self, module_name: str, name: str) -> None:
        if module_name == "tasks" and name == "TASKS":
            self._claim(name, module_name)
            self.chosen.setdefault(module_name, {})[name] = None  # generated, see _tasks_data
            self.imports["from types import SimpleNamespace"] = None
            return
        module = self.module(module_name)
        if name in module.relative:
            return self.need(*module.relative[name])
        if name in module.imports:
            self.imports[module.imports[name]] = None
            return
        node = module.defs.get(name)
        if node is None:
            raise MeraError(f"metrics export: {PACKAGE}.{module_name} defines no {name!r}")
        if name in self.chosen.get(module_name, {}):
            return
        self._claim(name, module_name)
        self.chosen.setdefault(module_name, {})[name] = node
        for other in _names_defined_by(node) - {name}:
            self._claim(other, module_name)
        for used in sorted(_used_names(node)):
            if used in module.defs or used in module.imports or used in module.relative:
                self.need(module_name, used)
        for inner in _local_package_imports(node):
            target = _resolve(module_name, inner) if inner.level else inner.module[len(PACKAGE) + 1:]
            for alias in inner.names:
                self.need(target, alias.name)

    def _claim(self, name: str, module_name: str) -> None:
        if self.owner.setdefault(name, module_name) != module_name:
            raise MeraError(f"metrics export: {name!r} is defined in both {PACKAGE}."
                            f"{self.owner[name]} and {PACKAGE}.{module_name}; rename one so "
                            "the standalone module can hold both")

    def order(self) -> list[str]:
        """Modules so that each comes after the modules its definitions use."""
        done: list[str] = []

        def visit(name, path=()):
            if name in done or name in path:
                return
            module = self.module(name)
            for node in self.chosen[name].values():
                for used in _used_names(node) if node is not None else ():
                    if used in module.relative and module.relative[used][0] in self.chosen:
                        visit(module.relative[used][0], path + (name,))
            done.append(name)

        for name in self.chosen:
            visit(name)
        return done


def _names_defined_by(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _tasks_data() -> str:
    from .tasks import TASKS

    rows = {key: {f: getattr(task, f) for f in TASK_FIELDS} for key, task in TASKS.items()}
    body = ",\n".join(f"    {key!r}: {value!r}" for key, value in rows.items())
    return ("# Generated from mera_multi_hf.tasks: the task fields a metric reads.\n"
            f"TASKS = {{key: SimpleNamespace(**fields) for key, fields in {{\n{body},\n}}.items()}}")


def _definitions(inliner: _Inliner) -> list[str]:
    blocks = []
    for module_name in inliner.order():
        module = inliner.module(module_name)
        nodes = inliner.chosen[module_name]
        blocks.append(f"# ---- from {PACKAGE}/{module_name.replace('.', '/')}.py "
                      "(generated: edit the package, then export again)")
        if None in nodes.values():
            blocks.append(_tasks_data())
        seen = set()
        for node in sorted((n for n in nodes.values() if n is not None), key=lambda n: n.lineno):
            if id(node) not in seen:
                seen.add(id(node))
                blocks.append(module.source(node))
    return blocks


# ----------------------------------------------------------------------------------
# One standalone module.

def _doc_rewrites(namespace: str) -> list[tuple[str, str]]:
    """How the package-facing examples read in a standalone Space."""
    rewrites = [("from mera_multi_hf import load_metric", "import evaluate"),
                ("mera_multi_hf.errors.MeraError", "MeraError")]
    rewrites += [(f'load_metric("{name}")', f'evaluate.load("{namespace}/{name}")') for name in METRICS]
    return rewrites


def standalone_source(name: str, namespace: str = DEFAULT_NAMESPACE) -> str:
    """The module file of one metric with the package code it uses inlined."""
    wrapper_path = Path(metric_path(name)) / f"{name}.py"
    text = wrapper_path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    inliner = _Inliner()
    drop = set()
    aliases = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            drop.update(range(node.lineno, node.end_lineno + 1))
            for alias in node.names:
                inliner.need(node.module[len(PACKAGE) + 1:], alias.name)
                if alias.asname:
                    aliases.append(f"{alias.asname} = {alias.name}")
    doc = tree.body[0] if isinstance(tree.body[0], ast.Expr) else None
    head = lines[:doc.end_lineno] if doc else []
    rest = [line for i, line in enumerate(lines, 1) if i not in drop and (not doc or i > doc.end_lineno)]
    body = "\n".join(rest).strip("\n")
    for old, new in _doc_rewrites(namespace):
        body = body.replace(old, new)
    note = (f"# Generated by `mera-multi metrics export` from metrics/{name}/{name}.py and the "
            f"{PACKAGE} sources;\n# it needs no {PACKAGE} install. Do not edit: change the "
            "package and export again.")
    parts = ["\n".join(head), note, "from __future__ import annotations",
             "\n".join(sorted(inliner.imports)), *_definitions(inliner), "\n".join(aliases), body]
    return "\n\n\n".join(p for p in parts if p.strip()) + "\n"


def third_party_imports(source: str) -> list[str]:
    """Top-level names of the non-standard-library modules a source imports (anywhere)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return sorted(n for n in found if n not in sys.stdlib_module_names and n != "__future__")


def requirements(source: str) -> str:
    """requirements.txt for a standalone module: the distributions it imports, each with
    the version bound this package declares (pyproject.toml) where it declares one."""
    try:
        declared = importlib.metadata.requires("mera-multi-hf") or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    bounds = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower(): r.split(";")[0].strip()
              for r in declared if "extra ==" not in r}
    names = sorted({DISTRIBUTION.get(n, n) for n in third_party_imports(source)})
    lines = [bounds.get(n.lower().replace("-", "_"), bounds.get(n.lower(), n)) for n in names]
    return ("# Generated by `mera-multi metrics export`: what this module imports, from PyPI.\n"
            + "\n".join(lines) + "\n")


def export_metrics(out: str | Path, namespace: str = DEFAULT_NAMESPACE,
                   names=METRICS, overwrite: bool = False) -> list[Path]:
    """Write one self-contained Space folder per metric under ``out``; returns them.
    ``out`` follows the tool's ownership rule (:mod:`mera_multi_hf.outputs`); the files
    of metrics not exported now stay as an earlier export left them."""
    from .outputs import OutputFolder

    files = {}
    for name in names:
        source = standalone_source(name, namespace)
        for file in SPACE_FILES:
            text = (Path(metric_path(name)) / file).read_text(encoding="utf-8")
            for old, new in _doc_rewrites(namespace):
                text = text.replace(old, new)
            files[f"{name}/{file}"] = text
        files[f"{name}/{name}.py"] = source
        files[f"{name}/requirements.txt"] = requirements(source)
    folder = OutputFolder(out)
    others = [n for n in folder.owned() if n.split("/")[0] not in names]
    with folder.claim(overwrite, others):
        folder.write_set(files)
    return [Path(out) / name for name in names]


# ----------------------------------------------------------------------------------
# Publishing.

def _offline() -> bool:
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return flag or bool(constants.HF_HUB_OFFLINE)


def push_metrics(namespace: str, token: str | None = None, folder: str | Path | None = None,
                 names=METRICS) -> list[str]:
    """Export (or take the export in ``folder``) and upload each metric as the Space
    ``<namespace>/<metric>``; returns the Space URLs."""
    if _offline():
        raise MeraError("cannot push the metric Spaces: HF_HUB_OFFLINE is set (unset it to "
                        "publish; nothing was sent)")
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
                api.upload_folder(folder_path=str(root / name), repo_id=repo_id,
                                  repo_type="space", commit_message="Upload with mera-multi-hf")
            except Exception as err:  # no token, no rights, no network
                first = (str(err).strip().splitlines() or [""])[0][:300]
                raise MeraError(f"could not publish the Space {repo_id}: "
                                f"{type(err).__name__}: {first}") from None
            urls.append(f"https://huggingface.co/spaces/{repo_id}")
    return urls


def cmd_metrics(args) -> int:
    names = tuple(args.metric) if args.metric else METRICS
    if args.action == "export":
        for folder in export_metrics(args.out, args.namespace, names, args.overwrite):
            print(f"wrote {folder}")
        print(f"load one with evaluate.load('<folder>'), or push them: "
              f"mera-multi metrics push --namespace {args.namespace}")
        return 0
    for url in push_metrics(args.namespace, args.token, args.dir, names):
        print(f"published {url}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("metrics", help="export the metrics as self-contained Hub Spaces, or push them",
                       description="export: write each evaluate module with the package code it "
                                   "needs inlined (a Hub Space folder); push: upload them as "
                                   "Spaces <namespace>/<metric>.")
    p.add_argument("action", choices=("export", "push"), nargs="?", metavar="{export,push}",
                   help="export: write the Space folders into --out; push: publish them")
    p.add_argument("--out", help="export: the folder to write one sub-folder per metric into")
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                   help=f"Hub user or organisation of the Spaces (default {DEFAULT_NAMESPACE})")
    p.add_argument("--token", help="push: a Hub token (default: the logged-in one)")
    p.add_argument("--dir", help="push: upload this earlier export instead of exporting afresh")
    p.add_argument("--overwrite", action="store_true", help="export: write into a folder "
                   "holding other files (files of the same names are replaced)")
    p.add_argument("--metric", action="append", choices=METRICS,
                   help="only this metric (repeatable; default all four)")
    p.set_defaults(func=_checked)


def _checked(args) -> int:
    if args.action is None:
        raise MeraError("metrics: say what to do: `mera-multi metrics export --out DIR` or "
                        "`mera-multi metrics push` (see `mera-multi metrics --help`)")
    if args.action == "export" and not args.out:
        raise MeraError("metrics export needs --out DIR")
    return cmd_metrics(args)
