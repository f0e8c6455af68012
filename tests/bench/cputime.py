#!/usr/bin/env python3
"""cputime.py OUT CMD [ARGS...]: runs CMD, forwards SIGINT/SIGTERM to it, and when
it exits writes its user+system CPU seconds (children included) to OUT.
The capture benchmark wraps each tracer (reelcap, perf record) in it."""
import resource
import signal
import subprocess
import sys

out = sys.argv[1]
p = subprocess.Popen(sys.argv[2:])
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda sig, _f: p.send_signal(sig))
rc = p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    f.write("%.3f\n" % (r.ru_utime + r.ru_stime))
sys.exit(rc if rc >= 0 else 128 - rc)
