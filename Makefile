# Cassette — build, test, demo and benchmark entry points.
# `make demo` and `make test` work on a fresh Debian 12 machine with Swift installed:
# both install the Debian packages they need first (`make deps`, a no-op when present).

SWIFT        ?= swift
PREFIX       ?= /usr/local
DESTDIR      ?=
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and test tools and the -dev packages behind the system-library targets. nginx-light is
# the tests' HTTPS edge (TLS, HTTP/2) in front of the reference origin; its package script may
# start a system nginx on port 80, which no test uses.
DEBIAN_PACKAGES := pkg-config libcurl4-openssl-dev libsqlite3-dev libsystemd-dev libasound2-dev \
	libavformat-dev libavcodec-dev libavutil-dev libswresample-dev \
	ffmpeg systemd alsa-utils python3 python3-prometheus-client curl faketime openssl patchelf nginx-light \
	dbus-daemon playerctl
# The benchmarks' peers (MPD, aria2c); nginx, the real server of `cassette-bench download`, comes
# with `deps`. Kept out of `deps`: the mpd package's scripts may start a system mpd.
BENCH_PACKAGES := mpd aria2

.PHONY: all deps bench-deps install-packages build build-tests test stress format lint demo bench release install deb deb-test vm-test clean

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
test: lint build-tests
	$(SWIFT) test --skip-build

# The stress tests alone, with the whole test process (and so every service it starts) pinned to
# one core, as on a small device. Each prints its figures on lines starting with `STRESS`.
STRESS_TESTS := StressTests|StalledTransferTests
stress: build-tests
	taskset -c 0 $(SWIFT) test --skip-build --filter '$(STRESS_TESTS)'

# The code's layout is swift-format's (part of the toolchain), configured in .swift-format:
# `make format` rewrites the sources, and `make test` starts by refusing unformatted code.
FORMATTED := Package.swift Services Shared Tests
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMATTED)

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMATTED)

# Starts the reference origin and the three services in a temporary folder and shows them working.
demo: build
	bash deploy/demo.sh .build/debug

# Every benchmark, each beside its peer (MPD, curl, aria2c, ffmpeg, nginx). Not part of `make test`.
# BENCH lists the `cassette-bench` subcommands to run; `make bench BENCH=status` runs one.
# The binaries measured are the ones a device gets (`make release`'s flags); `footprint` also
# sizes the Debian package those binaries make (`make deb`).
BENCH ?= status footprint playlog download playback gapless hls flash
bench: bench-deps
	$(SWIFT) build $(RELEASE_FLAGS)
	@if echo " $(BENCH) " | grep -q " footprint "; then $(MAKE) --no-print-directory deb >/dev/null; fi
	@for b in $(BENCH); do echo "== cassette-bench $$b"; \
		extra=; [ $$b != footprint ] || extra="--package $(DEB_OUT)/cassette_$(VERSION)-$(DEB_REVISION)_$$(dpkg --print-architecture).deb"; \
		$(RELEASE_BIN)/cassette-bench $$b --bin-dir $(RELEASE_BIN) $$extra || exit 1; done

# The version, written once in Shared/Wire/CassetteVersion.swift (what --version prints).
VERSION := $(shell sed -n 's/^ *public static let string = "\(.*\)"$$/\1/p' Shared/Wire/CassetteVersion.swift)

# Release binaries for a device: optimized, symbols bound at start (BIND_NOW). A device has no
# toolchain, so `make install` copies the Swift runtime's shared libraries the binaries load to
# $(RUNTIMEDIR) and points their RUNPATH there: the three daemons share one copy of the runtime in
# memory (deploy/install-swift-runtime.sh says why). SWIFT_RUNTIME=static links the runtime into
# each binary instead (no $(RUNTIMEDIR); about 1.6 times the memory for the three daemons).
# One build of every product; `make install`, `make deb` and `make bench` take them from here.
SWIFT_RUNTIME ?= shared
RELEASE_FLAGS := -c release -Xlinker -z -Xlinker now \
	$(if $(filter static,$(SWIFT_RUNTIME)),--static-swift-stdlib --disable-local-rpath)
RELEASE_BIN   := .build/release
RUNTIMEDIR    ?= $(PREFIX)/lib/cassette
release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

# Release binaries, units, sysusers/tmpfiles entries, the config, man pages, completions and
# docs, under DESTDIR. Neither builds nor installs packages: run `make release` first (as
# yourself; install as root). The daemons go to $(LIBEXECDIR), which the units' ExecStart= is
# rewritten to, as their Documentation= is to $(DOCDIR).
# Afterwards (as root, on the device): systemd-sysusers; systemd-tmpfiles --create;
# systemctl enable --now cassette-downloader.socket cassette-player.socket cassette-reporter.socket
# (tmpfiles gives the config its group, cassette, when `make install` could not).
SYSCONFDIR  ?= /etc
LIBEXECDIR  ?= $(PREFIX)/libexec/cassette
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
DOCDIR      ?= $(PREFIX)/share/doc/cassette
EXAMPLEDIR  ?= $(SYSCONFDIR)/cassette
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
# The system bus's policy files that packages ship (the player's MPRIS name).
DBUSPOLICYDIR ?= $(PREFIX)/share/dbus-1/system.d
DAEMONS     := downloader player reporter
install:
	@for exe in $(DAEMONS) cassettectl; do \
		[ -x $(RELEASE_BIN)/$$exe ] || { echo "make install: $(RELEASE_BIN)/$$exe is missing. Build the release binaries first: make release" >&2; exit 1; }; \
	done
	install -d $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(DBUSPOLICYDIR)
	install -d -m 0750 $(DESTDIR)$(SYSCONFDIR)/cassette
	install -m 0755 $(addprefix $(RELEASE_BIN)/,$(DAEMONS)) $(DESTDIR)$(LIBEXECDIR)/
	install -m 0755 $(RELEASE_BIN)/cassettectl $(DESTDIR)$(PREFIX)/bin/
	bash deploy/install-swift-runtime.sh $(DESTDIR)$(RUNTIMEDIR) $(RUNTIMEDIR) \
		$(addprefix $(DESTDIR)$(LIBEXECDIR)/,$(DAEMONS)) $(DESTDIR)$(PREFIX)/bin/cassettectl
	install -m 0644 docs/cassettectl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/cassette.json.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(addprefix docs/cassette-,$(addsuffix .8,$(DAEMONS))) $(DESTDIR)$(MANDIR)/man8/
	$(RELEASE_BIN)/cassettectl --generate-completion-script bash | sed '1{/^#!/d}' > $(DESTDIR)$(BASHCOMPDIR)/cassettectl
	$(RELEASE_BIN)/cassettectl --generate-completion-script zsh > $(DESTDIR)$(ZSHCOMPDIR)/_cassettectl
	chmod 0644 $(DESTDIR)$(BASHCOMPDIR)/cassettectl $(DESTDIR)$(ZSHCOMPDIR)/_cassettectl
	for u in deploy/systemd/*.service deploy/systemd/*.socket; do \
		sed -e 's#/usr/libexec/cassette/#$(LIBEXECDIR)/#' -e 's#/etc/cassette/#$(SYSCONFDIR)/cassette/#' \
			-e 's#file:///usr/share/doc/cassette/#file://$(DOCDIR)/#' $$u \
			> $(DESTDIR)$(UNITDIR)/$$(basename $$u) && chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u); done
	install -m 0644 deploy/systemd/cassette.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/cassette.conf
	sed -e 's#/etc/cassette#$(SYSCONFDIR)/cassette#g' deploy/systemd/cassette.tmpfiles.conf > $(DESTDIR)$(TMPFILESDIR)/cassette.conf
	chmod 0644 $(DESTDIR)$(TMPFILESDIR)/cassette.conf
	install -m 0644 deploy/cassette.example.json $(DESTDIR)$(EXAMPLEDIR)/cassette.example.json
	install -m 0644 deploy/dbus/org.mpris.MediaPlayer2.cassette.conf $(DESTDIR)$(DBUSPOLICYDIR)/
	@# The config holds the origin credentials: root's and the services' group's (cassette) only.
	[ -e $(DESTDIR)$(SYSCONFDIR)/cassette/cassette.json ] || \
		install -m 0640 deploy/cassette.example.json $(DESTDIR)$(SYSCONFDIR)/cassette/cassette.json
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && getent group cassette >/dev/null; then \
		chgrp cassette $(SYSCONFDIR)/cassette $(SYSCONFDIR)/cassette/cassette.json; \
	else \
		echo "make install: on the device, give the config its group: systemd-tmpfiles --create (after systemd-sysusers), or chgrp cassette $(SYSCONFDIR)/cassette $(SYSCONFDIR)/cassette/cassette.json"; \
	fi
	install -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/

# The Debian package (and its -dbgsym companion) from the release binaries, stripped, in
# $(DEB_OUT); see docs/operations.md. DEB_REVISION is the packaging revision after the version.
DEB_REVISION ?= 1
DEB_OUT      ?= .build/deb
deb: release
	VERSION=$(VERSION) DEB_REVISION=$(DEB_REVISION) DEB_OUT=$(DEB_OUT) RELEASE_BIN=$(RELEASE_BIN) bash deploy/debian/build-deb.sh

# Installs the package into a throw-away root (no toolchain in it), starts each daemon there
# as the cassette user, and checks what a member of cassette-clients may and may not do.
# Needs root (mount namespaces). Not part of `make test`: it needs the release build.
deb-test: deb
	bash deploy/deb-test.sh $(DEB_OUT)/cassette_$(VERSION)-$(DEB_REVISION)_$$(dpkg --print-architecture).deb

# Boots a Debian VM (qemu; KVM when it works here, else TCG) whose PID 1 is systemd, installs
# the package there with apt-get and checks socket activation, the users, a sync and a play
# against the reference origin in the VM, restarts after kill -9 and the watchdog, stop times,
# the journal, network detection, a reboot with offline plays delivered later, and remove and
# purge. Needs root; installs debootstrap and qemu itself. The VM image is built once from the
# machine's apt mirror and cached in /var/cache/cassette-vm (VM_CACHE); see deploy/vm/vm-test.sh.
vm-test: deb
	RELEASE_BIN=$(RELEASE_BIN) bash deploy/vm/vm-test.sh $(DEB_OUT)/cassette_$(VERSION)-$(DEB_REVISION)_$$(dpkg --print-architecture).deb

clean:
	rm -rf .build
