#!/bin/sh
# check_json.sh REELPLAY TRACEDIR NAME WORKDIR: replays TRACEDIR/NAME.reel with
# --json and compares the output EXACTLY with TRACEDIR/NAME.expected.jsonl
# (reviewed against truth.txt when the trace was recorded). Fails with a diff.
set -u
reelplay=$1 dir=$2 name=$3 work=$4
mkdir -p "$work"
out=$work/$name.jsonl
rm -f "$out"
"$reelplay" "$dir/$name.reel" --json "$out"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: reelplay $name.reel --json exited $rc"
	exit 1
fi
if ! diff -u "$dir/$name.expected.jsonl" "$out"; then
	echo "FAIL: $name: JSON differs from $dir/$name.expected.jsonl (- expected, + got)"
	exit 1
fi
echo "ok: $name: $(grep -c '"type":"txn"' "$out") transactions, JSON identical to the expected file"
