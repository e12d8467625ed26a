/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* OCI state on a hook's stdin, and the createRuntime/prestart verification. */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci.h"

/* The request in BUNDLE/config.json's annotations. */
static int bundle_request(const char *bundle, struct nshash_oci_request *req, struct nshash_error *err)
{
	char path[4200], *text;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	r = nsh_read_file(path, NSHASH_OCI_CONFIG_MAX_BYTES, &text, &len, err);
	if (r < 0)
		return r;
	r = nshash_oci_request_parse(text, len, req, err);
	free(text);
	return r;
}

/* The request of a state: its annotations, else (older runtimes leave
 * them out) its bundle's config's; the pin from the bundle when the state
 * lacks it. */
static int state_request(struct json_object *doc, struct nshash_oci_state *state, struct nshash_error *err)
{
	struct json_object *ann = NULL;
	int r = 0;

	json_object_object_get_ex(doc, "annotations", &ann);
	if (ann && !json_object_is_type(ann, json_type_null)) {
		r = nsh_oci_request_from_annotations(ann, &state->request, err);
		if (r < 0)
			nshash_error_prefix(err, "state of %s", state->id);
	} else if (state->bundle[0]) {
		/* older runtimes leave annotations out of the state */
		r = bundle_request(state->bundle, &state->request, err);
		if (r < 0)
			nshash_error_prefix(err, "state of %s: bundle", state->id);
	}
	if (r == 0 && !state->request.pin[0] && state->bundle[0]) {
		/* podman hands hooks its own copy of the annotations, not the
		 * config the precreate hook returned: the pin is in the bundle. */
		struct nshash_oci_request breq;
		struct nshash_error ignored;
		if (bundle_request(state->bundle, &breq, &ignored) == 0)
			memcpy(state->request.pin, breq.pin, sizeof(breq.pin));
	}
	return r;
}

int nshash_oci_state_parse(const char *json, size_t len, struct nshash_oci_state *state, struct nshash_error *err)
{
	struct json_object *doc, *v;
	int r;

	memset(state, 0, sizeof(*state));
	r = nsh_json_parse_text(json, len, "state", &doc, err);
	if (r < 0)
		return r;
	r = -EINVAL;
	if (!json_object_is_type(doc, json_type_object)) {
		nshash_error_set(err, EINVAL, "state: expected a JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(doc, "id", &v) || !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) == 0) {
		nshash_error_set(err, EINVAL, "state: no container \"id\"");
		goto out;
	}
	if ((size_t)json_object_get_string_len(v) >= sizeof(state->id) ||
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
		nshash_error_set(err, EINVAL, "state: container id is longer than %zu bytes or has a NUL",
				 sizeof(state->id) - 1);
		goto out;
	}
	snprintf(state->id, sizeof(state->id), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(doc, "pid", &v) && !json_object_is_type(v, json_type_null)) {
		int64_t pid = json_object_get_int64(v);
		if (!json_object_is_type(v, json_type_int) || pid < 0 || pid > INT32_MAX) {
			nshash_error_set(err, EINVAL, "state of %s: \"pid\" is not a process id: %s", state->id,
					 json_object_to_json_string(v));
			goto out;
		}
		state->pid = (pid_t)pid;
	}
	if (json_object_object_get_ex(doc, "status", &v) && json_object_is_type(v, json_type_string))
		snprintf(state->status, sizeof(state->status), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(doc, "bundle", &v) && json_object_is_type(v, json_type_string))
		snprintf(state->bundle, sizeof(state->bundle), "%s", json_object_get_string(v));
	r = state_request(doc, state, err);
out:
	json_object_put(doc);
	return r;
}

int nshash_oci_verify(const struct nshash_oci_state *state, const struct nshash_policy *policy,
		      struct nshash_netns_info *info, bool *warned, struct nshash_error *err)
{
	char what[300];
	int r;

	*warned = false;
	memset(info, 0, sizeof(*info));
	if (!state->request.present)
		return 0;
	if (state->pid <= 0)
		return nshash_error_set(err, EINVAL,
					"state of %s has no pid: cannot verify its network namespace (is this hook "
					"installed for createRuntime/prestart?)",
					state->id);
	r = nshash_inspect_pid(state->pid, info, err);
	if (r < 0) {
		nshash_error_prefix(err, "verify container %s", state->id);
		return r;
	}
	snprintf(what, sizeof(what), "container %s", state->id);
	r = nshash_verify(info, state->request.sizes, what, err);
	if (r == -NSHASH_E_FALLBACK && nshash_info_sizes(info).tcp == 0 && nshash_info_sizes(info).udp == 0) {
		char tmp[sizeof(err->msg)];
		snprintf(tmp, sizeof(tmp), "%.800s; or nothing sized it (no nshash precreate hook or nshash-runtime?)",
			 err->msg);
		memcpy(err->msg, tmp, sizeof(tmp));
	}
	if (r < 0 && policy->on_failure == NSHASH_ON_FAILURE_WARN &&
	    (r == -NSHASH_E_MISMATCH || r == -NSHASH_E_FALLBACK)) {
		*warned = true;
		return 0;
	}
	return r;
}
