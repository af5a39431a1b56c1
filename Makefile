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
	ffmpeg systemd alsa-utils python3 curl faketime
# The benchmarks' peers (MPD, aria2c) and nginx, the real server of `cassette-bench download`.
# Kept out of `deps`: their package scripts may start a system mpd or nginx.
BENCH_PACKAGES := mpd aria2 nginx-light

.PHONY: all deps bench-deps install-packages build build-tests test demo bench install clean

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
BENCH ?= status playlog download playback gapless
bench: bench-deps
	$(SWIFT) build -c release
	@for b in $(BENCH); do echo "== cassette-bench $$b"; .build/release/cassette-bench $$b --bin-dir .build/release || exit 1; done

# Release binaries, units, sysusers/tmpfiles entries and an example config, under DESTDIR.
# The daemons go to $(PREFIX)/libexec/cassette, which the units' ExecStart= is rewritten to.
# Afterwards (as root, on the device): systemd-sysusers; systemd-tmpfiles --create;
# systemctl enable --now cassette-downloader.socket cassette-player.socket cassette-reporter.socket
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
install: deps
	$(SWIFT) build -c release --product downloader
	$(SWIFT) build -c release --product player
	$(SWIFT) build -c release --product reporter
	$(SWIFT) build -c release --product cassettectl
	install -d $(DESTDIR)$(PREFIX)/libexec/cassette $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d $(DESTDIR)$(PREFIX)/lib/tmpfiles.d $(DESTDIR)$(PREFIX)/share/doc/cassette
	install -d -m 0750 $(DESTDIR)$(SYSCONFDIR)/cassette
	install -m 0755 .build/release/downloader .build/release/player .build/release/reporter $(DESTDIR)$(PREFIX)/libexec/cassette/
	install -m 0755 .build/release/cassettectl $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 0644 docs/cassettectl.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	.build/release/cassettectl --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/cassettectl
	.build/release/cassettectl --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_cassettectl
	for u in deploy/systemd/*.service deploy/systemd/*.socket; do \
		sed -e 's#/usr/libexec/cassette/#$(PREFIX)/libexec/cassette/#' -e 's#/etc/cassette/#$(SYSCONFDIR)/cassette/#' $$u \
			> $(DESTDIR)$(UNITDIR)/$$(basename $$u) && chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u); done
	install -m 0644 deploy/systemd/cassette.sysusers.conf $(DESTDIR)$(PREFIX)/lib/sysusers.d/cassette.conf
	install -m 0644 deploy/systemd/cassette.tmpfiles.conf $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/cassette.conf
	install -m 0640 deploy/cassette.example.json $(DESTDIR)$(SYSCONFDIR)/cassette/cassette.example.json
	[ -e $(DESTDIR)$(SYSCONFDIR)/cassette/cassette.json ] || \
		install -m 0640 deploy/cassette.example.json $(DESTDIR)$(SYSCONFDIR)/cassette/cassette.json
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/cassette/

clean:
	rm -rf .build
