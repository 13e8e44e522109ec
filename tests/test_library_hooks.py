"""The private hooks into other libraries (mera_multi_hf/serving/uvicorn_hook.py,
mera_multi_hf/data/datasets_hook.py), each exercised against the installed library, so that
an upgrade that breaks one fails here; and the public Hub cache API offline.py reads.

uvicorn's: a request head's deadline on a new connection (here) and on a kept-alive one
(tests/test_bounded_io.py), JSON replies to a malformed head (here, and BAD_BODIES in
tests/test_servers_hostile.py) and past limit_concurrency, and half-sent connections
closed on shutdown (tests/test_servers_hostile.py). Real servers on 127.0.0.1."""

from __future__ import annotations

import json
import select
import socket
import time

import datasets

from mera_multi_hf.core.offline import in_hub_cache
from mera_multi_hf.data.arrow_split import _files_of
from mera_multi_hf.data.datasets_hook import fingerprint
from mera_multi_hf.serving.app import Server, json_app


def _error(status: int, message: str) -> dict:
    return {"message": message, "code": status}


def _server(read_timeout: float) -> Server:
    app = json_app(_error, "hooks")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    return Server(app, _error, read_timeout=read_timeout).start()


def _reply(sock: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of the one reply before the server closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), head
    return int(head.split()[1]), json.loads(body)


def test_a_new_connections_slow_first_head_gets_a_json_408():
    server = _server(read_timeout=1.0)
    try:
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as sock:
            started = time.monotonic()
            for byte in b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 200:
                if select.select([sock], [], [], 0.05)[0]:  # the server spoke: stop
                    break
                sock.sendall(bytes([byte]))
            status, body = _reply(sock)
            waited = time.monotonic() - started
        assert status == 408 and "within 1 s" in body["message"] and 0.9 < waited < 3.0
    finally:
        server.shutdown()


def test_a_malformed_head_gets_json_with_h11s_reason():
    server = _server(read_timeout=5.0)
    try:
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n")
            status, body = _reply(sock)
        assert status == 400 and body["code"] == 400
        assert body["message"].startswith("invalid HTTP request: ")
        assert body["message"] != "invalid HTTP request: "  # h11's own words follow
    finally:
        server.shutdown()


def test_the_fingerprint_is_the_one_datasets_names_its_cache_by(tmp_path):
    datasets.Dataset.from_dict({"a": [1, 2, 3]}).save_to_disk(tmp_path / "saved")
    first, again = (datasets.load_from_disk(tmp_path / "saved") for _ in range(2))
    assert isinstance(fingerprint(first), str) and fingerprint(first)
    assert fingerprint(first) == fingerprint(again)  # the same files, the same fingerprint
    mapped = first.map(lambda row: {"b": row["a"] * 2})
    assert fingerprint(mapped) != fingerprint(first)
    # `datasets` names a transform's cache file by the fingerprint it gave the result
    assert mapped.cache_files[0]["filename"].endswith(f"cache-{fingerprint(mapped)}.arrow")


def test_a_split_is_named_by_its_files_only_when_it_is_their_rows(tmp_path):
    datasets.Dataset.from_dict({"a": list(range(10))}).save_to_disk(tmp_path / "saved")
    ds = datasets.load_from_disk(tmp_path / "saved")
    root = tmp_path.resolve()
    files, content = _files_of(ds, root)  # the files, and the hash of their rows
    assert files == ["saved/data-00000-of-00001.arrow"] and len(content) == 64
    assert _files_of(ds, root / "elsewhere") is None  # not under the cache folder
    assert _files_of(ds.shuffle(seed=0), root) is None  # an indices mapping (a file)
    assert _files_of(ds.shuffle(seed=0, keep_in_memory=True), root) is None  # (in memory)
    assert _files_of(ds.select([1, 0]), root) is None
    assert _files_of(ds.rename_column("a", "b"), root) is None  # changed in memory only
    mapped = ds.map(lambda row: {"a": row["a"] + 1})  # written to a file of its own
    files, mapped_content = _files_of(mapped, root)
    assert files == [f"saved/cache-{fingerprint(mapped)}.arrow"] and mapped_content != content
    assert _files_of(datasets.Dataset.from_dict({"a": [1]}), root) is None  # in memory


def test_the_hub_cache_is_read_as_huggingface_hub_reads_it(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "none"))
    assert not in_hub_cache("org/model")  # no cache folder at all
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--model"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (tmp_path / "hub" / "datasets--org--empty" / "snapshots").mkdir(parents=True)
    assert in_hub_cache("org/model", "model")
    assert not in_hub_cache("org/model", "dataset") and not in_hub_cache("org/other")
    assert not in_hub_cache("org/empty", "dataset")  # no snapshot in it
