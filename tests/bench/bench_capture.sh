#!/usr/bin/env bash
# bench_capture: the capture's cost and size, as ratios against references
# measured in the same run on the same host (run as root; not part of ctest):
#   a) wrk -t1 -c8 requests/s against nginx (1 worker, keep-alive, sendfile
#      off; 1 KiB and 64 KiB bodies), as ratios of the untraced req/s. Every
#      cycle runs one round of each variant, in an order rotated by one each
#      cycle: untraced; per scope the attach floor (every program attached,
#      nothing captured), full capture (reelcap) and `perf record -z` on the
#      same hooks (no payload); and `tcpdump -i lo -w` of the port. Scopes
#      (REEL_BENCH_SCOPE, default "server both"): server = nginx only
#      (--comm nginx), both = both ends (--port P: wrk is traced too), all =
#      every process. Ratio = median over the cycles of the variant's req/s /
#      the same cycle's untraced req/s. Printed per variant: LOST, DROP and the
#      bytes missing (holes of LOST/DROP + overload cuts) for reelcap, lost
#      samples for perf, packets dropped by the kernel for tcpdump (bytes
#      missing estimated as drops x mean payload per captured packet), tracer
#      CPU and CPU per request over the untraced rounds'
#      (tests/bench/bench_capture_a.sh). Targets (issue 11): 1 KiB full capture
#      >= 0.85 nginx only and >= 0.75 both ends with 0 LOST and 0 DROP;
#      64 KiB both ends >= tcpdump's ratio with fewer bytes missing than
#      tcpdump drops.
#   b) tracer CPU seconds per MB of ring data drained: reelcap (the samples
#      read from its rings, perf headers included: its "rings: ... bytes of
#      samples read" line) beside `perf record -z -a` on the same hooks
#      (perf's "original N MB", which is MiB of what it read from its rings),
#      both wrapped in cputime.py; two loads: evgen paced at 100k syscalls/s
#      (the same work under both) and wrk /b1k                    target <= 1.0
#   c) LOST at 200k events/s with default settings (evgen 200000 10 under
#      full capture), from the file                                target == 0
#   d) file bytes per request of reelcap (--port P, nginx only by default)
#      beside `tcpdump -i lo -w` of the same paced load (curl, one keep-alive
#      connection, BENCH_D_RATE requests/s, default 500, for ROUND seconds)
#      compressed with zstd -3, for 1 KiB and 64 KiB bodies, and whether
#      every payload byte is in both files                         target <= 0.5
# Then, as a diagnosis, BPF run time per program (bpftool prog show with
# kernel.bpf_stats_enabled) over one more captured round.
#
#   tests/bench/bench_capture.sh [ROUND_SECONDS]      (default 4)
# BENCH_ROUNDS cycles of a) (default 5), BENCH_PARTS the parts (default
# "abcde"; e is the BPF run-time diagnosis), BENCH_BODIES the bodies of a)
# (default "b1k b64k"), BENCH_A_REFS the variants of a) beside full capture
# (default "floor perf tcpdump"), BENCH_TCPDUMP_ARGS extra tcpdump options in
# a) (default none), BENCH_PCAP_DIR where tcpdump writes in a) (default the
# bench's temp dir, as reelcap; 64 KiB bodies: GBs a round, deleted after it),
# BENCH_D_BODIES / BENCH_D_RATE / BENCH_D_SCOPE (server or both) for d),
# BENCH_B_ARGS extra reelcap options in b) (e.g. --no-twin),
# BENCH_PORT nginx's port (default 18480; the both-ends floor filters on PORT+1,
# BENCH_NOPORT), BENCH_VERBOSE=1 prints every round of a).
# A full run with the defaults takes about 15-20 minutes (a: 2 bodies x 5 cycles
# x 8 rounds of 4 s plus each tracer's start and stop).
# Binaries: $REELCAP, $REELTOOL, $REELPLAY, $EVGEN, or a build tree:
# $REEL_BUILD, the tree this script was copied into, or build-bench / build /
# build-it in the repo.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
round=${1:-4}
rounds=${BENCH_ROUNDS:-5} # cycles of a)
port=${BENCH_PORT:-18480}

if [ "$(id -u)" != 0 ]; then
	echo "bench_capture: needs root (BPF, perf -a, tcpdump)" >&2
	exit 77
fi

find_repo() {
	local d=$here
	while [ "$d" != / ]; do
		[ -f "$d/tests/peers/peers.sh" ] && [ -d "$d/capture" ] && {
			echo "$d"
			return
		}
		d=$(dirname "$d")
	done
}
repo=${REEL_SOURCE_DIR:-$(find_repo)}
if [ -z "$repo" ]; then
	echo "bench_capture: cannot find the source tree (set REEL_SOURCE_DIR)" >&2
	exit 2
fi
find_build() {
	local d
	for d in ${REEL_BUILD:-} "$here/../.." "$repo/build-bench" "$repo/build" "$repo/build-it"; do
		[ -n "$d" ] && [ -x "$d/capture/reelcap" ] && [ -x "$d/tools/reeltool" ] && {
			(cd "$d" && pwd)
			return
		}
	done
}
build=$(find_build)
REELCAP=${REELCAP:-${build:+$build/capture/reelcap}}
REELTOOL=${REELTOOL:-${build:+$build/tools/reeltool}}
REELPLAY=${REELPLAY:-${build:+$build/replay/reelplay}}
for b in "$REELCAP" "$REELTOOL" "$REELPLAY"; do
	if [ -z "$b" ] || [ ! -x "$b" ]; then
		echo "bench_capture: no built reelcap/reeltool/reelplay ('$b'; set REEL_BUILD or" \
			"REELCAP/REELTOOL/REELPLAY)" >&2
		exit 2
	fi
done
for t in wrk nginx tcpdump perf zstd curl bpftool python3; do
	command -v $t >/dev/null || {
		echo "bench_capture: $t is missing (tools/deps.sh test installs it)" >&2
		exit 2
	}
done

# shellcheck source=../peers/peers.sh source-path=SCRIPTDIR
. "$repo/tests/peers/peers.sh"
peers_init
W=$PEER_DIR/bench
mkdir -p "$W"
CPUTIME="python3 $here/cputime.py"
[ -f "$here/cputime.py" ] || CPUTIME="python3 $repo/tests/bench/cputime.py"
EVGEN=${EVGEN:-}
if [ -z "$EVGEN" ]; then
	if [ -n "$build" ] && [ -x "$build/tests/evgen" ]; then
		EVGEN=$build/tests/evgen
	else
		EVGEN=$W/evgen
		cc -O2 -pthread -o "$EVGEN" "$repo/tests/bench/evgen.c" || exit 2
	fi
fi

TRACER_PID=
TRACER_LOG=
TCPDUMP_PID=
# cleanup: stop the tracer (reelcap, perf or tcpdump) and tcpdump of d) if
# one runs, then nginx (stop_peers); on exit, Ctrl-C and TERM
cleanup() {
	local p
	for p in $TRACER_PID $TCPDUMP_PID; do
		kill -INT "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	TRACER_PID='' TCPDUMP_PID=''
	[ -n "${A_PCAP:-}" ] && rm -f "$A_PCAP"
	stop_peers
}
trap cleanup EXIT
trap 'echo "bench_capture: interrupted" >&2; exit 130' INT TERM

echo "bench_capture: reelcap $REELCAP"
echo "bench_capture: $(nproc) CPUs, kernel $(uname -r), rounds of ${round}s;" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# other tracers make every syscall dearer in the "off" rounds too
others=$(bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin) if p.get("type") in ("tracepoint", "raw_tracepoint", "tracing", "kprobe", "perf_event")))' 2>/dev/null)
if [ "${others:-0}" -gt 0 ]; then
	echo "bench_capture: warning: $others tracing BPF programs of other tools are loaded (another"
	echo "  reelcap?): they tax the 'off' rounds as well; the ratios are then optimistic"
fi
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
if [ "$stats_was" = 1 ]; then
	echo "bench_capture: note: kernel.bpf_stats_enabled is 1 (someone left it on): every BPF"
	echo "  program run pays two clock reads; the capture figures include that"
fi

start_nginx "$port" 1 64 || exit 1

# start_reelcap FILE [ARGS...]: background reelcap, wait until it captures
start_reelcap() {
	local file=$1 log=$W/reelcap.$$.log
	shift
	rm -f "$file"
	: >"$log"
	rm -f "$W/tracer.cpu"
	$CPUTIME "$W/tracer.cpu" "$REELCAP" -w "$file" "$@" 2>"$log" &
	TRACER_PID=$!
	TRACER_LOG=$log
	for _ in $(seq 200); do
		grep -qs "capturing to" "$log" && return 0
		kill -0 "$TRACER_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$log" >&2
	echo "bench_capture: reelcap did not start" >&2
	return 1
}

# stop_tracer: SIGINT the tracer and wait for it
stop_tracer() {
	[ -n "$TRACER_PID" ] || return 0
	kill -INT "$TRACER_PID" 2>/dev/null
	wait "$TRACER_PID" 2>/dev/null
	TRACER_PID=
	if [ -n "$TRACER_LOG" ] && [ -f "$W/tracer.cpu" ]; then
		echo "reelcap CPU $(cat "$W/tracer.cpu")" >>"$TRACER_LOG"
	fi
	TRACER_LOG=
}

# wrk_rps PATH SECONDS: requests/s
wrk_rps() {
	wrk -t1 -c8 -d"$2"s "http://127.0.0.1:$port$1" 2>&1 | awk '/^Requests\/sec:/ {print $2}'
}

# ticks PID: user+system CPU clock ticks of a process (all its threads)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# runns PID: nanoseconds its threads have run (the scheduler's own count,
# /proc/PID/task/*/schedstat; ticks are 10 ms, too coarse for b)'s window)
runns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
# child PID: the (first) child of a process
child() { cut -d' ' -f1 "/proc/$1/task/$1/children" 2>/dev/null; }
HZ=$(getconf CLK_TCK)

# wrk_run PATH SECONDS: "requests/s requests wrk_CPU_seconds"
wrk_run() {
	local out
	out=$($CPUTIME "$W/wrk.cpu" wrk -t1 -c8 -d"$2"s "http://127.0.0.1:$port$1" 2>&1)
	echo "$(echo "$out" | awk '/^Requests\/sec:/ {r = $2} / requests in / {n = $1} END {print r + 0, n + 0}')" \
		"$(cat "$W/wrk.cpu" 2>/dev/null || echo 0)"
}

# --------------------------------------------------------------------
# a) throughput: untraced, attach floor, full capture, perf record -z and
# tcpdump in rotated cycles, per scope (tests/bench/bench_capture_a.sh)

A_SCOPES=${REEL_BENCH_SCOPE:-server both}
PARTS=${BENCH_PARTS:-abcde}
BODIES=${BENCH_BODIES:-b1k b64k}
A_REFS=${BENCH_A_REFS-floor perf tcpdump} # reference variants of a) beside full capture
part() { [[ "$PARTS" == *"$1"* ]]; }
# the hooks reelcap attaches, as perf events: the sys_exit_* of
# bpf/reel_trace.bpf.c (none of sys_enter_*), the sock tracepoints of
# bpf/reel_uring.bpf.h and the sched events (perf records the syscall number
# and return value, no payload)
a_tps=
for s in read write readv writev sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg sendfile64 \
	splice connect accept accept4 close; do
	a_tps="$a_tps syscalls:sys_exit_$s"
done
a_tps="$a_tps sock:sock_send_length sock:sock_recv_length"
a_tps="$a_tps sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit"
NGINX_WORKER=
for _ in $(seq 50); do
	NGINX_WORKER=$(child "$NGINX_PID")
	[ -n "$NGINX_WORKER" ] && break
	sleep 0.1
done

# shellcheck source=bench_capture_a.sh source-path=SCRIPTDIR
. "$here/bench_capture_a.sh"
part a && part_a

# --------------------------------------------------------------------
# b) tracer CPU per MB drained: reelcap vs perf record on the same tracepoints

# the tracepoints reelcap attaches (a_tps: the sys_exit_* of its syscalls and
# the sched events; its programs read the arguments at the exit)
tps=$(echo "${a_tps# }" | tr ' ' ',')


# pair NAME LOAD...: runs LOAD under reelcap, then under perf record, and sets
# B_RATIO[NAME] (CPU s per MB, reel / perf) and B_LINE[NAME]
declare -A B_RATIO B_EVRATIO B_DRATIO
pair() {
	local name=$1
	shift
	local reel_cpu reel_mb reel_pmb reel_events reel_load perf_cpu perf_mb perf_events perf_load perf_lost
	# reelcap
	rm -f "$W/b.reel"
	# BENCH_B_ARGS: extra reelcap options (e.g. --no-twin: evgen's reads then
	# carry their payload, as perf's ring data would if it had any)
	# shellcheck disable=SC2086 # options are words
	$CPUTIME "$W/b_reel.cpu" "$REELCAP" -w "$W/b.reel" ${BENCH_B_ARGS:-} 2>"$W/b_reel.log" &
	TRACER_PID=$!
	for _ in $(seq 200); do
		grep -qs "capturing to" "$W/b_reel.log" && break
		sleep 0.05
	done
	sleep 3 # as for perf below
	local rp t0 t1 pp
	rp=$(child "$TRACER_PID")
	t0=$(runns "$rp")
	reel_load=$("$@")
	sleep 0.5
	t1=$(runns "$rp")
	local reel_drain
	reel_drain=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b-a)/1e9}')
	stop_tracer
	reel_cpu=$(cat "$W/b_reel.cpu")
	# "final: ...: N events (X MB)" -> MB
	reel_pmb=$(sed -n 's/.*final: .*events (\([0-9.]*\) \([kMG]*B\)).*/\1 \2/p' "$W/b_reel.log" |
		awk '{v=$1; if ($2=="kB") v/=1000; else if ($2=="GB") v*=1000; else if ($2=="B") v/=1e6; printf "%.3f", v}')
	# ring data: the samples with their perf headers, as perf counts its own
	reel_mb=$(sed -n 's/.*rings: .*(\([0-9]*\) bytes) of samples read.*/\1/p' "$W/b_reel.log" |
		awk '{printf "%.3f", $1 / 1e6}')
	reel_events=$(sed -n 's/.*final: [0-9.]*s: \([0-9]*\) events.*/\1/p' "$W/b_reel.log")

	# perf record on the same tracepoints with rings as large as reelcap's
	# default (512 pages), its own writes filtered out (a tracer tracing its
	# own output file feeds back on itself); its "enable" control command is
	# acknowledged before every event fires on a busy host, so it starts
	# enabled and gets the same settling pause as reelcap
	rm -f "$W/perf.data"
	{
		# $$ in the script is its shell's pid, which exec makes perf's
		printf 'exec perf record -z -a -m 512 -o %s' "$W/perf.data"
		for t in ${tps//,/ }; do
			printf ' -e %s --filter "common_pid != $$"' "$t"
		done
		echo
	} >"$W/perf.sh"
	$CPUTIME "$W/b_perf.cpu" sh "$W/perf.sh" 2>"$W/b_perf.log" &
	TRACER_PID=$!
	sleep 3
	pp=$(child "$TRACER_PID")
	t0=$(runns "$pp")
	perf_load=$("$@")
	sleep 0.5
	t1=$(runns "$pp")
	local perf_drain
	perf_drain=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b-a)/1e9}')
	stop_tracer
	perf_cpu=$(cat "$W/b_perf.cpu")
	# perf prints MiB (bytes / 1024 / 1024) of the data it read from its rings
	perf_mb=$(sed -n 's/.*original \([0-9.]*\) MB.*/\1/p' "$W/b_perf.log" | head -n 1 |
		awk '{printf "%.3f", $1 * 1.048576}')
	perf_lost=$(grep -io "lost [0-9]* chunks\|[0-9]* lost" "$W/b_perf.log" | head -n 3 | tr '\n' ' ')
	perf report -i "$W/perf.data" --stats >"$W/perf.stats" 2>/dev/null
	perf_events=$(awk '/SAMPLE events:/ {print $3; exit}' "$W/perf.stats")
	perf_lost="$perf_lost$(awk '/LOST.* events:/ {printf "%s %s ", $1, $3}' "$W/perf.stats")"

	B_RATIO[$name]=$(awk -v c="$reel_cpu" -v m="$reel_mb" -v pc="$perf_cpu" -v pm="${perf_mb:-0}" \
		'BEGIN {if (m > 0 && pm > 0 && pc > 0) printf "%.3f", (c/m)/(pc/pm); else print "nan"}')
	B_DRATIO[$name]=$(awk -v c="$reel_drain" -v m="$reel_mb" -v pc="$perf_drain" -v pm="${perf_mb:-0}" \
		'BEGIN {if (m > 0 && pm > 0 && pc > 0) printf "%.3f", (c/m)/(pc/pm); else print "nan"}')
	B_EVRATIO[$name]=$(awk -v a="$reel_cpu" -v ae="${reel_events:-0}" -v b="$perf_cpu" -v be="${perf_events:-0}" \
		'BEGIN {if (ae > 0 && be > 0 && b > 0) printf "%.3f", (a/ae)/(b/be); else print "nan"}')
	echo "b) load $name"
	echo "   reelcap: $reel_cpu CPU s in all ($reel_drain while the load ran), $reel_mb MB drained" \
		"($reel_pmb MB of sample payloads)," \
		"${reel_events:-?} events; load: $reel_load"
	echo "   perf:    $perf_cpu CPU s in all ($perf_drain while the load ran), ${perf_mb:-?} MB drained," \
		"${perf_events:-?} samples ${perf_lost}; load: $perf_load"
	echo "   CPU per MB reel/perf: whole process ${B_RATIO[$name]}, while the load ran ${B_DRATIO[$name]};" \
		"CPU per event (whole) ${B_EVRATIO[$name]}"
}
load_evgen() { "$EVGEN" 100000 "$round" | sed 's/^evgen: //'; }
load_wrk() { echo "$(wrk_rps /b1k "$round") req/s"; }
if part b; then
	pair evgen load_evgen
	pair wrk load_wrk
fi

# --------------------------------------------------------------------
# c) LOST at 200k events/s, default settings, full capture

c_lost=nan c_samples='?'
if part c; then
start_reelcap "$W/c.reel" || exit 1
c_evgen=$("$EVGEN" 200000 10)
sleep 0.5
stop_tracer
c_info=$("$REELTOOL" info --json "$W/c.reel")
c_lost=$(echo "$c_info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lost_samples"])')
c_drop=$(echo "$c_info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dropped_records"])')
c_samples=$(echo "$c_info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records_by_type"]["SAMPLE"])')
echo "c) $c_evgen"
echo "   reelcap: $c_samples samples, LOST $c_lost, DROP $c_drop"
grep "final:" "$W/reelcap.$$.log" | sed 's/^/   /'
fi

# --------------------------------------------------------------------
# d) file bytes per request vs tcpdump -w + zstd -3 of the same paced load:
# curl fetching the body over one keep-alive connection at BENCH_D_RATE
# requests/s (a load both keep up with, so every payload byte is in both
# files), reelcap scoped by BENCH_D_SCOPE (default server: --port P --comm
# nginx, each byte once as in the pcap; both: --port P, each byte twice)

D_RATE=${BENCH_D_RATE:-500}
D_SCOPE=${BENCH_D_SCOPE:-server}
declare -A D_RATIO D_OK
# d_body BODY: one paced run of ROUND s captured by both; sets D_RATIO[BODY]
# (reel bytes / zstd -3 pcap bytes) and D_OK[BODY] (every payload byte in both)
d_body() {
	local body=$1 n kb
	n=$((D_RATE * round))
	kb=${body#b}
	kb=${kb%k}
	rm -f "$W/d.pcap" "$W/d.pcap.zst"
	tcpdump -i lo --immediate-mode -s0 -B 262144 -U -w "$W/d.pcap" "tcp port $port" 2>"$W/d_tcpdump.log" &
	TCPDUMP_PID=$!
	for _ in $(seq 100); do
		grep -qs "listening on" "$W/d_tcpdump.log" && break
		sleep 0.05
	done
	# shellcheck disable=SC2046 # the scope's arguments are words
	start_reelcap "$W/d.reel" --port "$port" $([ "$D_SCOPE" = server ] && echo --comm nginx) || exit 1
	local t0=$SECONDS
	curl -s --rate "$D_RATE/s" "http://127.0.0.1:$port/$body?[1-$n]" >/dev/null ||
		echo "bench_capture: warning: curl failed in d)" >&2
	local secs=$((SECONDS - t0))
	sleep 1.5 # tcpdump drops what is still in the kernel buffer when stopped at once
	stop_tracer
	kill -INT "$TCPDUMP_PID"
	wait "$TCPDUMP_PID" 2>/dev/null
	TCPDUMP_PID=
	zstd -q -3 -o "$W/d.pcap.zst" "$W/d.pcap"
	local reel pcap zst kdrop sum payload holes lost
	reel=$(stat -c %s "$W/d.reel")
	pcap=$(stat -c %s "$W/d.pcap")
	zst=$(stat -c %s "$W/d.pcap.zst")
	kdrop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$W/d_tcpdump.log")
	sum=$("$REELPLAY" --summary "$W/d.reel" 2>/dev/null)
	payload=$(sed -n 's/^captured payload \([0-9]*\) bytes; holes \([0-9]*\) (\([0-9]*\) bytes missing).*/\1/p' <<<"$sum")
	holes=$(sed -n 's/^captured payload \([0-9]*\) bytes; holes \([0-9]*\) (\([0-9]*\) bytes missing).*/\3/p' <<<"$sum")
	lost=$(sed -n 's/^LOST \([0-9]*\) samples.*DROP \([0-9]*\) records.*/\1 \2/p' <<<"$sum")
	D_RATIO[$body]=$(awk -v a="$reel" -v b="$zst" 'BEGIN {if (b > 0) printf "%.3f", a/b; else print "nan"}')
	# every payload byte: no hole, no LOST/DROP, at least the bodies' bytes, no tcpdump drop
	if [ "${holes:-x}" = 0 ] && [ "$lost" = "0 0" ] && [ "${kdrop:-x}" = 0 ] &&
		[ "${payload:-0}" -ge $((n * kb * 1024)) ]; then
		D_OK[$body]=yes
	else
		D_OK[$body]=no
	fi
	echo "d) /$body, $n requests paced at $D_RATE/s by curl (${secs}s), reelcap $D_SCOPE scope:"
	echo "   reel $reel B = $((reel / n)) B/request; pcap $pcap B, zstd -3 $zst B = $((zst / n)) B/request;" \
		"ratio ${D_RATIO[$body]}"
	echo "   reel: payload ${payload:-?} B (bodies alone $((n * kb * 1024)) B), ${holes:-?} B missing," \
		"LOST/DROP ${lost:-?}; tcpdump: $(grep -o '[0-9]* packets captured' "$W/d_tcpdump.log"), ${kdrop:-?} dropped"
	rm -f "$W/d.pcap" "$W/d.pcap.zst" "$W/d.reel"
}
D_BODIES=${BENCH_D_BODIES:-b1k b64k}
if part d; then
	for body in $D_BODIES; do
		d_body "$body"
	done
fi

# --------------------------------------------------------------------
# diagnosis: BPF run time per program over one captured round

if part e; then
stats_now=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
[ "$stats_now" != 1 ] && sysctl -q kernel.bpf_stats_enabled=1
bpftool -j prog show >"$W/e_pre.json"
# BENCH_E_SCOPE: both (default, every process) or server (--port P --comm nginx)
# shellcheck disable=SC2046 # the scope's arguments are words
start_reelcap "$W/e.reel" $([ "${BENCH_E_SCOPE:-both}" = server ] && echo --port "$port" --comm nginx) || exit 1
sleep 0.5
bpftool -j prog show >"$W/e_before.json"
e_pid=$(child "$TRACER_PID")
e_t0=$(ticks "$e_pid")
e_rps=$(wrk_rps /b1k "$round")
e_t1=$(ticks "$e_pid")
bpftool -j prog show >"$W/e_after.json"
stop_tracer
e_drain_us=$(awk -v a="$e_t0" -v b="$e_t1" -v hz="$HZ" -v r="$e_rps" -v s="$round" \
	'BEGIN {if (r > 0) printf "%.1f", (b-a)/hz/(r*s)*1e6; else print "?"}')
[ "$stats_now" != 1 ] && sysctl -q kernel.bpf_stats_enabled=0
echo "diagnosis: BPF programs during one ${round}s wrk /b1k round (${e_rps} req/s):"
python3 - "$W/e_before.json" "$W/e_after.json" "$e_rps" "$round" "$W/e_pre.json" <<'PY'
import json, sys
pre = {p["id"] for p in json.load(open(sys.argv[5]))}  # other tools' programs
b = {p["id"]: p for p in json.load(open(sys.argv[1])) if p["id"] not in pre}
a = json.load(open(sys.argv[2]))
rps, secs = float(sys.argv[3] or 0), float(sys.argv[4])
rows, tot = [], 0
for p in a:
    if p["id"] not in b or "run_time_ns" not in p:
        continue
    ns = p["run_time_ns"] - b[p["id"]].get("run_time_ns", 0)
    cnt = p["run_cnt"] - b[p["id"]].get("run_cnt", 0)
    if cnt <= 0:
        continue
    tot += ns
    rows.append((ns, cnt, p.get("name", "?")))
rows.sort(reverse=True)
for ns, cnt, name in rows[:14]:
    print("   %-20s %9d runs %8.0f ns/run %6.2f%% of one CPU" % (name, cnt, ns / cnt, 100.0 * ns / (secs * 1e9)))
if rps:
    print("   all programs: %.3f CPU s over %.0f s = %.0f ns per request" % (tot / 1e9, secs, tot / (rps * secs)))
PY
echo "   reelcap (drain, compression, write) during the round: $e_drain_us us CPU per request"
fi

# --------------------------------------------------------------------

for l in evgen wrk; do
	part b || break
	a_check "b) tracer CPU s per MB, reelcap/perf, $l (cputime)" "${B_RATIO[$l]}" "<=" 1.0
	a_check "   (the same, CPU while the load ran: drain only)" "${B_DRATIO[$l]}" "<=" 1.0
done
part c && a_check "c) LOST at 200k events/s (default settings)" "$c_lost" "==" 0
for body in $D_BODIES; do
	part d || break
	a_check "d) reel B/request / zstd -3 pcap's, ${body#b} bodies" "${D_RATIO[$body]}" "<=" 0.5
	a_check "   every payload byte in both files" "${D_OK[$body]}" "==" yes
done
echo
echo "bench_capture results (references measured in the same run)"
printf '%-58s %12s %14s %5s\n' "figure" "value" "target" ""
[ ${#A_CHECKS[@]} -gt 0 ] && printf '%s\n' "${A_CHECKS[@]}"
[ ${#A_CHECKS[@]} -gt 0 ] || echo "(no part with a target ran)"
echo "bench_capture: done in $((SECONDS / 60)) min $((SECONDS % 60)) s;" \
	"load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
