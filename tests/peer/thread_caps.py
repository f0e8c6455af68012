#!/usr/bin/env python3
"""Capabilities of every reelcap thread after attach (issue 22, item 9).

Capabilities are per thread on Linux. `reelcap -w F -- CHILD`: the child is
released once setup is done (programs attached, capabilities dropped, writer
started) and reads CapEff/CapPrm of each thread of its parent, reelcap, from
/proc/PPID/task/*/status. Expected:
  main thread (the drain):   CAP_DAC_READ_SEARCH (file fill), + CAP_DAC_OVERRIDE with -C
  TLS discovery thread:      CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,
                             CAP_KILL, CAP_SYS_NICE (the exec hold)
                             (--no-tls: without CAP_SYS_ADMIN)
  every other thread:        none (the writer's compression thread)

  thread_caps.py --reelcap P --work DIR   (exit 0 ok, 1 wrong, 77 skip)
"""
import argparse, json, os, shutil, subprocess, sys

DAC_OVERRIDE, DAC_READ_SEARCH, KILL, SYS_PTRACE, SYS_ADMIN, SYS_NICE = 1, 2, 5, 19, 21, 23

CHILD = r"""
import json, os, sys, time
ppid, want_tls, out = os.getppid(), int(sys.argv[1]), sys.argv[2]
def threads():
    res = {}
    for tid in os.listdir("/proc/%d/task" % ppid):
        st = open("/proc/%d/task/%s/status" % (ppid, tid)).read().split("\n")
        f = dict(l.split(":\t", 1) for l in st if ":\t" in l)
        res[int(tid)] = (int(f["CapEff"], 16), int(f["CapPrm"], 16))
    return res
# the TLS thread drops its own at its start: wait for it (10 s at most)
for _ in range(100):
    t = threads()
    if any(e == want_tls for e, _ in t.values()):
        break
    time.sleep(0.1)
json.dump({"main": ppid, "threads": {str(k): v for k, v in t.items()}}, open(out, "w"))
"""


def run(args, extra, want_main, want_tls):
    tag = "-".join(x.strip("-") for x in extra) or "default"
    reel = os.path.join(args.work, tag + ".reel")
    res = os.path.join(args.work, tag + ".json")
    child = os.path.join(args.work, "child.py")
    subprocess.run([args.reelcap, "-q", "-w", reel] + extra +
                   ["--", sys.executable, child, str(want_tls), res], check=True)
    d = json.load(open(res))
    th = {int(k): tuple(v) for k, v in d["threads"].items()}
    show = ", ".join("%d%s: eff %#x prm %#x" % (k, " (main)" if k == d["main"] else "", e, p)
                     for k, (e, p) in sorted(th.items()))
    print("thread_caps %s: %d threads: %s" % (tag, len(th), show))
    ok = th.get(d["main"]) == (want_main, want_main)
    others = [v for k, v in th.items() if k != d["main"]]
    ok &= others.count((want_tls, want_tls)) == 1
    ok &= all(v in ((want_tls, want_tls), (0, 0)) for v in others)
    ok &= others.count((0, 0)) >= 1  # the writer's compression thread
    if not ok:
        print("thread_caps %s: expected main %#x, one thread %#x, the others 0" %
              (tag, want_main, want_tls))
    return ok


ap = argparse.ArgumentParser()
for a in ("reelcap", "work"):
    ap.add_argument("--" + a, required=True)
args = ap.parse_args()
if os.geteuid() != 0:
    print("thread_caps: needs root (BPF): skipped")
    sys.exit(77)
shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
open(os.path.join(args.work, "child.py"), "w").write(CHILD)
tls = 1 << SYS_ADMIN | 1 << SYS_PTRACE | 1 << DAC_READ_SEARCH | 1 << KILL | 1 << SYS_NICE
ok = run(args, [], 1 << DAC_READ_SEARCH, tls)
ok &= run(args, ["-C", "1M"], 1 << DAC_READ_SEARCH | 1 << DAC_OVERRIDE, tls)
ok &= run(args, ["--no-tls"], 1 << DAC_READ_SEARCH, tls & ~(1 << SYS_ADMIN))
sys.exit(0 if ok else 1)
