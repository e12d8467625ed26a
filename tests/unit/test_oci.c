/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI transform's unprivileged paths (validation, pass-through, refusals),
 * OCI state parsing, runc-style argv parsing and pin naming.  The paths that
 * create namespaces are covered by tests/integration/3*.sh. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hook.h"
#include "runtime.h"

static struct nsh_policy policy;

static int setup(void **state)
{
	(void)state;
	nsh_policy_defaults(&policy);
	snprintf(policy.state_dir, sizeof(policy.state_dir), "/nonexistent/nshash-unit");
	return 0;
}

#define CONFIG_WITH(ann, ns)                                                                                           \
	"{\"ociVersion\": \"1.0.2\", \"x-unknown\": {\"keep\": [1, 2.50, \"a/b\"]}, "                                  \
	"\"annotations\": {" ann "}, \"linux\": {\"namespaces\": [" ns "]}}"

static int transform(const char *config, char **out, struct nsh_oci_result *res, struct nshash_error *err)
{
	struct nsh_oci_opts opts = {.mode = NSH_OCI_PRECREATE, .policy = &policy};
	size_t len;
	return nsh_oci_transform(config, strlen(config), &opts, out, &len, res, err);
}

static void expect_refused(const char *config, const char *fragment)
{
	char *out = (char *)"untouched";
	struct nsh_oci_result res;
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
		struct nsh_oci_result res;
		struct nshash_error err = {0};
		assert_int_equal(transform(configs[i], &out, &res, &err), 0);
		assert_int_equal(res.action, NSH_OCI_UNTOUCHED);
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
	       "unknown annotation \"io.nshash.tpc\" (known: io.nshash.tcp, io.nshash.udp, io.nshash.workload)");
	REFUSE("\"io.nshash.tcp\": \"4\\u0000096\"", "\\u0000 (a NUL character) in a string");
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
	struct nsh_policy saved = policy;
	policy.max.tcp = 4096;
	snprintf(policy.source, sizeof(policy.source), "/etc/nshash/test.json");
	expect_refused(CONFIG_WITH("\"io.nshash.tcp\": \"5000\"", "{\"type\": \"network\"}"),
		       "policy /etc/nshash/test.json");
	policy.max.tcp = 0;
	expect_refused(CONFIG_WITH("\"io.nshash.tcp\": \"1\"", "{\"type\": \"network\"}"), "tcp");
	policy = saved;
}

static void expect_not_in_error(const char *config, const char *fragment)
{
	char *out = NULL;
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	assert_true(transform(config, &out, &res, &err) < 0);
	if (strstr(err.msg, fragment))
		fail_msg("error \"%s\" has \"%s\"", err.msg, fragment);
}

#define PODMAN_ANN  "\"io.container.manager\": \"libpod\", \"io.kubernetes.cri-o.TTY\": \"false\", "
#define DOCKER_HOOK "\"hooks\": {\"prestart\": [{\"path\": \"/proc/1/exe\", \"args\": [\"libnetwork-setkey\"]}]}, "

static void test_network_entry(void **state)
{
	(void)state;
	char *out;
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	const char *ann = "\"io.nshash.tcp\": \"4096\", \"io.nshash.udp\": \"1024\"";
	char buf[2048];

	/* host network: no entry; the requested sizes are named */
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"pid\"}"), ann);
	expect_refused(buf, "cannot size tcp=4096 udp=1024: the config has no network namespace entry, so the "
			    "container shares the host's network namespace (host network), whose tables cannot be "
			    "resized. Instead: give the container a network namespace of its own");
	expect_refused("{\"annotations\": {\"io.nshash.udp\": \"128\"}}", "cannot size tcp=0 udp=128: the config has "
									  "no network namespace entry");
	/* ... in podman's terms when podman wrote the config */
	expect_refused("{\"annotations\": {" PODMAN_ANN "\"io.nshash.tcp\": \"4096\"}}",
		       "Instead: with podman, drop --network host");
	/* a path that cannot be inspected: the real cause, not "already exists" */
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/nonexistent/nshash-ns\"}"),
		 ann);
	expect_refused(buf, "cannot size tcp=4096 udp=1024: cannot inspect the network namespace the config names "
			    "(/nonexistent/nshash-ns): ");
	expect_refused(buf, "No such file or directory");
	expect_not_in_error(buf, "already exists");
	/* a hostile path cannot put a line break into a message (a forged log line) */
	snprintf(buf, sizeof(buf),
		 CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/nonexistent/a\\nnshash: forged\"}"), ann);
	expect_refused(buf, "(\"/nonexistent/a\\x0anshash: forged\")");
	expect_not_in_error(buf, "\n");
	/* ... or only warn, per policy, leaving the config as it was */
	policy.on_failure = NSH_ON_FAILURE_WARN;
	assert_int_equal(transform(buf, &out, &res, &err), 0);
	assert_int_equal(res.action, NSH_OCI_WARNED);
	assert_string_equal(out, buf);
	assert_non_null(strstr(res.warning, "cannot inspect the network namespace the config names"));
	assert_int_equal(res.request.sizes.tcp, 4096);
	assert_int_equal(res.request.sizes.udp, 1024);
	free(out);
	policy.on_failure = NSH_ON_FAILURE_FAIL;

	/* the host's netns (our own): what it is, its sizes, the engine's advice */
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/proc/self/ns/net\"}"), ann);
	if (geteuid() != 0) {
		/* entering it needs CAP_SYS_ADMIN: the cause is named */
		expect_refused(buf, "cannot inspect the network namespace the config names (/proc/self/ns/net): ");
		expect_refused(buf,
			       "Operation not permitted (needs CAP_SYS_ADMIN over the user namespace that owns it");
		return;
	}
	expect_refused(buf, "cannot size tcp=4096 udp=1024: the container would share the host's network namespace "
			    "(/proc/self/ns/net); it has the host's own tables (tcp=");
	expect_refused(buf, "Instead: give the container a network namespace of its own");
	snprintf(buf, sizeof(buf),
		 "{" DOCKER_HOOK
		 "\"annotations\": {%s}, \"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": "
		 "\"/proc/self/ns/net\"}]}}",
		 ann);
	expect_refused(buf, "Instead: with Docker, a sized runtime needs the container's own network: use the "
			    "default bridge or a user network, not --network host");
	expect_not_in_error(buf, "--network none");
	snprintf(buf, sizeof(buf),
		 "{\"annotations\": {\"io.kubernetes.cri.container-type\": \"sandbox\", %s}, \"linux\": "
		 "{\"namespaces\": [{\"type\": \"network\", \"path\": \"/proc/self/ns/net\"}]}}",
		 ann);
	expect_refused(buf, "Instead: under Kubernetes, a hostNetwork pod cannot be sized");

	/* another process's netns (--network container:X, a pod): what it is,
	 * its sizes, podman's advice */
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	if (child == 0) {
		char ok = unshare(CLONE_NEWNET) == 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char ok = 0;
	assert_int_equal(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	close(ready[1]);
	snprintf(buf, sizeof(buf),
		 "{\"annotations\": {" PODMAN_ANN "%s}, \"linux\": {\"namespaces\": [{\"type\": \"network\", "
		 "\"path\": \"/proc/%d/ns/net\"}]}}",
		 ann, (int)child);
	char want[300];
	snprintf(want, sizeof(want), "the container would join the network namespace of process %d", (int)child);
	if (ok) {
		expect_refused(buf, want);
		expect_refused(buf, "; it uses the shared global tables (tcp=");
		expect_refused(buf, "Instead: with podman --network container:NAME, give NAME the same io.nshash.*");
		expect_not_in_error(buf, "CNI plugin");
		/* a pod member: podman names its infra container */
		snprintf(buf, sizeof(buf),
			 "{\"annotations\": {" PODMAN_ANN "\"io.kubernetes.cri-o.SandboxID\": \"0911b56160c2abcd\", "
			 "%s}, \"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"/proc/%d/ns/net\"}]}}",
			 ann, (int)child);
		snprintf(want, sizeof(want),
			 "the container would join the network namespace of process %d, its podman pod's (infra "
			 "container 0911b56160c2); the pod's network namespace uses the shared global tables (tcp=",
			 (int)child);
		expect_refused(buf, want);
		expect_refused(buf, "Instead: give this container the pod's sizes or no io.nshash.* annotations");
		expect_not_in_error(buf, "CNI plugin");
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(ok);
}

/* The wrapper's --nshash-tcp/--nshash-udp: consumed, strictly parsed. */
static void test_own_options(void **state)
{
	(void)state;
	struct nsh_runtime_defaults d;
	struct nshash_error err = {0};
	char *v1[] = {"w",
		      "--nshash-tcp=8192",
		      "--root",
		      "/r",
		      "--nshash-udp",
		      "1024",
		      "--log",
		      "l",
		      "create",
		      "--bundle",
		      "/b",
		      "id1",
		      NULL};
	int argc = 12;
	assert_int_equal(nsh_runtime_own_options(&argc, v1, &d, &err), 0);
	assert_int_equal(argc, 9);
	const char *want[] = {"w", "--root", "/r", "--log", "l", "create", "--bundle", "/b", "id1"};
	for (int i = 0; i < 9; i++)
		assert_string_equal(v1[i], want[i]);
	assert_null(v1[9]);
	assert_true(d.present);
	assert_int_equal(d.sizes.tcp, 8192);
	assert_int_equal(d.sizes.udp, 1024);
	/* nothing of ours: argv as it was */
	char *v2[] = {"w", "--root", "--nshash-tcp=1", "exec", "id", "sh", "--nshash-tcp=2", NULL};
	argc = 7;
	assert_int_equal(nsh_runtime_own_options(&argc, v2, &d, &err), 0);
	assert_int_equal(argc, 7);
	assert_false(d.present);
	assert_string_equal(v2[2], "--nshash-tcp=1"); /* the value of --root */
	assert_string_equal(v2[6], "--nshash-tcp=2"); /* the process's own argument */
	char *v3[] = {"w", "--nshash-udp=0", "--nshash-tcp=0", "state", "x", NULL};
	argc = 5;
	assert_int_equal(nsh_runtime_own_options(&argc, v3, &d, &err), 0);
	assert_int_equal(argc, 3);
	assert_true(d.present);
	assert_int_equal(d.sizes.tcp, 0);

	struct {
		int argc;
		char *argv[6];
		const char *msg;
	} bad[] = {
	    {3,
	     {"w", "--nshash-tpc=1", "create"},
	     "unknown option --nshash-tpc=1 (known: --nshash-tcp=N, --nshash-udp=N)"},
	    {3, {"w", "--nshash-tcp=abc", "create"}, "--nshash-tcp: \"abc\" is not a decimal number of entries"},
	    {3, {"w", "--nshash-tcp=", "create"}, "--nshash-tcp: empty value (expected a decimal number of entries)"},
	    {3, {"w", "--nshash-udp=-1", "create"}, "--nshash-udp: \"-1\" is not a decimal number of entries"},
	    {4, {"w", "--nshash-tcp=1", "--nshash-tcp=2", "create"}, "option --nshash-tcp given twice"},
	    {2, {"w", "--nshash-udp"}, "option --nshash-udp needs a value (--nshash-udp=N)"},
	    {3,
	     {"w", "-nshash-tcp=1", "create"},
	     "option -nshash-tcp=1: write it with two dashes (nshash-runtime [--nshash-tcp=N|auto] [--nshash-udp=N|auto] "
	     "[runtime options] COMMAND ...)"},
	    {4,
	     {"w", "create", "--nshash-tcp=1", "id"},
	     "option --nshash-tcp=1 after the command create: it must come before it"},
	    {4,
	     {"w", "run", "-nshash-udp=1", "id"},
	     "option -nshash-udp=1 after the command run: it must come before it"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		argc = bad[i].argc;
		if (nsh_runtime_own_options(&argc, bad[i].argv, &d, &err) == 0)
			fail_msg("accepted: case %zu", i);
		if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)))
			fail_msg("case %zu: \"%s\", expected \"%s\"", i, err.msg, bad[i].msg);
	}
}

/* The transform with the wrapper's --nshash-tcp/--nshash-udp: each decides
 * its protocol where no annotation names it (docs/sizing.md), capped like
 * annotations, named in the cap error. */
static void test_defaults(void **state)
{
	(void)state;
	struct nsh_said defaults = {.said = {true, true}, .size = {8192, 1024}};
	struct nsh_oci_opts opts = {.mode = NSH_OCI_WRAPPER, .policy = &policy, .runtime = &defaults};
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	char *out = NULL;
	size_t len;
	const char *host = "{\"linux\": {\"namespaces\": [{\"type\": \"pid\"}]}}";

	assert_true(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err) < 0);
	assert_true(res.from_defaults);
	assert_non_null(strstr(err.msg, "cannot size tcp=8192 udp=1024: "));
	const char *ann = "{\"annotations\": {\"io.nshash.tcp\": \"4096\"}, \"linux\": {\"namespaces\": []}}";
	assert_true(nsh_oci_transform(ann, strlen(ann), &opts, &out, &len, &res, &err) < 0);
	/* per protocol: tcp from the annotation, udp from --nshash-udp */
	assert_true(res.from_defaults);
	assert_int_equal(res.decision.src[0], NSH_SRC_ANNOTATION);
	assert_int_equal(res.decision.src[1], NSH_SRC_RUNTIME);
	assert_non_null(strstr(err.msg, "cannot size tcp=4096 udp=1024: "));
	/* both annotated: the options decide nothing */
	const char *both = "{\"annotations\": {\"io.nshash.tcp\": \"4096\", \"io.nshash.udp\": \"0\"}, "
			   "\"linux\": {\"namespaces\": []}}";
	assert_true(nsh_oci_transform(both, strlen(both), &opts, &out, &len, &res, &err) < 0);
	assert_false(res.from_defaults);
	assert_non_null(strstr(err.msg, "cannot size tcp=4096 udp=0: "));
	/* only --nshash-tcp given: udp from the policy's defaultUdp */
	struct nsh_policy kept = policy;
	policy.defaults = (struct nshash_sizes){0, 2048};
	defaults.said[1] = false;
	assert_true(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err) < 0);
	assert_int_equal(res.decision.src[0], NSH_SRC_RUNTIME);
	assert_int_equal(res.decision.src[1], NSH_SRC_DEFAULT);
	assert_non_null(strstr(err.msg, "cannot size tcp=8192 udp=2048: "));
	defaults.said[1] = true;
	policy = kept;
	struct nsh_policy saved = policy;
	policy.max.udp = 512;
	snprintf(policy.source, sizeof(policy.source), "/etc/nshash/test.json");
	assert_true(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err) < 0);
	assert_string_equal(err.msg, "policy /etc/nshash/test.json: nshash-runtime --nshash-tcp/--nshash-udp: udp size "
				     "1024 (effective 1024) is above the allowed maximum 512 (maxUdp)");
	/* the cap error names the source of the protocol over it: the
	 * annotation's tcp is fine, the option's udp is not */
	assert_true(nsh_oci_transform(ann, strlen(ann), &opts, &out, &len, &res, &err) < 0);
	assert_string_equal(err.msg, "policy /etc/nshash/test.json: nshash-runtime --nshash-tcp/--nshash-udp: udp size "
				     "1024 (effective 1024) is above the allowed maximum 512 (maxUdp)");
	policy = saved;
	/* zero defaults ask for nothing: the config passes byte for byte */
	defaults.size[0] = defaults.size[1] = 0;
	assert_int_equal(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err), 0);
	assert_int_equal(res.action, NSH_OCI_UNTOUCHED);
	assert_string_equal(out, host);
	free(out);
}

/* A container the policy's defaults would size, passed through unsized:
 * the config as it came, the reason containing `why`. */
static void assert_defaults_skipped(const char *config, const struct nsh_oci_opts *opts, const char *why)
{
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	char *out = NULL;
	size_t len;

	assert_int_equal(nsh_oci_transform(config, strlen(config), opts, &out, &len, &res, &err), 0);
	assert_int_equal(res.action, NSH_OCI_DEFAULTS_SKIPPED);
	assert_true(res.from_policy);
	assert_false(res.from_defaults);
	if (!strstr(res.warning, why))
		fail_msg("reason \"%s\" lacks \"%s\"", res.warning, why);
	assert_string_equal(out, config);
	assert_string_equal(res.userns_pin_path, "");
	free(out);
}

/* The policy's defaultTcp/defaultUdp: for a container that asks nothing;
 * one that joins a netns (the host's, another's) runs unsized, never
 * refused; an annotation (0 = shared) and the wrapper's options win. */
static void test_policy_defaults(void **state)
{
	(void)state;
	struct nsh_policy saved = policy;
	struct nsh_oci_opts opts = {.mode = NSH_OCI_PRECREATE, .policy = &policy};
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	char *out = NULL;
	size_t len;
	const char *host = "{\"linux\": {\"namespaces\": [{\"type\": \"pid\"}]}}";
	const char *joined =
	    "{\"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"/proc/self/ns/net\"}]}}";
	const char *optout = "{\"annotations\": {\"io.nshash.tcp\": \"0\", \"io.nshash.udp\": \"0\"}, "
			     "\"linux\": {\"namespaces\": []}}";
	const char *tcp0 = "{\"annotations\": {\"io.nshash.tcp\": \"0\"}, \"linux\": {\"namespaces\": []}}";
	const char *asks = "{\"annotations\": {\"io.nshash.tcp\": \"4096\"}, \"linux\": {\"namespaces\": []}}";

	policy.defaults = (struct nshash_sizes){8192, 1024};
	for (int mode = 0; mode < 2; mode++) {
		opts.mode = mode ? NSH_OCI_WRAPPER : NSH_OCI_PRECREATE;
		assert_defaults_skipped(host, &opts,
					"it shares the host's network namespace (no network namespace entry)");
		assert_defaults_skipped(joined, &opts, "it joins the network namespace /proc/self/ns/net (tcp=");
		assert_int_equal(nsh_oci_transform(optout, strlen(optout), &opts, &out, &len, &res, &err), 0);
		assert_int_equal(res.action, NSH_OCI_UNTOUCHED);
		assert_false(res.from_policy);
		free(out);
		/* io.nshash.tcp=0 opts out of TCP only: udp still the node's
		 * default, what it asks only the defaults (never refused) */
		assert_int_equal(nsh_oci_transform(tcp0, strlen(tcp0), &opts, &out, &len, &res, &err), 0);
		assert_int_equal(res.action, NSH_OCI_DEFAULTS_SKIPPED);
		assert_true(res.from_policy);
		assert_int_equal(res.request.sizes.tcp, 0);
		assert_int_equal(res.request.sizes.udp, 1024);
		assert_int_equal(res.decision.src[0], NSH_SRC_ANNOTATION);
		assert_int_equal(res.decision.src[1], NSH_SRC_DEFAULT);
		free(out);
		assert_true(nsh_oci_transform(asks, strlen(asks), &opts, &out, &len, &res, &err) < 0);
		assert_false(res.from_policy);
		assert_non_null(
		    strstr(err.msg, "cannot size tcp=4096 udp=1024: the config has no network namespace entry"));
	}
	/* the wrapper's --nshash-tcp=0 --nshash-udp=0: this handler's containers are shared */
	struct nsh_said zero = {.said = {true, true}};
	opts.runtime = &zero;
	assert_int_equal(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err), 0);
	assert_int_equal(res.action, NSH_OCI_UNTOUCHED);
	free(out);
	opts.runtime = NULL;
	/* named in a cap error (a policy read at load never gets there) */
	policy.max.udp = 512;
	snprintf(policy.source, sizeof(policy.source), "/etc/nshash/test.json");
	assert_true(nsh_oci_transform(host, strlen(host), &opts, &out, &len, &res, &err) < 0);
	assert_string_equal(err.msg, "policy /etc/nshash/test.json: defaultTcp/defaultUdp: udp size 1024 (effective "
				     "1024) is above the allowed maximum 512 (maxUdp)");
	policy = saved;
}

static void test_request_parse(void **state)
{
	(void)state;
	struct nsh_oci_request req;
	struct nshash_error err = {0};
	const char *c = "{\"annotations\": {\"io.nshash.tcp\": \"3000\", \"other\": \"x\"}}";
	assert_int_equal(nsh_oci_request_parse(c, strlen(c), &req, &err), 0);
	assert_true(req.present);
	assert_int_equal(req.sizes.tcp, 3000);
	assert_int_equal(req.sizes.udp, 0);
	c = "{\"annotations\": null}";
	assert_int_equal(nsh_oci_request_parse(c, strlen(c), &req, &err), 0);
	assert_false(req.present);
}

static void test_state(void **state)
{
	(void)state;
	struct nsh_oci_state st;
	struct nshash_error err = {0};
	struct nshash_netns_info info;
	bool warned;
	const char *s =
	    "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":42,"
	    "\"bundle\":\"/nonexistent\",\"annotations\":{\"io.nshash.tcp\":\"4096\",\"io.nshash.pin\":\"p1\"}}";
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_string_equal(st.id, "c1");
	assert_int_equal(st.pid, 42);
	assert_string_equal(st.status, "creating");
	assert_true(st.request.present);
	assert_int_equal(st.request.sizes.tcp, 4096);
	assert_string_equal(st.request.pin, "p1");

	/* verify without a pid */
	s = "{\"id\":\"c2\",\"status\":\"created\",\"annotations\":{\"io.nshash.tcp\":\"4096\"}}";
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(st.pid, 0);
	assert_true(nsh_oci_verify(&st, &policy, &info, &warned, &err) < 0);
	assert_non_null(strstr(err.msg, "state of c2 has no pid: cannot verify"));
	/* nothing requested: nothing to verify */
	s = "{\"id\":\"c3\",\"pid\":1}";
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(nsh_oci_verify(&st, &policy, &info, &warned, &err), 0);

	s = "{\"id\":\"c1\",\"pid\":\"42\"}";
	assert_true(nsh_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state of c1: \"pid\" is not a process id"));
	s = "{\"pid\":42}";
	assert_true(nsh_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state: no container \"id\""));
	s = "{\"id\":\"c1\",";
	assert_true(nsh_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "state: malformed JSON at line 1 column"));
	s = "{\"id\":\"c1\",\"annotations\":{\"io.nshash.xyz\":\"1\"}}";
	assert_true(nsh_oci_state_parse(s, strlen(s), &st, &err) < 0);
	assert_non_null(strstr(err.msg, "unknown annotation \"io.nshash.xyz\""));
}

static void test_state_bundle(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-oci-XXXXXX", path[128], s[256];
	struct nsh_oci_state st;
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
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_string_equal(st.request.pin, ""); /* the state's own annotations carry none */
	assert_string_equal(st.bundle_pin, "oci-1");
	/* no annotations at all: the bundle's */
	snprintf(s, sizeof(s), "{\"id\":\"c1\",\"pid\":7,\"bundle\":\"%s\"}", dir);
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(st.request.sizes.udp, 1024);
	/* podman's copy names tcp=0 only; the bundle, with nshash's pin, has
	 * what was decided (udp from the node's default): that is checked */
	f = fopen(path, "w");
	fputs("{\"annotations\":{\"io.nshash.tcp\":\"0\",\"io.nshash.udp\":\"1024\",\"io.nshash.pin\":\"oci-1\"}}",
	      f);
	fclose(f);
	snprintf(s, sizeof(s), "{\"id\":\"c1\",\"pid\":7,\"bundle\":\"%s\",\"annotations\":{\"io.nshash.tcp\":\"0\"}}",
		 dir);
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_true(st.request.present);
	assert_int_equal(st.request.sizes.tcp, 0);
	assert_int_equal(st.request.sizes.udp, 1024);
	/* without a pin (the bridge's transplant keeps podman's netns path): the
	 * bundle's request all the same, what the precreate hook decided */
	f = fopen(path, "w");
	fputs("{\"annotations\":{\"io.nshash.tcp\":\"0\",\"io.nshash.udp\":\"1024\"}}", f);
	fclose(f);
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_int_equal(st.request.sizes.udp, 1024);
	/* asked nothing in the state, a bundle that is not JSON: nothing to verify */
	f = fopen(path, "w");
	fputs("{", f);
	fclose(f);
	snprintf(s, sizeof(s), "{\"id\":\"c1\",\"pid\":7,\"bundle\":\"%s\",\"annotations\":{\"a\":\"b\"}}", dir);
	assert_int_equal(nsh_oci_state_parse(s, strlen(s), &st, &err), 0);
	assert_false(st.request.present);
	assert_string_equal(st.bundle_pin, "");
	unlink(path);
	rmdir(dir);
}

/* Which paths precreate transplants: podman's own netns only; a process's
 * netns (a pod's infra container) gets the pod advice; the wrapper never
 * transplants. */
static void test_engine_paths(void **state)
{
	(void)state;
	const char *ann = "\"io.nshash.tcp\": \"4096\", \"io.nshash.udp\": \"1024\"";
	const char *uuid = "/run/netns/netns-0b1017ce-b3c9-736c-2b40-0ca4fa8f206b";
	char buf[2048], entry[256];

	snprintf(entry, sizeof(entry), "{\"type\": \"network\", \"path\": \"%s\"}", uuid);
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "%s"), ann, entry);
	expect_refused(buf, "cannot size io.nshash.tcp=4096 io.nshash.udp=1024: transplant /run/netns/netns-0b1017ce-"
			    "b3c9-736c-2b40-0ca4fa8f206b: No such file or directory");
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/proc/123/ns/net\"}"), ann);
	/* (no such process here: what inspecting it said; the pod advice is
	 * tested with a real pod in 63-oci-podman-bridge) */
	expect_refused(buf, "cannot inspect the network namespace the config names (/proc/123/ns/net)");
	snprintf(buf, sizeof(buf),
		 CONFIG_WITH("%s", "{\"type\": \"network\", \"path\": \"/run/netns/netns-not-a-uuid\"}"), ann);
	expect_refused(buf, "cannot inspect the network namespace the config names (/run/netns/netns-not-a-uuid)");

	struct nsh_oci_opts wopts = {.mode = NSH_OCI_WRAPPER, .policy = &policy, .pin_name = "c1-0"};
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	char *out = NULL;
	size_t len;
	snprintf(buf, sizeof(buf), CONFIG_WITH("%s", "%s"), ann, entry);
	assert_true(nsh_oci_transform(buf, strlen(buf), &wopts, &out, &len, &res, &err) < 0);
	assert_non_null(strstr(err.msg, "cannot inspect the network namespace the config names"));
	assert_null(strstr(err.msg, "transplant"));
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
	struct nsh_runtime_args a;
	struct nshash_error err = {0};
	char *v1[] = {"w",     "--root",      "/run/containerd/runc/default",
		      "--log", "/b/log.json", "--log-format",
		      "json",  "create",      "--bundle",
		      "/b",    "--pid-file",  "/b/init.pid",
		      "id1",   NULL};
	assert_int_equal(nsh_runtime_args_parse(13, v1, &a, &err), 0);
	assert_string_equal(a.subcommand, "create");
	assert_int_equal(a.subcommand_index, 7);
	assert_string_equal(a.root, "/run/containerd/runc/default");
	assert_string_equal(a.bundle, "/b");
	assert_int_equal(a.bundle_argi, 9); /* where the sibling bundle goes */
	assert_false(a.bundle_inline);
	assert_int_equal(a.config_argi, 0);
	assert_string_equal(a.id, "id1");
	char *v2[] = {"w",   "--root=/r", "--systemd-cgroup", "run", "-d", "--bundle=/x", "--console-socket", "/s",
		      "id2", NULL};
	assert_int_equal(nsh_runtime_args_parse(9, v2, &a, &err), 0);
	assert_string_equal(a.root, "/r");
	assert_string_equal(a.subcommand, "run");
	assert_string_equal(a.bundle, "/x");
	assert_int_equal(a.bundle_argi, 5);
	assert_true(a.bundle_inline);
	assert_string_equal(a.id, "id2");
	assert_true(a.detach);
	char *c1[] = {"w", "create", "--config=/c.json", "--pid-file", "p", "id5", NULL};
	assert_int_equal(nsh_runtime_args_parse(6, c1, &a, &err), 0);
	assert_string_equal(a.config, "/c.json");
	assert_int_equal(a.config_argi, 2);
	assert_true(a.config_inline);
	assert_int_equal(a.bundle_argi, 0);
	assert_string_equal(a.pid_file, "p");
	assert_string_equal(a.id, "id5");
	char *c2[] = {"w", "run", "-f", "alt.json", "id6", NULL};
	assert_int_equal(nsh_runtime_args_parse(5, c2, &a, &err), 0);
	assert_string_equal(a.config, "alt.json");
	assert_int_equal(a.config_argi, 3);
	assert_false(a.config_inline);
	assert_null(a.pid_file);
	assert_false(a.force);
	char *c3[] = {"w", "delete", "-f", "id7", NULL};
	assert_int_equal(nsh_runtime_args_parse(4, c3, &a, &err), 0);
	assert_null(a.config);
	assert_true(a.force);
	char *v3[] = {"w", "create", "-b", "/y", "id3", NULL};
	assert_int_equal(nsh_runtime_args_parse(5, v3, &a, &err), 0);
	assert_string_equal(a.bundle, "/y");
	assert_null(a.root);
	char *v4[] = {"w", "-root", "/z", "create", "-bundle", "/q", "id4", NULL};
	assert_int_equal(nsh_runtime_args_parse(7, v4, &a, &err), 0);
	assert_string_equal(a.root, "/z");
	assert_string_equal(a.bundle, "/q");
	assert_string_equal(a.id, "id4");
	char *v5[] = {"w", "create", "id5", NULL}; /* bundle = cwd */
	assert_int_equal(nsh_runtime_args_parse(3, v5, &a, &err), 0);
	assert_null(a.bundle);
	assert_int_equal(a.bundle_argi, 0);
	assert_string_equal(a.id, "id5");
	char *v6[] = {"w", "delete", "--force", "id6", NULL};
	assert_int_equal(nsh_runtime_args_parse(4, v6, &a, &err), 0);
	assert_true(a.force);
	assert_string_equal(a.id, "id6");
	char *v7[] = {"w", "--version", NULL};
	assert_int_equal(nsh_runtime_args_parse(2, v7, &a, &err), 0);
	assert_null(a.subcommand);
	char *v8[] = {"w", "create", "--bundle", NULL};
	assert_true(nsh_runtime_args_parse(3, v8, &a, &err) < 0);
	assert_string_equal(err.msg, "create: option --bundle needs a value");
	char *v9[] = {"w", "--root", NULL};
	assert_true(nsh_runtime_args_parse(2, v9, &a, &err) < 0);
	assert_string_equal(err.msg, "option --root needs a value");
	char *v10[] = {"w", "state", "--bundle", "id", NULL}; /* not create: --bundle is not taken */
	assert_int_equal(nsh_runtime_args_parse(4, v10, &a, &err), 0);
	assert_null(a.bundle);
}

static void test_pin_names(void **state)
{
	(void)state;
	char name[300], path[4096], longid[300];
	struct nshash_error err = {0};

	assert_int_equal(nsh_oci_wrapper_pin_name("c1", "/run/containerd/runc/default", name, sizeof(name), &err), 0);
	char other[300];
	assert_int_equal(nsh_oci_wrapper_pin_name("c1", "/run/containerd/runc/k8s.io", other, sizeof(other), &err), 0);
	assert_string_not_equal(name, other); /* same id in two namespaces */
	assert_int_equal(strncmp(name, "c1-", 3), 0);
	assert_int_equal(strlen(name), 3 + 8);
	assert_true(nsh_oci_wrapper_pin_name("../x", NULL, name, sizeof(name), &err) < 0);
	assert_non_null(strstr(err.msg, "container id \"../x\": character '/'"));
	assert_true(nsh_oci_wrapper_pin_name("a/b", NULL, name, sizeof(name), &err) < 0);
	assert_true(nsh_oci_wrapper_pin_name("..", NULL, name, sizeof(name), &err) < 0);
	assert_true(nsh_oci_wrapper_pin_name("", NULL, name, sizeof(name), &err) < 0);
	memset(longid, 'a', 250);
	longid[250] = '\0';
	assert_true(nsh_oci_wrapper_pin_name(longid, NULL, name, sizeof(name), &err) < 0);
	assert_non_null(strstr(err.msg, "longer than 200 bytes"));
	assert_int_equal(nsh_oci_pin_path(&policy, "p1", path, sizeof(path), &err), 0);
	assert_string_equal(path, "/nonexistent/nshash-unit/pins/p1");
	assert_true(nsh_oci_pin_path(&policy, "../../etc/passwd", path, sizeof(path), &err) < 0);
	assert_true(nsh_oci_cleanup(&policy, "..", &err) < 0);
	/* an absent pin is not an error (poststop twice) */
	assert_int_equal(nsh_oci_cleanup(&policy, "gone", &err), 0);
}

static void test_runtime_find(void **state)
{
	(void)state;
	struct nsh_policy p = policy;
	struct nshash_error err = {0};
	char out[4096];

	snprintf(p.runtime, sizeof(p.runtime), "/nonexistent/runc");
	assert_true(nsh_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "runtime /nonexistent/runc"));
	snprintf(p.runtime, sizeof(p.runtime), "no-such-runtime-xyz");
	assert_true(nsh_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "runtime \"no-such-runtime-xyz\""));
	snprintf(p.runtime, sizeof(p.runtime), "sh");
	assert_int_equal(nsh_runtime_find(&p, "/proc/self/exe", out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "/sh"));
	/* never itself */
	snprintf(p.runtime, sizeof(p.runtime), "%.1000s", out);
	assert_true(nsh_runtime_find(&p, out, out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "is nshash-runtime itself"));
}

/* The sibling bundle (shared mount propagation): what a runtime resolves
 * against the bundle (root.path, bind mount sources; runtime-spec
 * config.md "root" and "mounts") becomes absolute against its real path,
 * nothing else changes; what asks for shared propagation. */
/* What oci/config.c says of a config document (text parsed here). */
static bool doc_says(bool (*what)(struct json_object *), const char *text, size_t len)
{
	struct json_object *doc;
	struct nshash_error err;
	assert_int_equal(nsh_json_parse_text(text, len, "config", &doc, &err), 0);
	bool r = what(doc);
	json_object_put(doc);
	return r;
}

static void test_sibling(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	char top[] = "/tmp/nshash-unit-sibling.XXXXXX", bundle[300], sdir[300], dir[4096], file[4200], real[4096];
	assert_non_null(mkdtemp(top));
	snprintf(bundle, sizeof(bundle), "%s/b", top);
	snprintf(sdir, sizeof(sdir), "%s/state", top);
	assert_int_equal(mkdir(bundle, 0755), 0);
	assert_non_null(realpath(bundle, real));
	const char *cfg = "{\"root\": {\"path\": \"rootfs\"}, \"mounts\": ["
			  "{\"destination\": \"/a\", \"type\": \"bind\", \"source\": \"data\"},"
			  "{\"destination\": \"/b\", \"source\": \"d2\", \"options\": [\"rbind\", \"rshared\"]},"
			  "{\"destination\": \"/c\", \"type\": \"bind\", \"source\": \"/abs\"},"
			  "{\"destination\": \"/t\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"}]}";
	assert_int_equal(nsh_sibling_write(sdir, "c1-00000000", bundle, cfg, strlen(cfg), dir, sizeof(dir), &err), 0);
	snprintf(file, sizeof(file), "%s/bundles/c1-00000000", sdir);
	assert_string_equal(dir, file);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(file, sizeof(file), "%s/config.json", dir);
	char *text;
	size_t len;
	assert_int_equal(nsh_read_file_flags(file, 0, 1 << 20, &text, &len, &st, &err), 0);
	char want[16384];
	snprintf(want, sizeof(want),
		 "{\"root\":{\"path\":\"%s/rootfs\"},\"mounts\":["
		 "{\"destination\":\"/a\",\"type\":\"bind\",\"source\":\"%s/data\"},"
		 "{\"destination\":\"/b\",\"source\":\"%s/d2\",\"options\":[\"rbind\",\"rshared\"]},"
		 "{\"destination\":\"/c\",\"type\":\"bind\",\"source\":\"/abs\"},"
		 "{\"destination\":\"/t\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}]}",
		 real, real, real);
	assert_string_equal(text, want);
	free(text);
	assert_true(doc_says(nsh_oci_doc_wants_shared, cfg, strlen(cfg)));
	const char *rootfs_shared = "{\"linux\": {\"rootfsPropagation\": \"shared\"}}";
	assert_true(doc_says(nsh_oci_doc_wants_shared, rootfs_shared, strlen(rootfs_shared)));
	const char *slave = "{\"linux\": {\"rootfsPropagation\": \"rslave\"}, \"x\": \"shared\"}";
	assert_false(doc_says(nsh_oci_doc_wants_shared, slave, strlen(slave)));
	/* a sibling whose pin is gone: swept once older than the stale age */
	assert_int_equal(nsh_sibling_sweep(sdir, 60), 0);
	struct timespec old[2] = {{.tv_sec = time(NULL) - 120}, {.tv_sec = time(NULL) - 120}};
	assert_int_equal(utimensat(AT_FDCWD, dir, old, 0), 0);
	assert_int_equal(nsh_sibling_sweep(sdir, 60), 1);
	assert_int_equal(stat(dir, &st), -1);
	/* a relative path that cannot fit: an error, nothing made */
	char longcfg[5000];
	snprintf(longcfg, sizeof(longcfg), "{\"root\": {\"path\": \"%04090d\"}}", 0);
	assert_true(nsh_sibling_write(sdir, "c2-00000000", bundle, longcfg, strlen(longcfg), dir, sizeof(dir), &err) <
		    0);
	assert_non_null(strstr(err.msg, "path too long"));
	snprintf(file, sizeof(file), "%s/bundles/c2-00000000", sdir);
	assert_int_equal(stat(file, &st), -1);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	assert_int_equal(system(cmd), 0);
}

/* A container with a user namespace of its own: which configs ask for one,
 * and the mappings' refusals (the wrapper's transform, before any namespace
 * is made: tests/integration/45-userns.sh makes them). */
static int transform_wrapper(const char *config, const char *userns_pin, struct nshash_error *err)
{
	struct nsh_oci_opts opts = {.mode = NSH_OCI_WRAPPER,
				    .policy = &policy,
				    .pin_name = "t",
				    .pin_path = "/nonexistent/nshash-unit/run/netns",
				    .userns_pin_path = userns_pin};
	struct nsh_oci_result res;
	char *out = NULL;
	size_t len;
	int r = nsh_oci_transform(config, strlen(config), &opts, &out, &len, &res, err);
	free(out);
	return r;
}

static void test_userns(void **state)
{
	(void)state;
	static const struct {
		const char *ns;
		bool wants;
	} cases[] = {
	    {"{\"type\": \"network\"}", false},
	    {"{\"type\": \"user\"}", true},
	    {"{\"type\": \"user\", \"path\": \"\"}", true},
	    {"{\"type\": \"user\", \"path\": null}", true},
	    {"{\"type\": \"user\", \"path\": \"/proc/1/ns/user\"}", false},
	};
	char buf[1024];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), CONFIG_WITH("", "%s"), cases[i].ns);
		assert_int_equal(doc_says(nsh_oci_wants_new_userns, buf, strlen(buf)), cases[i].wants);
	}

	struct nshash_error err = {0};
#define USERNS_CONFIG(maps)                                                                                            \
	"{\"annotations\": {\"io.nshash.tcp\": \"4096\"}, \"linux\": {\"namespaces\": [{\"type\": \"network\"}, "      \
	"{\"type\": \"user\"}]" maps "}}"
#define GID ", \"gidMappings\": [{\"containerID\": 0, \"hostID\": 100000, \"size\": 65536}]"
	static const struct {
		const char *config, *fragment;
	} bad[] = {
	    {USERNS_CONFIG(GID), "without linux.uidMappings: give the container's mappings"},
	    {USERNS_CONFIG(", \"uidMappings\": []" GID), "without linux.uidMappings"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 100000, \"size\": 65536}]"),
	     "without linux.gidMappings"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 100000, \"size\": -1}]" GID),
	     "config: linux.uidMappings[0].size: -1 is outside 0..4294967295"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 4294967296, \"size\": 1}]" GID),
	     "linux.uidMappings[0].hostID: 4294967296 is outside"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": \"0\", \"hostID\": 1, \"size\": 1}]" GID),
	     "linux.uidMappings[0].containerID: missing or not an integer"},
	    {USERNS_CONFIG(", \"uidMappings\": [7]" GID), "linux.uidMappings[0]: not an object"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 1}]" GID),
	     "linux.uidMappings[0].size: missing"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 1, \"size\": 0}]" GID),
	     "uid mappings[0] = 0 1 0: empty, or past 2^32-1"},
	    {USERNS_CONFIG(", \"uidMappings\": [{\"containerID\": 4294967295, \"hostID\": 1, \"size\": 2}]" GID),
	     "empty, or past 2^32-1"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_true(transform_wrapper(bad[i].config, "/nonexistent/nshash-unit/run/userns", &err) < 0);
		if (!strstr(err.msg, bad[i].fragment))
			fail_msg("error \"%s\" lacks \"%s\"", err.msg, bad[i].fragment);
	}
	/* more entries than the kernel takes */
	char *many = malloc(64 * 1024);
	assert_non_null(many);
	size_t off = (size_t)snprintf(many, 64 * 1024, "%s",
				      "{\"annotations\": {\"io.nshash.tcp\": \"4096\"}, "
				      "\"linux\": {\"namespaces\": [{\"type\": \"network\"}, "
				      "{\"type\": \"user\"}], \"uidMappings\": [");
	for (int i = 0; i <= NSHASH_IDMAP_MAX; i++)
		off += (size_t)snprintf(many + off, 64 * 1024 - off,
					"%s{\"containerID\": %d, \"hostID\": %d, \"size\": 1}", i ? ", " : "", i,
					100000 + i);
	snprintf(many + off, 64 * 1024 - off, "]" GID "}}");
	memset(&err, 0, sizeof(err));
	assert_true(transform_wrapper(many, "/nonexistent/nshash-unit/run/userns", &err) < 0);
	assert_non_null(strstr(err.msg, "linux.uidMappings: 341 entries (the kernel takes at most 340)"));
	free(many);
	/* the wrapper's shared-propagation path has no private tmpfs for it */
	memset(&err, 0, sizeof(err));
	assert_true(transform_wrapper(USERNS_CONFIG(GID), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "cannot size tcp=4096 udp=0: the container has a user namespace of its own "
					"and asks for shared mount propagation"));
#undef GID
#undef USERNS_CONFIG
}

/* The policy's defaults for a container with a user namespace: joining
 * the host's network or another netns it runs unsized, never refused; a
 * netns of its own takes the user-namespace path whatever the source of
 * the sizes (the mappings are read: 45-userns and 49-defaults make them). */
static void test_userns_defaults(void **state)
{
	(void)state;
	struct nsh_policy saved = policy;
	struct nshash_error err = {0};
	const char *host = "{\"linux\": {\"namespaces\": [{\"type\": \"user\"}]}}";
	const char *joined = "{\"linux\": {\"namespaces\": [{\"type\": \"user\"}, {\"type\": \"network\", "
			     "\"path\": \"/proc/self/ns/net\"}]}}";
	const char *own_nomaps = "{\"linux\": {\"namespaces\": [{\"type\": \"network\"}, {\"type\": \"user\"}], "
				 "\"gidMappings\": [{\"containerID\": 0, \"hostID\": 100000, \"size\": 65536}]}}";

	policy.defaults = (struct nshash_sizes){4096, 0};
	for (int mode = 0; mode < 2; mode++) {
		struct nsh_oci_opts opts = {.mode = mode ? NSH_OCI_WRAPPER : NSH_OCI_PRECREATE,
					    .policy = &policy,
					    .pin_name = "t",
					    .pin_path = mode ? "/nonexistent/nshash-unit/run/netns" : NULL,
					    .userns_pin_path = mode ? "/nonexistent/nshash-unit/run/userns" : NULL};
		assert_defaults_skipped(host, &opts,
					"it shares the host's network namespace (no network namespace entry)");
		assert_defaults_skipped(joined, &opts, "it joins the network namespace /proc/self/ns/net (tcp=");
		/* the wrapper's shared-propagation path (no private tmpfs) joining a netns: not refused either */
		opts.userns_pin_path = NULL;
		assert_defaults_skipped(joined, &opts, "it joins the network namespace /proc/self/ns/net (tcp=");
	}
	/* a netns of its own: the user namespace's mappings are what it is made with */
	memset(&err, 0, sizeof(err));
	assert_true(transform_wrapper(own_nomaps, "/nonexistent/nshash-unit/run/userns", &err) < 0);
	assert_non_null(strstr(err.msg, "without linux.uidMappings: give the container's mappings"));
	/* ... and on the shared-propagation path (an annotation is refused
	 * there, above), run unsized: the defaults never refuse a container */
	struct nsh_oci_opts shared = {.mode = NSH_OCI_WRAPPER,
				      .policy = &policy,
				      .pin_name = "t",
				      .pin_path = "/nonexistent/nshash-unit/run/netns"};
	assert_defaults_skipped(own_nomaps, &shared,
				"it has a user namespace of its own and asks for shared mount propagation");
	policy = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_passthrough),	  cmocka_unit_test(test_bad_annotations),
	    cmocka_unit_test(test_cap_message),	  cmocka_unit_test(test_network_entry),
	    cmocka_unit_test(test_request_parse), cmocka_unit_test(test_state),
	    cmocka_unit_test(test_state_bundle),  cmocka_unit_test(test_heal),
	    cmocka_unit_test(test_args),	  cmocka_unit_test(test_pin_names),
	    cmocka_unit_test(test_runtime_find),  cmocka_unit_test(test_own_options),
	    cmocka_unit_test(test_defaults),	  cmocka_unit_test(test_policy_defaults),
	    cmocka_unit_test(test_engine_paths),  cmocka_unit_test(test_sibling),
	    cmocka_unit_test(test_userns),	  cmocka_unit_test(test_userns_defaults),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
