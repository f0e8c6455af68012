#!/usr/bin/env python3
"""Both ends traced, each byte copied once (bpf/ABI.md "TWIN").

  twin_ends.py --reelcap P --reelplay P --reeltool P --peer P --check P --work DIR

1. reel_peer (every syscall variant, TCP, UDP, Unix; both ends in one
   capture) captured twice: by default and with --no-twin. reel_check -w:
   every byte of every call at its position, equal to what the peer sent,
   and every TWIN chunk's bytes captured by the other end. The default
   capture must have TWIN bytes, the --no-twin one none. Then each end
   replayed alone (--pid) into pcapng: every stream that is not length-only
   followed with tshark equals the peer's bytes, both directions.
2. curl against nginx (sendfile off: the bodies pass through write), both
   traced (--port), 64 KiB and 1 MiB bodies, by default and with --no-twin:
   the pcapng's server-to-client stream of each request is the response
   header and the file, byte for byte; the curl end replayed alone (--pid)
   too; reeltool info counts TWIN bytes apart (twin_bytes > 0 by default, 0
   with --no-twin) and its summary says none are missing.

A capture whose rings filled (LOST, overload cuts) is retried, up to 3
times. Exit 0 ok, 1 mismatch, 77 not root or tshark/nginx missing (skip).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whole_calls as wc  # noqa: E402  (shared follow/compare helpers)
from peer_nginx import free_port, start_nginx  # noqa: E402

ATTEMPTS = 3
FILES = {"b64k.bin": 65536, "b1m.bin": 1 << 20}


def fail(msg):
    wc.fail(msg)


def twin_of(summary):
    m = re.search(r"(\d+) twin", summary)
    return int(m.group(1)) if m else -1


def peer_case(args, twin):
    tag = "twin" if twin else "no-twin"
    for attempt in range(1, ATTEMPTS + 1):
        work = os.path.join(args.work, "peer.%s.%d" % (tag, attempt))
        os.makedirs(work)
        reel, man = os.path.join(work, "cap.reel"), os.path.join(work, "manifest.txt")
        cmd = [args.reelcap, "--ring-pages", wc.RING_PAGES, "-w", reel]
        if not twin:
            cmd.append("--no-twin")
        rc, _, log = wc.run(cmd + ["--", "nice", "-n", "10", args.peer, "-q", "--manifest",
                                   man])
        if rc != 0:
            fail("%s: reelcap -- reel_peer exited %d: %s" % (tag, rc, log[-500:]))
            return
        rc, out, err = wc.run([args.check, "-w", reel, man])
        out = out.decode()
        summary = out.strip().splitlines()[-1] if out.strip() else err
        if rc != 0 and wc.rings_filled(log) and attempt < ATTEMPTS:
            print("%s attempt %d: the rings filled (%s); capturing again" %
                  (tag, attempt, summary), flush=True)
            continue
        if rc != 0:
            fail("%s: reel_check -w: %s\n%s" % (tag, summary, out[-2000:]))
            return
        n = twin_of(summary)
        if twin and n <= 0:
            fail("%s: no TWIN bytes in a capture of both ends (%s)" % (tag, summary))
        if not twin and n != 0:
            fail("%s: %d TWIN bytes with --no-twin" % (tag, n))
        conns = wc.manifest(man)
        k = wc.check_pcap_side(args, reel, conns, "client", work)
        k += wc.check_pcap_side(args, reel, conns, "server", work)
        print("reel_peer %s: %s; %d streams equal in tshark" % (tag, summary, k), flush=True)
        return


def capture_nginx(args, port, reel, twin):
    log = open(reel + ".log", "w")
    cmd = [args.reelcap, "--ring-pages", wc.RING_PAGES, "--port", str(port), "-w", reel]
    if not twin:
        cmd.append("--no-twin")
    p = subprocess.Popen(cmd, stdout=log, stderr=log)
    for _ in range(400):
        time.sleep(0.05)
        with open(reel + ".log") as f:
            if "capturing to" in f.read():
                return p
        if p.poll() is not None:
            break
    raise RuntimeError("reelcap did not start: " + open(reel + ".log").read()[-500:])


def check_curl_pcap(args, reel, www, work, name, pids=()):
    pcap = os.path.join(work, name + ".pcapng")
    cmd = [args.reelplay, reel, "-q", "-w", pcap]
    for p in pids:
        cmd += ["--pid", str(p)]
    rc, _, se = wc.run(cmd)
    if rc != 0:
        fail("reelplay %s: exit %d: %s" % (" ".join(cmd[1:]), rc, se[-300:]))
        return 0
    got = {}
    for _, data in wc.follow_all(pcap, wc.pcap_streams(pcap)):
        # one keep-alive connection: the responses in the order of the requests
        resp = bytes(data[1])
        for m in re.finditer(rb"GET /(\S+) HTTP", bytes(data[0])):
            head, sep, rest = resp.partition(b"\r\n\r\n")
            cl = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            if not sep or not cl:
                break
            got.setdefault(m.group(1).decode(), rest[:int(cl.group(1))])
            resp = rest[int(cl.group(1)):]
    ok = 0
    for f, size in FILES.items():
        with open(os.path.join(www, f), "rb") as fh:
            body = fh.read()
        if got.get(f) is None:
            fail("%s: no response for %s" % (name, f))
        elif got[f] != body:
            fail("%s %s: %d body bytes in the pcapng, the file has %d" %
                 (name, f, len(got[f]), size))
        else:
            ok += 1
    return ok


def curl_case(args, twin):
    tag = "twin" if twin else "no-twin"
    for attempt in range(1, ATTEMPTS + 1):
        work = os.path.join(args.work, "nginx.%s.%d" % (tag, attempt))
        os.makedirs(work)
        port = free_port()
        srv, www = start_nginx(os.path.join(work, "nginx"), port, FILES, sendfile=False)
        reel = os.path.join(work, "cap.reel")
        try:
            cap = capture_nginx(args, port, reel, twin)
            # one curl, one keep-alive connection for both files
            cmd = ["curl", "-sS", "--fail"]
            for f in FILES:
                cmd += ["-o", os.path.join(work, "got_" + f),
                        "http://127.0.0.1:%d/%s" % (port, f)]
            curl = subprocess.Popen(cmd, stderr=subprocess.PIPE)
            cpid = curl.pid
            _, err = curl.communicate()
            time.sleep(0.5)
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=60)
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait()
        log = open(reel + ".log").read()
        if curl.returncode != 0:
            fail("%s: curl exit %d %s" % (tag, curl.returncode, err))
            return
        if wc.rings_filled(log) and attempt < ATTEMPTS:
            print("nginx %s attempt %d: the rings filled; capturing again" % (tag, attempt))
            continue
        rc, so, se = wc.run([args.reeltool, "info", "--json", reel])
        info = json.loads(so) if rc == 0 else {}
        n = info.get("twin_bytes", -1)
        if (twin and n <= 0) or (not twin and n != 0):
            fail("nginx %s: reeltool info twin_bytes %d" % (tag, n))
        rc, so, se = wc.run([args.reelplay, reel, "--summary"])
        miss = re.search(r"holes \d+ \((\d+) bytes missing\)", so.decode())
        if not miss or int(miss.group(1)):
            fail("nginx %s: reelplay --summary: %s" % (tag, miss.group(0) if miss else so[-300:]))
        ok = check_curl_pcap(args, reel, www, work, "both")
        ok += check_curl_pcap(args, reel, www, work, "curl_end", [cpid])
        print("nginx %s: %d TWIN bytes; %d of %d bodies equal in tshark" %
              (tag, n, ok, 2 * len(FILES)), flush=True)
        return


def main():
    ap = argparse.ArgumentParser()
    for a in ("reelcap", "reelplay", "reeltool", "peer", "check", "work"):
        ap.add_argument("--" + a, required=True)
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("tshark") or not shutil.which("nginx"):
        print("skip: needs root, tshark and nginx")
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    for twin in (True, False):
        peer_case(args, twin)
        curl_case(args, twin)
    if wc.FAILS:
        print("twin_ends: %d failures" % len(wc.FAILS))
        return 1
    print("twin_ends: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
