#!/usr/bin/env bash
# Builds the libFuzzer harnesses (one instrumented binary, -sanitize=fuzzer,address) and runs each
# target for SECONDS_PER_TARGET seconds (default 60) on a scratch copy of its committed seed corpus.
# Prints executions per target; crashing inputs are kept under $FUZZ_WORK/artifacts/<target>/.
#
# Usage: Tools/fuzz/run-fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_WORK   scratch directory (default .build/fuzz-work)
#   FUZZ_JOBS   when above 1, forwarded to libFuzzer -jobs/-workers (worker logs go to $FUZZ_WORK)
#   FUZZ_RUNS   when set, each target also stops after this many executions (libFuzzer -runs);
#               SECONDS_PER_TARGET is then the upper bound. The recorded campaign:
#               FUZZ_RUNS=10000000 nice Tools/fuzz/run-fuzzers.sh 86400
# Beside other work: with the kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled),
# nice orders processes only within their session's group, so a campaign started in a session of its
# own (setsid, nohup from another terminal) takes an equal share of the CPU whatever its nice; give
# that group the niceness too: echo 19 > /proc/<pid>/autogroup.
set -euo pipefail

seconds="${1:-60}"
shift || true
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(segment batch event-codec catalog-object webhook time-expression json json-raw request-path)
fi
work="${FUZZ_WORK:-$root/.build/fuzz-work}"
jobs="${FUZZ_JOBS:-1}"
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
runs=()
if [ -n "${FUZZ_RUNS:-}" ]; then runs=(-runs="$FUZZ_RUNS"); fi

echo "building reliability-fuzz with -sanitize=fuzzer,address (release, .build/fuzz)"
swift build -c release --product reliability-fuzz --build-path "$root/.build/fuzz" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING \
    2>&1 | grep -E "error|warning: unre|Build|Compiling reliability" || true
binary="$(swift build -c release --product reliability-fuzz --build-path "$root/.build/fuzz" --show-bin-path)/reliability-fuzz"
[ -x "$binary" ] || { echo "build failed: no $binary" >&2; exit 1; }

status=0
summary=()
for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    artifacts="$work/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    cp -n "$root/Tools/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
    log="$work/$target.log"
    rm -f "$log"
    echo "fuzzing $target for ${seconds}s (log $log)"
    set +e
    (cd "$work" && FUZZ_TARGET="$target" ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1" "$binary" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "${parallel[@]}" "${runs[@]}" "$corpus" >"$log" 2>&1)
    code=$?
    set -e
    executions="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{s+=$2} END {print s+0}')"
    # crash-, timeout-, oom- and leak- files fail the run; a slow-unit- file (an input that took over
    # libFuzzer's -report_slow_units, 10 s, e.g. while the machine was busy) is reported, to be replayed.
    crashes="$(ls "$artifacts" | grep -vc '^slow-unit-' || true)"
    slow="$(ls "$artifacts" | grep -c '^slow-unit-' || true)"
    summary+=("$(printf '%-16s %12s executions  %3s crash/timeout artifacts  %3s slow units  corpus %s' "$target" "$executions" "$crashes" "$slow" "$(ls "$corpus" | wc -l)")")
    if [ "$code" -ne 0 ] || [ "$crashes" -ne 0 ]; then status=1; fi
done
echo
echo "target           executions (${seconds}s each)"
printf '%s\n' "${summary[@]}"
exit "$status"
