// SPDX-License-Identifier: LGPL-2.1-or-later
/* Hostile input to the parsers (issue 10): buffers that are not
 * NUL-terminated (read with a guard page right after the last byte, so an
 * over-read crashes even without ASan), \u0000 in JSON strings and keys,
 * the exact size limits, and the messages for odd but valid JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni.h"
#include "hook.h"

/* `len` bytes of `text` placed so that the byte after the last one is on a
 * PROT_NONE page: reading past `len` faults. */
struct guarded {
	char *map;
	size_t map_len;
	char *buf;
};

static struct guarded guard(const char *text, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t data_pages = (len + (size_t)page - 1) / (size_t)page + 1;
	struct guarded g;
	g.map_len = (data_pages + 1) * (size_t)page;
	g.map = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g.map != MAP_FAILED);
	assert_int_equal(mprotect(g.map + data_pages * (size_t)page, (size_t)page, PROT_NONE), 0);
	g.buf = g.map + data_pages * (size_t)page - len;
	memcpy(g.buf, text, len);
	return g;
}

static void unguard(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

#define assert_msg_contains(msg, fragment)                                                                             \
	do {                                                                                                           \
		if (!strstr((msg), (fragment)))                                                                        \
			fail_msg("message \"%s\" lacks \"%s\"", (msg), (fragment));                                    \
	} while (0)

/* Every public parser that takes (buf, len), on inputs whose next byte is
 * unreadable.  None may read it; each returns a clean error or success. */
static void parse_all_guarded(const char *text, size_t len)
{
	struct guarded g = guard(text, len);
	struct nshash_error e = {0};
	struct nsh_policy p;
	struct nsh_oci_request rq;
	struct nsh_oci_state st;
	struct nsh_oci_result res;
	struct nsh_cni_config cfg;
	struct nsh_cni_failure ce;
	char *out = NULL;
	size_t out_len = 0;

	nsh_policy_defaults(&p);
	nsh_policy_parse(g.buf, len, "guarded", &p, &e);
	nsh_oci_request_parse(g.buf, len, &rq, &e);
	nsh_oci_state_parse(g.buf, len, &st, &e);
	struct nsh_oci_opts opts = {.mode = NSH_OCI_PRECREATE, .policy = &p};
	nsh_policy_defaults(&p);
	if (nsh_oci_transform(g.buf, len, &opts, &out, &out_len, &res, &e) == 0)
		free(out);
	nsh_cni_config_parse(g.buf, len, &cfg, &ce);
	nsh_cni_config_free(&cfg);
	unguard(&g);
}

static void test_no_over_read(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t len;
	} inputs[] = {
	    {"\x01{}", 3},
	    {"  ", 2},
	    {" \t\r\n", 4},
	    {"{}  ", 4},
	    {"{} ", 3},
	    {"{", 1},
	    {"\"", 1},
	    {"{\"a\":", 5},
	    {"42", 2},
	    {"null", 4},
	    {"{\"annotations\": {}}   ", 22},
	};
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
		parse_all_guarded(inputs[i].text, inputs[i].len);
}

/* (buf, len) is the document, whatever follows in memory. */
static void test_len_shorter_than_string(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	/* "{} " then garbage past len: the document is complete and clean */
	assert_int_equal(nsh_policy_parse("{} x", 3, "p", &p, &e), 0);
	assert_int_equal(nsh_policy_parse("{}   ", 3, "p", &p, &e), 0);
	/* only blanks within len: empty input, whatever follows */
	assert_true(nsh_policy_parse("   {}", 3, "p", &p, &e) < 0);
	assert_string_equal(e.msg, "p: malformed JSON: empty input");
	assert_true(nsh_policy_parse(" \n x", 3, "p", &p, &e) < 0);
	assert_string_equal(e.msg, "p: malformed JSON: empty input");
}

/* \u0000 is refused in values and in keys (json-c would cut a key at the
 * NUL: "io.nshash.tcp\u0000x" would read as io.nshash.tcp). */
static void test_nul_escape(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error e = {0};
	struct nsh_oci_request rq;
	struct nsh_oci_state st;
	const char *pol = "{\"maxTcp\\u0000x\": 4096}";
	assert_true(nsh_policy_parse(pol, strlen(pol), "p", &p, &e) < 0);
	assert_string_equal(e.msg, "p: malformed JSON at line 1 column 9: \\u0000 (a NUL character) in a string");
	pol = "{\"_note\": \"a\\u0000b\"}";
	assert_true(nsh_policy_parse(pol, strlen(pol), "p", &p, &e) < 0);
	assert_string_equal(e.msg, "p: malformed JSON at line 1 column 13: \\u0000 (a NUL character) in a string");
	/* an escaped backslash followed by u0000 is text, not a NUL */
	pol = "{\"_note\": \"a\\\\u0000b\", \"maxTcp\": 8}";
	assert_int_equal(nsh_policy_parse(pol, strlen(pol), "p", &p, &e), 0);
	assert_int_equal(p.max.tcp, 8);
	/* upper-case hex is the same character */
	pol = "{\"maxTcp\\U0000\": 1, \"maxUdp\\u0000\": 1}";
	assert_true(nsh_policy_parse(pol, strlen(pol), "p", &p, &e) < 0);

	const char *cfg = "{\"annotations\": {\"io.nshash.tcp\\u0000x\": \"4096\"}}";
	assert_true(nsh_oci_request_parse(cfg, strlen(cfg), &rq, &e) < 0);
	assert_msg_contains(e.msg, "\\u0000 (a NUL character) in a string");
	cfg = "{\"annotations\": {\"io.nshash.tcp\": \"4096\\u0000garbage\"}}";
	assert_true(nsh_oci_request_parse(cfg, strlen(cfg), &rq, &e) < 0);
	assert_msg_contains(e.msg, "\\u0000 (a NUL character) in a string");
	cfg = "{\"id\": \"c1\", \"pid\": 1, \"annotations\": {\"io.nshash.udp\\u0000\": \"128\"}}";
	assert_true(nsh_oci_state_parse(cfg, strlen(cfg), &st, &e) < 0);
	assert_msg_contains(e.msg, "state: malformed JSON at line 1 column 54: \\u0000 (a NUL character) in a string");

	struct nsh_cni_config c;
	struct nsh_cni_failure ce = {0};
	static const char *const cni[] = {
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"tcp\\u0000\": 4096}",
	    "{\"cniVersion\": \"1.0.0\\u0000x\", \"name\": \"n\"}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\\u0000\"}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"onFailure\": \"warn\\u0000\"}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"strategy\": \"nested\\u0000x\"}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"stateDir\": \"/run/x\\u0000/y\"}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"runtimeConfig\": {\"io.kubernetes.cri.pod-annotations\": "
	    "{\"io.nshash.tcp\": \"8192\\u0000garbage\"}}}",
	    "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"runtimeConfig\": {\"io.kubernetes.cri.pod-annotations\": "
	    "{\"io.nshash.tcp\\u0000x\": \"8192\"}}}",
	};
	for (size_t i = 0; i < sizeof(cni) / sizeof(cni[0]); i++) {
		int r = nsh_cni_config_parse(cni[i], strlen(cni[i]), &c, &ce);
		nsh_cni_config_free(&c);
		if (r == 0)
			fail_msg("accepted: %s", cni[i]);
		assert_int_equal(ce.code, NSH_CNI_E_DECODE);
		assert_msg_contains(ce.err.msg, "\\u0000 (a NUL character) in a string");
	}
}

/* Exactly the limit is allowed; one byte more is refused. */
static void test_read_limits(void **state)
{
	(void)state;
	for (size_t max = 4096; max <= 65536; max *= 16) {
		for (int extra = 0; extra <= 1; extra++) {
			int fd = memfd_create("limit", MFD_CLOEXEC);
			assert_true(fd >= 0);
			char *blob = malloc(max + 1);
			memset(blob, ' ', max + 1);
			assert_int_equal(write(fd, blob, max + (size_t)extra), (ssize_t)(max + (size_t)extra));
			free(blob);
			lseek(fd, 0, SEEK_SET);
			char *out = NULL;
			size_t len = 0;
			struct nshash_error e = {0};
			int r = nsh_read_fd(fd, "blob", max, &out, &len, &e);
			close(fd);
			if (extra) {
				assert_true(r < 0);
				char want[128];
				snprintf(want, sizeof(want), "read blob: larger than %zu bytes", max);
				assert_string_equal(e.msg, want);
			} else {
				if (r < 0)
					fail_msg("exactly %zu bytes refused: %s", max, e.msg);
				assert_int_equal(len, max);
				free(out);
			}
		}
	}
}

/* Policy stateDir: as strict as the CNI plugin's (no control characters,
 * no "//", no "." or ".." components, no trailing slash), named in the
 * message without a raw control character. */
static void test_policy_state_dir(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "/run/a//b", "/run/a/./b", "/run/a/", "/run/a\\u0001b", "/run/a\\nb", "//run",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];
		struct nsh_policy p;
		struct nshash_error e = {0};
		snprintf(text, sizeof(text), "{\"stateDir\": \"%s\"}", bad[i]);
		if (nsh_policy_parse(text, strlen(text), "p", &p, &e) == 0)
			fail_msg("stateDir %s accepted", bad[i]);
		assert_msg_contains(e.msg, "p: key \"stateDir\": \"");
		assert_null(strchr(e.msg, '\n'));
		assert_null(strchr(e.msg, '\x01'));
	}
	struct nsh_policy p;
	struct nshash_error e = {0};
	const char *ok = "{\"stateDir\": \"/run/nshash-x/y.z\"}";
	assert_int_equal(nsh_policy_parse(ok, strlen(ok), "p", &p, &e), 0);
	assert_string_equal(p.state_dir, "/run/nshash-x/y.z");
}

/* Valid JSON that is not an object: say what it is, not "truncated". */
static void test_cni_not_an_object(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"null", "decode network config: stdin holds null, expected a JSON object"},
	    {"42", "decode network config: stdin holds an integer, expected a JSON object"},
	    {"42\n", "decode network config: stdin holds an integer, expected a JSON object"},
	    {"true", "decode network config: stdin holds a boolean, expected a JSON object"},
	    {"\"x\"", "decode network config: stdin holds a string, expected a JSON object"},
	    {"1.5", "decode network config: stdin holds a fractional number, expected a JSON object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nsh_cni_config c;
		struct nsh_cni_failure ce = {0};
		assert_true(nsh_cni_config_parse(cases[i].text, strlen(cases[i].text), &c, &ce) < 0);
		nsh_cni_config_free(&c);
		assert_int_equal(ce.code, NSH_CNI_E_DECODE);
		assert_string_equal(ce.err.msg, cases[i].want);
	}
	/* a truncated document still says so */
	struct nsh_cni_config c;
	struct nsh_cni_failure ce = {0};
	assert_true(nsh_cni_config_parse("{\"cniVersion\": ", 15, &c, &ce) < 0);
	nsh_cni_config_free(&c);
	assert_msg_contains(ce.err.msg, "truncated JSON");
}

/* runtimeConfig null is treated like an absent one, as a null
 * pod-annotations map already is. */
static void test_cni_null_runtime_config(void **state)
{
	(void)state;
	struct nsh_cni_config c;
	struct nsh_cni_failure ce = {0};
	const char *t = "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"tcp\": 4096, \"runtimeConfig\": null}";
	if (nsh_cni_config_parse(t, strlen(t), &c, &ce) < 0)
		fail_msg("refused: %s", ce.err.msg);
	struct nshash_sizes req;
	bool from_ann;
	assert_int_equal(nsh_cni_request(&c, &req, &from_ann, &ce), 0);
	assert_int_equal(req.tcp, 4096);
	assert_false(from_ann);
	nsh_cni_config_free(&c);
	t = "{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"tcp\": 4096, \"runtimeConfig\": "
	    "{\"io.kubernetes.cri.pod-annotations\": null}}";
	assert_int_equal(nsh_cni_config_parse(t, strlen(t), &c, &ce), 0);
	nsh_cni_config_free(&c);
}

/* CNI_CONTAINERID and CNI_IFNAME follow the reference plugins' rules. */
static void test_cni_env_names(void **state)
{
	(void)state;
	static const struct {
		const char *id, *ifname, *want; /* want NULL = accepted */
	} cases[] = {
	    {"abc-1_2.3", "eth0", NULL},
	    {"0a", "net1@x", NULL},
	    {"../x", "eth0", "CNI_CONTAINERID=\"../x\": "},
	    {"-x", "eth0", "CNI_CONTAINERID=\"-x\": "},
	    {"a/b", "eth0", "CNI_CONTAINERID=\"a/b\": "},
	    {"a\nb", "eth0", "CNI_CONTAINERID=\"a\\x0ab\": "},
	    {"ab", "0123456789abcdef", "CNI_IFNAME=\"0123456789abcdef\": longer than 15 bytes"},
	    {"ab", ".", "CNI_IFNAME=\".\": "},
	    {"ab", "..", "CNI_IFNAME=\"..\": "},
	    {"ab", "eth/0", "CNI_IFNAME=\"eth/0\": "},
	    {"ab", "eth:0", "CNI_IFNAME=\"eth:0\": "},
	    {"ab", "eth 0", "CNI_IFNAME=\"eth 0\": "},
	    {"ab", "eth\t0", "CNI_IFNAME=\"eth\\x090\": "},
	    {"ab", "eth\xc2\xa0", "CNI_IFNAME="}, /* U+00A0, white space to Go's unicode.IsSpace */
	};
	static const char *const commands[] = {"ADD", "CHECK", "DEL"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t k = 0; k < 3; k++) {
			struct nsh_cni_env env = {.command = commands[k],
						     .containerid = cases[i].id,
						     .netns = "/run/netns/x",
						     .ifname = cases[i].ifname};
			enum nsh_cni_command cmd;
			struct nsh_cni_failure ce = {0};
			int r = nsh_cni_env_check(&env, &cmd, &ce);
			if (!cases[i].want) {
				if (r < 0)
					fail_msg("%s refused id %s ifname %s: %s", commands[k], cases[i].id,
						 cases[i].ifname, ce.err.msg);
				continue;
			}
			if (r == 0)
				fail_msg("%s accepted id \"%s\" ifname \"%s\"", commands[k], cases[i].id,
					 cases[i].ifname);
			assert_int_equal(ce.code, NSH_CNI_E_ENV);
			assert_msg_contains(ce.err.msg, cases[i].want);
			for (const char *m = ce.err.msg; *m; m++)
				if ((unsigned char)*m < 0x20)
					fail_msg("control character in \"%s\"", ce.err.msg);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_over_read),
	    cmocka_unit_test(test_len_shorter_than_string),
	    cmocka_unit_test(test_nul_escape),
	    cmocka_unit_test(test_read_limits),
	    cmocka_unit_test(test_policy_state_dir),
	    cmocka_unit_test(test_cni_not_an_object),
	    cmocka_unit_test(test_cni_null_runtime_config),
	    cmocka_unit_test(test_cni_env_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
