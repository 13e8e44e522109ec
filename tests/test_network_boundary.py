"""Two boundaries for what comes in over the network, proved by walking the code (as
tests/test_write_boundary.py does for writes):

1. Every outbound request goes through mera_multi_hf/core/http_client.py (its deadline,
   retries, redirect rule, bounds and one-line errors). No other module imports an HTTP
   or socket library (requests, urllib's request side, urllib3, httpx, http.client,
   sockets, ...), except the servers' own listening code listed in NETWORK_ALLOWED,
   each with its reason. (huggingface_hub's own calls are the library's, with its own
   timeouts; they are not requests this project makes.)
2. Foreign text is shown through the one sanitiser (core/foreign_text.py). The rule,
   in the modules that handle replies or requests (REPLY_MODULES): in an f-string that
   is raised (any exception built in a ``raise``) or printed, a value that reads a
   reply or a request (a name in FOREIGN_NAMES, or a ``.text``, ``.content``, ``.path``
   or ``.url`` attribute) is wrapped in a sanitising call (SANITISERS), or is only
   measured (``len``), a status number, or typed (``type(...).__name__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"
CLIENT = "core/http_client.py"
NETWORK = {
    "requests",
    "urllib3",
    "httpx",
    "aiohttp",
    "socket",
    "socketserver",
    "http.client",
    "http.server",
    "urllib.request",
    "ftplib",
    "websocket",
    "websockets",
}
NETWORK_ALLOWED = {
    ("serving/app.py", "socket"): "the servers' own listening socket, bound before uvicorn runs",
    ("generation/launch.py", "socket"): (
        "asks the system for a free local port for torch.distributed's rendezvous; "
        "it binds and closes, nothing is sent"
    ),
}

REPLY_MODULES = [
    "core/http_client.py",
    "generation/backends/openai.py",
    "judge/http_judge.py",
    "pipeline/preflight.py",
    "serving/app.py",
    "serving/chat_server.py",
    "serving/judge_server.py",
]
FOREIGN_NAMES = {"response", "resp", "reply", "answer", "body", "served", "info", "model"}
FOREIGN_ATTRIBUTES = {"text", "content", "path", "url"}
NUMBERS = {"status", "status_code"}  # a reply's numbers: shown as they are
SANITISERS = {"foreign", "shown", "_shown", "server_of", "mask_secrets", "len"}


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement (or importlib/__import__ call) brings in."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None))
        in ("import_module", "__import__")
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return [str(node.args[0].value)]
    return []


def _network_uses(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        hits = [
            next((m for m in NETWORK if name.split(".")[: m.count(".") + 1] == m.split(".")), None)
            for name in _imported(node)
        ]
        hit = next((h for h in hits if h), None)  # one per statement
        if hit is None and isinstance(node, ast.Import) and "urllib" in _imported(node):
            hit = "urllib"  # the whole of it, its request side too
        if hit:
            found.append((node.lineno, hit))
    return found


def _scan_network():
    found, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == CLIENT:
            continue
        for line, library in _network_uses(ast.parse(path.read_text(encoding="utf-8"))):
            if (module, library) in NETWORK_ALLOWED:
                used.add((module, library))
            else:
                found.append(f"{module}:{line}: {library}")
    return found, used


def test_no_module_sends_a_request_around_the_client():
    found, _ = _scan_network()
    assert not found, (
        "these modules use a network library outside mera_multi_hf/core/http_client.py; "
        "send through its Client:\n" + "\n".join(found)
    )


def test_every_network_allowance_is_still_needed():
    _, used = _scan_network()
    assert set(NETWORK_ALLOWED) - used == set(), "stale entries in NETWORK_ALLOWED"


def test_the_network_scan_finds_every_way_in():
    """The walker itself, on a planted module: each way of reaching the network is
    found, and what is not the network (urllib.parse, http.HTTPStatus) is not."""
    planted = (
        "import requests\nimport urllib.request\nfrom urllib3.util import Retry\n"
        "import http.client\nfrom http import client\nimport socket\nimport httpx\n"
        "from urllib import request\nimportlib.import_module('requests')\n"
        "from urllib.parse import urlsplit\nfrom http import HTTPStatus\nimport json\n"
    )
    assert [lib for _, lib in _network_uses(ast.parse(planted))] == [
        "requests",
        "urllib.request",
        "urllib3",
        "http.client",
        "http.client",
        "socket",
        "httpx",
        "urllib.request",
        "requests",
    ]


def _shows_foreign(expr: ast.AST) -> bool:
    """Whether a formatted value reads foreign text that no sanitiser wraps."""
    if isinstance(expr, ast.Call):
        name = getattr(expr.func, "id", getattr(expr.func, "attr", None))
        if name in SANITISERS:
            return False
    if (
        isinstance(expr, ast.Attribute)
        and expr.attr == "__name__"
        and isinstance(expr.value, ast.Call)
        and getattr(expr.value.func, "id", None) == "type"
    ):
        return False
    if isinstance(expr, ast.Attribute) and expr.attr in NUMBERS:
        return False
    if isinstance(expr, ast.Name):
        return expr.id in FOREIGN_NAMES
    if isinstance(expr, ast.Attribute) and expr.attr in FOREIGN_ATTRIBUTES:
        return True
    return any(_shows_foreign(child) for child in ast.iter_child_nodes(expr))


def _shown_strings(tree: ast.AST):
    """The f-strings of every raised exception and every print call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            yield from (n for n in ast.walk(node.exc) if isinstance(n, ast.JoinedStr))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            yield from (n for n in ast.walk(node) if isinstance(n, ast.JoinedStr))


def _unsanitised(tree: ast.AST) -> list[int]:
    return sorted(
        {
            value.lineno
            for string in _shown_strings(tree)
            for value in string.values
            if isinstance(value, ast.FormattedValue) and _shows_foreign(value.value)
        }
    )


def test_foreign_text_is_shown_through_the_sanitiser():
    found = [
        f"{module}:{line}"
        for module in REPLY_MODULES
        for line in _unsanitised(ast.parse((PACKAGE / module).read_text(encoding="utf-8")))
    ]
    assert not found, (
        "these lines raise or print a reply's or a request's text without "
        "core/foreign_text.foreign (or shown):\n" + "\n".join(found)
    )


def test_the_foreign_text_scan_finds_a_planted_violation():
    planted = (
        "raise MeraError(f'bad reply {response.text[:200]!r}')\n"  # 1: flagged
        "raise MeraError(f'bad reply {foreign(response.text)}')\n"  # 2: sanitised
        "print(f'served {answer}')\n"  # 3: flagged
        "raise BodyError(404, f'no route {request.url.path}')\n"  # 4: flagged
        "raise MeraError(f'{len(body)} bytes, a {type(body).__name__}')\n"  # 5: measured
        "raise MeraError(f'the timeout is {self.timeout}')\n"  # 6: our own value
        "log(f'{reply}')\n"  # 7: neither raised nor printed
    )
    assert _unsanitised(ast.parse(planted)) == [1, 3, 4]
