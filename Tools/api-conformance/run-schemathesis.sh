#!/usr/bin/env bash
# Runs schemathesis against a live `catledger serve` holding the bundled cafe sample and connected to a
# `catledger simulator` (a fake Square on loopback, so edits, syncs and replay checks reach "Square"),
# checking every answer against docs/openapi.json: no 500, every status, content type, header and body
# as documented, invalid input refused.
# Part of `make test` (the Makefile's deps-test installs schemathesis with pip when missing).
#
#   Tools/api-conformance/run-schemathesis.sh [--max-examples N] [--seed S] [extra schemathesis options]
#
# Environment: CATLEDGER (default .build/debug/catledger), SCHEMATHESIS (default: the `schemathesis`
# command, else the module of python3, as pip may put the command off PATH).
# Exit status: schemathesis's (0 when every check passed).

set -euo pipefail
cd "$(dirname "$0")/../.."

CATLEDGER=${CATLEDGER:-.build/debug/catledger}
SCHEMATHESIS=${SCHEMATHESIS:-}
MERCHANT=ML8CAFE0SIM01
MAX_EXAMPLES=25
SEED=20261124
while [ $# -gt 0 ]; do
    case "$1" in
        --max-examples) MAX_EXAMPLES=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        *) break ;;
    esac
done

if [ ! -x "$CATLEDGER" ]; then
    echo "run-schemathesis: $CATLEDGER is missing (swift build first)" >&2
    exit 2
fi
if [ -n "$SCHEMATHESIS" ]; then
    schemathesis() { "$SCHEMATHESIS" "$@"; }
elif ! command -v schemathesis >/dev/null; then
    if ! python3 -c 'import schemathesis.cli' 2>/dev/null; then
        echo "run-schemathesis: schemathesis is missing (make deps-test, or python3 -m pip install schemathesis)" >&2
        exit 2
    fi
    schemathesis() { python3 -m schemathesis.cli "$@"; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/catledger-api.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Starts `catledger NAME ARGS...` in the background (its output in $work/NAME.out and .log) and prints
# the first http://127.0.0.1:PORT it prints, once it listens; exits the script when it does not start.
start() {
    local name=$1 found=""
    shift
    "$CATLEDGER" "$name" "$@" >"$work/$name.out" 2>"$work/$name.log" &
    pids+=($!)
    for _ in $(seq 1 300); do
        found=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$name.out" 2>/dev/null | head -n 1 || true)
        [ -n "$found" ] && break
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$found" ]; then
        echo "run-schemathesis: catledger $name did not start" >&2
        cat "$work/$name.log" >&2
        exit 2
    fi
    url=$found
}

# Square: the simulator's cafe catalog (seed 1: the ids in schemathesis.toml).
start simulator --host 127.0.0.1 --port 0 --seed 1 --merchant "$MERCHANT"
square_url=$url

# A private data dir: the cafe's 45 days of recorded traffic, one admin token.
"$CATLEDGER" import data-samples/cafe/cafe-history.jsonl --data-dir "$work/data/$MERCHANT" >/dev/null
token=$("$CATLEDGER" token create --data-dir "$work/data" --scope admin --name schemathesis | grep -o 'catl_[0-9a-f]*_[0-9a-f]*')

# hooks.py signs webhook deliveries with these.
export SQUARE_ACCESS_TOKEN=simulator CONFORMANCE_SIGNATURE_KEY=conformance-signature-key
export CONFORMANCE_NOTIFICATION_URL=http://127.0.0.1/webhooks/square
# An OAuth app, so /admin/oauth/authorize answers its URL and /oauth/callback checks what it is given.
(umask 077 && echo "sq0csp-schemathesis-secret" >"$work/app.secret")
# Every operation is also tried without a token (ST203), more refusals than one address may make by default.
start serve --data-dir "$work/data" --merchant "$MERCHANT" --host 127.0.0.1 --port 0 --json --auth-failures-max 10000 \
    --square-base-url "$square_url" --square-application-id sq0idp-schemathesis \
    --square-application-secret-file "$work/app.secret" --oauth-redirect-url http://127.0.0.1/oauth/callback \
    --signature-key "$CONFORMANCE_SIGNATURE_KEY" --notification-url "$CONFORMANCE_NOTIFICATION_URL"
echo "run-schemathesis: $url (Square: $square_url), at most $MAX_EXAMPLES examples per operation, seed $SEED"

# Two runs: every operation but the admin API's, then the admin API's (tag admin) alone. The admin
# operations register, pause and remove merchants (the sample's too, with made-up Square tokens), so
# they come last, when nothing else needs the sample merchant served as it was.
status=0
for tags in "--exclude-tag admin" "--include-tag admin"; do
    # shellcheck disable=SC2086
    schemathesis --no-color --config-file Tools/api-conformance/schemathesis.toml run docs/openapi.json --url "$url" \
        --header "Authorization: Bearer $token" $tags \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,missing_required_header,unsupported_method,allow_header_conformance \
        --max-examples "$MAX_EXAMPLES" --seed "$SEED" --phases examples,coverage,fuzzing \
        --workers 1 --generation-database none "$@" || status=$?
    [ "$status" = 0 ] || break
done
if [ "$status" != 0 ]; then
    echo "run-schemathesis: failed (exit $status); the server's log:" >&2
    tail -n 40 "$work/serve.log" >&2
fi
exit "$status"
