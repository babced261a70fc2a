#!/usr/bin/env bash
# Builds the test targets with the thread sanitizer in a scratch directory of their own and runs the
# concurrency stress test under it. TSan needs every module, dependencies included, compiled with
# -sanitize=thread, so the first build is a full one (25+ minutes on a 2-core machine); later runs
# rebuild only what changed.
#
# Usage: Tools/reliability/tsan-stress.sh [SCALE] [RUNS]
#   SCALE        multiplies the stress workload (default 1, the CI size)
#   RUNS         seeds run one after another (default 3)
#   TSAN_SCRATCH scratch path (default .build/tsan)
#   RELIABILITY_STRESS_SEED  first seed (default: random, printed)
#   RELIABILITY_STRESS_TIMEOUT_SECONDS  stall timeout per run (default 1800 here: TSan is 5-15x slower)
# Exit status: 0 when every run passed and TSan reported nothing.
set -euo pipefail

scale="${1:-1}"
runs="${2:-3}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
scratch="${TSAN_SCRATCH:-$root/.build/tsan}"
log="$scratch/tsan-stress.log"
mkdir -p "$scratch"

echo "building the tests with -sanitize=thread in $scratch"
started=$(date +%s)
swift build --build-tests --sanitize=thread --scratch-path "$scratch" 2>&1 \
    | grep -E "error|warning: unre|Build|Compiling ReliabilityTests" || true
echo "build took $(( $(date +%s) - started )) s"

echo "running the concurrency stress test under TSan (scale $scale, $runs runs; log $log)"
set +e
# halt_on_error=0: report every race, keep running; the log is searched below.
TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 history_size=4 ${TSAN_OPTIONS:-}" \
RELIABILITY_STRESS_SCALE="$scale" RELIABILITY_STRESS_RUNS="$runs" \
RELIABILITY_STRESS_TIMEOUT_SECONDS="${RELIABILITY_STRESS_TIMEOUT_SECONDS:-1800}" \
    swift test --skip-build --sanitize=thread --scratch-path "$scratch" \
    --filter "ReliabilityTests.ConcurrencyStressTests" >"$log" 2>&1
code=$?
set -e
grep -E "concurrency stress|Test run|passed|failed|WATCHDOG" "$log" || true
warnings=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
echo "ThreadSanitizer warnings: $warnings (details in $log)"
if [ "$warnings" -ne 0 ]; then
    grep -A12 "WARNING: ThreadSanitizer" "$log" | head -80
fi
if [ "$code" -ne 0 ] || [ "$warnings" -ne 0 ]; then exit 1; fi
