#!/bin/bash
# bench_cost.sh REELCAP NGINX_WORKER_PID URL [reelcap args...]
# CPU cost of capturing a wrk load, per request, measured as CPU time rather
# than throughput (robust on a shared machine): the untraced cost is wrk's
# and the nginx worker's CPU per request; the capture's cost is the BPF
# programs' run time (kernel.bpf_stats_enabled) plus reelcap's own CPU.
# Prints the estimated throughput ratio base / (base + capture).
set -eu
REELCAP=$1 WORKER=$2 URL=$3
shift 3
DUR=${DUR:-4}
sysctl -qw kernel.bpf_stats_enabled=1
cpu() { awk '{print $14 + $15}' /proc/$1/stat; } # utime + stime, clock ticks
hz=$(getconf CLK_TCK)
run_wrk() { # prints: requests cpu_ticks_wrk
	local out
	out=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t1 -c8 -d${DUR}s "$URL"; } 2>&1)
	echo "$(echo "$out" | awk '/requests in/{print $1}') $(echo "$out" | awk '/WRKCPU/{print ($2+$3)}')"
}
w0=$(cpu $WORKER); read -r req0 wcpu0 < <(run_wrk); w1=$(cpu $WORKER)
base=$(echo "($wcpu0 + ($w1 - $w0) / $hz) / $req0 * 1000000" | bc -l)
tmp=$(mktemp -d)
"$REELCAP" -q -w "$tmp/b.reel" "$@" 2>"$tmp/err" &
rp=$!
sleep 2
# the programs of the newest reel_trace object: same btf_id as the newest enter_read
bpftime() {
	bpftool -j prog show | python3 -c '
import json, sys
d = json.load(sys.stdin)
er = [p for p in d if p.get("name") == "enter_read"]
if not er:
    print(0); sys.exit()
b = max(er, key=lambda p: p["id"])["btf_id"]
print(sum(p.get("run_time_ns", 0) for p in d if p.get("btf_id") == b))'
}
bpf0=$(bpftime)
r0=$(cpu $rp); w0=$(cpu $WORKER); read -r req1 wcpu1 < <(run_wrk); w1=$(cpu $WORKER); r1=$(cpu $rp)
bpf1=$(bpftime)
kill -INT $rp; wait $rp || true
traced=$(echo "($wcpu1 + ($w1 - $w0) / $hz) / $req1 * 1000000" | bc -l)
bpf=$(echo "($bpf1 - $bpf0) / 1000 / $req1" | bc -l)
rc=$(echo "($r1 - $r0) / $hz / $req1 * 1000000" | bc -l)
printf "untraced: %d req, %.1f us CPU/req (wrk+nginx)\n" $req0 $base
printf "traced:   %d req, %.1f us CPU/req (wrk+nginx, BPF time included in their stime)\n" $req1 $traced
printf "capture:  BPF %.2f us/req, reelcap %.2f us/req\n" $bpf $rc
printf "estimated throughput ratio (CPU-bound): %.3f\n" $(echo "$base / ($base + $bpf + $rc)" | bc -l)
tail -1 "$tmp/err"
rm -rf "$tmp"
