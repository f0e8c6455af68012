#!/bin/sh
# capture_smoke: reelcap -w F -- reel_peer --manifest M, then reel_check F M.
# Then the threads' priorities: the drain SCHED_FIFO 1 (the default
# --drain-rt), every other thread (compression, TLS discovery) SCHED_OTHER
# at nice 0; with --drain-rt 0 the drain at nice -10.
# Needs root (BPF); exits 77 (skipped) only when not root.
set -u
REELCAP=$1 PEER=$2 CHECK=$3 WORK=$4
if [ "$(id -u)" != 0 ]; then
	echo "capture_smoke: needs root (BPF): skipped"
	exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
"$REELCAP" -q --ring-pages 4096 -w "$WORK/smoke.reel" -- "$PEER" -q --manifest "$WORK/manifest.txt"
rc=$?
if [ $rc != 0 ]; then
	echo "capture_smoke: reelcap -- reel_peer exited $rc"
	exit 1
fi
"$CHECK" "$WORK/smoke.reel" "$WORK/manifest.txt" || exit 1

# policy nice of each thread of pid $1, one line each, the main thread first
threads() {
	for t in /proc/$1/task/$1 $(ls -d /proc/$1/task/* | grep -v "/task/$1\$"); do
		# fields after the ")" of comm: 17 = nice, 39 = policy
		sed 's/.*) //' "$t/stat" | awk '{print $39, $17}'
	done
}

# $1 = extra reelcap options, $2 = the drain's "policy nice", $3 = a name
prio_case() {
	out="$WORK/prio.reel"
	rm -f "$out"
	# shellcheck disable=SC2086
	"$REELCAP" -q $1 -w "$out" -- sleep 10 &
	pid=$!
	# the drain's priority is set once the capture runs, which on a busy
	# host comes seconds after the threads exist (the TLS examination at
	# start): look until it is what is wanted, for 15 s at most
	i=0
	while [ $i -lt 150 ]; do
		sleep 0.1
		i=$((i + 1))
		[ -f "$out" ] && [ "$(ls /proc/$pid/task | wc -l)" -ge 2 ] || continue
		got=$(threads $pid)
		[ "$(echo "$got" | head -1)" = "$2" ] && break
	done
	sleep 0.2
	got=$(threads $pid)
	kill -TERM $pid
	wait $pid
	drain=$(echo "$got" | head -1)
	others=$(echo "$got" | tail -n +2 | sort -u)
	if [ "$drain" != "$2" ]; then
		echo "capture_smoke: $3: the drain runs at '$drain' (policy nice), want '$2'"
		exit 1
	fi
	if [ -z "$others" ] || [ "$others" != "0 0" ]; then
		echo "capture_smoke: $3: other threads at '$others' (policy nice), want '0 0' (SCHED_OTHER, nice 0)"
		exit 1
	fi
	echo "capture_smoke: $3: drain '$drain', $(echo "$got" | tail -n +2 | wc -l) other thread(s) '0 0' (policy nice)"
}
prio_case "" "1 -10" "default"
prio_case "--drain-rt 0" "0 -10" "--drain-rt 0"
exit 0
