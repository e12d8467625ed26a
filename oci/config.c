/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What an OCI config document is, as the transform and the wrapper read
 * it: its namespace entries and their paths, whether it asks for a user
 * namespace of its own, whether its mounts must reach the host. */
#include <json-c/json.h>
#include <string.h>

#include "oci.h"

struct json_object *nsh_oci_namespace_entry(struct json_object *doc, const char *type_name)
{
	struct json_object *linux_, *nss;

	if (!json_object_object_get_ex(doc, "linux", &linux_) || !json_object_is_type(linux_, json_type_object) ||
	    !json_object_object_get_ex(linux_, "namespaces", &nss) || !json_object_is_type(nss, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(nss); i++) {
		struct json_object *e = json_object_array_get_idx(nss, i), *type;
		if (json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "type", &type) &&
		    json_object_is_type(type, json_type_string) && !strcmp(json_object_get_string(type), type_name))
			return e;
	}
	return NULL;
}

struct json_object *nsh_oci_network_entry(struct json_object *doc)
{
	return nsh_oci_namespace_entry(doc, "network");
}

const char *nsh_oci_namespace_path(struct json_object *doc, const char *type)
{
	struct json_object *e = nsh_oci_namespace_entry(doc, type), *path;
	if (!e || !json_object_object_get_ex(e, "path", &path) || !json_object_is_type(path, json_type_string) ||
	    json_object_get_string_len(path) == 0)
		return NULL;
	return json_object_get_string(path);
}

bool nsh_oci_wants_new_userns(struct json_object *doc)
{
	struct json_object *e = nsh_oci_namespace_entry(doc, "user"), *path;
	if (!e)
		return false;
	if (!json_object_object_get_ex(e, "path", &path) || json_object_is_type(path, json_type_null))
		return true;
	return json_object_is_type(path, json_type_string) && !json_object_get_string(path)[0];
}

static bool is_shared(const char *s)
{
	return s && (!strcmp(s, "shared") || !strcmp(s, "rshared"));
}

bool nsh_oci_doc_wants_shared(struct json_object *doc)
{
	struct json_object *linux_, *prop, *mounts;

	if (json_object_object_get_ex(doc, "linux", &linux_) &&
	    json_object_object_get_ex(linux_, "rootfsPropagation", &prop) &&
	    json_object_is_type(prop, json_type_string) && is_shared(json_object_get_string(prop)))
		return true;
	if (!json_object_object_get_ex(doc, "mounts", &mounts) || !json_object_is_type(mounts, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(mounts); i++) {
		struct json_object *options, *m = json_object_array_get_idx(mounts, i);
		if (!json_object_is_type(m, json_type_object) || !json_object_object_get_ex(m, "options", &options) ||
		    !json_object_is_type(options, json_type_array))
			continue;
		for (size_t k = 0; k < json_object_array_length(options); k++) {
			struct json_object *o = json_object_array_get_idx(options, k);
			if (json_object_is_type(o, json_type_string) && is_shared(json_object_get_string(o)))
				return true;
		}
	}
	return false;
}
