#!/bin/sh
# check_identity.sh REELPLAY REELTOOL WORKDIR [--update]
#
# Byte identity of everything replay writes, against sha256 sums stored in
# tests/identity/expected.sha256 (taken before the replay pipeline was split,
# issue 13). Inputs: every recorded regression trace (tests/traces/*/*.reel),
# the crafted files of tests/data/ (good and damaged), and two fixed captures
# recorded once and kept here: demo.reel (tools/demo_workload.py, the README
# demo) and bulk.reel (record_bulk.sh: curl -> nginx, both ends traced, 2 MiB
# bodies whose pcapng crosses the writer's 1 MiB buffers, 300 keep-alive GETs).
#
# For each input: reelplay -w pcapng + --json, --print, --summary, -F pcap, a
# filter expression, --each-end --json -, --print --proto http1 with a short
# preview; reeltool info, verify and cat --json --payload. Each output's sha256
# (stdout, stderr, written files and the exit status) is compared; a mismatch
# names the output. --update rewrites expected.sha256 (only when the outputs
# are meant to change; say why in the commit).
set -u
reelplay=$(realpath "$1") reeltool=$(realpath "$2") work=$3 mode=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
expected=$here/expected.sha256

rm -rf "$work"
mkdir -p "$work/in" "$work/out"
# inputs copied under fixed relative names: messages that name the file are
# the same wherever the tree is
for f in "$src"/tests/traces/*/*.reel; do
	cp "$f" "$work/in/trace_$(basename "$f")"
done
for f in "$src"/tests/data/*.reel; do
	cp "$f" "$work/in/data_$(basename "$f")"
done
cp "$here/demo.reel" "$work/in/fixed_demo.reel"
cp "$here/bulk.reel" "$work/in/fixed_bulk.reel"
cd "$work" || exit 1

# run LABEL CMD...: stdout, stderr and the exit status of CMD into out/LABEL.*
run() {
	label=$1
	shift
	"$@" >"out/$label.stdout" 2>"out/$label.stderr"
	echo $? >"out/$label.rc"
}

for f in in/*.reel; do
	n=$(basename "$f" .reel)
	run "$n.write" "$reelplay" "$f" --no-progress -w "out/$n.pcapng" --json "out/$n.jsonl"
	run "$n.print" "$reelplay" "$f" --no-progress --print
	run "$n.summary" "$reelplay" "$f" --no-progress --summary
	run "$n.pcap" "$reelplay" "$f" --no-progress -F pcap -w "out/$n.pcap"
	run "$n.filter" "$reelplay" "$f" --no-progress -w "out/$n.filter.pcapng" \
		'tcp[tcpflags] & tcp-push != 0 or udp'
	run "$n.eachend" "$reelplay" "$f" --no-progress --json - --each-end
	run "$n.proto" "$reelplay" "$f" --no-progress --print --proto http1 --preview 16
	run "$n.info" "$reeltool" info "$f"
	run "$n.verify" "$reeltool" verify "$f"
	run "$n.cat" "$reeltool" cat "$f" --json --payload
done

(cd out && LC_ALL=C sha256sum $(LC_ALL=C ls)) >actual.sha256
if [ "$mode" = "--update" ]; then
	cp actual.sha256 "$expected"
	echo "wrote $expected: $(wc -l <actual.sha256) outputs"
	exit 0
fi
if [ ! -f "$expected" ]; then
	echo "FAIL: $expected missing"
	exit 1
fi
if ! diff -u "$expected" actual.sha256 >diff.txt; then
	echo "FAIL: outputs differ from the stored sums (- expected, + got; files in $work/out):"
	grep '^[-+][0-9a-f]' diff.txt
	exit 1
fi
n=$(wc -l <actual.sha256)
files=$(ls in | wc -l)
echo "ok: $n outputs of $files inputs byte-identical to $expected"
