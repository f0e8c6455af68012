#!/usr/bin/env python3
"""tshark agrees with the peers: replays tests/traces/NAME/NAME.reel into pcapng
and checks, with tshark, that the synthesized packets show what the client did
(tests/traces/NAME/truth.txt, written at recording time) and carry, byte for
byte, the payload the peers moved (the DATA payloads of the .reel file, read
with `reeltool cat --json --payload`).

  check_tshark.py --name NAME --dir TRACEDIR --work WORKDIR \
      --reelplay PATH --reeltool PATH --pcap-count PATH

The whole file is replayed once (must exit 0, print decode hints, and be read
back by libpcap and tshark); then each side (truth.txt client_filter /
server_filter: both ends of every connection were captured) is replayed into
its own pcapng and checked: protocol fields against truth.txt, and every TCP/UDP
conversation followed (`-z follow,tcp|udp,raw`) against the payload bytes.
Exit 0 ok, 1 a mismatch (printed), 77 tshark missing (skip).
"""
import argparse
import base64
import collections
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


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def read_truth(path):
    t = {"lines": []}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key in ("client_filter", "server_filter", "port", "connections"):
                t[key] = rest
            else:
                t["lines"].append((key, rest))
    return t


def replay(args, out, extra):
    """reelplay NAME.reel EXTRA -w OUT; returns the tshark -d options it hinted."""
    cmd = [args.reelplay, os.path.join(args.dir, args.name + ".reel")] + extra + ["-w", out]
    rc, so, se = run(cmd)
    if rc != 0:
        fail("%s: exit %d: %s" % (" ".join(cmd), rc, se.strip()))
    hints = []
    for m in re.finditer(r"tshark((?: -d \S+)+)", se):
        hints += m.group(1).split()
    return hints


def tshark_fields(pcap, hints, fields, yfilter=None):
    cmd = ["tshark", "-n", "-r", pcap] + hints + ["-T", "fields", "-E", "occurrence=a",
                                                   "-E", "aggregator=|"]
    if yfilter:
        cmd += ["-Y", yfilter]
    for f in fields:
        cmd += ["-e", f]
    rc, so, se = run(cmd)
    if rc != 0:
        fail("%s: exit %d: %s" % (" ".join(cmd), rc, se.strip()))
    rows = []
    for line in so.splitlines():
        rows.append(line.split("\t"))
    return rows


def expect_eq(what, got, want):
    if got != want:
        fail("%s:\n   tshark: %r\n   truth:  %r" % (what, got, want))
    else:
        print("ok: %s (%d)" % (what, len(want)))


# ------------------------------------------------------------------ protocols

def check_http1(pcap, hints, truth, side):
    want = [tuple(rest.split()) for k, rest in truth["lines"] if k == "REQ"]
    rows = tshark_fields(pcap, hints, ["http.request.method", "http.request.uri"], "http.request")
    expect_eq(side + " HTTP requests (method, uri)", [tuple(r[:2]) for r in rows],
              [(m, u) for m, u, _ in want])
    rows = tshark_fields(pcap, hints, ["http.response.code"], "http.response")
    expect_eq(side + " HTTP status codes", [r[0] for r in rows], [s for _, _, s in want])


def check_http2(pcap, hints, truth, side):
    want = [tuple(rest.split()) for k, rest in truth["lines"] if k == "REQ"]
    rows = tshark_fields(pcap, hints, ["http2.headers.method", "http2.headers.path",
                                       "http2.headers.status"], "http2.type == 1")
    reqs, stats = [], []
    for r in rows:
        for m, p in zip(r[0].split("|") if r[0] else [], r[1].split("|") if r[1] else []):
            reqs.append((m, p))
        stats += [s for s in r[2].split("|") if s]
    expect_eq(side + " HTTP/2 requests (:method, :path)", reqs, [(m, p) for m, p, _ in want])
    expect_eq(side + " HTTP/2 :status", stats, [s for _, _, s in want])


RCODES = {"NOERROR": "0", "FORMERR": "1", "SERVFAIL": "2", "NXDOMAIN": "3", "NOTIMP": "4",
          "REFUSED": "5"}
QTYPES = {"A": "1", "AAAA": "28", "CNAME": "5", "MX": "15", "TXT": "16", "PTR": "12"}


def check_dns(pcap, hints, truth, side):
    want = []
    for k, rest in truth["lines"]:
        if k != "Q":
            continue
        f = rest.split()
        name, qtype, transport, rcode = f[:4]
        answers = f[4] if len(f) > 4 else ""
        want.append((name, qtype, transport, rcode, answers))
    rows = tshark_fields(pcap, hints, ["dns.flags.response", "dns.qry.name", "dns.qry.type",
                                       "dns.flags.rcode", "dns.a", "dns.aaaa", "tcp.stream",
                                       "udp.stream"], "dns")
    queries, answers = [], []
    for r in rows:
        transport = "tcp" if r[6] else "udp"
        if r[0] in ("0", "False"):
            queries.append((r[1], r[2], transport))
        else:
            ans = ",".join(x for x in (r[4].split("|") + r[5].split("|")) if x)
            answers.append((r[1], r[2], transport, r[3], ans))
    expect_eq(side + " DNS queries (name, type, transport)", queries,
              [(n, QTYPES[t], tr) for n, t, tr, _, _ in want])
    expect_eq(side + " DNS responses (name, type, transport, rcode, answers)", answers,
              [(n, QTYPES[t], tr, RCODES[rc], a) for n, t, tr, rc, a in want])


def resp_values(row):
    """tshark RESP fields of one frame -> list of values in wire order is not
    recoverable across field types, so return (bulk strings, simple strings,
    integers, errors)."""
    def split(x):
        return [v for v in x.split("|") if v != ""] if x else []

    bulks = []
    for v in split(row[0]):
        try:
            bulks.append(bytes.fromhex(v.replace(":", "")).decode("utf-8", "replace"))
        except ValueError:
            bulks.append(v)
    return bulks, split(row[1]), split(row[2]), split(row[3]), split(row[4])


def check_redis(pcap, hints, truth, side):
    port = truth["port"]
    want_cmds, want_replies = [], []
    for k, rest in truth["lines"]:
        if k == "CMD":
            cmd, _, reply = rest.partition(" => ")
            want_cmds.append(cmd.split())
            want_replies.append(reply.strip())
        elif k == "REPEAT3":
            cmd, _, reply = rest.partition(" => ")
            for r in reply.split():
                want_cmds.append(cmd.split())
                want_replies.append(r)
    fields = ["resp.bulk_string.value", "resp.string", "resp.integer", "resp.error",
              "resp.bulk_string.length"]
    rows = tshark_fields(pcap, hints, fields, "resp && tcp.dstport == %s" % port)
    cmds = [resp_values(r)[0] for r in rows]
    expect_eq(side + " Redis commands", cmds, want_cmds)
    rows = tshark_fields(pcap, hints, fields, "resp && tcp.srcport == %s" % port)
    replies = []
    for r in rows:
        bulks, strs, ints, errs, lens = resp_values(r)
        if errs:
            replies.append(" ".join(errs).strip())
        elif strs:
            replies.append(" ".join(strs))
        elif ints:
            replies.append(" ".join(ints))
        elif bulks:
            replies.append(" ".join(bulks))
        elif lens == ["-1"]:
            replies.append("")  # nil bulk: redis-cli prints an empty line
        else:
            replies.append("?%r" % (r,))
    expect_eq(side + " Redis replies", replies,
              [re.sub(r"\s+", " ", w).strip() for w in want_replies])


def check_pgsql(pcap, hints, truth, side):
    want_q = [rest for k, rest in truth["lines"] if k == "QUERY"]
    want_tags, want_codes = [], []
    for k, rest in truth["lines"]:
        if k != "OUT":
            continue
        m = re.match(r"^\((\d+) rows?\)$", rest)
        if m:
            want_tags.append("SELECT " + m.group(1))
        elif re.match(r"^(CREATE \w+|DROP \w+|INSERT \d+ \d+|UPDATE \d+|DELETE \d+)$", rest):
            want_tags.append(rest)
        m = re.match(r"^ERROR:  ([0-9A-Z]{5}): ", rest)
        if m:
            want_codes.append(m.group(1))
    rows = tshark_fields(pcap, hints, ["pgsql.query"], "pgsql.query")
    expect_eq(side + " PostgreSQL queries", [q for r in rows for q in r[0].split("|")], want_q)
    rows = tshark_fields(pcap, hints, ["pgsql.tag"], "pgsql.tag")
    expect_eq(side + " PostgreSQL command tags", [q for r in rows for q in r[0].split("|")],
              want_tags)
    rows = tshark_fields(pcap, hints, ["pgsql.code"], "pgsql.code")
    expect_eq(side + " PostgreSQL error codes", [q for r in rows for q in r[0].split("|")],
              want_codes)


CHECKS = {"http1": check_http1, "http2": check_http2, "dns": check_dns, "redis": check_redis,
          "pgsql": check_pgsql}

# ------------------------------------------------------------------ bytes


def norm_ep(s):
    """'127.0.0.1:80' / '[::1]:80' / '::1:80' -> ('127.0.0.1' or '::1', 80)"""
    s = s.strip()
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def reel_payloads(args, side_filter):
    """{(l4, local, remote): [egress bytes, ingress bytes]} for the sockets the
    side filter keeps, from the .reel file's DATA payloads. Unconnected UDP
    sockets are split per datagram peer (as the pcapng does)."""
    rc, so, se = run([args.reeltool, "cat", "--json", "--payload",
                      os.path.join(args.dir, args.name + ".reel")])
    if rc != 0:
        fail("reeltool cat: exit %d: %s" % (rc, se.strip()))
    kind, value = side_filter.split()
    comm = {}
    tuples = {}
    chunks = collections.defaultdict(list)
    for line in so.splitlines():
        e = json.loads(line)
        ev = e.get("event")
        if ev == "PROC":
            comm[e["pid"]] = e["comm"]
        elif ev == "EXEC":
            comm[e["tgid"]] = e["comm"]
        elif ev == "FORK":
            comm[e["child_tgid"]] = e.get("comm", comm.get(e["tgid"], ""))
        if ev not in ("CONN_OPEN", "DATA"):
            continue
        if kind == "--pid" and e["tgid"] != int(value):
            continue
        if kind == "--comm" and comm.get(e["tgid"]) != value:
            continue
        sock = (e["tgid"], e["fd"], e["ino"])
        if ev == "CONN_OPEN":
            tuples[sock] = (e["l4"], norm_ep(e["local"]), norm_ep(e["remote"]))
            continue
        chunks[sock].append(e)
    out = collections.defaultdict(lambda: [bytearray(), bytearray()])
    for sock, evs in chunks.items():
        if sock not in tuples:
            fail("socket %r has data but no CONN_OPEN" % (sock,))
            continue
        l4, local, remote = tuples[sock]
        for e in sorted(evs, key=lambda e: (e["dir"], e["stream_pos"])):
            if e["cap_len"] != e["len"]:
                fail("socket %r: a chunk is truncated (%d of %d)" % (sock, e["cap_len"], e["len"]))
            rem = norm_ep(e["peer"]) if remote[1] == 0 and "peer" in e else remote
            d = 0 if e["dir"] == "egress" else 1
            out[(l4, local, rem)][d] += base64.b64decode(e.get("payload", ""))
    return out


def follow_all(pcap, hints, streams):
    """One tshark run following every (l4, n) in streams; returns a list of
    (l4, nodes, [bytes from node 0, bytes from node 1])."""
    if not streams:
        return []
    cmd = ["tshark", "-n", "-r", pcap] + hints + ["-q"]
    for l4, n in streams:
        cmd += ["-z", "follow,%s,raw,%d" % (l4, n)]
    rc, so, se = run(cmd)
    if rc != 0:
        fail("tshark follow: exit %d: %s" % (rc, se.strip()))
        return []
    out, cur = [], None
    for line in so.splitlines():
        m = re.match(r"^Follow: (tcp|udp),raw", line)
        if m:
            cur = [m.group(1), [None, None], [bytearray(), bytearray()]]
            out.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r"^Node ([01]): (.*)$", line)
        if m:
            cur[1][int(m.group(1))] = norm_ep(m.group(2))
            continue
        if re.match(r"^\t?[0-9a-f]+$", line):
            cur[2][1 if line.startswith("\t") else 0] += bytes.fromhex(line.strip())
    if len(out) != len(streams):
        fail("tshark follow: %d outputs for %d streams" % (len(out), len(streams)))
    return out


def check_bytes(args, pcap, hints, side, side_filter):
    want = reel_payloads(args, side_filter)
    got = collections.defaultdict(lambda: [bytearray(), bytearray()])
    rows = tshark_fields(pcap, hints, ["tcp.stream", "udp.stream"])
    streams = sorted({("tcp", int(r[0])) for r in rows if r[0]} |
                     {("udp", int(r[1])) for r in rows if len(r) > 1 and r[1]})
    for l4, nodes, data in follow_all(pcap, hints, streams):
        # key it as the captured socket sees it: local = the end in want
        for local, remote, out, inn in ((nodes[0], nodes[1], data[0], data[1]),
                                        (nodes[1], nodes[0], data[1], data[0])):
            if (l4, local, remote) in want:
                got[(l4, local, remote)][0] += out
                got[(l4, local, remote)][1] += inn
                break
        else:
            fail("%s: %s stream %r has no captured socket" % (side, l4, nodes))
    total = 0
    for key in sorted(want):
        w = want[key]
        g = got.get(key)
        if g is None:
            fail("%s: no tshark stream for socket %r" % (side, key))
            continue
        for d, name in ((0, "sent"), (1, "received")):
            if bytes(g[d]) != bytes(w[d]):
                fail("%s: %r bytes %s: tshark follow %d bytes, .reel %d bytes, first "
                     "difference at %d" % (side, key, name, len(g[d]), len(w[d]),
                                          next((i for i in range(min(len(g[d]), len(w[d])))
                                                if g[d][i] != w[d][i]),
                                               min(len(g[d]), len(w[d])))))
            total += len(w[d])
    print("ok: %s follow: %d conversations, %d payload bytes compared" % (side, len(want), total)
          if not FAILS else "%s follow: %d conversations compared" % (side, len(want)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reelplay", required=True)
    ap.add_argument("--reeltool", required=True)
    ap.add_argument("--pcap-count", required=True)
    ap.add_argument("--clean", action="store_true",
                    help="only check that tshark's TCP analysis flags nothing (no retransmission, "
                    "port reuse, unseen ACK, lost segment) in the whole file and on each side: "
                    "these traces lost nothing")
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("SKIP: tshark not installed")
        return 77
    os.makedirs(args.work, exist_ok=True)
    truth = read_truth(os.path.join(args.dir, "truth.txt"))

    if args.clean:
        for side, filt in (("whole file", ""), ("client side", truth["client_filter"]),
                           ("server side", truth["server_filter"])):
            pcap = os.path.join(args.work, "%s.clean.pcapng" % args.name)
            h = replay(args, pcap, filt.split())
            rows = tshark_fields(pcap, h, ["frame.number", "_ws.col.Info"],
                                 "tcp.analysis.flags && !tcp.analysis.window_update")
            if rows:
                fail("%s (%s): tshark flags %d frames:\n   %s" % (
                    side, filt or "all", len(rows), "\n   ".join(" ".join(r) for r in rows[:10])))
            else:
                print("ok: %s (%s): no TCP analysis flags" % (side, filt or "all"))
        return 1 if FAILS else 0

    # the whole file: replays, hints, libpcap and tshark read it back
    full = os.path.join(args.work, args.name + ".pcapng")
    hints = replay(args, full, [])
    print("hints: %s" % " ".join(hints))
    rc, so, se = run([args.pcap_count, full])
    if rc != 0:
        fail("libpcap cannot read %s: %s" % (full, se.strip()))
    rc2, so2, se2 = run(["tshark", "-n", "-r", full] + hints + ["-T", "fields", "-e", "frame.number"])
    if rc2 != 0:
        fail("tshark -r %s: exit %d: %s" % (full, rc2, se2.strip()))
    nframes = len(so2.split())
    if rc == 0 and so.split()[1] != str(nframes):
        fail("libpcap reads %s packets, tshark %d" % (so.split()[1], nframes))
    else:
        print("ok: %s read back by libpcap (%s) and tshark (%d frames)" % (full, so.strip(), nframes))

    for side in ("client", "server"):
        filt = truth[side + "_filter"]
        pcap = os.path.join(args.work, "%s.%s.pcapng" % (args.name, side))
        h = replay(args, pcap, filt.split())
        CHECKS[args.name](pcap, h, truth, "%s side (%s)" % (side, filt))
        check_bytes(args, pcap, h, "%s side (%s)" % (side, filt), filt)
    if FAILS:
        print("%s: %d check(s) failed" % (args.name, len(FAILS)))
        return 1
    print("%s: tshark agrees" % args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
