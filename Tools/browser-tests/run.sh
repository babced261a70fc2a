#!/usr/bin/env bash
# Drives the audit pages of a live `catledger serve` in headless Chromium (selenium + chromium-driver):
# imports the bundled cafe sample into a scratch ledger, makes a read token, starts the server on a free
# loopback port, and runs Tools/browser-tests/test_pages.py against it, which signs in through the
# token form, opens every page, uses the filters, follows links, picks a past time, asserts what a
# person sees, and saves a screenshot of each page into .build/screenshots/.
# Part of `make test` (the Makefile's deps-test installs chromium, chromium-driver and selenium).
# Builds nothing itself.
#
# Environment: CATLEDGER (default .build/debug/catledger), CHROMIUM, CHROMEDRIVER (default: found on PATH),
# SCREENSHOTS (default .build/screenshots). Exit status: the test file's (0 when every check passed).

set -euo pipefail
cd "$(dirname "$0")/../.."

CATLEDGER=${CATLEDGER:-.build/debug/catledger}
SCREENSHOTS=${SCREENSHOTS:-.build/screenshots}
MERCHANT=ML8CAFE0SIM01

if [ ! -x "$CATLEDGER" ]; then
    echo "browser-tests: $CATLEDGER is missing (swift build first)" >&2
    exit 2
fi
if ! python3 -c 'import selenium' 2>/dev/null; then
    echo "browser-tests: selenium is missing (make deps-test, or python3 -m pip install selenium)" >&2
    exit 2
fi
export CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
export CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver || true)}
if [ -z "$CHROMIUM" ] || [ -z "$CHROMEDRIVER" ]; then
    echo "browser-tests: chromium and chromedriver are missing (make deps-test, or apt-get install chromium chromium-driver)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/catledger-pages.XXXXXX")
server=""
cleanup() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$CATLEDGER" import data-samples/cafe/cafe-history.jsonl --data-dir "$work/data/$MERCHANT" >/dev/null
token=$("$CATLEDGER" token create --data-dir "$work/data" --merchant "$MERCHANT" --scope read --name "browser test" \
    | grep -o 'catl_[0-9a-f]*_[0-9a-f]*')
metrics_token=$("$CATLEDGER" token create --data-dir "$work/data" --merchant "$MERCHANT" --scope metrics --name "graphs only" \
    | grep -o 'catl_[0-9a-f]*_[0-9a-f]*')

"$CATLEDGER" serve --data-dir "$work/data" --merchant "$MERCHANT" --host 127.0.0.1 --port 0 --offline --json \
    --signature-key browser-test-signature-key --notification-url http://127.0.0.1/webhooks/square \
    >"$work/serve.out" 2>"$work/serve.log" &
server=$!
url=""
for _ in $(seq 1 300); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.out" 2>/dev/null | head -n 1 || true)
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "browser-tests: catledger serve did not start" >&2
    cat "$work/serve.out" "$work/serve.log" >&2
    exit 2
fi
mkdir -p "$SCREENSHOTS"
echo "browser-tests: $url, merchant $MERCHANT, screenshots in $SCREENSHOTS"
status=0
python3 Tools/browser-tests/test_pages.py --url "$url" --merchant "$MERCHANT" --token "$token" \
    --metrics-token "$metrics_token" --screenshots "$SCREENSHOTS" || status=$?
if [ "$status" != 0 ]; then
    echo "browser-tests: failed (exit $status); the server's log:" >&2
    tail -n 40 "$work/serve.log" >&2
fi
exit "$status"
