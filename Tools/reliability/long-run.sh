#!/usr/bin/env bash
# Runs the storage fault simulation for SECONDS of wall-clock time on a release build, from a fresh
# seed range (FIRST_SEED, default: the current Unix time), and prints the tally. A failing seed is
# printed with the command that reruns it alone.
#
# Usage: Tools/reliability/long-run.sh SECONDS [FIRST_SEED]
set -euo pipefail

seconds="${1:?usage: long-run.sh SECONDS [FIRST_SEED]}"
first_seed="${2:-$(date +%s)}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

swift build -c release --build-tests 2>&1 | grep -E "error|Build" || true
RELIABILITY_LONG_RUN_SECONDS="$seconds" RELIABILITY_FIRST_SEED="$first_seed" \
    swift test -c release --skip-build --filter "ReliabilityTests.StorageFaultSimulationTests/longRun" 2>&1 \
    | grep -E "storage fault simulation|FAILED|Test run|passed|failed|error" || true
echo "rerun one seed: RELIABILITY_SEED=<seed> swift test --filter ReliabilityTests.StorageFaultSimulationTests/ciSizedRun"
