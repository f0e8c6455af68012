#!/usr/bin/env bash
# Replay benchmark on real captured traffic (not in ctest; run by hand, as root):
#
#   tests/bench/bench_replay.sh [SECONDS]        # default 3; the large file is 10x longer
#
# 1. captures wrk against nginx (1 KiB bodies, keep-alive, both ends captured:
#    -p NGINX --port P -- wrk, 16 MiB rings so a busy host loses nothing; with
#    REEL_BENCH_SCOPE=server only nginx, so each byte is in the file once, as
#    it is in the pcapng tshark reads) for
#    SECONDS into small.reel and 10*SECONDS into
#    large.reel;
# 2. times `reelplay FILE -w out.pcapng --json out.jsonl` (payload MB/s, payload
#    from reelplay's own summary) and, on the small file, `tshark -r out.pcapng
#    -q -z http,tree` with reelplay's decode hints, and prints the ratio
#    (target: reelplay >= 10x faster);
# 3. peak RSS of reelplay (getrusage RUSAGE_CHILDREN in a python wrapper, one
#    fresh wrapper per run) on the small and the 10x file: memory must stay flat.
#    (The merge holds records up to 500 ms or 64 MiB; keep SECONDS >= 3 so the
#    small file is long against that window.)
# Times are wall clock and CPU (user + sys) of the child, the best of
# BENCH_RUNS (default 3) runs for the small file and tshark: on a shared host
# the CPU ratio is the steadier one. reelplay decompresses ahead and writes
# its outputs in threads: wall < CPU when a second core is free.
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

# measure CMD...: runs CMD in a fresh python; prints
# "SECONDS MAXRSS_KIB EXIT CPUSECONDS MAXANON_KIB": ru_maxrss counts the pages of
# the input file reelplay maps, so the peak of RssAnon (sampled every 10 ms from
# /proc/PID/status) is printed too
measure() {
	python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
anon = 0
while p.poll() is None:
    try:
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.01)
dt = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %d %d %.3f %d" % (dt, ru.ru_maxrss, p.returncode, ru.ru_utime + ru.ru_stime, anon))
PY
}

# best N CMD...: runs CMD N times and prints "WALL MAXRSS EXIT CPU MAXANON"
# with the smallest wall and CPU seen and the largest memory: on a shared
# host the fastest of a few runs is the one least disturbed by others.
# Before each run the files named in $FRESH are removed, so that a run writes
# new files as the first one did: truncating the previous run's 250 MB of
# output (and ext4's flush at close of a file truncated and rewritten) would
# be timed too, and tshark has nothing of the kind to pay.
FRESH=''
best() {
	local n=$1 i s r rc c a bs='' br=0 brc=0 bc='' ba=0
	shift
	for i in $(seq "$n"); do
		# shellcheck disable=SC2086
		[ -z "$FRESH" ] || rm -f $FRESH
		read -r s r rc c a < <(measure "$@")
		[ "$rc" = 0 ] || brc=$rc
		bs=$(awk -v a="$s" -v b="${bs:-$s}" 'BEGIN {print (a < b) ? a : b}')
		bc=$(awk -v a="$c" -v b="${bc:-$c}" 'BEGIN {print (a < b) ? a : b}')
		[ "$r" -gt "$br" ] && br=$r
		[ "$a" -gt "$ba" ] && ba=$a
	done
	echo "$bs $br $brc $bc $ba"
}
RUNS=${BENCH_RUNS:-3}

SCOPE=${REEL_BENCH_SCOPE:-all}
case "$SCOPE" in
all | server) ;;
*) echo "bench_replay.sh: REEL_BENCH_SCOPE is all or server" >&2; exit 2 ;;
esac

capture() { # NAME SECONDS
	if [ "$SCOPE" = server ]; then
		# nginx only, as on a production host (the load generator is
		# elsewhere): every byte once in the file, as in the pcapng
		"$REELCAP" -q -w "$W/$1.reel" --ring-pages 4096 -p "$NGINX_PID" --port "$PORT" \
			-G $(($2 + 2)) 2>"$W/$1.cap" &
		local cap=$!
		sleep 1.5
		wrk -t1 -c8 -d"$2"s "http://127.0.0.1:$PORT/b1k" >"$W/$1.wrk"
		wait "$cap"
	else
		"$REELCAP" -q -w "$W/$1.reel" --ring-pages 4096 -p "$NGINX_PID" --port "$PORT" -- \
			wrk -t1 -c8 -d"$2"s "http://127.0.0.1:$PORT/b1k" >"$W/$1.wrk" 2>"$W/$1.cap"
	fi
	echo "captured $1: $2 s of wrk: $(grep -E 'Requests/sec' "$W/$1.wrk" | tr -s ' ')," \
		"$(stat -c %s "$W/$1.reel") bytes on disk; $(grep -o 'final:.*' "$W/$1.cap")"
	if grep -Eq 'final:.* [1-9][0-9]* (LOST|DROP)' "$W/$1.cap"; then
		echo "  note: samples were lost or dropped (busy host): each hole makes reassembly hold" \
			"up to 1 s / 4 MiB per direction, so $1's memory figure is pessimistic"
	fi
}

echo "=== capture (nginx 1 KiB bodies on 127.0.0.1:$PORT, scope $SCOPE)"
capture small "$SECS"
capture large $((SECS * 10))

payload() { # FILE -> captured payload bytes, from reelplay's summary
	"$REELPLAY" "$1" --summary 2>/dev/null | sed -n 's/^captured payload \([0-9]*\) bytes.*/\1/p'
}

echo "=== replay: reelplay FILE -w out.pcapng --json out.jsonl"
declare -A SEC RSS PAY CPU ANON
for f in small large; do
	PAY[$f]=$(payload "$W/$f.reel")
	# warm the page cache, then time
	cat "$W/$f.reel" >/dev/null
	runs=$RUNS
	[ "$f" = large ] && runs=1
	FRESH="$W/$f.pcapng $W/$f.jsonl"
	read -r s r rc c a < <(best "$runs" "$REELPLAY" "$W/$f.reel" -w "$W/$f.pcapng" --json "$W/$f.jsonl")
	FRESH=''
	[ "$rc" = 0 ] || echo "reelplay exited $rc on $f.reel" >&2
	SEC[$f]=$s
	RSS[$f]=$r
	CPU[$f]=$c
	ANON[$f]=$a
	python3 -c "
import sys
pay, s, rss, pc, js, c, a = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[7]), int(sys.argv[8])
print('%-5s payload %7.1f MB  wall %6.2f s = %6.1f MB/s  cpu %6.2f s = %6.1f MB/s  peak RSS %6.1f MiB (anon %6.1f MiB)  (pcapng %.0f MB, JSON %.0f MB)' %
      (sys.argv[6], pay / 1e6, s, pay / 1e6 / s, c, pay / 1e6 / c, rss / 1024, a / 1024, pc / 1e6, js / 1e6))" \
		"${PAY[$f]}" "$s" "$r" "$(stat -c %s "$W/$f.pcapng")" "$(stat -c %s "$W/$f.jsonl")" "$f" "$c" "$a"
	rm -f "$W/$f.jsonl"
done

echo "=== reference: tshark -r small.pcapng -q -z http,tree (same traffic)"
hints=$("$REELPLAY" "$W/small.reel" -w "$W/hints.pcapng" 2>&1 >/dev/null |
	grep -o -- '-d [a-z]*\.port==[0-9]*,[a-z0-9]*' | sort -u | tr '\n' ' ' || true)
rm -f "$W/hints.pcapng"
# shellcheck disable=SC2086
read -r ts tr trc tc ta < <(best "$RUNS" tshark -n -r "$W/small.pcapng" $hints -q -z http,tree)
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

# Memory depends on the event rate (the reader's merge window holds a fraction
# of a second of records): compare the large file with its own first SECONDS
# too, same traffic, 10x shorter.
REELTOOL=$BUILD/tools/reeltool
if [ -x "$REELTOOL" ] && "$REELTOOL" slice "$W/large.reel" "$W/head.reel" --from +0 --to +"$SECS" \
	>/dev/null 2>&1; then
	read -r _ hr _ _ ha < <(measure "$REELPLAY" "$W/head.reel" -w "$W/head.pcapng" --json /dev/null)
	python3 -c "
import sys
pay, pl, hr, ha, rl, al = (int(x) for x in sys.argv[1:7])
print('memory, same traffic: first %s s of large (payload %.0f MB) peak RSS %.1f MiB, anonymous %.1f MiB; whole large file (%.1fx the payload) %.1f / %.1f MiB (x%.2f anonymous)' %
      (sys.argv[7], pay / 1e6, hr / 1024, ha / 1024, pl / pay, rl / 1024, al / 1024, al / max(ha, 1)))
" "$(payload "$W/head.reel")" "${PAY[large]}" "$hr" "$ha" "${RSS[large]}" "${ANON[large]}" "$SECS"
	rm -f "$W/head.pcapng"
fi
python3 -c "
import sys
ps, pl, rs, rl, as_, al = (int(x) for x in sys.argv[1:7])
print('memory, small vs large capture: input %.1fx larger, peak RSS %.1f -> %.1f MiB (x%.2f), anonymous %.1f -> %.1f MiB (x%.2f); flat means ~1' %
      (pl / ps, rs / 1024, rl / 1024, rl / rs, as_ / 1024, al / 1024, al / max(as_, 1)))
" "${PAY[small]}" "${PAY[large]}" "${RSS[small]}" "${RSS[large]}" "${ANON[small]}" "${ANON[large]}"
