#!/usr/bin/env bash
# Records tests/identity/bulk.reel once (by hand, as root; the stored sums in
# expected.sha256 belong to the committed file, so re-recording means --update):
# nginx (sendfile off) traced with -p, curl the capture's command, --port
# keeps the peer's sockets, so both ends of every connection are in the file:
# GET /b2048k over IPv4 and over IPv6, 300 keep-alive GETs of /b1k, a 404.
# tests/identity/demo.reel: `reelcap -w demo.reel -- python3 tools/demo_workload.py`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REELCAP=${REEL_BUILD:-$ROOT/build}/capture/reelcap
OUT=${1:-bulk.reel}
. "$ROOT/tests/peers/peers.sh"
peers_init
PORT=$((30000 + RANDOM % 20000))
start_nginx $PORT 1 2048 >/dev/null
rm -f "$OUT"
urls=$(for i in $(seq 300); do printf 'http://127.0.0.1:%s/b1k?i=%s ' $PORT $i; done)
"$REELCAP" -q --ring-pages 4096 -w "$OUT" -p "$NGINX_PID" --port $PORT -- sh -c "
	curl -s -o /dev/null http://127.0.0.1:$PORT/b2048k
	curl -s -o /dev/null -g 'http://[::1]:$PORT/b2048k'
	curl -s $urls >/dev/null
	curl -s -o /dev/null http://127.0.0.1:$PORT/nope"
ls -l "$OUT"
