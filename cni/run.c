/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One plugin invocation: env + stdin -> output; never exits or prints. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cni.h"

static int version_allows(struct nsh_cni_call *r)
{
	const char *need = NULL;
	if (r->command == NSH_CNI_CHECK)
		need = "0.4.0";
	else if (r->command == NSH_CNI_STATUS || r->command == NSH_CNI_GC)
		need = "1.1.0";
	if (need && nsh_cni_version_cmp(r->cfg.cni_version, need) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_VERSION, NULL,
				    "%s needs cniVersion %s or later; the network config says %s", r->env->command,
				    need, r->cfg.cni_version);
	return 0;
}

/* For an error found before the config was read (env): answer in the
 * config's cniVersion when stdin has a supported one. */
static void peek_version(const char *input, size_t len, char *out, size_t outlen)
{
	json_object *root, *v;
	struct nsh_cni_failure ignored;
	if (nsh_cni_decode(input, len, &root, &ignored) < 0)
		return;
	if (json_object_object_get_ex(root, "cniVersion", &v) && json_object_is_type(v, json_type_string) &&
	    nsh_cni_version_supported(json_object_get_string(v)))
		snprintf(out, outlen, "%s", json_object_get_string(v));
	json_object_put(root);
}

void nsh_cni_node_load(struct nsh_cni_node *node)
{
	memset(node, 0, sizeof(*node));
	if (nsh_policy_load(nsh_policy_env(), &node->policy, &node->error) < 0) {
		node->failed = true;
		nsh_policy_defaults(&node->policy);
	}
}

/* The config as the node allows it (warnings logged), or code 7. */
static int node_applied(struct nsh_cni_call *r, const struct nsh_cni_node *node)
{
	static struct nsh_cni_node defaults; /* the config points into it: it outlives the run */
	if (!node) {
		memset(&defaults, 0, sizeof(defaults));
		nsh_policy_defaults(&defaults.policy);
		node = &defaults;
	}
	if (node->failed)
		return nsh_cni_fail(&r->err, NSH_CNI_E_CONFIG, NULL, "node policy: %s", node->error.msg);
	char warn[2048];
	int rc = nsh_cni_config_node(&r->cfg, &node->policy, warn, sizeof(warn), &r->err);
	for (char *line = warn, *next; rc == 0 && *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		nsh_cni_log(r, "warning: %s", line);
	}
	r->out->stale_age = node->policy.stale_age;
	r->out->reclaim_interval = node->policy.reclaim_interval;
	return rc;
}

void nsh_cni_run(const struct nsh_cni_env *env, const char *input, size_t len, const struct nsh_cni_ops *ops,
		 const struct nsh_cni_node *node, struct nsh_cni_output *out)
{
	memset(out, 0, sizeof(*out));
	struct nsh_cni_call r = {.env = env, .ops = ops ? ops : &nsh_cni_system_ops, .out = out};
	nsh_cni_log_setup(&r);
	int rc = nsh_cni_env_check(env, &r.command, &r.err);
	if (rc == 0 && r.command == NSH_CNI_VERSION) {
		rc = nsh_cni_cmd_version(&r, input, len);
		goto done;
	}
	if (rc == 0)
		rc = nsh_cni_config_parse(input, len, &r.cfg, &r.err);
	if (rc == 0)
		rc = node_applied(&r, node); /* DEL passes a refusal too, below */
	/* The spec's DEL rule: release what can be released, never fail for a
	 * config ADD would have refused (nshash keeps nothing per attachment). */
	if (rc < 0 && r.command == NSH_CNI_DEL && r.err.code == NSH_CNI_E_CONFIG) {
		nsh_cni_log(&r, "DEL succeeds despite a network config ADD would refuse: %s", r.err.err.msg);
		rc = 0;
		goto done;
	}
	if (rc == 0)
		rc = version_allows(&r);
	if (rc == 0) {
		out->have_config = true; /* for the caller's reclaim after the run */
		switch (r.command) {
		case NSH_CNI_ADD:
			rc = nsh_cni_cmd_add(&r);
			break;
		case NSH_CNI_CHECK:
			rc = nsh_cni_cmd_check(&r);
			break;
		case NSH_CNI_STATUS:
			rc = nsh_cni_cmd_status(&r);
			break;
		/* DEL: the netns belongs to the runtime, and nshash keeps no
		 * per-attachment state: nothing to release.  GC likewise. */
		case NSH_CNI_DEL:
		case NSH_CNI_GC:
		case NSH_CNI_VERSION:
			break;
		}
	}
done:
	if (rc < 0) {
		out->status = 1;
		if (env->command && strcmp(env->command, "ADD") == 0)
			out->outcome = NSH_CNI_REFUSED;
		free(out->stdout_text);
		if (!r.cfg.cni_version[0])
			peek_version(input, len, r.cfg.cni_version, sizeof(r.cfg.cni_version));
		out->stdout_text = nsh_cni_error_json(r.cfg.cni_version[0] ? r.cfg.cni_version : CNI_LATEST, &r.err);
		nsh_cni_log(&r, "error %d: %s", r.err.code, r.err.err.msg);
	}
	nsh_cni_config_free(&r.cfg);
	nsh_log_redirect(NSH_LOG_INFO, NULL, NULL); /* r is going away */
}

int nsh_cni_state_update(const struct nsh_cni_env *env, const struct nsh_cni_output *out, const char *state_dir,
		   struct nshash_error *err)
{
	if (!env->command || !state_dir || !*state_dir)
		return 0;
	if (strcmp(env->command, "DEL") == 0) {
		nsh_cni_auto_teardown(env, state_dir);
		return env->containerid ? nsh_cni_pod_remove(state_dir, env->containerid, err) : 0;
	}
	/* `auto` learns from a pod left shared too (no history, autoInitial 0) */
	if (strcmp(env->command, "ADD") == 0 && out->outcome == NSH_CNI_NONE)
		nsh_cni_auto_mark(env, out, state_dir);
	if (strcmp(env->command, "ADD") != 0 || out->outcome == NSH_CNI_NONE)
		return 0;
	/* a record for a pod that runs (not refused), while its netns is there */
	struct nsh_cni_pod rec = {.outcome = out->outcome};
	struct stat st;
	bool keep = out->outcome != NSH_CNI_REFUSED && env->containerid && env->netns &&
		    strlen(env->containerid) <= NSH_POD_ID_MAX && lstat(env->netns, &st) == 0;
	if (keep) {
		rec.inode = (uint64_t)st.st_ino;
		snprintf(rec.id, sizeof(rec.id), "%s", env->containerid);
		snprintf(rec.netns, sizeof(rec.netns), "%s", env->netns);
		nsh_cni_args_get(env->args, "K8S_POD_NAMESPACE", rec.namespace_, sizeof(rec.namespace_));
		nsh_cni_args_get(env->args, "K8S_POD_NAME", rec.pod, sizeof(rec.pod));
	}
	if (keep)
		nsh_cni_auto_mark(env, out, state_dir);
	return nsh_cni_state_add(state_dir, out->outcome, keep ? &rec : NULL, err);
}

void nsh_cni_output_free(struct nsh_cni_output *out)
{
	free(out->stdout_text);
	out->stdout_text = NULL;
}
