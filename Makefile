# CatalogLedger: the two set-up commands of the README are `make demo` and `make test`.
# Both install what a fresh Debian machine with only the Swift toolchain lacks.

SWIFT ?= swift
DEMO_DIR ?= demo-ledger

.PHONY: deps build demo test bench clean

# System packages: liblz4 (headers + pkg-config file) and pkg-config itself; the official
# Square Python SDK for the conformance test. Installed only when missing.
deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "installing liblz4-dev and pkg-config (apt-get)"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq liblz4-dev pkg-config >/dev/null; \
	fi
	@if ! python3 -c 'import square' 2>/dev/null; then \
		echo "installing the official Square Python SDK (pip install squareup)"; \
		python3 -m pip install -q squareup; \
	fi

build: deps
	$(SWIFT) build

demo: build
	rm -rf $(DEMO_DIR)
	$(SWIFT) run catledger demo --data-dir $(DEMO_DIR)

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel

bench: deps
	$(SWIFT) run -c release ledger-bench storage --quick

clean:
	rm -rf .build $(DEMO_DIR)
