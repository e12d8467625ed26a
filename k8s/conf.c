/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The node's CNI config dir: which file libcni loads, nshash's entry made
 * plugins[0] of it (a single-plugin .conf turned into a .conflist), and the
 * record that makes uninstall an exact restore.
 *
 * The record (NET_DIR/.nshash-cni-install.state, JSON, 0600) lists each
 * file nshash wrote: {"name": the file it chained, "target": the file it
 * wrote (name, or NAME.conflist for a converted .conf), "backup":
 * NAME.nshash-orig, "written": the exact bytes it wrote last}.  The backup
 * is the file as it was before nshash's first write (or before the first
 * write after the primary CNI rewrote it): same bytes, mode, owner and
 * times; never a copy naming nshash (such content is kept without
 * nshash's entries), never made over a backup the record does not name,
 * never rewritten by an edit of the chained file that leaves the rest as
 * the backup has it (a hand edit of nshash's entry, which the watcher
 * reverts).
 * A pass that fails puts the record back as it was loaded.  A file an
 * earlier installer (the old install-cni.sh) chained, with no record, is
 * adopted: recorded with the copy of the original it left when that names
 * no nshash, else with its content stripped of nshash.  Uninstall puts a
 * backup back by renaming it over the file when the file still holds
 * what nshash wrote; otherwise (the primary rewrote it since) it removes
 * only nshash's entry from the current content, and never deletes it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

static bool conf_ext(const char *n)
{
	const char *dot = strrchr(n, '.');
	return dot && (!strcmp(dot, ".conf") || !strcmp(dot, ".conflist") || !strcmp(dot, ".json"));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of net_dir libcni would read, in its order (bytewise), NULL
 * terminated; `skip` left out and `add` put in (NULL: none). */
static char **conf_files(const char *dir, const char *skip, const char *add, struct nshash_error *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		nshash_error_set(err, errno,
				 "%s: %s (mount the node's CNI config dir there, or name it with "
				 "--cni-net-dir)",
				 dir, strerror(errno));
		return NULL;
	}
	size_t n = 0, cap = 16;
	char **v = calloc(cap, sizeof(*v));
	if (!v) {
		closedir(d);
		nshash_error_set(err, ENOMEM, "%s: out of memory", dir);
		return NULL;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!conf_ext(de->d_name) || (skip && !strcmp(de->d_name, skip)) || (add && !strcmp(de->d_name, add)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || S_ISDIR(st.st_mode))
			continue;
		if (n + 3 > cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)))
			n++;
	}
	closedir(d);
	if (add && (v[n] = strdup(add)))
		n++;
	v[n] = NULL;
	qsort(v, n, sizeof(*v), by_name);
	return v;
}

static void names_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int k8s_active_conf(const struct k8s_opts *o, char *name, size_t len, struct nshash_error *err)
{
	if (o->conf_name && *o->conf_name) {
		char p[4096];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", o->net_dir, o->conf_name);
		if (stat(p, &st) < 0)
			return nshash_error_set(err, ENOENT, "%s: not there yet (CNI_CONF_NAME names it)", p);
		snprintf(name, len, "%s", o->conf_name);
		return 0;
	}
	char **v = conf_files(o->net_dir, NULL, NULL, err);
	if (!v)
		return -err->errnum;
	int r = 0;
	if (v[0])
		snprintf(name, len, "%s", v[0]);
	else
		r = nshash_error_set(err, ENOENT,
				     "no CNI config in %s yet (no *.conf, *.conflist or *.json: the primary CNI has "
				     "not written one); nothing to chain",
				     o->net_dir);
	names_free(v);
	return r;
}

int k8s_lock(const char *dir, struct nshash_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno,
					"%s: %s (mount the node's CNI config dir there, or name it with "
					"--cni-net-dir)",
					dir, strerror(errno));
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return nsh_error_sys(err, e, "lock %s", dir);
		}
	}
	return fd;
}

void k8s_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* ---- the record */

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static json_object *record_load(const char *dir, struct nshash_error *err)
{
	char p[4096], *text;
	size_t len;
	path_in(p, sizeof(p), dir, K8S_RECORD);
	json_object *rec = NULL, *files;
	int r = nsh_read_file(p, K8S_MAX_FILE * 4u, &text, &len, err);
	if (r == -ENOENT) {
		rec = json_object_new_object();
		json_object_object_add(rec, "version", json_object_new_int(1));
		json_object_object_add(rec, "files", json_object_new_array());
		return rec;
	}
	if (r < 0)
		return NULL;
	r = nsh_json_parse_text(text, len, p, &rec, err);
	free(text);
	if (r < 0)
		return NULL;
	if (!json_object_is_type(rec, json_type_object) || !json_object_object_get_ex(rec, "files", &files) ||
	    !json_object_is_type(files, json_type_array)) {
		json_object_put(rec);
		nshash_error_set(err, EINVAL, "%s: not nshash-cni-install's record (no \"files\" list): move it away",
				 p);
		return NULL;
	}
	return rec;
}

static int record_save(const char *dir, json_object *rec, struct nshash_error *err)
{
	char p[4096];
	path_in(p, sizeof(p), dir, K8S_RECORD);
	const char *text = json_object_to_json_string_ext(rec, K8S_JSON_OUT);
	return k8s_write_atomic(p, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1, err);
}

static const char *rec_str(json_object *f, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(f, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

static bool rec_valid(json_object *f)
{
	/* names of this dir only: a record is a host file, but never a way out */
	const char *keys[] = {"name", "target", "backup"};
	for (size_t i = 0; i < 3; i++) {
		const char *s = rec_str(f, keys[i]);
		if (!*s || strchr(s, '/') || !strcmp(s, "..") || !strcmp(s, "."))
			return false;
	}
	return true;
}

static json_object *rec_find(json_object *rec, const char *key, const char *value)
{
	json_object *files;
	json_object_object_get_ex(rec, "files", &files);
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		json_object *f = json_object_array_get_idx(files, i);
		if (rec_valid(f) && !strcmp(rec_str(f, key), value))
			return f;
	}
	return NULL;
}

static bool rec_written_is(json_object *f, const char *bytes, size_t len)
{
	json_object *w;
	return f && json_object_object_get_ex(f, "written", &w) && json_object_is_type(w, json_type_string) &&
	       (size_t)json_object_get_string_len(w) == len && memcmp(json_object_get_string(w), bytes, len) == 0;
}

/* ---- files */

struct file {
	char path[4096];
	char *bytes;
	size_t len;
	struct stat st;
	json_object *json; /* NULL: not JSON (why in err) */
};

static void file_free(struct file *f)
{
	free(f->bytes);
	json_object_put(f->json);
	f->bytes = NULL;
	f->json = NULL;
}

/* Read DIR/NAME; -ENOENT when it is gone. JSON errors are left in f->json NULL + err. */
static int file_read(const char *dir, const char *name, struct file *f, struct nshash_error *err)
{
	memset(f, 0, sizeof(*f));
	path_in(f->path, sizeof(f->path), dir, name);
	struct stat lst;
	if (lstat(f->path, &lst) == 0 && S_ISLNK(lst.st_mode))
		return nshash_error_set(
		    err, ELOOP, "%s is a symbolic link: nshash chains only a regular file (not touching it)", f->path);
	int r = nsh_read_file_stat(f->path, K8S_MAX_FILE, &f->bytes, &f->len, &f->st, err);
	if (r < 0)
		return r;
	if (nsh_json_parse_text(f->bytes, f->len, f->path, &f->json, err) < 0)
		f->json = NULL;
	return 0;
}

static bool is_nshash(json_object *p);
static size_t plugins_replace(json_object *list, json_object *entry);
static char *serialized(json_object *o);

/* The JSON is nshash's plugin or a list naming it. */
static bool names_nshash(json_object *j)
{
	json_object *plugins;
	if (is_nshash(j))
		return true;
	if (!json_object_object_get_ex(j, "plugins", &plugins) || !json_object_is_type(plugins, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(plugins); i++)
		if (is_nshash(json_object_array_get_idx(plugins, i)))
			return true;
	return false;
}

/* BACKUP in dir holds the same JSON as `want`. */
static bool backup_matches(const char *dir, const char *backup, json_object *want)
{
	struct file b;
	struct nshash_error e;
	if (file_read(dir, backup, &b, &e) < 0)
		return false;
	bool same = b.json && json_object_equal(b.json, want);
	file_free(&b);
	return same;
}

/* The file as it was before nshash at BACKUP, with its mode, owner and
 * times: its bytes, or when it already names nshash (chained by an
 * earlier installer) its content without nshash's entries, never a copy
 * uninstall would put back chained.  `fresh` (the record does not name
 * BACKUP yet): an existing BACKUP is never replaced; the one the old
 * install-cni.sh left (no nshash in it) is taken when the file names
 * nshash.  1 written, 0 the existing one taken, -errno. */
static int backup_make(const char *dir, const struct file *f, const char *backup, bool fresh, struct nshash_error *err)
{
	char p[4096], tmp[4200];
	path_in(p, sizeof(p), dir, backup);
	bool chained = f->json && names_nshash(f->json);
	if (fresh) {
		struct file b;
		struct nshash_error e;
		int br = file_read(dir, backup, &b, &e);
		bool clean =
		    br == 0 && b.json && json_object_is_type(b.json, json_type_object) && !names_nshash(b.json);
		file_free(&b);
		if (br == 0 && clean && chained)
			return 0;
		if (br == 0 || br != -ENOENT)
			return nshash_error_set(
			    err, EEXIST,
			    "%s is there and nshash's record %s/%s does not name it%s: not replacing "
			    "it (move it away if it is stale)",
			    p, dir, K8S_RECORD,
			    clean ? "" : " (it is no copy of the original: it names nshash or is not JSON)");
	}
	char *stripped = NULL;
	const char *bytes = f->bytes;
	size_t len = f->len;
	if (chained) {
		json_object *copy = NULL;
		json_object_deep_copy(f->json, &copy, NULL);
		if (copy)
			plugins_replace(copy, NULL);
		stripped = copy ? serialized(copy) : NULL;
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

/* The file still holds what was read (a primary rewriting it meanwhile is
 * never overwritten with the merge of its old content): 0, else -EAGAIN. */
static int still_same(const struct file *f, struct nshash_error *err)
{
	char *now = NULL;
	size_t len = 0;
	struct nshash_error e;
	int r = nsh_read_file(f->path, K8S_MAX_FILE, &now, &len, &e);
	bool same = r == 0 && len == f->len && memcmp(now, f->bytes, len) == 0;
	free(now);
	if (same)
		return 0;
	return nshash_error_set(err, EAGAIN,
				"%s changed while nshash was chaining it (the primary CNI writing it?); retried at its "
				"next change",
				f->path);
}

static bool is_nshash(json_object *p)
{
	json_object *t;
	return json_object_is_type(p, json_type_object) && json_object_object_get_ex(p, "type", &t) &&
	       json_object_is_type(t, json_type_string) && !strcmp(json_object_get_string(t), "nshash");
}

/* The list without nshash's entries, entry (a copy) first when not NULL.
 * Returns how many nshash entries there were. */
static size_t plugins_replace(json_object *list, json_object *entry)
{
	json_object *plugins, *out = json_object_new_array();
	size_t had = 0;
	json_object_object_get_ex(list, "plugins", &plugins);
	if (entry) {
		json_object *copy = NULL;
		json_object_deep_copy(entry, &copy, NULL);
		json_object_array_add(out, copy);
	}
	for (size_t i = 0; i < json_object_array_length(plugins); i++) {
		json_object *p = json_object_array_get_idx(plugins, i);
		if (is_nshash(p))
			had++;
		else
			json_object_array_add(out, json_object_get(p));
	}
	json_object_object_add(list, "plugins", out);
	return had;
}

static char *serialized(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, K8S_JSON_OUT);
	char *t = malloc(strlen(s) + 2);
	if (t)
		sprintf(t, "%s\n", s);
	return t;
}

/* What is wrong with the primary's file as nshash would chain into it
 * (NULL: nothing); the list to merge into (a copy, or a .conf made a list). */
static const char *primary_list(const struct file *f, bool is_list, json_object **list)
{
	json_object *plugins, *t;
	*list = NULL;
	if (!json_object_is_type(f->json, json_type_object))
		return "it is not a JSON object";
	if (is_list) {
		if (!json_object_object_get_ex(f->json, "plugins", &plugins) ||
		    !json_object_is_type(plugins, json_type_array))
			return "it has no \"plugins\" list";
		if (json_object_array_length(plugins) == 0)
			return "its \"plugins\" list is empty (nshash never becomes a network of its own)";
		for (size_t i = 0; i < json_object_array_length(plugins); i++) {
			json_object *p = json_object_array_get_idx(plugins, i);
			if (!json_object_is_type(p, json_type_object) || !json_object_object_get_ex(p, "type", &t) ||
			    !json_object_is_type(t, json_type_string) || !*json_object_get_string(t))
				return "a plugin of its \"plugins\" list has no \"type\" string";
		}
		json_object_deep_copy(f->json, list, NULL);
		return NULL;
	}
	if (!json_object_object_get_ex(f->json, "type", &t) || !json_object_is_type(t, json_type_string) ||
	    !*json_object_get_string(t))
		return "a single-plugin config without a \"type\" string (libcni would refuse it too)";
	json_object *one = NULL, *v;
	json_object_deep_copy(f->json, &one, NULL);
	*list = json_object_new_object();
	if (json_object_object_get_ex(one, "cniVersion", &v))
		json_object_object_add(*list, "cniVersion", json_object_get(v));
	if (json_object_object_get_ex(one, "name", &v))
		json_object_object_add(*list, "name", json_object_get(v));
	json_object_object_del(one, "cniVersion");
	json_object_object_del(one, "name");
	plugins = json_object_new_array();
	json_object_array_add(plugins, one);
	json_object_object_add(*list, "plugins", plugins);
	return NULL;
}

static json_object *rec_new(json_object *rec, const char *name, const char *target)
{
	char backup[1024];
	snprintf(backup, sizeof(backup), "%s%s", name, K8S_ORIG_EXT);
	json_object *f = json_object_new_object(), *files;
	json_object_object_add(f, "name", json_object_new_string(name));
	json_object_object_add(f, "target", json_object_new_string(target));
	json_object_object_add(f, "backup", json_object_new_string(backup));
	json_object_object_get_ex(rec, "files", &files);
	json_object_array_add(files, f);
	return f;
}

enum k8s_pass k8s_chain(struct k8s_ctx *c, char *done, size_t dlen, struct nshash_error *err)
{
	const struct k8s_opts *o = c->o;
	char name[1024];
	struct file f = {0};
	json_object *list = NULL, *rec = NULL;
	char *text = NULL, **order = NULL, *rec_was = NULL;
	enum k8s_pass res = K8S_REFUSED;
	done[0] = '\0';
	c->warning[0] = '\0';
	c->chained[0] = '\0';

	if (!c->entry) {
		nshash_error_set(err, EINVAL, "%s", c->entry_error);
		return K8S_REFUSED;
	}
	if (k8s_active_conf(o, name, sizeof(name), err) < 0)
		return K8S_REFUSED;
	if (file_read(o->net_dir, name, &f, err) < 0)
		goto out;
	if (!f.json) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		nshash_error_set(
		    err, EINVAL,
		    "%.900s; not touching it (retried at its next change: a primary CNI may be writing it)", why);
		goto out;
	}
	const char *dot = strrchr(name, '.');
	bool is_list = dot && !strcmp(dot, ".conflist");
	const char *bad = primary_list(&f, is_list, &list);
	if (bad) {
		nshash_error_set(err, EINVAL, "%s: %s; not chaining into it (fix the primary CNI's config)", f.path,
				 bad);
		goto out;
	}
	char target[1100];
	snprintf(target, sizeof(target), "%s", name);
	if (!is_list) {
		if (o->conf_name && *o->conf_name) {
			nshash_error_set(err, EINVAL,
					 "%s is a single-plugin config and CNI_CONF_NAME names it: nshash would have "
					 "to turn it into a .conflist of another name; name a .conflist instead",
					 f.path);
			goto out;
		}
		snprintf(target, sizeof(target), "%.*s.conflist", (int)(dot ? dot - name : (long)strlen(name)), name);
		/* the .conflist must be what libcni picks once the .conf is gone */
		order = conf_files(o->net_dir, name, target, err);
		if (!order)
			goto out;
		if (strcmp(order[0], target)) {
			nshash_error_set(err, EINVAL,
					 "%s: turned into %s, libcni would load %s first instead; not chaining (rename "
					 "one of them)",
					 f.path, target, order[0]);
			goto out;
		}
	}
	plugins_replace(list, c->entry);
	char note[1200];
	if (k8s_validate(c, list, note, sizeof(note), err) < 0) {
		nshash_error_prefix(err, "%s with nshash's entry of %s", f.path, o->entry_path);
		goto out;
	}
	snprintf(c->warning, sizeof(c->warning), "%s", note);
	snprintf(c->chained, sizeof(c->chained), "%s/%s", o->net_dir, target);
	char rpath[4096], made[4096] = "", stale[4096] = "";
	path_in(rpath, sizeof(rpath), o->net_dir, K8S_RECORD);
	bool unchanged = is_list && json_object_equal(list, f.json);
	bool had_record = access(rpath, F_OK) == 0;
	if (unchanged && !had_record)
		goto adopt; /* no record: only a file an earlier installer chained is unchanged */
	if (unchanged) {
		rec = record_load(o->net_dir, err);
		if (rec && rec_find(rec, "target", name)) {
			res = K8S_UNCHANGED;
			goto out;
		}
		if (!rec)
			goto out;
		json_object_put(rec);
		rec = NULL;
	}
adopt:
	text = unchanged ? NULL : serialized(list);
	if (!unchanged && !text) {
		nshash_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	res = K8S_REFUSED;
	rec = record_load(o->net_dir, err);
	if (!rec)
		goto out;
	/* the record as loaded: put back when this pass fails, so that
	 * "written" is never what was not written */
	rec_was = had_record ? strdup(json_object_to_json_string_ext(rec, K8S_JSON_OUT)) : NULL;
	if (had_record && !rec_was) {
		nshash_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	json_object *r = rec_find(rec, "target", name);
	struct file t = {0};
	if (is_list) {
		bool ours = r && rec_written_is(r, f.bytes, f.len);
		bool converted = r && strcmp(rec_str(r, "name"), rec_str(r, "target"));
		bool fresh = !r;
		if (converted && !ours) {
			/* a NAME.conflist nshash did not write where it had turned
			 * NAME.conf into one (the primary moved to a .conflist of
			 * its own): from now on a list of its own with its own
			 * copy; the .conf's old copy goes once this is written */
			char b[1100];
			path_in(stale, sizeof(stale), o->net_dir, rec_str(r, "backup"));
			snprintf(b, sizeof(b), "%s%s", name, K8S_ORIG_EXT);
			json_object_object_add(r, "name", json_object_new_string(name));
			json_object_object_add(r, "backup", json_object_new_string(b));
			converted = false;
			fresh = true;
		}
		if (!r && names_nshash(f.json)) {
			/* chained by the old install-cni.sh, which turned NAME.conf
			 * into this list keeping NAME.conf.nshash-orig: adopted as
			 * nshash's conversion when that copy names no nshash */
			char cname[1100], cb[1200];
			struct file cf;
			struct nshash_error ce;
			snprintf(cname, sizeof(cname), "%.*s.conf", (int)(strlen(name) - strlen(".conflist")), name);
			snprintf(cb, sizeof(cb), "%s%s", cname, K8S_ORIG_EXT);
			path_in(made, sizeof(made), o->net_dir, cname);
			if (access(made, F_OK) != 0 && file_read(o->net_dir, cb, &cf, &ce) == 0) {
				json_object *pl;
				if (cf.json && json_object_is_type(cf.json, json_type_object) &&
				    !names_nshash(cf.json) && !json_object_object_get_ex(cf.json, "plugins", &pl)) {
					r = rec_new(rec, cname, name);
					json_object_object_add(r, "backup", json_object_new_string(cb));
					converted = true;
					fresh = false;
				}
				file_free(&cf);
			}
			made[0] = '\0';
		}
		if (!r)
			r = rec_new(rec, name, name);
		if (!ours && !converted) {
			int b = backup_make(o->net_dir, &f, rec_str(r, "backup"), fresh, err);
			if (b < 0)
				goto fail;
			if (b > 0 && fresh)
				path_in(made, sizeof(made), o->net_dir, rec_str(r, "backup"));
		}
		if (unchanged) {
			/* nothing to write: recorded, for uninstall */
			json_object_object_add(r, "written", json_object_new_string_len(f.bytes, (int)f.len));
			if (record_save(o->net_dir, rec, err) < 0)
				goto fail;
			snprintf(done, dlen,
				 "nshash was first in %s already (an earlier installer's): recorded, its original "
				 "without nshash kept as %s/%s for uninstall",
				 f.path, o->net_dir, rec_str(r, "backup"));
			res = K8S_WROTE;
			goto out;
		}
		json_object_object_add(r, "written", json_object_new_string(text));
		if (record_save(o->net_dir, rec, err) < 0 || still_same(&f, err) < 0 ||
		    k8s_write_atomic(f.path, text, strlen(text), f.st.st_mode & 07777, f.st.st_uid, f.st.st_gid, err) <
			0)
			goto fail;
		if (stale[0] && unlink(stale) == 0)
			k8s_log("%s is the primary's own now (not the one nshash made of its .conf): the .conf's "
				"old copy %s removed",
				f.path, stale);
		snprintf(done, dlen, "chained nshash first into %s%s", f.path,
			 ours || converted ? "" : " (its original kept for uninstall)");
		res = K8S_WROTE;
		goto out;
	}
	/* a .conf: NAME.conflist written beside it, then the .conf renamed to
	 * its backup name (libcni ignores it) */
	r = rec_find(rec, "name", name);
	int tr = file_read(o->net_dir, target, &t, err);
	if (tr == 0 && !rec_written_is(r, t.bytes, t.len)) {
		nshash_error_set(err, EEXIST,
				 "%s: turning it into %s/%s would replace a file nshash did not write; not chaining "
				 "(move one of them)",
				 f.path, o->net_dir, target);
		file_free(&t);
		goto out;
	}
	file_free(&t);
	if (tr < 0 && tr != -ENOENT)
		goto fail;
	bool fresh = !r;
	if (!r)
		r = rec_new(rec, name, target);
	json_object_object_add(r, "written", json_object_new_string(text));
	char tpath[4096], bpath[4096];
	path_in(tpath, sizeof(tpath), o->net_dir, target);
	path_in(bpath, sizeof(bpath), o->net_dir, rec_str(r, "backup"));
	if (fresh && access(bpath, F_OK) == 0) {
		nshash_error_set(err, EEXIST,
				 "%s is there and nshash's record %s does not name it: not replacing it (move it away "
				 "if it is stale)",
				 bpath, rpath);
		goto fail;
	}
	if (record_save(o->net_dir, rec, err) < 0 || still_same(&f, err) < 0 ||
	    k8s_write_atomic(tpath, text, strlen(text), f.st.st_mode & 07777, f.st.st_uid, f.st.st_gid, err) < 0)
		goto fail;
	if (rename(f.path, bpath) < 0) {
		nsh_error_sys(err, errno, "rename %s to %s", f.path, bpath);
		unlink(tpath);
		goto fail;
	}
	snprintf(done, dlen, "chained nshash first into %s, made of %s (kept as %s for uninstall)", tpath, f.path,
		 bpath);
	res = K8S_WROTE;
	goto out;
fail:
	/* the node's files as they were: what this pass made goes again, the
	 * record as it was loaded */
	if (made[0])
		unlink(made);
	if (!had_record) {
		unlink(rpath);
	} else if (rec_was) {
		struct nshash_error re;
		if (k8s_write_atomic(rpath, rec_was, strlen(rec_was), 0600, (uid_t)-1, (gid_t)-1, &re) < 0)
			k8s_log("%s (putting the record back after: %s)", re.msg, err->msg);
	}
	/* a primary writing its file: nothing failed, the next change retries */
	res = err->errnum == EAGAIN ? K8S_REFUSED : K8S_FAILED;
out:
	free(rec_was);
	names_free(order);
	json_object_put(rec);
	json_object_put(list);
	free(text);
	file_free(&f);
	return res;
}

int k8s_chained(const struct k8s_ctx *c, struct nshash_error *err)
{
	char name[1024], note[1200];
	struct file f;
	if (!c->entry)
		return nshash_error_set(err, EINVAL, "%s", c->entry_error);
	if (k8s_active_conf(c->o, name, sizeof(name), err) < 0)
		return -err->errnum;
	int r = file_read(c->o->net_dir, name, &f, err);
	if (r < 0)
		return r;
	json_object *plugins, *list = NULL;
	const char *dot = strrchr(name, '.'), *bad;
	if (!f.json) {
		r = -err->errnum;
	} else if ((bad = primary_list(&f, dot && !strcmp(dot, ".conflist"), &list))) {
		r = nshash_error_set(err, EINVAL, "%s: %s (fix the primary CNI's config)", f.path, bad);
	} else {
		/* why it is not chained: first whether it would be refused */
		plugins_replace(list, c->entry);
		if (k8s_validate(c, list, note, sizeof(note), err) < 0)
			r = nshash_error_prefix(err, "%s with nshash's entry of %s is refused", f.path,
						c->o->entry_path);
		else if (!json_object_object_get_ex(f.json, "plugins", &plugins) ||
			 !json_object_is_type(plugins, json_type_array) ||
			 !is_nshash(json_object_array_get_idx(plugins, 0)))
			r = nshash_error_set(err, ENOENT, "nshash is not plugins[0] of %s (the active CNI config)",
					     f.path);
		else if (!json_object_equal(json_object_array_get_idx(plugins, 0), c->entry))
			r = nshash_error_set(err, EINVAL,
					     "plugins[0] of %s is not nshash's entry of %s (an earlier one)", f.path,
					     c->o->entry_path);
	}
	json_object_put(list);
	file_free(&f);
	return r;
}

int k8s_conf_mentioning_nshash(const struct k8s_opts *o, char *name, size_t len)
{
	struct nshash_error e;
	char **v = conf_files(o->net_dir, NULL, NULL, &e);
	int found = 0;
	for (size_t i = 0; v && v[i] && !found; i++) {
		struct file f;
		json_object *plugins = NULL;
		if (file_read(o->net_dir, v[i], &f, &e) < 0)
			continue;
		if (f.json && (is_nshash(f.json) || (json_object_object_get_ex(f.json, "plugins", &plugins) &&
						     json_object_is_type(plugins, json_type_array)))) {
			for (size_t j = 0; !found && plugins && j < json_object_array_length(plugins); j++)
				found = is_nshash(json_object_array_get_idx(plugins, j));
			found = found || is_nshash(f.json);
			if (found)
				snprintf(name, len, "%s/%s", o->net_dir, v[i]);
		}
		file_free(&f);
	}
	names_free(v);
	return found;
}

/* The current content of a file nshash wrote but someone rewrote since:
 * nshash's entries taken out, the rest as json-c writes it back. */
static void strip_entry(const char *dir, const char *name)
{
	struct file f;
	struct nshash_error e;
	if (file_read(dir, name, &f, &e) < 0) {
		if (e.errnum != ENOENT)
			k8s_log("%s", e.msg);
		return;
	}
	json_object *plugins;
	if (f.json && json_object_object_get_ex(f.json, "plugins", &plugins) &&
	    json_object_is_type(plugins, json_type_array) && plugins_replace(f.json, NULL)) {
		char *text = serialized(f.json);
		if (text && k8s_write_atomic(f.path, text, strlen(text), f.st.st_mode & 07777, f.st.st_uid, f.st.st_gid,
					     &e) == 0)
			k8s_log("removed nshash's entry from %s (rewritten since nshash chained it: the rest of it "
				"kept, as json-c writes it)",
				f.path);
		else
			k8s_log("%s", text ? e.msg : "out of memory");
		free(text);
	} else {
		k8s_log("%s changed since nshash chained it and has no nshash entry: left as it is", f.path);
	}
	file_free(&f);
}

int k8s_unchain(const struct k8s_opts *o, struct nshash_error *err)
{
	json_object *rec = record_load(o->net_dir, err), *files;
	if (!rec)
		return -err->errnum;
	json_object_object_get_ex(rec, "files", &files);
	size_t n = json_object_array_length(files);
	if (!n)
		k8s_log("nothing to restore in %s (no record of nshash's: it chained nothing there)", o->net_dir);
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(files, i);
		if (!rec_valid(r))
			continue;
		const char *name = rec_str(r, "name"), *target = rec_str(r, "target");
		char np[4096], tp[4096], bp[4096];
		path_in(np, sizeof(np), o->net_dir, name);
		path_in(tp, sizeof(tp), o->net_dir, target);
		path_in(bp, sizeof(bp), o->net_dir, rec_str(r, "backup"));
		struct file t;
		struct nshash_error e;
		int tr = file_read(o->net_dir, target, &t, &e);
		bool ours = tr == 0 && rec_written_is(r, t.bytes, t.len);
		bool have_backup = access(bp, F_OK) == 0;
		file_free(&t);
		if (!strcmp(name, target)) {
			if (ours && have_backup) {
				if (rename(bp, tp) == 0) {
					k8s_log("restored %s (its bytes, mode and owner before nshash)", tp);
					continue;
				}
				k8s_log("restore %s from %s: %s", tp, bp, strerror(errno));
				failed = errno;
				continue;
			}
			if (tr == 0)
				strip_entry(o->net_dir, target);
			else
				k8s_log("%s is gone (the primary CNI removed it): nothing to restore", tp);
			if (have_backup && unlink(bp) < 0)
				failed = errno, k8s_log("remove %s: %s", bp, strerror(errno));
			continue;
		}
		/* a .conf nshash turned into a .conflist: the .conf back first,
		 * then the .conflist goes (never a moment without a config) */
		if (ours) {
			if (have_backup && access(np, F_OK) != 0) {
				if (rename(bp, np) < 0) {
					failed = errno, k8s_log("restore %s from %s: %s", np, bp, strerror(errno));
					continue; /* the .conflist kept: the node keeps a config */
				}
				k8s_log("restored %s (its bytes, mode and owner before nshash), removed the .conflist "
					"nshash made of it",
					np);
			} else if (have_backup) {
				k8s_log("%s was rewritten since nshash chained it: kept, its old copy %s removed", np,
					bp);
				if (unlink(bp) < 0)
					failed = errno, k8s_log("remove %s: %s", bp, strerror(errno));
			}
			if (unlink(tp) < 0)
				failed = errno, k8s_log("remove %s: %s", tp, strerror(errno));
			continue;
		}
		if (tr == 0) {
			/* not what nshash wrote: someone's own now (the primary
			 * moved to a .conflist): kept without nshash, and the old
			 * .conf not brought back beside it */
			strip_entry(o->net_dir, target);
			if (have_backup) {
				k8s_log("%s is not the one nshash made of %s: the .conf's old copy %s removed, not "
					"put back",
					tp, np, bp);
				if (unlink(bp) < 0)
					failed = errno, k8s_log("remove %s: %s", bp, strerror(errno));
			}
			continue;
		}
		if (have_backup && access(np, F_OK) != 0) {
			if (rename(bp, np) == 0)
				k8s_log("restored %s (its bytes, mode and owner before nshash)", np);
			else
				failed = errno, k8s_log("restore %s from %s: %s", np, bp, strerror(errno));
		} else if (have_backup) {
			k8s_log("%s was rewritten since nshash chained it: kept, its old copy %s removed", np, bp);
			if (unlink(bp) < 0)
				failed = errno, k8s_log("remove %s: %s", bp, strerror(errno));
		}
	}
	json_object_put(rec);
	if (failed)
		return nshash_error_set(err, failed,
					"uninstall in %s: not everything was restored (see above); the "
					"record %s/%s is kept: fix the cause and run uninstall again",
					o->net_dir, o->net_dir, K8S_RECORD);
	char p[4096];
	path_in(p, sizeof(p), o->net_dir, K8S_RECORD);
	if (unlink(p) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove %s", p);
	return 0;
}
