/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI plugin's decisions, with the system operations replaced by mocks:
 * env and config validation, versions, the size request, and what ADD,
 * CHECK, DEL, STATUS, GC and VERSION answer in each situation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cni.h"

/* ------------------------------------------------------------------ mocks */

static struct {
	enum nshash_path_kind kind;
	const char *detail;
	long tcp, udp; /* raw entries of the netns at CNI_NETNS */
	struct nshash_occupancy occ;
	bool tcp_knob, udp_knob, caps;
	int replace_errnum;	       /* 0 = replace succeeds with the requested sizes */
	long replace_tcp, replace_udp; /* what the replacement netns has (0 = as requested) */
	bool replace_invisible;	       /* the path still shows the old netns afterwards */
	int occupancy_cgroup_fd;       /* the cgroup fd the last occupancy look was given */
	int n_classify, n_inspect, n_occupancy, n_probe, n_replace;
	struct nshash_create_opts replace_opts;
	struct nshash_netns_info created;
} m;

static void mock_reset(void)
{
	memset(&m, 0, sizeof(m));
	m.kind = NSHASH_PATH_PIN;
	m.tcp = -262144;
	m.udp = -16384;
	m.tcp_knob = m.udp_knob = m.caps = true;
	m.occupancy_cgroup_fd = -2;
}

static int mock_classify(const char *path, enum nshash_path_kind *kind, char *detail, size_t len,
			 struct nshash_error *err)
{
	(void)path;
	(void)err;
	m.n_classify++;
	*kind = m.kind;
	snprintf(detail, len, "%s", m.detail ? m.detail : "");
	return 0;
}

static int mock_inspect(const char *path, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)path;
	(void)err;
	m.n_inspect++;
	memset(info, 0, sizeof(*info));
	info->tcp_entries = m.tcp;
	info->udp_entries = m.udp;
	return 0;
}

static int mock_occupancy(const char *path, int cgroup_fd, struct nshash_occupancy *occ, struct nshash_error *err)
{
	(void)path;
	(void)err;
	m.n_occupancy++;
	m.occupancy_cgroup_fd = cgroup_fd;
	*occ = m.occ;
	return 0;
}

static int mock_probe(struct nshash_probe *p, struct nshash_error *err)
{
	(void)err;
	m.n_probe++;
	memset(p, 0, sizeof(*p));
	snprintf(p->release, sizeof(p->release), "6.0.9");
	p->has_tcp_knob = m.tcp_knob;
	p->has_udp_knob = m.udp_knob;
	p->cap_sys_admin = p->cap_net_admin = m.caps;
	return 0;
}

/* The sized netns made (ADD makes it while it looks inside CNI_NETNS). */
static int mock_create(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		       struct nshash_error *err)
{
	*nsfd = -1;
	m.replace_opts = *opts;
	if (m.replace_errnum)
		return nshash_error_set(err, m.replace_errnum, "mock failure");
	/* as the library: a missing knob or capability fails the creation */
	if (!m.caps || (opts->sizes.tcp && !m.tcp_knob) || (opts->sizes.udp && !m.udp_knob))
		return nshash_error_set(err, EPERM, "mock: cannot create");
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	memset(info, 0, sizeof(*info));
	info->tcp_entries = m.replace_tcp ? m.replace_tcp : (eff.tcp ? (long)eff.tcp : -262144);
	info->udp_entries = m.replace_udp ? m.replace_udp : (eff.udp ? (long)eff.udp : -16384);
	m.created = *info;
	return 0;
}

/* ... and put where CNI_NETNS was: a replacement (n_replace). */
static int mock_swap(int nsfd, const char *pin, struct nshash_error *err)
{
	(void)nsfd;
	(void)pin;
	(void)err;
	m.n_replace++;
	if (!m.replace_invisible) { /* the path now shows the new netns */
		m.tcp = m.created.tcp_entries;
		m.udp = m.created.udp_entries;
	}
	return 0;
}

static const struct nsh_cni_ops mock_ops = {
    .classify = mock_classify,
    .inspect = mock_inspect,
    .occupancy = mock_occupancy,
    .probe = mock_probe,
    .create = mock_create,
    .swap = mock_swap,
};

/* ---------------------------------------------------------------- helpers */

static struct nsh_cni_output out;
/* the node's policy: the defaults but for its state dir and caps */
static struct nsh_cni_node node;

static const struct nsh_cni_node *test_node(void)
{
	nsh_policy_defaults(&node.policy);
	snprintf(node.policy.state_dir, sizeof(node.policy.state_dir), "/run/x");
	node.policy.max = (struct nshash_sizes){16777216, 65536}; /* the network's caps apply */
	node.failed = false;
	return &node;
}

static void run(const char *command, const char *config)
{
	struct nsh_cni_env env = {
	    .command = command,
	    .containerid = "c1",
	    .netns = "/run/netns/cni-1",
	    .ifname = "eth0",
	    .args = "IgnoreUnknown=1;K8S_POD_NAME=p",
	    .path = "/opt/cni/bin",
	};
	nsh_cni_output_free(&out);
	nsh_cni_run(&env, config, strlen(config), &mock_ops, test_node(), &out);
}

static void expect_error(int code, const char *fragment)
{
	char want[32];
	snprintf(want, sizeof(want), "\"code\":%d,", code);
	if (out.status != 1 || !out.stdout_text || !strstr(out.stdout_text, want) || !strstr(out.stdout_text, fragment))
		fail_msg("want code %d with \"%s\", got status %d: %s", code, fragment, out.status,
			 out.stdout_text ? out.stdout_text : "(nothing)");
}

static void expect_output(const char *want)
{
	if (out.status != 0 || !out.stdout_text || strcmp(out.stdout_text, want) != 0)
		fail_msg("want status 0 and %s, got status %d: %s (log: %s)", want, out.status,
			 out.stdout_text ? out.stdout_text : "(nothing)", out.log);
}

static void expect_silent_success(void)
{
	if (out.status != 0 || out.stdout_text)
		fail_msg("want silent success, got status %d: %s", out.status, out.stdout_text);
}

#define CONF(ver, extra) "{\"cniVersion\":\"" ver "\",\"name\":\"net\",\"type\":\"nshash\"" extra "}"

/* ------------------------------------------------------------------ tests */

static void test_versions(void **state)
{
	(void)state;
	const char *ok[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
	for (size_t i = 0; i < 5; i++)
		assert_true(nsh_cni_version_supported(ok[i]));
	const char *bad[] = {"0.1.0", "0.2.0", "1.0", "1.1.0 ", "v1.0.0", "1.2.0", "", NULL};
	for (size_t i = 0; i < 8; i++)
		assert_false(nsh_cni_version_supported(bad[i]));
	assert_true(nsh_cni_version_cmp("0.3.1", "0.4.0") < 0);
	assert_true(nsh_cni_version_cmp("1.0.0", "0.4.0") > 0);
	assert_true(nsh_cni_version_cmp("0.10.0", "0.4.0") > 0);
	assert_int_equal(nsh_cni_version_cmp("1.1.0", "1.1.0"), 0);
	assert_true(nsh_cni_version_cmp("junk", "0.3.0") < 0);
}

static void test_env(void **state)
{
	(void)state;
	struct nsh_cni_env env = {0};
	struct nsh_cni_failure err;
	enum nsh_cni_command cmd;
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), -EINVAL);
	assert_int_equal(err.code, 4);
	assert_non_null(strstr(err.err.msg, "CNI_COMMAND"));

	env.command = "VERSION";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), 0);
	assert_int_equal(cmd, NSH_CNI_VERSION);
	env.command = "GC";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), 0);
	env.command = "STATUS";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), 0);

	env.command = "ADD";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), -EINVAL);
	assert_string_equal(err.err.msg, "required environment variables missing or empty for ADD: CNI_CONTAINERID, "
					 "CNI_NETNS, CNI_IFNAME");
	env.containerid = "";
	env.ifname = "eth0";
	env.netns = "/run/netns/x";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), -EINVAL);
	assert_string_equal(err.err.msg, "required environment variable missing or empty for ADD: CNI_CONTAINERID");

	env.command = "DEL"; /* DEL does not need the netns */
	env.containerid = "c";
	env.netns = NULL;
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), 0);
	assert_int_equal(cmd, NSH_CNI_DEL);

	env.command = "CHECK";
	env.netns = "proc/1/ns/net";
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), -EINVAL);
	assert_non_null(strstr(err.err.msg, "is not an absolute path"));

	env.command = "add"; /* commands are case-sensitive */
	assert_int_equal(nsh_cni_env_check(&env, &cmd, &err), -EINVAL);
	assert_non_null(strstr(err.err.msg, "CNI_COMMAND=\"add\" is not a CNI command"));
}

static void test_config(void **state)
{
	(void)state;
	struct nsh_cni_config cfg;
	struct nsh_cni_failure err;
	const char *c = CONF("1.0.0", ",\"tcp\":3000,\"udp\":100,\"onFailure\":\"warn\",\"future\":{\"x\":1}");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_string_equal(cfg.cni_version, "1.0.0");
	assert_string_equal(cfg.name, "net");
	assert_true(cfg.has_tcp && cfg.has_udp);
	assert_int_equal(cfg.sizes.tcp, 3000);
	assert_int_equal(cfg.sizes.udp, 100);
	assert_int_equal(cfg.max.tcp, 4096); /* no maxTcp: the default, rounded */
	assert_int_equal(cfg.max.udp, 128);
	assert_int_equal(cfg.on_failure, NSH_ON_FAILURE_WARN);
	assert_int_equal(cfg.strategy, NSHASH_STRATEGY_TEMPLATE);
	nsh_cni_config_free(&cfg);

	struct {
		const char *conf;
		int code;
		const char *fragment;
	} bad[] = {
	    {"{\"cniVersion\":\"1.0.0\"", 6, "truncated JSON"},
	    {"", 6, "no network config on stdin"},
	    {"\"x\"", 6, "stdin holds a string"},
	    {"{}", 1, "network config has no cniVersion"},
	    {"{\"cniVersion\":1}", 7, "\"cniVersion\": 1 is an integer; expected a string"},
	    {CONF("0.2.0", ""), 1, "cniVersion \"0.2.0\" is not supported"},
	    {CONF("1.0.0", ",\"tcp\":\"4096\""), 7, "\"tcp\": \"4096\" is a string; expected a JSON integer"},
	    {CONF("1.0.0", ",\"udp\":65537"), 7, "\"udp\": 65537 is out of range (udp sizes are 0..65536"},
	    {CONF("1.0.0", ",\"tcp\":9223372036854775807"), 7, "is out of range"},
	    {CONF("1.0.0", ",\"tcp\":null"), 7, "\"tcp\": null is null"},
	    {CONF("1.0.0", ",\"tcp\":8192,\"maxTcp\":4096"), 7, "above the allowed maximum 4096 (maxTcp)"},
	    {CONF("1.0.0", ",\"onFailure\":\"Fail\""), 7, "\"onFailure\": \"Fail\" is not fail or warn"},
	    {CONF("1.0.0", ",\"onFailure\":true"), 7, "\"onFailure\": true is a boolean; expected a string"},
	    {CONF("1.0.0", ",\"stateDir\":\"/run/../etc\""), 7, "is not a clean absolute path"},
	    {CONF("1.0.0", ",\"runtimeConfig\":[]"), 7, "\"runtimeConfig\" is an array"},
	    {CONF("1.0.0", ",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":\"x\"}"), 7,
	     "expected an object of strings"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = nsh_cni_config_parse(bad[i].conf, strlen(bad[i].conf), &cfg, &err);
		nsh_cni_config_free(&cfg);
		if (r >= 0 || err.code != bad[i].code || !strstr(err.err.msg, bad[i].fragment))
			fail_msg("%s: want %d \"%s\", got %d %d \"%s\"", bad[i].conf, bad[i].code, bad[i].fragment, r,
				 err.code, err.err.msg);
	}
}

#define ANN(x) ",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{" x "}}"

/* Node-side settings: the node's policy bounds the network config. */
static void test_config_node(void **state)
{
	(void)state;
	struct nsh_cni_config cfg;
	struct nsh_cni_failure err;
	char warn[1024];
	struct nsh_policy pol;
	nsh_policy_defaults(&pol);
	snprintf(pol.state_dir, sizeof(pol.state_dir), "/run/node");
	snprintf(pol.source, sizeof(pol.source), "/etc/n.json");
	pol.max.tcp = 8192;
	pol.max.udp = 1024;
	pol.max_table_bytes = 100000;
	pol.spares = 2;
	pol.on_failure = NSH_ON_FAILURE_WARN;

	/* nothing said: the node's values */
	const char *c = CONF("1.0.0", ",\"tcp\":4096");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_string_equal(cfg.state_dir, "/run/node");
	assert_int_equal(cfg.spares, 0); /* spares: none unless the network asks (they save nothing here) */
	assert_int_equal(cfg.max_table_bytes, 100000);
	assert_int_equal(cfg.max.tcp, 4096);
	assert_int_equal(cfg.on_failure, NSH_ON_FAILURE_WARN);
	assert_string_equal(warn, "");
	nsh_cni_config_free(&cfg);

	/* less: taken; the node's own state dir: accepted */
	c = CONF("1.0.0", ",\"maxTcp\":2048,\"maxTableBytes\":5000,\"spares\":0,\"onFailure\":\"fail\","
			  "\"stateDir\":\"/run/node\",\"strategy\":\"nested\"");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(cfg.max.tcp, 2048);
	assert_int_equal(cfg.max_table_bytes, 5000);
	assert_int_equal(cfg.spares, 0);
	assert_int_equal(cfg.on_failure, NSH_ON_FAILURE_FAIL);
	assert_int_equal(cfg.strategy, NSHASH_STRATEGY_NESTED);
	assert_string_equal(warn, "");
	nsh_cni_config_free(&cfg);

	/* more: the node's values hold, each named */
	c = CONF("1.0.0", ",\"maxTcp\":65536,\"maxUdp\":4096,\"maxTableBytes\":900000,\"spares\":16");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(cfg.max.tcp, 8192);
	assert_int_equal(cfg.max.udp, 1024);
	assert_int_equal(cfg.max_table_bytes, 100000);
	assert_int_equal(cfg.spares, 2);
	assert_non_null(strstr(warn, "network config key \"maxTcp\": 65536 is above this node's maxTcp 8192 "
				     "(/etc/n.json); using 8192"));
	assert_non_null(strstr(warn, "\"maxUdp\": 4096 is above this node's maxUdp 1024"));
	assert_non_null(strstr(warn, "\"maxTableBytes\": 900000 is above this node's maxTableBytes 100000"));
	assert_non_null(strstr(warn, "\"spares\": 16 is above this node's spares 2"));
	nsh_cni_config_free(&cfg);

	/* where the over-cap message (code 102) says the cap lives, per
	 * protocol: the node's policy when it is the lower, the network's
	 * entry, the ConfigMap when nshash-cni-install wrote the entry, the
	 * node's defaults when the network names no sizes */
	static const struct {
		const char *conf, *hint;
	} hints[] = {
	    {CONF("1.0.0", ",\"tcp\":4096,\"maxTcp\":65536" ANN("\"io.nshash.tcp\":\"16384\"")),
	     "(to allow it: raise maxTcp in /etc/n.json, the node's policy (nshash.json(5)))"},
	    {CONF("1.0.0", ",\"tcp\":1024,\"maxTcp\":4096" ANN("\"io.nshash.tcp\":\"8192\"")),
	     "in network \"net\" (to allow it: raise maxTcp in the network config \"net\")"},
	    {CONF("1.0.0", ",\"tcp\":1024,\"udp\":128" ANN("\"io.nshash.udp\":\"512\"")),
	     "(to allow it: set maxUdp in the network config \"net\")"},
	    {CONF("1.0.0", ",\"chainedBy\":\"nshash-cni-install\",\"tcp\":1024,\"maxTcp\":4096"
			   ANN("\"io.nshash.tcp\":\"8192\"")),
	     "(to allow it: raise maxTcp in nshash's entry, which nshash-cni-install writes into this conflist "
	     "from its ConfigMap (as shipped: nshash-cni-config, key nshash-entry.json; a hand edit of the "
	     "conflist is reverted), then kubectl -n kube-system rollout restart daemonset/nshash-cni)"},
	    {CONF("1.0.0", "" ANN("\"io.nshash.tcp\":\"8192\"")),
	     "(to allow it: the network names no sizes: raise defaultTcp in /etc/n.json, the node's policy "
	     "(nshash.json(5)), or set maxTcp in the network's nshash entry)"},
	};
	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		struct nshash_sizes req;
		bool ann;
		assert_int_equal(nsh_cni_config_parse(hints[i].conf, strlen(hints[i].conf), &cfg, &err), 0);
		assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
		assert_true(nsh_cni_request(&cfg, &req, &ann, &err) < 0);
		assert_int_equal(err.code, NSH_CNI_E_REFUSED);
		if (!strstr(err.err.msg, hints[i].hint))
			fail_msg("%s: \"%s\" lacks \"%s\"", hints[i].conf, err.err.msg, hints[i].hint);
		nsh_cni_config_free(&cfg);
	}
	/* chainedBy: a string or absent */
	c = CONF("1.0.0", ",\"chainedBy\":7");
	assert_true(nsh_cni_config_parse(c, strlen(c), &cfg, &err) < 0);
	assert_int_equal(err.code, 7);
	nsh_cni_config_free(&cfg);

	/* a default above the node's cap, another state dir: refused */
	c = CONF("1.0.0", ",\"tcp\":16384");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_true(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err) < 0);
	assert_int_equal(err.code, 7);
	assert_non_null(strstr(err.err.msg, "tcp size 16384 (effective 16384) is above the allowed maximum 8192"));
	assert_non_null(strstr(err.err.msg, "this node's maxTcp 8192 / maxUdp 1024 (/etc/n.json)"));
	nsh_cni_config_free(&cfg);
	c = CONF("1.0.0", ",\"stateDir\":\"/\"");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_true(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err) < 0);
	assert_int_equal(err.code, 7);
	assert_non_null(strstr(err.err.msg, "network config key \"stateDir\": \"/\" is not this node's state dir "
					    "\"/run/node\" (/etc/n.json)"));
	nsh_cni_config_free(&cfg);

	/* the node's defaultTcp/defaultUdp: for a network that names no sizes,
	 * which pods may lower (0: shared) and not raise; a network's own
	 * tcp or udp wins wholly */
	pol.defaults = (struct nshash_sizes){4096, 512};
	c = CONF("1.0.0", ANN("\"io.nshash.tcp\":\"0\""));
	struct nshash_sizes req;
	bool from_ann;
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(cfg.sizes.tcp, 4096);
	assert_int_equal(cfg.sizes.udp, 512);
	assert_int_equal(cfg.max.tcp, 4096);
	assert_int_equal(cfg.max.udp, 512);
	assert_int_equal(nsh_cni_request(&cfg, &req, &from_ann, &err), 0);
	assert_int_equal(req.tcp, 0);
	assert_int_equal(req.udp, 512);
	assert_true(from_ann);
	nsh_cni_config_free(&cfg);
	c = CONF("1.0.0", ",\"maxTcp\":8192" ANN("\"io.nshash.tcp\":\"8192\",\"io.nshash.udp\":\"0\""));
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(nsh_cni_request(&cfg, &req, &from_ann, &err), 0);
	assert_int_equal(req.tcp, 8192);
	assert_int_equal(req.udp, 0);
	nsh_cni_config_free(&cfg);
	c = CONF("1.0.0", ",\"udp\":1024");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(cfg.sizes.tcp, 0);
	assert_int_equal(cfg.sizes.udp, 1024);
	nsh_cni_config_free(&cfg);
	pol.defaults = (struct nshash_sizes){0, 0};

	/* a node that says nested: a network cannot ask for templates */
	pol.strategy = NSHASH_STRATEGY_NESTED;
	c = CONF("1.0.0", ",\"strategy\":\"template\"");
	assert_int_equal(nsh_cni_config_parse(c, strlen(c), &cfg, &err), 0);
	assert_int_equal(nsh_cni_config_node(&cfg, &pol, warn, sizeof(warn), &err), 0);
	assert_int_equal(cfg.strategy, NSHASH_STRATEGY_NESTED);
	nsh_cni_config_free(&cfg);

	/* an unreadable node policy fails ADD (code 7), never DEL */
	struct nsh_cni_env env = {.command = "ADD", .containerid = "c", .netns = "/run/netns/p", .ifname = "eth0"};
	struct nsh_cni_node bad;
	memset(&bad, 0, sizeof(bad));
	nsh_policy_defaults(&bad.policy);
	bad.failed = true;
	snprintf(bad.error.msg, sizeof(bad.error.msg), "policy file /p: owned by uid 5, not root");
	c = CONF("1.0.0", ",\"tcp\":4096");
	nsh_cni_output_free(&out);
	nsh_cni_run(&env, c, strlen(c), &mock_ops, &bad, &out);
	expect_error(7, "node policy: policy file /p: owned by uid 5, not root");
	env.command = "DEL";
	nsh_cni_output_free(&out);
	nsh_cni_run(&env, c, strlen(c), &mock_ops, &bad, &out);
	assert_int_equal(out.status, 0);
	nsh_cni_output_free(&out);
}

static void request_of(const char *conf, int want_rc, uint32_t tcp, uint32_t udp, bool from_ann, const char *fragment)
{
	struct nsh_cni_config cfg;
	struct nsh_cni_failure err = {0};
	struct nshash_sizes req = {0, 0};
	bool ann = false;
	if (nsh_cni_config_parse(conf, strlen(conf), &cfg, &err) != 0)
		fail_msg("%s: %s", conf, err.err.msg);
	int r = nsh_cni_request(&cfg, &req, &ann, &err);
	nsh_cni_config_free(&cfg);
	if ((r < 0) != (want_rc < 0))
		fail_msg("%s: rc %d (%s)", conf, r, err.err.msg);
	if (r == 0) {
		assert_int_equal(req.tcp, tcp);
		assert_int_equal(req.udp, udp);
		assert_int_equal(ann, from_ann);
	} else {
		assert_int_equal(err.code, NSH_CNI_E_REFUSED);
		if (!strstr(err.err.msg, fragment))
			fail_msg("\"%s\" lacks \"%s\"", err.err.msg, fragment);
	}
}

static void test_request(void **state)
{
	(void)state;
	request_of(CONF("1.0.0", ",\"tcp\":4096"), 0, 4096, 0, false, NULL);
	request_of(CONF("1.0.0", ""), 0, 0, 0, false, NULL);
	request_of(CONF("1.0.0", ",\"tcp\":4096,\"udp\":512,\"maxTcp\":65536" ANN("\"io.nshash.tcp\":\"65536\"")), 0,
		   65536, 512, true, NULL);
	request_of(CONF("1.0.0", ",\"tcp\":4096,\"maxTcp\":65536" ANN("\"io.nshash.tcp\":\"0\"")), 0, 0, 0, true, NULL);
	request_of(CONF("1.0.0", ",\"tcp\":4096,\"maxTcp\":65536" ANN("\"io.nshash.tcp\":\"65537\"")), -1, 0, 0, false,
		   "tcp size 65537 (effective 131072) is above the allowed maximum 65536 (maxTcp)");
	request_of(CONF("1.0.0", ",\"tcp\":3000" ANN("\"io.nshash.tcp\":\"4096\"")), 0, 4096, 0, true, NULL);
	request_of(CONF("1.0.0", ",\"tcp\":3000" ANN("\"io.nshash.tcp\":\"4097\"")), -1, 0, 0, false,
		   "above the allowed maximum 4096 (maxTcp)");
	request_of(CONF("1.0.0", "" ANN("\"io.nshash.udp\":\"128\"")), -1, 0, 0, false,
		   "above the allowed maximum 0 (maxUdp)");
	request_of(CONF("1.0.0", ",\"maxUdp\":4096" ANN("\"io.nshash.udp\":\" 128\"")), -1, 0, 0, false,
		   "pod annotation io.nshash.udp: \" 128\" is not a decimal number");
	request_of(CONF("1.0.0", ",\"maxUdp\":4096" ANN("\"io.nshash.udp\":[1]")), -1, 0, 0, false,
		   "pod annotation \"io.nshash.udp\": [1] is an array; expected a string");
	/* other annotations and a null annotation map are ignored */
	request_of(CONF("1.0.0", ",\"udp\":256" ANN("\"io.nshash.other\":\"x\",\"app\":\"y\"")), 0, 0, 256, false,
		   NULL);
	request_of(CONF("1.0.0", ",\"udp\":256,\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":null}"), 0, 0,
		   256, false, NULL);
}

static void test_add_nothing_requested(void **state)
{
	(void)state;
	mock_reset();
	run("ADD", CONF("0.3.1", ""));
	expect_output("{\"cniVersion\":\"0.3.1\"}");
	assert_int_equal(m.n_classify + m.n_inspect + m.n_replace, 0); /* netns never looked at */
	run("ADD", CONF("1.1.0", ",\"prevResult\":{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.2/24\"}]}"));
	expect_output("{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.0.0.2/24\"}]}");
}

static void test_add_replaces_empty_pin(void **state)
{
	(void)state;
	mock_reset();
	run("ADD", CONF("1.0.0", ",\"tcp\":3000,\"udp\":100,\"strategy\":\"template\",\"stateDir\":\"/run/x\""));
	expect_output("{\"cniVersion\":\"1.0.0\"}");
	assert_int_equal(m.n_replace, 1);
	assert_int_equal(m.replace_opts.sizes.tcp, 3000);
	assert_int_equal(m.replace_opts.sizes.udp, 100);
	assert_int_equal(m.replace_opts.strategy, NSHASH_STRATEGY_TEMPLATE);
	assert_string_equal(m.replace_opts.state_dir, "/run/x");
	assert_false(m.replace_opts.keep_lo_down);
	assert_non_null(strstr(out.log, "replaced /run/netns/cni-1 by a netns with tcp 4096, udp 128"));
}

static void test_add_already_sized(void **state)
{
	(void)state;
	mock_reset();
	m.tcp = 4096;
	m.udp = 128;
	run("ADD", CONF("1.0.0", ",\"tcp\":3000,\"udp\":100"));
	expect_output("{\"cniVersion\":\"1.0.0\"}");
	/* looked at while a netns was made alongside (dropped unused): never swapped in */
	assert_int_equal(m.n_inspect, 1);
	assert_int_equal(m.n_replace, 0);
	assert_non_null(strstr(out.log, "/run/netns/cni-1 already has tcp 3000, udp 100"));
}

static void test_add_not_resizable(void **state)
{
	(void)state;
	struct {
		enum nshash_path_kind kind;
		const char *detail;
		unsigned links;
		pid_t pid;
		const char *extra;
		const char *fragment;
	} cases[] = {
	    {NSHASH_PATH_PROC, "net:[4026532]", 0, 0, "",
	     "it is a process's netns, created by the runtime with the container already inside"},
	    {NSHASH_PATH_LINK, "/run/netns/real", 0, 0, "", "it is a symbolic link (to /run/netns/real)"},
	    {NSHASH_PATH_PIN, NULL, 1, 0, "", "it already has interfaces besides lo (eth0); place nshash first"},
	    {NSHASH_PATH_PIN, NULL, 0, 4242, "", "process 4242 (pause) of the pod's cgroup already lives in it"},
	    {NSHASH_PATH_PIN, NULL, 0, 0,
	     ",\"prevResult\":{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"br0\"},{\"name\":\"eth0\","
	     "\"sandbox\":\"/run/netns/cni-1\"}]}",
	     "prevResult already has container interfaces (eth0), so nshash is not the first plugin"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int warn = 0; warn < 2; warn++) {
			mock_reset();
			m.kind = cases[i].kind;
			m.detail = cases[i].detail;
			m.occ.links = cases[i].links;
			if (cases[i].links)
				snprintf(m.occ.link_names, sizeof(m.occ.link_names), "eth0");
			m.occ.pid = cases[i].pid;
			snprintf(m.occ.comm, sizeof(m.occ.comm), "pause");
			char conf[1024];
			snprintf(conf, sizeof(conf),
				 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"tcp\":4096,\"onFailure\":\"%s\"%s}",
				 warn ? "warn" : "fail", cases[i].extra);
			run("ADD", conf);
			if (!warn) {
				expect_error(100, cases[i].fragment);
			} else {
				assert_int_equal(out.status, 0);
				assert_non_null(out.stdout_text);
				assert_non_null(strstr(out.log, "warning (onFailure warn, code 100)"));
				assert_non_null(strstr(out.log, cases[i].fragment));
			}
			assert_int_equal(m.n_replace, 0);
		}
	}
}

/* A process of the pod found inside is refused at once: the look is
 * confined to the pod's cgroup, where no plugin of a parallel network
 * passes through (they run in the runtime's), so there is nothing to wait
 * for; and without a pod cgroup (these operations: no runtimeConfig) no
 * process is looked for at all, only the interfaces. */
static void test_add_process_refused_at_once(void **state)
{
	(void)state;
	struct nsh_cni_env env = {.command = "ADD", .containerid = "c", .netns = "/run/netns/p", .ifname = "eth0"};
	const char *c = CONF("1.0.0", ",\"tcp\":4096");
	mock_reset();
	m.occ.pid = 77;
	snprintf(m.occ.comm, sizeof(m.occ.comm), "sleep");
	nsh_cni_output_free(&out);
	nsh_cni_run(&env, c, strlen(c), &mock_ops, test_node(), &out);
	expect_error(100, "process 77 (sleep) of the pod's cgroup already lives in it; a netns can be replaced only "
			  "before anything joins it (the runtime started the pod's sandbox before ADD)");
	assert_int_equal(m.n_occupancy, 1);
	assert_int_equal(m.n_replace, 0);
	assert_int_equal(m.occupancy_cgroup_fd, -1);
}

static void test_add_bad_netns(void **state)
{
	(void)state;
	mock_reset();
	m.kind = NSHASH_PATH_MISSING;
	m.detail = "no such file";
	run("ADD", CONF("1.0.0", ",\"tcp\":4096,\"onFailure\":\"warn\""));
	/* a netns that is not one is an env error even under warn */
	expect_error(4, "CNI_NETNS=/run/netns/cni-1 is not a network namespace: no such file");
	m.kind = NSHASH_PATH_NOT_NETNS;
	m.detail = "a directory";
	run("ADD", CONF("1.0.0", ",\"tcp\":4096"));
	expect_error(4, "is not a network namespace: a directory");
	assert_int_equal(m.n_replace, 0);
}

static void test_add_kernel(void **state)
{
	(void)state;
	mock_reset();
	m.udp_knob = false;
	run("ADD", CONF("1.0.0", ",\"udp\":1024"));
	expect_error(103, "kernel 6.0.9 has no net.ipv4.udp_child_hash_entries (needs Linux 6.2)");
	run("ADD", CONF("1.0.0", ",\"tcp\":1024")); /* tcp only: fine on 6.1 */
	expect_output("{\"cniVersion\":\"1.0.0\"}");

	mock_reset();
	m.caps = false;
	run("ADD", CONF("1.0.0", ",\"tcp\":1024"));
	expect_error(103, "missing CAP_SYS_ADMIN");

	mock_reset();
	m.replace_errnum = NSHASH_E_FALLBACK;
	run("ADD", CONF("1.0.0", ",\"tcp\":16777216"));
	expect_error(101, "mock failure");
	run("ADD", CONF("1.0.0", ",\"tcp\":16777216,\"onFailure\":\"warn\""));
	expect_output("{\"cniVersion\":\"1.0.0\"}");
	assert_non_null(strstr(out.log, "warning (onFailure warn, code 101)"));

	mock_reset();
	m.replace_errnum = EPERM;
	run("ADD", CONF("1.0.0", ",\"tcp\":4096"));
	expect_error(103, "replace netns /run/netns/cni-1: mock failure");

	mock_reset();
	m.replace_invisible = true; /* bound, but the path does not show it */
	run("ADD", CONF("1.0.0", ",\"tcp\":4096"));
	expect_error(103,
		     "after replacing the netns, /run/netns/cni-1 does not show it: /run/netns/cni-1: tcp size 4096 "
		     "requested (effective 4096), kernel gave the shared table");

	mock_reset();
	m.replace_tcp = -262144; /* replaced, but the kernel fell back */
	run("ADD", CONF("1.0.0", ",\"tcp\":4096"));
	expect_error(101, "kernel gave the shared table (262144) (allocation failed?)");
}

static void test_check(void **state)
{
	(void)state;
	mock_reset();
	run("CHECK", CONF("0.3.1", ",\"tcp\":4096"));
	expect_error(1, "CHECK needs cniVersion 0.4.0 or later; the network config says 0.3.1");
	run("CHECK", CONF("0.4.0", ",\"tcp\":4096,\"udp\":128"));
	expect_error(104, "CHECK /run/netns/cni-1: requested tcp 4096, udp 128, the netns has tcp shared 262144, "
			  "udp shared 16384");
	m.tcp = 4096;
	m.udp = 128;
	run("CHECK", CONF("1.0.0", ",\"tcp\":4000,\"udp\":1"));
	expect_silent_success();
	run("CHECK", CONF("1.0.0", ",\"tcp\":8192,\"udp\":1,\"onFailure\":\"warn\""));
	expect_silent_success();
	assert_non_null(strstr(out.log, "code 104"));
	assert_int_equal(m.n_replace, 0);
}

static void test_del_gc_status_version(void **state)
{
	(void)state;
	mock_reset();
	run("DEL", CONF("0.3.0", ",\"tcp\":4096" ANN("\"io.nshash.tcp\":\"junk\"")));
	expect_silent_success();
	run("GC", CONF("1.1.0", ",\"cni.dev/valid-attachments\":[]"));
	expect_silent_success();
	run("GC", CONF("1.0.0", ""));
	expect_error(1, "GC needs cniVersion 1.1.0 or later");
	assert_int_equal(m.n_classify + m.n_inspect + m.n_replace + m.n_occupancy, 0);

	run("STATUS", CONF("1.1.0", ",\"tcp\":4096"));
	expect_silent_success();
	m.tcp_knob = false;
	run("STATUS", CONF("1.1.0", ",\"maxTcp\":4096"));
	expect_error(50, "nshash cannot size netns here: kernel 6.0.9 has no net.ipv4.tcp_child_ehash_entries");
	run("STATUS", CONF("1.1.0", ",\"udp\":4096")); /* this network never asks for tcp */
	expect_silent_success();

	run("VERSION", "{\"cniVersion\":\"0.3.0\"}");
	expect_output("{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\","
		      "\"1.1.0\"]}");
	run("VERSION", "");
	expect_output("{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\","
		      "\"1.1.0\"]}");
}

static void test_error_json(void **state)
{
	(void)state;
	struct nsh_cni_failure err;
	assert_int_equal(nsh_cni_fail(&err, 7, NULL, "key \"%s\": bad \"v\"", "tcp"), -EINVAL);
	char *j = nsh_cni_error_json("0.4.0", &err);
	assert_string_equal(j, "{\"cniVersion\":\"0.4.0\",\"code\":7,\"msg\":\"key \\\"tcp\\\": bad \\\"v\\\"\"}");
	free(j);
	nsh_cni_fail(&err, 1, "0.3.0, 0.3.1", "unsupported");
	j = nsh_cni_error_json(NULL, &err);
	assert_string_equal(j, "{\"cniVersion\":\"1.1.0\",\"code\":1,\"msg\":\"unsupported\",\"details\":\"0.3.0, "
			       "0.3.1\"}");
	free(j);
	/* an env error answers in the config's version when stdin has one */
	struct nsh_cni_env env = {.command = "ADD"};
	const char *c = CONF("0.4.0", "");
	nsh_cni_output_free(&out);
	nsh_cni_run(&env, c, strlen(c), &mock_ops, test_node(), &out);
	expect_error(4, "CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME");
	assert_non_null(strstr(out.stdout_text, "\"cniVersion\":\"0.4.0\""));
	nsh_cni_output_free(&out);
}

/* CNI_ARGS as libcni writes it: the pod's namespace and name for the record. */
static void test_cni_args(void **state)
{
	(void)state;
	char v[16];
	const char *a = "IgnoreUnknown=1;K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=p\"o\nd;K8S_POD_NAME2=x";
	assert_true(nsh_cni_args_get(a, "K8S_POD_NAMESPACE", v, sizeof(v)));
	assert_string_equal(v, "kube-system");
	assert_true(nsh_cni_args_get(a, "K8S_POD_NAME", v, sizeof(v)));
	assert_string_equal(v, "p\"o\nd");
	assert_false(nsh_cni_args_get(a, "K8S_POD", v, sizeof(v)));
	assert_string_equal(v, "");
	assert_false(nsh_cni_args_get(NULL, "K8S_POD_NAME", v, sizeof(v)));
	assert_true(nsh_cni_args_get("K8S_POD_NAME=", "K8S_POD_NAME", v, sizeof(v)));
	assert_string_equal(v, "");
	assert_true(nsh_cni_args_get("K8S_POD_NAME=0123456789abcdefXYZ", "K8S_POD_NAME", v, sizeof(v)));
	assert_string_equal(v, "0123456789abcde"); /* cut to fit */
	assert_false(nsh_cni_args_get(";;=;K8S_POD_NAMEX=1", "K8S_POD_NAME", v, sizeof(v)));
}

/* runtimeConfig.cgroupPath: a network config may carry any (issue 31);
 * only the cgroup kubelet made for the pod being added is taken. */
static void test_pod_cgroup(void **state)
{
	(void)state;
	char rel[256], w[512];
	const char *uid = "0c8e2e5a-3f0b-4e1a-9d51-6a4f3c0e9b7d";
	/* cgroupfs and systemd drivers, every QoS class */
	assert_int_equal(nsh_cni_pod_cgroup("/kubepods/burstable/pod0c8e2e5a-3f0b-4e1a-9d51-6a4f3c0e9b7d", uid, rel,
					    sizeof(rel), w, sizeof(w)),
			 0);
	assert_string_equal(rel, "kubepods/burstable/pod0c8e2e5a-3f0b-4e1a-9d51-6a4f3c0e9b7d");
	assert_int_equal(nsh_cni_pod_cgroup("/kubepods/pod0c8e2e5a-3f0b-4e1a-9d51-6a4f3c0e9b7d", uid, rel, sizeof(rel),
					    w, sizeof(w)),
			 0);
	assert_string_equal(rel, "kubepods/pod0c8e2e5a-3f0b-4e1a-9d51-6a4f3c0e9b7d");
	assert_int_equal(nsh_cni_pod_cgroup("kubepods-besteffort-pod0c8e2e5a_3f0b_4e1a_9d51_6a4f3c0e9b7d.slice", uid,
					    rel, sizeof(rel), w, sizeof(w)),
			 0);
	assert_string_equal(rel, "kubepods.slice/kubepods-besteffort.slice/"
				 "kubepods-besteffort-pod0c8e2e5a_3f0b_4e1a_9d51_6a4f3c0e9b7d.slice");
	assert_string_equal(w, "");
	assert_int_equal(nsh_cni_pod_cgroup("kubepods-pod0c8e2e5a_3f0b_4e1a_9d51_6a4f3c0e9b7d.slice", uid, rel,
					    sizeof(rel), w, sizeof(w)),
			 0);
	assert_string_equal(rel, "kubepods.slice/kubepods-pod0c8e2e5a_3f0b_4e1a_9d51_6a4f3c0e9b7d.slice");

#define OTHER                                                                                                          \
	"not the cgroup of the pod being added (K8S_POD_UID \"u-1\": its last component must be podu-1); a network "   \
	"config cannot choose the cgroup that pays"
#define OTHER_SLICE                                                                                                    \
	"not the cgroup of the pod being added (K8S_POD_UID \"u-1\": its last component must end in -podu_1.slice); "  \
	"a "                                                                                                           \
	"network config cannot choose the cgroup that pays"
#define NO_UID                                                                                                         \
	"CNI_ARGS has no K8S_POD_UID to check it against (only the cgroup kubelet made for the pod being added is "    \
	"charged)"
	static const struct {
		const char *cg, *uid;
		int want;
		const char *why;
	} refused[] = {
	    /* another pod's cgroup, the root, a parent of the pod's, a child */
	    {"/kubepods/burstable/podu-2", "u-1", -EPERM, OTHER},
	    {"/", "u-1", -EPERM, OTHER},
	    {"/kubepods/burstable", "u-1", -EPERM, OTHER},
	    {"/kubepods/podu-1/x", "u-1", -EPERM, OTHER},
	    {"/kubepods/podu-10", "u-1", -EPERM, OTHER},
	    {"/kubepods/xpodu-1", "u-1", -EPERM, OTHER},
	    {"/kubepods/podu_1", "u-1", -EPERM, OTHER},
	    {"kubepods-burstable-podu_2.slice", "u-1", -EPERM, OTHER_SLICE},
	    {"kubepods-burstable.slice", "u-1", -EPERM, OTHER_SLICE},
	    {"podu_1.slice", "u-1", -EPERM, OTHER_SLICE},
	    {"kubepods-burstable-xpodu_1.slice", "u-1", -EPERM, OTHER_SLICE},
	    /* no uid, or one that is not a uid: nothing to check against */
	    {"/kubepods/podu-1", NULL, -EPERM, NO_UID},
	    {"/kubepods/podu-1", "", -EPERM, NO_UID},
	    {"/kubepods/pod_a", "_a", -EPERM, "K8S_POD_UID=\"_a\" is not a pod uid (letters, digits, '-')"},
	    {"/kubepods/poda/b", "a/b", -EPERM, "K8S_POD_UID=\"a/b\" is not a pod uid (letters, digits, '-')"},
	    /* not a clean path: refused before the uid is looked at */
	    {"/kubepods/../podu-1", "u-1", -EINVAL, "Invalid argument"},
	    {"//podu-1", "u-1", -EINVAL, "Invalid argument"},
	    {"", "u-1", -EINVAL, "Invalid argument"},
	    {"/kubepods/podu-1\n", "u-1", -EINVAL, "Invalid argument"},
	    {"kubepods/podu-1", "u-1", -EINVAL, "Invalid argument"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(nsh_cni_pod_cgroup(refused[i].cg, refused[i].uid, rel, sizeof(rel), w, sizeof(w)),
				 refused[i].want);
		assert_string_equal(rel, "");
		assert_string_equal(w, refused[i].why);
	}
	/* longer than the room for it */
	char small[8];
	assert_int_equal(nsh_cni_pod_cgroup("/kubepods/podu-1", "u-1", small, sizeof(small), w, sizeof(w)),
			 -ENAMETOOLONG);
	assert_int_equal(nsh_cni_pod_cgroup("a-b-c-podu_1.slice", "u-1", small, sizeof(small), w, sizeof(w)),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_versions),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_config),
	    cmocka_unit_test(test_config_node),
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_add_nothing_requested),
	    cmocka_unit_test(test_add_replaces_empty_pin),
	    cmocka_unit_test(test_add_already_sized),
	    cmocka_unit_test(test_add_not_resizable),
	    cmocka_unit_test(test_add_process_refused_at_once),
	    cmocka_unit_test(test_add_bad_netns),
	    cmocka_unit_test(test_add_kernel),
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_del_gc_status_version),
	    cmocka_unit_test(test_error_json),
	    cmocka_unit_test(test_cni_args),
	    cmocka_unit_test(test_pod_cgroup),
	};
	return cmocka_run_group_tests_name("cni", tests, NULL, NULL);
}
