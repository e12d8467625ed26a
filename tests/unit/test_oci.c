/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI transform's unprivileged paths (validation, pass-through, refusals),
 * OCI state parsing, runc-style argv parsing and pin naming.  The paths that
 * create namespaces are covered by tests/integration/3*.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "oci.h"
#include "runtime.h"

static struct nshash_policy policy;

static int setup(void **state)
{
	(void)state;
	nshash_policy_defaults(&policy);
	snprintf(policy.state_dir, sizeof(policy.state_dir), "/nonexistent/nshash-unit");
	return 0;
}

#define CONFIG_WITH(ann, ns)                                                                                           \
	"{\"ociVersion\": \"1.0.2\", \"x-unknown\": {\"keep\": [1, 2.50, \"a/b\"]}, "                                  \
	"\"annotations\": {" ann "}, \"linux\": {\"namespaces\": [" ns "]}}"

static int transform(const char *config, char **out, struct nshash_oci_result *res, struct nshash_error *err)
{
	struct nshash_oci_opts opts = {.mode = NSHASH_OCI_PRECREATE, .policy = &policy};
	size_t len;
	return nshash_oci_transform(config, strlen(config), &opts, out, &len, res, err);
}

static void expect_refused(const char *config, const char *fragment)
{
	char *out = (char *)"untouched";
	struct nshash_oci_result res;
	struct nshash_error err = {0};
	int r = transform(config, &out, &res, &err);
	if (r >= 0)
		fail_msg("accepted: %s", config);
	assert_null(out);
	if (!strstr(err.msg, fragment))
		fail_msg("error \"%s\" lacks \"%s\"", err.msg, fragment);
}

static void test_passthrough(void **state)
{
	(void)state;
	const char *configs[] = {
	    CONFIG_WITH("\"org.example\": \"1\"", "{\"type\": \"network\"}"),
	    "{ \"ociVersion\" : \"1.0.2\",\n  \"weird\":   1e400 }\n",
	    CONFIG_WITH("\"io.nshash.tcp\": \"0\", \"io.nshash.udp\": \"0\"", ""),
	};
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		char *out;
		struct nshash_oci_result res;
		struct nshash_error err = {0};
		assert_int_equal(transform(configs[i], &out, &res, &err), 0);
		assert_int_equal(res.action, NSHASH_OCI_UNTOUCHED);
		assert_string_equal(out, configs[i]); /* byte for byte */
		free(out);
	}
}

static void test_bad_annotations(void **state)
{
	(void)state;
	const char *net = "{\"type\": \"network\"}";
	char buf[4096];
#define REFUSE(ann, frag)                                                                                              \
	do {                                                                                                           \
		snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "%s"), ann, net);                                         \
		expect_refused(buf, frag);                                                                             \
	} while (0)
	REFUSE("\"io.nshash.tcp\": \"abc\"", "io.nshash.tcp");
	REFUSE("\"io.nshash.tcp\": \"-1\"", "io.nshash.tcp");
	REFUSE("\"io.nshash.tcp\": \"99999999999999999999\"", "io.nshash.tcp");
	REFUSE("\"io.nshash.tcp\": \"16777217\"", "io.nshash.tcp");
	REFUSE("\"io.nshash.udp\": \"0x100\"", "io.nshash.udp");
	REFUSE("\"io.nshash.udp\": \"256 512\"", "io.nshash.udp");
	REFUSE("\"io.nshash.udp\": \"\"", "io.nshash.udp");
	REFUSE("\"io.nshash.tcp\": 4096", "annotation io.nshash.tcp: expected a string, got int");
	REFUSE("\"io.nshash.tpc\": \"4096\"",
	       "unknown annotation \"io.nshash.tpc\" (known: io.nshash.tcp, io.nshash.udp)");
	REFUSE("\"io.nshash.tcp\": \"4\\u0000096\"", "annotation io.nshash.tcp: value contains a NUL byte");
	/* above the default cap (262144 / 16384) */
	REFUSE("\"io.nshash.tcp\": \"1048576\"", "policy defaults");
	REFUSE("\"io.nshash.udp\": \"32768\"", "policy defaults");
	/* the pin annotation is ours, never the user's */
	REFUSE("\"io.nshash.pin\": \"x\"", "annotation io.nshash.pin is set by nshash itself");
	REFUSE("\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"../../etc\"", "io.nshash.pin");
	REFUSE("\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"a/b\"", "io.nshash.pin \"a/b\": character '/'");
	REFUSE("\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"victim\"",
	       "annotation io.nshash.pin=victim is set by nshash itself");
#undef REFUSE
	expect_refused("{\"annotations\": [1]}", "annotations: expected an object, got array");
	expect_refused("{\"annotations\": {\"io.nshash.tcp\": \"4096\"", "config: malformed JSON at line 1 column");
	expect_refused("[1,2]", "config: expected a JSON object, got array");
	expect_refused("", "config: malformed JSON: empty input");
}

static void test_cap_message(void **state)
{
	(void)state;
	struct nshash_policy saved = policy;
	policy.max.tcp = 4096;
	snprintf(policy.source, sizeof(policy.source), "/etc/nshash/test.json");
	expect_refused(CONFIG_WITH("\"io.nshash.tcp\": \"5000\"", "{\"type\": \"network\"}"),
		       "policy /etc/nshash/test.json");
	policy.max.tcp = 0;
	expect_refused(CONFIG_WITH("\"io.nshash.tcp\": \"1\"", "{\"type\": \"network\"}"), "tcp");
	policy = saved;
}

static void test_network_entry(void **state)
{
	(void)state;
	char *out;
	struct nshash_oci_result res;
	struct nshash_error err = {0};
	const char *ann = "\"io.nshash.tcp\": \"4096\", \"io.nshash.udp\": \"1024\"";
	char buf[2048];

	/* host network: no entry */
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"pid\"}"), ann);
	expect_refused(buf, "config has no network namespace entry (host network?)");
	expect_refused("{\"annotations\": {\"io.nshash.udp\": \"128\"}}", "no network namespace entry");
	/* an entry that already has a path: cannot resize, say what works */
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/run/netns/netns-1\"}"), ann);
	expect_refused(buf, "network namespace /run/netns/netns-1 already exists");
	expect_refused(buf, "--network none");
	expect_refused(buf, "nshash CNI plugin");
	expect_refused(buf, "nshash create NAME --tcp T --udp U");
	/* ... or only warn, per policy, leaving the config as it was */
	policy.on_failure = NSHASH_ON_FAILURE_WARN;
	assert_int_equal(transform(buf, &out, &res, &err), 0);
	assert_int_equal(res.action, NSHASH_OCI_WARNED);
	assert_string_equal(out, buf);
	assert_non_null(strstr(res.warning, "--network none"));
	assert_int_equal(res.request.sizes.tcp, 4096);
	assert_int_equal(res.request.sizes.udp, 1024);
	free(out);
	policy.on_failure = NSHASH_ON_FAILURE_FAIL;
}

static void test_request_parse(void **state)
{
	(void)state;
	struct nshash_oci_request req;
	struct nshash_error err = {0};
	const char *c = "{\"annotations\": {\"io.nshash.tcp\": \"3000\", \"other\": \"x\"}}";
	assert_int_equal(nshash_oci_request_parse(c, strlen(c), &req, &err), 0);
	assert_true(req.present);
	assert_int_equal(req.sizes.tcp, 3000);
	assert_int_equal(req.sizes.udp, 0);
	c = "{\"annotations\": null}";
	assert_int_equal(nshash_oci_request_parse(c, strlen(c), &req, &err), 0);
	assert_false(req.present);
}

static void test_state(void **state)
{
	(void)state;
	struct nshash_oci_state st;
	struct nshash_error err = {0};
	struct nshash_netns_info info;
	bool warned;
	const char *s =
	    "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":42,"
	    "\"bundle\":\"/nonexistent\",\"annotations\":{\"io.nshash.tcp\":\"4096\",\"io.nshash.pin\":\"p1\"}}";
	assert_int_equal(nshash_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_string_equal(st.id, "c1");
	assert_int_equal(st.pid, 42);
	assert_string_equal(st.status, "creating");
	assert_true(st.request.present);
	assert_int_equal(st.request.sizes.tcp, 4096);
	assert_string_equal(st.request.pin, "p1");

	/* verify without a pid */
	s = "{\"id\":\"c2\",\"status\":\"created\",\"annotations\":{\"io.nshash.tcp\":\"4096\"}}";
	assert_int_equal(nshash_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(st.pid, 0);
	assert_true(nshash_oci_verify(&st, &policy, &info, &warned, &err) < 0);
	assert_non_null(strstr(err.msg, "state of c2 has no pid: cannot verify"));
	/* nothing requested: nothing to verify */
	s = "{\"id\":\"c3\",\"pid\":1}";
	assert_int_equal(nshash_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(nshash_oci_verify(&st, &policy, &info, &warned, &err), 0);

	s = "{\"id\":\"c1\",\"pid\":\"42\"}";
	assert_true(nshash_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state of c1: \"pid\" is not a process id"));
	s = "{\"pid\":42}";
	assert_true(nshash_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state: no container \"id\""));
	s = "{\"id\":\"c1\",";
	assert_true(nshash_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state: malformed JSON at line 1 column"));
	s = "{\"id\":\"c1\",\"annotations\":{\"io.nshash.xyz\":\"1\"}}";
	assert_true(nshash_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "unknown annotation \"io.nshash.xyz\""));
}

static void test_state_bundle(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-oci-XXXXXX", path[128], s[256];
	struct nshash_oci_state st;
	struct nshash_error err = {0};

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	fputs("{\"annotations\":{\"io.nshash.udp\":\"1024\",\"io.nshash.pin\":\"oci-1\"}}", f);
	fclose(f);
	/* podman's poststop state: its own annotations, no pid, no pin */
	snprintf(s, sizeof(s),
		 "{\"id\":\"c1\",\"status\":\"stopped\",\"bundle\":\"%s\","
		 "\"annotations\":{\"io.nshash.udp\":\"1024\"}}",
		 dir);
	assert_int_equal(nshash_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_string_equal(st.request.pin, "oci-1");
	/* no annotations at all: the bundle's */
	snprintf(s, sizeof(s), "{\"id\":\"c1\",\"pid\":7,\"bundle\":\"%s\"}", dir);
	assert_int_equal(nshash_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(st.request.sizes.udp, 1024);
	unlink(path);
	rmdir(dir);
}

/* What an older nshash-runtime left in a bundle, and only that, goes. */
static void test_heal(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	char *out, what[600];
	size_t len;
	const char *old = "{\"annotations\":{\"io.nshash.tcp\":\"4096\",\"io.nshash.pin\":\"c1-00ab\",\"x\":\"y\"},"
			  "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":"
			  "\"/nonexistent/nshash-unit/pins/c1-00ab\"}]},\"hooks\":{\"createRuntime\":[{\"path\":"
			  "\"/usr/bin/nshash-hook\",\"args\":[\"/usr/bin/nshash-hook\",\"createRuntime\",\"--policy\","
			  "\"/p.json\"]}],\"poststop\":[{\"path\":\"/bin/mine\",\"args\":[\"/bin/mine\",\"poststop\"]},"
			  "{\"path\":\"/usr/bin/nshash-hook\",\"args\":[\"/usr/bin/nshash-hook\",\"poststop\"]}]},"
			  "\"f\":2.50}";

	assert_int_equal(nsh_oci_heal(old, strlen(old), &policy, &out, &len, what, sizeof(what), &err), 1);
	assert_string_equal(out, "{\"annotations\":{\"io.nshash.tcp\":\"4096\",\"x\":\"y\"},\"linux\":{\"namespaces\":"
				 "[{\"type\":\"pid\"},{\"type\":\"network\"}]},\"hooks\":{\"poststop\":[{\"path\":"
				 "\"/bin/mine\",\"args\":[\"/bin/mine\",\"poststop\"]}]},\"f\":2.50}");
	assert_string_equal(what,
			    "io.nshash.pin=c1-00ab, network namespace path /nonexistent/nshash-unit/pins/c1-00ab, "
			    "2 nshash-hook entries");
	assert_int_equal(len, strlen(out));
	free(out);
	/* a dead path under pins/ alone; the emptied hooks object goes */
	const char *path_only = "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":"
				"\"/nonexistent/nshash-unit/pins/gone\"}]},\"hooks\":{\"poststop\":[{\"path\":"
				"\"/x/nshash-hook\",\"args\":[\"/x/nshash-hook\",\"poststop\"]}]}}";
	assert_int_equal(nsh_oci_heal(path_only, strlen(path_only), &policy, &out, &len, what, sizeof(what), &err), 1);
	assert_string_equal(out, "{\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}");
	free(out);
	/* nothing of nshash's: untouched (a path elsewhere, hooks without a dead pin, not JSON) */
	const char *keep[] = {
	    "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/run/netns/x\"}]}}",
	    "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/nonexistent/nshash-unit/pins/../x\"}]}}",
	    "{\"hooks\":{\"poststop\":[{\"path\":\"/x/nshash-hook\",\"args\":[\"/x/nshash-hook\",\"poststop\"]}]}}",
	    "{\"annotations\":{\"io.nshash.pin\":\"a/b\"}}",
	    "not json",
	    "[]",
	};
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		assert_int_equal(nsh_oci_heal(keep[i], strlen(keep[i]), &policy, &out, &len, what, sizeof(what), &err),
				 0);
		assert_null(out);
	}
}

static void test_args(void **state)
{
	(void)state;
	struct nshash_runtime_args a;
	struct nshash_error err = {0};
	char *v1[] = {"w",     "--root",      "/run/containerd/runc/default",
		      "--log", "/b/log.json", "--log-format",
		      "json",  "create",      "--bundle",
		      "/b",    "--pid-file",  "/b/init.pid",
		      "id1",   NULL};
	assert_int_equal(nshash_runtime_args_parse(13, v1, &a, &err), 0);
	assert_string_equal(a.subcommand, "create");
	assert_int_equal(a.subcommand_index, 7);
	assert_string_equal(a.root, "/run/containerd/runc/default");
	assert_string_equal(a.bundle, "/b");
	assert_string_equal(a.id, "id1");
	char *v2[] = {"w",   "--root=/r", "--systemd-cgroup", "run", "-d", "--bundle=/x", "--console-socket", "/s",
		      "id2", NULL};
	assert_int_equal(nshash_runtime_args_parse(9, v2, &a, &err), 0);
	assert_string_equal(a.root, "/r");
	assert_string_equal(a.subcommand, "run");
	assert_string_equal(a.bundle, "/x");
	assert_string_equal(a.id, "id2");
	assert_true(a.detach);
	char *c1[] = {"w", "create", "--config=/c.json", "--pid-file", "p", "id5", NULL};
	assert_int_equal(nshash_runtime_args_parse(6, c1, &a, &err), 0);
	assert_string_equal(a.config, "/c.json");
	assert_string_equal(a.pid_file, "p");
	assert_string_equal(a.id, "id5");
	char *c2[] = {"w", "run", "-f", "alt.json", "id6", NULL};
	assert_int_equal(nshash_runtime_args_parse(5, c2, &a, &err), 0);
	assert_string_equal(a.config, "alt.json");
	assert_null(a.pid_file);
	assert_false(a.force);
	char *c3[] = {"w", "delete", "-f", "id7", NULL};
	assert_int_equal(nshash_runtime_args_parse(4, c3, &a, &err), 0);
	assert_null(a.config);
	assert_true(a.force);
	char *v3[] = {"w", "create", "-b", "/y", "id3", NULL};
	assert_int_equal(nshash_runtime_args_parse(5, v3, &a, &err), 0);
	assert_string_equal(a.bundle, "/y");
	assert_null(a.root);
	char *v4[] = {"w", "-root", "/z", "create", "-bundle", "/q", "id4", NULL};
	assert_int_equal(nshash_runtime_args_parse(7, v4, &a, &err), 0);
	assert_string_equal(a.root, "/z");
	assert_string_equal(a.bundle, "/q");
	assert_string_equal(a.id, "id4");
	char *v5[] = {"w", "create", "id5", NULL}; /* bundle = cwd */
	assert_int_equal(nshash_runtime_args_parse(3, v5, &a, &err), 0);
	assert_null(a.bundle);
	assert_string_equal(a.id, "id5");
	char *v6[] = {"w", "delete", "--force", "id6", NULL};
	assert_int_equal(nshash_runtime_args_parse(4, v6, &a, &err), 0);
	assert_true(a.force);
	assert_string_equal(a.id, "id6");
	char *v7[] = {"w", "--version", NULL};
	assert_int_equal(nshash_runtime_args_parse(2, v7, &a, &err), 0);
	assert_null(a.subcommand);
	char *v8[] = {"w", "create", "--bundle", NULL};
	assert_true(nshash_runtime_args_parse(3, v8, &a, &err) < 0);
	assert_string_equal(err.msg, "create: option --bundle needs a value");
	char *v9[] = {"w", "--root", NULL};
	assert_true(nshash_runtime_args_parse(2, v9, &a, &err) < 0);
	assert_string_equal(err.msg, "option --root needs a value");
	char *v10[] = {"w", "state", "--bundle", "id", NULL}; /* not create: --bundle is not taken */
	assert_int_equal(nshash_runtime_args_parse(4, v10, &a, &err), 0);
	assert_null(a.bundle);
}

static void test_pin_names(void **state)
{
	(void)state;
	char name[300], path[4096], longid[300];
	struct nshash_error err = {0};

	assert_int_equal(nshash_oci_wrapper_pin_name("c1", "/run/containerd/runc/default", name, sizeof(name), &err),
			 0);
	char other[300];
	assert_int_equal(nshash_oci_wrapper_pin_name("c1", "/run/containerd/runc/k8s.io", other, sizeof(other), &err),
			 0);
	assert_string_not_equal(name, other); /* same id in two namespaces */
	assert_int_equal(strncmp(name, "c1-", 3), 0);
	assert_int_equal(strlen(name), 3 + 8);
	assert_true(nshash_oci_wrapper_pin_name("../x", NULL, name, sizeof(name), &err) < 0);
	assert_non_null(strstr(err.msg, "container id \"../x\": character '/'"));
	assert_true(nshash_oci_wrapper_pin_name("a/b", NULL, name, sizeof(name), &err) < 0);
	assert_true(nshash_oci_wrapper_pin_name("..", NULL, name, sizeof(name), &err) < 0);
	assert_true(nshash_oci_wrapper_pin_name("", NULL, name, sizeof(name), &err) < 0);
	memset(longid, 'a', 250);
	longid[250] = '\0';
	assert_true(nshash_oci_wrapper_pin_name(longid, NULL, name, sizeof(name), &err) < 0);
	assert_non_null(strstr(err.msg, "longer than 200 bytes"));
	assert_int_equal(nshash_oci_pin_path(&policy, "p1", path, sizeof(path), &err), 0);
	assert_string_equal(path, "/nonexistent/nshash-unit/pins/p1");
	assert_true(nshash_oci_pin_path(&policy, "../../etc/passwd", path, sizeof(path), &err) < 0);
	assert_true(nshash_oci_cleanup(&policy, "..", &err) < 0);
	/* an absent pin is not an error (poststop twice) */
	assert_int_equal(nshash_oci_cleanup(&policy, "gone", &err), 0);
}

static void test_runtime_find(void **state)
{
	(void)state;
	struct nshash_policy p = policy;
	struct nshash_error err = {0};
	char out[4096];

	snprintf(p.runtime, sizeof(p.runtime), "/nonexistent/runc");
	assert_true(nshash_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "runtime /nonexistent/runc"));
	snprintf(p.runtime, sizeof(p.runtime), "no-such-runtime-xyz");
	assert_true(nshash_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "runtime \"no-such-runtime-xyz\""));
	snprintf(p.runtime, sizeof(p.runtime), "sh");
	assert_int_equal(nshash_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "/sh"));
	/* never itself */
	snprintf(p.runtime, sizeof(p.runtime), "%.1000s", out);
	assert_true(nshash_runtime_find(&p, out, out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "is nshash-runtime itself"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_passthrough),	  cmocka_unit_test(test_bad_annotations),
	    cmocka_unit_test(test_cap_message),	  cmocka_unit_test(test_network_entry),
	    cmocka_unit_test(test_request_parse), cmocka_unit_test(test_state),
	    cmocka_unit_test(test_state_bundle),  cmocka_unit_test(test_heal),
	    cmocka_unit_test(test_args),	  cmocka_unit_test(test_pin_names),
	    cmocka_unit_test(test_runtime_find),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
