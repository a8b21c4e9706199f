# SPDX-License-Identifier: Apache-2.0
# Convenience targets around Meson. The two a newcomer needs:
#   make up     install what is missing, build, start a local cluster
#   make test   the whole test suite, normally (on SQLite, and the system
#               tests that exercise the store again on PostgreSQL) and under
#               ASan+UBSan; system test files run 4 at a time
#               (SHOAL_TEST_JOBS=N to change, SHOAL_TEST_FULL=1 for every
#               file on PostgreSQL, as CI does; see scripts/test.sh)
# make fuzz runs every libFuzzer target for a minute (scripts/fuzz.sh).
# make bench runs every benchmark and prints its figures (bench/run-all.sh):
# bench-sched and bench-sim, then submit.sh and drain.sh, which start their
# own throw-away local cluster (SHOAL_BENCH_NO_CLUSTER=1 skips those two).
# Not part of make test: nothing in it passes or fails on time.
# make format-check: clang-format on every C file, then
# scripts/check-imports.py (shoald's HTTP layer a leaf, no import loop).
# make install PREFIX=/usr/local DESTDIR=: the programs, libsimgpu, systemd
# units, man pages, bash completion and example configuration in their FHS
# places under DESTDIR/PREFIX (meson install; configuration in /etc when
# PREFIX is /usr, else PREFIX/etc).
# make deb: the Debian packages shoal-controller, shoal-agent and
# shoal-client (debian/, dh with meson) in $(DEB_BUILD), from a copy of
# the tracked and new files, checked with lintian (errors fail it).
# make test-packages builds them and runs tests/system/075-packages.bats,
# which installs them on this machine (root; CI runs it as its own step).
BUILD ?= build
DEB_BUILD ?= build-deb
INSTALL_BUILD ?= build-install
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
UP_ARGS ?=
PREFIX ?= /usr/local
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
DESTDIR ?=

.PHONY: all deps build install deb test-packages up test test-unit test-system test-system-pg test-sanitize fuzz bench format-check clean

all: build

deps:
	./scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# A build of its own: the programs read their configuration from
# SYSCONFDIR, so the development build (BUILD) keeps its prefix.
install: deps
	if [ -f $(INSTALL_BUILD)/build.ninja ]; then \
		meson configure $(INSTALL_BUILD) -Dprefix=$(PREFIX) -Dsysconfdir=$(SYSCONFDIR); \
	else \
		meson setup $(INSTALL_BUILD) -Dprefix=$(PREFIX) -Dsysconfdir=$(SYSCONFDIR) \
			-Dtests=disabled; \
	fi
	ninja -C $(INSTALL_BUILD)
	meson install -C $(INSTALL_BUILD) --no-rebuild $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))

deb: deps
	rm -rf $(DEB_BUILD)
	mkdir -p $(DEB_BUILD)/shoal
	git ls-files -z --cached --others --exclude-standard | \
		xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
		tar --null -T - -cf - | tar -xf - -C $(DEB_BUILD)/shoal
	cd $(DEB_BUILD)/shoal && DEB_BUILD_OPTIONS="parallel=$$(nproc) nocheck" \
		dpkg-buildpackage -us -uc -b
	lintian --fail-on error --suppress-tags-from-file debian/lintian-suppress $(DEB_BUILD)/*.changes

# The test builds the packages itself (make deb, in its own folder).
test-packages: build
	SHOAL_TEST_PACKAGES=1 SHOAL_BUILD=$(BUILD) \
		bats tests/system/075-packages.bats

up: build
	./$(BUILD)/src/cmd/shoal up $(UP_ARGS)

test: deps
	./scripts/test.sh

test-unit: build
	meson test -C $(BUILD) --suite unit --print-errorlogs

test-system: build
	SHOAL_BUILD=$(BUILD) bats tests/system

# The system tests with the controller's store on PostgreSQL (a throw-away
# server for the run unless SHOAL_TEST_PG_URL names one).
test-system-pg: build
	SHOAL_TEST_STORE=postgresql SHOAL_BUILD=$(BUILD) bats tests/system

test-sanitize: deps
	./scripts/test.sh --sanitize-only

fuzz: deps
	FUZZ_BUILD=$(FUZZ_BUILD) ./scripts/fuzz.sh 60

bench: build
	./bench/run-all.sh $(BUILD)

format-check:
	./scripts/format-check.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(DEB_BUILD) $(INSTALL_BUILD)
