/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Uninstall: every file the list of changes names restored.  A backup is
 * put back by renaming it over the file when the file still holds what
 * nshash wrote; otherwise (the primary rewrote it since) only nshash's
 * entry is taken out of the current content, and nothing is deleted. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "k8s.h"

/* The current content of a file nshash wrote but someone rewrote since:
 * nshash's entries taken out, the rest as json-c writes it back. */
static void strip_entry(const char *dir, const char *name)
{
	struct k8s_file f;
	struct nshash_error e;
	if (k8s_file_read(dir, name, &f, &e) < 0) {
		if (e.errnum != ENOENT)
			k8s_log("%s", e.msg);
		return;
	}
	json_object *plugins;
	if (f.json && json_object_object_get_ex(f.json, "plugins", &plugins) &&
	    json_object_is_type(plugins, json_type_array) && k8s_plugins_replace(f.json, NULL)) {
		char *text = k8s_serialized(f.json);
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
	k8s_file_free(&f);
}

/* One change being undone: its paths, whether the target still holds what
 * nshash wrote, whether the original's copy is there. */
struct undo {
	const char *dir;
	const char *target;
	char np[4096], tp[4096], bp[4096]; /* name, target, backup */
	bool there;			   /* the target can be read */
	bool ours;			   /* ... and holds what nshash wrote */
	bool have_backup;
};

/* Remove path, logged; 0 or errno. */
static int remove_logged(const char *path)
{
	if (unlink(path) == 0)
		return 0;
	int e = errno;
	k8s_log("remove %s: %s", path, strerror(e));
	return e;
}

/* The original's copy back at `to`, when nothing is there now; else the
 * copy goes (`to` was rewritten since).  0 or errno. */
static int backup_back(const struct undo *u, const char *to, const char *restored)
{
	if (access(to, F_OK) != 0) {
		if (rename(u->bp, to) == 0) {
			k8s_log("restored %s (its bytes, mode and owner before nshash)%s", to, restored);
			return 0;
		}
		int e = errno;
		k8s_log("restore %s from %s: %s", to, u->bp, strerror(e));
		return e;
	}
	k8s_log("%s was rewritten since nshash chained it: kept, its old copy %s removed", to, u->bp);
	return remove_logged(u->bp);
}

/* A file nshash chained in place (name = target). */
static int undo_in_place(const struct undo *u)
{
	if (u->ours && u->have_backup) {
		if (rename(u->bp, u->tp) == 0) {
			k8s_log("restored %s (its bytes, mode and owner before nshash)", u->tp);
			return 0;
		}
		int e = errno;
		k8s_log("restore %s from %s: %s", u->tp, u->bp, strerror(e));
		return e;
	}
	if (u->there)
		strip_entry(u->dir, u->target);
	else
		k8s_log("%s is gone (the primary CNI removed it): nothing to restore", u->tp);
	return u->have_backup ? remove_logged(u->bp) : 0;
}

/* A .conf nshash turned into a .conflist: the .conf back first, then the
 * .conflist goes (never a moment without a config). */
static int undo_conversion(const struct undo *u)
{
	if (u->ours) {
		int e = u->have_backup ? backup_back(u, u->np, ", removed the .conflist nshash made of it") : 0;
		if (e && access(u->np, F_OK) != 0)
			return e; /* the .conflist kept: the node keeps a config */
		int r = remove_logged(u->tp);
		return r ? r : e;
	}
	if (u->there) {
		/* not what nshash wrote: someone's own now (the primary moved to
		 * a .conflist): kept without nshash, and the old .conf not
		 * brought back beside it */
		strip_entry(u->dir, u->target);
		if (!u->have_backup)
			return 0;
		k8s_log("%s is not the one nshash made of %s: the .conf's old copy %s removed, not put back", u->tp,
			u->np, u->bp);
		return remove_logged(u->bp);
	}
	return u->have_backup ? backup_back(u, u->np, "") : 0;
}

/* One change undone: 0, or the errno of what failed (logged). */
static int undo_change(const struct k8s_opts *o, json_object *r)
{
	struct undo u = {.dir = o->net_dir, .target = k8s_change_str(r, "target")};
	const char *name = k8s_change_str(r, "name");
	k8s_path_in(u.np, sizeof(u.np), o->net_dir, name);
	k8s_path_in(u.tp, sizeof(u.tp), o->net_dir, u.target);
	k8s_path_in(u.bp, sizeof(u.bp), o->net_dir, k8s_change_str(r, "backup"));
	struct k8s_file t;
	struct nshash_error e;
	u.there = k8s_file_read(o->net_dir, u.target, &t, &e) == 0;
	u.ours = u.there && k8s_change_written_is(r, t.bytes, t.len);
	u.have_backup = access(u.bp, F_OK) == 0;
	k8s_file_free(&t);
	return strcmp(name, u.target) ? undo_conversion(&u) : undo_in_place(&u);
}

int k8s_unchain(const struct k8s_opts *o, struct nshash_error *err)
{
	json_object *changes = k8s_changes_load(o->net_dir, err), *files;
	if (!changes)
		return -err->errnum;
	json_object_object_get_ex(changes, "files", &files);
	size_t n = json_object_array_length(files);
	if (!n)
		k8s_log("nothing to restore in %s (no record of nshash's: it chained nothing there)", o->net_dir);
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(files, i);
		int e = k8s_change_valid(r) ? undo_change(o, r) : 0;
		failed = e ? e : failed;
	}
	json_object_put(changes);
	if (failed)
		return nshash_error_set(err, failed,
					"uninstall in %s: not everything was restored (see above); the "
					"record %s/%s is kept: fix the cause and run uninstall again",
					o->net_dir, o->net_dir, K8S_CHANGES);
	char p[4096];
	k8s_path_in(p, sizeof(p), o->net_dir, K8S_CHANGES);
	if (unlink(p) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove %s", p);
	return 0;
}
