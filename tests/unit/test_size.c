/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Request parsing, the kernel's rounding, caps and name/path validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nshash.h"

static void parse_ok(enum nshash_proto proto, const char *text, uint32_t want)
{
	struct nshash_error err = {0};
	uint32_t v = 12345;
	int r = nshash_size_parse(proto, "key", text, &v, &err);
	if (r != 0)
		fail_msg("\"%s\" refused: %s", text, err.msg);
	assert_int_equal(v, want);
}

static void parse_bad(enum nshash_proto proto, const char *text, int want_errno, const char *fragment)
{
	struct nshash_error err = {0};
	uint32_t v = 777;
	int r = nshash_size_parse(proto, "io.nshash.tcp", text, &v, &err);
	if (r == 0)
		fail_msg("\"%s\" accepted as %u", text, v);
	assert_int_equal(r, -want_errno);
	assert_int_equal(err.errnum, want_errno);
	assert_int_equal(v, 777); /* output untouched on error */
	if (!strstr(err.msg, fragment))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, fragment);
	assert_non_null(strstr(err.msg, "io.nshash.tcp")); /* names the key */
}

static void test_parse_tcp_boundaries(void **state)
{
	(void)state;
	parse_ok(NSHASH_TCP, "0", 0);
	parse_ok(NSHASH_TCP, "1", 1);
	parse_ok(NSHASH_TCP, "127", 127);
	parse_ok(NSHASH_TCP, "128", 128);
	parse_ok(NSHASH_TCP, "129", 129);
	parse_ok(NSHASH_TCP, "65536", 65536);
	parse_ok(NSHASH_TCP, "16777216", 16777216);
	parse_ok(NSHASH_TCP, "0100", 100); /* decimal, never octal (the kernel would say 64) */
	parse_bad(NSHASH_TCP, "16777217", ERANGE, "\"16777217\" is out of range (tcp sizes are 0..16777216");
	parse_bad(NSHASH_TCP, "18446744073709551616", ERANGE, "out of range");
	parse_bad(NSHASH_TCP, "99999999999999999999999999", ERANGE, "out of range");
}

static void test_parse_udp_boundaries(void **state)
{
	(void)state;
	parse_ok(NSHASH_UDP, "0", 0);
	parse_ok(NSHASH_UDP, "1", 1);
	parse_ok(NSHASH_UDP, "127", 127);
	parse_ok(NSHASH_UDP, "128", 128);
	parse_ok(NSHASH_UDP, "129", 129);
	parse_ok(NSHASH_UDP, "65536", 65536);
	parse_bad(NSHASH_UDP, "65537", ERANGE, "\"65537\" is out of range (udp sizes are 0..65536");
	parse_bad(NSHASH_UDP, "16777216", ERANGE, "out of range");
}

static void test_parse_garbage(void **state)
{
	(void)state;
	parse_bad(NSHASH_TCP, "-1", EINVAL, "\"-1\" is not a decimal number");
	parse_bad(NSHASH_TCP, "+5", EINVAL, "\"+5\" is not a decimal number");
	parse_bad(NSHASH_TCP, "0x10", EINVAL, "\"0x10\" is not a decimal number");
	parse_bad(NSHASH_TCP, " 12", EINVAL, "\" 12\" is not a decimal number");
	parse_bad(NSHASH_TCP, "12 ", EINVAL, "\"12 \" is not a decimal number");
	parse_bad(NSHASH_TCP, "256 512", EINVAL, "not a decimal number");
	parse_bad(NSHASH_TCP, "128abc", EINVAL, "\"128abc\" is not a decimal number");
	parse_bad(NSHASH_TCP, "12\n", EINVAL, "\"12\\x0a\" is not a decimal number");
	parse_bad(NSHASH_TCP, "1e3", EINVAL, "not a decimal number");
	parse_bad(NSHASH_TCP, "", EINVAL, "empty value");
	struct nshash_error err = {0};
	uint32_t v;
	assert_int_equal(nshash_size_parse(NSHASH_TCP, "k", NULL, &v, &err), -EINVAL);
	/* Long input is cut in the message, not copied whole. */
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(nshash_size_parse(NSHASH_TCP, "k", big, &v, &err), -EINVAL);
	assert_true(strlen(err.msg) < 150);
	assert_non_null(strstr(err.msg, "..."));
}

static void test_size_check_typed(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	uint32_t v = 0;
	assert_int_equal(nshash_size_check(NSHASH_TCP, "tcp", 4096, &v, &err), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(nshash_size_check(NSHASH_TCP, "tcp", -1, &v, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "tcp: -1 is out of range"));
	assert_int_equal(nshash_size_check(NSHASH_UDP, "udp", 65537, &v, &err), -ERANGE);
	assert_int_equal(nshash_size_check(NSHASH_UDP, "udp", INT64_MAX, &v, &err), -ERANGE);
}

static void test_effective(void **state)
{
	(void)state;
	static const struct {
		enum nshash_proto p;
		uint32_t in, out;
	} cases[] = {
	    {NSHASH_TCP, 0, 0},
	    {NSHASH_TCP, 1, 1},
	    {NSHASH_TCP, 2, 2},
	    {NSHASH_TCP, 3, 4},
	    {NSHASH_TCP, 100, 128},
	    {NSHASH_TCP, 127, 128},
	    {NSHASH_TCP, 128, 128},
	    {NSHASH_TCP, 129, 256},
	    {NSHASH_TCP, 3000, 4096},
	    {NSHASH_TCP, 16777216, 16777216},
	    {NSHASH_TCP, 8388609, 16777216},
	    {NSHASH_UDP, 0, 0},
	    {NSHASH_UDP, 1, 128},
	    {NSHASH_UDP, 127, 128},
	    {NSHASH_UDP, 128, 128},
	    {NSHASH_UDP, 129, 256},
	    {NSHASH_UDP, 1000, 1024},
	    {NSHASH_UDP, 65536, 65536},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t got = nshash_size_effective(cases[i].p, cases[i].in);
		if (got != cases[i].out)
			fail_msg("%s %u -> %u, expected %u", nshash_proto_name(cases[i].p), cases[i].in, got,
				 cases[i].out);
	}
	struct nshash_sizes e = nshash_sizes_effective((struct nshash_sizes){100, 1});
	assert_int_equal(e.tcp, 128);
	assert_int_equal(e.udp, 128);
	assert_int_equal(nshash_table_bytes(NSHASH_TCP, 4096), 32768);
	assert_int_equal(nshash_table_bytes(NSHASH_UDP, 4096), 262144);
	assert_int_equal(nshash_table_bytes(NSHASH_TCP, 16777216), 128u << 20);
}

static void test_caps(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	struct nshash_sizes cap = {65536, 16384};
	assert_int_equal(nshash_sizes_cap((struct nshash_sizes){65536, 16384}, cap, "annotation", &err), 0);
	/* 40000 rounds to 65536: within the cap. */
	assert_int_equal(nshash_sizes_cap((struct nshash_sizes){40000, 0}, cap, "annotation", &err), 0);
	assert_int_equal(nshash_sizes_cap((struct nshash_sizes){65537, 0}, cap, "annotation", &err), -EPERM);
	assert_non_null(strstr(
	    err.msg, "annotation: tcp size 65537 (effective 131072) is above the allowed maximum 65536 (maxTcp)"));
	assert_int_equal(nshash_sizes_cap((struct nshash_sizes){0, 20000}, cap, "pod", &err), -EPERM);
	assert_non_null(
	    strstr(err.msg, "udp size 20000 (effective 32768) is above the allowed maximum 16384 (maxUdp)"));
}

static void test_verify_messages(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	struct nshash_netns_info own = {.tcp_entries = 4096, .udp_entries = 1024};
	assert_int_equal(nshash_verify(&own, (struct nshash_sizes){3000, 1000}, "x", &err), 0);
	struct nshash_netns_info fallback = {.tcp_entries = -262144, .udp_entries = -16384};
	assert_int_equal(nshash_verify(&fallback, (struct nshash_sizes){16777216, 0}, "netns /run/netns/a", &err),
			 -NSHASH_E_FALLBACK);
	assert_string_equal(err.msg, "netns /run/netns/a: tcp size 16777216 requested (effective 16777216), kernel "
				     "gave the shared table (262144) (allocation failed?)");
	assert_int_equal(nshash_verify(&own, (struct nshash_sizes){8192, 1024}, "y", &err), -NSHASH_E_MISMATCH);
	assert_string_equal(err.msg, "y: tcp size 8192 requested (effective 8192), has own table of 4096");
	assert_int_equal(nshash_verify(&own, (struct nshash_sizes){0, 1024}, "z", &err), -NSHASH_E_MISMATCH);
	assert_string_equal(err.msg, "z: tcp should share the global table, but has own table of 4096");
	assert_int_equal(nshash_verify(&fallback, (struct nshash_sizes){0, 0}, "plain", &err), 0);
}

static void test_names_and_paths(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	char out[4096];
	assert_int_equal(nshash_pin_resolve("web-1_a.b", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/run/netns/web-1_a.b");
	assert_int_equal(nshash_pin_resolve("/var/run/netns/cni-1234", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/var/run/netns/cni-1234");
	static const struct {
		const char *in, *frag;
	} bad[] = {
	    {"", "empty"},
	    {".", "not a valid name"},
	    {"..", "not a valid name"},
	    {"a/b", "character '/' 0x2f not allowed"},
	    {"a b", "character 0x20 not allowed"},
	    {"x\x01", "character 0x01 not allowed"},
	    {"/run/netns/../etc/passwd", "contains a \".\" or \"..\" component"},
	    {"/run/netns/./x", "contains a \".\" or \"..\" component"},
	    {"/run/netns/x/..", "contains a \".\" or \"..\" component"},
	    {"/run//netns/x", "contains \"//\""},
	    {"/run/netns/", "ends with '/'"},
	    {"/", "not a pin file"},
	    {"/tmp/\x1b[31m", "control character"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = nshash_pin_resolve(bad[i].in, out, sizeof(out), &err);
		if (r == 0)
			fail_msg("\"%s\" accepted", bad[i].in);
		if (!strstr(err.msg, bad[i].frag))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].in, err.msg, bad[i].frag);
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(nshash_pin_resolve(longname, out, sizeof(out), &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "longer than 255 characters"));
	char longpath[5000];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(nshash_pin_resolve(longpath, out, sizeof(out), &err), -ENAMETOOLONG);
	assert_int_equal(nshash_name_check("container id", "../../etc", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "container id \"../../etc\": character '/' 0x2f not allowed"));
}

static void test_strategy_and_errors(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	enum nshash_strategy s;
	assert_int_equal(nshash_strategy_parse("nested", &s, &err), 0);
	assert_int_equal(s, NSHASH_STRATEGY_NESTED);
	assert_int_equal(nshash_strategy_parse("template", &s, &err), 0);
	assert_int_equal(s, NSHASH_STRATEGY_TEMPLATE);
	assert_int_equal(nshash_strategy_parse("fast", &s, &err), -EINVAL);
	assert_string_equal(err.msg, "strategy \"fast\": expected template or nested");
	assert_int_equal(nshash_error_set(&err, EIO, "read %s", "x"), -EIO);
	assert_int_equal(nshash_error_prefix(&err, "outer %d", 1), -EIO);
	assert_string_equal(err.msg, "outer 1: read x");
	assert_int_equal(err.errnum, EIO);
	/* A prefix never overflows the buffer. */
	char big[2000];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	nshash_error_set(&err, EIO, "%s", big);
	nshash_error_prefix(&err, "p");
	assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
	assert_memory_equal(err.msg, "p: yyy", 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_tcp_boundaries),
	    cmocka_unit_test(test_parse_udp_boundaries),
	    cmocka_unit_test(test_parse_garbage),
	    cmocka_unit_test(test_size_check_typed),
	    cmocka_unit_test(test_effective),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_verify_messages),
	    cmocka_unit_test(test_names_and_paths),
	    cmocka_unit_test(test_strategy_and_errors),
	};
	return cmocka_run_group_tests_name("size", tests, NULL, NULL);
}
