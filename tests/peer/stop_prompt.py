#!/usr/bin/env python3
"""Ctrl-C stops reelcap promptly (issue 23).

  stop_prompt.py --reelcap P --reeltool P --work DIR   (exit 0 ok, 1 wrong, 77 skip)

1. `reelcap -w x.reel --port P` (TLS on), one exchange of synthetic bytes on P,
   one SIGINT: "reelcap: stopping (Ctrl-C again to stop at once)" at once, the
   final line, and the exit within BOUND_S of the SIGINT (the uprobes are
   detached after reelcap is gone: ~0.1 s each before, 5-10 s with the
   system's TLS libraries hooked). The file verifies and holds the exchange's
   bytes. The figures measured are printed.
2. `reelcap -w y.reel -- sh -c 'trap "" INT TERM; sleep 8'`: the command
   ignores the signal passed on; a second SIGINT stops at once: exit 130
   within BOUND_S of it, the file complete (footer).
"""
import argparse, os, signal, socket, subprocess, sys, time

BOUND_S = 3.0  # generous: the stop itself takes milliseconds here
MSG = "reelcap: stopping (Ctrl-C again to stop at once)"
PAYLOAD = b"stop-prompt synthetic request\n" * 7


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(cmd):
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    lines = []
    while True:
        l = p.stderr.readline()
        if not l:
            sys.exit("FAIL: reelcap ended before capturing: %s" % "".join(lines))
        lines.append(l)
        if "capturing to" in l:
            return p, lines


def rest(p, lines, t_sig):
    """Reads stderr to its end: (lines, when each came, exit time)."""
    when = []
    for l in p.stderr:
        lines.append(l)
        when.append((time.monotonic() - t_sig, l.rstrip()))
    p.wait()
    return when, time.monotonic() - t_sig


def verify(reeltool, path):
    r = subprocess.run([reeltool, "verify", path], capture_output=True, text=True)
    if r.returncode != 0 or "footer index agrees" not in r.stdout:
        sys.exit("FAIL: %s does not verify: %s%s" % (path, r.stdout, r.stderr))


def one_sigint(a):
    port, path = free_port(), os.path.join(a.work, "x.reel")
    p, lines = start([a.reelcap, "-w", path, "--port", str(port)])
    srv = socket.socket()
    srv.bind(("127.0.0.1", port))
    srv.listen(1)
    c = socket.create_connection(("127.0.0.1", port))
    s, _ = srv.accept()
    c.sendall(PAYLOAD)
    got = b""
    while len(got) < len(PAYLOAD):
        got += s.recv(65536)
    s.sendall(got[::-1])
    back = b""
    while len(back) < len(PAYLOAD):
        back += c.recv(65536)
    c.close(), s.close(), srv.close()
    time.sleep(0.3)
    t_sig = time.monotonic()
    p.send_signal(signal.SIGINT)
    when, t_exit = rest(p, lines, t_sig)
    for t, l in when:
        print("  +%.3f s %s" % (t, l))
    stop = [t for t, l in when if l == MSG]
    final = [t for t, l in when if l.startswith("reelcap: final:")]
    print("one SIGINT: stopping said at +%s s, final line at +%s s, exit at +%.3f s "
          "(%.3f s after the final line), status %d" %
          ("%.3f" % stop[0] if stop else "-", "%.3f" % final[0] if final else "-", t_exit,
           t_exit - final[0] if final else -1, p.returncode))
    if not stop or not final or stop[0] > final[0]:
        sys.exit("FAIL: no '%s' line before the final line" % MSG)
    if p.returncode != 0:
        sys.exit("FAIL: exit status %d after one SIGINT, 0 expected" % p.returncode)
    if t_exit > BOUND_S:
        sys.exit("FAIL: exit %.3f s after the SIGINT (bound %.1f s)" % (t_exit, BOUND_S))
    verify(a.reeltool, path)
    # every record emitted before the stop is in the file: the exchange's
    # 4 calls (send, recv at each end) of len(PAYLOAD) bytes
    r = subprocess.run([a.reeltool, "cat", path], capture_output=True, text=True)
    data = [l for l in r.stdout.splitlines() if " DATA " in l and " len %d " % len(PAYLOAD) in l]
    print("\n".join(data))
    if len(data) != 4:
        sys.exit("FAIL: %d DATA records of %d bytes in %s, 4 expected" %
                 (len(data), len(PAYLOAD), path))


def second_sigint(a):
    path, log = os.path.join(a.work, "y.reel"), os.path.join(a.work, "y.err")
    # stderr to a file: the command keeps it open after reelcap is gone
    with open(log, "w") as err:
        p = subprocess.Popen([a.reelcap, "-w", path, "--", "sh", "-c",
                              'trap "" INT TERM; sleep 8'], stderr=err)
    for _ in range(600):
        if "capturing to" in open(log).read() or p.poll() is not None:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    t_sig = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    t_exit = time.monotonic() - t_sig
    print(open(log).read().rstrip())
    print("second SIGINT: exit at +%.3f s, status %d" % (t_exit, p.returncode))
    if MSG not in open(log).read():
        sys.exit("FAIL: no '%s' line" % MSG)
    if p.returncode != 130:
        sys.exit("FAIL: exit status %d after a second SIGINT, 130 expected" % p.returncode)
    if t_exit > BOUND_S:
        sys.exit("FAIL: exit %.3f s after the second SIGINT (bound %.1f s)" % (t_exit, BOUND_S))
    verify(a.reeltool, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reelcap", required=True)
    ap.add_argument("--reeltool", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
    os.makedirs(a.work, exist_ok=True)
    one_sigint(a)
    second_sigint(a)
    print("OK")


if __name__ == "__main__":
    main()
