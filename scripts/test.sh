#!/usr/bin/env bash
# Runs the whole qosway test suite:
#   1. format check (clang-format for C, .editorconfig for the rest), and the
#      qos/ layers calling only downward (scripts/check-layers.py)
#   2. warning-free build (werror) and C unit tests (meson test)
#   3. pytest: integration tests against the real compositor, QoS kernel tests
#   4. the C unit tests and the integration tests again against an ASan+UBSan build
#   5. tests/vm: a QEMU guest with a pure cgroup-v2 kernel and a DRM device
# and ends with one line "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
results=$root/build/test-results
rm -rf "$results"
mkdir -p "$results"

setup() { # dir, extra meson args...
	local dir=$1
	shift
	if [ -d "$dir/meson-private" ]; then
		meson setup --reconfigure "$dir" -Dwerror=true "$@" >"$results/setup-$dir.log" 2>&1
	else
		meson setup "$dir" -Dwerror=true "$@" >"$results/setup-$dir.log" 2>&1
	fi || { cat "$results/setup-$dir.log"; return 1; }
	meson compile -C "$dir" >"$results/compile-$dir.log" 2>&1 ||
		{ cat "$results/compile-$dir.log"; return 1; }
}

build_ok=true
python3 scripts/check-format.py >"$results/format.log" 2>&1
echo "format $?" >"$results/format.status"
cat "$results/format.log" | tail -n 20
python3 scripts/check-layers.py >"$results/layers.log" 2>&1
echo "layers $?" >"$results/layers.status"
cat "$results/layers.log" | tail -n 20

setup build || build_ok=false
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug ||
	build_ok=false
echo "build $($build_ok && echo 0 || echo 1)" >"$results/build.status"

if $build_ok; then
	meson test -C build --print-errorlogs --num-processes 2
	cp build/meson-logs/testlog.json "$results/meson.json"
	# The C unit tests again under ASan+UBSan: memory errors such as a
	# thread cancelled at shutdown show only there, not in the plain build.
	LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:${LSAN_OPTIONS:-}" \
		meson test -C build-asan --print-errorlogs --num-processes 2
	cp build-asan/meson-logs/testlog.json "$results/meson-asan.json"

	export PYTHONDONTWRITEBYTECODE=1
	python3 -m pytest tests -p no:cacheprovider -rs -v \
		--junitxml="$results/pytest.xml" -o junit_suite_name=qosway
	QOSWAY_BUILD_DIR=build-asan \
		LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:${LSAN_OPTIONS:-}" \
		python3 -m pytest tests/integration -p no:cacheprovider -rs -v \
		--junitxml="$results/pytest-asan.xml" -o junit_suite_name=qosway-asan

	# What this machine cannot show (pure cgroup v2, a DRM device), in a
	# QEMU guest: one case per check in vm.xml.
	tests/vm/run.sh "$results"
fi

python3 scripts/summarize-tests.py "$results"
