/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* OCI state on a hook's stdin, and the createRuntime/prestart verification. */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

/* BUNDLE/config.json: the request in its annotations and the path of its
 * network namespace entry ("" when none). */
static int bundle_read(const char *bundle, struct nsh_oci_request *req, char *netns, size_t netns_len,
		       struct nshash_error *err)
{
	char path[4200];
	struct json_object *doc, *ann = NULL, *entry, *p;
	int r;

	netns[0] = '\0';
	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", bundle) >= sizeof(path))
		return nshash_error_set(err, ENAMETOOLONG, "%.100s...: path too long", bundle);
	r = nsh_json_read_file(path, NSH_OCI_CONFIG_MAX_BYTES, &doc, NULL, err);
	if (r < 0)
		return r;
	if (!json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return nshash_error_set(err, EINVAL, "%s: expected a JSON object", path);
	}
	json_object_object_get_ex(doc, "annotations", &ann);
	r = nsh_oci_request_from_annotations(ann, req, err);
	entry = nsh_oci_network_entry(doc);
	if (r == 0 && entry && json_object_object_get_ex(entry, "path", &p) && json_object_is_type(p, json_type_string))
		snprintf(netns, netns_len, "%s", json_object_get_string(p));
	json_object_put(doc);
	return r;
}

/* The request of a state: its annotations, then what was decided.  The
 * bundle is read whenever there is one: podman hands hooks its own copy of
 * the annotations, not the config the precreate hook returned, and that
 * config (the bundle's) holds the pin and netns path nshash wrote, and the
 * sizes it decided (transform.c): as numbers where `auto` or a default
 * decided a protocol, so that `io.nshash.tcp=0` under defaultUdp is
 * verified on what it got.  Checked as it is, never decided again (a
 * bundle that still says auto: nothing decided). */
static int state_request(struct json_object *doc, struct nsh_oci_state *state, struct nshash_error *err)
{
	struct json_object *ann = NULL;
	int r = 0;

	json_object_object_get_ex(doc, "annotations", &ann);
	bool has_ann = ann && !json_object_is_type(ann, json_type_null);
	if (has_ann) {
		r = nsh_oci_request_from_annotations(ann, &state->request, err);
		if (r < 0)
			return nshash_error_prefix(err, "state of %s", state->id);
	}
	if (!state->bundle[0])
		return 0;
	bool asked = !has_ann || state->request.present || state->request.pin[0];
	struct nsh_oci_request breq;
	r = bundle_read(state->bundle, &breq, state->bundle_netns, sizeof(state->bundle_netns), err);
	if (r < 0 && !asked) {
		state->bundle_netns[0] = '\0';
		return 0; /* asked nothing: an unreadable bundle leaves nothing to verify */
	}
	if (r == -ENOENT && has_ann)
		return 0; /* the bundle is gone already: the state's annotations are all there is */
	if (r < 0)
		return nshash_error_prefix(err, "state of %s: bundle", state->id);
	memcpy(state->bundle_pin, breq.pin, sizeof(breq.pin));
	/* The bundle's config is this container's own, as podman ran it: its
	 * annotations are the state's plus what the precreate hook decided.
	 * So its request, when it asks anything, is the one checked (and with
	 * no annotations in the state, an older runtime, always). */
	bool is_auto = state->request.auto_tcp || state->request.auto_udp;
	if (!has_ann || is_auto || breq.present) {
		state->request.present = breq.present;
		memcpy(state->request.said, breq.said, sizeof(breq.said));
		state->request.sizes = breq.sizes;
		state->request.auto_tcp = breq.auto_tcp;
		state->request.auto_udp = breq.auto_udp;
	}
	return 0;
}

int nsh_oci_state_pin(const struct nsh_oci_state *state, const struct nsh_policy *policy, char *pin, size_t pin_len,
		      struct nshash_error *err)
{
	const char *given = state->request.pin[0] ? state->request.pin : state->bundle_pin;
	char ours[4096];
	struct nshash_error ignored;

	pin[0] = '\0';
	if (!given[0])
		return 0;
	/* nshash writes io.nshash.pin into a config only together with the
	 * network namespace path of that very pin: that pair, in the bundle,
	 * is ours.  A pin name anywhere else was given by a user (pod
	 * annotations, podman or ctr without the precreate hook) and must
	 * never name what is removed. */
	if (state->bundle_pin[0] && (!state->request.pin[0] || !strcmp(state->request.pin, state->bundle_pin)) &&
	    nsh_oci_pin_path(policy, state->bundle_pin, ours, sizeof(ours), &ignored) == 0 &&
	    !strcmp(state->bundle_netns, ours)) {
		snprintf(pin, pin_len, "%s", state->bundle_pin);
		return 0;
	}
	return nshash_error_set(err, EINVAL,
				"state of %s: annotation %s=%s is set by nshash itself and cannot be given", state->id,
				NSH_ANNOTATION_PIN, given);
}

int nsh_oci_state_parse(const char *json, size_t len, struct nsh_oci_state *state, struct nshash_error *err)
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

int nsh_oci_verify(const struct nsh_oci_state *state, const struct nsh_policy *policy, struct nshash_netns_info *info,
		   bool *warned, struct nshash_error *err)
{
	char what[300];
	int r;

	*warned = false;
	memset(info, 0, sizeof(*info));
	char pin[256];
	r = nsh_oci_state_pin(state, policy, pin, sizeof(pin), err); /* a user's pin: refused here too */
	if (r < 0)
		return r;
	if (!state->request.present)
		return 0;
	if (state->request.auto_tcp || state->request.auto_udp) {
		r = nshash_error_set(
		    err, NSHASH_E_FALLBACK,
		    "container %s asks for %s/%s=auto, but no sizes were decided for it (its bundle's "
		    "config still says auto: nshash's precreate hook or nshash-runtime writes the sizes "
		    "it gives there); is the precreate hook installed?",
		    state->id, NSH_ANNOTATION_TCP, NSH_ANNOTATION_UDP);
		if (policy->on_failure == NSH_ON_FAILURE_WARN) {
			*warned = true;
			return 0;
		}
		return r;
	}
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
	if (r < 0 && policy->on_failure == NSH_ON_FAILURE_WARN &&
	    (r == -NSHASH_E_MISMATCH || r == -NSHASH_E_FALLBACK)) {
		*warned = true;
		return 0;
	}
	return r;
}
