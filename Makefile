# Cassette — build, test, demo and benchmark entry points.
# `make demo` and `make test` work on a fresh Debian 12 machine with Swift installed:
# both install the Debian packages they need first (`make deps`, a no-op when present).

SWIFT        ?= swift
PREFIX       ?= /usr/local
DESTDIR      ?=
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and test tools and the -dev packages behind the system-library targets.
DEBIAN_PACKAGES := pkg-config libcurl4-openssl-dev libsqlite3-dev libsystemd-dev libasound2-dev \
	libavformat-dev libavcodec-dev libavutil-dev libswresample-dev \
	ffmpeg systemd alsa-utils python3 curl
# The benchmark's peer. Kept out of `deps`: its package scripts may start a system mpd.
BENCH_PACKAGES := mpd

.PHONY: all deps bench-deps install-packages build build-tests test demo bench clean

all: build

deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES)"

bench-deps: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(BENCH_PACKAGES)"

# Installs what of $(PACKAGES) is missing; does nothing when all are present.
install-packages:
	@missing=""; for p in $(PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi

build: deps
	$(SWIFT) build

build-tests: deps
	$(SWIFT) build --build-tests

# Every test: unit tests, in-process socket tests and the integration tests that start
# the real binaries (self-bound and under systemd-socket-activate) in temporary folders.
test: build-tests
	$(SWIFT) test --skip-build

# Starts the reference origin and the three services in a temporary folder and shows them working.
demo: build
	bash deploy/demo.sh .build/debug

# Every benchmark, each beside its peer (MPD, curl, aria2c). Not part of `make test`.
# BENCH lists the `cassette-bench` subcommands to run; `make bench BENCH=status` runs one.
BENCH ?= status
bench: bench-deps
	$(SWIFT) build -c release
	@for b in $(BENCH); do echo "== cassette-bench $$b"; .build/release/cassette-bench $$b --bin-dir .build/release || exit 1; done

clean:
	rm -rf .build
