"""The shape the code keeps: data goes one way (no module imports one from a later stage
of raw -> dataset -> examples -> requests -> generations -> log -> scores -> reports), and
no library function is longer than a screen."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"

# Stages in data-flow order; a module may import from its own stage or an earlier one.
STAGES = [
    ("foundation", {"_version", "errors", "tasks", "_paths", "atomic", "http_client",
                    "http_app", "citation", "masking", "provenance", "metric_inputs", "metric_exact_match",
                    "metric_extraction", "metric_groups", "metric_ruslun", "ruslun_rules", "filters", "media", "prompts",
                    "offline", "outputs", "limits", "media_checks", "json_doubts", "json_read",
                    "metric_registry", "parsing", "uvicorn_hook", "datasets_hook"}),
    ("raw -> dataset", {"raw", "raw.files", "raw.json_files", "raw.layout", "raw.metadata",
                        "raw.card", "raw.groups", "raw.records", "raw.dataset",
                        "builder", "builders", "hub", "hub_layout", "sample_data"}),
    ("dataset", {"loading", "arrow_split"}),
    ("examples", {"examples"}),
    ("requests", {"runner.request", "runner.chat", "runner.dialogue"}),
    ("generations", {"runner.backends", "runner.backends.hf", "runner.backends.openai",
                     "tiny_model", "tiny_models", "runner.serve", "predictions"}),
    ("log", {"runner.samplelog", "runner.generate"}),
    ("scores", {"scoring", "records", "judge", "judge_agreement", "judge_train", "judge_server",
                "uncertainty", "diagnostics"}),
    ("reports and submission", {"reports", "charts", "submission", "results_html", "compare_html"}),
    ("commands", {"mera_multi_hf", "runner", "runner.config", "runner.run", "runner.finish",
                  "runner.manifest", "cli", "__main__",
                  "evaluate_cmd", "score_cmd", "judge_cmd", "metrics_export", "metrics_loading",
                  "flat_modules", "space_modules",
                  "compare", "leaderboard", "preflight", "view_cmd", "finalize", "options"}),
]
RANK = {name: i for i, (_, names) in enumerate(STAGES) for name in names}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "mera_multi_hf"


def _stage_of(name: str) -> str:
    """sample_data.<task> belongs to sample_data, builders.<task> to builders."""
    while name not in RANK and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(path: Path, name: str) -> set[str]:
    out = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if name == "mera_multi_hf":
        package = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            if node.module:
                out.add(".".join(base + [node.module]))
            else:  # from . import a, b: the modules a and b
                out |= {".".join(base + [alias.name]) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mera_multi_hf."):
            out.add(node.module.removeprefix("mera_multi_hf."))
    return out


def _library_files():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "_bundled" not in p.parts]


def test_every_module_has_a_stage():
    unplaced = {_module_name(p) for p in _library_files()} - set(RANK)
    assert not {m for m in unplaced if _stage_of(m) not in RANK}, unplaced


@pytest.mark.parametrize("path", _library_files(), ids=lambda p: _module_name(p))
def test_imports_go_one_way(path):
    name = _module_name(path)
    own = RANK[_stage_of(name)]
    later = {dep for dep in _imports(path, name) if RANK.get(_stage_of(dep), 0) > own}
    assert not later, f"{name} ({STAGES[own][0]}) imports from a later stage: {sorted(later)}"


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
    long = [f"{_module_name(p)}: {n} lines" for p in _library_files()
            if "sample_data" not in p.parts
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > 500]
    assert not long, long


def _graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports: every import statement, at module level
    or inside a function (both run some time); a package's lazy import of its own
    submodule counts too (make_backend's backends import backends.base, not their package)."""
    files = {_module_name(p): p for p in _library_files()}

    def resolve(dep):  # from .x import name: the module x (or the name, if a module)
        while dep not in files and "." in dep:
            dep = dep.rsplit(".", 1)[0]
        return dep if dep in files else None

    return {name: {d for d in map(resolve, _imports(path, name)) if d and d != name}
            for name, path in files.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, or None (depth-first search, colours)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_the_cycle_check_finds_a_cycle():
    graph = _graph()  # lazy imports count: make_backend's, and the tiny-model builder's
    assert {"runner.backends.hf", "runner.backends.openai"} <= graph["runner.backends"]
    assert "tiny_models.recipes" in graph["tiny_models"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
