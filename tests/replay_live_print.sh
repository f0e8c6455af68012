#!/usr/bin/env bash
# reelcap --print (live, through the replay pipeline fed by the ring drain)
# prints exactly what reelplay --print prints from the file reelcap wrote.
# (--print-procs: the process events of every process, as reelplay prints them)
# Needs root and BPF; exits 77 (skipped) without root.
#   replay_live_print.sh REELCAP REELPLAY
set -euo pipefail
REELCAP=$1
REELPLAY=$2
if [ "$(id -u)" -ne 0 ]; then
	echo "replay_live_print: needs root (BPF): skipped"
	exit 77
fi
for t in python3 curl; do
	command -v "$t" >/dev/null || { echo "replay_live_print: $t missing: skipped"; exit 77; }
done
dir=$(mktemp -d /tmp/reel-live-print.XXXXXX)
srv=
cleanup() {
	if [ -n "$srv" ]; then
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo hello >"$dir/index.txt"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$port/index.txt" && break
	sleep 0.1
done

"$REELCAP" -q -w "$dir/t.reel" --print --print-procs --port "$port" -- \
	sh -c "for i in 1 2 3; do curl -s -o /dev/null http://127.0.0.1:$port/index.txt; done" \
	>"$dir/live.txt"
"$REELPLAY" "$dir/t.reel" --print >"$dir/file.txt"
diff -u "$dir/live.txt" "$dir/file.txt"
n=$(grep -c ' TXN .* GET /index.txt status 200' "$dir/file.txt" || true)
if [ "$n" -ne 3 ]; then
	echo "replay_live_print: want 3 GET /index.txt transactions, got $n" >&2
	cat "$dir/file.txt" >&2
	exit 1
fi
echo "replay_live_print: $(wc -l <"$dir/file.txt") lines identical live and from the file"
