#!/bin/bash
# bpf_prog_cost.sh EVGEN REELCAP_A REELCAP_B [ROUNDS] [SIZES]
# The kernel-side cost per captured call of two reelcap builds (e.g. main's
# and a branch's), from kernel.bpf_stats_enabled: run_time_ns / run_cnt of
# the sys_exit programs of write and read, while `reelcap -- evgen` moves
# messages of each size over loopback TCP (2 captured calls per message).
# Rounds alternate A and B; prints per size the median ns per run of
# exit_write and exit_read for each, and B/A. bpf_stats itself adds ~45 ns
# to every run, the same for both. Root only.
set -eu
EVGEN=$1 A=$2 B=$3 ROUNDS=${4:-5} SIZES=${5:-"64 1024 4096"}
RATE=${RATE:-20000} SECS=${SECS:-3}
tmp=$(mktemp -d)
# bpf_stats costs every BPF program on the host two clock reads: put it back
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
trap 'rm -rf "$tmp"; sysctl -qw kernel.bpf_stats_enabled="$stats_was"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

# run_time_ns run_cnt of the newest program called $1
prog_stats() {
	bpftool -j prog show | python3 -c '
import json, sys
d = [p for p in json.load(sys.stdin) if p.get("name") == sys.argv[1]]
p = max(d, key=lambda p: p["id"]) if d else {}
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$1"
}

one() { # reelcap size -> "ns_write ns_read"
	"$1" -q -w "$tmp/x.reel" -- sh -c "$EVGEN $RATE $SECS $2 >/dev/null; sleep 3" &
	local rp=$!
	sleep $((SECS + 2))
	read -r tw cw < <(prog_stats exit_write)
	read -r tr cr < <(prog_stats exit_read)
	wait $rp || true
	echo "$((cw ? tw / cw : 0)) $((cr ? tr / cr : 0))"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for size in $SIZES; do
	: >"$tmp/a_w"; : >"$tmp/a_r"; : >"$tmp/b_w"; : >"$tmp/b_r"
	for r in $(seq "$ROUNDS"); do
		read -r w rd < <(one "$A" "$size"); echo "$w" >>"$tmp/a_w"; echo "$rd" >>"$tmp/a_r"
		read -r w rd < <(one "$B" "$size"); echo "$w" >>"$tmp/b_w"; echo "$rd" >>"$tmp/b_r"
	done
	aw=$(median <"$tmp/a_w"); ar=$(median <"$tmp/a_r")
	bw=$(median <"$tmp/b_w"); br=$(median <"$tmp/b_r")
	printf "%6s B: exit_write A %5d ns  B %5d ns (%.2f) | exit_read A %5d ns  B %5d ns (%.2f)\n" \
		"$size" "$aw" "$bw" "$(echo "$bw / $aw" | bc -l)" "$ar" "$br" "$(echo "$br / $ar" | bc -l)"
done
