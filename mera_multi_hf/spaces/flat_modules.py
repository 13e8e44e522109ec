"""A package module and the package modules it imports, as the files of one flat folder:
what `evaluate` needs to run a metric Space without this package installed.

`evaluate.load` copies beside a module only the files the module itself names in an
unindented ``from .x import y`` line, and imports them as its siblings. So the folder
holds the module and, as flat sibling files, every package module it reaches through
its imports (followed in the AST, function-level imports included, however deep the
modules sit in the package), each import of the package rewritten to
``from .<file> import``; and the module gets one such line for each sibling that only
other siblings import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mera_multi_hf.core.errors import MeraError

PACKAGE = "mera_multi_hf"
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # this file is spaces/flat_modules.py
# The head of one `from X import` statement, X dotted or relative.
_FROM_HEAD = re.compile(r"from\s+[\w.]+\s+import\b")


def _source_file(name: str) -> Path:
    """The file of the package module ``name`` (dotted, below the package)."""
    path = PACKAGE_DIR.joinpath(*name.split("."))
    if not path.with_suffix(".py").is_file():
        raise MeraError(
            f"a flat Space folder carries single-file modules only, but "
            f"{PACKAGE}.{name} is {'a package' if path.is_dir() else 'not found'}"
        )
    return path.with_suffix(".py")


def _package_imports(tree: ast.Module, name: str) -> list[tuple[ast.ImportFrom, str]]:
    """(statement, imported module) for each import of a package module in ``tree``."""
    package = name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == PACKAGE for a in node.names
        ):
            raise MeraError(
                f"{PACKAGE}.{name}:{node.lineno}: a module a Space carries imports "
                f"the package as `from .module import name` (the folder is flat)"
            )
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if node.module is None or node.level > len(package) + 1:
                raise MeraError(
                    f"{PACKAGE}.{name}:{node.lineno}: a module a Space carries "
                    "imports as `from .module import name` (the folder is flat)"
                )
            found.append((node, ".".join([*package[: len(package) + 1 - node.level], node.module])))
        elif (node.module or "").startswith(PACKAGE + "."):
            found.append((node, node.module.removeprefix(PACKAGE + ".")))
    return found


def _file_name(name: str) -> str:
    return name.rsplit(".", 1)[-1] + ".py"


def _flattened(source: str, imports: list[tuple[ast.ImportFrom, str]]) -> str:
    """``source`` with each package import reading ``from .<file> import`` (the rest of
    the line, comments and layout untouched)."""
    lines = source.splitlines(keepends=True)
    for node, target in imports:
        line = lines[node.lineno - 1]
        indent = len(line) - len(line.lstrip())  # what precedes `from`: plain spaces
        head = f"from .{_file_name(target)[:-3]} import"
        lines[node.lineno - 1] = line[:indent] + _FROM_HEAD.sub(head, line[indent:], count=1)
    return "".join(lines)


def _naming_every_sibling(source: str, siblings: list[str]) -> str:
    """``source`` with an unindented ``from .<file> import`` line added after its own
    imports for each sibling it does not import itself, so that `evaluate` copies it."""
    tree = ast.parse(source)
    own = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1}
    missing = [s for s in siblings if s not in own]
    if not missing:
        return source
    last = max(n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    lines = source.splitlines(keepends=True)
    added = ["# The modules only the others import: evaluate copies the files named here.\n"]
    added += [f"from .{s} import __name__ as _{s}_module\n" for s in missing]
    return "".join(lines[:last] + added + lines[last:])


def flat_folder(module: str, generated: dict[str, str] | None = None) -> dict[str, str]:
    """{file name: text}: the package module ``module`` (dotted, below the package) and
    every package module it imports, transitively, as sibling files of one folder. A
    module named in ``generated`` (dotted: its text) is written as that text, its own
    imports not followed (a table the Space carries as data)."""
    generated = generated or {}
    files, origin, todo = {}, {}, [module]
    while todo:
        name = todo.pop()
        file = _file_name(name)
        if origin.setdefault(file, name) != name:
            raise MeraError(
                f"a flat Space folder cannot hold both {PACKAGE}.{origin[file]} "
                f"and {PACKAGE}.{name}: both would be {file}"
            )
        if file in files:
            continue
        if name in generated:
            files[file] = generated[name]
            continue
        source = _source_file(name).read_text(encoding="utf-8")
        imports = _package_imports(ast.parse(source), name)
        files[file] = _flattened(source, imports)
        todo += [target for _, target in imports]
    main = _file_name(module)
    files[main] = _naming_every_sibling(files[main], sorted(f[:-3] for f in files if f != main))
    return files
