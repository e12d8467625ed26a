# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash — per-network-namespace TCP/UDP hash tables for containers.
# lib/*.c is libnshash (the engine); common/*.c an internal archive of what
# the front-ends share; each binary is its front-end's objects (cmd/, hook/ or
# runtime/ with oci/, cni/, k8s/, netavark/) + the internal archive +
# libnshash.a.  docs/design.md.
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
# podman's helper_binaries_dir entry (52-nshash-networks.conf): nshash's `netavark`
NETAVARKDIR ?= $(LIBEXECDIR)/netavark
# The CNI plugin follows PREFIX like everything else; runtimes look in
# /usr/lib/cni (Debian), /opt/cni/bin (upstream): set CNIBINDIR to one of those
# (make install CNIBINDIR=/usr/lib/cni) or add $(PREFIX)/lib/cni to their plugin dirs.
CNIBINDIR ?= $(PREFIX)/lib/cni
NSHASHDATADIR ?= $(PREFIX)/share/nshash
PODMANHOOKSDIR ?= $(NSHASHDATADIR)/podman-hooks.d
VERIFYHOOKSDIR ?= $(NSHASHDATADIR)/verify-hooks.d
# the opt-in precreate hook for every container (the policy's defaultTcp/defaultUdp)
DEFAULTSHOOKSDIR ?= $(NSHASHDATADIR)/podman-defaults-hooks.d
# where 0.1.0 installed its createRuntime hook file (install and uninstall remove it)
OLDHOOKFILE = $(PREFIX)/share/containers/oci/hooks.d/nshash.json
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
DESTDIR ?=

B ?= build
CC ?= cc
PKGS := json-c libnl-3.0 libnl-route-3.0 libnl-idiag-3.0 libcap
# Asked when first used (a compile), not when make starts: on a fresh machine
# the -dev packages arrive in the deps step, after make has read this file.
lazy_pkg = $(eval $(1) := $$(shell pkg-config $(2) 2>/dev/null))$($(1))
PKG_CFLAGS = $(call lazy_pkg,PKG_CFLAGS,--cflags $(PKGS))
PKG_LIBS = $(call lazy_pkg,PKG_LIBS,--libs $(PKGS))
PKG_STATIC_LIBS = $(call lazy_pkg,PKG_STATIC_LIBS,--libs --static $(PKGS))
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
LIB_LDLIBS = $(call lazy_pkg,LIB_LDLIBS,--libs libnl-3.0 libnl-route-3.0 libnl-idiag-3.0 libcap)
# The hook, the wrapper and the plugin are linked statically, libc included:
# each call is a fresh exec on a container's start path, and an exec without
# the dynamic loader costs ~0.85 ms here against ~1.1 ms with a shared libc
# and ~2.3 ms with json-c, libnl and libcap shared too.  It also frees them from the library path of
# the almost empty environment hooks run in.  (The linker warns that libnl's
# address-printing helpers would need glibc's NSS at run time: nshash never
# calls them.)
BIN_LDLIBS = -static $(PKG_STATIC_LIBS)
# The CLI is not on a container's start path: libc stays shared there, which
# keeps it checkable with valgrind (test 09; a static glibc start-up trips it).
CLI_LDLIBS = -Wl,-Bstatic $(PKG_STATIC_LIBS) -Wl,-Bdynamic
# ASan and UBSan need the dynamic loader: the sanitized tree links them like the CLI.
ifeq ($(SANITIZE),1)
BIN_LDLIBS = $(CLI_LDLIBS)
endif

SOVERSION := 1
obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
LIB_OBJS := $(call obj,$(sort $(wildcard lib/*.c)))
LIB_A := $(B)/libnshash.a
LIB_SO := $(B)/libnshash.so.$(SOVERSION)
# What the front-ends share (policy, logger, JSON, files): an internal
# static archive, neither installed nor exported.
COMMON_OBJS := $(call obj,$(sort $(wildcard common/*.c)))
COMMON_A := $(B)/libnshash-common.a
# Each front-end: its objects; the one holding main() is named here.
# oci/ is what the hook (hook/) and the runtime wrapper (runtime/) share.
OCI_OBJS := $(call obj,$(sort $(wildcard oci/*.c)))
HOOK_OBJS := $(call obj,$(filter-out hook/main.c,$(sort $(wildcard hook/*.c))))
RUNTIME_OBJS := $(call obj,$(filter-out runtime/main.c,$(sort $(wildcard runtime/*.c))))
CNI_OBJS := $(call obj,$(filter-out cni/main.c,$(sort $(wildcard cni/*.c))))
CMD_OBJS := $(call obj,$(filter-out cmd/nshash.c,$(sort $(wildcard cmd/*.c))))
K8S_OBJS := $(call obj,$(sort $(wildcard k8s/*.c)))
NETAVARK_OBJS := $(call obj,$(filter-out netavark/main.c,$(sort $(wildcard netavark/*.c))))

BINS := $(B)/nshash $(B)/nshash-hook $(B)/nshash-runtime $(B)/cni/nshash $(B)/nshash-cni-install $(B)/netavark/netavark
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
# bench/value-load.c is the load generator `value` and `value-node` share
BENCH_SRCS := $(filter-out bench/value-load.c,$(sort $(wildcard bench/*.c)))
BENCH_BINS := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
# Seconds each harness runs: `make fuzz` (FUZZ_SECONDS) and the smoke run
# of `make check` (FUZZ_SMOKE_SECONDS).
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 4
# How long `make soak` runs its day on a node (seconds).
SOAK_SECONDS ?= 1800
SAN := build/san
ALL_SRCS := $(sort $(wildcard lib/*.c common/*.c oci/*.c hook/*.c runtime/*.c cni/*.c cmd/*.c k8s/*.c netavark/*.c))

.PHONY: all deps deps-test deps-unit deps-lint deps-deb deps-rpm deps-cri check check-here check-engines check-k8s check-cri unit integration soak demo bench value value-node install uninstall \
	deb rpm clean format pkgconfig-check fuzz lint san san-check image

all: $(LIB_A) $(LIB_SO) $(BINS)

# The version (lib/nshash.h): the image's tag.
VERSION := $(shell sed -n 's/^\#define NSHASH_VERSION[[:space:]]*"\(.*\)"/\1/p' lib/nshash.h)
IMAGE ?= localhost/nshash-cni
IMAGE_BUILDER ?= $(firstword $(shell command -v podman buildah 2>/dev/null))

# Installs what is missing with apt (as root; one line per step, apt's output
# in build/deps.log).  `deps` is the build's, `deps-test` adds what the demo
# and the tests run, `deps-unit`/`deps-lint` only cmocka/cppcheck (make unit,
# make lint: no engines), `deps-deb`/`deps-rpm` what packaging needs.
deps:
	@tools/ensure-deps build
deps-test:
	@tools/ensure-deps test
deps-unit:
	@tools/ensure-deps unit
deps-lint:
	@tools/ensure-deps lint
deps-deb:
	@tools/ensure-deps deb
deps-rpm:
	@tools/ensure-deps rpm
deps-cri:
	@tools/ensure-deps cri

# These goals install their dependencies first and then build in a second
# make, which reads this file (and asks pkg-config) with the packages in place:
# the first `make demo` on a bare machine works.
# make unit and make lint need no container engine: only cmocka, cppcheck.
DEPS_test := check check-here check-engines check-k8s integration soak demo bench value value-node fuzz san-check
DEPS_unit := unit
DEPS_lint := lint
DEPS_deb := deb
DEPS_rpm := rpm
DEPS_cri := check-cri
ifndef NSHASH_DEPS_DONE
$(DEPS_test): deps-test
$(DEPS_unit): deps-unit
$(DEPS_lint): deps-lint
$(DEPS_deb): deps-deb
$(DEPS_rpm): deps-rpm
$(DEPS_cri): deps-cri
$(DEPS_test) $(DEPS_unit) $(DEPS_lint) $(DEPS_deb) $(DEPS_rpm) $(DEPS_cri):
	@$(MAKE) --no-print-directory NSHASH_DEPS_DONE=1 $@
else
unit: all $(UNIT_BINS)
	@tests/run-unit $(UNIT_BINS)

integration: all
	@tests/run-all

# The README's test command (= CI).  Root, a real kernel (6.2+), real
# engines.  The whole suite runs once, where it proves most: inside
# 90-fresh-machine's bare Debian 12 root (its README lines, then this
# target again there, NSHASH_IN_FRESH_ROOT=1: every unit and integration
# test, 73-k8s-kubelet's Kubernetes node included, and the sanitized run),
# and 91-package on this machine (the packages on another bare root).
# NSHASH_TESTS=... (a subset) runs here, as check-here does.
check: all
	@if [ -n "$${NSHASH_IN_FRESH_ROOT:-}" ] || [ -n "$${NSHASH_TESTS:-}" ]; then \
		$(MAKE) --no-print-directory check-here; \
	else \
		NSHASH_TESTS="90-fresh-machine 91-package" tests/run-all; \
	fi

# The whole suite on this machine: unit tests, every integration script
# but 90-fresh-machine (make check's; in its root it shows SKIP itself),
# the sanitized run.
check-here: all $(UNIT_BINS) san
	@skip=90-fresh-machine; [ -z "$${NSHASH_IN_FRESH_ROOT:-}" ] || skip=; \
	NSHASH_SKIP_TESTS=$$skip NSHASH_SAN=$(SAN) NSHASH_FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) tests/run-all $(UNIT_BINS)

# The engine tests against Debian 13's engines (podman 5, Docker 26,
# containerd 1.7) in a trixie root entered as a container (tests/check-engines).
check-engines: all
	@tests/check-engines

# The shipped DaemonSet on a real single-node Kubernetes (root): just
# tests/integration/73-k8s-kubelet.sh, which builds Kubernetes from Debian's
# source package once (cached in /var/cache/nshash-tests/k8s) and starts
# the cluster privately.
check-k8s: all
	@NSHASH_TESTS=73-k8s-kubelet tests/run-all

# The CRI peer check (root; not part of make check): critest and CRI-O built
# from source trees you point it at (make check-cri CRI_TOOLS_SRC=DIR
# CRIO_SRC=DIR; neither is a Debian package), critest run without and with
# nshash on containerd and on CRI-O, the two result lists compared
# (tests/check-cri; docs/runtimes.md).  Without the trees it says how to get
# them and fails.
check-cri: all
	@CRI_TOOLS_SRC="$(CRI_TOOLS_SRC)" CRIO_SRC="$(CRIO_SRC)" tests/check-cri
# The day on a node of make check (tests/integration/60-day-on-a-node.sh:
# the installed binaries, the shipped policy, the state dir absent at first)
# with its middle repeated for SOAK_SECONDS: hundreds of starts, bursts,
# restarts, gc and pauses; prints the starts and failures per path and what
# was left.  Root.  Not part of make check.
soak: all
	@SOAK=1 SOAK_SECONDS=$(SOAK_SECONDS) bash tests/integration/60-day-on-a-node.sh

demo: all
	@tools/demo

bench: all $(BENCH_BINS)
	@bench/run
	@bench/stats-scan
	@bench/podman-bridge
	@bench/podman-defaults
	@bench/spares

# The case for nshash on this machine: build/value/value.{csv,png} (bench/value).
value: all $(B)/bench/value
	@bench/value

# What installing nshash with `auto` does on this node (bench/value-node; root,
# podman, gnuplot; under 15 minutes and 16 GiB on 2 cores): 50 victim containers
# (VALUE_NODE_VICTIMS) on the shared tables, a noisy one growing to 2Mi UDP
# sockets and 1Mi TCP connections, what `nshash stats` and /metrics show, then
# the noisy one restarted with the tables `auto` learned; victims' rate and p99
# over the day: build/value-node/value-node.{csv,png}.  A benchmark: asserts
# nothing.  Heavy: run it alone (docs/benchmarks.md, "make value-node").
value-node: all $(B)/bench/value-node
	@bench/value-node

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

# Dependencies point one way: cmd/, hook/ and runtime/ (-> oci/), cni/, k8s/,
# netavark/ -> common/ -> lib/.
$(B)/obj/lib/%.o: lib/%.c $(wildcard lib/*.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -c -o $@ $<
$(B)/obj/common/%.o: common/%.c $(wildcard common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -c -o $@ $<
$(B)/obj/oci/%.o: oci/%.c $(wildcard oci/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Ioci -c -o $@ $<
$(B)/obj/hook/%.o: hook/%.c $(wildcard hook/*.h oci/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Ioci -Ihook -c -o $@ $<
$(B)/obj/runtime/%.o: runtime/%.c $(wildcard runtime/*.h oci/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Ioci -Iruntime -c -o $@ $<
$(B)/obj/cni/%.o: cni/%.c $(wildcard cni/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Icni -c -o $@ $<
$(B)/obj/netavark/%.o: netavark/%.c $(wildcard netavark/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Inetavark -c -o $@ $<
$(B)/obj/cmd/%.o: cmd/%.c $(wildcard cmd/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Icmd -c -o $@ $<
$(B)/obj/k8s/%.o: k8s/%.c $(wildcard k8s/*.h common/*.h lib/nshash.h lib/shared.h) | pkgconfig-check
	@mkdir -p $(@D)
	$(COMPILE) -Icommon -Ik8s -c -o $@ $<

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
	$(LINK) -o $@ $^ $(CLI_LDLIBS)
$(B)/nshash-hook: $(call obj,hook/main.c) $(HOOK_OBJS) $(OCI_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
$(B)/nshash-runtime: $(call obj,runtime/main.c) $(RUNTIME_OBJS) $(OCI_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
$(B)/cni/nshash: $(call obj,cni/main.c) $(CNI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
# podman's netavark front-end (docs/networks.md): installed as `netavark`
# into NETAVARKDIR, which the containers.conf drop-in lists first.
$(B)/netavark/netavark: $(call obj,netavark/main.c) $(NETAVARK_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
# The Kubernetes installer runs in a FROM-scratch image: static like the plugin.
$(B)/nshash-cni-install: $(K8S_OBJS) $(FRONT_LIBS)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)
# The CLI for that image, where there is no libc to share: static too.
$(B)/static/nshash: $(call obj,cmd/nshash.c) $(CMD_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) -o $@ $^ $(BIN_LDLIBS)

# The DaemonSet's image (packaging/kubernetes/Containerfile): FROM scratch,
# the static binaries built here and the shipped entry, nothing pulled;
# tagged $(IMAGE):$(VERSION), the tag packaging/kubernetes/nshash-cni.yaml names.
image: $(B)/cni/nshash $(B)/static/nshash $(B)/nshash-cni-install
	@[ -n "$(IMAGE_BUILDER)" ] || { echo "nshash: make image needs podman or buildah" >&2; exit 1; }
	rm -rf $(B)/image && mkdir -p $(B)/image
	cp $(B)/cni/nshash $(B)/image/nshash-plugin
	cp $(B)/static/nshash $(B)/nshash-cni-install packaging/kubernetes/nshash-entry.json $(B)/image/
	$(IMAGE_BUILDER) build --pull=never --build-arg VERSION=$(VERSION) -f packaging/kubernetes/Containerfile \
		-t $(IMAGE):$(VERSION) $(B)/image

# Unit tests test the front-ends' logic: each links the objects it needs.
UNIT_INC := -Icommon -Ioci -Ihook -Iruntime -Icni
$(B)/tests/test_oci: tests/unit/test_oci.c $(HOOK_OBJS) $(RUNTIME_OBJS) $(OCI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_cni: tests/unit/test_cni.c $(CNI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_policy: tests/unit/test_policy.c $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_history: tests/unit/test_history.c $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_hostile: tests/unit/test_hostile.c $(HOOK_OBJS) $(OCI_OBJS) $(CNI_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -o $@ $^ $(LDLIBS) -lcmocka
$(B)/tests/test_netavark: tests/unit/test_netavark.c $(NETAVARK_OBJS) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -Inetavark -o $@ $^ $(LDLIBS) -lcmocka
# the installer's chain and unchain in a dir of its own, with the shipped
# entry and the plugin built here
$(B)/tests/test_k8s: tests/unit/test_k8s.c $(filter-out $(call obj,k8s/main.c),$(K8S_OBJS)) $(FRONT_LIBS) $(B)/cni/nshash
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -Ik8s -DNSH_TEST_ROOT='"$(CURDIR)"' \
		-DNSH_TEST_BUILD='"$(abspath $(B))"' -o $@ $(filter-out $(B)/cni/nshash,$^) $(LDLIBS) -lcmocka
$(B)/tests/test_serve: tests/unit/test_serve.c $(call obj,cmd/http.c) $(FRONT_LIBS)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) $(UNIT_INC) -Icmd -o $@ $^ $(LDLIBS) -lcmocka
# netcfg's comparison over rtnetlink dumps captured once (tests/unit/data).
$(B)/tests/test_netcfg: tests/unit/test_netcfg.c $(LIB_A) $(wildcard tests/unit/data/netcfg-*.bin)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -DNSH_TEST_DATA='"$(CURDIR)/tests/unit/data"' -o $@ $< $(LIB_A) $(LDLIBS) -lcmocka
$(B)/tests/%: tests/unit/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lcmocka

$(B)/bench/%: bench/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ $< $(LIB_A) $(LDLIBS) -lm
# make value's and make value-node's load generator (bench/value-load.c)
$(B)/bench/value: bench/value.c bench/value-load.c bench/value-load.h
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ bench/value.c bench/value-load.c
# static: it runs inside make value-node's busybox containers
$(B)/bench/value-node: bench/value-node.c bench/value-load.c bench/value-load.h
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ bench/value-node.c bench/value-load.c -static
# static like the plugin it stands next to in bench/cni-add
$(B)/bench/cni-noop: bench/cni-noop.c
	@mkdir -p $(@D)
	$(LINK) $(NSH_CPPFLAGS) $(CPPFLAGS) -o $@ $< $(BIN_LDLIBS)

# libFuzzer harnesses (SANITIZE=1 trees only: clang, coverage-instrumented
# objects).  Each links what it parses: its front-end's objects.
FUZZ_INC := -Icommon -Ioci -Ihook -Iruntime -Icni -Icmd -Itests/fuzz
$(B)/fuzz/fuzz_cni: tests/fuzz/fuzz_cni.c $(CNI_OBJS) $(FRONT_LIBS)
$(B)/fuzz/fuzz_oci: tests/fuzz/fuzz_oci.c $(HOOK_OBJS) $(OCI_OBJS) $(FRONT_LIBS)
$(B)/fuzz/fuzz_runtime_args: tests/fuzz/fuzz_runtime_args.c $(RUNTIME_OBJS) $(OCI_OBJS) $(FRONT_LIBS)
$(B)/fuzz/fuzz_policy: tests/fuzz/fuzz_policy.c $(FRONT_LIBS)
$(B)/fuzz/fuzz_history $(B)/fuzz/fuzz_histindex: $(B)/fuzz/%: tests/fuzz/%.c $(FRONT_LIBS)
$(B)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c $(call obj,cmd/http.c) $(FRONT_LIBS)
$(B)/fuzz/%: tests/fuzz/%.c $(LIB_A) tests/fuzz/fuzz.h
	@mkdir -p $(@D)
	$(LINK) -fsanitize=fuzzer $(NSH_CPPFLAGS) $(CPPFLAGS) $(FUZZ_INC) -o $@ \
		$(filter %.c %.o,$^) $(filter $(COMMON_A),$^) $(LIB_A) $(LDLIBS)

# The sanitizer tree: everything again with clang, ASan and UBSan.
san:
	@$(MAKE) --no-print-directory B=$(SAN) CC=clang SANITIZE=1 CFLAGS="-O1 -g" \
		$(SAN)/nshash $(SAN)/nshash-hook $(SAN)/nshash-runtime $(SAN)/cni/nshash \
		$(patsubst $(B)/%,$(SAN)/%,$(UNIT_BINS) $(FUZZ_BINS))

# Everything `make install` puts down, relative to DESTDIR (uninstall removes it).
INSTALLED = $(BINDIR)/nshash $(BINDIR)/nshash-hook $(BINDIR)/nshash-runtime $(BINDIR)/nshash-cni-install \
	$(CNIBINDIR)/nshash $(NETAVARKDIR)/netavark $(NSHASHDATADIR)/containers.conf.d/52-nshash-networks.conf \
	$(PODMANHOOKSDIR)/nshash-precreate.json $(VERIFYHOOKSDIR)/nshash-verify.json \
	$(DEFAULTSHOOKSDIR)/nshash-precreate.json \
	$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf \
	$(NSHASHDATADIR)/containers.conf.d/51-nshash-hooks-defaults.conf \
	$(NSHASHDATADIR)/remove-state \
	$(SYSTEMDUNITDIR)/nshash-gc.service $(SYSTEMDUNITDIR)/nshash-gc.timer \
	$(SYSTEMDUNITDIR)/nshash-record.service $(SYSTEMDUNITDIR)/nshash-record.timer \
	$(LIBDIR)/libnshash.a $(LIBDIR)/libnshash.so.$(SOVERSION) $(LIBDIR)/libnshash.so $(INCLUDEDIR)/nshash.h \
	$(foreach m,$(wildcard docs/man/*.[1-8]),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
# podman reads these hooks dirs by default; setting hooks_dir replaces them.
PODMAN_DEFAULT_HOOKS := /usr/share/containers/oci/hooks.d /etc/containers/oci/hooks.d
PODMAN_HOOKS_DIRS = $(PODMAN_DEFAULT_HOOKS) $(PODMANHOOKSDIR)
PODMAN_DEFAULTS_HOOKS_DIRS = $(PODMAN_DEFAULT_HOOKS) $(DEFAULTSHOOKSDIR)
comma := ,
empty :=
space := $(empty) $(empty)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(CNIBINDIR) \
		$(DESTDIR)$(PODMANHOOKSDIR) $(DESTDIR)$(VERIFYHOOKSDIR) $(DESTDIR)$(NSHASHDATADIR)/containers.conf.d \
		$(DESTDIR)$(DEFAULTSHOOKSDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/nshash \
		$(DESTDIR)$(NETAVARKDIR)
	install -m 0755 $(B)/nshash $(B)/nshash-hook $(B)/nshash-runtime $(B)/nshash-cni-install $(DESTDIR)$(BINDIR)/
	install -m 0755 $(B)/cni/nshash $(DESTDIR)$(CNIBINDIR)/nshash
	install -m 0755 packaging/remove-state $(DESTDIR)$(NSHASHDATADIR)/remove-state
	install -m 0755 $(B)/netavark/netavark $(DESTDIR)$(NETAVARKDIR)/netavark
	sed 's|"/usr/libexec/nshash/netavark"|"$(NETAVARKDIR)"|' packaging/containers/52-nshash-networks.conf \
		>$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/52-nshash-networks.conf
	chmod 0644 $(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/52-nshash-networks.conf
	# oci-hooks(5) files in dirs of their own: precreate for podman's hooks_dir only (CRI-O
	# rejects the stage and would then drop every hook in a shared dir); the createRuntime
	# verification is opt-in (one more hook exec per container start)
	# 0.1.0 put its createRuntime hook where podman and CRI-O always look: gone (opt-in now)
	if grep -qs nshash-hook $(DESTDIR)$(OLDHOOKFILE); then rm -f $(DESTDIR)$(OLDHOOKFILE); fi
	sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' hook/verify-hooks.d/nshash-verify.json \
		>$(DESTDIR)$(VERIFYHOOKSDIR)/nshash-verify.json
	sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' hook/hooks.d/nshash-precreate.json \
		>$(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json
	sed -e 's|^hooks_dir = .*|hooks_dir = [$(subst $(space),$(comma) ,$(patsubst %,"%",$(strip $(PODMAN_HOOKS_DIRS))))]|' \
		-e 's|/usr/share/nshash/|$(NSHASHDATADIR)/|' packaging/containers/50-nshash-hooks.conf \
		>$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf
	# opt-in: the precreate hook for every container (defaultTcp/defaultUdp), a drop-in of its own
	sed 's|/usr/local/bin/nshash-hook|$(BINDIR)/nshash-hook|' hook/defaults-hooks.d/nshash-precreate.json \
		>$(DESTDIR)$(DEFAULTSHOOKSDIR)/nshash-precreate.json
	sed -e 's|^hooks_dir = .*|hooks_dir = [$(subst $(space),$(comma) ,$(patsubst %,"%",$(strip $(PODMAN_DEFAULTS_HOOKS_DIRS))))]|' \
		-e 's|/usr/share/nshash/|$(NSHASHDATADIR)/|' packaging/containers/51-nshash-hooks-defaults.conf \
		>$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/51-nshash-hooks-defaults.conf
	for u in nshash-gc.service nshash-gc.timer nshash-record.service nshash-record.timer; do \
		sed 's|/usr/bin/nshash|$(BINDIR)/nshash|' packaging/systemd/$$u >$(DESTDIR)$(SYSTEMDUNITDIR)/$$u; done
	chmod 0644 $(DESTDIR)$(VERIFYHOOKSDIR)/nshash-verify.json $(DESTDIR)$(PODMANHOOKSDIR)/nshash-precreate.json \
		$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/50-nshash-hooks.conf $(DESTDIR)$(SYSTEMDUNITDIR)/nshash-gc.* $(DESTDIR)$(SYSTEMDUNITDIR)/nshash-record.* \
		$(DESTDIR)$(DEFAULTSHOOKSDIR)/nshash-precreate.json \
		$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d/51-nshash-hooks-defaults.conf
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
	if grep -qs nshash-hook $(DESTDIR)$(OLDHOOKFILE); then rm -f $(DESTDIR)$(OLDHOOKFILE); fi
	cmp -s packaging/etc/nshash.json $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json && \
		rm -f $(DESTDIR)$(SYSCONFDIR)/nshash/nshash.json || true
	-rmdir $(DESTDIR)$(SYSCONFDIR)/nshash $(DESTDIR)$(PODMANHOOKSDIR) $(DESTDIR)$(VERIFYHOOKSDIR) $(DESTDIR)$(DEFAULTSHOOKSDIR) \
		$(DESTDIR)$(NSHASHDATADIR)/containers.conf.d \
		$(DESTDIR)$(NSHASHDATADIR) 2>/dev/null
	$(if $(DESTDIR),,ldconfig)

format:
	clang-format -i lib/*.[ch] common/*.[ch] cmd/*.[ch] oci/*.[ch] hook/*.[ch] runtime/*.[ch] cni/*.[ch] k8s/*.[ch] netavark/*.[ch] $(wildcard tests/unit/*.c tests/fuzz/*.[ch] bench/*.c)

clean:
	rm -rf build lib/*.o common/*.o cmd/*.o oci/*.o hook/*.o runtime/*.o cni/*.o k8s/*.o
