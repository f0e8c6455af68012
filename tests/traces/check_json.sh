#!/bin/sh
# check_json.sh REELPLAY TRACEDIR NAME WORKDIR: replays TRACEDIR/NAME.reel with
# --json and compares the output EXACTLY with TRACEDIR/NAME.expected.jsonl
# (reviewed against truth.txt when the trace was recorded), and with
# --each-end against NAME.each-end.expected.jsonl when that file exists (both
# traced ends report their transactions). Fails with a diff.
set -u
reelplay=$1 dir=$2 name=$3 work=$4
mkdir -p "$work"
fails=0
for variant in "" each-end; do
	exp=$dir/$name${variant:+.$variant}.expected.jsonl
	out=$work/$name${variant:+.$variant}.jsonl
	[ -z "$variant" ] || [ -f "$exp" ] || continue
	rm -f "$out"
	"$reelplay" "$dir/$name.reel" --json "$out" ${variant:+--$variant}
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: reelplay $name.reel --json ${variant:+--$variant} exited $rc"
		fails=$((fails + 1))
		continue
	fi
	if ! diff -u "$exp" "$out"; then
		echo "FAIL: $name: JSON ${variant:+(--$variant) }differs from $exp (- expected, + got)"
		fails=$((fails + 1))
		continue
	fi
	echo "ok: $name${variant:+ --$variant}: $(grep -c '"type":"txn"' "$out") transactions, JSON identical to the expected file"
done
[ $fails -eq 0 ]
