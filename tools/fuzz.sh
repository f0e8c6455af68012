#!/usr/bin/env bash
# Bounded fuzzing: builds the libFuzzer targets of tests/fuzz/ with clang,
# ASan and UBSan in build-fuzz/, then runs each for SECONDS on top of its
# corpus (tests/fuzz/corpus/TARGET, read only; new inputs go to
# build-fuzz/fuzz-work/TARGET). A crash, a leak, undefined behaviour or an
# input that runs longer than 25 s fails the run; the input is kept in
# build-fuzz/findings/TARGET/ with the command that reproduces it.
#
#   tools/fuzz.sh [-t SECONDS] [TARGET...]
#
# SECONDS: -t, else $REEL_FUZZ_SECONDS, else 60. TARGET: dns http1 ... (all
# by default). tools/test.sh runs this after the suites; .ci/run a minute
# per target.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${REEL_FUZZ_SECONDS:-60}
if [ "${1:-}" = -t ]; then
	secs=$2
	shift 2
fi
case $secs in
'' | *[!0-9]*) echo "fuzz.sh: -t $secs: want whole seconds" >&2; exit 2 ;;
esac
targets=("$@")
for t in "${targets[@]}"; do
	[ -f "tests/fuzz/fuzz_$t.c" ] || { echo "fuzz.sh: no target $t (tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
done

dir=build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)
echo "=== configure $dir: clang, libFuzzer, ASan+UBSan"
# -UREEL_CAPTURE: a build-fuzz/ configured without the capture (as before
# fuzz_gopclntab needed it) takes the default again
CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREEL_FUZZ=ON \
	-DREEL_SANITIZE=ON -UREEL_CAPTURE >/dev/null
# the targets this configuration defines (some need the capture's libraries)
have=" $(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \(fuzz_[a-z0-9]*\)$/\1/p' |
	grep -v '_replay$' | tr '\n' ' ') "
if [ ${#targets[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		t=${f#tests/fuzz/fuzz_}
		t=${t%.c}
		if [[ $have == *" fuzz_$t "* ]]; then
			targets+=("$t")
		else
			echo "fuzz $t: no libFuzzer target in this configuration: skipped"
		fi
	done
fi
for t in "${targets[@]}"; do
	[[ $have == *" fuzz_$t "* ]] || { echo "fuzz.sh: fuzz_$t is not built here" >&2; exit 2; }
done
echo "=== build $dir (${targets[*]/#/fuzz_})"
if ! cmake --build "$dir" -j"$jobs" --target "${targets[@]/#/fuzz_}" >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log"
	echo "fuzz build failed in $dir (full log: $dir/build.log)" >&2
	exit 1
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
echo "=== fuzz: $secs s per target"
for t in "${targets[@]}"; do
	work=$dir/fuzz-work/$t found=$dir/findings/$t log=$dir/fuzz-$t.log
	rm -rf "$work" "$found" # each run starts clean
	mkdir -p "$work" "$found"
	seeds=$(find "tests/fuzz/corpus/$t" -type f 2>/dev/null | wc -l)
	rc=0
	"$dir/tests/fuzz_$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 \
		-print_final_stats=1 -artifact_prefix="$found/" "$work" "tests/fuzz/corpus/$t" \
		>"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -n 1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1, features \2/p' <<<"$last")
	if [ $rc -ne 0 ] || ls "$found" | grep -q .; then
		echo "fuzz $t: FINDING after ${execs:-?} executions (exit $rc)"
		grep -E 'ERROR: |runtime error: |SUMMARY: ' "$log" | head -n 5 || true
		for f in "$found"/*; do
			[ -e "$f" ] && echo "  input: $f  (reproduce: $dir/tests/fuzz_$t $f;" \
				"add it to tests/fuzz/corpus/$t with the fix)"
		done
		echo "  log: $log"
		failed+=("$t")
	else
		echo "fuzz $t: $secs s, ${execs:-?} executions, ${cov:-cov ?}," \
			"$seeds seeds + $(find "$work" -type f | wc -l) new inputs, no finding"
	fi
done
if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzz: findings in ${failed[*]}" >&2
	exit 1
fi
echo "=== fuzz: no finding"
