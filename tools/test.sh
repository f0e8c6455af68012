#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the
# whole test suite twice: a plain RelWithDebInfo build and an ASan+UBSan build;
# then each fuzz target for a bounded time (tools/fuzz.sh).
# Integration tests need root (BPF); run as root or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh test

jobs=$(nproc 2>/dev/null || echo 2)
run_suite() { # build-dir cmake-args...
	local dir=$1
	shift
	echo "=== configure $dir: $*"
	cmake -S . -B "$dir" "$@" >/dev/null
	echo "=== build $dir"
	if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
		tail -n 60 "$dir/build.log"
		echo "build failed in $dir (full log: $dir/build.log)" >&2
		exit 1
	fi
	echo "=== test $dir"
	ctest --test-dir "$dir" --output-on-failure --timeout 900 -j"$jobs"
}

# Release (-O3) is what users and packagers build: it must compile with -Werror
# too (gcc sees more through inlining there); built, not run twice
echo "=== configure build-release: -DCMAKE_BUILD_TYPE=Release"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "=== build build-release"
if ! cmake --build build-release -j"$jobs" >build-release/build.log 2>&1; then
	tail -n 60 build-release/build.log
	echo "Release build failed (full log: build-release/build.log)" >&2
	exit 1
fi
run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DREEL_SANITIZE=ON
# bounded fuzzing on top of the corpora the suites replayed: a minute per
# target in CI (.ci/run), REEL_FUZZ_SECONDS (default 10) otherwise
tools/fuzz.sh -t "${REEL_FUZZ_SECONDS:-10}"
echo "=== all suites passed"
