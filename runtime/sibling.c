/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The wrapper's sibling bundle, for a sized container that asks for shared
 * mount propagation: such a container must be created in the host's mount
 * namespace (mounts it makes reach the host), where no private bind can
 * hand the runtime the sized config.  STATE_DIR/bundles/PIN holds only
 * config.json: the sized config, its relative paths (root.path, bind mount
 * sources) made absolute against the user's bundle, which is never written;
 * the runtime is given that directory as its bundle. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

static bool str_is(struct json_object *o, const char *s)
{
	return json_object_is_type(o, json_type_string) && !strcmp(json_object_get_string(o), s);
}

/* A mount the runtime binds: type "bind" or an option bind/rbind. */
static bool is_bind(struct json_object *m)
{
	struct json_object *type, *options;

	if (json_object_object_get_ex(m, "type", &type) && str_is(type, "bind"))
		return true;
	if (!json_object_object_get_ex(m, "options", &options) || !json_object_is_type(options, json_type_array))
		return false;
	for (size_t k = 0; k < json_object_array_length(options); k++) {
		struct json_object *o = json_object_array_get_idx(options, k);
		if (str_is(o, "bind") || str_is(o, "rbind"))
			return true;
	}
	return false;
}

/* obj[key], a relative path, made BASE/path. */
static int absolutize(struct json_object *obj, const char *key, const char *base, struct nshash_error *err)
{
	struct json_object *v;
	char joined[PATH_MAX];

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return 0;
	const char *p = json_object_get_string(v);
	if (p[0] == '/' || p[0] == '\0')
		return 0;
	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", base, p) >= sizeof(joined))
		return nshash_error_set(err, ENAMETOOLONG, "config: %s %.100s...: path too long against bundle %s", key,
					p, base);
	json_object_object_add(obj, key, json_object_new_string(joined));
	return 0;
}

/* The sized config with root.path and bind sources made absolute against
 * `bundle_real`, serialized (malloc'd). */
static int rebase(const char *config, size_t len, const char *bundle_real, char **out, size_t *out_len,
		  struct nshash_error *err)
{
	struct json_object *doc, *root, *mounts;
	int r = nsh_json_parse_text(config, len, "sized config", &doc, err);

	if (r < 0)
		return r;
	if (json_object_object_get_ex(doc, "root", &root) && json_object_is_type(root, json_type_object))
		r = absolutize(root, "path", bundle_real, err);
	if (r == 0 && json_object_object_get_ex(doc, "mounts", &mounts) && json_object_is_type(mounts, json_type_array))
		for (size_t i = 0; r == 0 && i < json_object_array_length(mounts); i++) {
			struct json_object *m = json_object_array_get_idx(mounts, i);
			if (json_object_is_type(m, json_type_object) && is_bind(m))
				r = absolutize(m, "source", bundle_real, err);
		}
	size_t n = 0;
	const char *s =
	    r == 0 ? json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n)
		   : NULL;
	if (r == 0 && (!s || !(*out = strndup(s, n))))
		r = nshash_error_set(err, ENOMEM, "sized config: out of memory");
	*out_len = n;
	json_object_put(doc);
	return r;
}

int nsh_sibling_path(const char *state_dir, const char *pin, char *out, size_t len, struct nshash_error *err)
{
	if ((size_t)snprintf(out, len, "%s/bundles/%s", state_dir, pin) >= len)
		return nshash_error_set(err, ENAMETOOLONG, "%s/bundles/%s: path too long", state_dir, pin);
	return 0;
}

int nsh_sibling_remove(const char *dir, struct nshash_error *err)
{
	char file[PATH_MAX + 16];

	snprintf(file, sizeof(file), "%s/config.json", dir);
	if (unlink(file) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove %s", file);
	if (rmdir(dir) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove %s", dir);
	return 0;
}

int nsh_sibling_write(const char *state_dir, const char *pin, const char *bundle, const char *config, size_t len,
		      char *dir, size_t dir_len, struct nshash_error *err)
{
	char real[PATH_MAX], parent[PATH_MAX], file[PATH_MAX + 16], *rebased = NULL;
	size_t rebased_len = 0;
	int r;

	/* what the runtime would join relative paths with: the bundle's
	 * real path (runc: getcwd after chdir into it) */
	if (!realpath(bundle, real))
		return nsh_error_sys(err, errno, "bundle %s", bundle);
	r = nshash_state_subdir(state_dir, "bundles", parent, sizeof(parent), err);
	if (r == 0)
		r = nsh_sibling_path(state_dir, pin, dir, dir_len, err);
	if (r == 0)
		r = rebase(config, len, real, &rebased, &rebased_len, err);
	if (r < 0)
		return r;
	struct nshash_error ignored;
	nsh_sibling_remove(dir, &ignored); /* one a killed create of this id left */
	if (mkdir(dir, 0700) < 0) {
		r = nsh_error_sys(err, errno, "make %s", dir);
		free(rebased);
		return r;
	}
	snprintf(file, sizeof(file), "%s/config.json", dir);
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || nsh_write_all(fd, rebased, rebased_len) < 0)
		r = nsh_error_sys(err, errno, "write %s", file);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = nsh_error_sys(err, errno, "write %s", file);
	free(rebased);
	if (r < 0)
		nsh_sibling_remove(dir, &ignored);
	return r;
}

static int sibling_gone(const char *path, const struct stat *st, void *ctx)
{
	struct nshash_error ignored;
	(void)ctx;
	return S_ISDIR(st->st_mode) ? nsh_sibling_remove(path, &ignored) : -1;
}

int nsh_sibling_sweep(const char *state_dir, int64_t stale_age)
{
	struct nshash_error ignored;
	/* its pin comes first and goes first */
	int r = nsh_sweep_unpinned(state_dir, "bundles", stale_age, sibling_gone, NULL, &ignored);
	return r < 0 ? 0 : r;
}
