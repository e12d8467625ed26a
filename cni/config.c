/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin's entry of the network config, and the size request it and
 * the pod annotations make. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cni.h"

/* --------------------------------------------------------------- config */

static const char *json_type_word(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
		return "a fractional number";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "?";
}

/* The value as the user wrote it, for messages (shortened). */
static void json_shown(json_object *v, char *buf, size_t len)
{
	if (json_object_is_type(v, json_type_string)) {
		nshash_quote(json_object_get_string(v), buf, len);
		return;
	}
	/* numbers, literals, or JSON text whose strings json-c escaped */
	const char *s = json_object_to_json_string_ext(v, JSON_OUT_FLAGS);
	if (strlen(s) + 1 > len && len > 4)
		snprintf(buf, len, "%.*s...", (int)(len - 4), s);
	else
		snprintf(buf, len, "%s", s);
}

static int config_size(json_object *root, const char *key, enum nshash_proto proto, bool *given, uint32_t *out,
		       struct nsh_cni_failure *err)
{
	json_object *v;
	*given = false;
	*out = 0;
	if (!json_object_object_get_ex(root, key, &v))
		return 0;
	char shown[96];
	json_shown(v, shown, sizeof(shown));
	if (!json_object_is_type(v, json_type_int)) {
		/* "tcp": "8192" -> say: write "tcp": 8192 (the user's own number) */
		const char *text = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		bool digits = text[0] && strspn(text, "0123456789") == strlen(text) && strlen(text) <= 10;
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"%s\": %s is %s; expected a JSON integer "
				    "0..%u (write \"%s\": %s, not \"%s\")",
				    key, shown, json_type_word(v), nshash_proto_max(proto), key, digits ? text : "4096",
				    digits ? text : "4096");
	}
	/* json-c saturates integers beyond int64 (and keeps uint64 ones as
	 * such): anything that large is out of range anyway. */
	int64_t n = json_object_get_int64(v);
	struct nshash_error e;
	if (n == INT64_MAX || nshash_size_check(proto, key, n, out, &e) < 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"%s\": %s is out of range (%s sizes are 0..%u, "
				    "0 = shared table)",
				    key, shown, nshash_proto_name(proto), nshash_proto_max(proto));
	*given = true;
	return 0;
}

/* A string member of `obj`; *out NULL when absent.  `what` and `code` say
 * whose value it is in the error ("network config key", 7). */
static int string_member(json_object *obj, const char *key, const char *what, int code, const char **out,
			 struct nsh_cni_failure *err)
{
	json_object *v;
	*out = NULL;
	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		char shown[96];
		json_shown(v, shown, sizeof(shown));
		return nsh_cni_fail(err, code, NULL, "%s \"%s\": %s is %s; expected a string", what, key, shown,
				    json_type_word(v));
	}
	*out = json_object_get_string(v);
	return 0;
}

static int config_string(json_object *root, const char *key, const char **out, struct nsh_cni_failure *err)
{
	return string_member(root, key, "network config key", NSH_CNI_E_CONFIG, out, err);
}

void nsh_cni_config_free(struct nsh_cni_config *cfg)
{
	if (cfg->json)
		json_object_put(cfg->json);
	cfg->json = NULL;
}

int nsh_cni_decode(const char *text, size_t len, json_object **out, struct nsh_cni_failure *err)
{
	struct nsh_json_fault f;
	json_object *root;

	*out = NULL;
	if (len == 0)
		return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL, "no network config on stdin (expected a JSON object)");
	if (nsh_json_decode(text, len, &root, &f) < 0) {
		switch (f.kind) {
		case NSH_JSON_NUL:
			return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL, "network config on stdin contains a NUL byte");
		case NSH_JSON_NOMEM:
			return nsh_cni_fail(err, NSH_CNI_E_IO, NULL, "decode network config: out of memory");
		case NSH_JSON_EMPTY:
		case NSH_JSON_TRUNCATED:
			return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL,
					    "decode network config: unexpected end of input after %zu bytes "
					    "(truncated JSON)",
					    len);
		case NSH_JSON_NUL_ESCAPE:
			return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL,
					    "decode network config: \\u0000 (a NUL character) in a string at byte %zu",
					    f.offset);
		case NSH_JSON_TRAILING:
			return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL,
					    "decode network config: unexpected data after the JSON object at byte %zu",
					    f.offset + strspn(text + f.offset, " \t\r\n"));
		default:
			return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL, "decode network config: %s at byte %zu",
					    f.why ? f.why : "too large", f.offset);
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		const char *w = json_type_word(root);
		json_object_put(root);
		return nsh_cni_fail(err, NSH_CNI_E_DECODE, NULL,
				    "decode network config: stdin holds %s, expected a JSON object", w);
	}
	*out = root;
	return 0;
}

static void version_list(char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; nsh_cni_versions[i]; i++)
		nsh_append(buf, len, "%s%s", i ? ", " : "", nsh_cni_versions[i]);
}

/* cniVersion: present, a string, one nshash speaks. */
static int config_version(json_object *root, struct nsh_cni_config *cfg, struct nsh_cni_failure *err)
{
	char supported[64];
	version_list(supported, sizeof(supported));
	json_object *v;
	if (!json_object_object_get_ex(root, "cniVersion", &v))
		return nsh_cni_fail(err, NSH_CNI_E_VERSION, supported,
				    "network config has no cniVersion; nshash supports %s", supported);
	if (!json_object_is_type(v, json_type_string)) {
		char shown[64];
		json_shown(v, shown, sizeof(shown));
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"cniVersion\": %s is %s; expected a string", shown,
				    json_type_word(v));
	}
	snprintf(cfg->cni_version, sizeof(cfg->cni_version), "%s", json_object_get_string(v));
	if (!nsh_cni_version_supported(json_object_get_string(v)))
		return nsh_cni_fail(err, NSH_CNI_E_VERSION, supported,
				    "cniVersion \"%.64s\" is not supported; nshash supports %s",
				    json_object_get_string(v), supported);

	return 0;
}

/* A byte count: a JSON integer >= 0 (0 or absent = none). */
static int config_bytes(json_object *root, const char *key, uint64_t *out, struct nsh_cni_failure *err)
{
	json_object *v;
	*out = 0;
	if (!json_object_object_get_ex(root, key, &v))
		return 0;
	char shown[96];
	json_shown(v, shown, sizeof(shown));
	int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
	if (n < 0 || n == INT64_MAX)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"%s\": %s is %s; expected a JSON integer of bytes, "
				    "0..%lld (0 = no budget)",
				    key, shown,
				    json_object_is_type(v, json_type_int) ? "out of range" : json_type_word(v),
				    (long long)INT64_MAX - 1);
	*out = (uint64_t)n;
	return 0;
}

/* Where a pod that asks above its cap is told to raise it, per protocol:
 * the node's policy when its cap is the lower, the node's defaults when the
 * network names no sizes, else the network's entry -- on a node whose
 * conflist nshash-cni-install writes, the ConfigMap it is written from (a
 * hand edit of the conflist is reverted by the watcher).  Called before the
 * caps are lowered to the node's. */
static void cap_hints(struct nsh_cni_config *cfg, const struct nsh_policy *node)
{
	const bool from_file = strcmp(node->source, "defaults") != 0;
	char policy[960];
	snprintf(policy, sizeof(policy), "%.900s, the node's policy (nshash.json(5))",
		 from_file ? node->source : NSH_DEFAULT_POLICY_PATH);
	const bool installed = strcmp(cfg->chained_by, NSH_K8S_INSTALLER) == 0;
	for (int i = 0; i < 2; i++) {
		const char *key = i ? "maxUdp" : "maxTcp", *def = i ? "defaultUdp" : "defaultTcp";
		bool has_max = i ? cfg->has_max_udp : cfg->has_max_tcp;
		bool is_auto = i ? cfg->auto_udp : cfg->auto_tcp;
		uint32_t max = i ? cfg->max.udp : cfg->max.tcp, node_max = i ? node->max.udp : node->max.tcp;
		bool named = i ? cfg->has_udp : cfg->has_tcp;
		char *out = cfg->cap_hint[i];
		size_t len = sizeof(cfg->cap_hint[i]);
		if ((has_max || is_auto) && max >= node_max)
			snprintf(out, len, "raise %s in %s", key, policy);
		else if (!named && !has_max && !cfg->has_tcp && !cfg->has_udp)
			snprintf(out, len, "the network names no sizes: raise %s in %s, or set %s in the network's "
			    "nshash entry",
				 def, policy, key);
		else if (installed)
			snprintf(out, len,
				 "%s %s in nshash's entry, which nshash-cni-install writes into this conflist from its "
				 "ConfigMap (as shipped: nshash-cni-config, key nshash-entry.json; a hand edit of the "
				 "conflist is reverted), then kubectl -n kube-system rollout restart daemonset/nshash-cni",
				 has_max ? "raise" : "set", key);
		else
			snprintf(out, len, "%s %s in the network config \"%.256s\"", has_max ? "raise" : "set", key,
				 cfg->name);
	}
}

/* tcp, udp (network defaults), maxTcp, maxUdp (caps on pods), maxTableBytes. */
static int config_sizes(json_object *root, struct nsh_cni_config *cfg, struct nsh_cni_failure *err)
{
	json_object *v;
	cfg->auto_tcp = json_object_object_get_ex(root, "tcp", &v) && json_object_is_type(v, json_type_string) &&
			!strcmp(json_object_get_string(v), "auto");
	cfg->auto_udp = json_object_object_get_ex(root, "udp", &v) && json_object_is_type(v, json_type_string) &&
			!strcmp(json_object_get_string(v), "auto");
	if ((!cfg->auto_tcp && config_size(root, "tcp", NSHASH_TCP, &cfg->has_tcp, &cfg->sizes.tcp, err) < 0) ||
	    (!cfg->auto_udp && config_size(root, "udp", NSHASH_UDP, &cfg->has_udp, &cfg->sizes.udp, err) < 0) ||
	    config_size(root, "maxTcp", NSHASH_TCP, &cfg->has_max_tcp, &cfg->max.tcp, err) < 0)
		return -err->err.errnum;
	if (!cfg->has_max_tcp) /* pods may ask up to the network default, as rounded by the kernel */
		cfg->max.tcp = nshash_size_effective(NSHASH_TCP, cfg->sizes.tcp);
	if (config_size(root, "maxUdp", NSHASH_UDP, &cfg->has_max_udp, &cfg->max.udp, err) < 0)
		return -err->err.errnum;
	if (!cfg->has_max_udp)
		cfg->max.udp = nshash_size_effective(NSHASH_UDP, cfg->sizes.udp);
	struct nshash_error e;
	if (nshash_sizes_cap(cfg->sizes, cfg->max, "network config", &e) < 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL, "%s: the network default must not exceed the cap",
				    e.msg);
	return config_bytes(root, "maxTableBytes", &cfg->max_table_bytes, err);
}

/* spares: a JSON integer 0..NSH_MAX_SPARES, absent = none (below). */
static int config_spares(json_object *root, struct nsh_cni_config *cfg, struct nsh_cni_failure *err)
{
	json_object *v;
	cfg->spares = 0;
	if (!json_object_object_get_ex(root, "spares", &v))
		return 0;
	char shown[96];
	json_shown(v, shown, sizeof(shown));
	int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
	if (n < 0 || n > NSH_MAX_SPARES)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"spares\": %s is %s; expected a JSON integer 0..%d (sized "
				    "netns kept ready per size pair, 0 = none)",
				    shown, json_object_is_type(v, json_type_int) ? "out of range" : json_type_word(v),
				    NSH_MAX_SPARES);
	cfg->spares = (unsigned)n;
	cfg->has_spares = true;
	return 0;
}

/* onFailure, strategy, stateDir. */
static int config_choices(json_object *root, struct nsh_cni_config *cfg, struct nsh_cni_failure *err)
{
	struct nshash_error e;
	const char *s;

	if (config_string(root, "onFailure", &s, err) < 0)
		return -err->err.errnum;
	cfg->has_on_failure = s != NULL;
	if (s && strcmp(s, "warn") == 0)
		cfg->on_failure = NSH_ON_FAILURE_WARN;
	else if (s && strcmp(s, "fail") != 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"onFailure\": \"%.64s\" is not fail or warn", s);

	if (config_string(root, "strategy", &s, err) < 0)
		return -err->err.errnum;
	if (s && nshash_strategy_parse(s, &cfg->strategy, &e) < 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"strategy\": \"%.64s\" is not template or nested", s);

	if (config_string(root, "stateDir", &s, err) < 0)
		return -err->err.errnum;
	if (s && (nsh_path_unclean(s) || strlen(s) >= sizeof(cfg->state_dir_asked)))
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"stateDir\": \"%.256s\" is not a clean absolute path", s);
	snprintf(cfg->state_dir_asked, sizeof(cfg->state_dir_asked), "%s", s ? s : "");

	return 0;
}

/* prevResult and runtimeConfig: objects when present. */
static int config_objects(json_object *root, struct nsh_cni_failure *err)
{
	json_object *v, *rc;

	if (json_object_object_get_ex(root, "prevResult", &v) && !json_object_is_type(v, json_type_object))
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"prevResult\" is %s; expected an object", json_type_word(v));
	/* null like absent, as for the pod annotations inside it */
	if (json_object_object_get_ex(root, "runtimeConfig", &rc) && !json_object_is_type(rc, json_type_null)) {
		if (!json_object_is_type(rc, json_type_object))
			return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
					    "network config key \"runtimeConfig\" is %s; expected an object",
					    json_type_word(rc));
		if (json_object_object_get_ex(rc, POD_ANNOTATIONS, &v) && !json_object_is_type(v, json_type_object) &&
		    !json_object_is_type(v, json_type_null))
			return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
					    "network config key \"runtimeConfig\": \"" POD_ANNOTATIONS
					    "\" is %s; expected an object of strings",
					    json_type_word(v));
	}
	return 0;
}

int nsh_cni_config_parse(const char *text, size_t len, struct nsh_cni_config *cfg, struct nsh_cni_failure *err)
{
	json_object *root;
	const char *name;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	cfg->on_failure = NSH_ON_FAILURE_FAIL;
	cfg->strategy = NSHASH_STRATEGY_TEMPLATE; /* one unshare per ADD instead of two */
	r = nsh_cni_decode(text, len, &root, err);
	if (r < 0)
		return r;
	cfg->json = root;
	r = config_version(root, cfg, err);
	if (r == 0)
		r = config_string(root, "name", &name, err);
	if (r < 0)
		return r;
	snprintf(cfg->name, sizeof(cfg->name), "%s", name ? name : "");
	const char *by = NULL;
	r = config_string(root, "chainedBy", &by, err);
	if (r < 0)
		return r;
	snprintf(cfg->chained_by, sizeof(cfg->chained_by), "%s", by ? by : "");
	r = config_sizes(root, cfg, err);
	if (r == 0)
		r = config_choices(root, cfg, err);
	if (r == 0)
		r = config_spares(root, cfg, err);
	if (r == 0)
		r = config_objects(root, err);
	return r;
}

/* ----------------------------------------------------------------- node */

/* A network value above the node's: the node's holds, and the log says so
 * (the network keeps working within the node's limits). */
static void lowered(char *warn, size_t wlen, const char *key, unsigned long long asked, unsigned long long node,
		    const char *source)
{
	nsh_append(warn, wlen,
		   "%snetwork config key \"%s\": %llu is above this node's %s %llu (%s); using %llu: a network "
		   "config may lower node settings, never raise them",
		   warn[0] ? "\n" : "", key, asked, key, node, source, node);
}

int nsh_cni_config_node(struct nsh_cni_config *cfg, const struct nsh_policy *node, char *warn, size_t wlen,
			struct nsh_cni_failure *err)
{
	warn[0] = '\0';
	/* Where nshash keeps its state is the node's: a network config (in
	 * a multi-tenant cluster a tenant's NetworkAttachmentDefinition) must
	 * not point root at another directory.  Naming the node's own is
	 * allowed (configs written before the rule). */
	if (cfg->state_dir_asked[0] && strcmp(cfg->state_dir_asked, node->state_dir) != 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "network config key \"stateDir\": \"%.256s\" is not this node's state dir "
				    "\"%.256s\" (%.256s); the state dir is a node setting: remove the key from the "
				    "network config, or set stateDir in the node's policy file",
				    cfg->state_dir_asked, node->state_dir, node->source);
	cfg->state_dir = node->state_dir; /* (the node outlives the run: nsh_cni_run) */

	/* a network that names no sizes: the node's defaultTcp/defaultUdp (within
	 * the node's caps, checked at its load); pods may ask up to them */
	cfg->has_tcp |= cfg->auto_tcp;
	cfg->has_udp |= cfg->auto_udp;
	cfg->auto_initial = node->auto_initial;
	if (!cfg->has_tcp && !cfg->has_udp) {
		cfg->auto_tcp = node->defaults_auto.tcp;
		cfg->auto_udp = node->defaults_auto.udp;
		cfg->sizes = node->defaults;
		if (!cfg->has_max_tcp)
			cfg->max.tcp = nshash_size_effective(NSHASH_TCP, cfg->sizes.tcp);
		if (!cfg->has_max_udp)
			cfg->max.udp = nshash_size_effective(NSHASH_UDP, cfg->sizes.udp);
	}
	/* auto: up to the node's caps unless the network sets its own */
	if (cfg->auto_tcp && !cfg->has_max_tcp)
		cfg->max.tcp = node->max.tcp;
	if (cfg->auto_udp && !cfg->has_max_udp)
		cfg->max.udp = node->max.udp;
	cap_hints(cfg, node);
	if (cfg->has_max_tcp && cfg->max.tcp > node->max.tcp)
		lowered(warn, wlen, "maxTcp", cfg->max.tcp, node->max.tcp, node->source);
	if (cfg->has_max_udp && cfg->max.udp > node->max.udp)
		lowered(warn, wlen, "maxUdp", cfg->max.udp, node->max.udp, node->source);
	if (cfg->max.tcp > node->max.tcp)
		cfg->max.tcp = node->max.tcp;
	if (cfg->max.udp > node->max.udp)
		cfg->max.udp = node->max.udp;
	struct nshash_error e;
	if (nshash_sizes_cap(cfg->sizes, cfg->max, "network config", &e) < 0)
		return nsh_cni_fail(err, NSH_CNI_E_CONFIG, NULL,
				    "%s: the network default must not exceed this node's maxTcp %u / maxUdp %u "
				    "(%.256s)",
				    e.msg, node->max.tcp, node->max.udp, node->source);

	/* the budget: the lower of the two, 0 = none */
	if (node->max_table_bytes && cfg->max_table_bytes > node->max_table_bytes)
		lowered(warn, wlen, "maxTableBytes", (unsigned long long)cfg->max_table_bytes,
			(unsigned long long)node->max_table_bytes, node->source);
	if (node->max_table_bytes && (!cfg->max_table_bytes || cfg->max_table_bytes > node->max_table_bytes))
		cfg->max_table_bytes = node->max_table_bytes;

	cfg->max_spares = node->max_spares;
	cfg->max_spare_bytes = node->max_spare_bytes;
	cfg->spare_max_idle = node->spare_max_idle;
	/* absent: none.  On this path a spare saves nothing (its take, the
	 * refill's fork and the refill itself cost what making the netns
	 * costs: docs/benchmarks.md, bench/spares); a network may ask for them */
	if (!cfg->has_spares)
		cfg->spares = 0;
	else if (cfg->spares > node->spares) {
		lowered(warn, wlen, "spares", cfg->spares, node->spares, node->source);
		cfg->spares = node->spares;
	}

	/* template keeps per-size state under the node's dir: only when the
	 * node allows it; nested keeps none, and any network may choose it */
	if (node->strategy == NSHASH_STRATEGY_NESTED)
		cfg->strategy = NSHASH_STRATEGY_NESTED;
	/* warn or fail is the network's own risk; absent = the node's */
	if (!cfg->has_on_failure)
		cfg->on_failure = node->on_failure;
	return 0;
}

/* -------------------------------------------------------------- request */

static int annotation_size(json_object *ann, const char *key, enum nshash_proto proto, bool *given, uint32_t *out,
			   struct nsh_cni_failure *err)
{
	const char *text;
	*given = false;
	if (string_member(ann, key, "pod annotation", NSH_CNI_E_REFUSED, &text, err) < 0)
		return -err->err.errnum;
	if (!text || !strcmp(text, "auto")) /* auto: nsh_cni_auto() */
		return 0;
	struct nshash_error e;
	if (nshash_size_parse(proto, key, text, out, &e) < 0)
		return nsh_cni_fail(err, NSH_CNI_E_REFUSED, NULL, "pod annotation %s", e.msg);
	*given = true;
	return 0;
}

int nsh_cni_request(const struct nsh_cni_config *cfg, struct nshash_sizes *req, bool *from_annotation,
		    struct nsh_cni_failure *err)
{
	*req = cfg->sizes;
	*from_annotation = false;
	json_object *rc, *ann = NULL;
	if (cfg->json && json_object_object_get_ex(cfg->json, "runtimeConfig", &rc) &&
	    json_object_is_type(rc, json_type_object) && json_object_object_get_ex(rc, POD_ANNOTATIONS, &ann) &&
	    !json_object_is_type(ann, json_type_object))
		ann = NULL;
	struct nsh_said pod = {0}, net = {.said = {true, true}, .size = {cfg->sizes.tcp, cfg->sizes.udp}};
	if (annotation_size(ann, NSH_ANNOTATION_TCP, NSHASH_TCP, &pod.said[0], &pod.size[0], err) < 0 ||
	    annotation_size(ann, NSH_ANNOTATION_UDP, NSHASH_UDP, &pod.said[1], &pod.size[1], err) < 0)
		return -err->err.errnum;
	/* per protocol (docs/sizing.md): the pod's annotation, else the network
	 * (its tcp/udp, or the node's defaults for a network naming none) */
	const struct nsh_said *by[NSH_SRC_COUNT] = {[NSH_SRC_ANNOTATION] = &pod, [NSH_SRC_NETWORK] = &net};
	struct nsh_decision d;
	nsh_decide(by, &d);
	*req = d.sizes;
	*from_annotation = nsh_decision_any_from(&d, NSH_SRC_ANNOTATION);
	struct nshash_error e;
	if (*from_annotation && nshash_sizes_cap(*req, cfg->max, "pod annotations", &e) < 0) {
		bool tcp_over = nshash_size_effective(NSHASH_TCP, req->tcp) > cfg->max.tcp;
		const char *hint = cfg->cap_hint[tcp_over ? 0 : 1];
		return nsh_cni_fail(err, NSH_CNI_E_REFUSED, NULL, "%s in network \"%s\" (to allow it: %s)", e.msg,
				    cfg->name, *hint ? hint : "raise the cap in the network config");
	}
	return 0;
}
