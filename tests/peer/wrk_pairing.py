#!/usr/bin/env python3
"""Pairing under a saturating load (issue 10, "Overload"): wrk against nginx
(64 KiB bodies, keep-alive), both ends traced with the default rings, then
replayed: of the transactions whose request line or status line was
captured, how many have both (paired).

  wrk_pairing.py --reelcap P --reelplay P --work DIR [--seconds 10]
                 [--sendfile] [--ring-pages N] [--min-percent 95]

Prints wrk's request count, the capture's LOST/DROP and overload figures,
and the pairing figures. A measurement (it saturates both CPUs for the
run), not part of the test suite. Exit 0 when the paired share reaches
--min-percent, 1 below it, 77 not root or nginx/wrk missing.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys

from peer_nginx import free_port, start_nginx


def main():
    ap = argparse.ArgumentParser()
    for a in ("reelcap", "reelplay", "work"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--sendfile", action="store_true")
    ap.add_argument("--ring-pages")
    ap.add_argument("--min-percent", type=float, default=95.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("wrk_pairing: needs root (BPF): skipped")
        return 77
    if not shutil.which("nginx") or not shutil.which("wrk"):
        print("wrk_pairing: nginx or wrk missing: skipped")
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    port = free_port()
    ngx, _ = start_nginx(os.path.join(args.work, "nginx"), port, {"f64k": 65536},
                         sendfile=args.sendfile)
    reel = os.path.join(args.work, "wrk.reel")
    cmd = [args.reelcap, "-p", str(ngx.pid), "-w", reel]
    if args.ring_pages:
        cmd += ["--ring-pages", args.ring_pages]
    cmd += ["--", "wrk", "-t1", "-c%d" % args.connections, "-d%ds" % args.seconds,
            "http://127.0.0.1:%d/f64k" % port]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        ngx.send_signal(signal.SIGTERM)
        ngx.wait()
    out, err = r.stdout.decode(), r.stderr.decode()
    if r.returncode != 0:
        print("reelcap -- wrk: exit %d: %s" % (r.returncode, err[-600:]))
        return 1
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    print("wrk: %d requests in %d s, %d connections, sendfile %s" %
          (reqs, args.seconds, args.connections, "on" if args.sendfile else "off"))
    for line in err.splitlines():
        if "final:" in line or "kernel:" in line or "overload" in line:
            print("reelcap: " + line.strip())
    p = subprocess.run([args.reelplay, reel, "--json", "-"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    txns = [json.loads(l) for l in p.stdout.decode().splitlines() if '"type":"txn"' in l]
    # Count each end's view once: a connection traced at both ends is one
    # transaction per exchange in the JSON (mirrored ends are merged).
    req = [t for t in txns if t.get("method")]
    resp = [t for t in txns if t.get("status", 0) > 0]
    both = [t for t in req if t.get("status", 0) > 0]
    seen = len(req) + len(resp) - len(both)
    pct = 100.0 * len(both) / seen if seen else 0.0
    print("replay: %d transactions; %d with a request line, %d with a status line, "
          "%d with both (paired): %.2f%% of %d" %
          (len(txns), len(req), len(resp), len(both), pct, seen))
    s = subprocess.run([args.reelplay, reel, "--summary"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL).stdout.decode()
    for line in s.splitlines():
        if line.startswith(("LOST", "captured payload", "missing bytes by cause")):
            print("summary: " + line)
    return 0 if pct >= args.min_percent else 1


if __name__ == "__main__":
    sys.exit(main())
