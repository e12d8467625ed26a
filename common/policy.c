/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The admin policy file (nshash.json(5)) read by nshash-hook, nshash-runtime and
 * the CNI plugin (its node-side settings):
 * caps on what annotations may ask for, the sizes of a container that asks
 * nothing, what to do when sizing fails, where
 * state lives, which runtime to exec, where to log. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* A policy file is a few hundred bytes; refuse anything absurd. */
#define POLICY_MAX_BYTES (64 * 1024)

void nsh_policy_defaults(struct nsh_policy *policy)
{
	memset(policy, 0, sizeof(*policy));
	policy->max.tcp = NSH_POLICY_DEFAULT_MAX_TCP;
	policy->max.udp = NSH_POLICY_DEFAULT_MAX_UDP;
	policy->on_failure = NSH_ON_FAILURE_FAIL;
	policy->strategy = NSHASH_STRATEGY_TEMPLATE;
	policy->syslog = true; /* podman shows a hook's stderr nowhere but "exit status 1" */
	policy->stale_age = NSH_POLICY_DEFAULT_STALE_AGE;
	policy->reclaim_interval = NSHASH_RECLAIM_INTERVAL;
	policy->spares = NSH_DEFAULT_SPARES;
	policy->max_spares = NSHASH_DEFAULT_MAX_SPARES;
	policy->max_spare_bytes = NSHASH_DEFAULT_MAX_SPARE_BYTES;
	policy->spare_max_idle = NSHASH_DEFAULT_SPARE_MAX_IDLE;
	nsh_default_state_dir(policy->state_dir, sizeof(policy->state_dir));
	snprintf(policy->source, sizeof(policy->source), "defaults");
}

bool nsh_policy_has_defaults(const struct nsh_policy *policy)
{
	return policy->defaults.tcp || policy->defaults.udp || policy->defaults_auto.tcp || policy->defaults_auto.udp;
}

const char *nsh_on_failure_name(enum nsh_on_failure on_failure)
{
	return on_failure == NSH_ON_FAILURE_WARN ? "warn" : "fail";
}

static int policy_string(struct json_object *val, const char *source, const char *key, bool absolute, char *dst,
			 size_t dstlen, struct nshash_error *err)
{
	const char *s;

	if (!json_object_is_type(val, json_type_string))
		return nshash_error_set(err, EINVAL, "%s: key \"%s\": expected a string", source, key);
	s = json_object_get_string(val);
	if ((size_t)json_object_get_string_len(val) != strlen(s))
		return nshash_error_set(err, EINVAL, "%s: key \"%s\": contains a NUL byte", source, key);
	if (strlen(s) >= dstlen)
		return nshash_error_set(err, ENAMETOOLONG, "%s: key \"%s\": longer than %zu bytes", source, key,
					dstlen - 1);
	const char *why = absolute ? nsh_path_unclean(s) : NULL;
	if (why) {
		char shown[128];
		nshash_quote(s, shown, sizeof(shown));
		return nshash_error_set(err, EINVAL, "%s: key \"%s\": %s %s", source, key, shown, why);
	}
	snprintf(dst, dstlen, "%s", s);
	return 0;
}

static int policy_size(struct json_object *val, const char *source, const char *key, enum nshash_proto proto,
		       uint32_t *dst, struct nshash_error *err)
{
	if (!json_object_is_type(val, json_type_int))
		return nshash_error_set(err, EINVAL, "%s: key \"%s\": expected an integer (0..%u)", source, key,
					nshash_proto_max(proto));
	int r = nshash_size_check(proto, key, json_object_get_int64(val), dst, err);
	if (r < 0)
		nshash_error_prefix(err, "%s", source);
	return r;
}

/* A non-negative JSON integer up to max (bytes, seconds). */
static int policy_count(struct json_object *val, const char *source, const char *key, int64_t max, int64_t *dst,
			struct nshash_error *err)
{
	if (!json_object_is_type(val, json_type_int))
		return nshash_error_set(err, EINVAL, "%s: key \"%s\": expected an integer (0..%lld)", source, key,
					(long long)max);
	errno = 0;
	int64_t v = json_object_get_int64(val);
	if (errno || v < 0 || v > max)
		return nshash_error_set(err, ERANGE, "%s: key \"%s\": %s is out of range (0..%lld)", source, key,
					json_object_to_json_string(val), (long long)max);
	*dst = v;
	return 0;
}

/* One key of the policy file into p. */
static int policy_key(struct nsh_policy *p, const char *key, struct json_object *val, const char *source,
		      struct nshash_error *err)
{
	int r = 0;

	if (!strcmp(key, "maxTcp")) {
		r = policy_size(val, source, key, NSHASH_TCP, &p->max.tcp, err);
	} else if (!strcmp(key, "maxUdp")) {
		r = policy_size(val, source, key, NSHASH_UDP, &p->max.udp, err);
	} else if (!strcmp(key, "defaultTcp") || !strcmp(key, "defaultUdp")) {
		int k = !strcmp(key, "defaultUdp");
		bool *a = k ? &p->defaults_auto.udp : &p->defaults_auto.tcp;
		*a = json_object_is_type(val, json_type_string) && !strcmp(json_object_get_string(val), "auto");
		if (*a)
			k ? (p->defaults.udp = 0) : (p->defaults.tcp = 0);
		else
			r = policy_size(val, source, key, k ? NSHASH_UDP : NSHASH_TCP,
					k ? &p->defaults.udp : &p->defaults.tcp, err);
	} else if (!strcmp(key, "autoInitialTcp")) {
		r = policy_size(val, source, key, NSHASH_TCP, &p->auto_initial.tcp, err);
	} else if (!strcmp(key, "autoInitialUdp")) {
		r = policy_size(val, source, key, NSHASH_UDP, &p->auto_initial.udp, err);
	} else if (!strcmp(key, "onFailure")) {
		const char *s = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
		if (s && !strcmp(s, "fail"))
			p->on_failure = NSH_ON_FAILURE_FAIL;
		else if (s && !strcmp(s, "warn"))
			p->on_failure = NSH_ON_FAILURE_WARN;
		else
			r = nshash_error_set(err, EINVAL,
					     "%s: key \"onFailure\": expected \"fail\" or \"warn\", got %s", source,
					     json_object_to_json_string(val));
	} else if (!strcmp(key, "strategy")) {
		if (!json_object_is_type(val, json_type_string)) {
			r = nshash_error_set(err, EINVAL, "%s: key \"strategy\": expected a string", source);
		} else {
			r = nshash_strategy_parse(json_object_get_string(val), &p->strategy, err);
			if (r < 0)
				nshash_error_prefix(err, "%s: key \"strategy\"", source);
		}
	} else if (!strcmp(key, "stateDir")) {
		r = policy_string(val, source, key, true, p->state_dir, sizeof(p->state_dir), err);
	} else if (!strcmp(key, "runtime")) {
		r = policy_string(val, source, key, false, p->runtime, sizeof(p->runtime), err);
		if (r == 0 && strchr(p->runtime, '/') && p->runtime[0] != '/')
			r = nshash_error_set(err, EINVAL,
					     "%s: key \"runtime\": \"%s\" must be a name or an absolute path", source,
					     p->runtime);
	} else if (!strcmp(key, "hookPath")) {
		r = policy_string(val, source, key, true, p->hook_path, sizeof(p->hook_path), err);
	} else if (!strcmp(key, "logFile")) {
		r = policy_string(val, source, key, true, p->log_file, sizeof(p->log_file), err);
	} else if (!strcmp(key, "maxTableBytes")) {
		int64_t v = 0;
		r = policy_count(val, source, key, INT64_MAX, &v, err);
		p->max_table_bytes = (uint64_t)v;
	} else if (!strcmp(key, "staleAge")) {
		r = policy_count(val, source, key, 365 * 86400, &p->stale_age, err);
		/* the floor covers a runtime's open of a pin just handed to it */
		if (r == 0 && p->stale_age < NSHASH_STALE_AGE_MIN)
			p->stale_age = NSHASH_STALE_AGE_MIN;
	} else if (!strcmp(key, "reclaimInterval")) {
		r = policy_count(val, source, key, 365 * 86400, &p->reclaim_interval, err);
	} else if (!strcmp(key, "spares")) {
		int64_t v = 0;
		r = policy_count(val, source, key, NSH_MAX_SPARES, &v, err);
		p->spares = (unsigned)v;
	} else if (!strcmp(key, "maxSpares")) {
		int64_t v = 0;
		r = policy_count(val, source, key, 4096, &v, err);
		if (r == 0 && v == 0)
			r = nshash_error_set(err, EINVAL,
					     "%s: key \"maxSpares\": 0 is out of range 1..4096 (for no spares "
					     "at all set \"spares\": 0)",
					     source);
		p->max_spares = (unsigned)v;
	} else if (!strcmp(key, "maxSpareBytes")) {
		int64_t v = 0;
		r = policy_count(val, source, key, INT64_MAX, &v, err);
		if (r == 0 && v == 0)
			r = nshash_error_set(err, EINVAL,
					     "%s: key \"maxSpareBytes\": 0 is out of range (for no spares at "
					     "all set \"spares\": 0)",
					     source);
		p->max_spare_bytes = (uint64_t)v;
	} else if (!strcmp(key, "spareMaxIdle")) {
		r = policy_count(val, source, key, 365 * 86400, &p->spare_max_idle, err);
		if (r == 0 && p->spare_max_idle == 0)
			r = nshash_error_set(err, EINVAL, "%s: key \"spareMaxIdle\": 0 is out of range 1..%d (seconds)",
					     source, 365 * 86400);
	} else if (!strcmp(key, "syslog")) {
		if (!json_object_is_type(val, json_type_boolean))
			r = nshash_error_set(err, EINVAL, "%s: key \"syslog\": expected true or false", source);
		else
			p->syslog = json_object_get_boolean(val);
	} else if (key[0] == '_' || !strcmp(key, "comment")) {
		/* room for the admin's own notes */
	} else {
		r = nshash_error_set(
		    err, EINVAL,
		    "%s: unknown key \"%s\" (known: maxTcp, maxUdp, defaultTcp, defaultUdp, maxTableBytes, onFailure, "
		    "strategy, stateDir, runtime, hookPath, logFile, syslog, staleAge, reclaimInterval, spares, "
		    "maxSpares, maxSpareBytes, spareMaxIdle, autoInitialTcp, autoInitialUdp)",
		    source, key);
	}
	return r;
}

/* defaultTcp/defaultUdp within maxTcp/maxUdp (as the kernel rounds them),
 * whatever the order of the keys. */
static int policy_defaults_capped(const struct nsh_policy *p, const char *source, struct nshash_error *err)
{
	for (int i = 0; i < 2; i++) {
		enum nshash_proto proto = i ? NSHASH_UDP : NSHASH_TCP;
		uint32_t asked = i ? p->defaults.udp : p->defaults.tcp, max = i ? p->max.udp : p->max.tcp;
		uint32_t want = nshash_size_effective(proto, asked);
		if (want > max)
			return nshash_error_set(err, EPERM,
						"%s: key \"default%s\": %u (effective %u) is above max%s %u: lower "
						"default%s or raise max%s",
						source, i ? "Udp" : "Tcp", asked, want, i ? "Udp" : "Tcp", max,
						i ? "Udp" : "Tcp", i ? "Udp" : "Tcp");
	}
	return 0;
}

int nsh_policy_parse(const char *text, size_t len, const char *source, struct nsh_policy *policy,
		     struct nshash_error *err)
{
	struct json_object *root;
	struct nsh_policy p;
	int r;

	nsh_policy_defaults(&p);
	snprintf(p.source, sizeof(p.source), "%s", source);
	r = nsh_json_parse_text(text, len, source, &root, err);
	if (r < 0)
		return r;
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return nshash_error_set(err, EINVAL, "%s: expected a JSON object at the top level", source);
	}
	r = 0;
	json_object_object_foreach(root, key, val)
	{
		r = policy_key(&p, key, val, source, err);
		if (r < 0)
			break;
	}
	json_object_put(root);
	if (r == 0)
		r = policy_defaults_capped(&p, source, err);
	if (r < 0)
		return r;
	*policy = p;
	return 0;
}

const char *nsh_policy_env(void)
{
	const char *p = getenv(NSH_POLICY_ENV);
	return p && *p ? p : NULL;
}

int nsh_policy_load(const char *path, struct nsh_policy *policy, struct nshash_error *err)
{
	char *text;
	size_t len;
	int r;

	if (!path || !*path)
		path = NSH_DEFAULT_POLICY_PATH;
	if (path[0] != '/')
		return nshash_error_set(err, EINVAL, "policy file \"%s\": not an absolute path", path);
	struct stat st;
	r = nsh_read_file_stat(path, POLICY_MAX_BYTES, &text, &len, &st, err);
	if (r == -ENOENT) {
		nsh_policy_defaults(policy);
		snprintf(policy->source, sizeof(policy->source), "defaults (%s absent)", path);
		return 0;
	}
	if (r < 0) {
		nshash_error_prefix(err, "policy file");
		return r;
	}
	/* It names programs run as root and a file root appends to: only root
	 * (or the user running us) may have written it. */
	if (st.st_uid != 0 && st.st_uid != geteuid())
		r = nshash_error_set(err, EPERM, "policy file %s: owned by uid %u, not root", path,
				     (unsigned)st.st_uid);
	else if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0))
		r = nshash_error_set(err, EPERM, "policy file %s: writable by group or others (mode %04o)", path,
				     (unsigned)(st.st_mode & 07777));
	if (r < 0) {
		free(text);
		return r;
	}
	r = nsh_policy_parse(text, len, path, policy, err);
	free(text);
	return r;
}

struct nshash_create_opts nsh_policy_create_opts(const struct nsh_policy *policy, struct nshash_sizes sizes)
{
	return (struct nshash_create_opts){
	    .sizes = sizes,
	    .strategy = policy->strategy,
	    .state_dir = policy->state_dir,
	    .max_table_bytes = policy->max_table_bytes,
	    .spares = policy->spares,
	    .max_spares = policy->max_spares,
	    .max_spare_bytes = policy->max_spare_bytes,
	    .spare_max_idle = policy->spare_max_idle,
	};
}
