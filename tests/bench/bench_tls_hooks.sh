#!/bin/bash
# bench_tls_hooks.sh BUILD_DIR [ROUNDS]
# The kernel-side cost per call of each TLS hook kind, from
# kernel.bpf_stats_enabled: run_time_ns / run_cnt of the uprobe programs of
# one reelcap, while `reelcap -- sh WORK` runs one library's client (and
# server, when the server's library is hooked too) over loopback:
#   openssl   curl -k (libssl.so.3) x20 against openssl s_server -WWW
#   static    sslcli-static (libssl.a), 20 connections
#   boringssl sslcli-boring (Debian's BoringSSL), 20 connections
#   gnutls    gnutls-cli x20 against gnutls-serv --http (both hooked)
#   go        gotls client, 20 GETs against gotls server (both hooked)
#   node      nodecli.js, 20 connections at once (memory BIOs)
# Each response carries SIZE bytes (default 100003: 16 KiB TLS records, a
# read returns up to 16 KiB; SIZE=16 shows the fixed cost per call). Prints per kind and program: calls and the median over rounds
# of ns per run, with the sys_exit programs of read and write of the same run
# for scale. bpf_stats adds ~45 ns to every run. Not counted: the uprobe
# trap itself (the kernel's breakpoint and single-step, per hook hit).
# Root only; the TLS test programs come from BUILD_DIR/tests/tlsprog.
set -eu
B=$(cd "$1" && pwd) ROUNDS=${2:-3} SIZE=${SIZE:-100003}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
P=$B/tests/tlsprog
tmp=$(mktemp -d)
# bpf_stats costs every BPF program on the host two clock reads: put it back
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
trap 'rm -rf "$tmp"; sysctl -qw kernel.bpf_stats_enabled="$stats_was"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
cd "$tmp"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem \
	-out cert.pem -days 2 >/dev/null 2>&1
head -c "$SIZE" /dev/urandom >body.bin
printf 'GET /body.bin HTTP/1.0\r\n\r\n' >req.txt
port() { echo $((20000 + RANDOM % 20000)); }

# The work of kind $1, as a shell script that reelcap runs.
work() {
	local p
	p=$(port)
	case $1 in
	openssl | static | boringssl | node)
		echo "openssl s_server -accept 127.0.0.1:$p -cert cert.pem -key key.pem -WWW -quiet &"
		echo 'echo $! >>pids'
		echo "sleep 1"
		case $1 in
		openssl) echo "for i in \$(seq 20); do curl -sk -o /dev/null https://127.0.0.1:$p/body.bin; done" ;;
		static | boringssl)
			local r="" i
			for i in $(seq 20); do r="$r 'GET /body.bin HTTP/1.0\\r\\n\\r\\n'"; done
			local prog=$P/sslcli-static
			[ "$1" = boringssl ] && prog=$P/sslcli-boring
			echo "$prog 127.0.0.1 $p out.bin $r"
			;;
		node)
			echo "node $SRC/tests/tlsprog/nodecli.js $p out $(printf '/body.bin %.0s' $(seq 20))"
			;;
		esac
		;;
	gnutls)
		echo "gnutls-serv --http -p $p --x509certfile cert.pem --x509keyfile key.pem >/dev/null 2>&1 &"
		echo 'echo $! >>pids'
		echo "sleep 1"
		echo "for i in \$(seq 20); do gnutls-cli --insecure -p $p 127.0.0.1 <req.txt >/dev/null 2>&1; done"
		;;
	go)
		echo "$P/gotls server 127.0.0.1:$p cert.pem key.pem >/dev/null &"
		echo 'echo $! >>pids'
		echo "sleep 1"
		echo "$P/gotls client https://127.0.0.1:$p dump.txt $(printf "/n/$SIZE %.0s" $(seq 20)) >/dev/null"
		;;
	esac
	echo 'touch done; sleep 60 & echo $! >>pids; wait $!'
}

# "name run_cnt ns_per_run" of reelcap $1's programs that ran (its program
# ids from its descriptors' fdinfo)
stats() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" {print $2}' | sort -u)
	bpftool -j prog show | python3 -c '
import json, sys
ids = set(int(x) for x in sys.argv[1].split())
for p in json.load(sys.stdin):
    n, c = p.get("name", ""), p.get("run_cnt", 0)
    if p["id"] in ids and c and (n.startswith(("ssl_", "go_")) or n in ("exit_read", "exit_write")):
        print(n, c, p.get("run_time_ns", 0) // c)' "$ids"
}

one() { # kind -> stats lines
	work "$1" >work.sh
	rm -f done pids
	"$B/capture/reelcap" -q -w x.reel -- sh work.sh >/dev/null 2>rc.log &
	local rc=$! i
	for i in $(seq 600); do [ -e done ] && break; sleep 0.1; done
	stats "$rc"
	# the servers and the sleep, by pid: the command then ends, and reelcap
	kill $(cat pids) 2>/dev/null || true
	rm -f pids
	wait "$rc" 2>/dev/null || true
}

kinds=${KINDS:-"openssl static boringssl gnutls go node"}
for k in $kinds; do
	: >"$k.all"
	for r in $(seq "$ROUNDS"); do one "$k" >>"$k.all"; done
	python3 - "$k" "$k.all" <<'EOF'
import sys, statistics
kind, path = sys.argv[1], sys.argv[2]
d = {}
for line in open(path):
    n, c, ns = line.split()
    d.setdefault(n, []).append((int(c), int(ns)))
for n in sorted(d):
    v = d[n]
    print("%-10s %-16s calls/round %6d  ns/run median %6d  (rounds %s)" % (
        kind, n, statistics.median(c for c, _ in v), statistics.median(x for _, x in v),
        " ".join(str(x) for _, x in v)))
EOF
done
