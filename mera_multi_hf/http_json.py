"""A JSON-over-HTTP request handler shared by the project's small stdlib servers
(the judge's /classify server and the OpenAI-compatible chat server)."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY_BYTES = 64 * 1024 * 1024


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet unless asked: a line per request floods a run
        if getattr(self.server, "verbose", False):
            super().log_message(fmt, *args)

    @property
    def route(self) -> str:
        return self.path.split("?")[0].rstrip("/")

    def send_json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_json(self) -> dict:
        """The request's JSON object; ValueError with a message fit for a 400 reply."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length <= 0 or length > MAX_BODY_BYTES:
            raise ValueError("a JSON body with a Content-Length is required")
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError as err:
            raise ValueError(f"the body is not JSON: {err}") from None
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        return body


class JsonServer(ThreadingHTTPServer):
    """A threading server whose close also ends its keep-alive connections and waits
    for their handler threads, so no handler outlives the server (a thread left in a
    keep-alive read while the interpreter shuts down can abort the process)."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, address, handler):
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def server_close(self):
        with self._open_lock:
            still_open = list(self._open)
        for connection in still_open:  # wakes handlers waiting for a next request
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        super().server_close()  # joins the handler threads

    def serve_until_interrupted(self, banner: str) -> int:
        """Serve in the foreground (a command line server) until Ctrl+C, then close."""
        print(banner, flush=True)
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.server_close()
        return 0
