#!/bin/sh
# replay_late_records.sh REELPLAY REELTOOL DATADIR WORKDIR
#
# Two captures in which one CPU's records reached the file seconds late
# (tests/data/late/, README.md there): replay must merge them exactly by the
# footer index. Checked: every record reaches the pipeline (reelplay --print)
# and reeltool cat in timestamp order, no hole, one server row, and every
# transaction paired, against counts taken from the file by hand and by
# tshark (post: 3 POST /api/orders answered 201 and 1 GET /api/users/1
# answered 200 over HTTP/1.1; tls: 3 GET and 1 POST /api/hello answered 200
# over HTTP/2 in TLS). The post capture cut before its footer (no index)
# merges by the window: reelplay says how many records came out of order,
# and the holes that leaves are not blamed on the traced peer.
set -u
reelplay=$1 reeltool=$2 data=$3 work=$4
fail=0
rm -rf "$work"
mkdir -p "$work"

bad() {
	echo "FAIL: $*"
	fail=1
}

# expect LABEL WANT GOT
expect() {
	if [ "$2" != "$3" ]; then
		bad "$1: want $2, got $3"
	else
		echo "ok: $1: $3"
	fi
}

# Lines of an event listing whose time goes back (TXN lines carry their
# request's time, printed when the transaction completes: left out).
backwards() {
	awk '$3 != "TXN" { t = $1 + 0; if (n && t < p) b++; p = t; n++ } END { print b + 0 }' "$1"
}

records() {
	awk '$3 != "TXN"' "$1" | wc -l | tr -d ' '
}

# check NAME RECORDS: order, holes, rows of one capture
check() {
	n=$1 f=$data/late-records-$1.reel w=$work/$1
	"$reelplay" "$f" --no-progress --print >"$w.print" 2>"$w.print.err"
	expect "$n: reelplay --print exit" 0 $?
	expect "$n: records printed" "$2" "$(records "$w.print")"
	expect "$n: steps back in time (reelplay --print)" 0 "$(backwards "$w.print")"
	"$reeltool" cat "$f" >"$w.cat" 2>"$w.cat.err"
	expect "$n: reeltool cat exit" 0 $?
	expect "$n: steps back in time (reeltool cat)" 0 "$(backwards "$w.cat")"
	expect "$n: order warnings" 0 "$(cat "$w.print.err" "$w.cat.err" | grep -c 'out of timestamp order')"
	"$reelplay" "$f" --no-progress --summary -w "$w.pcapng" --json "$w.jsonl" >"$w.sum" 2>"$w.sum.err"
	expect "$n: reelplay exit" 0 $?
	expect "$n: holes" 1 "$(grep -c '^captured payload [0-9]* bytes; holes 0 (0 bytes missing)$' "$w.sum")"
	expect "$n: holes blamed on the traced peer" 0 "$(grep -c 'lost at the traced peer' "$w.sum")"
	expect "$n: transactions" 4 "$(grep -c '"type":"txn"' "$w.jsonl")"
	expect "$n: transactions without request, response, or with a hole" 0 \
		"$(grep '"type":"txn"' "$w.jsonl" | grep -c -e no_req -e no_resp -e '"hole":true')"
}

check post 1087
expect "post: note on the late records" 1 "$(grep -c '^reelplay: note: records reached the file up to 4.452 s after newer ones (a CPU.s ring drained late); merged in order by the footer index$' "$w.sum.err")"
expect "post: server rows" 1 "$(grep '^http1 ' "$w.sum" | grep -vc '(all)')"
expect "post: server row" 1 "$(grep -c '^http1   127.0.0.1:19100  *4  *4 ' "$w.sum")"
expect "post: tcp:python3 rows" 0 "$(grep -c 'tcp:python3' "$w.sum")"
expect "post: POST /api/orders answered 201" 3 \
	"$(grep -c '"method":"POST","target":"/api/orders","status":201,' "$w.jsonl")"
expect "post: GET /api/users/1 answered 200" 1 \
	"$(grep -c '"method":"GET","target":"/api/users/1","status":200,' "$w.jsonl")"
if command -v tshark >/dev/null 2>&1; then
	ts="tshark -r $w.pcapng -d tcp.port==19100,http -d tcp.port==80,http"
	expect "post: tshark requests" "1 GET,3 POST" \
		"$($ts -Y http.request -T fields -e http.request.method 2>/dev/null |
			sort | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s = ","}')"
	expect "post: tshark responses" "3 201,1 200" \
		"$($ts -Y http.response -T fields -e http.response.code 2>/dev/null |
			sort -r | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s = ","}')"
else
	echo "tshark not found: the pcapng is not cross-checked"
fi

check tls 2513
expect "tls: note on the late records" 1 "$(grep -c '^reelplay: note: records reached the file up to 7.446 s after newer ones' "$w.sum.err")"
expect "tls: http2 server rows" 1 "$(grep -c '^http2   127.0.0.1:19443  *1  *4 ' "$w.sum")"
expect "tls: GET /api/hello answered 200" 3 \
	"$(grep -c '"method":"GET","target":"/api/hello","status":200,' "$w.jsonl")"
expect "tls: POST /api/hello answered 200" 1 \
	"$(grep -c '"method":"POST","target":"/api/hello","status":200,' "$w.jsonl")"
expect "tls: transactions over TLS" 4 "$(grep '"type":"txn"' "$w.jsonl" | grep -c '"tls":true')"
if command -v tshark >/dev/null 2>&1; then
	ts="tshark -r $w.pcapng -d tcp.port==80,http2 -d tcp.port==19443,http2"
	expect "tls: tshark requests" "3 GET,1 POST" \
		"$($ts -Y http2.headers.method -T fields -e http2.headers.method 2>/dev/null |
			sort | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s = ","}')"
	expect "tls: tshark responses" "4 200" \
		"$($ts -Y http2.headers.status -T fields -e http2.headers.status 2>/dev/null |
			sort | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s = ","}')"
fi

# The post capture without its footer (cut after its last block, as a
# capture still being written): merged by the window, which the cpu1
# backlog (4.452 s late) exceeds; reelplay says so with the counts, and the
# holes that leaves have no LOST, DROP or damaged block to blame.
head -c 20727 "$data/late-records-post.reel" >"$work/cut.reel"
"$reelplay" "$work/cut.reel" --no-progress --summary >"$work/cut.sum" 2>"$work/cut.err"
expect "cut: reelplay exit" 0 $?
expect "cut: order warning" 1 "$(grep -c '^reelplay: warning: 1 of 1 input merged by a 2.000 s time window, not exactly (no footer index: truncated or still being written); records reached the file up to 4.452 s after newer ones; 216 records released out of timestamp order, up to 2.352 s late$' "$work/cut.err")"
expect "cut: holes blamed on the traced peer" 0 "$(grep -c 'lost at the traced peer' "$work/cut.sum")"
expect "cut: holes of no known cause" 1 \
	"$(grep -c '^missing bytes by cause: not explained (no LOST, DROP or damaged block) 1451$' "$work/cut.sum")"

[ $fail = 0 ] && echo "ok: late records merged exactly"
exit $fail
