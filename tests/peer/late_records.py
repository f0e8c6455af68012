#!/usr/bin/env python3
"""Records on time from every CPU on a busy host (issue 22).

  late_records.py --reelcap P --reelplay P --late P --work DIR [--runs N]
                  [--flush-ms MS] [--margin-ms MS]

A `--port` capture (TLS on, the default) of a small HTTP service that gets
a POST every 0.4 s for 10 s, while the test runs beside it:
  - a CPU hog per CPU (a busy loop each, at nice 0 like the service);
  - an exec loop of programs linked with libssl and libgnutls (openssl,
    gnutls-cli, curl): every exec is examined by reelcap's TLS discovery;
  - a second reelcap (TLS on too) on another port: another BPF user with
    its own uprobes on the same libraries.
Then:
  - reel_late -m FLUSH+MARGIN: every kernel record of every CPU is in a
    block that closed within --flush-ms + the margin capture/README.md
    states of its timestamp (a lower bound on each record's wait, from the
    blocks' and records' times: never an excuse for a late one);
  - reelplay --json: one transaction per POST made, each with its response
    (status 201, the body the service answered), no hole in any transaction
    or connection of the service's port.
Every process the test starts runs in its own process group, killed by
that group's id at the end.

Exit 0 ok, 1 a check failed, 77 not root or a program missing (skip).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_nginx import free_port, wait_port  # noqa: E402

POSTS = 25  # a POST every 0.4 s for 10 s
PERIOD = 0.4

SERVER = r"""
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        out = json.dumps({"got": body.decode(), "len": n}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

EXEC_LOOP = ("while :; do openssl version; gnutls-cli --version; curl --version; "
             "done >/dev/null 2>&1")
HOG = "while :; do :; done"


class Procs:
    """Processes started by the test, each the leader of its own group."""

    def __init__(self):
        self.ps = []

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.ps.append(p)
        return p

    def stop(self, p, sig=signal.SIGKILL, timeout=10):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            return p.wait()

    def stop_all(self):
        for p in reversed(self.ps):
            if p.poll() is None:
                self.stop(p)
            else:  # the leader is gone: its group may not be
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        self.ps = []


def wait_ready(log_path, p, what, timeout=60):
    """Waits for reelcap's readiness line in its stderr log."""
    end = time.time() + timeout
    while time.time() < end:
        with open(log_path, "rb") as f:
            if b"capturing to" in f.read():
                return True
        if p.poll() is not None:
            break
        time.sleep(0.05)
    with open(log_path, "rb") as f:
        print("%s did not start: %s" % (what, f.read().decode("utf-8", "replace")[-800:]))
    return False


class Watcher(threading.Thread):
    """Notes when the file grows: "MONO_NS SIZE" lines (CLOCK_MONOTONIC,
    the clock of the records' timestamps), polled every 10 ms, until
    stopped (after reelcap exited: the blocks written at close too)."""

    def __init__(self, path, log):
        super().__init__(daemon=True)
        self.path, self.log, self.halt = path, log, threading.Event()

    def run(self):
        last = -1
        with open(self.log, "w") as out:
            while True:
                done = self.halt.is_set()
                try:
                    size = os.stat(self.path).st_size
                except FileNotFoundError:
                    size = -1
                if size > last:
                    out.write("%d %d\n" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC), size))
                    last = size
                if done:
                    return
                time.sleep(0.01)


def posts(port):
    """POSTs every PERIOD s, a new connection each; the bodies sent."""
    sent = []
    t0 = time.time()
    for i in range(POSTS):
        time.sleep(max(0.0, t0 + i * PERIOD - time.time()))
        body = '{"item":"thing%d"}' % i
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/api/orders", body=body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status != 201 or json.loads(data)["got"] != body:
            raise RuntimeError("POST %d: status %d, %r" % (i, r.status, data))
        sent.append(body)
    return sent


def check_replay(args, reel, port, sent):
    """reelplay --json: one paired transaction per POST, no holes."""
    r = subprocess.run([args.reelplay, reel, "--port", str(port), "--json", "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    errs = []
    if r.returncode != 0:
        errs.append("reelplay exited %d: %s" % (r.returncode, r.stderr.decode()[-500:]))
    txns, conns = [], []
    for line in r.stdout.decode().splitlines():
        j = json.loads(line)
        if j.get("type") == "txn":
            txns.append(j)
        elif j.get("type") == "conn":
            conns.append(j)
    got = []
    for t in txns:
        body = t.get("http", {}).get("req", {}).get("body", {}).get("data")
        resp = t.get("http", {}).get("resp", {}).get("body", {}).get("data", "")
        if (t.get("method") != "POST" or t.get("status") != 201 or t.get("hole")
                or t.get("flags") or t.get("error")):
            errs.append("transaction not paired whole: method %s status %s flags %s "
                        "hole_causes %s (req_ts %s)" %
                        (t.get("method"), t.get("status"), t.get("flags"),
                         t.get("hole_causes"), t.get("req_ts_ns")))
        elif json.loads(resp).get("got") != body:
            errs.append("response %r does not answer request %r" % (resp, body))
        got.append(body)
    if sorted(got) != sorted(sent):
        errs.append("%d transactions for %d POSTs; missing %s, extra %s" %
                    (len(got), len(sent), sorted(set(sent) - set(got))[:5],
                     sorted(set(got) - set(sent))[:5]))
    holes = sum(c.get("holes", 0) for c in conns)
    if holes:
        errs.append("%d holes in the connections of port %d (%d bytes)" %
                    (holes, port, sum(c.get("hole_bytes", 0) for c in conns)))
    return errs, len(got)


def one_run(args, run, procs):
    work = os.path.join(args.work, "run%d" % run)
    os.makedirs(work)
    ncpu = len(os.sched_getaffinity(0))
    port, port2 = free_port(), free_port()
    while port2 == port:
        port2 = free_port()
    reel, log = os.path.join(work, "cap.reel"), os.path.join(work, "reelcap.log")
    growth = os.path.join(work, "growth.txt")
    reel2, log2 = os.path.join(work, "other.reel"), os.path.join(work, "other.log")
    errs = []
    srv = procs.start([sys.executable, "-c", SERVER, str(port)],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_port(port):
        return ["the service did not listen on %d" % port]
    with open(log2, "wb") as lf:
        other = procs.start([args.reelcap, "-q", "-w", reel2, "--port", str(port2)],
                            stdout=subprocess.DEVNULL, stderr=lf)
    for _ in range(ncpu):
        procs.start(["sh", "-c", HOG])
    procs.start(["sh", "-c", EXEC_LOOP])
    with open(log, "wb") as lf:
        cap = procs.start([args.reelcap, "-w", reel, "--port", str(port),
                           "--flush-ms", str(args.flush_ms)],
                          stdout=subprocess.DEVNULL, stderr=lf)
    watch = Watcher(reel, growth)
    watch.start()
    if not wait_ready(log, cap, "reelcap"):
        return ["reelcap did not start"]
    try:
        sent = posts(port)
    except (OSError, RuntimeError, ValueError) as e:
        return ["the client failed: %s" % e]
    time.sleep(0.5)
    rc = procs.stop(cap, signal.SIGINT, timeout=60)
    watch.halt.set()
    watch.join()
    if rc != 0:
        errs.append("reelcap exited %d" % rc)
    if other.poll() is not None:
        errs.append("the second reelcap exited early (%s)" % other.returncode)
    procs.stop_all()
    with open(log, "rb") as f:
        tail = f.read().decode("utf-8", "replace")
    limit = args.flush_ms + args.margin_ms
    r = subprocess.run([args.late, "-m", str(limit), "-t", growth, reel],
                       stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    late = r.stdout.decode()
    print("run %d: %s" % (run, late.strip().replace("\n", "\n       ")), flush=True)
    if r.returncode != 0:
        errs.append("records reached the file later than %d ms after their timestamp:\n%s"
                    % (limit, late))
        subprocess.run([args.late, "-v", "-t", growth, reel])
    perr, n = check_replay(args, reel, port, sent)
    errs += perr
    print("run %d: %d transactions paired of %d POSTs" % (run, n, len(sent)), flush=True)
    if errs:
        print("reelcap's stderr:\n" + tail[-1500:])
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reelcap", required=True)
    ap.add_argument("--reelplay", required=True)
    ap.add_argument("--late", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--flush-ms", type=int, default=1000)
    # what capture/README.md "Records on time" states: the drain's sweep
    # period and its 100 ms poll, a ring read per pass, and a block closed
    # at most a poll cycle after its age
    ap.add_argument("--margin-ms", type=int, default=500)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return 77
    for prog in ("openssl", "gnutls-cli", "curl"):
        if subprocess.run(["sh", "-c", "command -v " + prog],
                          stdout=subprocess.DEVNULL).returncode:
            print("skip: %s not installed" % prog)
            return 77
    if os.path.exists(args.work):
        subprocess.run(["rm", "-rf", args.work])
    os.makedirs(args.work)
    failed = 0
    for run in range(1, args.runs + 1):
        procs = Procs()
        try:
            errs = one_run(args, run, procs)
        finally:
            procs.stop_all()
        for e in errs:
            print("FAIL run %d: %s" % (run, e), flush=True)
        failed += bool(errs)
    print("%d of %d runs failed" % (failed, args.runs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
