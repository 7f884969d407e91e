#!/usr/bin/env bash
# Runs the whole qosway test suite, in stages:
#   format      clang-format for C, .editorconfig for the rest
#   layers      the qos/ layers calling only downward (scripts/check-layers.py)
#   build       warning-free builds (werror): build/ and the ASan+UBSan build-asan/
#   unit        C unit tests (tests/unit, meson test) of the plain build
#   unit-asan   the same under ASan+UBSan: memory errors such as a thread
#               cancelled at shutdown show only there
#   kernel      QoS kernel tests (tests/kernel, real cgroups and scheduling
#               classes) and the install tests (tests/install), one at a time
#   integration the integration tests against the ASan+UBSan compositor, two
#               at a time (pytest-xdist); then those marked serial, alone
#   vm          a QEMU guest with a pure cgroup-v2 kernel and a DRM device,
#               beside the integration tests
#   fuzz        each libFuzzer harness (tests/fuzz) for a few seconds
# Each stage's exit status and wall time go to build/test-results/stages.tsv;
# the run ends with a table of the stages and one line
# "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
results=$root/build/test-results
rm -rf "$results"
mkdir -p "$results"
: >"$results/stages.tsv"
started=$(date +%s)
export PYTHONDONTWRITEBYTECODE=1
lsan="suppressions=$root/tests/lsan.supp:${LSAN_OPTIONS:-}"
# Two at a time: each integration test runs a compositor and its clients,
# and the machine this must fit on has two CPUs.
workers=${QOSWAY_TEST_WORKERS:-2}

stage() { # name command...: runs the command, records its status and time
	local name=$1 t0 rc
	shift
	echo "== $name"
	t0=$(date +%s)
	"$@"
	rc=$?
	printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$results/stages.tsv"
	return $rc
}

# A stage whose tests are counted from its report (JUnit XML or meson's
# JSON) fails as a whole only when it wrote no report.
reported() { # report file
	[ -s "$1" ] || echo "$(basename "$1" | sed 's/\..*//') 1" >"$results/$(basename "$1").status"
}

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

checks() {
	python3 scripts/check-format.py >"$results/format.log" 2>&1
	echo "format $?" >"$results/format.status"
	tail -n 20 "$results/format.log"
	python3 scripts/check-layers.py >"$results/layers.log" 2>&1
	echo "layers $?" >"$results/layers.status"
	tail -n 20 "$results/layers.log"
}

builds() {
	local ok=0
	setup build || ok=1
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug || ok=1
	echo "build $ok" >"$results/build.status"
	return $ok
}

unit() { # build dir, report name
	LSAN_OPTIONS="$lsan" meson test -C "$1" --print-errorlogs --num-processes 2
	local rc=$?
	cp "$1/meson-logs/testlog.json" "$results/$2.json" 2>/dev/null
	reported "$results/$2.json"
	return $rc
}

pytest_run() { # report name, pytest arguments...
	local report=$results/$1.xml rc
	shift
	python3 -m pytest -p no:cacheprovider -rs -v --junitxml="$report" \
		-o junit_suite_name="$(basename "$report" .xml)" "$@"
	rc=$?
	reported "$report"
	return $rc
}

kernel() {
	pytest_run pytest-kernel tests/kernel tests/install
}

integration() {
	local rc=0
	QOSWAY_BUILD_DIR=build-asan LSAN_OPTIONS="$lsan" \
		pytest_run pytest-integration -n "$workers" -m "not serial" tests/integration || rc=1
	QOSWAY_BUILD_DIR=build-asan LSAN_OPTIONS="$lsan" \
		pytest_run pytest-integration-serial -n 1 -m serial tests/integration || rc=1
	return $rc
}

fuzz() {
	scripts/fuzz.sh "${QOSWAY_FUZZ_SECONDS:-10}" 2>&1 | tee "$results/fuzz.log"
	local rc=${PIPESTATUS[0]}
	echo "fuzz $rc" >"$results/fuzz.status"
	return $rc
}

stage checks checks
if stage build builds; then
	stage unit unit build meson
	stage unit-asan unit build-asan meson-asan
	stage kernel kernel
	# What this machine cannot show (pure cgroup v2, a DRM device), in a
	# QEMU guest: one case per check in vm.xml. Its checks are functional
	# and its CPUs emulated, so it runs beside the integration tests, which
	# have no timing thresholds either; the kernel tests run alone.
	stage vm tests/vm/run.sh "$results" >"$results/vm-stage.log" 2>&1 &
	vm=$!
	stage integration integration
	wait $vm
	cat "$results/vm-stage.log"
	# The libFuzzer harnesses, briefly: a crash or a broken rule on the
	# seed corpus or near it fails the run (scripts/fuzz.sh runs longer).
	stage fuzz fuzz
fi

echo $(($(date +%s) - started)) >"$results/wall-seconds"
python3 scripts/summarize-tests.py "$results"
