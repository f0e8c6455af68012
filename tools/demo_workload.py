#!/usr/bin/env python3
"""reel's bundled demo workload: loopback traffic between programs it starts itself.

Runs, in one process tree, with only synthetic data:
  - an HTTP/1.1 server (keep-alive) on 127.0.0.1 and a client making GET and POST requests,
    one of them a 404, over one keep-alive connection and a few fresh ones;
  - a minimal DNS responder over UDP on 127.0.0.1 and a client resolving names (one NXDOMAIN);
  - a RESP (Redis protocol) echo server on [::1] and a client sending pipelined commands.
It prints what it did and exits 0 when every exchange returned what it expected.
"""
import http.client
import http.server
import socket
import socketserver
import struct
import sys
import threading

BODY = b"reel demo payload " * 40  # 720 bytes, synthetic


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/missing"):
            body = b"not here\n"
            self.send_response(404)
        else:
            body = BODY
            self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        body = b"got %d bytes\n" % len(data)
        self.send_response(201)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ThreadingHTTP(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def http_demo():
    srv = ThreadingHTTP(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    results = []
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for path in ("/index.html", "/api/items?id=7", "/missing/page"):
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        results.append(r.status)
    conn.request("POST", "/api/upload", body=b"x" * 3000,
                 headers={"Content-Type": "application/octet-stream"})
    r = conn.getresponse()
    r.read()
    results.append(r.status)
    conn.close()
    for i in range(3):
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("GET", "/fresh/%d" % i)
        r = c.getresponse()
        r.read()
        results.append(r.status)
        c.close()
    srv.shutdown()
    srv.server_close()
    ok = results == [200, 200, 404, 201, 200, 200, 200]
    print("http: %d requests on 127.0.0.1:%d, statuses %s" % (len(results), port, results))
    return ok


def dns_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def dns_server(sock, table, stop):
    while not stop.is_set():
        try:
            data, peer = sock.recvfrom(512)
        except socket.timeout:
            continue
        qid, flags, qd = struct.unpack("!HHH", data[:6])
        q = data[12:]
        end = q.index(b"\0") + 5
        question = q[:end]
        labels, i = [], 0
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode())
            i += 1 + q[i]
        name = ".".join(labels)
        addr = table.get(name)
        if addr:
            hdr = struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0)
            ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr)
        else:
            hdr = struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0)
            ans = b""
        sock.sendto(hdr + question + ans, peer)


def dns_demo():
    table = {"web.demo.test": "10.0.0.7", "db.demo.test": "10.0.0.8"}
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    srv.settimeout(0.1)
    port = srv.getsockname()[1]
    stop = threading.Event()
    t = threading.Thread(target=dns_server, args=(srv, table, stop), daemon=True)
    t.start()
    cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cli.settimeout(2)
    rcodes = []
    for qid, name in enumerate(("web.demo.test", "db.demo.test", "nope.demo.test"), 1):
        query = struct.pack("!HHHHHH", 0x1000 + qid, 0x0100, 1, 0, 0, 0) + dns_name(name) + \
            struct.pack("!HH", 1, 1)
        cli.sendto(query, ("127.0.0.1", port))
        resp, _ = cli.recvfrom(512)
        rcodes.append(struct.unpack("!H", resp[2:4])[0] & 0xF)
    cli.close()
    stop.set()
    t.join()
    srv.close()
    print("dns: 3 queries to 127.0.0.1:%d, rcodes %s" % (port, rcodes))
    return rcodes == [0, 0, 3]


def resp_server(srv, store):
    conn, _ = srv.accept()
    buf = b""
    with conn:
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while buf.startswith(b"*") and b"\r\n" in buf:
                # parse one array of bulk strings
                lines = buf.split(b"\r\n")
                n = int(lines[0][1:])
                if len(lines) < 1 + 2 * n + 1:
                    break
                args = [lines[2 + 2 * i] for i in range(n)]
                consumed = sum(len(x) + 2 for x in lines[:1 + 2 * n])
                buf = buf[consumed:]
                cmd = args[0].upper()
                if cmd == b"SET":
                    store[args[1]] = args[2]
                    conn.sendall(b"+OK\r\n")
                elif cmd == b"GET":
                    v = store.get(args[1])
                    conn.sendall(b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
                elif cmd == b"INCR":
                    v = int(store.get(args[1], b"0")) + 1
                    store[args[1]] = b"%d" % v
                    conn.sendall(b":%d\r\n" % v)
                else:
                    conn.sendall(b"-ERR unknown command '%s'\r\n" % args[0])


def resp_cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def redis_demo():
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.bind(("::1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    t = threading.Thread(target=resp_server, args=(srv, {}), daemon=True)
    t.start()
    cli = socket.create_connection(("::1", port))
    cmds = [resp_cmd(b"SET", b"user:1", b"alice"), resp_cmd(b"GET", b"user:1"),
            resp_cmd(b"INCR", b"hits"), resp_cmd(b"GET", b"nokey"), resp_cmd(b"FLY", b"x")]
    cli.sendall(b"".join(cmds))  # pipelined
    want = b"+OK\r\n$5\r\nalice\r\n:1\r\n$-1\r\n-ERR unknown command 'FLY'\r\n"
    got = b""
    while len(got) < len(want):
        d = cli.recv(4096)
        if not d:
            break
        got += d
    cli.close()
    t.join()
    srv.close()
    print("redis: 5 pipelined commands to [::1]:%d, %d reply bytes" % (port, len(got)))
    return got == want


def main():
    ok = http_demo() & dns_demo() & redis_demo()
    print("demo workload:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
