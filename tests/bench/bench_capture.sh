#!/usr/bin/env bash
# bench_capture: the capture's cost and size, as ratios against references
# measured in the same run on the same host (run as root; not part of ctest):
#   a) wrk requests/s against nginx (keep-alive; 1 KiB and 64 KiB bodies) with
#      full capture on (reelcap, no filters: every process) / off; rounds
#      interleaved off,on,off,...,off; ratio = mean(on) / mean(off)   target >= 0.95
#      Beside it, measured in the same cycles (off, then the variants in an
#      order rotated every cycle): the attach floor (every program attached,
#      `--comm` of no process: nothing captured) and `perf record -z` on the
#      tracepoints reelcap attaches, with their ratios, LOST, tracer CPU and
#      the CPU per request (wrk + nginx + tracer) each adds to the untraced
#      rounds'. BENCH_A_REFS picks the references (default "floor perf").
#   b) tracer CPU seconds per MB of ring data drained: reelcap (sample bytes)
#      beside `perf record -z -a` on the same syscall tracepoints (perf's
#      "original N MB"), both wrapped in cputime.py; two loads: evgen paced at
#      100k syscalls/s (the same work under both) and wrk /b1k  target <= 1.0
#   c) LOST at 200k events/s with default settings (evgen 200000 10 under
#      full capture), from the file                                target == 0
#   d) file bytes of reelcap (--port P) beside `tcpdump -i lo -w` of the same
#      wrk run compressed with zstd -3                              target <= 0.5
# Then, as a diagnosis, BPF run time per program (bpftool prog show with
# kernel.bpf_stats_enabled) over one more captured round.
#
#   tests/bench/bench_capture.sh [ROUND_SECONDS]
# BENCH_PARTS picks parts (default "abcde"; e is the BPF run-time diagnosis),
# BENCH_BODIES the bodies of a) (default "b1k b64k").
# REEL_BENCH_SCOPE=server captures only nginx (--comm nginx) in a) and d): what a
# production host tracing its server does (the load generator is elsewhere).
# The default, all, traces every process, wrk included, so each byte is
# captured twice (sender and receiver) and wrk pays the tracing cost too.
# Binaries: $REELCAP, $REELTOOL, $EVGEN, or a build tree: $REEL_BUILD, the tree
# this script was copied into, or build-bench / build / build-it in the repo.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
round=${1:-4}
rounds=${BENCH_ROUNDS:-5} # "on" rounds per body size, between rounds+1 "off" rounds
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
if [ -z "$REELCAP" ] || [ ! -x "$REELCAP" ] || [ -z "$REELTOOL" ] || [ ! -x "$REELTOOL" ]; then
	echo "bench_capture: no built reelcap/reeltool (set REEL_BUILD or REELCAP/REELTOOL)" >&2
	exit 2
fi
for t in wrk nginx tcpdump perf zstd python3; do
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
cleanup() {
	[ -n "$TRACER_PID" ] && kill -INT "$TRACER_PID" 2>/dev/null
	stop_peers
}
trap cleanup EXIT

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
# a) throughput with full capture on / off, beside two references: the attach
# floor (reelcap with every program attached and a --comm filter nothing
# matches: the syscall tracepoints' cost before any capture) and `perf record
# -z` on the tracepoints reelcap attaches, scoped like reelcap (the sys_exit_*
# of bpf/reel_trace.bpf.c, none of sys_enter_*; perf records only the syscall
# number and return value). Each cycle is off, then the variants in an order
# rotated every cycle, and one more off at the end. CPU: wrk (rusage) + nginx
# worker + tracer (/proc/PID/stat ticks) during the wrk run, per request; BPF
# time is in the stime of the traced processes.

SCOPE=${REEL_BENCH_SCOPE:-all}
case "$SCOPE" in
all) SCOPE_ARGS=() ;;
server) SCOPE_ARGS=(--comm nginx) ;;
*) echo "bench_capture: REEL_BENCH_SCOPE is all or server" >&2; exit 2 ;;
esac

PARTS=${BENCH_PARTS:-abcde}
BODIES=${BENCH_BODIES:-b1k b64k}
A_REFS=${BENCH_A_REFS-floor perf} # reference variants of a) beside full capture
part() { [[ "$PARTS" == *"$1"* ]]; }
A_NOSUCH=reel-nosuch # a comm no process has
A_PERF_SETTLE=${BENCH_PERF_SETTLE:-1} # s after perf's file appears (its /proc scan)
a_tps=
for s in read write readv writev sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg sendfile64 \
	splice connect accept accept4 close; do
	a_tps="$a_tps syscalls:sys_exit_$s"
done
a_tps="$a_tps sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit"
# perf's filter, in its command line (a sh script that execs perf: $$ there is
# perf's pid): all but perf itself as in b), or nginx like --comm nginx
# shellcheck disable=SC2016 # $$ is for that sh
A_PFILTER='"common_pid != $$"'
[ "$SCOPE" = server ] && A_PFILTER="'comm == \"nginx\"'"
NGINX_WORKER=
for _ in $(seq 50); do
	NGINX_WORKER=$(child "$NGINX_PID")
	[ -n "$NGINX_WORKER" ] && break
	sleep 0.1
done

# start_perf DATA: background perf record -z on a_tps; 1 and A_NA[perf] set
# when it does not run
start_perf() {
	local data=$1
	rm -f "$data" "$W/a_perf.cpu"
	{
		printf 'exec perf record -z -a -m 512 -o %s' "$data"
		for t in $a_tps; do
			printf ' -e %s --filter %s' "$t" "$A_PFILTER"
		done
		echo
	} >"$W/a_perf.sh"
	$CPUTIME "$W/a_perf.cpu" sh "$W/a_perf.sh" 2>"$W/a_perf.log" &
	TRACER_PID=$!
	TRACER_LOG=
	for _ in $(seq 100); do
		[ -s "$data" ] && break
		kill -0 "$TRACER_PID" 2>/dev/null || break
		sleep 0.05
	done
	sleep "$A_PERF_SETTLE"
	if ! kill -0 "$TRACER_PID" 2>/dev/null || [ ! -s "$data" ]; then
		stop_tracer
		A_NA[perf]="n/a (perf record: $(grep -v '^ *$' "$W/a_perf.log" | head -n 1 | cut -c1-60))"
		return 1
	fi
}

# a_round VARIANT BODY: one wrk round with VARIANT (off floor perf full)
# running; appends the round's figures to the A_* arrays
declare -A A_RPS A_US A_TCPU A_LOST A_DROP A_NA A_CHUNKS A_SAMPLES
a_round() {
	local v=$1 body=$2 tp="" t0=0 t1=0 n0 n1 rps req wcpu
	[ -n "${A_NA[$v]:-}" ] && return 0
	case "$v" in
	off) ;;
	floor) start_reelcap "$W/a_floor.reel" --comm "$A_NOSUCH" || return 1 ;;
	full) start_reelcap "$W/a_$body.reel" "${SCOPE_ARGS[@]}" || return 1 ;;
	perf) start_perf "$W/a_perf.data" || return 0 ;;
	esac
	[ -n "$TRACER_PID" ] && tp=$(child "$TRACER_PID")
	n0=$(ticks "$NGINX_WORKER")
	[ -n "$tp" ] && t0=$(ticks "$tp")
	read -r rps req wcpu < <(wrk_run "/$body" "$round")
	[ -n "$tp" ] && t1=$(ticks "$tp")
	n1=$(ticks "$NGINX_WORKER")
	stop_tracer
	A_RPS[$v]="${A_RPS[$v]:-} $rps"
	A_TCPU[$v]="${A_TCPU[$v]:-} $(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b-a)/hz}')"
	A_US[$v]="${A_US[$v]:-} $(awk -v w="$wcpu" -v n="$((n1 - n0 + t1 - t0))" -v hz="$HZ" -v r="$req" \
		'BEGIN {if (r > 0) printf "%.2f", (w + n/hz) / r * 1e6; else print "nan"}')"
	local lost=0 drop=0 chunks=0
	case "$v" in
	floor | full)
		local f=$W/a_floor.reel
		[ "$v" = full ] && f=$W/a_$body.reel
		read -r lost drop < <("$REELTOOL" info --json "$f" |
			python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["lost_samples"], j["dropped_records"])')
		if [ "$v" = full ]; then
			TP_CPU[$body]="${TP_CPU[$body]:-} $(awk '/reelcap CPU/ {print $3}' "$W/reelcap.$$.log")"
		fi
		;;
	perf)
		# samples lost, summed over the events' "EVENT stats:" sections
		# (perf 6.1 counts lost samples there as "LOST_SAMPLES events"),
		# and PERF_RECORD_LOST records (chunks) from "Aggregated stats:"
		perf report -i "$W/a_perf.data" --stats >"$W/a_perf.stats" 2>/dev/null
		lost=$(awk '/^[^ ]+:[^ ]+ stats:$/ {e = 1} e && /LOST_SAMPLES events:/ {s += $3} END {print s + 0}' \
			"$W/a_perf.stats")
		chunks=$(awk '/^[^ ]+:[^ ]+ stats:$/ {exit} /^ *LOST events:/ {print $3; exit}' "$W/a_perf.stats")
		A_CHUNKS[$body]=$((${A_CHUNKS[$body]:-0} + ${chunks:-0}))
		local samples
		samples=$(awk '/^[^ ]+:[^ ]+ stats:$/ {exit} /SAMPLE events:/ {print $3; exit}' "$W/a_perf.stats")
		A_SAMPLES[$body]=$((${A_SAMPLES[$body]:-0} + ${samples:-0}))
		[ "${samples:-0}" -gt 0 ] || echo "bench_capture: warning: perf recorded no samples" \
			"($(grep -v '^ *$' "$W/a_perf.log" | head -n 1))" >&2
		rm -f "$W/a_perf.data"
		;;
	esac
	A_LOST[$v.$body]=$((${A_LOST[$v.$body]:-0} + lost))
	A_DROP[$v.$body]=$((${A_DROP[$v.$body]:-0} + drop))
}

# mean "V V ...": mean of the numbers in a list (nan if none)
mean() { tr ' ' '\n' <<<"$1" | awk '$1 != "" && $1 != "nan" {s += $1; n++} END {if (n) printf "%.2f", s/n; else print "nan"}'; }
med() { sort -n | awk '{v[NR]=$1} END {printf "%.0f", NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
declare -A TP_ON TP_OFF TP_RATIO TP_LOST TP_DROP TP_CPU TP_MED A_RATIO
for body in $BODIES; do
	part a || break
	variants=()
	for v in $A_REFS full; do
		case "$v" in
		floor | perf | full) variants+=("$v") ;;
		*) echo "bench_capture: BENCH_A_REFS: unknown variant $v (floor, perf)" >&2; exit 2 ;;
		esac
	done
	nv=${#variants[@]}
	for k in "${!A_RPS[@]}"; do unset "A_RPS[$k]" "A_US[$k]" "A_TCPU[$k]"; done
	wrk_rps "/$body" 1 >/dev/null # warm up
	for i in $(seq 0 "$rounds"); do
		a_round off "$body" || exit 1
		[ "$i" = "$rounds" ] && break
		for j in $(seq 0 $((nv - 1))); do
			a_round "${variants[$(((i + j) % nv))]}" "$body" || exit 1
		done
	done
	read -ra offs <<<"${A_RPS[off]}"
	read -ra ons <<<"${A_RPS[full]}"
	TP_LOST[$body]=${A_LOST[full.$body]:-0}
	TP_DROP[$body]=${A_DROP[full.$body]:-0}
	TP_OFF[$body]=$(printf '%s\n' "${offs[@]}" | awk '{s+=$1} END {printf "%.0f", s/NR}')
	TP_ON[$body]=$(printf '%s\n' "${ons[@]}" | awk '{s+=$1} END {printf "%.0f", s/NR}')
	TP_RATIO[$body]=$(awk -v a="${TP_ON[$body]}" -v b="${TP_OFF[$body]}" 'BEGIN {printf "%.3f", a/b}')
	mon=$(printf '%s\n' "${ons[@]}" | med)
	moff=$(printf '%s\n' "${offs[@]}" | med)
	TP_MED[$body]=$(awk -v a="$mon" -v b="$moff" 'BEGIN {printf "%.3f", a/b}')
	echo "a) /$body requests/s off: ${offs[*]}  on: ${ons[*]}"
	echo "   mean on/off ${TP_ON[$body]}/${TP_OFF[$body]} = ${TP_RATIO[$body]}; median $mon/$moff =" \
		"${TP_MED[$body]}; LOST ${TP_LOST[$body]}, DROP ${TP_DROP[$body]} during on-rounds;" \
		"reelcap CPU s per ${round}s round:${TP_CPU[$body]}"
	# the table: means over the rounds; "+us" = CPU us per request (wrk,
	# nginx worker, tracer) minus the untraced rounds'
	us_off=$(mean "${A_US[off]}")
	printf '   %-34s %8s %6s %9s %6s %10s %8s %7s\n' "/$body, ${round}s rounds, scope $SCOPE" \
		"req/s" "ratio" "LOST" "DROP" "tracer CPU" "CPU us" "+us"
	printf '   %-34s %8.0f %6s %9s %6s %10s %8s %7s\n' "untraced (${#offs[@]} rounds)" "${TP_OFF[$body]}" \
		"1.000" - - - "$us_off" -
	for v in "${variants[@]}"; do
		case "$v" in
		floor) label="attach floor (--comm $A_NOSUCH)" ;;
		perf) label="perf record -z, same tracepoints" ;;
		full) label="reelcap, full capture" ;;
		esac
		if [ -n "${A_NA[$v]:-}" ] && [ -z "${A_RPS[$v]:-}" ]; then
			printf '   %-34s %s\n' "$label" "${A_NA[$v]}"
			A_RATIO[$v.$body]=nan
			continue
		fi
		rps=$(mean "${A_RPS[$v]}")
		A_RATIO[$v.$body]=$(awk -v a="$rps" -v b="${TP_OFF[$body]}" 'BEGIN {printf "%.3f", a/b}')
		us=$(mean "${A_US[$v]}")
		lost=${A_LOST[$v.$body]:-0} drop=${A_DROP[$v.$body]:-0}
		[ "$v" = perf ] && lost="$lost/${A_CHUNKS[$body]:-0}" drop=-
		printf '   %-34s %8.0f %6s %9s %6s %9ss %8s %7s\n' "$label" "$rps" "${A_RATIO[$v.$body]}" \
			"$lost" "$drop" "$(mean "${A_TCPU[$v]}")" "$us" \
			"$(awk -v a="$us" -v b="$us_off" 'BEGIN {if (a == "nan" || b == "nan") print "nan"; else printf "%.2f", a-b}')"
	done
	awk -v b="$us_off" 'BEGIN {if (b != "nan") printf "   ratio 0.95 leaves %.2f us CPU per request for all capture work (untraced %.2f x (1/0.95 - 1))\n", b*(1/0.95-1), b}'
	[[ " ${variants[*]} " == *" perf "* ]] && [ -z "${A_NA[perf]:-}" ] &&
		echo "   (perf LOST: samples lost/PERF_RECORD_LOST records of ${A_SAMPLES[$body]:-0} samples kept," \
			"from perf report --stats)"
	[ -n "${A_NA[perf]:-}" ] && [ -n "${A_RPS[perf]:-}" ] && echo "   perf: ${A_NA[perf]} in a later round"
done

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
	local reel_cpu reel_mb reel_events reel_load perf_cpu perf_mb perf_events perf_load perf_lost
	# reelcap
	rm -f "$W/b.reel"
	$CPUTIME "$W/b_reel.cpu" "$REELCAP" -w "$W/b.reel" 2>"$W/b_reel.log" &
	TRACER_PID=$!
	for _ in $(seq 200); do
		grep -qs "capturing to" "$W/b_reel.log" && break
		sleep 0.05
	done
	sleep 3 # as for perf below
	local rp t0 t1 pp
	rp=$(child "$TRACER_PID")
	t0=$(ticks "$rp")
	reel_load=$("$@")
	sleep 0.5
	t1=$(ticks "$rp")
	local reel_drain
	reel_drain=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b-a)/hz}')
	stop_tracer
	reel_cpu=$(cat "$W/b_reel.cpu")
	# "final: ...: N events (X MB)" -> MB
	reel_mb=$(sed -n 's/.*final: .*events (\([0-9.]*\) \([kMG]*B\)).*/\1 \2/p' "$W/b_reel.log" |
		awk '{v=$1; if ($2=="kB") v/=1000; else if ($2=="GB") v*=1000; else if ($2=="B") v/=1e6; printf "%.3f", v}')
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
	t0=$(ticks "$pp")
	perf_load=$("$@")
	sleep 0.5
	t1=$(ticks "$pp")
	local perf_drain
	perf_drain=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b-a)/hz}')
	stop_tracer
	perf_cpu=$(cat "$W/b_perf.cpu")
	perf_mb=$(sed -n 's/.*original \([0-9.]*\) MB.*/\1/p' "$W/b_perf.log" | head -n 1)
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
	echo "   reelcap: $reel_cpu CPU s in all ($reel_drain while the load ran), $reel_mb MB drained," \
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

c_lost=nan c_samples='?' d_ratio=nan d_reel='?' d_pcap='?' d_zst='?'
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
# d) file size vs tcpdump + zstd -3 of the same wrk run

if part d; then
rm -f "$W/d.pcap" "$W/d.pcap.zst"
tcpdump -i lo --immediate-mode -s0 -B 262144 -U -w "$W/d.pcap" "tcp port $port" 2>"$W/d_tcpdump.log" &
TCPDUMP_PID=$!
sleep 1
start_reelcap "$W/d.reel" --port "$port" "${SCOPE_ARGS[@]}" || exit 1
d_rps=$(wrk_rps /b1k "$round")
sleep 1.5 # tcpdump drops what is still in the kernel buffer when stopped at once
stop_tracer
kill -INT "$TCPDUMP_PID"
wait "$TCPDUMP_PID" 2>/dev/null
zstd -q -3 -o "$W/d.pcap.zst" "$W/d.pcap"
d_reel=$(stat -c %s "$W/d.reel")
d_pcap=$(stat -c %s "$W/d.pcap")
d_zst=$(stat -c %s "$W/d.pcap.zst")
d_ratio=$(awk -v a="$d_reel" -v b="$d_zst" 'BEGIN {printf "%.3f", a/b}')
d_pkts=$(grep -o "[0-9]* packets captured" "$W/d_tcpdump.log")
d_kdrop=$(grep -o "[0-9]* packets dropped by kernel" "$W/d_tcpdump.log")
echo "d) wrk /b1k ${d_rps} req/s; reel ${d_reel} B; pcap ${d_pcap} B ($d_pkts, $d_kdrop), zstd -3 ${d_zst} B;" \
	"ratio $d_ratio"
fi

# --------------------------------------------------------------------
# diagnosis: BPF run time per program over one captured round

if part e; then
stats_now=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
[ "$stats_now" != 1 ] && sysctl -q kernel.bpf_stats_enabled=1
bpftool -j prog show >"$W/e_pre.json"
start_reelcap "$W/e.reel" || exit 1
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

pass() { awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
	if (v == "nan") { print "n/a"; exit }
	ok = (op == ">=") ? v >= t : (op == "<=") ? v <= t : v == t
	print ok ? "ok" : "MISS" }'; }
echo
echo "bench_capture results (reference measured in the same run; capture scope: $SCOPE)"
printf '%-52s %12s %10s %6s\n' "figure" "value" "target" ""
for body in $BODIES; do
	part a || break
	st=$(pass "${TP_RATIO[$body]}" ">=" 0.95)
	# a capture that loses events is cheaper than one that keeps them
	[ $((TP_LOST[$body] + TP_DROP[$body])) -gt 0 ] && st="$st, but lossy"
	printf '%-52s %12s %10s %6s\n' "a) wrk req/s capture on/off, ${body#b} bodies" "${TP_RATIO[$body]}" ">= 0.95" \
		"$st"
	printf '%-52s %12s %10s %6s\n' "   (median ratio; events LOST + DROPped while on)" \
		"${TP_MED[$body]}" "$((TP_LOST[$body] + TP_DROP[$body]))" ""
	[ -n "${A_RATIO[floor.$body]:-}" ] && printf '%-52s %12s %10s %6s\n' \
		"   (reference: attach floor, nothing captured)" "${A_RATIO[floor.$body]/nan/n/a}" "" ""
	[ -n "${A_RATIO[perf.$body]:-}" ] && printf '%-52s %12s %10s %6s\n' \
		"   (reference: perf record -z, same tracepoints)" "${A_RATIO[perf.$body]/nan/n/a}" "" ""
done
for l in evgen wrk; do
	part b || break
	printf '%-52s %12s %10s %6s\n' "b) tracer CPU s per MB, reelcap/perf, $l (cputime)" "${B_RATIO[$l]}" "<= 1.0" \
		"$(pass "${B_RATIO[$l]}" "<=" 1.0)"
	printf '%-52s %12s %10s %6s\n' "   (the same, CPU while the load ran: drain only)" "${B_DRATIO[$l]}" "<= 1.0" \
		"$(pass "${B_DRATIO[$l]}" "<=" 1.0)"
done
printf '%-52s %12s %10s %6s\n' "c) LOST at 200k events/s (default settings)" "$c_lost" "== 0" "$(pass "$c_lost" "==" 0)"
printf '%-52s %12s %10s %6s\n' "d) reel file / zstd -3 pcap, 1 KiB bodies" "$d_ratio" "<= 0.5" "$(pass "$d_ratio" "<=" 0.5)"
printf '  raw: a) 1k on %s off %s; 64k on %s off %s req/s (means); b) see above;\n' \
	"${TP_ON[b1k]:-}" "${TP_OFF[b1k]:-}" "${TP_ON[b64k]:-}" "${TP_OFF[b64k]:-}"
printf '       c) %s samples, %s LOST; d) reel %s B, pcap %s B, pcap.zst %s B\n' \
	"$c_samples" "$c_lost" "$d_reel" "$d_pcap" "$d_zst"
