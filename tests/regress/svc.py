#!/usr/bin/env python3
"""A small HTTP/1.1 JSON service for the --replay-to tests.

    svc.py PORT [--changed]

GET /item/N   {"id":N,"name":"widget-N","price":N*10,"nonce":"<new every call>"}
POST /echo    {"got":<the request's JSON>,"nonce":"..."}
GET /health   {"ok":true,"nonce":"..."}
GET /gz       a fixed JSON text, gzip-encoded (Content-Encoding: gzip)
GET /big/N    N bytes of fixed text (bodies cut by --body-max or a snaplen)
Every response carries a "nonce" that changes on every call (the noise that
--baseline must find). With --changed (the "new build"): /item/2's name is
"gadget-2" (one body field changed) and /health answers 503 (one status
changed); everything else is the same. Prints "ready PORT" when listening.
"""
import gzip
import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHANGED = "--changed" in sys.argv[2:]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real services

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        nonce = uuid.uuid4().hex
        if self.path.startswith("/item/"):
            n = int(self.path[6:])
            name = ("gadget-%d" if CHANGED and n == 2 else "widget-%d") % n
            self.reply(200, {"id": n, "name": name, "price": n * 10, "nonce": nonce})
        elif self.path == "/gz":
            body = gzip.compress(b'{"zipped":"hello gzip hello gzip hello gzip"}', mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.startswith("/big/"):
            n = int(self.path[5:])
            body = (b"0123456789abcdef" * (n // 16 + 1))[:n]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/health":
            self.reply(503 if CHANGED else 200, {"ok": True, "nonce": nonce})
        else:
            self.reply(404, {"error": "not found", "nonce": nonce})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        got = json.loads(self.rfile.read(n) or b"null")
        self.reply(200, {"got": got, "nonce": uuid.uuid4().hex})


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
