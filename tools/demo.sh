#!/usr/bin/env bash
# The README's first command: installs what is missing, builds reel, captures the
# bundled demo workload (loopback HTTP/1.1, DNS and RESP traffic between programs
# it starts itself) into demo.reel, then replays it into demo.pcapng and
# demo.jsonl and prints the summary and the tshark command that opens the pcapng.
# Capturing needs root (BPF); the script re-runs itself through sudo if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	exec sudo -E bash "$0" "$@"
fi
tools/deps.sh demo

mkdir -p build
echo "=== building (log: build/build.log)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/build.log 2>&1
if ! cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >>build/build.log 2>&1; then
	tail -n 60 build/build.log
	exit 1
fi

rm -f demo.reel demo.pcapng demo.jsonl
echo "=== capturing the demo workload into demo.reel"
build/capture/reelcap -w demo.reel -- python3 tools/demo_workload.py
echo "=== demo.reel"
build/tools/reeltool info demo.reel
echo "=== replaying demo.reel into demo.pcapng and demo.jsonl"
# The decode hints go to stderr: keep them for the tshark command printed last.
rc=0
build/replay/reelplay demo.reel -w demo.pcapng --json demo.jsonl --summary \
	2>build/demo.stderr || rc=$?
cat build/demo.stderr >&2
[ "$rc" -eq 0 ] || exit "$rc"
echo "=== $(wc -l <demo.jsonl) JSON lines in demo.jsonl"
hints=$(grep -o -- '-d [a-z]*\.port==[0-9]*,[a-z0-9]*' build/demo.stderr | sort -u | tr '\n' ' ' || true)
echo "=== open the packets with:"
echo "tshark -r demo.pcapng ${hints% }"
