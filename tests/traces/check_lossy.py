#!/usr/bin/env python3
"""Replay of a capture with kernel ring overflow (LOST records):

  check_lossy.py --dir TRACEDIR --name NAME --work WORKDIR \
      --reelplay PATH --reeltool PATH --pcap-count PATH

- reelplay NAME.reel -w out.pcapng --json out.jsonl exits 0 (LOST is not damage);
- JSON: the "lost" lines add up to the file's LOST samples (reeltool info), and
  for every connection captured + hole bytes == the bytes the close totals say
  moved ("nothing silent"); some connection has holes;
- pcapng: libpcap reads it; tshark sees sequence jumps (tcp.analysis.lost_segment)
  and packet comments saying how many bytes are missing and why;
- with a manifest.txt (reel_peer): each connection's byte totals equal the
  manifest's; with a truth.txt (HTTP): every request appears per side, the
  transactions whose response was lost are marked (hole), and the later ones on
  the same connection are recovered with the status the client saw; tshark
  shows every request and the recovered responses.
Exit 0 ok, 1 failure (printed), 77 tshark missing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok: " + msg)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def tshark(pcap, hints, yfilter, fields):
    cmd = ["tshark", "-n", "-r", pcap] + hints + ["-Y", yfilter, "-T", "fields",
                                                   "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        cmd += ["-e", f]
    rc, so, se = run(cmd)
    if rc != 0:
        fail("%s: exit %d: %s" % (" ".join(cmd), rc, se.strip()))
    return [line.split("\t") for line in so.splitlines()]


def main():
    ap = argparse.ArgumentParser()
    for a in ("--dir", "--name", "--work", "--reelplay", "--reeltool", "--pcap-count"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("SKIP: tshark not installed")
        return 77
    os.makedirs(args.work, exist_ok=True)
    reel = os.path.join(args.dir, args.name + ".reel")
    pcap = os.path.join(args.work, args.name + ".lossy.pcapng")
    jsonl = os.path.join(args.work, args.name + ".lossy.jsonl")

    # --each-end: the transactions of both traced ends, to check each side
    rc, so, se = run([args.reelplay, reel, "-w", pcap, "--json", jsonl, "--each-end"])
    if rc != 0:
        fail("reelplay %s: exit %d (LOST is not damage): %s" % (reel, rc, se.strip()))
    else:
        ok("reelplay exits 0")
    hints = []
    for m in re.finditer(r"tshark((?: -d \S+)+)", se):
        hints += m.group(1).split()

    rc, info, se = run([args.reeltool, "info", reel])
    m = re.search(r"^lost:\s+(\d+) samples", info, re.M)
    file_lost = int(m.group(1)) if m else -1
    if file_lost <= 0:
        fail("reeltool info: no LOST samples in %s (not a lossy trace?)" % reel)

    events = [json.loads(line) for line in open(jsonl)]
    lost = sum(e["samples"] for e in events if e["type"] == "lost")
    if lost != file_lost:
        fail("JSON lost lines add up to %d samples, the file has %d" % (lost, file_lost))
    else:
        ok("JSON lost lines: %d samples, as in the file" % lost)
    conns = [e for e in events if e["type"] == "conn"]
    holes = 0
    for c in conns:
        moved = c["bytes_out"] + c["bytes_in"]
        seen = c["captured_out"] + c["captured_in"] + c["hole_bytes"]
        if moved != seen:
            fail("conn %d (%s fd %d): captured %d + %d + holes %d = %d != moved %d + %d" % (
                c["conn"], c["comm"], c["fd"], c["captured_out"], c["captured_in"],
                c["hole_bytes"], seen, c["bytes_out"], c["bytes_in"]))
        holes += c["holes"]
    if not holes:
        fail("no connection has holes")
    else:
        ok("%d connections: captured + hole bytes == bytes moved on each; %d holes" % (
            len(conns), holes))

    rc, so, se = run([args.pcap_count, pcap])
    if rc != 0:
        fail("libpcap cannot read %s: %s" % (pcap, se.strip()))
    else:
        ok("libpcap reads %s: %s" % (pcap, so.strip()))
    jumps = tshark(pcap, hints, "tcp.analysis.lost_segment", ["frame.number"])
    comments = tshark(pcap, hints, 'frame.comment contains "missing"', ["frame.comment"])
    if not jumps:
        fail("tshark sees no sequence jump (tcp.analysis.lost_segment)")
    if not comments:
        fail("no packet comment says bytes are missing")
    for (c,) in comments:
        for m in re.finditer(r"(\d+) bytes missing here at stream position \d+ \(([^)]*)", c):
            if not re.search(r"LOST|snaplen|DROP|not captured|length only|close", m.group(2)):
                fail("hole comment without a reason: %r" % m.group(0))
    if jumps and comments:
        ok("tshark: %d sequence jumps, %d frames with a 'bytes missing' comment" % (
            len(jumps), len(comments)))

    manifest = os.path.join(args.dir, "manifest.txt")
    truth = os.path.join(args.dir, "truth.txt")
    if os.path.exists(manifest):
        check_manifest(manifest, conns)
    if os.path.exists(truth):
        check_truth(truth, events, pcap, hints)
        check_once(args, reel, truth, events)
    if FAILS:
        print("%s: %d check(s) failed" % (args.name, len(FAILS)))
        return 1
    print("%s: lossy replay ok" % args.name)
    return 0


def check_manifest(path, conns):
    by_ino = {c["ino"]: c for c in conns}
    n = 0
    for line in open(path):
        if not line.startswith("conn "):
            continue
        kv = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
        for side, out, inn in (("client", "c2s_bytes", "s2c_bytes"),
                               ("server", "s2c_bytes", "c2s_bytes")):
            c = by_ino.get(int(kv[side + "_ino"]))
            if not c:
                fail("manifest conn %s %s ino %s: no connection in the JSON" % (
                    kv["id"], side, kv[side + "_ino"]))
                continue
            if (c["bytes_out"], c["bytes_in"]) != (int(kv[out]), int(kv[inn])):
                fail("manifest conn %s %s: bytes out/in %d/%d, manifest %s/%s" % (
                    kv["id"], side, c["bytes_out"], c["bytes_in"], kv[out], kv[inn]))
            n += 1
    ok("%d sockets of manifest.txt: byte totals match" % n)


def check_once(args, reel, truth, each):
    """Without --each-end a connection traced at both ends reports each
    transaction once, from one end, naming the other as its peer: the lines
    are those of that end in the --each-end output, plus the peer fields."""
    jsonl = os.path.join(args.work, args.name + ".once.jsonl")
    rc, so, se = run([args.reelplay, reel, "--json", jsonl])
    if rc != 0:
        fail("reelplay %s --json: exit %d: %s" % (reel, rc, se.strip()))
        return
    txns = [json.loads(line) for line in open(jsonl)]
    txns = [e for e in txns if e["type"] == "txn"]
    peers = {(e.get("peer_pid"), e.get("peer_comm")) for e in txns}
    stripped = []
    for e in txns:
        e = dict(e)
        for k in ("peer_conn", "peer_pid", "peer_comm"):
            e.pop(k, None)
        stripped.append(e)
    conns = {e["conn"] for e in txns}
    want = [e for e in each if e["type"] == "txn" and e["conn"] in conns]
    if not txns or stripped != want:
        fail("once: %d transactions, not those of conn(s) %r in the --each-end output (%d)" % (
            len(txns), sorted(conns), len(want)))
    elif len(peers) != 1 or None in list(peers)[0]:
        fail("once: transactions name peers %r, want one peer end" % (peers,))
    else:
        ok("once: %d transactions from one end, naming the other end %r" % (
            len(txns), list(peers)[0]))


def check_truth(path, events, pcap, hints):
    t = {}
    reqs = []
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "REQ":
            reqs.append((f[1], f[2], f[3]))
        else:
            t[f[0]] = f[1:]
    kept_txns = []
    for side in ("client", "server"):
        kind, value = t[side + "_filter"]
        txns = [e for e in events if e["type"] == "txn" and
                (e["comm"] == value if kind == "--comm" else e["pid"] == int(value))]
        got = [(e["method"], e["target"]) for e in txns]
        if side == "client":
            kept_txns = txns
        if got != [(m, p) for m, p, _ in reqs]:
            fail("%s side: transactions %r, truth %r" % (side, got, reqs))
            continue
        marked, recovered, first_hole = 0, 0, None
        for i, (e, (m, p, st)) in enumerate(zip(txns, reqs)):
            if e["hole"]:
                marked += 1
                if first_hole is None:
                    first_hole = i
                if "hole_resp" not in e["flags"] and "hole_req" not in e["flags"]:
                    fail("%s side: %s %s hole without hole_req/hole_resp flag" % (side, m, p))
            elif str(e["status"]) != st:
                fail("%s side: %s %s status %s, client saw %s, and no hole marked" % (
                    side, m, p, e["status"], st))
            elif first_hole is not None:
                recovered += 1
        if not marked:
            fail("%s side: no transaction marked with a hole" % side)
        elif not recovered:
            fail("%s side: nothing recovered after the first hole" % side)
        else:
            ok("%s side: %d transactions, %d marked (hole), %d recovered after a hole" % (
                side, len(txns), marked, recovered))
    rows = tshark(pcap, hints, "http.request", ["http.request.method", "http.request.uri"])
    got = [tuple(r[:2]) for r in rows]
    if got != [(m, p) for m, p, _ in reqs]:
        fail("tshark requests %r, truth %r" % (got, reqs))
    else:
        ok("tshark shows the %d requests" % len(got))
    # tshark pairs responses with requests by order, which a lost response
    # shifts: compare the codes it shows with the statuses of the responses
    # that were not lost (in order)
    rows = tshark(pcap, hints, "http.response", ["http.response.code"])
    got = [r[0] for r in rows]
    want = [st for e, (m, p, st) in zip(kept_txns, reqs) if not e["hole"]]
    if got != want:
        fail("tshark response codes %r, truth (responses not lost) %r" % (got, want))
    else:
        ok("tshark: %d responses with the statuses the client saw" % len(got))

if __name__ == "__main__":
    sys.exit(main())
