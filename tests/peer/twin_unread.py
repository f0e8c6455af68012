#!/usr/bin/env python3
"""Bytes sent and never read, both ends traced (issue 22, item 2).

  twin_unread.py --reelcap P --reelplay P --work DIR

nginx (sendfile off: the body passes through write) serves a 64 KiB file of
random bytes; `reelcap --port` traces nginx and the client, so each
connection is captured at both ends. The client (a python socket) sends
`GET /f64k`, reads the first 1,000 bytes of the response, waits for nginx
to have written all of it, and closes; CONNS connections, one after the
other.

The response nginx sent is the header (in the 1,000 bytes the client read)
followed by the file the test wrote. In the pcapng, tshark's follow of each
connection has the request client-to-server and that whole response
server-to-client (the packets carry what was sent, not only what the client
read), and the server's FIN or RST, if any, comes right after the last byte
it sent. The server's conn JSON line says it captured the whole response.

The same over TLS (when openssl is installed to make a certificate): a
python ssl server and CONNS clients in one capture (`reelcap -- python3`),
each client reads 1,000 bytes of the 64 KiB answer and closes. Each TLS
plaintext flow server-to-client is the whole answer the server wrote, and
each ciphertext flow server-to-client has as many bytes as the server's
socket sent (its close record's count, in the JSON).

A capture whose rings filled (LOST, overload cuts) is retried, up to 3
times. Exit 0 ok, 1 mismatch, 77 not root or tshark/nginx missing (skip).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whole_calls as wc  # noqa: E402  (follow helpers, fail, rings_filled)
from peer_nginx import free_port, start_nginx  # noqa: E402

ATTEMPTS = 3
CONNS = 5
READ = 1000
FILE = "f64k"
SIZE = 65536


def fail(msg):
    wc.fail(msg)


def client(port):
    """CONNS connections: GET, read READ bytes, close. Returns the request
    and the READ bytes each one read."""
    got = []
    for _ in range(CONNS):
        req = b"GET /%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % FILE.encode()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req)
        buf = b""
        while len(buf) < READ:
            d = s.recv(READ - len(buf))
            if not d:
                break
            buf += d
        # nginx writes the whole response into the socket buffers at once;
        # give it time, then close with the rest unread
        time.sleep(0.3)
        s.close()
        got.append((req, buf))
    return got


def start_capture(args, port, reel):
    log = open(reel + ".log", "w")
    p = subprocess.Popen([args.reelcap, "--ring-pages", wc.RING_PAGES, "--port", str(port),
                          "-w", reel], stdout=log, stderr=log)
    # a host busy with other work can take long to load the BPF programs
    for _ in range(1800):
        time.sleep(0.05)
        with open(reel + ".log") as f:
            if "capturing to" in f.read():
                return p
        if p.poll() is not None:
            break
    p.kill()
    p.wait()
    raise RuntimeError("reelcap did not start: " + open(reel + ".log").read()[-500:])


def stream_ends(pcap):
    """{tcp.stream: [(srcport, seq of a FIN or RST, 'FIN'|'RST')]} (relative seq)."""
    rc, so, se = wc.run(["tshark", "-n", "-r", pcap, "-Y", "tcp.flags.fin==1 || "
                         "tcp.flags.reset==1", "-T", "fields", "-e", "tcp.stream", "-e",
                         "tcp.srcport", "-e", "tcp.seq", "-e", "tcp.flags.fin"])
    ends = {}
    for row in so.decode().splitlines():
        f = row.split("\t")
        if len(f) == 4:
            fin = f[3] in ("1", "True")
            ends.setdefault(int(f[0]), []).append((int(f[1]), int(f[2]),
                                                   "FIN" if fin else "RST"))
    return ends


def check(args, reel, body, port, reads, work):
    pcap = os.path.join(work, "both.pcapng")
    js = os.path.join(work, "both.json")
    rc, _, se = wc.run([args.reelplay, reel, "-q", "-w", pcap, "--json", js])
    if rc != 0:
        fail("reelplay: exit %d: %s" % (rc, se[-300:]))
        return
    # the responses differ in their Date header at most: any of them matches
    resp = set()
    for _, head in reads:
        h, sep, _ = head.partition(b"\r\n\r\n")
        if not sep or not h.startswith(b"HTTP/1.1 200"):
            fail("the client read no whole response header: %r" % head[:80])
            return
        resp.add(h + sep + body)
    req = reads[0][0]
    sent = sorted({len(r) for r in resp})
    streams = wc.pcap_streams(pcap)
    ends = stream_ends(pcap)
    ok = 0
    for (l4, idx), (_, data) in zip(streams, wc.follow_all(pcap, streams)):
        c2s, s2c = bytes(data[0]), bytes(data[1])
        if not c2s.startswith(b"GET /" + FILE.encode()):
            continue
        if c2s != req:
            fail("stream %d: client-to-server %r is not the request sent" % (idx, c2s[:60]))
            continue
        if s2c not in resp:
            fail("stream %d: server-to-client has %d bytes, not the %s nginx sent (the client "
                 "read %d)" % (idx, len(s2c), "/".join(map(str, sent)), READ))
            continue
        if not any(sport == port for sport, _, _ in ends.get(idx, [])):
            fail("stream %d: no FIN or RST from the server" % idx)
            continue
        for sport, seq, what in ends.get(idx, []):
            n = len(s2c) if sport == port else len(c2s)
            if seq != n + 1:
                fail("stream %d: %s from port %d at relative seq %d, its last byte sent "
                     "is at %d" % (idx, what, sport, seq, n))
        ok += 1
    if ok != CONNS:
        fail("%d of %d connections' server-to-client streams are the whole response" %
             (ok, CONNS))
    # the JSON keeps each end's own view: the server sent it all, the
    # client read READ bytes
    servers, clients = [], []
    with open(js) as f:
        for line in f:
            d = json.loads(line)
            if d.get("type") != "conn":
                continue
            if d.get("role") == "server" and d.get("local", "").endswith(":%d" % port):
                servers.append(d)
            elif d.get("role") == "client" and d.get("remote", "").endswith(":%d" % port):
                clients.append(d)
    outs = sorted(d["captured_out"] for d in servers)
    if len(servers) != CONNS or any(o not in sent for o in outs):
        fail("server conn lines: captured_out %r, nginx sent %s" % (outs, sent))
    ins = sorted((d["bytes_in"], d["captured_in"]) for d in clients)
    if ins != [(READ, READ)] * CONNS:
        fail("client conn lines: (bytes_in, captured_in) %r, the client read %d" % (ins, READ))
    print("twin_unread: %d of %d connections: the pcapng has the %s bytes nginx sent (the "
          "client read %d); server captured_out %r" %
          (ok, CONNS, "/".join(map(str, sent)), READ, outs), flush=True)


TLS_PAIR = r"""
import os, socket, ssl, sys, time
conns, read, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = open(os.path.join(work, "body.bin"), "rb").read()
resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
port = s.getsockname()[1]
for i in range(conns):
    pid = os.fork()
    if pid == 0:
        s.close()
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        c = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))
        c.sendall(b"GET /f64k HTTP/1.1\r\n\r\n")
        got = b""
        while len(got) < read:
            got += c.recv(read - len(got))
        time.sleep(0.3)
        c.close()
        os._exit(0)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(os.path.join(work, "c.pem"), os.path.join(work, "k.pem"))
    t = sctx.wrap_socket(s.accept()[0], server_side=True)
    t.recv(100)
    t.sendall(resp)
    os.waitpid(pid, 0)
    t.close()
print("sent %d" % len(resp))
"""


def tls_case(args):
    """Both ends of CONNS TLS connections in one capture: the plaintext and
    ciphertext flows carry all the server sent."""
    for attempt in range(1, ATTEMPTS + 1):
        work = os.path.join(args.work, "tls%d" % attempt)
        os.makedirs(work)
        rc, _, err = wc.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                             "-keyout", os.path.join(work, "k.pem"), "-out",
                             os.path.join(work, "c.pem"), "-days", "2", "-subj",
                             "/CN=localhost"])
        if rc != 0:
            fail("openssl req: exit %d: %s" % (rc, err[-300:]))
            return
        body = os.urandom(SIZE)
        with open(os.path.join(work, "body.bin"), "wb") as f:
            f.write(body)
        pair = os.path.join(work, "pair.py")
        with open(pair, "w") as f:
            f.write(TLS_PAIR)
        reel = os.path.join(work, "tls.reel")
        rc, so, log = wc.run([args.reelcap, "--ring-pages", wc.RING_PAGES, "-w", reel, "--",
                              sys.executable, pair, str(CONNS), str(READ), work])
        if rc != 0 or not so.startswith(b"sent "):
            fail("reelcap -- pair.py: exit %d: %s" % (rc, log[-500:]))
            return
        if wc.rings_filled(log) and attempt < ATTEMPTS:
            print("tls attempt %d: the rings filled; capturing again" % attempt, flush=True)
            continue
        break
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    pcap, js = os.path.join(work, "tls.pcapng"), os.path.join(work, "tls.json")
    rc, _, se = wc.run([args.reelplay, reel, "-q", "-w", pcap, "--json", js])
    if rc != 0:
        fail("reelplay tls: exit %d: %s" % (rc, se[-300:]))
        return
    sent = []
    with open(js) as f:
        for line in f:
            d = json.loads(line)
            if d.get("type") == "conn" and d["role"] == "server" and not d["tls"]:
                sent.append(d["bytes_out"])
    plain = cipher = 0
    streams = wc.pcap_streams(pcap)
    for (l4, idx), (_, data) in zip(streams, wc.follow_all(pcap, streams)):
        c2s, s2c = bytes(data[0]), bytes(data[1])
        if c2s.startswith(b"GET /f64k"):
            if s2c != resp:
                fail("tls stream %d: plaintext server-to-client has %d bytes, the server "
                     "wrote %d (the client read %d)" % (idx, len(s2c), len(resp), READ))
            else:
                plain += 1
        elif c2s[:1] == b"\x16":
            if len(s2c) not in sent:
                fail("tls stream %d: ciphertext server-to-client has %d bytes, the server's "
                     "sockets sent %r" % (idx, len(s2c), sent))
            else:
                cipher += 1
    if plain != CONNS or cipher != CONNS:
        fail("tls: %d plaintext and %d ciphertext flows of %d carry all the server sent" %
             (plain, cipher, CONNS))
    print("twin_unread tls: %d plaintext flows have the %d bytes the server wrote, %d "
          "ciphertext flows the %r bytes its sockets sent (the client read %d)" %
          (plain, len(resp), cipher, sorted(set(sent)), READ), flush=True)


def main():
    ap = argparse.ArgumentParser()
    for a in ("reelcap", "reelplay", "work"):
        ap.add_argument("--" + a, required=True)
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("tshark") or not shutil.which("nginx"):
        print("skip: needs root, tshark and nginx")
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    for attempt in range(1, ATTEMPTS + 1):
        work = os.path.join(args.work, "a%d" % attempt)
        os.makedirs(work)
        port = free_port()
        srv, www = start_nginx(os.path.join(work, "nginx"), port, {FILE: SIZE},
                               sendfile=False)
        reel = os.path.join(work, "cap.reel")
        try:
            cap = start_capture(args, port, reel)
            try:
                reads = client(port)
            finally:
                time.sleep(0.5)
                cap.send_signal(signal.SIGINT)
                cap.wait(timeout=60)
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait()
        log = open(reel + ".log").read()
        if cap.returncode != 0:
            fail("reelcap exited %d: %s" % (cap.returncode, log[-500:]))
            break
        if wc.rings_filled(log) and attempt < ATTEMPTS:
            print("attempt %d: the rings filled; capturing again" % attempt, flush=True)
            continue
        with open(os.path.join(www, FILE), "rb") as f:
            body = f.read()
        check(args, reel, body, port, reads, work)
        break
    if shutil.which("openssl"):
        tls_case(args)
    else:
        print("tls case skipped: no openssl to make a certificate")
    if wc.FAILS:
        print("twin_unread: %d failures" % len(wc.FAILS))
        return 1
    print("twin_unread: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
