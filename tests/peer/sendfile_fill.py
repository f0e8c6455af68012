#!/usr/bin/env python3
"""sendfile bodies (issue 10): nginx with `sendfile on` serves 1 KiB, 64 KiB
and 1 MiB files to curl while reelcap traces nginx (--comm nginx, scoped to
this test's port). The capture must hold the bodies, read back from the
files (FILL records), so that in the replayed pcapng the server-to-client
stream of each response is the header and the file byte for byte, and
tshark sees each response with its status.

Then the rewrite case: reelcap is stopped (SIGSTOP: its rings hold what
nginx does meanwhile), curl fetches a fourth file, the file is rewritten
with other bytes of the same size, reelcap continues: the body must be a
hole marked "file-changed", never the new content. And with --no-file-fill
a body stays a plain length-only hole.

  sendfile_fill.py --reelcap P --reelplay P --reeltool P --work DIR
Exit 0 ok, 1 mismatch, 77 not root or nginx/tshark/curl missing (skip).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from peer_nginx import free_port, start_nginx

FAILS = []
SIZES = {"f1k": 1024, "f64k": 65536, "f1m": 1 << 20}


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


def start_nginx_here(d, port):
    files = dict(SIZES)
    files.update({"rewritten": 65536, "nofill": 65536})
    return start_nginx(d, port, files, sendfile=True)


def start_capture(args, out, extra=()):
    log = open(out + ".log", "w")
    p = subprocess.Popen([args.reelcap, "--comm", "nginx", "--port", str(args.port), "-w", out]
                         + list(extra), stdout=log, stderr=log)
    for _ in range(400):
        time.sleep(0.05)
        with open(out + ".log") as f:
            if "capturing to" in f.read():
                return p
        if p.poll() is not None:
            break
    raise RuntimeError("reelcap did not start: " + open(out + ".log").read()[-500:])


def stop_capture(p, out):
    time.sleep(0.5)  # let the rings be drained once more
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    if rc != 0:
        fail("reelcap exited %d: %s" % (rc, open(out + ".log").read()[-500:]))
    return open(out + ".log").read()


def curl(args, name, work):
    out = os.path.join(work, "got_" + name)
    rc, _, err = run(["curl", "-sS", "--fail", "-o", out,
                      "http://127.0.0.1:%d/%s" % (args.port, name)])
    if rc != 0:
        fail("curl %s: exit %d %s" % (name, rc, err))
        return None
    with open(out, "rb") as f:
        return f.read()


def follow_s2c(pcap):
    """{request target: server-to-client bytes} of every TCP stream."""
    rc, so, se = run(["tshark", "-n", "-r", pcap, "-T", "fields", "-e", "tcp.stream"])
    streams = sorted({int(x) for x in so.decode().split() if x})
    cmd = ["tshark", "-n", "-r", pcap, "-q"]
    for n in streams:
        cmd += ["-z", "follow,tcp,raw,%d" % n]
    rc, so, se = run(cmd)
    res, cur = {}, None
    for line in so.decode().splitlines():
        if line.startswith("Follow: tcp,raw"):
            cur = [bytearray(), bytearray()]
            continue
        if cur is not None and re.match(r"^\t?[0-9a-f]+$", line):
            cur[1 if line.startswith("\t") else 0] += bytes.fromhex(line.strip())
            m = re.match(rb"GET /(\S+) HTTP", bytes(cur[0]))
            if m:
                res[m.group(1).decode()] = cur[1]
    return res


def check_fill(args, work, www):
    reel = os.path.join(work, "fill.reel")
    cap = start_capture(args, reel)
    for name in SIZES:
        got = curl(args, name, work)
        if got is not None and got != open(os.path.join(www, name), "rb").read():
            fail("curl %s: the body differs from the file" % name)
    # the rewrite: the send happens while reelcap is stopped, the file is
    # rewritten before it reads it back
    cap.send_signal(signal.SIGSTOP)
    curl(args, "rewritten", work)
    with open(os.path.join(www, "rewritten"), "r+b") as f:
        f.write(os.urandom(65536))
    cap.send_signal(signal.SIGCONT)
    log = stop_capture(cap, reel)
    print(re.sub(r"(?m)^libbpf.*\n", "", log).strip(), flush=True)
    pcap = os.path.join(work, "fill.pcapng")
    rc, so, se = run([args.reelplay, reel, "-w", pcap, "--summary"])
    if rc != 0:
        fail("reelplay: exit %d %s" % (rc, se[-300:]))
        return
    summary = so.decode()
    s2c = follow_s2c(pcap)
    for name, size in SIZES.items():
        body = open(os.path.join(www, name), "rb").read()
        resp = bytes(s2c.get(name, b""))
        head, sep, rest = resp.partition(b"\r\n\r\n")
        if not sep or rest != body:
            fail("%s: the pcapng's response has %d body bytes, %s the file's %d" %
                 (name, len(rest), "equal to" if rest == body else "not", size))
        else:
            print("%s: %d body bytes in the pcapng equal the file" % (name, size), flush=True)
    rc, so, se = run(["tshark", "-n", "-r", pcap, "-d", "tcp.port==%d,http" % args.port,
                      "-Y", "http.response", "-T", "fields", "-e", "http.request.uri",
                      "-e", "http.response.code", "-e", "http.response_for.uri"])
    codes = [l.split("\t") for l in so.decode().splitlines() if l.strip()]
    ok = [c for c in codes if c[1] == "200"]
    if len(ok) < len(SIZES):
        fail("tshark sees %d responses with status 200 (%r), want >= %d" %
             (len(ok), codes, len(SIZES)))
    else:
        print("tshark: %d responses, status 200" % len(ok), flush=True)
    # the rewritten file: a marked hole of its size, not the new bytes
    new = open(os.path.join(www, "rewritten"), "rb").read()
    resp = bytes(s2c.get("rewritten", b""))
    if new[:4096] in resp:
        fail("rewritten: the pcapng has the file's new content")
    rc, so, se = run([args.reeltool, "cat", reel])
    fills = [l for l in so.decode().splitlines() if " FILL " in l]
    changed = [l for l in fills if "file-changed" in l]
    oks = [l for l in fills if " ok " in l]
    if len(changed) != 1 or " len 65536 " not in changed[0]:
        fail("rewritten: FILL records %r, want one file-changed of 65536 bytes" % fills)
    if sum(int(re.search(r" len (\d+) ", l).group(1)) for l in oks) != sum(SIZES.values()):
        fail("FILL ok records cover %r, want %d bytes" % (oks, sum(SIZES.values())))
    if "sendfile, file not read back 65536" not in summary:
        fail("summary does not count the rewritten body: %s" % summary)
    if "sendfile bytes read back from their files: %d" % sum(SIZES.values()) not in summary:
        fail("summary does not count the filled bytes: %s" % summary)


def check_no_fill(args, work, www):
    reel = os.path.join(work, "nofill.reel")
    cap = start_capture(args, reel, ["--no-file-fill"])
    curl(args, "nofill", work)
    stop_capture(cap, reel)
    rc, so, se = run([args.reeltool, "cat", reel])
    lines = so.decode().splitlines()
    if [l for l in lines if " FILL " in l]:
        fail("--no-file-fill: FILL records in the file")
    if not [l for l in lines if "sendfile out" in l and "length-only file" in l]:
        fail("--no-file-fill: no length-only sendfile chunk naming its file")
    rc, so, se = run([args.reelplay, reel, "--summary"])
    if "sendfile/splice length only 65536" not in so.decode():
        fail("--no-file-fill: summary %s" % so.decode())
    else:
        print("--no-file-fill: the body is a 65536-byte length-only hole", flush=True)


def main():
    ap = argparse.ArgumentParser()
    for a in ("reelcap", "reelplay", "reeltool", "work"):
        ap.add_argument("--" + a, required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("sendfile_fill: needs root (BPF): skipped")
        return 77
    for t in ("nginx", "tshark", "curl"):
        if not shutil.which(t):
            print("sendfile_fill: %s missing: skipped" % t)
            return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    args.port = free_port()
    ngx, www = start_nginx_here(os.path.join(args.work, "nginx"), args.port)
    try:
        check_fill(args, args.work, www)
        check_no_fill(args, args.work, www)
    finally:
        ngx.send_signal(signal.SIGTERM)
        ngx.wait()
    print("sendfile_fill: %s" % ("FAIL (%d)" % len(FAILS) if FAILS else "ok"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
