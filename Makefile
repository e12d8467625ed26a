# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash — per-network-namespace TCP/UDP hash tables for containers.
# Every lib/*.c goes into libnshash; each binary is one main file plus the library.

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
# Binaries carry json-c, libnl and libcap statically (libc stays shared): each
# hook, wrapper and plugin call is a fresh exec, and skipping the dynamic
# loading of three libraries saves ~1.2 ms per exec here (runc runs two hooks
# per container start).  It also frees them from the library path of the
# almost empty environment hooks run in.
BIN_LDLIBS := -Wl,-Bstatic $(shell pkg-config --libs --static $(PKGS) 2>/dev/null) -Wl,-Bdynamic

SOVERSION := 0
LIB_SRCS := $(sort $(wildcard lib/*.c))
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIB_A := build/libnshash.a
LIB_SO := build/libnshash.so.$(SOVERSION)

BIN_MAINS := cmd/nshash.c $(wildcard oci-hooks/nshash-hook.c oci-hooks/nshash-runtime.c cni/nshash-cni.c)
BINS := build/nshash $(if $(wildcard oci-hooks/nshash-hook.c),build/nshash-hook) \
	$(if $(wildcard oci-hooks/nshash-runtime.c),build/nshash-runtime) \
	$(if $(wildcard cni/nshash-cni.c),build/cni/nshash)
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

lib/%.o: lib/%.c lib/nshash.h $(wildcard lib/*.h)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB_A): $(LIB_OBJS) | build
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS) lib/libnshash.map | build
	$(CC) -shared -Wl,-soname,libnshash.so.$(SOVERSION) -Wl,--version-script=lib/libnshash.map \
		-o $@ $(LIB_OBJS) $(LDLIBS)
	ln -sf libnshash.so.$(SOVERSION) build/libnshash.so

# Binaries link the static library: a hook or plugin must run with an
# almost empty environment and no library path.
build/nshash: $(wildcard cmd/*.c cmd/*.h) $(LIB_A) | build
	$(CC) $(CFLAGS) -Icmd -o $@ $(wildcard cmd/*.c) $(LIB_A) $(BIN_LDLIBS)
build/nshash-hook: oci-hooks/nshash-hook.c $(LIB_A) | build
	$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(BIN_LDLIBS)
build/nshash-runtime: oci-hooks/nshash-runtime.c $(LIB_A) | build
	$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(BIN_LDLIBS)
build/cni/nshash: cni/nshash-cni.c $(LIB_A) | build
	$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(BIN_LDLIBS)

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
	@bench/run && bench/podman-bridge

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man3
	install -m 0755 build/nshash $(DESTDIR)$(BINDIR)/nshash
	$(if $(wildcard build/nshash-hook),install -m 0755 build/nshash-hook $(DESTDIR)$(BINDIR)/nshash-hook)
	$(if $(wildcard build/nshash-runtime),install -m 0755 build/nshash-runtime $(DESTDIR)$(BINDIR)/nshash-runtime)
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
	clang-format -i lib/*.[ch] cmd/*.c $(wildcard oci-hooks/*.c cni/*.c tests/unit/*.c bench/*.c)

clean:
	rm -rf build lib/*.o
