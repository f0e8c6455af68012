#!/usr/bin/env bash
# Re-records the regression traces in tests/traces/NAME/ from real loopback
# peers (tests/peers/peers.sh). Run by hand, as root, never by CI:
#
#   tests/traces/record.sh [NAME...]      # NAME: http1 redis pgsql dns http2 lossyhttp
#                                         # (default: all)
#   tests/traces/record.sh --expected [NAME...]
#                                         # only rewrite NAME.expected.jsonl from the
#                                         # committed NAME.reel (after an intended change
#                                         # of reelplay's JSON): review `git diff` first
#
# Uses reelcap/reelplay from $REEL_BUILD (default: build/). For each NAME it
# writes, in tests/traces/NAME/:
#   NAME.reel            the capture (only synthetic data: what this script sends)
#   truth.txt            what the client did and saw, written from the client's own
#                        output at recording time (the tshark check compares with it)
#   NAME.expected.jsonl  `reelplay NAME.reel --json` at recording time, and
#   NAME.each-end.expected.jsonl with --each-end (both traced ends). REVIEW IT
#                        against truth.txt before committing: it is the regression
#                        reference and must describe correct behaviour.
#
# Capture scope: the server is already running (started outside the capture) and
# is named with -p SERVER_PID (its descendants too: nginx workers, postgres
# backends, the dnsmasq TCP child); the client runs as the capture's command;
# --port P keeps only the sockets of the peer's port (no postgres background
# chatter, no resolver traffic of the client). So every connection is seen from
# BOTH ends: the JSON has each transaction twice (client socket and server
# socket), and the reelplay filters named in truth.txt (client_filter,
# server_filter: --comm or --pid) give one side each.
#
# Ports are fixed (27xxx) so re-recordings differ as little as possible; the
# script refuses to run when one is taken (another peer would answer instead).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${REEL_BUILD:-$ROOT/build}
REELCAP=$BUILD/capture/reelcap
REELPLAY=$BUILD/replay/reelplay
ALL=(http1 redis pgsql dns http2 lossyhttp)

expected_only=0
if [ "${1:-}" = --expected ]; then
	expected_only=1
	shift
fi
if [ "$(id -u)" -ne 0 ] && [ $expected_only = 0 ]; then
	echo "record.sh: capturing needs root" >&2
	exit 1
fi
if [ $expected_only = 1 ]; then
	if [ $# -eq 0 ]; then # the traces that have a reviewed expected file
		for n in http1 redis pgsql dns http2 lossyhttp; do
			[ -f "$HERE/$n/$n.expected.jsonl" ] && set -- "$@" "$n"
		done
	fi
	for n in "$@"; do
		[ -f "$HERE/$n/$n.reel" ] || { echo "record.sh: no $HERE/$n/$n.reel" >&2; exit 2; }
		"$REELPLAY" "$HERE/$n/$n.reel" --json "$HERE/$n/$n.expected.jsonl"
		"$REELPLAY" "$HERE/$n/$n.reel" --json "$HERE/$n/$n.each-end.expected.jsonl" --each-end
		echo "== $n: rewrote $n.expected.jsonl and $n.each-end.expected.jsonl; review them (git diff) against truth.txt"
	done
	exit 0
fi
for b in "$REELCAP" "$REELPLAY"; do
	[ -x "$b" ] || { echo "record.sh: $b missing (build first, or set REEL_BUILD)" >&2; exit 1; }
done

# shellcheck source=../peers/peers.sh
. "$ROOT/tests/peers/peers.sh"
peers_init

port_free() {
	if ss -Hlnt "sport = :$1" | grep -q . || ss -Hlnu "sport = :$1" | grep -q .; then
		echo "record.sh: port $1 is already in use; stop what listens there" >&2
		exit 1
	fi
}

# capture NAME PORT SERVER_PID CMD...: records the client command into NAME.reel
# ($CAPTURE_OPTS: extra reelcap options)
capture() {
	local name=$1 port=$2 spid=$3
	shift 3
	kill -0 "$spid"
	# shellcheck disable=SC2086
	"$REELCAP" -q -w "$HERE/$name/$name.reel" ${CAPTURE_OPTS:-} -p "$spid" --port "$port" -- "$@"
}

finish() {
	local name=$1 dir=$HERE/$1
	"$REELPLAY" "$dir/$name.reel" --json "$dir/$name.expected.jsonl"
	"$REELPLAY" "$dir/$name.reel" --json "$dir/$name.each-end.expected.jsonl" --each-end
	chmod 644 "$dir/$name.reel" "$dir/$name.expected.jsonl" "$dir/$name.each-end.expected.jsonl" \
		"$dir/truth.txt"
	echo "== $name: $(stat -c %s "$dir/$name.reel") bytes, $(grep -c '"type":"txn"' \
		"$dir/$name.expected.jsonl") transactions; review $dir/$name.expected.jsonl against truth.txt"
}

# ---------------------------------------------------------------- http1
# curl against nginx: one keep-alive connection (curl reuses it across URLs
# and across --next), GETs of 1 KiB and 4 KiB files, a 404, a POST with a body.
rec_http1() {
	local port=27180 dir=$HERE/http1 u=http://127.0.0.1:27180
	port_free $port
	start_nginx $port 1 4
	mkdir -p "$dir"
	local w='%{method} %{url_effective} %{http_code} connects=%{num_connects}\n'
	capture http1 $port "$NGINX_PID" curl --http1.1 -s -o /dev/null -o /dev/null -o /dev/null \
		-w "$w" $u/b1k $u/missing/page.html "$u/b4k?v=2" \
		--next -s -o /dev/null -w "$w" -X POST -H 'Content-Type: application/json' \
		--data-binary '{"item":"reel-trace","qty":3}' $u/echo \
		>"$dir/client.out"
	{
		echo "# http1: curl --http1.1 against nginx on 127.0.0.1:$port, one keep-alive connection"
		echo "client_filter --comm curl"
		echo "server_filter --comm nginx"
		echo "port $port"
		echo "connections 1"
		echo "# REQ METHOD PATH STATUS (from curl -w at recording time)"
		sed -E "s|^([A-Z]+) http://127.0.0.1:$port([^ ]*) ([0-9]+) .*|REQ \1 \2 \3|" \
			"$dir/client.out"
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish http1
}

# ---------------------------------------------------------------- redis
# redis-cli in argument mode (stdin mode first sends COMMAND DOCS, a ~170 KB
# reply): one connection per command, and one connection with INCR repeated.
rec_redis() {
	local port=27379 dir=$HERE/redis
	port_free $port
	start_redis $port
	mkdir -p "$dir"
	cat >"$PEER_DIR/redis-client.sh" <<EOF
set -e
r() { printf 'CMD %s => ' "\$*"; redis-cli -p $port "\$@" 2>&1 | tr '\n' ' ' | sed 's/ \$//'; echo; }
r SET user:1 alice
r GET user:1
r INCR hits
r LPUSH queue job-a job-b job-c
r LRANGE queue 0 -1
r GET nokey
r INCR user:1
r FLY away
printf 'REPEAT3 INCR counter => '; redis-cli -p $port -r 3 INCR counter | tr '\n' ' ' | sed 's/ \$//'; echo
EOF
	capture redis $port "$REDIS_PID" sh "$PEER_DIR/redis-client.sh" >"$dir/client.out"
	{
		echo "# redis: redis-cli 7 (argument mode) against redis-server on 127.0.0.1:$port"
		echo "client_filter --comm redis-cli"
		echo "server_filter --comm redis-server"
		echo "port $port"
		echo "connections 9"
		echo "# CMD ARGS => REPLY as redis-cli printed it (raw mode); REPEAT3: -r 3 on one connection"
		cat "$dir/client.out"
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish redis
}

# ---------------------------------------------------------------- pgsql
# psql against postgres: one connection, simple-query protocol, one -c per
# statement, the last one an error (psql continues without ON_ERROR_STOP).
rec_pgsql() {
	local port=27432 dir=$HERE/pgsql
	local q=("CREATE TABLE items (id int PRIMARY KEY, name text)"
		"INSERT INTO items VALUES (1, 'apple'), (2, 'pear')"
		"SELECT id, name FROM items ORDER BY id"
		"UPDATE items SET name = 'plum' WHERE id = 2"
		"SELECT * FROM missing_table")
	port_free $port
	start_postgres $port
	mkdir -p "$dir"
	local args=() s
	for s in "${q[@]}"; do
		args+=(-c "$s")
	done
	capture pgsql $port "$PG_PID" sh -c 'exec "$@" >"$0" 2>&1' "$dir/client.out" \
		env PGAPPNAME=reel-trace psql -X -h 127.0.0.1 -p $port -U postgres -d postgres \
		-v VERBOSITY=verbose "${args[@]}" || true
	{
		echo "# pgsql: psql 15 against postgres 15 on 127.0.0.1:$port, one connection, -c per statement"
		echo "client_filter --comm psql"
		echo "server_filter --comm postgres"
		echo "port $port"
		echo "connections 1"
		echo "# QUERY: the statements psql sent, in order; then psql's output"
		for s in "${q[@]}"; do
			echo "QUERY $s"
		done
		sed 's/^/OUT /' "$dir/client.out"
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish pgsql
}

# ---------------------------------------------------------------- dns
# dig against dnsmasq (answers only from its hosts file): A, AAAA, NXDOMAIN
# (reel.test is --local), REFUSED (a name outside it, no upstream) over UDP,
# one A over TCP (dnsmasq forks a child per TCP connection).
start_dnsmasq_local() { # as peers.sh start_dnsmasq, plus --local=/reel.test/
	local port=$1
	mkdir -p "$PEER_DIR/dns"
	printf '10.1.2.3 web.reel.test\n10.1.2.4 db.reel.test\nfd00::5 v6.reel.test\n' >"$PEER_DIR/dns/hosts"
	dnsmasq --keep-in-foreground --port="$port" --listen-address=127.0.0.1 --bind-interfaces \
		--no-resolv --no-poll --no-hosts --addn-hosts="$PEER_DIR/dns/hosts" --cache-size=0 \
		--local=/reel.test/ --pid-file="$PEER_DIR/dns/pid" --user=root --group=root \
		2>"$PEER_DIR/dns/log" &
	PEER_PIDS+=($!)
	DNSMASQ_PID=$!
	for _ in $(seq 100); do
		dig +time=1 +tries=1 @127.0.0.1 -p "$port" web.reel.test +short 2>/dev/null |
			grep -q 10.1.2.3 && return 0
		sleep 0.1
	done
	echo "record.sh: dnsmasq on $port does not answer" >&2
	return 1
}
rec_dns() {
	local port=27053 dir=$HERE/dns
	port_free $port
	start_dnsmasq_local $port
	mkdir -p "$dir"
	cat >"$PEER_DIR/dns-client.sh" <<EOF
set -e
q() { # NAME TYPE TRANSPORT [dig options]
	local out
	out=\$(dig @127.0.0.1 -p $port +time=2 +tries=1 "\$1" "\$2" \${4:-})
	printf 'Q %s %s %s %s %s\n' "\$1" "\$2" "\$3" \
		"\$(printf '%s\n' "\$out" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')" \
		"\$(printf '%s\n' "\$out" | awk '/^[^;]/ && NF >= 5 {print \$5}' | paste -sd, -)"
}
q web.reel.test A udp
q v6.reel.test AAAA udp
q nope.reel.test A udp
q outside.example A udp
q db.reel.test A tcp +tcp
EOF
	capture dns $port "$DNSMASQ_PID" sh "$PEER_DIR/dns-client.sh" >"$dir/client.out"
	{
		echo "# dns: dig 9.18 against dnsmasq on 127.0.0.1:$port (hosts file only)"
		echo "client_filter --comm dig"
		echo "server_filter --comm dnsmasq"
		echo "port $port"
		echo "# Q NAME TYPE TRANSPORT RCODE ANSWERS (from dig's output at recording time)"
		cat "$dir/client.out"
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish dns
}

# ---------------------------------------------------------------- http2
# node's http2 client against h2server.js, prior-knowledge h2c on [::1], one
# connection, sequential streams. Both sides are `node`: truth.txt names them
# by pid.
rec_http2() {
	local port=27443 dir=$HERE/http2
	port_free $port
	start_h2 $port
	mkdir -p "$dir"
	capture http2 $port "$H2_PID" sh -c 'echo $$ >"$0"; exec "$@"' "$PEER_DIR/h2client.pid" \
		node "$ROOT/tests/peers/h2client.js" $port \
		GET:/hello POST:/echo:reel-h2-body-0123456789 GET:/nope GET:/hello >"$dir/client.out"
	{
		echo "# http2: node 20 http2 client against tests/peers/h2server.js on [::1]:$port (h2c prior knowledge)"
		echo "client_filter --pid $(cat "$PEER_DIR/h2client.pid")"
		echo "server_filter --pid $H2_PID"
		echo "port $port"
		echo "connections 1"
		echo "# REQ METHOD PATH STATUS (requests from the command line, statuses from h2client.js)"
		paste -d' ' <(printf '%s\n' GET POST GET GET) "$dir/client.out" |
			awk '{print "REQ", $1, $3, $2}'
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish http2
}

# ---------------------------------------------------------------- lossyhttp
# As http1, but with a 1-page perf ring per CPU: the 64 KiB responses (32 KiB
# DATA chunks) cannot fit and are LOST; the small requests and the 1 KiB
# responses between them survive. Transactions touched by a hole must be
# marked, and the later ones on the same connection recovered.
rec_lossyhttp() {
	local port=27181 dir=$HERE/lossyhttp u=http://127.0.0.1:27181
	port_free $port
	start_nginx $port 1 64
	mkdir -p "$dir"
	local w='%{method} %{url_effective} %{http_code} size=%{size_download}\n' urls=() i
	for i in $u/b1k $u/b64k "$u/b1k?after=1" "$u/b64k?again=1" "$u/b1k?after=2" \
		$u/missing "$u/b1k?last=1"; do
		urls+=(-o /dev/null "$i")
	done
	CAPTURE_OPTS="--ring-pages 1" capture lossyhttp $port "$NGINX_PID" \
		curl --http1.1 -s -w "$w" "${urls[@]}" >"$dir/client.out"
	{
		echo "# lossyhttp: curl --http1.1 against nginx on 127.0.0.1:$port, one keep-alive connection,"
		echo "# captured with reelcap --ring-pages 1 (the 64 KiB responses are lost in the kernel ring)"
		echo "client_filter --comm curl"
		echo "server_filter --comm nginx"
		echo "port $port"
		echo "connections 1"
		echo "# REQ METHOD PATH STATUS BYTES (from curl -w at recording time)"
		sed -E "s|^([A-Z]+) http://127.0.0.1:$port([^ ]*) ([0-9]+) size=([0-9]+)|REQ \1 \2 \3 \4|" \
			"$dir/client.out"
	} >"$dir/truth.txt"
	rm -f "$dir/client.out"
	finish lossyhttp
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
for n in "${names[@]}"; do
	case " ${ALL[*]} " in
	*" $n "*) "rec_$n" ;;
	*) echo "record.sh: unknown trace '$n' (${ALL[*]})" >&2; exit 2 ;;
	esac
done
