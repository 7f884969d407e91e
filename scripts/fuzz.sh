#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) in build-fuzz with clang-14,
# ASan and UBSan, and runs each for SECONDS (default 15) on a copy of its
# seed corpus, one after the other. One line per harness:
#   fuzz NAME: ok (N execs)
#   fuzz NAME: FAILED (...)   the input and log are kept under build-fuzz/fuzz-findings
# Exits non-zero if any harness found a crash or a broken rule (docs/fuzzing.md).
# FUZZ_ONLY="params ipc" runs only those; FUZZ_CC names the compiler.
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-15}
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
	echo "usage: scripts/fuzz.sh [SECONDS]   (seconds per harness, default 15)" >&2
	exit 2
fi
harnesses=(${FUZZ_ONLY:-params qosrc config ipc reserve-protocol qosctl player-options})

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
	for c in clang-14 /usr/lib/llvm-14/bin/clang clang; do
		if command -v "$c" >/dev/null 2>&1; then
			cc=$(command -v "$c")
			break
		fi
	done
fi
if [ -z "$cc" ]; then
	echo "fuzz: no clang-14 (apt-get install clang-14 libclang-rt-14-dev, or scripts/install-deps.sh)" >&2
	exit 2
fi
# libFuzzer's runtime is a separate package from the compiler on Debian.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
	echo "fuzz: $cc cannot link libFuzzer with ASan and UBSan (install libclang-rt-14-dev):" >&2
	tail -3 "$probe/log" >&2
	exit 2
fi

build=build-fuzz
# A build dir made by another compiler cannot be switched: start it again.
if [ -f "$build/meson-info/intro-compilers.json" ] &&
	! grep -q '"id": "clang"' "$build/meson-info/intro-compilers.json"; then
	rm -rf "$build"
fi
# One configured by hand without the harnesses gets them.
if [ -f "$build/meson-info/intro-buildoptions.json" ] && ! python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(open(sys.argv[1]))}
sys.exit(0 if opts.get("fuzz") is True else 1)' "$build/meson-info/intro-buildoptions.json"; then
	meson configure "$build" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
		>"$probe/setup.log" 2>&1 || { cat "$probe/setup.log" >&2; exit 2; }
fi
if [ ! -f "$build/build.ninja" ]; then
	CC="$cc" meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debugoptimized -Dman-pages=disabled -Dfile-caps=disabled >"$probe/setup.log" 2>&1 ||
		{ cat "$probe/setup.log" >&2; exit 2; }
fi
targets=()
for h in "${harnesses[@]}"; do
	targets+=("tests/fuzz/fuzz-$h")
done
if ! meson compile -C "$build" "${targets[@]}" >"$probe/build.log" 2>&1; then
	tail -30 "$probe/build.log" >&2
	echo "fuzz: the harnesses do not build" >&2
	exit 2
fi

declare -A max_len=([params]=4096 [qosrc]=8192 [config]=16384 [ipc]=8192
	[reserve-protocol]=4096 [qosctl]=4096 [player-options]=2048)
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
findings="$build/fuzz-findings"
failed=0
for h in "${harnesses[@]}"; do
	work="$build/fuzz-run/$h"
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/tmp"
	cp tests/fuzz/corpus/"$h"/* "$work/corpus/" 2>/dev/null
	TMPDIR="$PWD/$work/tmp" "$build/tests/fuzz/fuzz-$h" -max_total_time="$secs" -timeout=20 \
		-rss_limit_mb=2048 -max_len="${max_len[$h]}" -print_final_stats=1 \
		-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
	artifacts=$(find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
		-o -name 'timeout-*' -o -name 'oom-*' \) | sort)
	if [ "$rc" -eq 0 ] && [ -z "$artifacts" ]; then
		echo "fuzz $h: ok (${execs:-0} execs)"
		rm -rf "$work"
		continue
	fi
	failed=1
	mkdir -p "$findings/$h"
	cp "$work/log" "$findings/$h/log"
	for a in $artifacts; do
		cp "$a" "$findings/$h/"
	done
	why=$(grep -m1 -E 'rule broken|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' \
		"$work/log" | cut -c1-200)
	echo "fuzz $h: FAILED (exit $rc: ${why:-see the log}; kept in $findings/$h)"
	rm -rf "$work"
done
exit $failed
