#!/usr/bin/env bash
# Builds a Release tree (build-bench) and runs every tests/bench/bench_* executable
# it finds there, one after the other. Benchmarks print ratios against references
# measured in the same run; nothing here is a pass/fail assertion.
#   tools/bench.sh [extra args passed to every bench]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${REEL_BENCH_BUILD:-build-bench}
jobs=$(nproc 2>/dev/null || echo 2)
capture=OFF
if [ "$(uname -s)" = Linux ] && [ "${REEL_CAPTURE:-}" != OFF ]; then
	capture=${REEL_CAPTURE:-ON}
fi

echo "=== configure $dir (Release, REEL_CAPTURE=$capture)"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DREEL_CAPTURE="$capture" -DREEL_TESTS=ON >/dev/null
echo "=== build"
if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log"
	echo "full build failed; building the bench targets only" >&2
	for t in $(sed -n 's/^[[:space:]]*add_executable(\(bench_[A-Za-z0-9_]*\).*/\1/p' tests/bench/CMakeLists.txt); do
		cmake --build "$dir" -j"$jobs" --target "$t" || echo "cannot build $t" >&2
	done
fi

found=0
for b in "$dir"/tests/bench/bench_*; do
	[ -f "$b" ] && [ -x "$b" ] || continue
	found=1
	echo
	echo "=== $(basename "$b")"
	"$b" "$@" || echo "$(basename "$b") exited with $?" >&2
done
if [ "$found" = 0 ]; then
	echo "no bench_* executables under $dir/tests/bench" >&2
	exit 1
fi
