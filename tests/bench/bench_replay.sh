#!/usr/bin/env bash
# Replay benchmark on real captured traffic (not in ctest; run by hand, as root):
#
#   tests/bench/bench_replay.sh [SECONDS]        # default 3; the large file is 10x longer
#
# 1. captures wrk against nginx (1 KiB bodies, keep-alive, both ends captured:
#    -p NGINX --port P -- wrk) for SECONDS into small.reel and 10*SECONDS into
#    large.reel;
# 2. times `reelplay FILE -w out.pcapng --json out.jsonl` (payload MB/s, payload
#    from reelplay's own summary) and, on the small file, `tshark -r out.pcapng
#    -q -z http,tree` with reelplay's decode hints, and prints the ratio
#    (target: reelplay >= 10x faster);
# 3. peak RSS of reelplay (getrusage RUSAGE_CHILDREN in a python wrapper, one
#    fresh wrapper per run) on the small and the 10x file: memory must stay flat.
#    (The reader's merge holds 2 s of records: keep SECONDS >= 3 so the small
#    file is not shorter than that window.)
# Times are wall clock and CPU (user + sys) of the child: on a shared host the
# CPU ratio is the steadier one.
#
# Uses $REEL_BUILD (default build/; a Release build is what the figures mean).
# Everything is compared within one run on this machine; nothing is asserted.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${REEL_BUILD:-$ROOT/build}
SECS=${1:-3}
PORT=${BENCH_PORT:-27280}
REELCAP=$BUILD/capture/reelcap
REELPLAY=$BUILD/replay/reelplay

[ "$(id -u)" -eq 0 ] || { echo "bench_replay.sh: capturing needs root" >&2; exit 1; }
for b in "$REELCAP" "$REELPLAY"; do
	[ -x "$b" ] || { echo "bench_replay.sh: $b missing (build first, or set REEL_BUILD)" >&2; exit 1; }
done
for t in wrk nginx tshark python3; do
	command -v $t >/dev/null || { echo "bench_replay.sh: $t not installed" >&2; exit 1; }
done

# shellcheck source=../peers/peers.sh
. "$ROOT/tests/peers/peers.sh"
peers_init
if ss -Hlnt "sport = :$PORT" | grep -q .; then
	echo "bench_replay.sh: port $PORT is taken (set BENCH_PORT)" >&2
	exit 1
fi
start_nginx "$PORT" 1 >/dev/null
W=$PEER_DIR/bench
mkdir -p "$W"

# measure CMD...: runs CMD in a fresh python; prints "SECONDS MAXRSS_KIB EXIT CPUSECONDS"
measure() {
	python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dt = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %d %d %.3f" % (dt, ru.ru_maxrss, rc, ru.ru_utime + ru.ru_stime))
PY
}

capture() { # NAME SECONDS
	"$REELCAP" -q -w "$W/$1.reel" -p "$NGINX_PID" --port "$PORT" -- \
		wrk -t1 -c8 -d"$2"s "http://127.0.0.1:$PORT/b1k" >"$W/$1.wrk" 2>"$W/$1.cap"
	echo "captured $1: $2 s of wrk: $(grep -E 'Requests/sec' "$W/$1.wrk" | tr -s ' ')," \
		"$(stat -c %s "$W/$1.reel") bytes on disk; $(grep -o 'final:.*' "$W/$1.cap")"
}

echo "=== capture (nginx 1 KiB bodies on 127.0.0.1:$PORT, both ends)"
capture small "$SECS"
capture large $((SECS * 10))

payload() { # FILE -> captured payload bytes, from reelplay's summary
	"$REELPLAY" "$1" --summary 2>/dev/null | sed -n 's/^captured payload \([0-9]*\) bytes.*/\1/p'
}

echo "=== replay: reelplay FILE -w out.pcapng --json out.jsonl"
declare -A SEC RSS PAY CPU
for f in small large; do
	PAY[$f]=$(payload "$W/$f.reel")
	# warm the page cache, then time
	cat "$W/$f.reel" >/dev/null
	read -r s r rc c < <(measure "$REELPLAY" "$W/$f.reel" -w "$W/$f.pcapng" --json "$W/$f.jsonl")
	[ "$rc" = 0 ] || echo "reelplay exited $rc on $f.reel" >&2
	SEC[$f]=$s
	RSS[$f]=$r
	CPU[$f]=$c
	python3 -c "
import sys
pay, s, rss, pc, js, c = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[7])
print('%-5s payload %7.1f MB  wall %6.2f s = %6.1f MB/s  cpu %6.2f s = %6.1f MB/s  peak RSS %6.1f MiB  (pcapng %.0f MB, JSON %.0f MB)' %
      (sys.argv[6], pay / 1e6, s, pay / 1e6 / s, c, pay / 1e6 / c, rss / 1024, pc / 1e6, js / 1e6))" \
		"${PAY[$f]}" "$s" "$r" "$(stat -c %s "$W/$f.pcapng")" "$(stat -c %s "$W/$f.jsonl")" "$f" "$c"
	rm -f "$W/$f.jsonl"
done

echo "=== reference: tshark -r small.pcapng -q -z http,tree (same traffic)"
hints=$("$REELPLAY" "$W/small.reel" -w "$W/hints.pcapng" 2>&1 >/dev/null |
	grep -o -- '-d [a-z]*\.port==[0-9]*,[a-z0-9]*' | sort -u | tr '\n' ' ' || true)
rm -f "$W/hints.pcapng"
# shellcheck disable=SC2086
read -r ts tr trc tc < <(measure tshark -n -r "$W/small.pcapng" $hints -q -z http,tree)
[ "$trc" = 0 ] || echo "tshark exited $trc" >&2
# shellcheck disable=SC2086
nreq=$(tshark -n -r "$W/small.pcapng" $hints -q -z http,tree 2>/dev/null |
	awk '/Total HTTP Packets/ {print $4; exit}')
python3 -c "
import sys
ts, tr, rs, tc, rc = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[5]), float(sys.argv[6])
print('tshark wall %.2f s, cpu %.2f s, peak RSS %.1f MiB (%s HTTP packets in its tree)' % (ts, tc, tr / 1024, sys.argv[4]))
print('ratio: reelplay (pcapng + JSON) is %.1fx faster wall, %.1fx by CPU, than tshark -z http,tree on the same traffic (target >= 10x)' % (ts / rs, tc / rc))
" "$ts" "$tr" "${SEC[small]}" "${nreq:-?}" "$tc" "${CPU[small]}"

python3 -c "
import sys
ps, pl, rs, rl = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print('memory: input %.1fx larger, peak RSS %.1f -> %.1f MiB (x%.2f; flat means ~1)' % (pl / ps, rs / 1024, rl / 1024, rl / rs))
" "${PAY[small]}" "${PAY[large]}" "${RSS[small]}" "${RSS[large]}"
