#!/usr/bin/env bash
# Real peers on loopback for reel's integration tests, trace recording and
# benchmarks (see ../shared/design/PEERS.md). Source this file; every start_*
# function runs its server in $PEER_DIR (a temp dir), on 127.0.0.1/::1 and the
# given high port, waits until it answers, and records its pid so stop_peers
# stops exactly what was started. Synthetic data only.
#
#   . tests/peers/peers.sh
#   peers_init                # makes PEER_DIR, traps EXIT to stop_peers
#   start_nginx PORT [BODYKB...]   # serves /b1k (1 KiB) ... and /b<N>k, sendfile off
#   start_redis PORT
#   start_postgres PORT       # as user postgres, trust auth, db "postgres"
#   start_dnsmasq PORT        # answers only from $PEER_DIR/hosts (web.reel.test ...)
#   start_h2 PORT             # node http2 cleartext server: GET /hello, POST /echo
#   start_tls PORT            # openssl s_server -WWW over $PEER_DIR/www

PEERS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEER_PIDS=()

peers_init() {
	PEER_DIR=$(mktemp -d /tmp/reel-peers.XXXXXX)
	chmod 755 "$PEER_DIR"
	trap stop_peers EXIT
}

stop_peers() {
	local p
	for p in "${PEER_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PEER_PIDS[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
	done
	PEER_PIDS=()
	[ -n "${PEER_DIR:-}" ] && rm -rf "$PEER_DIR"
}

# wait_port PORT [HOST]: until a TCP connect succeeds (10 s)
wait_port() {
	local port=$1 host=${2:-127.0.0.1}
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "peers: nothing answers on $host:$port after 10 s" >&2
	return 1
}

# Deterministic synthetic body of N KiB (printable, compressible like real text).
make_body() {
	python3 -c "
import sys
n = int(sys.argv[1]) * 1024
line = b'reel synthetic body line %06d abcdefghijklmnopqrstuvwxyz 0123456789\n'
out = bytearray()
i = 0
while len(out) < n:
    out += line % i
    i += 1
sys.stdout.buffer.write(bytes(out[:n]))" "$1"
}

start_nginx() {
	local port=$1
	shift
	local sizes=("$@")
	[ ${#sizes[@]} -gt 0 ] || sizes=(1)
	mkdir -p "$PEER_DIR/nginx/www" "$PEER_DIR/nginx/tmp"
	local s
	for s in "${sizes[@]}"; do
		make_body "$s" >"$PEER_DIR/nginx/www/b${s}k"
	done
	cat >"$PEER_DIR/nginx/nginx.conf" <<NGX
worker_processes 1;
pid $PEER_DIR/nginx/nginx.pid;
error_log $PEER_DIR/nginx/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile off;
	keepalive_requests 1000000;
	client_body_temp_path $PEER_DIR/nginx/tmp;
	proxy_temp_path $PEER_DIR/nginx/tmp;
	fastcgi_temp_path $PEER_DIR/nginx/tmp;
	uwsgi_temp_path $PEER_DIR/nginx/tmp;
	scgi_temp_path $PEER_DIR/nginx/tmp;
	default_type text/plain;
	server {
		listen 127.0.0.1:$port;
		listen [::1]:$port;
		root $PEER_DIR/nginx/www;
		location = /echo { return 200 "echo\n"; }
	}
}
NGX
	nginx -p "$PEER_DIR/nginx" -c "$PEER_DIR/nginx/nginx.conf" \
		-g 'daemon off; master_process on;' &
	PEER_PIDS+=($!)
	NGINX_PID=$!
	wait_port "$port"
}

start_redis() {
	local port=$1
	mkdir -p "$PEER_DIR/redis"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$PEER_DIR/redis" --logfile "$PEER_DIR/redis/log" &
	PEER_PIDS+=($!)
	REDIS_PID=$!
	wait_port "$port"
}

start_postgres() {
	local port=$1 bin=/usr/lib/postgresql/15/bin
	[ -x $bin/postgres ] || bin=$(ls -d /usr/lib/postgresql/*/bin | tail -n 1)
	mkdir -p "$PEER_DIR/pg"
	chown postgres: "$PEER_DIR/pg"
	local as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
	"${as_pg[@]}" "$bin/initdb" -D "$PEER_DIR/pg/data" -A trust -U postgres --no-sync \
		>"$PEER_DIR/pg/initdb.log" 2>&1
	"${as_pg[@]}" "$bin/postgres" -D "$PEER_DIR/pg/data" -c listen_addresses=127.0.0.1 \
		-c port="$port" -c unix_socket_directories="$PEER_DIR/pg" -c fsync=off \
		>"$PEER_DIR/pg/log" 2>&1 &
	PEER_PIDS+=($!)
	PG_PID=$!
	wait_port "$port"
	# accepting TCP is not yet accepting queries
	for _ in $(seq 100); do
		psql -h 127.0.0.1 -p "$port" -U postgres -Atc 'select 1' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "peers: postgres on $port does not answer queries" >&2
	return 1
}

start_dnsmasq() {
	local port=$1
	mkdir -p "$PEER_DIR/dns"
	cat >"$PEER_DIR/dns/hosts" <<HOSTS
10.1.2.3 web.reel.test
10.1.2.4 db.reel.test
fd00::5 v6.reel.test
HOSTS
	dnsmasq --keep-in-foreground --port="$port" --listen-address=127.0.0.1 --bind-interfaces \
		--no-resolv --no-poll --no-hosts --addn-hosts="$PEER_DIR/dns/hosts" --cache-size=0 \
		--pid-file="$PEER_DIR/dns/pid" --user=root --group=root 2>"$PEER_DIR/dns/log" &
	PEER_PIDS+=($!)
	DNSMASQ_PID=$!
	for _ in $(seq 100); do
		dig +time=1 +tries=1 @127.0.0.1 -p "$port" web.reel.test +short 2>/dev/null |
			grep -q 10.1.2.3 && return 0
		sleep 0.1
	done
	echo "peers: dnsmasq on $port does not answer" >&2
	return 1
}

start_h2() {
	local port=$1
	node "$PEERS_SRC/h2server.js" "$port" &
	PEER_PIDS+=($!)
	H2_PID=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/::1/$port") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "peers: h2 server on [::1]:$port does not answer" >&2
	return 1
}

start_tls() {
	local port=$1
	mkdir -p "$PEER_DIR/tls/www"
	openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
		-keyout "$PEER_DIR/tls/key.pem" -out "$PEER_DIR/tls/cert.pem" >/dev/null 2>&1
	make_body 4 >"$PEER_DIR/tls/www/b4k"
	(cd "$PEER_DIR/tls/www" && exec openssl s_server -accept "127.0.0.1:$port" \
		-cert ../cert.pem -key ../key.pem -WWW -quiet \
		-keylogfile "$PEER_DIR/tls/keylog") >/dev/null 2>&1 &
	PEER_PIDS+=($!)
	TLS_PID=$!
	wait_port "$port"
}
