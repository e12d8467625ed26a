/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One chaining pass: nshash's entry made plugins[0] of the config libcni
 * loads (a single-plugin .conf turned into a .conflist), validated by the
 * plugin, written, what it replaced kept (changes.c).  A pass that fails
 * puts the list of changes back as it was loaded.  A file an earlier
 * installer (the old install-cni.sh) chained, with no list, is adopted:
 * listed with the copy of the original it left when that names no nshash,
 * else with its content stripped of nshash. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s.h"

/* What a pass read, what it writes, what it must undo. */
struct pass {
	struct k8s_ctx *c;
	const struct k8s_opts *o;
	char name[1024];	 /* the active config */
	char target[1100];	 /* the file written: name, or NAME.conflist for a .conf */
	bool is_list;		 /* name is a .conflist */
	bool unchanged;		 /* name holds nshash's entry first already */
	struct k8s_file f;	 /* name as read */
	json_object *list;	 /* what is written: nshash's entry first */
	char *text;		 /* list serialized (NULL: unchanged) */
	char **order;		 /* the dir's configs in libcni's order, the .conf made a .conflist */
	json_object *changes;	 /* the list of changes (changes.c) */
	char *changes_was;	 /* its text as loaded (NULL: there was none) */
	bool had_changes;	 /* the file was there */
	char changes_path[4096]; /* NET_DIR/K8S_CHANGES */
	char made[4096];	 /* a backup this pass made: removed on failure */
	char stale[4096];	 /* a .conf's old copy, removed once the list is written */
};

/* A step's "go on"; otherwise a step returns the pass's result. */
#define NEXT (-1)

/* The active config read and checked, the list to merge into. */
static int pass_read(struct pass *p, struct nshash_error *err)
{
	if (!p->c->entry)
		return nshash_error_set(err, EINVAL, "%s", p->c->entry_error), K8S_REFUSED;
	if (k8s_active_conf(p->o, p->name, sizeof(p->name), err) < 0 ||
	    k8s_file_read(p->o->net_dir, p->name, &p->f, err) < 0)
		return K8S_REFUSED;
	if (!p->f.json) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		nshash_error_set(
		    err, EINVAL,
		    "%.900s; not touching it (retried at its next change: a primary CNI may be writing it)", why);
		return K8S_REFUSED;
	}
	const char *dot = strrchr(p->name, '.');
	p->is_list = dot && !strcmp(dot, ".conflist");
	const char *bad = k8s_primary_list(&p->f, p->is_list, &p->list);
	if (bad) {
		nshash_error_set(err, EINVAL, "%s: %s; not chaining into it (fix the primary CNI's config)", p->f.path,
				 bad);
		return K8S_REFUSED;
	}
	return NEXT;
}

/* The file written: the list itself, or for a .conf NAME.conflist, which
 * must be what libcni picks once the .conf is gone. */
static int pass_target(struct pass *p, struct nshash_error *err)
{
	snprintf(p->target, sizeof(p->target), "%s", p->name);
	if (p->is_list)
		return NEXT;
	if (p->o->conf_name && *p->o->conf_name)
		return nshash_error_set(err, EINVAL,
					"%s is a single-plugin config and CNI_CONF_NAME names it: nshash would have "
					"to turn it into a .conflist of another name; name a .conflist instead",
					p->f.path),
		       K8S_REFUSED;
	const char *dot = strrchr(p->name, '.');
	snprintf(p->target, sizeof(p->target), "%.*s.conflist", (int)(dot ? dot - p->name : (long)strlen(p->name)),
		 p->name);
	p->order = k8s_conf_files(p->o->net_dir, p->name, p->target, err);
	if (!p->order)
		return K8S_REFUSED;
	if (strcmp(p->order[0], p->target))
		return nshash_error_set(err, EINVAL,
					"%s: turned into %s, libcni would load %s first instead; not chaining (rename "
					"one of them)",
					p->f.path, p->target, p->order[0]),
		       K8S_REFUSED;
	return NEXT;
}

/* nshash's entry first in the list, accepted by the plugin (STATUS). */
static int pass_merge(struct pass *p, struct nshash_error *err)
{
	char note[1200];
	k8s_plugins_replace(p->list, p->c->entry);
	if (k8s_validate(p->c, p->list, note, sizeof(note), err) < 0) {
		nshash_error_prefix(err, "%s with nshash's entry of %s", p->f.path, p->o->entry_path);
		return K8S_REFUSED;
	}
	snprintf(p->c->warning, sizeof(p->c->warning), "%s", note);
	snprintf(p->c->chained, sizeof(p->c->chained), "%s/%s", p->o->net_dir, p->target);
	return NEXT;
}

/* The list of changes loaded (and its text kept, for an undo); a file
 * that is chained already and listed needs nothing: K8S_UNCHANGED.
 * Without a list only a file an earlier installer chained is unchanged:
 * adopted. */
static int pass_changes(struct pass *p, struct nshash_error *err)
{
	k8s_path_in(p->changes_path, sizeof(p->changes_path), p->o->net_dir, K8S_CHANGES);
	p->unchanged = p->is_list && json_object_equal(p->list, p->f.json);
	p->had_changes = access(p->changes_path, F_OK) == 0;
	if (p->unchanged && p->had_changes) {
		json_object *l = k8s_changes_load(p->o->net_dir, err);
		bool listed = l && k8s_change_find(l, "target", p->name);
		json_object_put(l);
		if (!l || listed)
			return l ? K8S_UNCHANGED : K8S_REFUSED;
	}
	p->text = p->unchanged ? NULL : k8s_serialized(p->list);
	if (!p->unchanged && !p->text)
		return nshash_error_set(err, ENOMEM, "out of memory"), K8S_REFUSED;
	p->changes = k8s_changes_load(p->o->net_dir, err);
	if (!p->changes)
		return K8S_REFUSED;
	/* as loaded: put back when this pass fails, so that "written" is
	 * never what was not written */
	p->changes_was = p->had_changes ? strdup(json_object_to_json_string_ext(p->changes, K8S_JSON_OUT)) : NULL;
	if (p->had_changes && !p->changes_was)
		return nshash_error_set(err, ENOMEM, "out of memory"), K8S_REFUSED;
	return NEXT;
}

/* A NAME.conflist nshash did not write where it had turned NAME.conf into
 * one (the primary moved to a .conflist of its own): from now on a list of
 * its own with its own copy; the .conf's old copy goes once this is
 * written. */
static void list_owned_by_primary(struct pass *p, json_object *r)
{
	char b[1100];
	k8s_path_in(p->stale, sizeof(p->stale), p->o->net_dir, k8s_change_str(r, "backup"));
	snprintf(b, sizeof(b), "%s%s", p->name, K8S_ORIG_EXT);
	json_object_object_add(r, "name", json_object_new_string(p->name));
	json_object_object_add(r, "backup", json_object_new_string(b));
}

/* Chained by the old install-cni.sh, which turned NAME.conf into this
 * list keeping NAME.conf.nshash-orig: adopted as nshash's conversion when
 * that copy names no nshash.  The change made, or NULL. */
static json_object *list_old_conversion(struct pass *p)
{
	char cname[1100], cb[1200], cpath[4096];
	struct k8s_file cf;
	struct nshash_error ce;
	json_object *r = NULL, *pl;
	snprintf(cname, sizeof(cname), "%.*s.conf", (int)(strlen(p->name) - strlen(".conflist")), p->name);
	snprintf(cb, sizeof(cb), "%s%s", cname, K8S_ORIG_EXT);
	k8s_path_in(cpath, sizeof(cpath), p->o->net_dir, cname);
	if (access(cpath, F_OK) == 0 || k8s_file_read(p->o->net_dir, cb, &cf, &ce) != 0)
		return NULL;
	if (cf.json && json_object_is_type(cf.json, json_type_object) && !k8s_names_nshash(cf.json) &&
	    !json_object_object_get_ex(cf.json, "plugins", &pl)) {
		r = k8s_change_new(p->changes, cname, p->name);
		json_object_object_add(r, "backup", json_object_new_string(cb));
	}
	k8s_file_free(&cf);
	return r;
}

/* A .conflist: its original kept (unless nshash wrote it, or it is a
 * conversion nshash made), then the merged list written over it. */
static int chain_list(struct pass *p, char *done, size_t dlen, struct nshash_error *err)
{
	const struct k8s_opts *o = p->o;
	json_object *r = k8s_change_find(p->changes, "target", p->name);
	bool ours = r && k8s_change_written_is(r, p->f.bytes, p->f.len);
	bool converted = r && strcmp(k8s_change_str(r, "name"), k8s_change_str(r, "target"));
	bool fresh = !r;
	if (converted && !ours) {
		list_owned_by_primary(p, r);
		converted = false;
		fresh = true;
	}
	if (!r && k8s_names_nshash(p->f.json) && (r = list_old_conversion(p))) {
		converted = true;
		fresh = false;
	}
	if (!r)
		r = k8s_change_new(p->changes, p->name, p->name);
	if (!ours && !converted) {
		int b = k8s_backup_make(o->net_dir, &p->f, k8s_change_str(r, "backup"), fresh, err);
		if (b < 0)
			return K8S_FAILED;
		if (b > 0 && fresh)
			k8s_path_in(p->made, sizeof(p->made), o->net_dir, k8s_change_str(r, "backup"));
	}
	if (p->unchanged) {
		/* nothing to write: listed, for uninstall */
		json_object_object_add(r, "written", json_object_new_string_len(p->f.bytes, (int)p->f.len));
		if (k8s_changes_save(o->net_dir, p->changes, err) < 0)
			return K8S_FAILED;
		snprintf(done, dlen,
			 "nshash was first in %s already (an earlier installer's): recorded, its original "
			 "without nshash kept as %s/%s for uninstall",
			 p->f.path, o->net_dir, k8s_change_str(r, "backup"));
		return K8S_WROTE;
	}
	json_object_object_add(r, "written", json_object_new_string(p->text));
	if (k8s_changes_save(o->net_dir, p->changes, err) < 0 || k8s_still_same(&p->f, err) < 0 ||
	    k8s_write_atomic(p->f.path, p->text, strlen(p->text), p->f.st.st_mode & 07777, p->f.st.st_uid,
			     p->f.st.st_gid, err) < 0)
		return K8S_FAILED;
	if (p->stale[0] && unlink(p->stale) == 0)
		k8s_log("%s is the primary's own now (not the one nshash made of its .conf): the .conf's "
			"old copy %s removed",
			p->f.path, p->stale);
	snprintf(done, dlen, "chained nshash first into %s%s", p->f.path,
		 ours || converted ? "" : " (its original kept for uninstall)");
	return K8S_WROTE;
}

/* A .conf: NAME.conflist written beside it, then the .conf renamed to its
 * backup name (libcni ignores it). */
static int chain_conf(struct pass *p, char *done, size_t dlen, struct nshash_error *err)
{
	const struct k8s_opts *o = p->o;
	struct k8s_file t = {0};
	json_object *r = k8s_change_find(p->changes, "name", p->name);
	int tr = k8s_file_read(o->net_dir, p->target, &t, err);
	bool foreign = tr == 0 && !k8s_change_written_is(r, t.bytes, t.len);
	k8s_file_free(&t);
	if (foreign)
		return nshash_error_set(err, EEXIST,
					"%s: turning it into %s/%s would replace a file nshash did not write; not "
					"chaining (move one of them)",
					p->f.path, o->net_dir, p->target),
		       K8S_REFUSED;
	if (tr < 0 && tr != -ENOENT)
		return K8S_FAILED;
	bool fresh = !r;
	if (!r)
		r = k8s_change_new(p->changes, p->name, p->target);
	json_object_object_add(r, "written", json_object_new_string(p->text));
	char tpath[4096], bpath[4096];
	k8s_path_in(tpath, sizeof(tpath), o->net_dir, p->target);
	k8s_path_in(bpath, sizeof(bpath), o->net_dir, k8s_change_str(r, "backup"));
	if (fresh && access(bpath, F_OK) == 0)
		return nshash_error_set(err, EEXIST,
					"%s is there and nshash's record %s does not name it: not replacing it (move "
					"it away if it is stale)",
					bpath, p->changes_path),
		       K8S_FAILED;
	if (k8s_changes_save(o->net_dir, p->changes, err) < 0 || k8s_still_same(&p->f, err) < 0 ||
	    k8s_write_atomic(tpath, p->text, strlen(p->text), p->f.st.st_mode & 07777, p->f.st.st_uid, p->f.st.st_gid,
			     err) < 0)
		return K8S_FAILED;
	if (rename(p->f.path, bpath) < 0) {
		nsh_error_sys(err, errno, "rename %s to %s", p->f.path, bpath);
		unlink(tpath);
		return K8S_FAILED;
	}
	snprintf(done, dlen, "chained nshash first into %s, made of %s (kept as %s for uninstall)", tpath, p->f.path,
		 bpath);
	return K8S_WROTE;
}

/* A write failed: the node's files as they were (what this pass made goes
 * again, the list of changes as it was loaded).  A primary writing its
 * file meanwhile (EAGAIN) is no failure: its next change retries. */
static int pass_undo(struct pass *p, struct nshash_error *err)
{
	if (p->made[0])
		unlink(p->made);
	if (!p->had_changes) {
		unlink(p->changes_path);
	} else if (p->changes_was) {
		struct nshash_error re;
		if (k8s_write_atomic(p->changes_path, p->changes_was, strlen(p->changes_was), 0600, (uid_t)-1,
				     (gid_t)-1, &re) < 0)
			k8s_log("%s (putting the record back after: %s)", re.msg, err->msg);
	}
	return err->errnum == EAGAIN ? K8S_REFUSED : K8S_FAILED;
}

static void pass_free(struct pass *p)
{
	free(p->changes_was);
	k8s_names_free(p->order);
	json_object_put(p->changes);
	json_object_put(p->list);
	free(p->text);
	k8s_file_free(&p->f);
}

enum k8s_pass k8s_chain(struct k8s_ctx *c, char *done, size_t dlen, struct nshash_error *err)
{
	struct pass p = {.c = c, .o = c->o};
	done[0] = '\0';
	c->warning[0] = '\0';
	c->chained[0] = '\0';
	int r = pass_read(&p, err);
	if (r == NEXT)
		r = pass_target(&p, err);
	if (r == NEXT)
		r = pass_merge(&p, err);
	if (r == NEXT)
		r = pass_changes(&p, err);
	if (r == NEXT)
		r = p.is_list ? chain_list(&p, done, dlen, err) : chain_conf(&p, done, dlen, err);
	if (r == K8S_FAILED)
		r = pass_undo(&p, err);
	pass_free(&p);
	return (enum k8s_pass)r;
}

int k8s_chained(const struct k8s_ctx *c, struct nshash_error *err)
{
	char name[1024], note[1200];
	struct k8s_file f;
	if (!c->entry)
		return nshash_error_set(err, EINVAL, "%s", c->entry_error);
	if (k8s_active_conf(c->o, name, sizeof(name), err) < 0)
		return -err->errnum;
	int r = k8s_file_read(c->o->net_dir, name, &f, err);
	if (r < 0)
		return r;
	json_object *plugins, *list = NULL;
	const char *dot = strrchr(name, '.'), *bad;
	if (!f.json) {
		r = -err->errnum;
	} else if ((bad = k8s_primary_list(&f, dot && !strcmp(dot, ".conflist"), &list))) {
		r = nshash_error_set(err, EINVAL, "%s: %s (fix the primary CNI's config)", f.path, bad);
	} else {
		/* why it is not chained: first whether it would be refused */
		k8s_plugins_replace(list, c->entry);
		if (k8s_validate(c, list, note, sizeof(note), err) < 0)
			r = nshash_error_prefix(err, "%s with nshash's entry of %s is refused", f.path,
						c->o->entry_path);
		else if (!json_object_object_get_ex(f.json, "plugins", &plugins) ||
			 !json_object_is_type(plugins, json_type_array) ||
			 !k8s_is_nshash(json_object_array_get_idx(plugins, 0)))
			r = nshash_error_set(err, ENOENT, "nshash is not plugins[0] of %s (the active CNI config)",
					     f.path);
		else if (!json_object_equal(json_object_array_get_idx(plugins, 0), c->entry))
			r = nshash_error_set(err, EINVAL,
					     "plugins[0] of %s is not nshash's entry of %s (an earlier one)", f.path,
					     c->o->entry_path);
	}
	json_object_put(list);
	k8s_file_free(&f);
	return r;
}
