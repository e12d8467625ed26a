/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The io.nshash.* annotations of an OCI config or state. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "oci.h"

int nsh_oci_request_from_annotations(struct json_object *ann, struct nsh_oci_request *req, struct nshash_error *err)
{
	memset(req, 0, sizeof(*req));
	if (!ann || json_object_is_type(ann, json_type_null))
		return 0;
	if (!json_object_is_type(ann, json_type_object))
		return nshash_error_set(err, EINVAL, "annotations: expected an object, got %s",
					json_type_to_name(json_object_get_type(ann)));
	json_object_object_foreach(ann, key, val)
	{
		const char *s;
		int r;

		if (strncmp(key, NSH_ANNOTATION_PREFIX, strlen(NSH_ANNOTATION_PREFIX)) != 0)
			continue;
		if (strcmp(key, NSH_ANNOTATION_TCP) && strcmp(key, NSH_ANNOTATION_UDP) &&
		    strcmp(key, NSH_ANNOTATION_PIN) && strcmp(key, NSH_ANNOTATION_WORKLOAD))
			return nshash_error_set(err, EINVAL, "unknown annotation \"%.200s\" (known: %s, %s, %s)", key,
						NSH_ANNOTATION_TCP, NSH_ANNOTATION_UDP, NSH_ANNOTATION_WORKLOAD);
		if (!json_object_is_type(val, json_type_string))
			return nshash_error_set(err, EINVAL, "annotation %s: expected a string, got %s", key,
						json_type_to_name(json_object_get_type(val)));
		s = json_object_get_string(val);
		if ((size_t)json_object_get_string_len(val) != strlen(s))
			return nshash_error_set(err, EINVAL, "annotation %s: value contains a NUL byte", key);
		if (!strcmp(key, NSH_ANNOTATION_PIN)) {
			r = nshash_name_check(NSH_ANNOTATION_PIN, s, err);
			if (r < 0)
				return r;
			snprintf(req->pin, sizeof(req->pin), "%s", s);
			continue;
		}
		if (!strcmp(key, NSH_ANNOTATION_WORKLOAD)) {
			r = nsh_workload_check(s, err);
			if (r < 0)
				return nshash_error_prefix(err, "annotation %s", key);
			snprintf(req->workload, sizeof(req->workload), "%s", s);
			continue;
		}
		enum nshash_proto proto = strcmp(key, NSH_ANNOTATION_TCP) ? NSHASH_UDP : NSHASH_TCP;
		req->said[proto == NSHASH_UDP] = true;
		if (!strcmp(s, "auto")) {
			*(proto == NSHASH_TCP ? &req->auto_tcp : &req->auto_udp) = true;
			req->present = true;
			continue;
		}
		r = nshash_size_parse(proto, key, s, proto == NSHASH_TCP ? &req->sizes.tcp : &req->sizes.udp, err);
		if (r < 0)
			return r;
		req->present = true;
	}
	return 0;
}

int nsh_oci_request_parse(const char *json, size_t len, struct nsh_oci_request *req, struct nshash_error *err)
{
	struct json_object *doc, *ann = NULL;
	int r = nsh_json_parse_text(json, len, "config", &doc, err);

	if (r < 0)
		return r;
	if (!json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return nshash_error_set(err, EINVAL, "config: expected a JSON object");
	}
	json_object_object_get_ex(doc, "annotations", &ann);
	r = nsh_oci_request_from_annotations(ann, req, err);
	json_object_put(doc);
	return r;
}

const char *const nsh_oci_src_names[NSH_SRC_COUNT] = {
    [NSH_SRC_ANNOTATION] = "annotations",
    [NSH_SRC_RUNTIME] = "nshash-runtime --nshash-tcp/--nshash-udp",
    [NSH_SRC_DEFAULT] = "defaultTcp/defaultUdp",
};

void nsh_oci_decide(const struct nsh_policy *policy, const struct nsh_said *runtime, struct nsh_oci_request *req,
		    struct nsh_decision *d)
{
	struct nsh_said ann = {.said = {req->said[0], req->said[1]},
			       .is_auto = {req->auto_tcp, req->auto_udp},
			       .size = {req->sizes.tcp, req->sizes.udp}},
			def;
	nsh_said_policy_defaults(policy, &def);
	const struct nsh_said *by[NSH_SRC_COUNT] = {
	    [NSH_SRC_ANNOTATION] = &ann, [NSH_SRC_RUNTIME] = runtime, [NSH_SRC_DEFAULT] = &def};
	nsh_decide(by, d);
	req->sizes = d->sizes;
	req->auto_tcp = d->is_auto[0];
	req->auto_udp = d->is_auto[1];
	req->present = nsh_decision_decided(d);
}
