#!/usr/bin/env python3
"""reelcap's usage errors and a capture without privileges (issue 23).

  usage_errors.py --reelcap P --work DIR   (exit 0 ok, 1 wrong, 77 skip)

Each bad command line gets exactly two lines on stderr, "reelcap: <what was
wrong>" and "Try 'reelcap --help'.", nothing on stdout, exit 2. Run as nobody
(setpriv, no capabilities), a capture gets the one line saying what it needs,
no libbpf text, exit 1 (a runtime error, capture/README.md), and no file.
"""
import argparse, os, shutil, subprocess, sys

HINT = "Try 'reelcap --help'."
CASES = [
    (["--bogus"], "reelcap: unknown option '--bogus'"),
    (["-w"], "reelcap: option '-w' needs an argument"),
    (["--port"], "reelcap: option '--port' needs an argument"),
    (["-w", "x.reel", "--port", "0"], "reelcap: --port: bad port '0' (1..65535)"),
    (["-w", "x.reel", "-G", "soon"], "reelcap: -G: bad duration 'soon' (seconds > 0)"),
    (["-w", "x.reel", "extra"], "reelcap: unexpected argument 'extra' (a command goes after --)"),
    ([], "reelcap: -w FILE is required"),
]
NEEDS = ("reelcap: capturing needs root or CAP_BPF+CAP_PERFMON+CAP_SYS_ADMIN "
         "(euid %d has not the capabilities)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reelcap", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.reelcap = os.path.abspath(a.reelcap)
    os.makedirs(a.work, exist_ok=True)
    bad = 0
    for args, line in CASES:
        r = subprocess.run([a.reelcap] + args, capture_output=True, text=True, cwd=a.work)
        want = line + "\n" + HINT + "\n"
        ok = r.returncode == 2 and r.stderr == want and r.stdout == ""
        print("%s reelcap %s: exit %d, %d stderr lines" %
              ("ok  " if ok else "FAIL", " ".join(args), r.returncode,
               len(r.stderr.splitlines())))
        if not ok:
            print("  stderr: %r\n  wanted: %r" % (r.stderr, want))
            bad += 1
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("SKIP: the unprivileged run needs root and setpriv")
        sys.exit(1 if bad else 77)
    os.chmod(a.work, 0o777)
    out = os.path.join(a.work, "nobody.reel")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        a.reelcap, "-w", out, "--port", "9"], capture_output=True, text=True)
    uid = int(subprocess.run(["id", "-u", "nobody"], capture_output=True,
                             text=True).stdout)
    want = NEEDS % uid + "\n"
    ok = r.returncode == 1 and r.stderr == want and not os.path.exists(out)
    print("%s as nobody: exit %d, stderr %r" % ("ok  " if ok else "FAIL", r.returncode,
                                                 r.stderr))
    if not ok:
        print("  wanted exit 1, %r, no %s" % (want, out))
        bad += 1
    print("FAIL: %d" % bad if bad else "OK")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
