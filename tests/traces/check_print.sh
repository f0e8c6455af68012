#!/bin/sh
# check_print.sh REELCAP REELPLAY WORKLOAD WORKDIR: `reelcap --print` live and
# `reelplay --print` on the file it wrote must print identical text (the
# workload's own stdout goes to a file, not into the comparison).
# (--print-procs: the process events of every process, as reelplay prints them)
# Needs root (BPF): exit 77 (skip) when not root.
set -u
reelcap=$1 reelplay=$2 workload=$3 work=$4
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: capturing needs root"
	exit 77
fi
mkdir -p "$work"
rm -f "$work/x.reel" "$work/live.txt" "$work/replay.txt" "$work/workload.out"
"$reelcap" -q -w "$work/x.reel" --print --print-procs -- \
	sh -c 'exec python3 "$0" >"$1"' "$workload" "$work/workload.out" >"$work/live.txt"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: reelcap (or the workload) exited $rc"
	cat "$work/workload.out"
	exit 1
fi
"$reelplay" "$work/x.reel" --print >"$work/replay.txt"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: reelplay --print exited $rc"
	exit 1
fi
n=$(grep -c ' TXN ' "$work/live.txt")
# the demo's 12 TCP exchanges once (both ends traced), its 3 UDP queries at each end
if [ "$n" -lt 18 ]; then
	echo "FAIL: live --print shows only $n transactions (the demo makes 18)"
	exit 1
fi
if ! diff -u "$work/live.txt" "$work/replay.txt"; then
	echo "FAIL: reelcap --print (-) and reelplay --print (+) differ"
	exit 1
fi
echo "ok: $(wc -l <"$work/live.txt") lines ($n transactions) identical live and replayed"
