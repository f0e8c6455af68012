#!/bin/sh
# capture_smoke: reelcap -w F -- reel_peer --manifest M, then reel_check F M.
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
"$CHECK" "$WORK/smoke.reel" "$WORK/manifest.txt"
