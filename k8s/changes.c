/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What nshash changed in the node's CNI config dir, so that uninstall is an
 * exact restore: the list of changes (NET_DIR/.nshash-cni-install.state,
 * JSON, 0600) and the copies of the originals it names.
 *
 * Each change is a file nshash wrote: {"name": the file it chained,
 * "target": the file it wrote (name, or NAME.conflist for a converted
 * .conf), "backup": NAME.nshash-orig, "written": the exact bytes it wrote
 * last}.  The backup is the file as it was before nshash's first write (or
 * before the first write after the primary CNI rewrote it): same bytes,
 * mode, owner and times; never a copy naming nshash (such content is kept
 * without nshash's entries), never made over a backup the list does not
 * name, never rewritten by an edit of the chained file that leaves the
 * rest as the backup has it (a hand edit of nshash's entry, which the
 * watcher reverts). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

json_object *k8s_changes_load(const char *dir, struct nshash_error *err)
{
	char p[4096];
	k8s_path_in(p, sizeof(p), dir, K8S_CHANGES);
	json_object *changes = NULL, *files;
	int r = nsh_json_read_file(p, K8S_MAX_FILE * 4u, &changes, NULL, err);
	if (r == -ENOENT) {
		changes = json_object_new_object();
		json_object_object_add(changes, "version", json_object_new_int(1));
		json_object_object_add(changes, "files", json_object_new_array());
		return changes;
	}
	if (r < 0)
		return NULL;
	if (!json_object_is_type(changes, json_type_object) || !json_object_object_get_ex(changes, "files", &files) ||
	    !json_object_is_type(files, json_type_array)) {
		json_object_put(changes);
		nshash_error_set(err, EINVAL, "%s: not nshash-cni-install's record (no \"files\" list): move it away",
				 p);
		return NULL;
	}
	return changes;
}

int k8s_changes_save(const char *dir, json_object *changes, struct nshash_error *err)
{
	char p[4096];
	k8s_path_in(p, sizeof(p), dir, K8S_CHANGES);
	const char *text = json_object_to_json_string_ext(changes, K8S_JSON_OUT);
	return k8s_write_atomic(p, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1, err);
}

const char *k8s_change_str(json_object *f, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(f, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

bool k8s_change_valid(json_object *f)
{
	/* names of this dir only: a record is a host file, but never a way out */
	const char *keys[] = {"name", "target", "backup"};
	for (size_t i = 0; i < 3; i++) {
		const char *s = k8s_change_str(f, keys[i]);
		if (!*s || strchr(s, '/') || !strcmp(s, "..") || !strcmp(s, "."))
			return false;
	}
	return true;
}

json_object *k8s_change_find(json_object *changes, const char *key, const char *value)
{
	json_object *files;
	json_object_object_get_ex(changes, "files", &files);
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		json_object *f = json_object_array_get_idx(files, i);
		if (k8s_change_valid(f) && !strcmp(k8s_change_str(f, key), value))
			return f;
	}
	return NULL;
}

bool k8s_change_written_is(json_object *f, const char *bytes, size_t len)
{
	json_object *w;
	return f && json_object_object_get_ex(f, "written", &w) && json_object_is_type(w, json_type_string) &&
	       (size_t)json_object_get_string_len(w) == len && memcmp(json_object_get_string(w), bytes, len) == 0;
}

json_object *k8s_change_new(json_object *changes, const char *name, const char *target)
{
	char backup[1024];
	snprintf(backup, sizeof(backup), "%s%s", name, K8S_ORIG_EXT);
	json_object *f = json_object_new_object(), *files;
	json_object_object_add(f, "name", json_object_new_string(name));
	json_object_object_add(f, "target", json_object_new_string(target));
	json_object_object_add(f, "backup", json_object_new_string(backup));
	json_object_object_get_ex(changes, "files", &files);
	json_object_array_add(files, f);
	return f;
}

/* BACKUP in dir holds the same JSON as `want`. */
static bool backup_matches(const char *dir, const char *backup, json_object *want)
{
	struct k8s_file b;
	struct nshash_error e;
	if (k8s_file_read(dir, backup, &b, &e) < 0)
		return false;
	bool same = b.json && json_object_equal(b.json, want);
	k8s_file_free(&b);
	return same;
}

/* The file as it was before nshash at BACKUP, with its mode, owner and
 * times: its bytes, or when it already names nshash (chained by an
 * earlier installer) its content without nshash's entries, never a copy
 * uninstall would put back chained.  `fresh` (the record does not name
 * BACKUP yet): an existing BACKUP is never replaced; the one the old
 * install-cni.sh left (no nshash in it) is taken when the file names
 * nshash.  1 written, 0 the existing one taken, -errno. */
int k8s_backup_make(const char *dir, const struct k8s_file *f, const char *backup, bool fresh, struct nshash_error *err)
{
	char p[4096], tmp[4200];
	k8s_path_in(p, sizeof(p), dir, backup);
	bool chained = f->json && k8s_names_nshash(f->json);
	if (fresh) {
		struct k8s_file b;
		struct nshash_error e;
		int br = k8s_file_read(dir, backup, &b, &e);
		bool clean =
		    br == 0 && b.json && json_object_is_type(b.json, json_type_object) && !k8s_names_nshash(b.json);
		k8s_file_free(&b);
		if (br == 0 && clean && chained)
			return 0;
		if (br == 0 || br != -ENOENT)
			return nshash_error_set(
			    err, EEXIST,
			    "%s is there and nshash's record %s/%s does not name it%s: not replacing "
			    "it (move it away if it is stale)",
			    p, dir, K8S_CHANGES,
			    clean ? "" : " (it is no copy of the original: it names nshash or is not JSON)");
	}
	char *stripped = NULL;
	const char *bytes = f->bytes;
	size_t len = f->len;
	if (chained) {
		json_object *copy = NULL;
		json_object_deep_copy(f->json, &copy, NULL);
		if (copy)
			k8s_plugins_replace(copy, NULL);
		stripped = copy ? k8s_serialized(copy) : NULL;
		if (stripped && !fresh && backup_matches(dir, backup, copy)) {
			/* an edit of the chained file that leaves the rest as
			 * the saved original has it (nshash's entry changed by
			 * hand, reverted by the watcher): the original's own
			 * bytes stay, never a reformatted copy of them */
			json_object_put(copy);
			free(stripped);
			return 0;
		}
		json_object_put(copy);
		if (!stripped)
			return nshash_error_set(err, ENOMEM, "%s: out of memory", p);
		bytes = stripped, len = strlen(stripped);
	}
	/* fresh: made beside it, then linked to its name (never over one) */
	snprintf(tmp, sizeof(tmp), "%s.nshash-new", p);
	const char *w = fresh ? tmp : p;
	int r = k8s_write_atomic(w, bytes, len, f->st.st_mode & 07777, f->st.st_uid, f->st.st_gid, err);
	free(stripped);
	if (r < 0)
		return r;
	struct timespec t[2] = {f->st.st_atim, f->st.st_mtim};
	(void)utimensat(AT_FDCWD, w, t, AT_SYMLINK_NOFOLLOW);
	if (fresh) {
		r = link(tmp, p) < 0 ? -errno : 0;
		unlink(tmp);
		if (r < 0)
			return nshash_error_set(err, -r, "write %s: %s", p, strerror(-r));
	}
	return 1;
}
