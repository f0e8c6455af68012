# shellcheck shell=bash
# bench_capture a): what tracing costs wrk -> nginx, as ratios of untraced
# requests/s (sourced by bench_capture.sh, which sets port, round, rounds, W,
# REELCAP, REELTOOL, REELPLAY, CPUTIME, NGINX_WORKER, a_tps and the tracer
# helpers start_reelcap / stop_tracer / wrk_run / ticks / child).
#
# Each cycle runs one round of every variant, in an order rotated by one every
# cycle: untraced, then per scope (A_SCOPES) the attach floor, full capture and
# perf record -z, and tcpdump. A variant's ratio is the median over the cycles
# of its req/s over the untraced req/s of the same cycle.
#   scope server ("nginx only"): reelcap --comm nginx; floor --comm reel-nosuch;
#                perf --filter 'comm == "nginx"'
#   scope both   ("both ends"):  reelcap --port P (wrk is traced too); floor
#                --port P+1 (nothing listens there: the port test runs on every
#                socket call, nothing matches); perf --filter 'comm == "nginx" ||
#                comm == "wrk"'
#   scope all    (every process): reelcap without filters; floor --comm
#                reel-nosuch; perf --filter 'common_pid != PERF'
#   tcpdump -i lo -w FILE tcp port P (scope-free: lo carries each packet once)

A_NOSUCH=reel-nosuch # a comm no process has
A_NOPORT=${BENCH_NOPORT:-$((port + 1))}
A_PERF_SETTLE=${BENCH_PERF_SETTLE:-1} # s after perf's file appears (its /proc scan)
# shellcheck disable=SC2206 # word splitting wanted
A_TCPDUMP_ARGS=(${BENCH_TCPDUMP_ARGS:-}) # extra tcpdump options (default: none)
# tcpdump's file (64 KiB bodies: GBs per round, deleted after it); the same disk
# as reelcap's file unless BENCH_PCAP_DIR says otherwise (e.g. /dev/shm)
A_PCAP=${BENCH_PCAP_DIR:-$W}/bench_capture.$$.pcap
A_HDR=66 # Ethernet 14 + IPv4 20 + TCP 20 + timestamps option 12: a lo frame's headers

declare -A A_RPS A_RATIO A_US A_TCPU A_REQ A_LOST A_DROP A_CUT A_MISS A_GAP A_NA
declare -A A_KPKT A_KDROP A_KMISS A_PSAMP A_PLOST A_PCHUNK A_MED

# scope_label SCOPE / scope_args SCOPE: reelcap's arguments for full capture
scope_label() {
	case "$1" in
	server) echo "nginx only (--comm nginx)" ;;
	both) echo "both ends (--port $port)" ;;
	all) echo "every process (no filter)" ;;
	esac
}
scope_args() {
	case "$1" in
	server) echo "--comm nginx" ;;
	both) echo "--port $port" ;;
	esac
}
floor_args() {
	case "$1" in
	both) echo "--port $A_NOPORT" ;;
	*) echo "--comm $A_NOSUCH" ;;
	esac
}
# perf_filter SCOPE: perf's --filter for every event, shell-quoted for the sh
# script that execs perf ($$ there is perf's pid)
# shellcheck disable=SC2016 # $$ is for that sh
perf_filter() {
	case "$1" in
	server) echo "'comm == \"nginx\"'" ;;
	both) echo "'comm == \"nginx\" || comm == \"wrk\"'" ;;
	*) echo '"common_pid != $$"' ;;
	esac
}

# start_perf DATA SCOPE: background perf record -z on a_tps; 1 and A_NA[perf.SCOPE]
# set when it does not run
start_perf() {
	local data=$1 scope=$2 filter
	filter=$(perf_filter "$scope")
	rm -f "$data" "$W/a_perf.cpu"
	{
		printf 'exec perf record -z -a -m 512 -o %s' "$data"
		for t in $a_tps; do
			printf ' -e %s --filter %s' "$t" "$filter"
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
		A_NA[perf.$scope]="n/a (perf record: $(grep -v '^ *$' "$W/a_perf.log" | head -n 1 | cut -c1-60))"
		return 1
	fi
}

# start_tcpdump PCAP: background tcpdump -i lo -w PCAP of the port, until it listens
start_tcpdump() {
	rm -f "$1"
	tcpdump -i lo -w "$1" "${A_TCPDUMP_ARGS[@]}" "tcp port $port" 2>"$W/a_tcpdump.log" &
	TRACER_PID=$!
	TRACER_LOG=
	for _ in $(seq 100); do
		grep -qs "listening on" "$W/a_tcpdump.log" && return 0
		kill -0 "$TRACER_PID" 2>/dev/null || break
		sleep 0.05
	done
	stop_tracer
	A_NA[tcpdump]="n/a (tcpdump: $(head -n 1 "$W/a_tcpdump.log" | cut -c1-60))"
	return 1
}

# add KEY VALUE: appends VALUE to the list A_<array>[KEY] (by name)
add() {
	local -n arr=$1
	arr[$2]="${arr[$2]:-} $3"
}
# sum ARRAY KEY N: adds N to a counter
sum() {
	local -n arr=$1
	arr[$2]=$((${arr[$2]:-0} + $3))
}

# a_full_figures FILE KEY: LOST, DROP and the bytes missing of one reelcap round
a_full_figures() {
	local f=$1 k=$2 lost drop cut gap
	read -r lost drop cut < <("$REELTOOL" info --json "$f" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(j["lost_samples"], j["dropped_records"], j.get("overload_cut_bytes", 0))')
	# the bytes of holes left by LOST and DROP, from the replayed streams
	# (and, both ends traced, TWIN bytes whose copy at the other end was lost)
	gap=$("$REELPLAY" --summary "$f" 2>/dev/null | awk '/^missing bytes by cause: / {
		if (match($0, /lost \(LOST\/DROP\) [0-9]+/)) n += substr($0, RSTART + 17, RLENGTH - 17)
		if (match($0, /lost at the traced peer \(TWIN\) [0-9]+/)) n += substr($0, RSTART + 31, RLENGTH - 31)
	} END {print n + 0}')
	sum A_LOST "$k" "${lost:-0}"
	sum A_DROP "$k" "${drop:-0}"
	sum A_CUT "$k" "${cut:-0}"
	sum A_GAP "$k" "${gap:-0}"
	[ -n "${BENCH_VERBOSE:-}" ] && grep -h "final:\|overload" "$W/reelcap.$$.log" | sed 's/^/      /' >&2
	return 0
}

# a_perf_figures KEY: samples lost, kept, and PERF_RECORD_LOST records
a_perf_figures() {
	local k=$1 st=$W/a_perf.stats
	perf report -i "$W/a_perf.data" --stats >"$st" 2>/dev/null
	# perf 6.1 counts lost samples per event ("EVENT stats:" sections) as
	# LOST_SAMPLES; PERF_RECORD_LOST records are in "Aggregated stats:"
	sum A_PLOST "$k" "$(awk '/^[^ ]+:[^ ]+ stats:$/ {e = 1} e && /LOST_SAMPLES events:/ {s += $3}
		END {print s + 0}' "$st")"
	sum A_PCHUNK "$k" "$(awk '/^[^ ]+:[^ ]+ stats:$/ {exit} /^ *LOST events:/ {print $3; exit}
		END {print 0}' "$st" | head -n 1)"
	local samples
	samples=$(awk '/^[^ ]+:[^ ]+ stats:$/ {exit} /SAMPLE events:/ {print $3; exit}' "$st")
	sum A_PSAMP "$k" "${samples:-0}"
	[ "${samples:-0}" -gt 0 ] || echo "bench_capture: warning: perf recorded no samples" \
		"($(grep -v '^ *$' "$W/a_perf.log" | head -n 1))" >&2
	rm -f "$W/a_perf.data"
}

# a_tcpdump_figures KEY PCAP: packets captured and dropped by the kernel; the
# bytes those drops took, estimated as drops x the mean TCP payload of the
# captured packets ((file - pcap headers) / packets - A_HDR)
a_tcpdump_figures() {
	local k=$1 pcap=$2 cap drop size
	cap=$(sed -n 's/^\([0-9]*\) packets captured.*/\1/p' "$W/a_tcpdump.log")
	drop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$W/a_tcpdump.log")
	size=$(stat -c %s "$pcap" 2>/dev/null || echo 0)
	sum A_KPKT "$k" "${cap:-0}"
	sum A_KDROP "$k" "${drop:-0}"
	sum A_KMISS "$k" "$(awk -v s="$size" -v c="${cap:-0}" -v d="${drop:-0}" -v h="$A_HDR" 'BEGIN {
		if (c > 0) { m = (s - 24) / c - 16 - h; if (m < 0) m = 0; printf "%.0f", d * m } else print 0 }')"
	rm -f "$pcap"
}

# a_round VARIANT BODY: one wrk round with VARIANT (off, tcpdump, or
# floor|full|perf.SCOPE) running; records its figures under VARIANT.BODY
a_round() {
	local v=$1 body=$2 kind=${1%%.*} scope=${1#*.} k=$1.$2 tp="" t0=0 t1=0 n0 n1 rps req wcpu
	[ -n "${A_NA[$v]:-}" ] && return 0
	# shellcheck disable=SC2046 # the scope's arguments are words
	case "$kind" in
	off) ;;
	floor) start_reelcap "$W/a_floor.reel" $(floor_args "$scope") || return 1 ;;
	full) start_reelcap "$W/a_full.reel" $(scope_args "$scope") || return 1 ;;
	notwin) start_reelcap "$W/a_full.reel" $(scope_args "$scope") --no-twin || return 1 ;;
	perf) start_perf "$W/a_perf.data" "$scope" || return 0 ;;
	tcpdump) start_tcpdump "$A_PCAP" || return 0 ;;
	esac
	if [ "$kind" = tcpdump ]; then
		tp=$TRACER_PID
	elif [ -n "$TRACER_PID" ]; then
		tp=$(child "$TRACER_PID")
	fi
	n0=$(ticks "$NGINX_WORKER")
	[ -n "$tp" ] && t0=$(ticks "$tp")
	read -r rps req wcpu < <(wrk_run "/$body" "$round")
	[ -n "$tp" ] && t1=$(ticks "$tp")
	n1=$(ticks "$NGINX_WORKER")
	# tcpdump counts what is still in its buffer as received, not dropped
	[ "$kind" = tcpdump ] && sleep 0.5
	stop_tracer
	add A_RPS "$k" "$rps"
	add A_REQ "$k" "$req"
	add A_TCPU "$k" "$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b-a)/hz}')"
	add A_US "$k" "$(awk -v w="$wcpu" -v n="$((n1 - n0 + t1 - t0))" -v hz="$HZ" -v r="$req" \
		'BEGIN {if (r > 0) printf "%.2f", (w + n/hz) / r * 1e6; else print "nan"}')"
	case "$kind" in
	floor) a_full_figures "$W/a_floor.reel" "$k" ;;
	full | notwin) a_full_figures "$W/a_full.reel" "$k" ;;
	perf) a_perf_figures "$k" ;;
	tcpdump) a_tcpdump_figures "$k" "$A_PCAP" ;;
	esac
	rm -f "$W/a_floor.reel" "$W/a_full.reel"
	[ -n "${BENCH_VERBOSE:-}" ] && echo "   round $k: $rps req/s, $req requests; LOST ${A_LOST[$k]:-}" \
		"DROP ${A_DROP[$k]:-} cut ${A_CUT[$k]:-} gap ${A_GAP[$k]:-} perf ${A_PLOST[$k]:-}/${A_PSAMP[$k]:-}" \
		"tcpdump ${A_KDROP[$k]:-}/${A_KPKT[$k]:-} (sums so far)" >&2
	return 0
}

# mean "V V ...": mean of the numbers in a list (nan if none); median likewise
mean() { tr ' ' '\n' <<<"$1" | awk '$1 != "" && $1 != "nan" {s += $1; n++} END {if (n) printf "%.2f", s/n; else print "nan"}'; }
median() {
	tr ' ' '\n' <<<"$1" | awk '$1 != "" && $1 != "nan"' | sort -g |
		awk '{v[NR] = $1} END {if (!NR) print "nan"; else printf "%.3f", NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

# a_variants: the variants of one cycle, in their unrotated order
a_variants() {
	local s r
	echo off
	for s in $A_SCOPES; do
		for r in $A_REFS full; do
			case "$r" in
			floor | perf | full | notwin) echo "$r.$s" ;;
			esac
		done
	done
	[[ " $A_REFS " == *" tcpdump "* ]] && echo tcpdump
}

# a_label VARIANT
a_label() {
	case "$1" in
	off) echo "untraced" ;;
	floor.*) echo "  attach floor ($(floor_args "${1#*.}"))" ;;
	full.*) echo "  reelcap, full capture" ;;
	notwin.*) echo "  reelcap, full capture, --no-twin" ;;
	perf.*) echo "  perf record -z, same hooks" ;;
	tcpdump) echo "tcpdump -i lo -w, tcp port $port" ;;
	esac
}

# a_body BODY: the cycles for one body size, then its table
a_body() {
	local body=$1 i j v nv offs
	local -a vs
	mapfile -t vs < <(a_variants)
	nv=${#vs[@]}
	wrk_run "/$body" 1 >/dev/null # warm up
	for i in $(seq 0 $((rounds - 1))); do
		for j in $(seq 0 $((nv - 1))); do
			a_round "${vs[$(((i + j) % nv))]}" "$body" || exit 1
		done
		# this cycle's ratios against its own untraced round
		read -ra offs <<<"${A_RPS[off.$body]}"
		for v in "${vs[@]}"; do
			local -a r
			read -ra r <<<"${A_RPS[$v.$body]:-}"
			[ ${#r[@]} -gt "$i" ] || continue
			add A_RATIO "$v.$body" "$(awk -v a="${r[$i]}" -v b="${offs[$i]}" 'BEGIN {printf "%.4f", (b > 0 ? a/b : 0)}')"
		done
	done
	a_table "$body" "${vs[@]}"
}

# a_table BODY VARIANT...: one line per variant
a_table() {
	local body=$1 v k s last="" us_off us
	shift
	us_off=$(mean "${A_US[off.$body]}")
	echo "a) /$body: $rounds cycles of $# rounds of ${round}s (order rotated each cycle);" \
		"ratio = median over the cycles of req/s / that cycle's untraced req/s"
	printf '   %-36s %8s %6s %13s %8s %6s %11s %11s %7s %7s\n' "variant" "req/s" "ratio" "ratio min-max" \
		"LOST" "DROP" "B cut" "B missing" "tracer" "+us/req"
	for v in "$@"; do
		k=$v.$body
		s=${v#*.}
		if [ "$v" != off ] && [ "$v" != tcpdump ] && [ "$s" != "$last" ]; then
			echo "   $(scope_label "$s"):"
			last=$s
		fi
		if [ -z "${A_RPS[$k]:-}" ]; then
			printf '   %-36s %s\n' "$(a_label "$v")" "${A_NA[$v]:-n/a}"
			A_MED[$k]=nan
			continue
		fi
		A_MED[$k]=$(median "${A_RATIO[$k]}")
		us=$(mean "${A_US[$k]}")
		local lost=- drop=- cut=- miss=- minmax
		minmax=$(tr ' ' '\n' <<<"${A_RATIO[$k]}" | awk 'NF {if (n++ == 0 || $1 < lo) lo = $1; if ($1 > hi) hi = $1}
			END {printf "%.3f-%.3f", lo, hi}')
		case "$v" in
		floor.* | full.* | notwin.*)
			lost=${A_LOST[$k]:-0} drop=${A_DROP[$k]:-0} cut=${A_CUT[$k]:-0}
			A_MISS[$k]=$((${A_GAP[$k]:-0} + ${A_CUT[$k]:-0}))
			miss=${A_MISS[$k]}
			;;
		perf.*) lost="${A_PLOST[$k]:-0}/${A_PCHUNK[$k]:-0}" ;;
		tcpdump) drop=${A_KDROP[$k]:-0} miss="~${A_KMISS[$k]:-0}" ;;
		esac
		printf '   %-36s %8.0f %6.3f %13s %8s %6s %11s %11s %6ss %7s\n' "$(a_label "$v")" \
			"$(mean "${A_RPS[$k]}")" "${A_MED[$k]}" "$minmax" "$lost" "$drop" "$cut" "$miss" "$(mean "${A_TCPU[$k]}")" \
			"$(awk -v a="$us" -v b="$us_off" 'BEGIN {if (a == "nan" || b == "nan") print "nan"; else printf "%+.2f", a-b}')"
	done
	echo "   (req/s: mean; LOST, DROP, B cut, B missing: sums over the rounds; reelcap's B cut = bytes"
	echo "   truncated by the overload control (reeltool info), B missing = those + the bytes of holes"
	echo "   left by LOST/DROP (reelplay --summary), each traced end's holes counted (both ends: a byte"
	echo "   one end missed counts even when the other end has it); perf LOST = samples lost/"
	echo "   PERF_RECORD_LOST records;"
	echo "   tracer = its CPU s per round; +us/req = CPU per request of wrk + nginx worker + tracer"
	echo "   over the untraced rounds' ($us_off us))"
	[ -n "${A_KPKT[tcpdump.$body]:-}" ] &&
		printf '   %s\n' "(tcpdump: ${A_KDROP[tcpdump.$body]} packets dropped by the kernel, ${A_KPKT[tcpdump.$body]} captured;" \
			"its B missing is an ESTIMATE: drops x the mean TCP payload of the captured packets," \
			"(pcap bytes - pcap headers) / packets - $A_HDR B of Ethernet/IPv4/TCP headers)"
	return 0
}

# a_check LABEL VALUE OP TARGET: a target line (ok / MISS / n/a)
A_CHECKS=()
a_check() {
	local st
	st=$(awk -v v="$2" -v t="$4" -v op="$3" 'BEGIN {
		if (v == "nan" || v == "" || t == "nan" || t == "") { print "n/a"; exit }
		ok = (op == ">=") ? v >= t : (op == "<=") ? v <= t : (op == "<") ? v < t : v == t
		print ok ? "ok" : "MISS" }')
	A_CHECKS+=("$(printf '%-58s %12s %14s %5s' "$1" "$2" "$3 $4" "$st")")
}

# a_targets: issue 11's targets for a), from what ran
a_targets() {
	local s t k
	for s in server both; do
		k=full.$s.b1k
		[ -n "${A_MED[$k]:-}" ] || continue
		t=0.85
		[ "$s" = both ] && t=0.75
		a_check "a) 1 KiB, $(scope_label "$s" | cut -d' ' -f1-2): full capture ratio" "${A_MED[$k]}" ">=" "$t"
		a_check "   LOST + DROP in those rounds" "$((${A_LOST[$k]:-0} + ${A_DROP[$k]:-0}))" "==" 0
	done
	k=full.both.b64k
	if [ -n "${A_MED[$k]:-}" ] && [ -n "${A_MED[tcpdump.b64k]:-}" ]; then
		a_check "a) 64 KiB, both ends: full capture ratio vs tcpdump's" "${A_MED[$k]}" ">=" \
			"${A_MED[tcpdump.b64k]}"
		a_check "   bytes missing (LOST+DROP+cut) vs tcpdump's (est.)" "${A_MISS[$k]:-0}" "<" \
			"${A_KMISS[tcpdump.b64k]:-0}"
	fi
}

# part_a: every body of BENCH_BODIES
part_a() {
	local body r
	for r in $A_REFS; do
		case "$r" in
		floor | perf | tcpdump | notwin) ;;
		*) echo "bench_capture: BENCH_A_REFS: unknown variant $r (floor, perf, tcpdump, notwin)" >&2; exit 2 ;;
		esac
	done
	for s in $A_SCOPES; do
		case "$s" in
		server | both | all) ;;
		*) echo "bench_capture: REEL_BENCH_SCOPE: unknown scope $s (server, both, all)" >&2; exit 2 ;;
		esac
	done
	for body in $BODIES; do
		a_body "$body"
	done
	a_targets
}
