# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash — per-network-namespace TCP/UDP hash tables for containers.
# lib/*.c is libnshash (the engine); common/*.c an internal archive of what
# the front-ends share; each binary is its front-end's objects (cmd/,
# oci-hooks/, cni/) + the internal archive + libnshash.a.  docs/design.md.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
LIBEXECDIR ?= $(PREFIX)/libexec/nshash
# The CNI plugin follows PREFIX like everything else; runtimes look in
# /usr/lib/cni (Debian), /opt/cni/bin (upstream): set CNIBINDIR to one of those
# (make install CNIBINDIR=/usr/lib/cni) or add $(PREFIX)/lib/cni to their plugin dirs.
CNIBINDIR ?= $(PREFIX)/lib/cni
HOOKSDIR ?= $(PREFIX)/share/containers/oci/hooks.d
NSHASHDATADIR ?= $(PREFIX)/share/nshash
PODMANHOOKSDIR ?= $(NSHASHDATADIR)/podman-hooks.d
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
DESTDIR ?=

CC ?= cc
PKGS := json-c libnl-3.0 libnl-route-3.0 libnl-idiag-3.0 libcap
# Asked when first used (a compile), not when make starts: on a fresh machine
# the -dev packages arrive in the deps step, after make has read this file.
lazy_pkg = $(eval $(1) := $$(shell pkg-config $(2) 2>/dev/null))$($(1))
PKG_CFLAGS = $(call lazy_pkg,PKG_CFLAGS,--cflags $(PKGS))
PKG_LIBS = $(call lazy_pkg,PKG_LIBS,--libs $(PKGS))
PKG_STATIC_LIBS = $(call lazy_pkg,PKG_STATIC_LIBS,--libs --static $(PKGS))
CFLAGS ?= -O2 -g
# What the build needs whatever CFLAGS a packager passes (make CFLAGS=... replaces CFLAGS).
ALL_CFLAGS = -std=gnu11 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -Ilib $(PKG_CFLAGS) $(CFLAGS)
LDLIBS = $(PKG_LIBS)
# libnshash itself needs no JSON: only libnl and libcap.
LIB_LDLIBS = $(call lazy_pkg,LIB_LDLIBS,--libs libnl-3.0 libnl-route-3.0 libnl-idiag-3.0 libcap)
# Binaries carry json-c, libnl and libcap statically (libc stays shared): each
# hook, wrapper and plugin call is a fresh exec, and skipping the dynamic
# loading of three libraries saves ~1.2 ms per exec here (runc runs two hooks
# per container start).  It also frees them from the library path of the
# almost empty environment hooks run in.
BIN_LDLIBS = -Wl,-Bstatic $(PKG_STATIC_LIBS) -Wl,-Bdynamic

SOVERSION := 0
LIB_SRCS := $(sort $(wildcard lib/*.c))
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIB_A := build/libnshash.a
LIB_SO := build/libnshash.so.$(SOVERSION)
# What the front-ends share (policy, logger, JSON, files): an internal
# static archive, neither installed nor exported.
COMMON_OBJS := $(patsubst %.c,%.o,$(sort $(wildcard common/*.c)))
COMMON_A := build/libnshash-common.a
# Each front-end: its objects; the one holding main() is named here.
OCI_OBJS := $(patsubst %.c,%.o,$(filter-out %-main.c,$(sort $(wildcard oci-hooks/*.c))))
CNI_OBJS := $(patsubst %.c,%.o,$(filter-out cni/main.c,$(sort $(wildcard cni/*.c))))
CMD_OBJS := $(patsubst %.c,%.o,$(filter-out cmd/nshash.c,$(sort $(wildcard cmd/*.c))))

BINS := build/nshash build/nshash-hook build/nshash-runtime build/cni/nshash
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRCS))
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(patsubst bench/%.c,build/bench/%,$(BENCH_SRCS))

.PHONY: all deps deps-test deps-deb deps-rpm check unit integration demo bench value install uninstall \
	deb rpm clean format pkgconfig-check builddirs

all: $(LIB_A) $(LIB_SO) $(BINS)

# Installs what is missing with apt (as root; one line per step, apt's output
# in build/deps.log).  `deps` is the build's, `deps-test` adds what the demo
# and the tests run, `deps-deb`/`deps-rpm` what packaging needs.
deps:
	@tools/ensure-deps build
deps-test:
	@tools/ensure-deps test
deps-deb:
	@tools/ensure-deps deb
deps-rpm:
	@tools/ensure-deps rpm

# These goals install their dependencies first and then build in a second
# make, which reads this file (and asks pkg-config) with the packages in place:
# the first `make demo` on a bare machine works.
DEPS_test := check unit integration demo bench value
DEPS_deb := deb
DEPS_rpm := rpm
ifndef NSHASH_DEPS_DONE
$(DEPS_test): deps-test
$(DEPS_deb): deps-deb
$(DEPS_rpm): deps-rpm
$(DEPS_test) $(DEPS_deb) $(DEPS_rpm):
	@$(MAKE) --no-print-directory NSHASH_DEPS_DONE=1 $@
else
unit: all $(UNIT_BINS)
	@NSHASH_TESTS=none tests/run-all $(UNIT_BINS)

integration: all
	@tests/run-all

# The README's test command.  Root, a real kernel (6.2+), real engines.
check: all $(UNIT_BINS)
	@tests/run-all $(UNIT_BINS)

demo: all
	@tools/demo

bench: all $(BENCH_BINS)
	@bench/run
	@bench/stats-scan

# The case for nshash on this machine: build/value/value.{csv,png} (bench/value).
value: all build/bench/value
	@bench/value

# Debian packages (packaging/debian) in build/deb/, checked with lintian.
deb:
	@tools/make-deb

# RPM (packaging/rpm/nshash.spec) in build/rpm/.
rpm:
	@tools/make-rpm
endif

# Without the -dev packages a compile would fail on a missing header: say what to do.
pkgconfig-check:
	@pkg-config --exists $(PKGS) 2>/dev/null || { echo "nshash: missing build dependencies (pkg-config: $(PKGS)):" \
		"run 'make deps' as root (installs them with apt), or 'make demo' / 'make check', which do it first" >&2; exit 1; }

# Always run (phony, order-only: never a reason to rebuild): build/ may exist
# already without its subdirectories (build/deps.log is written first).
builddirs:
	@mkdir -p build build/cni build/tests build/bench

# Dependencies point one way: cmd/, oci-hooks/, cni/ -> common/ -> lib/.
lib/%.o: lib/%.c $(wildcard lib/*.h) | pkgconfig-check
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<
common/%.o: common/%.c $(wildcard common/*.h lib/nshash.h) | pkgconfig-check
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Icommon -c -o $@ $<
oci-hooks/%.o: oci-hooks/%.c $(wildcard oci-hooks/*.h common/*.h lib/nshash.h) | pkgconfig-check
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Icommon -Ioci-hooks -c -o $@ $<
cni/%.o: cni/%.c $(wildcard cni/*.h common/*.h lib/nshash.h) | pkgconfig-check
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Icommon -Icni -c -o $@ $<
cmd/%.o: cmd/%.c $(wildcard cmd/*.h common/*.h lib/nshash.h) | pkgconfig-check
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Icommon -Icmd -c -o $@ $<

$(LIB_A): $(LIB_OBJS) | builddirs
	rm -f $@ && ar rcs $@ $^

$(COMMON_A): $(COMMON_OBJS) | builddirs
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS) lib/libnshash.map | builddirs
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnshash.so.$(SOVERSION) -Wl,--version-script=lib/libnshash.map \
		-o $@ $(LIB_OBJS) $(LIB_LDLIBS)
	ln -sf libnshash.so.$(SOVERSION) build/libnshash.so

# Binaries link their front-end's objects, the internal archive and the
# static library: a hook or plugin must run with an almost empty
# environment and no library path.
FRONT_LIBS := $(COMMON_A) $(LIB_A)
build/nshash: cmd/nshash.o $(CMD_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(BIN_LDLIBS)
build/nshash-hook: oci-hooks/hook-main.o $(OCI_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(BIN_LDLIBS)
build/nshash-runtime: oci-hooks/runtime-main.o $(OCI_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(BIN_LDLIBS)
build/cni/nshash: cni/main.o $(CNI_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(BIN_LDLIBS)

# Unit tests test the front-ends' logic: each links the objects it needs.
UNIT_INC := -Icommon -Ioci-hooks -Icni
build/tests/test_oci: tests/unit/test_oci.c $(OCI_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/test_cni: tests/unit/test_cni.c $(CNI_OBJS) $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/test_policy: tests/unit/test_policy.c $(FRONT_LIBS) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/%: tests/unit/%.c $(LIB_A) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lcmocka

build/bench/%: bench/%.c $(LIB_A) | builddirs
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lm

# Everything `make install` puts down, relative to DESTDIR (uninstall removes it).
INSTALLED = $(BINDIR)/nshash $(BINDIR)/nshash-hook $(BINDIR)/nshash-runtime $(CNIBINDIR)/nshash \
	$(HOOKSDIR)/nshash.json $(PODMANHOOKSDIR)/nshash-precreate.json \
	$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf \
	$(SYSTEMDUNITDIR)/nshash-gc.service $(SYSTEMDUNITDIR)/nshash-gc.timer \
	$(LIBDIR)/libnshash.a $(LIBDIR)/libnshash.so.$(SOVERSION) $(LIBDIR)/libnshash.so $(INCLUDEDIR)/nshash.h \
	$(foreach m,$(wildcard docs/man/*.[1-8]),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
# podman reads these hooks dirs by default; setting hooks_dir replaces them.
PODMAN_DEFAULT_HOOKS := /usr/share/containers/oci/hooks.d /etc/containers/oci/hooks.d
PODMAN_HOOKS_DIRS = $(PODMAN_DEFAULT_HOOKS) $(filter-out $(PODMAN_DEFAULT_HOOKS),$(HOOKSDIR)) $(PODMANHOOKSDIR)
comma := ,
empty :=
space := $(empty) $(empty)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(CNIBINDIR) \
		$(DESTDIR)$(HOOKSDIR) $(DESTDIR)$(PODMANHOOKSDIR) $(DESTDIR)$(NSHASHDATADIR)/containers.conf.d \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/nshash
	install -m 0755 build/nshash build/nshash-hook build/nshash-runtime $(DESTDIR)$(BINDIR)/
	install -m 0755 build/cni/nshash $(DESTDIR)$(CNIBINDIR)/nshash
	# oci-hooks(5) files; precreate in a dir of its own, for podman's hooks_dir only (CRI-O
	# rejects the stage and would then drop every hook in a shared dir)
	sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash.json >$(DESTDIR)$(HOOKSDIR)/nshash.json
	sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash-precreate.json \
		>$(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json
	sed -e 's|^hooks_dir = .*|hooks_dir = [$(subst $(space),$(comma) ,$(patsubst %,"%",$(strip $(PODMAN_HOOKS_DIRS))))]|' \
		-e 's|/usr/share/nshash/|$(NSHASHDATADIR)/|' packaging/containers/50-nshash-hooks.conf \
		>$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf
	for u in nshash-gc.service nshash-gc.timer; do \
		sed 's|/usr/bin/nshash|$(BINDIR)/nshash|' packaging/systemd/$$u >$(DESTDIR)$(SYSTEMDUNITDIR)/$$u; done
	chmod 0644 $(DESTDIR)$(HOOKSDIR)/nshash.json $(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json \
		$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf $(DESTDIR)$(SYSTEMDUNITDIR)/nshash-gc.*
	# the policy: never overwrite one that is there
	[ -e $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json ] || \
		install -m 0644 packaging/etc/nshash.json $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libnshash.a
	install -m 0644 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libnshash.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libnshash.so
	install -m 0644 lib/nshash.h $(DESTDIR)$(INCLUDEDIR)/nshash.h
	for m in $(wildcard docs/man/*.[1-8]); do \
		s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done
	$(if $(DESTDIR),,ldconfig)

# Removes what install put down; the policy only when it is still the shipped one.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	cmp -s packaging/etc/nshash.json $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json && \
		rm -f $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json || true
	-rmdir $(DESTDIR)$(SYSCONFDIR)/nshash $(DESTDIR)$(PODMANHOOKSDIR) $(DESTDIR)$(NSHASHDATADIR)/containers.conf.d \
		$(DESTDIR)$(NSHASHDATADIR) 2>/dev/null
	$(if $(DESTDIR),,ldconfig)

format:
	clang-format -i lib/*.[ch] common/*.[ch] cmd/*.c oci-hooks/*.[ch] cni/*.[ch] $(wildcard tests/unit/*.c bench/*.c)

clean:
	rm -rf build lib/*.o common/*.o cmd/*.o oci-hooks/*.o cni/*.o
