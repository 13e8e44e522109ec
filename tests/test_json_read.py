"""The one JSON reader (mera_multi_hf/core/json_read.py) and the places that read through it:
hostile JSON (deep nesting, huge integers, repeated keys, lone surrogates) in predictions,
sample logs, results.json and server replies ends in one line naming where, never in a
traceback; a damaged sample-log line is skipped in place and counted; a lone surrogate in
a server's answer becomes U+FFFD, counted, and a rerun resumes."""

from __future__ import annotations

import ast
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mera_multi_hf.cli.main import main
from mera_multi_hf.core import json_read
from mera_multi_hf.core.json_read import JsonReadError

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000

# The only modules that may call json.load/json.loads themselves, and why.
ALLOWED = {
    "core/json_read.py": "the reader itself",
    "scoring/metric_ruslun.py": "ruSLUn's official parsers of answers and gold, carried by the slot_f1 "
    "Space (which carries no reader); RecursionError is caught there",
    "spaces/space_modules/app.py": "the Space form's options box, in a Space folder that carries the "
    "reader only when its metric imports it",
    "data/raw/records.py": "reads back a string it has just written from a parsed value, to check "
    "the official gold rule",
}


def _json_calls(path: Path) -> list[int]:
    """Lines that parse JSON without the reader: json.load(s)(...) or response.json()."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func = node.func
        if (
            func.attr in ("load", "loads")
            and isinstance(func.value, ast.Name)
            and func.value.id == "json"
        ):
            lines.append(node.lineno)
        elif func.attr == "json" and not node.args and not node.keywords:
            lines.append(node.lineno)  # requests' Response.json(): unbounded, no limits
    return lines


def test_no_json_is_parsed_outside_the_reader():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name not in ALLOWED and _json_calls(path):
            found[name] = _json_calls(path)
    assert not found, f"parse JSON with mera_multi_hf.core.json_read instead: {found}"
    assert all(_json_calls(PACKAGE / name) for name in ALLOWED if name != "core/json_read.py")


@pytest.mark.parametrize(
    "text, words",
    [
        (DEEP, ["nested too deeply"]),
        ("[" * 65 + "]" * 65, ["nested deeper than 64 levels"]),
        ('{"id": ' + HUGE + "}", ["integer of 5000 digits"]),
        ('{"id": 1, "id": 2}', ["duplicate key 'id'"]),
        ("{oops", ["malformed JSON at line 1, column 2"]),
        (b"\xff{}", ["not UTF-8"]),
    ],
)
def test_limits_give_one_line_naming_where(text, words):
    with pytest.raises(JsonReadError) as caught:
        json_read.loads(text, "preds.jsonl:7")
    message = str(caught.value)
    assert message.startswith("preds.jsonl:7: ") and "\n" not in message
    assert all(w in message for w in words), message


def test_size_limit_and_what_stays_readable():
    with pytest.raises(JsonReadError, match="more than the 10 a JSON document may have"):
        json_read.loads(b'{"a": "0123456789"}', "reply", max_bytes=10)
    deep_ok = "[" * 64 + "]" * 64
    assert json_read.depth(json_read.loads(deep_ok, "x")) == 64
    assert json_read.loads('{"n": -' + "9" * 100 + "}", "x")["n"] == -int("9" * 100)
    value, count = json_read.replace_unencodable(
        json_read.loads('{"\\udc80k": ["a\\ud800b"]}', "x")
    )
    assert value == {"\ufffdk": ["a\ufffdb"]} and count == 2
    assert json_read.replace_unencodable({"a": ["ok", 1]}) == ({"a": ["ok", 1]}, 0)


def test_a_jsonl_line_past_the_limit_is_never_held_whole(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b'"' + b"x" * 5000 + b'"\n{"b": 2}\n')
    with open(path, "rb") as fh:
        lines = list(json_read.bounded_lines(fh, 100))
    assert [(n, len(line)) for n, line in lines] == [(1, 9), (2, 101), (3, 9)]
    found = json_read.iter_jsonl(path, max_bytes=100)
    assert next(found) == (1, {"a": 1})
    with pytest.raises(JsonReadError, match=f"{path}:2: 101 bytes, more than the 100"):
        next(found)


# ------------------------------------------------------------------------------------
# Properties: whatever the document, the reader gives json's answer or one line.

SAFE = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _nested(depth: int, kind: str) -> str:
    return (
        ("[" * depth + "1" + "]" * depth)
        if kind == "list"
        else ('{"a": ' * depth + "1" + "}" * depth)
    )


def _one_line_or_json(text):
    try:
        value = json_read.loads(text, "f.jsonl:3")
    except JsonReadError as err:
        assert str(err).startswith("f.jsonl:3: ") and "\n" not in str(err)
        return None
    assert value == json.loads(text)
    return value


@SAFE
@given(depth=st.integers(0, 3000), kind=st.sampled_from(["list", "dict"]))
@example(depth=json_read.MAX_DEPTH - 1, kind="list")  # the deepest allowed
@example(depth=json_read.MAX_DEPTH, kind="list")  # one past: as many brackets as the limit
def test_property_depth(depth, kind):
    value = _one_line_or_json(_nested(depth, kind))
    assert (value is not None) == (depth + 1 <= json_read.MAX_DEPTH)


@SAFE
@given(digits=st.integers(1, 6000), sign=st.sampled_from(["", "-"]))
def test_property_large_integers(digits, sign):
    value = _one_line_or_json('{"id": ' + sign + "7" * digits + "}")
    assert (value is not None) == (digits <= json_read.MAX_INT_DIGITS)


@SAFE
@given(codes=st.lists(st.integers(0xD800, 0xDFFF) | st.integers(0x20, 0x2FF), max_size=8))
def test_property_surrogates_are_replaced_and_counted(codes):
    text = '{"t": "' + "".join(f"\\u{c:04x}" for c in codes) + '"}'
    value, count = json_read.replace_unencodable(json_read.loads(text, "x"))
    value["t"].encode("utf-8")  # always writable now
    plain = json.loads(text)["t"]  # a high+low pair of escapes is one character already
    assert count == sum(0xD800 <= ord(c) <= 0xDFFF for c in plain)
    assert len(value["t"]) == len(plain)


@SAFE
@given(keys=st.lists(st.sampled_from(["id", "prediction", "x"]), min_size=1, max_size=5))
def test_property_duplicate_keys_are_refused(keys):
    text = "{" + ", ".join(f'"{k}": {i}' for i, k in enumerate(keys)) + "}"
    value = _one_line_or_json(text)
    assert (value is None) == (len(set(keys)) < len(keys))


# ------------------------------------------------------------------------------------
# The commands: predictions, compare, view, leaderboard.


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"id": 1, "prediction": ' + "[" * 5000 + "]" * 5000 + "}", ["nested too deeply"]),
        ('{"id": ' + HUGE + ', "prediction": "A"}', ["integer of 5000 digits"]),
        ('{"id": 1, "prediction": "A", "prediction": "B"}', ["duplicate key 'prediction'"]),
    ],
)
def test_score_refuses_hostile_predictions_in_one_line(line, words, raw_sample, tmp_path, capsys):
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"id": 0, "prediction": "A"}\n' + line + "\n", encoding="utf-8")
    code = main(
        [
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(preds),
            "--data",
            str(raw_sample),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{preds}:2: " in err and all(w in err for w in words), err


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["evaluate", "--output-dir", str(out), "--limit", "3", "--no-progress"]) == 0
    return out


@pytest.mark.parametrize("command", ["compare", "view", "leaderboard"])
def test_results_json_nested_too_deeply_is_one_line(command, demo_run, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text('{"tasks": ' + DEEP + "}", encoding="utf-8")
    args = {
        "compare": ["compare", str(demo_run), str(bad), "--out", str(tmp_path / "c")],
        "view": ["view", str(bad)],
        "leaderboard": ["leaderboard", str(demo_run), str(bad), "--out", str(tmp_path / "l")],
    }
    code = main(args[command])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "results.json" in err and "nested too deeply" in err, err


def test_view_names_a_damaged_sample_line(demo_run, tmp_path, capsys):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(demo_run, run)
    sample = run / "samples_ruhhh_image_test.jsonl"
    sample.write_bytes(sample.read_bytes() + (DEEP + "\n").encode())
    assert main(["view", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{sample}:4: " in err and "Traceback" not in err, err


# ------------------------------------------------------------------------------------
# The sample log: a damaged line is skipped in place, counted, and the run resumes.


def test_damaged_sample_log_lines_are_skipped_in_place_and_counted(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["evaluate", "--output-dir", str(out), "--limit", "3", "--no-progress"]
    assert main(args) == 0
    shard = out / "logs" / "samples-rank0.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    damaged = lines[:1] + [(DEEP + "\n").encode(), ('{"id": ' + HUGE + "}\n").encode()] + lines[1:]
    shard.write_bytes(b"".join(damaged))
    before = shard.read_bytes()
    capsys.readouterr()
    assert main(args) == 0  # resumed: every example was logged
    err = capsys.readouterr().err
    assert f"{shard}:2: " in err and f"{shard}:3: " in err and "Traceback" not in err, err
    assert shard.read_bytes() == before  # never rewritten for it
    run = json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]
    assert run["sample_log_damaged"]["lines"] == 2
    assert "nested too deeply" in run["sample_log_damaged"]["first"][0]


# ------------------------------------------------------------------------------------
# Server replies: a lone surrogate, deep nesting; a base URL with a query.


class _Replying(BaseHTTPRequestHandler):
    """An OpenAI-compatible server whose chat answer is ``server.reply`` (bytes, sent as
    they are); it records the path of every request."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, body: bytes) -> None:
        self.server.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(b'{"object": "list", "data": [{"id": "m"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(self.server.reply)


@pytest.fixture
def replying():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replying)
    server.daemon_threads, server.paths = True, []
    server.reply = b'{"choices": [{"message": {"content": "A\\ud800"}}]}'
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _openai_args(server, out, query=""):
    return [
        "evaluate",
        "--backend",
        "openai",
        "--model",
        "m",
        "--output-dir",
        str(out),
        "--base-url",
        f"http://127.0.0.1:{server.server_port}/v1{query}",
        "--data",
        "sample",
        "--limit",
        "2",
        "--no-progress",
        "--max-retries",
        "0",
    ]


def test_a_lone_surrogate_in_a_reply_is_replaced_counted_and_resumed(replying, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_openai_args(replying, out, "?api-version=1")) == 0, capsys.readouterr().err
    # the route goes into the path, the query stays after it
    assert set(replying.paths) == {"/v1/models?api-version=1", "/v1/chat/completions?api-version=1"}
    lines = [
        json.loads(x)
        for x in (out / "logs" / "samples-rank0.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [r["generation"] for r in lines] == ["A\ufffd", "A\ufffd"]
    assert all(r["unencodable_replaced"] == 1 for r in lines)
    run = json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]
    assert run["unencodable_replaced"] == {"ruhhh_image": 2}
    calls = len(replying.paths)
    assert main(_openai_args(replying, out, "?api-version=1")) == 0  # the rerun resumes
    assert [p for p in replying.paths[calls:] if "chat" in p] == []


@pytest.mark.parametrize(
    "reply, words",
    [
        (b'{"choices": ' + DEEP.encode() + b"}", ["nested too deeply"]),
        (b'{"choices": [{"message": {"content": "A", "content": "B"}}]}', ["duplicate key"]),
        (b'{"choices": [{"message": {"content": 7}}]}', ["not a chat completion"]),
    ],
)
def test_a_hostile_reply_is_one_line(reply, words, replying, tmp_path, capsys):
    replying.reply = reply
    assert main(_openai_args(replying, tmp_path / "run")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "POST /chat/completions" in err or "not a chat completion" in err
    assert all(w in err for w in words), err


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    reply=st.one_of(
        st.binary(max_size=200),
        st.integers(0, 3000).map(lambda d: b'{"choices": ' + b"[" * d + b"]" * d + b"}"),
        st.integers(0, 300_000).map(
            lambda n: b'{"choices": [{"message": {"content": "' + b"x" * n + b'"}}]}'
        ),
        st.sampled_from(
            [
                b"\xff\xfe",
                b'{"choices": [{"message": {"content": "\\udfff"}}]}',
                '{"choices": [{"message": {"content": "é"}}]}'.encode("latin-1"),
            ]
        ),
    )
)
def test_property_server_replies(reply, tmp_path_factory):
    """Size, nesting, encoding: an answer (logged, writable) or one line, never a traceback."""
    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.generation.backends.openai import OpenAIBackend
    from mera_multi_hf.generation.generate import log_record
    from mera_multi_hf.generation.request import Request

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replying)
    server.daemon_threads, server.paths, server.reply = True, [], reply
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    backend = OpenAIBackend("m", f"http://127.0.0.1:{server.server_port}/v1", max_retries=0)
    request = Request(task="t", split="test", id=1, prompt="q", media=[], max_new_tokens=4)
    try:
        answer = backend.generate([request])[0]
        json.dumps(log_record(request, answer, 0.0, "m"), ensure_ascii=False).encode("utf-8")
    except MeraError as err:
        assert "\n" not in str(err) and str(err)
    finally:
        backend.close()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "reply", [b'{"data": ' + DEEP.encode() + b"}", b'{"a": ' + HUGE.encode() + b"}", b"\xff\xfe"]
)
def test_a_hostile_judge_reply_is_one_line(reply, replying):
    """The judge client reads the served judge's answers through the reader too."""
    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.core.http_client import Client
    from mera_multi_hf.judge.http_judge import _json_body

    replying.reply = reply
    url = f"http://127.0.0.1:{replying.server_port}/classify"
    resp = Client(30).post(url, {"input": ["x"]})
    with pytest.raises(MeraError) as caught:
        _json_body(resp, url, lambda u, p: p)
    message = str(caught.value)
    assert message.startswith(f"the judge server at {url}") and "\n" not in message, message
