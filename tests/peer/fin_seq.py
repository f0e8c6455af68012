#!/usr/bin/env python3
"""TCP sequence numbers when a read also consumes the peer's FIN (issue 10):
the client corks 1000 bytes and closes, so its FIN rides on the data
segment and the server's one read takes both; copied_seq then counts the
FIN, and the DATA chunk's tcp_seq must still equal the sender's.

  fin_seq.py --reelcap P --reeltool P --work DIR   (exit 0 ok, 1 wrong, 77 skip)
"""
import argparse, json, os, shutil, subprocess, sys

PEER = r"""
import os, socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
port = s.getsockname()[1]
if os.fork() == 0:
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    c.sendall(b"x" * 1000)
    c.close()
    os._exit(0)
a, _ = s.accept()
time.sleep(0.2)
assert len(a.recv(65536)) == 1000
a.close()
os.wait()
"""

ap = argparse.ArgumentParser()
for a in ("reelcap", "reeltool", "work"):
    ap.add_argument("--" + a, required=True)
args = ap.parse_args()
if os.geteuid() != 0:
    print("fin_seq: needs root (BPF): skipped")
    sys.exit(77)
shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
peer, reel = os.path.join(args.work, "peer.py"), os.path.join(args.work, "fin.reel")
open(peer, "w").write(PEER)
subprocess.run([args.reelcap, "-q", "-w", reel, "--", sys.executable, peer], check=True)
out = subprocess.run([args.reeltool, "cat", "--json", reel], stdout=subprocess.PIPE,
                     check=True).stdout.decode()
seq = {}
for line in out.splitlines():
    d = json.loads(line)
    if d.get("event") == "DATA" and d.get("len") == 1000:
        seq[d["dir"]] = d["tcp_seq"] - d["stream_pos"]
print("fin_seq: tcp_seq - stream_pos: %r" % seq)
sys.exit(0 if len(seq) == 2 and seq["egress"] == seq["ingress"] else 1)
