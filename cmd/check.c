/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash check: what the kernel and the caller can do, the policy's
 * defaults (stats.c prints them). */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"

/* The policy's defaultTcp/defaultUdp (also stats's last line). */
/* ------------------------------------------------------------- the defaults */

json_object *cli_defaults_json(const struct nsh_policy *policy)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "tcp", json_object_new_int64(policy->defaults.tcp));
	json_object_object_add(o, "udp", json_object_new_int64(policy->defaults.udp));
	json_object_object_add(o, "source", json_object_new_string(policy->source));
	return o;
}

void cli_defaults_text(const struct nsh_policy *policy, char *out, size_t len)
{
	if (!nsh_policy_has_defaults(policy))
		snprintf(out, len,
			 "defaults: none, a container that asks for no sizes shares the global tables (policy: %s)\n",
			 policy->source);
	else
		snprintf(out, len,
			 "defaults: tcp=%u udp=%u for every container that asks for no sizes (defaultTcp/defaultUdp of "
			 "%s)\n",
			 policy->defaults.tcp, policy->defaults.udp, policy->source);
}

static const char check_usage[] = "Usage: nshash check [-j]\n"
				  "\n"
				  "Whether this host supports per-netns tables (kernel 6.1 TCP, 6.2 UDP), whether you\n"
				  "have the privileges to use them (CAP_SYS_ADMIN, CAP_NET_ADMIN), and whether the\n"
				  "state dir is writable.  Exit 0 when nshash works for you here, 1 otherwise (the\n"
				  "reasons on stderr).\n";

/* A value the kernel reports, or JSON null / "unknown" where it does not. */
static json_object *json_known(bool known, int64_t v)
{
	return known ? json_object_new_int64(v) : NULL;
}

/* What `check` finds: the kernel's answer, then the caller's problems
 * (the first host_problems of them are the host's). */
struct check {
	struct nshash_probe p;
	const char *state_dir;
	char problems[5][1024];
	int np, host_problems;
	bool privileged, state_ok, policy_ok;
	struct nsh_policy policy;
};

static int check_gather(struct check *k, struct nshash_error *err)
{
	if (nshash_probe(&k->p, err) < 0)
		return -1;
	const struct nshash_probe *p = &k->p;
	/* Two questions: can this host do it (kernel), and can you (privileges,
	 * state dir)?  Each problem is one stderr line. */
	struct nshash_probe host = *p; /* the kernel alone: privileges are the next question */
	host.cap_sys_admin = host.cap_net_admin = true;
	if (nshash_probe_require(&host, (struct nshash_sizes){1, 0}, err) < 0)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	if (p->has_tcp_knob && nshash_probe_require(&host, (struct nshash_sizes){0, 1}, err) < 0)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	k->host_problems = k->np;
	k->privileged = p->cap_sys_admin && p->cap_net_admin;
	if (!k->privileged)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]),
			 "you lack %s%s%s: run as root, or inside a user namespace with a network and mount "
			 "namespace of its own (unshare -Urmn) with --state-dir in a directory you own",
			 p->cap_sys_admin ? "" : "CAP_SYS_ADMIN", !p->cap_sys_admin && !p->cap_net_admin ? " and " : "",
			 p->cap_net_admin ? "" : "CAP_NET_ADMIN");
	/* Writable, or creatable: its nearest existing ancestor is writable. */
	char probe_dir[4096];
	snprintf(probe_dir, sizeof(probe_dir), "%s", k->state_dir);
	while (!(k->state_ok = access(probe_dir, W_OK) == 0) && errno == ENOENT) {
		char *slash = strrchr(probe_dir, '/');
		if (!slash || slash == probe_dir) {
			k->state_ok = access("/", W_OK) == 0;
			break;
		}
		*slash = '\0';
	}
	if (!k->state_ok)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]),
			 "state dir %s is not writable for you: use --state-dir (or NSHASH_STATE_DIR) with a directory "
			 "you own, or run as root",
			 k->state_dir);
	/* the node's policy, as the hook, the wrapper and the plugin read it:
	 * one they cannot read fails every container start */
	k->policy_ok = nsh_policy_load(nsh_policy_env(), &k->policy, err) == 0;
	if (!k->policy_ok)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	return 0;
}

static void check_json(const struct check *k)
{
	const struct nshash_probe *p = &k->p;
	bool host_ok = k->host_problems == 0;
	bool tcp_known = p->has_tcp_knob && p->global_tcp > 0, udp_known = p->has_udp_knob && p->global_udp > 0;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "kernel", json_object_new_string(p->release));
	json_object_object_add(o, "tcp_supported", json_object_new_boolean(p->has_tcp_knob));
	json_object_object_add(o, "udp_supported", json_object_new_boolean(p->has_udp_knob));
	json_object_object_add(o, "global_tcp_entries", json_known(tcp_known, p->global_tcp));
	json_object_object_add(o, "global_udp_entries", json_known(udp_known, p->global_udp));
	json_object_object_add(o, "host_tcp_child", json_known(p->caller_tcp_child >= 0, p->caller_tcp_child));
	json_object_object_add(o, "host_udp_child", json_known(p->caller_udp_child >= 0, p->caller_udp_child));
	json_object_object_add(o, "cap_sys_admin", json_object_new_boolean(p->cap_sys_admin));
	json_object_object_add(o, "cap_net_admin", json_object_new_boolean(p->cap_net_admin));
	json_object_object_add(o, "state_dir", json_object_new_string(k->state_dir));
	json_object_object_add(o, "state_dir_writable", json_object_new_boolean(k->state_ok));
	/* host_supported and host_ok say the same (both are in use by scripts) */
	json_object_object_add(o, "host_supported", json_object_new_boolean(host_ok));
	json_object_object_add(o, "privileged", json_object_new_boolean(k->privileged));
	json_object_object_add(o, "policy_ok", json_object_new_boolean(k->policy_ok));
	json_object_object_add(o, "defaults", k->policy_ok ? cli_defaults_json(&k->policy) : NULL);
	json_object_object_add(o, "host_ok", json_object_new_boolean(host_ok));
	json_object_object_add(o, "caller_ok", json_object_new_boolean(k->np == k->host_problems));
	json_object *a = json_object_new_array();
	for (int i = 0; i < k->np; i++)
		json_object_array_add(a, json_object_new_string(k->problems[i]));
	json_object_object_add(o, "problems", a);
	json_object_object_add(o, "ok", json_object_new_boolean(k->np == 0));
	cli_print_json(o);
}

static void check_text(const struct check *k)
{
	const struct nshash_probe *p = &k->p;
	bool host_ok = k->host_problems == 0;
	bool host_set = p->caller_tcp_child > 0 || p->caller_udp_child > 0;
	char t[48] = "unknown (kernel too old to report it)", u[48] = "unknown (kernel too old to report it)";
	if (p->has_tcp_knob && p->global_tcp > 0)
		snprintf(t, sizeof(t), "%ld entries", p->global_tcp);
	if (p->has_udp_knob && p->global_udp > 0)
		snprintf(u, sizeof(u), "%ld entries", p->global_udp);
	printf("kernel: %s\n", p->release);
	printf("tcp per-netns tables (6.1+): %s\n", p->has_tcp_knob ? "yes" : "no");
	printf("udp per-netns tables (6.2+): %s\n", p->has_udp_knob ? "yes" : "no");
	printf("global tables: tcp %s, udp %s\n", t, u);
	if (p->caller_tcp_child >= 0 || p->caller_udp_child >= 0) {
		printf("host child knobs:");
		if (p->caller_tcp_child >= 0)
			printf(" tcp %ld", p->caller_tcp_child);
		if (p->caller_udp_child >= 0)
			printf("%s udp %ld", p->caller_tcp_child >= 0 ? "," : "", p->caller_udp_child);
		printf("%s\n", host_set ? " (set on the host: every netns created here gets own tables; "
					  "nshash never sets these)"
					: "");
	}
	printf("capabilities: CAP_SYS_ADMIN %s, CAP_NET_ADMIN %s\n", p->cap_sys_admin ? "yes" : "no",
	       p->cap_net_admin ? "yes" : "no");
	printf("state dir: %s (%s)\n", k->state_dir, k->state_ok ? "writable" : "NOT writable");
	char line[1400] = "policy: cannot be read (see below)\n";
	if (k->policy_ok)
		cli_defaults_text(&k->policy, line, sizeof(line));
	fputs(line, stdout);
	printf("this host: %s\n", host_ok ? "supports per-netns tables" : "cannot use nshash (kernel)");
	printf("you: %s\n", k->privileged ? "have the privileges" : "lack the privileges: run as root");
	if (!host_ok)
		printf("result: this host cannot use nshash\n");
	else if (k->np)
		printf("result: this host supports nshash, but you cannot use it as you are (see below)\n");
	else
		printf("result: ok\n");
}

static int cmd_check(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return cli_fail(EXIT_USAGE, "check: takes no arguments");
	struct check k = {.state_dir = c->state_dir};
	struct nshash_error err = {0};
	if (check_gather(&k, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (c->json)
		check_json(&k);
	else
		check_text(&k);
	for (int i = 0; i < k.np; i++)
		cli_fail(0, "%s", k.problems[i]);
	return k.np ? EXIT_FAIL : EXIT_OK;
}

const struct command cli_cmd_check = {"check", cmd_check, BIT(OPT_JSON), check_usage};
