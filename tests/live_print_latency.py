#!/usr/bin/env python3
"""live_print_latency.py REELCAP: reelcap --print shows a transaction while
the traced command is still running.

The command is `sh -c 'curl URL; echo MARKER; sleep 5'` against an HTTP server
of this test (outside the capture). reelcap's stdout is read line by line as
it comes, each line stamped with the time it arrived: the TXN line of the GET
must arrive within 1 s of the marker (which sh prints once curl has its
response) and before the command exits (5 s later). Before reelcap ticked the
pipeline from its drain, the line came only when the command exited.
Needs root (BPF): exit 77 (skipped) otherwise."""
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time

MARKER = "reel-live-print-marker"
BOUND_S = 1.0  # generous: the drain reads every ring each 20 ms
SLEEP_S = 5


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"live print test body\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    if os.geteuid() != 0:
        print("SKIP: capturing needs root")
        return 77
    reelcap = sys.argv[1]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="reel-live-latency.")
    url = "http://127.0.0.1:%d/live" % port
    cmd = [reelcap, "-q", "-w", os.path.join(work, "t.reel"), "--print", "--port", str(port),
           "--", "sh", "-c", "curl -s -o /dev/null %s; echo %s; sleep %d" % (url, MARKER, SLEEP_S)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    lines = []  # (seconds since start, text)
    buf = b""
    while True:
        chunk = p.stdout.read1(65536) if hasattr(p.stdout, "read1") else os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        now = time.monotonic() - t0
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append((now, line.decode("utf-8", "replace")))
    rc = p.wait()
    t_exit = time.monotonic() - t0
    err = p.stderr.read().decode("utf-8", "replace")
    srv.shutdown()
    for t, l in lines:
        print("%7.3f %s" % (t, l))
    if rc != 0:
        print("FAIL: reelcap exited %d: %s" % (rc, err))
        return 1
    marker = [t for t, l in lines if l == MARKER]
    txn = [t for t, l in lines if " TXN " in l and "GET /live" in l and "status 200" in l]
    if not marker:
        print("FAIL: the command's marker line never came")
        return 1
    if len(txn) != 1:
        print("FAIL: want 1 TXN line for GET /live status 200, got %d" % len(txn))
        return 1
    delay = txn[0] - marker[0]
    print("marker at %.3f s, TXN at %.3f s (%+.3f s), reelcap exited at %.3f s"
          % (marker[0], txn[0], delay, t_exit))
    if delay > BOUND_S:
        print("FAIL: the TXN line came %.3f s after the response (bound %.1f s)" % (delay, BOUND_S))
        return 1
    if txn[0] >= t_exit - 1.0:
        print("FAIL: the TXN line came only as reelcap exited")
        return 1
    print("ok: live --print showed the transaction %.3f s after the response, %.1f s before "
          "the command exited" % (delay, t_exit - txn[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
