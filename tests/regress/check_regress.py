#!/usr/bin/env python3
"""Issue 14 end to end, on the real kernel with real clients (root):

content  curl, redis-cli, psql and pgbench (extended protocol: bind
         parameters) recorded by reelcap against local servers; every request
         and response header curl printed, every body byte (up to the cap),
         Redis argument and reply, SQL text, bind parameter and first row
         must be in the JSON exactly as sent; a body cut by --body-max or by
         a hole (a snaplen) says so.
har      the HAR of the curl session and of a node HTTP/2 session passes
         har-validator (npm, in a temp dir); its URLs, statuses and body
         sizes equal what the clients reported.
replay   --replay-to against svc.py (a JSON field changes on every call):
         the same service with --baseline gives 0 differences and exit 0,
         the changing field found as noise; a changed copy (one body field,
         one status) exactly those 2 transactions and exit 1; a closed port
         an error per request with the reason, exit 1; so do targets that
         reset, answer garbage, cut a body, send a huge header block, stay
         silent (timeout), or answer HTTP/2 in HTTP/1; the same for Redis
         (a changed value found; garbage replies are errors).

usage: check_regress.py REELCAP REELPLAY WORKDIR [PART...]   (exit 77: skipped)
"""
import base64
import gzip
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
REELCAP, REELPLAY, WORK = sys.argv[1:4]
PARTS = sys.argv[4:] or ["content", "har", "replay"]
PROCS = []
FAILS = []
# what the content checks compared, printed at the end of part_content
TALLY = {"req_headers": 0, "resp_headers": 0, "body_bytes": 0, "redis_args": 0,
         "redis_replies": 0, "sql_texts": 0, "bind_params": 0, "rows": 0, "cells": 0}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def free_port():
    """A port free on both loopbacks (the node HTTP/2 peers listen on ::1)."""
    for _ in range(50):
        p = random.randint(28000, 60000)
        try:
            with socket.socket() as s4, socket.socket(socket.AF_INET6) as s6:
                s4.bind(("127.0.0.1", p))
                s6.bind(("::1", p))
            return p
        except OSError:
            continue
    raise SystemExit("no free port")


def wait_port(port, host="127.0.0.1", fam=socket.AF_INET):
    for _ in range(200):
        try:
            with socket.socket(fam) as s:
                s.connect((host, port))
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing answers on %s:%d" % (host, port))


def start(cmd, port, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    PROCS.append(p)
    wait_port(port)
    return p


def capture(name, port, shell, extra=()):
    path = os.path.join(WORK, name + ".reel")
    r = subprocess.run([REELCAP, "-q", "-w", path, "--port", str(port), *extra, "--", "sh", "-c",
                        shell], capture_output=True, text=True, errors="replace")
    if r.returncode:
        raise SystemExit("reelcap %s: %s" % (name, r.stderr))
    return path, r.stdout, r.stderr


def jsonl(path, *args):
    r = subprocess.run([REELPLAY, path, "--json", "-", *args], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("reelplay %s: %s" % (path, r.stderr))
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    check(lines and lines[0] == {"type": "schema", "schema": "reel-json", "version": 2},
          "%s: first JSON line names schema 2" % os.path.basename(path))
    return [l for l in lines if l["type"] == "txn"]


def body_bytes(b):
    return base64.b64decode(b["data"]) if b["encoding"] == "base64" else b["data"].encode()


def curl_truth(stderr):
    """Request/response headers from curl -v, one list per exchange."""
    out, cur = [], None
    for line in stderr.splitlines():
        if line.startswith("> ") and line[2:].split(" ")[0] in ("GET", "POST"):
            cur = {"req": [], "resp": []}
            out.append(cur)
        elif line.startswith("> ") and ":" in line and cur:
            n, v = line[2:].split(":", 1)
            cur["req"].append([n, v.strip()])
        elif line.startswith("< ") and ":" in line and cur:
            n, v = line[2:].split(":", 1)
            cur["resp"].append([n, v.strip()])
    return out


# ---- content ----------------------------------------------------------------

def part_content():
    port = free_port()
    start([sys.executable, os.path.join(HERE, "svc.py"), str(port)], port)
    bodies = os.path.join(WORK, "bodies")
    os.makedirs(bodies, exist_ok=True)
    u = "http://127.0.0.1:%d" % port
    shell = ("curl -sv -H 'X-Reel-Test: one two' -o {b}/1 {u}/item/7 2>{b}/1.err; "
             "curl -sv -H 'Content-Type: application/json' -d '{{\"k\":[1,\"x\"]}}' -o {b}/2 "
             "{u}/echo 2>{b}/2.err; "
             "curl -sv -o {b}/3 {u}/gz 2>{b}/3.err; "
             "curl -sv -o {b}/4 {u}/big/3000 2>{b}/4.err").format(u=u, b=bodies)
    rec, _, _ = capture("http_content", port, shell)
    txns = jsonl(rec, "--body-max", "1000")
    check(len(txns) == 4, "curl: 4 transactions (got %d)" % len(txns))
    for i, t in enumerate(txns[:4]):
        truth = curl_truth(open("%s/%d.err" % (bodies, i + 1)).read())[0]
        h = t["http"]
        TALLY["req_headers"] += len(truth["req"])
        TALLY["resp_headers"] += len(truth["resp"])
        check(h["req"]["headers"] == truth["req"],
              "curl %s: request headers in order, exactly as curl sent them" % t["target"])
        check(h["resp"]["headers"] == truth["resp"],
              "curl %s: response headers in order, exactly as received" % t["target"])
        got = open("%s/%d" % (bodies, i + 1), "rb").read()
        b = h["resp"].get("body")
        TALLY["body_bytes"] += len(body_bytes(b))
        if t["target"] == "/gz":
            check(b["coding"] == "gzip" and b["decoded"] and
                  body_bytes(b) == gzip.decompress(got) and b["size"] == len(got),
                  "curl /gz: body inflated, flagged gzip/decoded, wire size %d" % len(got))
        elif t["target"] == "/big/3000":
            check(b["cut"] and b["size"] == 3000 and body_bytes(b) == got[:1000],
                  "curl /big/3000: first 1000 bytes kept, cut flagged, size 3000")
        else:
            check(body_bytes(b) == got and "cut" not in b,
                  "curl %s: response body byte for byte" % t["target"])
    post = txns[1]["http"]["req"]["body"]
    TALLY["body_bytes"] += len(body_bytes(post))
    check(body_bytes(post) == b'{"k":[1,"x"]}', "curl POST: request body byte for byte")
    # a body that a hole cut: the snaplen keeps 512 bytes of each write
    rec, _, _ = capture("http_hole", port, "curl -s -o /dev/null %s/big/20000" % u,
                        ["-s", "512"])
    t = [x for x in jsonl(rec) if x["target"] == "/big/20000"][0]
    b = t["http"]["resp"]["body"]
    check("hole_resp" in t["flags"] and b.get("holes") and b["size"] == 20000 and
          sum(x["len"] for x in b["holes"]) + len(body_bytes(b)) == 20000,
          "snaplen 512: body of 20000 bytes has holes, kept + holes = 20000 (%s)" %
          b.get("holes", [])[:2])
    part_redis_content()
    part_pg_content()
    print("content compared: %d request and %d response headers, %d body bytes, "
          "%d Redis arguments, %d Redis reply values, %d SQL texts, %d bind parameters, "
          "%d rows (%d cells)" % tuple(TALLY[k] for k in (
              "req_headers", "resp_headers", "body_bytes", "redis_args", "redis_replies",
              "sql_texts", "bind_params", "rows", "cells")))


def part_redis_content():
    port = free_port()
    d = tempfile.mkdtemp(dir=WORK)
    start(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--dir", d], port)
    cmds = "SET reel:key hello-reel\nGET reel:key\nRPUSH reel:list a bb \"c c\"\nLRANGE reel:list 0 -1\n"
    rec, out, _ = capture("redis_content", port,
                          "printf '%s' | redis-cli -p %d" % (cmds.replace("\n", "\\n"), port))
    txns = jsonl(rec)
    rt = [t for t in txns if t["proto"] == "redis"]
    args = [t["redis"]["args"] for t in rt]
    check(args[0][:2] == ["COMMAND", "DOCS"], "redis-cli 7 sends COMMAND DOCS first")
    check(args[1:] == [["SET", "reel:key", "hello-reel"], ["GET", "reel:key"],
                       ["RPUSH", "reel:list", "a", "bb", "c c"], ["LRANGE", "reel:list", "0", "-1"]],
          "redis: every argument exactly as sent (%s)" % args[1:])
    TALLY["redis_args"] += sum(len(a) for a in args[1:])
    TALLY["redis_replies"] += 6  # OK, hello-reel, 3, a, bb, c c
    rep = [t["redis"]["reply"] for t in rt[1:]]
    check(rep[0] == {"type": "simple", "value": "OK"} and
          rep[1] == {"type": "bulk", "value": "hello-reel"} and
          rep[2] == {"type": "integer", "value": "3"} and
          rep[3] == {"type": "array", "size": 3, "items": [{"type": "bulk", "value": "a"},
                                                           {"type": "bulk", "value": "bb"},
                                                           {"type": "bulk", "value": "c c"}]},
          "redis: replies with type and value as redis-cli printed them (%s)" % out.split())
    # inline commands: redis-cli --pipe sends stdin as it is (then an ECHO of
    # its own), a raw socket a PING
    ping = ("import socket; s = socket.create_connection(('127.0.0.1', %d)); "
            "s.sendall(b'PING\\r\\n'); print(s.recv(64))" % port)
    rec, out, _ = capture("redis_inline", port,
                          "printf 'SET reel:inline \"v 1\"\\r\\nGET reel:inline\\r\\n' | "
                          "redis-cli -p %d --pipe; %s -c \"%s\"" % (port, sys.executable, ping))
    rt = [(t["proto"], t["method"], t["target"], t.get("redis", {}).get("args"),
           t.get("redis", {}).get("reply")) for t in jsonl(rec)]
    check(len(rt) == 4 and rt[0] == ("redis", "SET", "reel:inline", ["SET", "reel:inline", "v 1"],
                                     {"type": "simple", "value": "OK"}) and
          rt[1] == ("redis", "GET", "reel:inline", ["GET", "reel:inline"],
                    {"type": "bulk", "value": "v 1"}) and rt[2][:2] == ("redis", "ECHO") and
          rt[3] == ("redis", "PING", "", ["PING"], {"type": "simple", "value": "PONG"}),
          "redis inline: SET and GET from redis-cli --pipe, its ECHO, a raw PING (%s; %s)" %
          (rt, out.split()))


def part_pg_content():
    port = free_port()
    d = tempfile.mkdtemp(dir=WORK)
    os.chmod(d, 0o755)
    os.chmod(WORK, 0o755)
    shutil.chown(d, "postgres")
    asuser = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
    bindir = "/usr/lib/postgresql/15/bin"
    subprocess.run(asuser + [bindir + "/initdb", "-D", d + "/data", "-A", "trust", "-U",
                             "postgres", "--no-sync"], check=True, capture_output=True)
    start(asuser + [bindir + "/postgres", "-D", d + "/data", "-c", "listen_addresses=127.0.0.1",
                    "-c", "port=%d" % port, "-c", "unix_socket_directories=" + d,
                    "-c", "fsync=off"], port)
    time.sleep(0.5)
    script = os.path.join(d, "bind.sql")
    with open(script, "w") as f:
        f.write("\\set v 41\n\\set w 7\n"
                "SELECT :v::int + 1 AS answer, :w::int * 3 AS thrice, 'bound-text' AS label;\n")
    sql = ("CREATE TABLE reel_t (id int, name text); "
           "INSERT INTO reel_t VALUES (1, 'apple'), (2, NULL); "
           "SELECT id, name FROM reel_t ORDER BY id;")
    shell = ("psql -h 127.0.0.1 -p {p} -U postgres -X -q -c \"{s}\" postgres >/dev/null; "
             "pgbench -h 127.0.0.1 -p {p} -U postgres -n -M extended -t 1 -f {f} postgres "
             ">/dev/null; "
             "pgbench -h 127.0.0.1 -p {p} -U postgres -n -M prepared -t 3 -f {f} postgres "
             ">/dev/null").format(p=port, s=sql, f=script)
    rec, _, _ = capture("pgsql_content", port, shell)
    txns = [t for t in jsonl(rec) if t["proto"] == "pgsql" and "sql" in t]
    q = [t for t in txns if t["sql"].get("query") == sql]
    check(len(q) == 1, "psql: the whole SQL text exactly as sent")
    if q:
        s = q[0]["sql"]
        TALLY["sql_texts"] += 1
        TALLY["rows"] += len(s.get("rows", []))
        TALLY["cells"] += sum(len(r) for r in s.get("rows", []))
        check(s.get("columns") == ["id", "name"] and s.get("rows") == [["1", "apple"],
                                                                      ["2", None]],
              "psql: columns and rows (NULL as null): %s %s" % (s.get("columns"), s.get("rows")))
    b = [t for t in txns if "$1" in str(t["sql"].get("query")) and "statement" not in t["sql"]]
    check(len(b) == 1, "pgbench -M extended: the Parse query text ($1)")
    if b:
        s = b[0]["sql"]
        TALLY["sql_texts"] += 1
        TALLY["bind_params"] += len(s.get("params", []))
        TALLY["rows"] += len(s.get("rows", []))
        TALLY["cells"] += sum(len(r) for r in s.get("rows", []))
        check(s.get("params") == ["41", "7"] and
              s.get("columns") == ["answer", "thrice", "label"] and
              s.get("rows") == [["42", "21", "bound-text"]] and s.get("tag") == "SELECT 1",
              "pgbench: bind parameters 41 and 7, columns, first row [42, 21, bound-text], "
              "tag: %s" % s)
    # -M prepared: one Parse of P_0, then 3 batches that Bind P_0 only; each
    # shows the Parse's text (what pgbench made of the script's line)
    text = "SELECT $1::int + 1 AS answer, $2::int * 3 AS thrice, 'bound-text' AS label;"
    p = [(t["method"], t["target"], t["sql"].get("query"), t["sql"].get("statement"),
          t["sql"].get("params")) for t in txns if t["sql"].get("statement") == "P_0"]
    check(p == [("PARSE", text, text, "P_0", None)] +
          [("EXECUTE", text, text, "P_0", ["41", "7"])] * 3,
          "pgbench -M prepared: the Parse of P_0 and 3 EXECUTEs of P_0, each with its "
          "text: %s" % p)
    TALLY["sql_texts"] += len(p)


# ---- HAR ----------------------------------------------------------------------

def har_validate(path):
    if not shutil.which("npm") or not shutil.which("node"):
        print("skip HAR validation: npm or node is missing")
        return None
    d = os.path.join(WORK, "npm")
    os.makedirs(d, exist_ok=True)
    if not os.path.isdir(os.path.join(d, "node_modules", "har-validator")):
        r = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund",
                            "har-validator"], cwd=d, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("npm install har-validator: " + r.stderr[-500:])
    js = ("const v=require('har-validator');const h=JSON.parse(require('fs')"
          ".readFileSync(process.argv[1]));v.har(h).then(()=>console.log('valid'))"
          ".catch(e=>{console.log(JSON.stringify(e.errors||e.message));process.exit(1)})")
    r = subprocess.run(["node", "-e", js, path], cwd=d, capture_output=True, text=True)
    check(r.returncode == 0, "har-validator accepts %s %s" % (os.path.basename(path),
                                                             r.stdout.strip()[:300]))
    return json.load(open(path))


def part_har():
    port = free_port()
    start([sys.executable, os.path.join(HERE, "svc.py"), str(port)], port)
    u = "http://127.0.0.1:%d" % port
    fmt = "%{url_effective} %{http_code} %{size_download}\\n"
    rec, out, _ = capture("har_h1", port, ("curl -s -w '{f}' -o /dev/null {u}/item/1 "
                                           "-o /dev/null {u}/gz -o /dev/null {u}/nope; curl -s -o /dev/null -w '{f}' -d "
                                           "'{{\"x\":1}}' {u}/echo; curl -s -o /dev/null "
                                           "-w '{f}' {u}/big/5000").format(f=fmt, u=u))
    har = os.path.join(WORK, "h1.har")
    subprocess.run([REELPLAY, rec, "--har", har], check=True)
    check(oct(os.stat(har).st_mode & 0o777) == "0o600", "HAR file created 0600")
    h = har_validate(har)
    truth = [l.split() for l in out.splitlines()]
    if h:
        got = [[e["request"]["url"], str(e["response"]["status"]), str(e["response"]["bodySize"])]
               for e in h["log"]["entries"]]
        check(got == truth, "HTTP/1 HAR: URLs, statuses, body sizes = curl's (%s)" % got)
        e = h["log"]["entries"][0]
        check(e["_comm"] == "curl" and e["_pid"] > 0 and e["timings"]["wait"] >= 0,
              "HAR entry has _pid/_comm and timings")
    os.symlink(os.path.join(WORK, "elsewhere"), os.path.join(WORK, "link.har"))
    r = subprocess.run([REELPLAY, rec, "--har", os.path.join(WORK, "link.har")],
                       capture_output=True, text=True)
    check(r.returncode == 2 and not os.path.exists(os.path.join(WORK, "elsewhere")),
          "--har refuses a symlink: %s" % r.stderr.strip())
    # HTTP/2: node's http2 client and server (h2c prior knowledge)
    p2 = free_port()
    PROCS.append(subprocess.Popen(["node", os.path.join(SRC, "tests/peers/h2server.js"), str(p2)]))
    wait_port(p2, "::1", socket.AF_INET6)
    rec, out, _ = capture("har_h2", p2, "node %s %d GET:/hello POST:/echo:reel-body GET:/nope" %
                          (os.path.join(SRC, "tests/peers/h2client.js"), p2))
    har = os.path.join(WORK, "h2.har")
    subprocess.run([REELPLAY, rec, "--har", har], check=True)
    h = har_validate(har)
    if h:
        got = [[e["request"]["url"], e["response"]["status"], e["response"]["bodySize"]]
               for e in h["log"]["entries"]]
        want = [["http://[::1]:%d/hello" % p2, 200, len("hello from reel h2 test server\n")],
                ["http://[::1]:%d/echo" % p2, 200, len("reel-body")],
                ["http://[::1]:%d/nope" % p2, 404, len("not found\n")]]
        check(sorted(got) == sorted(want) and out.split() == ["200", "/hello", "200", "/echo",
                                                             "404", "/nope"],
              "HTTP/2 HAR: URLs, statuses, body sizes = the client's (%s)" % got)
    r, c, s = replay(rec, "--replay-to", "h2c://127.0.0.1:%d" % bad_target("cut"))
    check(r.returncode == 1 and s.get("errors") == 3 and
          all("answered in HTTP/1" in x["live"]["error"] for x in c),
          "HTTP/2 replayed to an HTTP/1 server: 3 errors 'answered in HTTP/1', exit 1 (%s)" %
          (c[0]["live"] if c else r.stderr.strip()))


# ---- replay -----------------------------------------------------------------

BAD_ANSWERS = {
    "garbage": b"\x00\xff\xfe not a response \r\n\r\n" * 20,
    "cut": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
    "hugehead": b"HTTP/1.1 200 OK\r\nX: " + b"a" * 200000 + b"\r\n\r\n",
    "resp-garbage": b"$99999999999\r\n*-5\r\nzz\r\n",
    # 200000 bytes that begin no response, the connection kept open
    "garbage-open": b"\x00\xff\xfe not a response \r\n" * 8000,
    "resp-garbage-open": b"hello there\r\n" * 16000,
}


def bad_target(mode):
    """A server on a free port that reads a request, then answers as `mode`
    says (reset, silent, or one of BAD_ANSWERS) and closes."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def serve(conn):
        with conn:
            conn.recv(65536)
            if mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            elif mode == "silent":
                time.sleep(3)
            elif mode.endswith("-open"):
                try:
                    conn.sendall(BAD_ANSWERS[mode])
                except OSError:
                    pass  # the client gave up on it: what it is meant to do
                time.sleep(3)
            else:
                # sent whole, then a FIN; the socket closes once the client has
                # closed its end (no RST for bytes still in flight)
                conn.sendall(BAD_ANSWERS[mode])
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(5)
                try:
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass

    def loop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    BAD_SERVERS.append(srv)
    return srv.getsockname()[1]


BAD_SERVERS = []


def replay(rec, *args):
    rep = os.path.join(WORK, "report.jsonl")
    r = subprocess.run([REELPLAY, rec, "--report", rep, *args], capture_output=True, text=True)
    lines = [json.loads(l) for l in open(rep)] if os.path.exists(rep) else []
    summ = [l for l in lines if l["type"] == "compare_summary"]
    return r, [l for l in lines if l["type"] == "compare"], summ[0] if summ else {}


def part_replay():
    pa, pb, pc = free_port(), free_port(), free_port()
    svc = os.path.join(HERE, "svc.py")
    start([sys.executable, svc, str(pa)], pa)
    start([sys.executable, svc, str(pb)], pb)
    start([sys.executable, svc, str(pc), "--changed"], pc)
    u = "http://127.0.0.1:%d" % pa
    rec, _, _ = capture("replay_http", pa, ("curl -s {u}/item/1 {u}/item/2 {u}/health; "
                                            "curl -s -H 'Content-Type: application/json' "
                                            "-d '{{\"a\":[1,2]}}' {u}/echo; curl -s {u}/item/3"
                                            ).format(u=u))
    r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % pb, "--baseline", "127.0.0.1:%d" % pa)
    check(r.returncode == 0 and s.get("different") == 0 and s.get("errors") == 0 and
          s.get("transactions") == 5 and s.get("noise") == 5 and
          all(d["where"] == "body $.nonce" and d["noise"] for x in c for d in x["differences"]),
          "same service + baseline: 0 different, 5 noise ($.nonce), exit %d: %s" %
          (r.returncode, r.stdout.strip().splitlines()[-1:]))
    r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % pc, "--baseline", "127.0.0.1:%d" % pa)
    diff = sorted((x["target"], [d["where"] for d in x["differences"] if not d["noise"]])
                  for x in c if x["result"] == "different")
    check(r.returncode == 1 and s.get("different") == 2 and
          diff == [("/health", ["status"]), ("/item/2", ["body $.name"])],
          "changed copy: exactly /item/2 ($.name) and /health (status), exit %d: %s" %
          (r.returncode, diff))
    check("DIFFERENT" in r.stdout and "body $.name: \"widget-2\" -> \"gadget-2\"" in r.stdout,
          "readable report names the difference")
    r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % pb)
    check(r.returncode == 1 and s.get("different") == 5,
          "without a baseline the changing field is a difference (exit 1)")
    r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % pb, "--ignore-json", "$.nonce")
    check(r.returncode == 0 and s.get("same") == 5, "--ignore-json $.nonce: 5 same, exit 0")
    dead = free_port()
    r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % dead)
    check(r.returncode == 1 and s.get("errors") == 5 and
          all("Connection refused" in x["live"]["error"] for x in c),
          "closed port: 5 errors, each 'connect failed ... Connection refused', exit 1")
    # targets that answer badly: an error per request with what explains it,
    # exit 1, never a crash
    for mode, want in (("reset", "Connection reset by peer"),
                       ("garbage", "the response is unparsable at byte 0: not an HTTP/1 "
                                   "status line (\"... not a response ..."),
                       ("garbage-open", "the response is unparsable at byte 0: not an "
                                        "HTTP/1 status line"),
                       ("cut", "in the middle of the response"),
                       ("hugehead", "does not parse as HTTP/1 (header block >"),
                       ("silent", "no complete response within 1.0 s")):
        port = bad_target(mode)
        r, c, s = replay(rec, "--replay-to", "127.0.0.1:%d" % port, "--timeout", "1")
        bad = [x["live"] for x in c if want not in x["live"].get("error", "")]
        check(r.returncode == 1 and s.get("errors") == 5 and len(c) == 5 and not bad,
              "a target that answers '%s': 5 errors '...%s...', exit 1 (got exit %d, %s)" %
              (mode, want, r.returncode, bad or c[0]["live"] if c else r.stderr.strip()))
    # Redis
    ra, rb = free_port(), free_port()
    for p in (ra, rb):
        d = tempfile.mkdtemp(dir=WORK)
        start(["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", d], p)
        subprocess.run(["redis-cli", "-p", str(p), "set", "reel:key", "hello-reel"],
                       capture_output=True, check=True)
        subprocess.run(["redis-cli", "-p", str(p), "rpush", "reel:list", "a", "b", "c"],
                       capture_output=True, check=True)
    # argument mode: redis-cli's stdin mode first sends COMMAND DOCS, whose
    # reply order differs between two server instances
    rec, _, _ = capture("replay_redis", ra, ("redis-cli -p {p} get reel:key; redis-cli -p {p} "
                                            "incrby reel:n 0; redis-cli -p {p} get reel:key; "
                                            "redis-cli -p {p} ping; "
                                            "redis-cli -p {p} lrange reel:list 0 -1").format(p=ra))
    r, c, s = replay(rec, "--replay-to", "redis://127.0.0.1:%d" % rb, "--baseline",
                     "127.0.0.1:%d" % ra)
    check(r.returncode == 0 and s.get("different") == 0 and s.get("errors") == 0 and
          s.get("same", 0) >= 4, "redis, same data: 0 different, exit 0 (%s)" % s)
    subprocess.run(["redis-cli", "-p", str(rb), "set", "reel:key", "changed-value"],
                   capture_output=True, check=True)
    # the list: 3 items recorded, 6 live, the second changed
    subprocess.run(["redis-cli", "-p", str(rb), "rpush", "reel:list", "d", "e", "f"],
                   capture_output=True, check=True)
    subprocess.run(["redis-cli", "-p", str(rb), "lset", "reel:list", "1", "B"],
                   capture_output=True, check=True)
    r, c, s = replay(rec, "--replay-to", "redis://127.0.0.1:%d" % rb, "--baseline",
                     "127.0.0.1:%d" % ra)
    diff = [(x["method"], x["target"], x["differences"][0]["live"]) for x in c
            if x["result"] == "different" and x["method"] == "GET"]
    lr = [[(d["where"], d["recorded"], d["live"]) for d in x["differences"]] for x in c
          if x["result"] == "different" and x["method"] == "LRANGE"]
    check(r.returncode == 1 and s.get("different") == 3 and len(diff) == 2 and
          all(d[1] == "reel:key" and "changed-value" in d[2] for d in diff),
          "redis, a changed value: the 2 GETs of reel:key and the LRANGE different, exit 1 "
          "(%s)" % diff)
    check(lr == [[("reply", "3 items", "6 items"), ("reply[1]", '"b"', '"B"'),
                  ("reply[3]", "", '"d"'), ("reply[4]", "", '"e"'), ("reply[5]", "", '"f"')]],
          "redis, a list of 3 replayed as 6, its second changed: the sizes, then element by "
          "element (%s)" % lr)
    check('reply: 3 items -> 6 items\n' in r.stdout and
          'reply[3]: (absent) -> "d"\n' in r.stdout,
          "redis: the readable report names the sizes and the missing items")
    r, c, s = replay(rec, "--replay-to", "redis://127.0.0.1:%d" % bad_target("resp-garbage"))
    check(r.returncode == 1 and s.get("errors", 0) >= 4 and
          all("does not parse as RESP" in x["live"]["error"] for x in c),
          "redis, a target that answers garbage: an error per request, exit 1 (%s)" %
          (c[0]["live"] if c else r.stderr.strip()))
    r, c, s = replay(rec, "--replay-to", "redis://127.0.0.1:%d" % bad_target("resp-garbage-open"),
                     "--timeout", "2")
    check(r.returncode == 1 and s.get("errors", 0) >= 4 and
          all("the response is unparsable at byte 0: not a RESP reply (\"hello there.."
              in x["live"]["error"] for x in c),
          "redis, a target that answers garbage and stays: unparsable at byte 0, no "
          "timeout (%s)" % (c[0]["live"] if c else r.stderr.strip()))


def main():
    if os.geteuid() != 0:
        print("skip: capturing needs root")
        sys.exit(77)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    try:
        for p in PARTS:
            globals()["part_" + p]()
    finally:
        for p in PROCS:
            p.terminate()
        for p in PROCS:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    print("checks: %d failed" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
