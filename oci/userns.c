/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Containers with a user namespace of their own (linux.namespaces has
 * {"type": "user"} without a path, linux.uidMappings/gidMappings): their
 * netns must be owned by that user namespace (sysfs, and every per-netns
 * privilege, are checked against the netns's owner), so nshash makes the
 * user namespace too, with exactly the config's mappings
 * (nshash_userns_netns_new), pins both, and the config names both by path.
 * runc 1.1 and crun 1.8 join a user namespace by path and still need the
 * mappings in the config (runc: "User namespaces enabled, but no uid
 * mappings found" without them): they are kept. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

/* One member of a mapping object as a uint32. */
static int map_member(struct json_object *o, const char *key, const char *what, size_t i, uint32_t *out,
		      struct nshash_error *err)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return nshash_error_set(err, EINVAL, "config: linux.%s[%zu].%s: missing or not an integer", what, i,
					key);
	errno = 0;
	int64_t n = json_object_get_int64(v);
	if (errno || n < 0 || n > 4294967295ll)
		return nshash_error_set(err, EINVAL, "config: linux.%s[%zu].%s: %lld is outside 0..4294967295", what, i,
					key, (long long)n);
	*out = (uint32_t)n;
	return 0;
}

static int parse_maps(struct json_object *linux_, const char *what, struct nshash_idmap *m, size_t *n,
		      struct nshash_error *err)
{
	struct json_object *arr;
	*n = 0;
	if (!json_object_object_get_ex(linux_, what, &arr) || !json_object_is_type(arr, json_type_array) ||
	    json_object_array_length(arr) == 0)
		return nshash_error_set(err, EINVAL,
					"config: a new user namespace (linux.namespaces {\"type\": \"user\"}) without "
					"linux.%s: give the container's mappings (the runtime needs them too)",
					what);
	size_t len = json_object_array_length(arr);
	if (len > NSHASH_IDMAP_MAX)
		return nshash_error_set(err, EINVAL, "config: linux.%s: %zu entries (the kernel takes at most %d)",
					what, len, NSHASH_IDMAP_MAX);
	for (size_t i = 0; i < len; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(o, json_type_object))
			return nshash_error_set(err, EINVAL, "config: linux.%s[%zu]: not an object", what, i);
		int r = map_member(o, "containerID", what, i, &m[i].inside, err);
		if (r == 0)
			r = map_member(o, "hostID", what, i, &m[i].outside, err);
		if (r == 0)
			r = map_member(o, "size", what, i, &m[i].count, err);
		if (r < 0)
			return r;
	}
	*n = len;
	return 0;
}

int nsh_oci_userns_create(struct json_object *doc, const struct nshash_create_opts *copts, const char *pin_path,
			  const char *userns_pin, struct nshash_netns_info *info, struct nshash_error *err)
{
	struct json_object *linux_;
	struct nshash_idmap *uid = NULL, *gid = NULL;
	struct nshash_userns_spec spec = {0};
	int ufd = -1, nsfd = -1, r;

	if (!json_object_object_get_ex(doc, "linux", &linux_))
		return nshash_error_set(err, EINVAL, "config: no linux object");
	uid = calloc(NSHASH_IDMAP_MAX, sizeof(*uid));
	gid = calloc(NSHASH_IDMAP_MAX, sizeof(*gid));
	if (!uid || !gid) {
		r = nshash_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	r = parse_maps(linux_, "uidMappings", uid, &spec.nuid, err);
	if (r == 0)
		r = parse_maps(linux_, "gidMappings", gid, &spec.ngid, err);
	if (r < 0)
		goto out;
	spec.uid = uid;
	spec.gid = gid;
	r = nshash_userns_netns_new(copts, &spec, &ufd, &nsfd, info, err);
	if (r < 0)
		goto out;
	r = nshash_userns_pin(ufd, userns_pin, err);
	if (r == 0) {
		r = nshash_pin_fd(nsfd, pin_path, err);
		if (r < 0) {
			struct nshash_error ignored;
			nshash_userns_pin_remove(userns_pin, &ignored);
		}
	}
out:
	if (ufd >= 0)
		close(ufd);
	if (nsfd >= 0)
		close(nsfd);
	free(uid);
	free(gid);
	return r;
}

int nsh_oci_userns_join_create(const char *path, const struct nsh_policy *policy, struct nshash_sizes sizes,
			       const char *pin_path, struct nshash_netns_info *info, struct nshash_error *err)
{
	bool callers;
	int ufd = -1, nsfd = -1;
	int r = nshash_userns_open(path, &ufd, &callers, err);
	if (r < 0)
		return nshash_error_prefix(err, "config: linux.namespaces");
	if (callers) { /* ours: a netns as any other */
		close(ufd);
		return 0;
	}
	struct nshash_create_opts copts = nsh_policy_create_opts(policy, sizes);
	r = nshash_userns_netns_join(&copts, ufd, &nsfd, info, err);
	close(ufd);
	if (r == 0) {
		r = nshash_pin_fd(nsfd, pin_path, err);
		close(nsfd);
	}
	return r < 0 ? r : 1;
}
