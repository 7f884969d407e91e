#!/bin/sh
# Build qosway with AddressSanitizer + UndefinedBehaviorSanitizer in a
# separate build directory and run the integration suite against it.
#
#   tests/integration/run-sanitized.sh [BUILD_DIR] [pytest args...]
#
# BUILD_DIR defaults to build-asan (relative to the repository root).
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build-asan}
[ $# -gt 0 ] && shift
if [ ! -d "$dir" ]; then
    meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debug -Dc_args=-fno-sanitize-recover=all
fi
meson compile -C "$dir"
# Same defaults as harness.sanitizer_env(); override by exporting your own.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
QOSWAY_BUILD_DIR="$dir" exec python3 -m pytest tests/integration "$@"
