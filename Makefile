# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash — per-network-namespace TCP/UDP hash tables for containers.
# lib/*.c is libnshash (the engine); common/*.c an internal archive of what
# the front-ends share; each binary is its front-end's objects (cmd/,
# oci-hooks/, cni/) + the internal archive + libnshash.a.  docs/design.md.
#
# Flags: CFLAGS (default -O2 -g), CPPFLAGS and LDFLAGS are the user's and are
# honoured; what the build needs (warnings, -fPIC, include dirs, json-c and
# libnl flags) is added separately, so `make CFLAGS=-O0` still builds.
# Everything is built under $(B) (default build/): objects in $(B)/obj.
# `make check` also builds a clang ASan+UBSan tree in build/san (unit and
# bad-input tests, fuzz smoke); `make fuzz` runs every harness longer.

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

B ?= build
CC ?= cc
PKGS := json-c libnl-3.0 libnl-route-3.0 libcap
# Recursively expanded: pkg-config runs only when a compile needs it (after
# `make deps` has installed the packages).
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS ?= -O2 -g
WERROR ?= -Werror
NSH_CPPFLAGS = -D_GNU_SOURCE -Ilib $(PKG_CFLAGS)
NSH_CFLAGS := -std=gnu11 -Wall -Wextra $(WERROR) -fPIC
# Sanitized builds (SANITIZE=1, clang): ASan + UBSan, and coverage for
# libFuzzer so that the same objects serve the fuzz harnesses.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifeq ($(SANITIZE),1)
NSH_CFLAGS += $(SAN_FLAGS) -fsanitize=fuzzer-no-link
NSH_LDFLAGS := $(SAN_FLAGS)
endif
COMPILE = $(CC) $(NSH_CPPFLAGS) $(CPPFLAGS) $(NSH_CFLAGS) $(CFLAGS)
LINK = $(CC) $(NSH_CFLAGS) $(CFLAGS) $(NSH_LDFLAGS) $(LDFLAGS)
LDLIBS = $(PKG_LIBS)
# libnshash itself needs no JSON: only libnl and libcap.
LIB_LDLIBS = $(shell pkg-config --libs libnl-3.0 libnl-route-3.0 libcap 2>/dev/null)
# Binaries carry json-c, libnl and libcap statically (libc stays shared): each
# hook, wrapper and plugin call is a fresh exec, and skipping the dynamic
# loading of three libraries saves ~1.2 ms per exec here (runc runs two hooks
# per container start).  It also frees them from the library path of the
# almost empty environment hooks run in.
BIN_LDLIBS = -Wl,-Bstatic $(shell pkg-config --libs --static $(PKGS) 2>/dev/null) -Wl,-Bdynamic

SOVERSION := 0
obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
LIB_OBJS := $(call obj,$(sort $(wildcard lib/*.c)))
LIB_A := $(B)/libnshash.a
LIB_SO := $(B)/libnshash.so.$(SOVERSION)
# What the front-ends share (policy, logger, JSON, files): an internal
# static archive, neither installed nor exported.
COMMON_OBJS := $(call obj,$(sort $(wildcard common/*.c)))
COMMON_A := $(B)/libnshash-common.a
# Each front-end: its objects; the one holding main() is named here.
OCI_OBJS := $(call obj,$(filter-out %-main.c,$(sort $(wildcard oci-hooks/*.c))))
CNI_OBJS := $(call obj,$(filter-out cni/main.c,$(sort $(wildcard cni/*.c))))
CMD_OBJS := $(call obj,$(filter-out cmd/nshash.c,$(sort $(wildcard cmd/*.c))))

BINS := $(B)/nshash $(B)/nshash-hook $(B)/nshash-runtime $(B)/cni/nshash
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
# Seconds each harness runs: `make fuzz` (FUZZ_SECONDS) and the smoke run
# of `make check` (FUZZ_SMOKE_SECONDS).
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 4
SAN := build/san
ALL_SRCS := $(sort $(wildcard lib/*.c common/*.c oci-hooks/*.c cni/*.c cmd/*.c))

.PHONY: all deps deps-test check unit integration demo bench install clean format \
	fuzz lint san san-check fuzz-smoke

all: $(LIB_A) $(LIB_SO) $(BINS)

# Installs the build and test dependencies with apt when any is missing.
deps:
	@tools/ensure-deps build
deps-test:
	@tools/ensure-deps test

# Dependencies point one way: cmd/, oci-hooks/, cni/ -> common/ -> lib/.
$(B)/obj/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(COMPILE) -c -o $@ $<
$(B)/obj/common/%.o: common/%.c $(wildcard common/*.h lib/nshash.h)
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -c -o $@ $<
$(B)/obj/oci-hooks/%.o: oci-hooks/%.c $(wildcard oci-hooks/*.h common/*.h lib/nshash.h)
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Ioci-hooks -c -o $@ $<
$(B)/obj/cni/%.o: cni/%.c $(wildcard cni/*.h common/*.h lib/nshash.h)
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Icni -c -o $@ $<
$(B)/obj/cmd/%.o: cmd/%.c $(wildcard cmd/*.h common/*.h lib/nshash.h)
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Icmd -c -o $@ $<

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(COMMON_A): $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJS) lib/libnshash.map
	$(LINK) -shared -Wl,-soname,libnshash.so.$(SOVERSION) -Wl,--version-script=lib/libnshash.map \
		-o $@ $(LIB_OBJS) $(LIB_LDLIBS)
	ln -sf libnshash.so.$(SOVERSION) $(B)/libnshash.so

# Binaries link their front-end's objects, the internal archive and the
# static library: a hook or plugin must run with an almost empty
# environment and no library path.
FRONT_LIBS := $(COMMON_A) $(LIB_A)
$(B)/nshash: $(call obj,cmd/nshash.c) $(CMD_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
$(B)/nshash-hook: $(call obj,oci-hooks/hook-main.c) $(OCI_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
$(B)/nshash-runtime: $(call obj,oci-hooks/runtime-main.c) $(OCI_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
$(B)/cni/nshash: $(call obj,cni/main.c) $(CNI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)

# Unit tests test the front-ends' logic: each links the objects it needs.
UNIT_INC := -Icommon -Ioci-hooks -Icni
$(B)/tests/test_oci: tests/unit/test_oci.c $(OCI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_cni: tests/unit/test_cni.c $(CNI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_policy: tests/unit/test_policy.c $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/%: tests/unit/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lcmocka

$(B)/bench/%: bench/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lm

# libFuzzer harnesses (SANITIZE=1 trees only: clang, coverage-instrumented
# objects).  Each links what it parses: its front-end's objects.
FUZZ_INC := -Icommon -Ioci-hooks -Icni -Itests/fuzz
$(B)/fuzz/fuzz_cni: tests/fuzz/fuzz_cni.c $(CNI_OBJS) $(FRONT_LIBS)
$(B)/fuzz/fuzz_oci $(B)/fuzz/fuzz_runtime_args: $(B)/fuzz/%: tests/fuzz/%.c $(OCI_OBJS) $(FRONT_LIBS)
$(B)/fuzz/fuzz_policy: tests/fuzz/fuzz_policy.c $(FRONT_LIBS)
$(B)/fuzz/%: tests/fuzz/%.c $(LIB_A) tests/fuzz/fuzz.h
	@mkdir -p $(@D)
	$(LINK) -fsanitize=fuzzer $(NSH_CPPFLAGS) $(CPPFLAGS) $(FUZZ_INC) -o $@ \
		$(filter %.c %.o,$^) $(filter $(COMMON_A),$^) $(LIB_A) $(LDLIBS)

unit: deps-test all $(UNIT_BINS)
	@tests/run-unit $(UNIT_BINS)

integration: deps-test all
	@tests/run-all

# The sanitizer tree: everything again with clang, ASan and UBSan.
san:
	@$(MAKE) --no-print-directory B=$(SAN) CC=clang SANITIZE=1 CFLAGS="-O1 -g" \
		$(SAN)/nshash $(SAN)/nshash-hook $(SAN)/nshash-runtime $(SAN)/cni/nshash \
		$(patsubst $(B)/%,$(SAN)/%,$(UNIT_BINS) $(FUZZ_BINS))

# Unit tests and the bad-input tests under ASan+UBSan, then a fuzz smoke run.
san-check: san
	@tests/run-sanitized $(SAN) $(FUZZ_SMOKE_SECONDS)

# Each harness for FUZZ_SECONDS on its seed corpus (tests/fuzz/corpus/NAME,
# copied: what the fuzzer adds stays in build/).  A crash fails the target
# and leaves the input in build/san/fuzz/NAME-crash-*.
fuzz: san
	@tests/fuzz/run $(SAN)/fuzz $(FUZZ_SECONDS)

# gcc's static analyzer and cppcheck over every C file; any finding fails.
lint:
	@tests/lint $(ALL_SRCS)

# The README's test command.  Root, a real kernel (6.2+), real engines.
check: deps-test all $(UNIT_BINS) san
	@NSHASH_SAN=$(SAN) NSHASH_FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) tests/run-all $(UNIT_BINS)

demo: deps-test all
	@tools/demo

bench: deps-test all $(BENCH_BINS)
	@bench/run

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man3
	install -m 0755 $(B)/nshash $(DESTDIR)$(BINDIR)/nshash
	install -m 0755 $(B)/nshash-hook $(DESTDIR)$(BINDIR)/nshash-hook
	install -m 0755 $(B)/nshash-runtime $(DESTDIR)$(BINDIR)/nshash-runtime
	# oci-hooks(5) files; precreate in a dir of its own, for podman's hooks_dir only (CRI-O
	# rejects the stage and would then drop every hook in a shared dir)
	$(if $(wildcard oci-hooks/hooks.d/nshash.json),install -d $(DESTDIR)$(HOOKSDIR) $(DESTDIR)$(PODMANHOOKSDIR) && \
		sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash.json >$(DESTDIR)$(HOOKSDIR)/nshash.json && \
		sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' oci-hooks/hooks.d/nshash-precreate.json >$(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json)
	$(if $(wildcard $(B)/cni/nshash),install -d $(DESTDIR)$(CNIBINDIR) && install -m 0755 $(B)/cni/nshash $(DESTDIR)$(CNIBINDIR)/nshash)
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libnshash.a
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libnshash.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libnshash.so
	install -m 0644 lib/nshash.h $(DESTDIR)$(INCLUDEDIR)/nshash.h
	for m in $(wildcard docs/man/*.[1-8]); do \
		s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

format:
	clang-format -i lib/*.[ch] common/*.[ch] cmd/*.c oci-hooks/*.[ch] cni/*.[ch] $(wildcard tests/unit/*.c tests/fuzz/*.[ch] bench/*.c)

clean:
	rm -rf build lib/*.o common/*.o cmd/*.o oci-hooks/*.o cni/*.o
