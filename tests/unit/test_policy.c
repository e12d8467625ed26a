/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy file parsing: defaults, every key, and errors that name the key or line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

static int parse(const char *text, struct nsh_policy *p, struct nshash_error *err)
{
	return nsh_policy_parse(text, strlen(text), "/etc/nshash/nshash.json", p, err);
}

#define assert_error(text, fragment)                                                                                   \
	do {                                                                                                           \
		struct nsh_policy p_;                                                                                  \
		struct nshash_error e_ = {0};                                                                          \
		assert_true(parse(text, &p_, &e_) < 0);                                                                \
		if (!strstr(e_.msg, fragment))                                                                         \
			fail_msg("error \"%s\" lacks \"%s\"", e_.msg, fragment);                                       \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	struct nsh_policy p;
	nsh_policy_defaults(&p);
	assert_int_equal(p.max.tcp, 262144);
	assert_int_equal(p.max.udp, 16384);
	assert_int_equal(p.on_failure, NSH_ON_FAILURE_FAIL);
	/* root of the initial user namespace: /run/nshash; anyone else:
	 * $XDG_RUNTIME_DIR/nshash, else /run/user/UID/nshash */
	bool initial_root = false;
	FILE *f = fopen("/proc/self/uid_map", "r");
	unsigned long in = 1, out = 1, n = 0;
	if (f && fscanf(f, "%lu %lu %lu", &in, &out, &n) == 3)
		initial_root = geteuid() == 0 && in == 0 && out == 0 && n == 4294967295UL;
	if (f)
		fclose(f);
	char want[1024], saved[1024];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	snprintf(saved, sizeof(saved), "%s", xdg ? xdg : "");
	nsh_default_state_dir(want, sizeof(want));
	assert_string_equal(p.state_dir, want);
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	nsh_default_state_dir(want, sizeof(want));
	assert_string_equal(want, initial_root ? "/run/nshash" : "/run/user/4242/nshash");
	/* the library gives a NULL or "" state_dir the same directory: one
	 * rule for a library caller, the CLI and the policy's default */
	char buf[1024];
	assert_string_equal(nsh_state_dir(NULL, buf, sizeof(buf)), want);
	assert_string_equal(nsh_state_dir("", buf, sizeof(buf)), want);
	assert_string_equal(nsh_state_dir("/run/given", buf, sizeof(buf)), "/run/given");
	/* an unclean $XDG_RUNTIME_DIR is not used */
	setenv("XDG_RUNTIME_DIR", "/run/user/../x", 1);
	nsh_default_state_dir(want, sizeof(want));
	if (!initial_root)
		assert_true(strncmp(want, "/run/user/", 10) == 0 && !strstr(want, ".."));
	if (xdg)
		setenv("XDG_RUNTIME_DIR", saved, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	assert_string_equal(p.runtime, "");
	assert_string_equal(p.log_file, "");
	assert_true(p.syslog); /* hook refusals reach syslog/journald by default */
	/* the documented promise: one container cannot take more than a few MiB */
	uint64_t bytes = nshash_table_bytes(NSHASH_TCP, p.max.tcp) + nshash_table_bytes(NSHASH_UDP, p.max.udp);
	assert_true(bytes <= 4u * 1024 * 1024);
}

static void test_all_keys(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	const char *text = "{\n \"maxTcp\": 4096, \"maxUdp\": 1024, \"onFailure\": \"warn\",\n"
			   " \"strategy\": \"nested\", \"stateDir\": \"/run/x\", \"runtime\": \"crun\",\n"
			   " \"hookPath\": \"/opt/nshash-hook\", \"logFile\": \"/var/log/nshash.log\",\n"
			   " \"syslog\": false, \"_note\": \"admin comment\" }\n";
	assert_int_equal(parse(text, &p, &e), 0);
	assert_int_equal(p.max.tcp, 4096);
	assert_int_equal(p.max.udp, 1024);
	assert_int_equal(p.on_failure, NSH_ON_FAILURE_WARN);
	assert_int_equal(p.strategy, NSHASH_STRATEGY_NESTED);
	assert_string_equal(p.state_dir, "/run/x");
	assert_string_equal(p.runtime, "crun");
	assert_string_equal(p.hook_path, "/opt/nshash-hook");
	assert_string_equal(p.log_file, "/var/log/nshash.log");
	assert_false(p.syslog);
	assert_string_equal(p.source, "/etc/nshash/nshash.json");
	assert_int_equal(parse("{}", &p, &e), 0);
	assert_int_equal(p.max.tcp, 262144);
	assert_int_equal(parse("{\"maxTcp\": 0}", &p, &e), 0);
	assert_int_equal(p.max.tcp, 0);
}

/* staleAge has a floor: a pin just handed to a runtime is never an orphan
 * before it (0 used to make every fresh unheld pin one). */
static void test_stale_age_floor(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	nsh_policy_defaults(&p);
	assert_int_equal(p.stale_age, 60);
	assert_int_equal(NSHASH_STALE_AGE_MIN, 60);
	assert_int_equal(parse("{\"staleAge\": 0}", &p, &e), 0);
	assert_int_equal(p.stale_age, NSHASH_STALE_AGE_MIN);
	assert_int_equal(parse("{\"staleAge\": 59}", &p, &e), 0);
	assert_int_equal(p.stale_age, NSHASH_STALE_AGE_MIN);
	assert_int_equal(parse("{\"staleAge\": 61}", &p, &e), 0);
	assert_int_equal(p.stale_age, 61);
	assert_error("{\"staleAge\": -1}", "staleAge");
}

/* The spares' node-wide bounds: defaults, values, what reaches the engine. */
static void test_spare_bounds(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	assert_int_equal(parse("{}", &p, &e), 0);
	assert_int_equal(p.max_spares, 16);
	assert_true(p.max_spare_bytes == 32u << 20);
	assert_int_equal(p.spare_max_idle, 600);
	assert_int_equal(parse("{\"maxSpares\": 3, \"maxSpareBytes\": 200000, \"spareMaxIdle\": 2}", &p, &e), 0);
	struct nshash_create_opts o = nsh_policy_create_opts(&p, (struct nshash_sizes){4096, 1024});
	assert_int_equal(o.max_spares, 3);
	assert_true(o.max_spare_bytes == 200000);
	assert_int_equal(o.spare_max_idle, 2);
	assert_error("{\"maxSpares\": 0}",
		     "key \"maxSpares\": 0 is out of range 1..4096 (for no spares at all set \"spares\": 0)");
	assert_error("{\"maxSpares\": 4097}", "key \"maxSpares\": 4097 is out of range (0..4096)");
	assert_error("{\"maxSpareBytes\": 0}", "key \"maxSpareBytes\": 0 is out of range");
	assert_error("{\"spareMaxIdle\": 0}", "key \"spareMaxIdle\": 0 is out of range 1..31536000 (seconds)");
	assert_error("{\"spareMaxIdle\": \"600\"}", "key \"spareMaxIdle\": expected an integer");
}

/* defaultTcp/defaultUdp: 0 (shared) unless set, within the caps whatever
 * the order of the keys, the error naming the key. */
static void test_default_sizes(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	nsh_policy_defaults(&p);
	assert_int_equal(p.defaults.tcp, 0);
	assert_int_equal(p.defaults.udp, 0);
	assert_false(nsh_policy_has_defaults(&p));
	assert_int_equal(parse("{\"defaultTcp\": 4096, \"defaultUdp\": 1024}", &p, &e), 0);
	assert_int_equal(p.defaults.tcp, 4096);
	assert_int_equal(p.defaults.udp, 1024);
	assert_true(nsh_policy_has_defaults(&p));
	assert_int_equal(parse("{\"defaultUdp\": 512}", &p, &e), 0);
	assert_int_equal(p.defaults.tcp, 0);
	assert_int_equal(p.defaults.udp, 512);
	assert_true(nsh_policy_has_defaults(&p));
	/* the cap after the default, or a default that the kernel rounds up to it */
	assert_int_equal(parse("{\"defaultTcp\": 3000, \"maxTcp\": 4096}", &p, &e), 0);
	assert_int_equal(p.defaults.tcp, 3000);
	assert_error("{\"defaultTcp\": 8192, \"maxTcp\": 4096}",
		     "/etc/nshash/nshash.json: key \"defaultTcp\": 8192 (effective 8192) is above maxTcp 4096: lower "
		     "defaultTcp or raise maxTcp");
	assert_error("{\"maxTcp\": 4096, \"defaultTcp\": 4097}",
		     "key \"defaultTcp\": 4097 (effective 8192) is above maxTcp 4096");
	assert_int_equal(parse("{\"maxUdp\": 128, \"defaultUdp\": 100}", &p, &e), 0);
	assert_error("{\"maxUdp\": 64, \"defaultUdp\": 100}",
		     "key \"defaultUdp\": 100 (effective 128) is above maxUdp 64");
	assert_error("{\"maxTcp\": 0, \"defaultTcp\": 1}", "key \"defaultTcp\": 1 (effective 1) is above maxTcp 0");
	assert_error("{\"defaultTcp\": 300000}",
		     "key \"defaultTcp\": 300000 (effective 524288) is above maxTcp 262144");
	assert_error("{\"defaultTcp\": \"4096\"}", "key \"defaultTcp\": expected an integer (0..16777216)");
	assert_error("{\"defaultUdp\": -1}",
		     "defaultUdp: -1 is out of range (udp sizes are 0..65536, 0 = shared table)");
}

static void test_errors(void **state)
{
	(void)state;
	assert_error("{\n  \"maxTcp\": 4096,\n  \"maxUdp\": ,\n}",
		     "/etc/nshash/nshash.json: malformed JSON at line 3 column");
	assert_error("{\"maxTcp\": 4096", "malformed JSON at line 1 column 16: unexpected end of input");
	assert_error("", "malformed JSON: empty input");
	assert_error("{} {}", "trailing data after the document");
	assert_error("[]", "expected a JSON object at the top level");
	assert_error("{\"maxTCP\": 4096}", "unknown key \"maxTCP\"");
	assert_error("{\"maxTcp\": \"4096\"}", "key \"maxTcp\": expected an integer (0..16777216)");
	assert_error("{\"maxTcp\": 4096.5}", "key \"maxTcp\": expected an integer");
	assert_error("{\"maxTcp\": -1}", "maxTcp");
	assert_error("{\"maxTcp\": 16777217}", "maxTcp");
	assert_error("{\"maxUdp\": 65537}", "maxUdp");
	assert_error("{\"onFailure\": \"ignore\"}", "key \"onFailure\": expected \"fail\" or \"warn\", got \"ignore\"");
	assert_error("{\"stateDir\": \"run/x\"}", "key \"stateDir\": \"run/x\" is not an absolute path");
	assert_error("{\"stateDir\": \"/run/../etc\"}", "key \"stateDir\": \"/run/../etc\" contains \"..\"");
	assert_error("{\"stateDir\": 5}", "key \"stateDir\": expected a string");
	assert_error("{\"runtime\": \"bin/runc\"}", "key \"runtime\": \"bin/runc\" must be a name or an absolute path");
	assert_error("{\"syslog\": \"yes\"}", "key \"syslog\": expected true or false");
	assert_error("{\"strategy\": \"fast\"}", "key \"strategy\"");
}

static void test_load(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	char dir[] = "/tmp/nshash-policy-XXXXXX", path[64];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/nshash.json", dir);
	/* missing file: documented defaults */
	assert_int_equal(nsh_policy_load(path, &p, &e), 0);
	assert_int_equal(p.max.tcp, 262144);
	assert_non_null(strstr(p.source, "absent"));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"maxUdp\": 2048}\n", f);
	fclose(f);
	assert_int_equal(nsh_policy_load(path, &p, &e), 0);
	assert_int_equal(p.max.udp, 2048);
	assert_string_equal(p.source, path);
	f = fopen(path, "w");
	fputs("{\"maxUdp\": 2048,,}\n", f);
	fclose(f);
	assert_true(nsh_policy_load(path, &p, &e) < 0);
	assert_non_null(strstr(e.msg, path));
	assert_non_null(strstr(e.msg, "line 1 column"));
	assert_true(nsh_policy_load("relative.json", &p, &e) < 0);
	assert_non_null(strstr(e.msg, "not an absolute path"));
	unlink(path);
	rmdir(dir);
}

/* One sizing request (common/sizing.c): per protocol, the first source in
 * the order annotation, runtime option, network, default that names it. */
static void test_decide(void **state)
{
	(void)state;
	struct nsh_said ann = {.said = {true, false}, .size = {0, 0}};	  /* io.nshash.tcp=0 */
	struct nsh_said run = {.said = {false, true}, .is_auto = {false, true}}; /* --nshash-udp=auto */
	struct nsh_said net = {.said = {true, true}, .size = {2048, 256}};
	struct nsh_said def = {.said = {true, true}, .size = {4096, 1024}};
	const struct nsh_said *by[NSH_SRC_COUNT] = {[NSH_SRC_DEFAULT] = &def};
	struct nsh_decision d;

	nsh_decide(by, &d);
	assert_int_equal(d.sizes.tcp, 4096);
	assert_int_equal(d.sizes.udp, 1024);
	assert_true(nsh_decision_asks_only_from(&d, NSH_SRC_DEFAULT));
	by[NSH_SRC_ANNOTATION] = &ann;
	nsh_decide(by, &d);
	/* tcp=0 opts out of TCP only */
	assert_int_equal(d.sizes.tcp, 0);
	assert_int_equal(d.sizes.udp, 1024);
	assert_int_equal(d.src[0], NSH_SRC_ANNOTATION);
	assert_int_equal(d.src[1], NSH_SRC_DEFAULT);
	assert_true(nsh_decision_asks_only_from(&d, NSH_SRC_DEFAULT)); /* tcp decided 0 asks nothing */
	assert_true(nsh_decision_any_from(&d, NSH_SRC_ANNOTATION));
	by[NSH_SRC_NETWORK] = &net;
	by[NSH_SRC_RUNTIME] = &run;
	nsh_decide(by, &d);
	assert_int_equal(d.sizes.tcp, 0);
	assert_int_equal(d.src[1], NSH_SRC_RUNTIME);
	assert_true(d.is_auto[1]);
	assert_int_equal(d.sizes.udp, 0); /* auto: resolved later */
	assert_false(nsh_decision_asks_only_from(&d, NSH_SRC_DEFAULT));
	by[NSH_SRC_ANNOTATION] = by[NSH_SRC_RUNTIME] = NULL;
	nsh_decide(by, &d);
	assert_int_equal(d.sizes.tcp, 2048);
	assert_int_equal(d.sizes.udp, 256);
	assert_int_equal(d.src[0], NSH_SRC_NETWORK);
	/* nobody: shared, nothing decided */
	const struct nsh_said *none[NSH_SRC_COUNT] = {0};
	nsh_decide(none, &d);
	assert_false(nsh_decision_decided(&d));
	assert_false(nsh_decision_asks_only_from(&d, NSH_SRC_DEFAULT));
	/* the cap names the source of the protocol over it */
	static const char *const names[NSH_SRC_COUNT] = {[NSH_SRC_ANNOTATION] = "annotations",
							 [NSH_SRC_DEFAULT] = "defaults"};
	struct nshash_error err = {0};
	by[NSH_SRC_ANNOTATION] = &(struct nsh_said){.said = {true, false}, .size = {8192, 0}};
	by[NSH_SRC_NETWORK] = NULL;
	nsh_decide(by, &d);
	assert_int_equal(nsh_decision_cap(&d, (struct nshash_sizes){8192, 512}, names, &err), -EPERM);
	assert_string_equal(err.msg, "defaults: udp size 1024 (effective 1024) is above the allowed maximum 512 (maxUdp)");
	assert_int_equal(nsh_decision_cap(&d, (struct nshash_sizes){4096, 1024}, names, &err), -EPERM);
	assert_string_equal(err.msg,
			    "annotations: tcp size 8192 (effective 8192) is above the allowed maximum 4096 (maxTcp)");
	assert_int_equal(nsh_decision_cap(&d, (struct nshash_sizes){8192, 1024}, names, &err), 0);
	char buf[128];
	assert_string_equal(nsh_decision_text(&d, names, buf, sizeof(buf)), "tcp: annotations, udp: defaults");
	/* the policy's defaults as a source: a 0 names nothing */
	struct nsh_policy p;
	nsh_policy_defaults(&p);
	p.defaults = (struct nshash_sizes){0, 1024};
	struct nsh_said ps;
	nsh_said_policy_defaults(&p, &ps);
	assert_false(ps.said[0]);
	assert_true(ps.said[1]);
	p.defaults_auto.tcp = true;
	nsh_said_policy_defaults(&p, &ps);
	assert_true(ps.said[0] && ps.is_auto[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_all_keys),
	    cmocka_unit_test(test_stale_age_floor),
	    cmocka_unit_test(test_spare_bounds),
	    cmocka_unit_test(test_default_sizes),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
