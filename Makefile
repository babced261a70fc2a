# CatalogLedger: the two set-up commands of the README are `make demo` and `make test`.
# Both install what a fresh Debian machine with only the Swift toolchain lacks.

SHELL := /bin/bash
SWIFT ?= swift
DEMO_DIR ?= demo-ledger

.PHONY: deps deps-test build demo test bench sample clean

# System packages: liblz4 (headers + pkg-config file) and pkg-config itself, installed only when missing.
deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "installing liblz4-dev and pkg-config (apt-get)"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq liblz4-dev pkg-config >/dev/null; \
	fi

# The official Square Python SDK: the conformance test drives the simulator with it. schemathesis: the
# live server against docs/openapi.json (Tools/api-conformance/run-schemathesis.sh). Chromium, its
# WebDriver and selenium: the pages in a real browser (Tools/browser-tests/run.sh). PostgreSQL's server
# binaries: LedgerClusterTests start a private server on a free loopback port (Tests/TestSupport/PostgresServer.swift).
deps-test: deps
	@if ! python3 -c 'import square' 2>/dev/null; then \
		echo "installing the official Square Python SDK (pip install squareup)"; \
		python3 -m pip install -q squareup; \
	fi
	@if ! python3 -c 'import schemathesis.cli' 2>/dev/null; then \
		echo "installing schemathesis (pip install schemathesis): the API conformance run"; \
		python3 -m pip install -q 'schemathesis>=4.1,<5'; \
	fi
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		echo "installing chromium and chromium-driver (apt-get): the browser test of the pages"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing postgresql (apt-get): the cluster tests start a private server (docs/SCALING.md)"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi
	@if ! python3 -c 'import selenium' 2>/dev/null; then \
		echo "installing selenium (pip install selenium): drives Chromium in the browser test"; \
		python3 -m pip install -q 'selenium>=4.20,<5'; \
	fi

build: deps
	$(SWIFT) build

# The demo's ledger is the sample merchant's directory under $(DEMO_DIR), so `catledger serve
# --data-dir $(DEMO_DIR)` serves it; the tour ends with how to open the pages.
demo: deps
	$(SWIFT) build --product catledger
	rm -rf $(DEMO_DIR)
	$(SWIFT) run catledger demo --data-dir $(DEMO_DIR)/ML8CAFE0SIM01

# The build is strict about our own code: every module a target imports must be one it declares in
# Package.swift, and a warning in our targets is an error (SwiftPM compiles remote dependencies with
# -suppress-warnings and leaves -warnings-as-errors off them, so their warnings never fail the build).
STRICT_BUILD_FLAGS := --explicit-target-dependency-import-check error -Xswiftc -warnings-as-errors

# First schemathesis fuzzes a live `catledger serve` against docs/openapi.json (bounded: well under a
# minute), then headless Chromium drives the pages (screenshots in .build/screenshots) and renders the
# price chart to PNG, read back by a script (Tools/browser-tests/check_chart.py), then every
# Swift test runs, in four runs (the last: the PostgreSQL cluster tests, alone): first the suites that wait on child processes and sleep in their own
# threads (the CLI, kill and pipelined-commit tests: a waiting test holds one of the few threads of
# Swift's cooperative pool, two on a 2-core machine), then everything else, whose servers and clients
# need those threads to answer in time, then the server-load suites (below) by themselves. The tests' whole output goes to .build/test-output.log too; when
# a test fails, its issues are printed again at the end, where a CI log that keeps only its tail still
# shows them.
BLOCKING_SUITES := CLITests\.|CatalogLedgerTests\.|LedgerStorageTests\.
# The cluster tests run last and alone: their PostgreSQL server and lease expiries need the CPU that the
# parallel runs above take (under them, a 10 s operation timeout and a few-second lease were seen to lapse).
CLUSTER_SUITES := LedgerClusterTests\.
# The server abuse and hostile-input suites run after everything else and before the cluster tests,
# by themselves: thousands of loopback requests with 30 s answer timeouts and the server's 16 s request
# deadline. Beside the long synchronous tests of the parallel run (folds, rebuilds, fault simulations
# holding both of the cooperative pool's threads) their servers went unscheduled long enough for a
# flood to take 185-280 s instead of 5 s, and requests timed out or were cut by the deadline. The
# chaos test (a failing Square for half a minute under load) bounds latencies in wall-clock time.
SERVER_LOAD_SUITES := ReliabilityTests\.HostileInputTests|ReliabilityTests\.ServerAbuseTests|ReliabilityTests\.ServerMemoryTests|ReliabilityTests\.ServerChaosTests
test: deps-test
	$(SWIFT) build --build-tests $(STRICT_BUILD_FLAGS)
	Tools/api-conformance/run-schemathesis.sh
	Tools/browser-tests/run.sh
	Tools/browser-tests/check_chart.py
	@set -o pipefail; { status=0; \
		$(SWIFT) test --skip-build --parallel --filter '$(BLOCKING_SUITES)' || status=$$?; \
		$(SWIFT) test --skip-build --parallel --skip '$(BLOCKING_SUITES)|$(CLUSTER_SUITES)|$(SERVER_LOAD_SUITES)' || status=$$?; \
		$(SWIFT) test --skip-build --parallel --filter '$(SERVER_LOAD_SUITES)' || status=$$?; \
		$(SWIFT) test --skip-build --filter '$(CLUSTER_SUITES)' || status=$$?; \
		exit $$status; } 2>&1 | tee .build/test-output.log || { \
		status=$$?; \
		echo; echo "== failed tests and their issues (whole output: .build/test-output.log) =="; \
		grep -E 'recorded an issue|error: |Fatal error|Caught signal|unexpected signal' .build/test-output.log | cut -c1-700 | tail -n 12; \
		exit $$status; }

bench: deps
	$(SWIFT) run -c release ledger-bench storage --quick
	$(SWIFT) run -c release ledger-bench search --quick

# Regenerates the bundled sample history byte for byte (see data-samples/README.md).
sample: deps
	$(SWIFT) run sample-gen --seed 20261001 --days 45 --out data-samples/cafe

clean:
	rm -rf .build $(DEMO_DIR)
