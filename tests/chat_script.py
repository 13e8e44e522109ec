"""The start of a script that runs a command in one process with a chat server on
127.0.0.1 beside it (tests that look at that process's modules or heap): the server
answers "A" to every chat request and calls the script's ``on_request()`` first."""

CHAT_SERVER = r"""
import gc, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Chat(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, doc):
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "m"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        on_request()
        self._send({"choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}}]})

server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
threading.Thread(target=server.serve_forever, daemon=True).start()
"""
