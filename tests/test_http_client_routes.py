"""How core/http_client.py reaches a server, against real servers on 127.0.0.1: through
the environment's proxy (``HTTP_PROXY``, ``NO_PROXY`` obeyed), with a URL's user name
and password sent as Basic auth, and a JSON body."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mera_multi_hf.core.http_client import Client

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request with JSON naming its server; records what it was sent."""

    def log_message(self, *args):
        pass

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append(
            (self.command, self.path, dict(self.headers), self.rfile.read(length))
        )
        body = json.dumps({"server": self.server.name}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


@pytest.fixture
def servers():
    started = {}
    for name in ("target", "proxy"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        server.name, server.seen, server.daemon_threads = name, [], True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started[name] = server
    yield started
    for server in started.values():
        server.shutdown()
        server.server_close()


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def _url(server, path="/v1/models", auth=""):
    return f"http://{auth}127.0.0.1:{server.server_address[1]}{path}"


def test_the_environments_proxy_carries_the_request(servers, no_proxy_env):
    target, proxy = servers["target"], servers["proxy"]
    no_proxy_env.setenv("HTTP_PROXY", _url(proxy, path=""))
    reply = Client(10).get(_url(target))
    assert json.loads(reply.content) == {"server": "proxy"} and not target.seen
    assert proxy.seen[0][1] == _url(target)  # the absolute URL, as a proxy is asked


def test_no_proxy_sends_straight_to_the_server(servers, no_proxy_env):
    target, proxy = servers["target"], servers["proxy"]
    no_proxy_env.setenv("HTTP_PROXY", _url(proxy, path=""))
    no_proxy_env.setenv("NO_PROXY", "127.0.0.1")
    assert json.loads(Client(10).get(_url(target)).content) == {"server": "target"}
    assert not proxy.seen


def test_url_credentials_go_as_basic_auth_and_the_body_as_json(servers, no_proxy_env):
    target = servers["target"]
    reply = Client(10).post(_url(target, "/v1/x", auth="user:p%40ss@"), {"q": "кот"})
    assert reply.status == 200
    method, path, headers, body = target.seen[0]
    assert (method, path) == ("POST", "/v1/x")  # no credentials in the request line
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"user:p@ss").decode()
    assert headers["Content-Type"] == "application/json" and json.loads(body) == {"q": "кот"}


def test_an_api_key_goes_as_a_bearer_header(servers, no_proxy_env):
    target = servers["target"]
    Client(10, api_key="sk-test-key").get(_url(target))
    assert target.seen[0][2]["Authorization"] == "Bearer sk-test-key"
