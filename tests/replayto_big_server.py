#!/usr/bin/env python3
"""A target for the --replay-to memory test: answers every request with a
1 GiB value, generated (a 1 MiB buffer written 1024 times), never stored.

  replayto_big_server.py http|redis SIZE
prints its port on stdout, serves one connection after another until killed:
  http:  reads a header block, answers "HTTP/1.1 200 OK", Content-Length SIZE,
         SIZE bytes of 'x' and closes;
  redis: reads a command, answers a bulk string "$SIZE" of 'x' and closes.
"""
import socket, sys

mode, size = sys.argv[1], int(sys.argv[2])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(8)
sys.stdout.write("%d\n" % srv.getsockname()[1])
sys.stdout.flush()
chunk = b"x" * (1 << 20)
while True:
    c, _ = srv.accept()
    try:
        got = b""
        while (b"\r\n\r\n" if mode == "http" else b"\r\n") not in got:
            d = c.recv(65536)
            if not d:
                break
            got += d
        if mode == "http":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: %d\r\n\r\n" % size)
        else:
            c.sendall(b"$%d\r\n" % size)
        left = size
        while left:
            n = min(left, len(chunk))
            c.sendall(chunk[:n])
            left -= n
        if mode == "redis":
            c.sendall(b"\r\n")
    except OSError:
        pass
    c.close()
