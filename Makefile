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
CNIBINDIR ?= /usr/lib/cni
HOOKSDIR ?= $(PREFIX)/share/containers/oci/hooks.d
PODMANHOOKSDIR ?= $(PREFIX)/share/nshash/podman-hooks.d
DESTDIR ?=

CC ?= cc
PKGS := json-c libnl-3.0 libnl-route-3.0 libcap
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -Ilib $(PKG_CFLAGS)
LDLIBS := $(PKG_LIBS)
# libnshash itself needs no JSON: only libnl and libcap.
LIB_LDLIBS := $(shell pkg-config --libs libnl-3.0 libnl-route-3.0 libcap 2>/dev/null)
# The hook, the wrapper and the plugin are linked statically, libc included:
# each call is a fresh exec on a container's start path, and an exec without
# the dynamic loader costs ~0.85 ms here against ~1.1 ms with a shared libc
# and ~2.3 ms with json-c, libnl and libcap shared too.  It also frees them from the library path of
# the almost empty environment hooks run in.  (The linker warns that libnl's
# address-printing helpers would need glibc's NSS at run time: nshash never
# calls them.)
BIN_LDLIBS := -static $(shell pkg-config --libs --static $(PKGS) 2>/dev/null)
# The CLI is not on a container's start path: libc stays shared there, which
# keeps it checkable with valgrind (test 09; a static glibc start-up trips it).
CLI_LDLIBS := -Wl,-Bstatic $(shell pkg-config --libs --static $(PKGS) 2>/dev/null) -Wl,-Bdynamic

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

.PHONY: all deps deps-test check unit integration demo bench install clean format

all: $(LIB_A) $(LIB_SO) $(BINS)

# Installs the build and test dependencies with apt when any is missing.
deps:
	@tools/ensure-deps build
deps-test:
	@tools/ensure-deps test

build:
	@mkdir -p build build/cni build/tests build/bench

# Dependencies point one way: cmd/, oci-hooks/, cni/ -> common/ -> lib/.
lib/%.o: lib/%.c $(wildcard lib/*.h)
	$(CC) $(CFLAGS) -c -o $@ $<
common/%.o: common/%.c $(wildcard common/*.h lib/nshash.h)
	$(CC) $(CFLAGS) -Icommon -c -o $@ $<
oci-hooks/%.o: oci-hooks/%.c $(wildcard oci-hooks/*.h common/*.h lib/nshash.h)
	$(CC) $(CFLAGS) -Icommon -Ioci-hooks -c -o $@ $<
cni/%.o: cni/%.c $(wildcard cni/*.h common/*.h lib/nshash.h)
	$(CC) $(CFLAGS) -Icommon -Icni -c -o $@ $<
cmd/%.o: cmd/%.c $(wildcard cmd/*.h common/*.h lib/nshash.h)
	$(CC) $(CFLAGS) -Icommon -Icmd -c -o $@ $<

$(LIB_A): $(LIB_OBJS) | build
	rm -f $@ && ar rcs $@ $^

$(COMMON_A): $(COMMON_OBJS) | build
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS) lib/libnshash.map | build
	$(CC) -shared -Wl,-soname,libnshash.so.$(SOVERSION) -Wl,--version-script=lib/libnshash.map \
		-o $@ $(LIB_OBJS) $(LIB_LDLIBS)
	ln -sf libnshash.so.$(SOVERSION) build/libnshash.so

# Binaries link their front-end's objects, the internal archive and the
# static library: a hook or plugin must run with an almost empty
# environment and no library path.
FRONT_LIBS := $(COMMON_A) $(LIB_A)
build/nshash: cmd/nshash.o $(CMD_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) -o $@ $^ $(CLI_LDLIBS)
build/nshash-hook: oci-hooks/hook-main.o $(OCI_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) -o $@ $^ $(BIN_LDLIBS)
build/nshash-runtime: oci-hooks/runtime-main.o $(OCI_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) -o $@ $^ $(BIN_LDLIBS)
build/cni/nshash: cni/main.o $(CNI_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) -o $@ $^ $(BIN_LDLIBS)

# Unit tests test the front-ends' logic: each links the objects it needs.
UNIT_INC := -Icommon -Ioci-hooks -Icni
build/tests/test_oci: tests/unit/test_oci.c $(OCI_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/test_cni: tests/unit/test_cni.c $(CNI_OBJS) $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/test_policy: tests/unit/test_policy.c $(FRONT_LIBS) | build
	$(CC) $(CFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
build/tests/%: tests/unit/%.c $(LIB_A) | build
	$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lcmocka

build/bench/%: bench/%.c $(LIB_A) | build
	$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lm

unit: deps-test all $(UNIT_BINS)
	@tests/run-unit $(UNIT_BINS)

integration: deps-test all
	@tests/run-integration

# The README's test command.  Root, a real kernel (6.2+), real engines.
check: deps-test all $(UNIT_BINS)
	@tests/run-all $(UNIT_BINS)

demo: deps-test all
	@tools/demo

bench: deps-test all $(BENCH_BINS)
	@bench/run

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man3
	install -m 0755 build/nshash $(DESTDIR)$(BINDIR)/nshash
	install -m 0755 build/nshash-hook $(DESTDIR)$(BINDIR)/nshash-hook
	install -m 0755 build/nshash-runtime $(DESTDIR)$(BINDIR)/nshash-runtime
	# oci-hooks(5) files; precreate in a dir of its own, for podman's hooks_dir only (CRI-O
	# rejects the stage and would then drop every hook in a shared dir)
	$(if $(wildcard oci-hooks/hooks.d/nshash.json),install -d $(DESTDIR)$(HOOKSDIR) $(DESTDIR)$(PODMANHOOKSDIR) && \
		sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash.json >$(DESTDIR)$(HOOKSDIR)/nshash.json && \
		sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash-precreate.json >$(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json)
	$(if $(wildcard build/cni/nshash),install -d $(DESTDIR)$(CNIBINDIR) && install -m 0755 build/cni/nshash $(DESTDIR)$(CNIBINDIR)/nshash)
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libnshash.a
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libnshash.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libnshash.so
	install -m 0644 lib/nshash.h $(DESTDIR)$(INCLUDEDIR)/nshash.h
	for m in $(wildcard docs/man/*.[1-8]); do \
		s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

format:
	clang-format -i lib/*.[ch] common/*.[ch] cmd/*.c oci-hooks/*.[ch] cni/*.[ch] $(wildcard tests/unit/*.c bench/*.c)

clean:
	rm -rf build lib/*.o common/*.o cmd/*.o oci-hooks/*.o cni/*.o
