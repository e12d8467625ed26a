/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Healing a bundle an older nshash-runtime rewrote.  Until the wrapper
 * stopped writing bundles it left in config.json: io.nshash.pin, the
 * network namespace path of a pin under STATE_DIR/pins/, and two hooks
 * (nshash-hook createRuntime and poststop).  Once that pin is gone the
 * config no longer runs (runc: "lstat ...: no such file or directory") and a
 * changed request is refused as "already exists".  Only what points at a
 * dead pin of nshash's is removed, and the hooks only together with it. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

/* 1 when `path` is STATE_DIR/pins/NAME (NAME a valid pin name) and
 * nothing is mounted there. */
static bool dead_pin(const struct nsh_policy *policy, const char *path)
{
	char prefix[1100];
	struct nshash_error e;
	size_t n = (size_t)snprintf(prefix, sizeof(prefix), "%s/pins/", policy->state_dir);

	if (!path || n >= sizeof(prefix) || strncmp(path, prefix, n) != 0 || nshash_name_check("pin", path + n, &e) < 0)
		return false;
	return nshash_pin_is_netns(path, &e) == 0;
}

static const char *string_member(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* An entry the old wrapper added: {"path": ".../nshash-hook", "args":
 * [that path, STAGE, ...]}. */
static bool old_hook(struct json_object *hook, const char *stage)
{
	const char *path = string_member(hook, "path");
	struct json_object *args, *a1;
	char copy[PATH_MAX];

	if (!path || !json_object_object_get_ex(hook, "args", &args) || !json_object_is_type(args, json_type_array) ||
	    json_object_array_length(args) < 2)
		return false;
	a1 = json_object_array_get_idx(args, 1);
	snprintf(copy, sizeof(copy), "%s", path);
	return json_object_is_type(a1, json_type_string) && !strcmp(json_object_get_string(a1), stage) &&
	       !strcmp(basename(copy), "nshash-hook");
}

/* Remove the old hooks; a stage list or the hooks object left empty goes
 * too (the old wrapper created them).  The number removed. */
static unsigned drop_old_hooks(struct json_object *doc)
{
	static const char *const stages[] = {"createRuntime", "poststop"};
	struct json_object *hooks, *list;
	unsigned removed = 0;

	if (!json_object_object_get_ex(doc, "hooks", &hooks) || !json_object_is_type(hooks, json_type_object))
		return 0;
	for (size_t s = 0; s < 2; s++) {
		if (!json_object_object_get_ex(hooks, stages[s], &list) || !json_object_is_type(list, json_type_array))
			continue;
		for (size_t i = json_object_array_length(list); i-- > 0;) {
			if (old_hook(json_object_array_get_idx(list, i), stages[s])) {
				json_object_array_del_idx(list, i, 1);
				removed++;
			}
		}
		if (json_object_array_length(list) == 0)
			json_object_object_del(hooks, stages[s]);
	}
	if (removed && json_object_object_length(hooks) == 0)
		json_object_object_del(doc, "hooks");
	return removed;
}

int nsh_oci_heal(const char *config, size_t len, const struct nsh_policy *policy, char **out, size_t *out_len,
		 char *what, size_t what_len, struct nshash_error *err)
{
	struct json_object *doc, *ann = NULL, *entry;
	char pin_path[4096] = "";
	const char *pin, *path;
	bool drop_pin, drop_path;
	int r = 0;

	*out = NULL;
	*out_len = 0;
	what[0] = '\0';
	/* not JSON: nothing to heal, the transform reports it */
	if (nsh_json_parse_text(config, len, "config", &doc, err) < 0)
		return 0;
	if (!json_object_is_type(doc, json_type_object))
		goto out;
	json_object_object_get_ex(doc, "annotations", &ann);
	pin = string_member(ann, NSH_ANNOTATION_PIN);
	if (pin)
		snprintf(pin_path, sizeof(pin_path), "%s/pins/%s", policy->state_dir, pin);
	entry = nsh_oci_network_entry(doc);
	path = string_member(entry, "path");
	drop_pin = pin && dead_pin(policy, pin_path);
	drop_path = path && (dead_pin(policy, path) || (drop_pin && !strcmp(path, pin_path)));
	if (!drop_pin && !drop_path)
		goto out;
	if (drop_pin) {
		nsh_append(what, what_len, "%s=%s", NSH_ANNOTATION_PIN, pin);
		json_object_object_del(ann, NSH_ANNOTATION_PIN);
	}
	if (drop_path) {
		nsh_append(what, what_len, "%snetwork namespace path %s", what[0] ? ", " : "", path);
		json_object_object_del(entry, "path");
	}
	unsigned hooks = drop_old_hooks(doc);
	if (hooks)
		nsh_append(what, what_len, ", %u nshash-hook entr%s", hooks, hooks == 1 ? "y" : "ies");
	size_t n;
	const char *s =
	    json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	*out = s ? malloc(n + 1) : NULL;
	if (!*out) {
		r = nshash_error_set(err, ENOMEM, "config: out of memory");
		goto out;
	}
	memcpy(*out, s, n + 1);
	*out_len = n;
	r = 1;
out:
	json_object_put(doc);
	return r;
}
