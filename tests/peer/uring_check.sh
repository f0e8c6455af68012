#!/bin/sh
# uring_check: `reelcap -- reel_uring_peer`, then reel_check (positions tile
# every stream exactly, across io_uring and syscall calls on one socket;
# totals equal the peer's and the CONN_CLOSE totals; syscall bytes equal),
# and the io_uring sends and receives are there as length-only chunks
# (syscall io_uring), some from io-wq workers (tid != pid).
# Needs root (BPF); exits 77 when not root or the peer was not built.
set -u
REELCAP=$1 PEER=$2 CHECK=$3 REELTOOL=$4 WORK=$5
if [ "$(id -u)" != 0 ] || [ ! -x "$PEER" ]; then
	echo "uring_check: needs root and reel_uring_peer (liburing): skipped"
	exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
"$REELCAP" -q -w "$WORK/u.reel" -- "$PEER" --manifest "$WORK/manifest.txt" --rounds 3 || {
	echo "uring_check: reelcap -- reel_uring_peer failed"
	exit 1
}
"$CHECK" "$WORK/u.reel" "$WORK/manifest.txt" || exit 1
"$REELTOOL" cat "$WORK/u.reel" >"$WORK/cat.txt" 2>/dev/null
uring=$(grep -c ' io_uring .* length-only uring' "$WORK/cat.txt")
sys=$(grep -cE ' tcp (write|read) ' "$WORK/cat.txt")
workers=$(grep ' io_uring ' "$WORK/cat.txt" | awk '{split($4, a, "/"); if (a[1] != a[2]) n++} END {print n + 0}')
echo "uring_check: $uring io_uring chunks ($workers from io-wq workers), $sys syscall chunks"
# 18 messages each way, a quarter of each direction by write/read
[ "$uring" -ge 18 ] && [ "$sys" -ge 9 ] && [ "$workers" -ge 1 ] || {
	echo "uring_check: FAIL: too few io_uring/syscall/worker chunks"
	exit 1
}
echo "uring_check: ok"
