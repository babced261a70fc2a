#!/usr/bin/env bash
# Runs the seeded fault simulations for SECONDS of wall-clock time each, on a release build of the
# tests, from a fresh seed range (FIRST_SEED, default: the current Unix time), and prints their
# tallies: first the storage fault simulation (LogWriter, readers, verifier, compaction), then the
# projection fault simulation (Ledger + CatalogProjector, crashes of both). A failing seed is printed
# with the command that reruns it alone. Exits non-zero when a simulation fails.
#
# The release build has its own scratch path (.build/long-run), so it neither replaces nor waits
# for the debug build; its first build compiles every dependency in release (long on 2 cores).
#
# LONG_RUN_CONFIGURATION=debug uses the debug build `make test` already made (.build), for a long run
# without the hour-long first release build; seeds run several times slower.
#
# `oracle` runs the time-travel property test against the simulator (ReplayOracleTests) for
# ORACLE_SEEDS seeds (default 2000) from FIRST_SEED instead of for SECONDS: each seed is a random
# catalog history ingested through syncs, checked at ten random times against Square's
# catalog_version answer.
#
# Usage: Tools/reliability/long-run.sh SECONDS [FIRST_SEED] [storage|projection|both|oracle|all]
set -uo pipefail

seconds="${1:?usage: long-run.sh SECONDS [FIRST_SEED] [storage|projection|both|oracle|all]}"
first_seed="${2:-$(date +%s)}"
suites="${3:-both}"
configuration="${LONG_RUN_CONFIGURATION:-release}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

if [ "$configuration" = "debug" ]; then
    build_flags=()
    test_flags=()
    swift build --build-tests 2>&1 | grep -E "error|Build" || true
else
    scratch="$root/.build/long-run"
    build_flags=(-c release --scratch-path "$scratch")
    test_flags=(-c release --scratch-path "$scratch")
    # `swift build` compiles tests without testability in release; several test targets use
    # `@testable import`, so it is asked for (`swift test` does the same by default).
    swift build "${build_flags[@]}" --build-tests -Xswiftc -enable-testing 2>&1 | grep -E "error|Build" || true
fi
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    echo "$configuration build failed" >&2
    exit 1
fi

status=0
run() {
    local name="$1" test="$2"
    RELIABILITY_LONG_RUN_SECONDS="$seconds" RELIABILITY_FIRST_SEED="$first_seed" \
        swift test ${test_flags[@]+"${test_flags[@]}"} --skip-build --filter "ReliabilityTests.$test/longRun" 2>&1 \
        | grep -E "fault simulation|FAILED|Test run|passed|failed|error"
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then status=1; fi
    echo "rerun one seed: RELIABILITY_SEED=<seed> swift test --filter ReliabilityTests.$test/ciSizedRun ($name)"
}

oracle() {
    local seeds="${ORACLE_SEEDS:-2000}"
    echo "time-travel oracle: $seeds seeds from $first_seed"
    CATLEDGER_ORACLE_SEEDS="$seeds" CATLEDGER_ORACLE_FIRST_SEED="$first_seed" \
        swift test ${test_flags[@]+"${test_flags[@]}"} --skip-build --filter "SquareIntegrationTests.ReplayOracleTests" 2>&1 \
        | grep -E "seed|Test run|passed|failed|error"
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then status=1; fi
    echo "rerun: CATLEDGER_ORACLE_SEEDS=1 CATLEDGER_ORACLE_FIRST_SEED=<seed> swift test --filter ReplayOracleTests"
}

case "$suites" in
    oracle) oracle ;;
    all)
        run storage StorageFaultSimulationTests
        run projection ProjectionFaultSimulationTests
        oracle
        ;;
    storage) run storage StorageFaultSimulationTests ;;
    projection) run projection ProjectionFaultSimulationTests ;;
    both)
        run storage StorageFaultSimulationTests
        run projection ProjectionFaultSimulationTests
        ;;
    *) echo "unknown suite selection: $suites (storage, projection, both, oracle or all)" >&2; exit 2 ;;
esac
exit "$status"
