/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What is in the state dir and /run/netns: listing (nshash_list) and
 * garbage collection (nshash_gc: stale files, damaged and idle templates,
 * idle spares, then orphan container pins through reclaim.c).  The
 * directory itself (default, checks, lock) is statedir.c's. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "internal.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

struct entry_list {
	struct nshash_entry *v;
	size_t n, cap;
};

/* Pinned or not, and what it has.  What cannot be looked at (a non-root
 * caller, a netns of an outer user namespace) is `unknown`, never taken
 * for a stale file or a damaged template. */
static void look_at(struct nshash_entry *e, struct nsh_proc_round *proc)
{
	struct nshash_error ierr = {0};
	cleanup_close int fd = -1;
	const char *not_netns;
	/* one path walk per pin, inspected through that fd: with thousands of
	 * pins in one directory each walk costs more (the mount hash) */
	int r = nsh_path_open_netns(e->path, false, &fd, &not_netns);
	if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
		/* cannot open it: statfs still tells a mount from a file */
		struct statfs sfs;
		e->unknown = -r;
		e->pinned = statfs(e->path, &sfs) == 0 && sfs.f_type == NSFS_MAGIC;
		return;
	}
	e->pinned = fd >= 0;
	if (e->pinned && nsh_inspect_fd_in(fd, nsh_proc_round_next(proc), &e->info, &ierr) < 0)
		e->unknown = ierr.errnum ? ierr.errnum : EIO;
}

static int scan_dir(const char *dir, enum nshash_entry_kind kind, struct entry_list *l, struct nsh_proc_round *proc,
		    struct nshash_error *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		/* a directory the caller may not read (non-root): nothing of it
		 * is listed, which is not an error; the CLI says so */
		if (errno == ENOENT || errno == EACCES || errno == EPERM)
			return 0;
		return nsh_error_sys(err, errno, "list %s", dir);
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "lock") == 0 ||
		    ends_with(de->d_name, NSH_TEMPLATE_STAMP))
			continue;
		if (de->d_type == DT_DIR)
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct nshash_entry *v = realloc(l->v, cap * sizeof(*v));
			if (!v) {
				r = nshash_error_set(err, ENOMEM, "list %s: out of memory", dir);
				break;
			}
			l->v = v;
			l->cap = cap;
		}
		struct nshash_entry *e = &l->v[l->n];
		memset(e, 0, sizeof(*e));
		if (strlen(dir) + 1 + strlen(de->d_name) >= PATH_MAX)
			continue;
		if (asprintf(&e->path, "%s/%s", dir, de->d_name) < 0) {
			e->path = NULL;
			r = nshash_error_set(err, ENOMEM, "list %s: out of memory", dir);
			break;
		}
		e->name = e->path + strlen(dir) + 1;
		e->kind = kind;
		look_at(e, proc);
		if (kind == NSHASH_ENTRY_SPARE && !e->unknown) {
			struct stat st;
			/* the mounted netns's nsfs inode: its times are those of
			 * its first open, when the spare was made */
			if (stat(e->path, &st) == 0)
				e->last_used = st.st_mtime;
		}
		if (kind == NSHASH_ENTRY_TEMPLATE && !e->unknown) {
			struct nshash_sizes eff;
			e->damaged = !e->pinned || !nsh_template_name_parse(e->name, &eff) ||
				     e->info.tcp_child != (long)eff.tcp ||
				     (e->info.udp_child >= 0 && e->info.udp_child != (long)eff.udp);
			e->last_used = nsh_template_last_used(e->path);
		}
		l->n++;
	}
	closedir(d);
	return r;
}

void nshash_list_free(struct nshash_entry *entries, size_t count)
{
	for (size_t i = 0; entries && i < count; i++)
		free(entries[i].path);
	free(entries);
}

int nshash_list(const char *state_dir, struct nshash_entry **out, size_t *count, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	state_dir = nsh_state_dir(state_dir, sdbuf, sizeof(sdbuf));
	struct entry_list l = {0};
	char dir[PATH_MAX];
	/* each pin's sysctls through private proc instances: through the
	 * host's /proc, every lookup would compare against every live netns
	 * (nsh_proc_round_next) */
	struct nsh_proc_round proc = NSH_PROC_ROUND_INIT;
	int r = scan_dir(NSHASH_NETNS_RUN_DIR, NSHASH_ENTRY_NETNS, &l, &proc, err);
	snprintf(dir, sizeof(dir), "%s/templates", state_dir);
	if (r == 0)
		r = scan_dir(dir, NSHASH_ENTRY_TEMPLATE, &l, &proc, err);
	snprintf(dir, sizeof(dir), "%s/pins", state_dir);
	if (r == 0)
		r = scan_dir(dir, NSHASH_ENTRY_CONTAINER, &l, &proc, err);
	snprintf(dir, sizeof(dir), "%s/spares", state_dir);
	if (r == 0)
		r = scan_dir(dir, NSHASH_ENTRY_SPARE, &l, &proc, err);
	nsh_proc_round_end(&proc);
	if (r < 0) {
		nshash_list_free(l.v, l.n);
		return r;
	}
	*out = l.v;
	*count = l.n;
	return 0;
}

/* Age of an unmounted pin file, or -1 if `path` is not one: only an empty
 * regular file is what a creator claims before binding.  /run/netns also
 * holds what others put there — symlinks to /proc/PID/ns/net are a common
 * way to show a container's netns to `ip netns` — and gc must leave those
 * alone rather than fail on them. */
static int64_t stale_pin_age(const char *path, time_t now)
{
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
		return -1;
	return (int64_t)(now - st.st_mtime);
}

/* What gc removes among the listed entries, and why (NULL: kept). */
static const char *gc_verdict(const struct nshash_gc_opts *opts, const struct nshash_entry *e, time_t now)
{
	if (e->unknown)
		return NULL; /* what cannot be inspected is not ours to remove */
	if (!e->pinned) {
		/* An unmounted pin file: a creator died between claiming the
		 * name and binding, or an old mount vanished.  Leave young
		 * ones alone: a creator may be working on them right now. */
		int64_t min_age =
		    opts->stale_min_age < NSHASH_STALE_AGE_MIN ? NSHASH_STALE_AGE_MIN : opts->stale_min_age;
		int64_t age = stale_pin_age(e->path, now);
		return age >= 0 && age >= min_age ? "stale pin file" : NULL;
	}
	if (e->kind == NSHASH_ENTRY_TEMPLATE) {
		if (e->damaged)
			return "damaged template";
		return opts->template_max_idle >= 0 && now - e->last_used >= opts->template_max_idle ? "idle template"
												     : NULL;
	}
	if (e->kind == NSHASH_ENTRY_SPARE)
		return opts->template_max_idle >= 0 && now - e->last_used >= opts->template_max_idle ? "idle spare"
												     : NULL;
	return NULL;
}

/* Stale pin files that are mount points in another mount namespace (an
 * engine's slave copy of /run, where it pinned a netns only there) are
 * live: unlinking one would detach that mount everywhere.  Keep them, and
 * keep all when some mount namespace's table cannot be read, or when this
 * PID namespace's /proc may not show them all (statedir.c). */
static int gc_keep_foreign(const char *state_dir, struct nshash_entry *v, size_t n, const char **why,
			   struct nshash_error *err)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += why[i] && !v[i].pinned;
	if (!k)
		return 0;
	cleanup_free const char **paths = calloc(k, sizeof(*paths));
	cleanup_free size_t *idx = calloc(k, sizeof(*idx));
	cleanup_free bool *mounted = calloc(k, sizeof(*mounted));
	if (!paths || !idx || !mounted)
		return nshash_error_set(err, ENOMEM, "gc: out of memory");
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (why[i] && !v[i].pinned) {
			idx[k] = i;
			paths[k++] = v[i].path;
		}
	/* from a PID namespace whose /proc does not show every process
	 * (statedir.c), a mount namespace out of sight may hold any of them */
	int r = nsh_state_sees_holders(state_dir) ? nsh_mounted_elsewhere(paths, k, mounted) : -EACCES;
	if (r < 0 && r != -EACCES)
		return nsh_error_sys(err, -r, "gc: read the mount tables under /proc");
	for (size_t j = 0; j < k; j++)
		if (r < 0 || mounted[j])
			why[idx[j]] = NULL;
	return 0;
}

/* Remove what gc removes among the listed entries, counting it. */
static int gc_entries(const struct nshash_gc_opts *opts, const char *state_dir, struct nshash_entry *v, size_t n,
		      struct nshash_gc_report *rep, struct nshash_error *err)
{
	time_t now = time(NULL);
	cleanup_free const char **why = calloc(n ? n : 1, sizeof(*why));
	if (!why)
		return nshash_error_set(err, ENOMEM, "gc: out of memory");
	for (size_t i = 0; i < n; i++)
		why[i] = gc_verdict(opts, &v[i], now);
	int r = gc_keep_foreign(state_dir, v, n, why, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct nshash_entry *e = &v[i];
		bool stale = !e->pinned;
		if (!why[i]) {
			/* Only what nshash owns counts as kept: /run/netns holds anyone's. */
			if (e->kind != NSHASH_ENTRY_NETNS)
				rep->kept++;
			continue;
		}
		if (!opts->dry_run) {
			r = nshash_pin_remove(e->path, err);
			/* not ours after all (something else is mounted there), or a
			 * live mount this view does not show (EBUSY: a mount point
			 * here, under a mount of its directory over itself, as
			 * podman binds /run/netns), or, in the shared /run/netns,
			 * another user's file (EACCES, EPERM: a user's gc meets
			 * root's): kept, and gc goes on */
			if (stale && (r == -EINVAL || r == -EBUSY ||
				      ((r == -EACCES || r == -EPERM) && e->kind == NSHASH_ENTRY_NETNS)))
				continue;
			if (r < 0)
				return nshash_error_prefix(err, "gc");
			if (e->kind == NSHASH_ENTRY_TEMPLATE)
				nsh_template_forget(e->path);
		}
		if (opts->removed)
			opts->removed(e->path, why[i], opts->ctx);
		if (stale)
			rep->stale_removed++;
		else if (e->kind == NSHASH_ENTRY_SPARE)
			rep->spares_removed++;
		else
			rep->templates_removed++;
	}
	return 0;
}

int nshash_gc(const struct nshash_gc_opts *opts, struct nshash_gc_report *rep, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	memset(rep, 0, sizeof(*rep));
	struct stat st;
	cleanup_close int lockfd = -1;
	int r = 0;
	/* Without a state dir there is nothing of ours to lock; /run/netns is
	 * still looked at. */
	if (stat(state_dir, &st) == 0) {
		r = nsh_lock_state(state_dir, &lockfd, err);
		if (r < 0)
			return r;
	}
	struct nshash_entry *v = NULL;
	size_t n = 0;
	r = nshash_list(state_dir, &v, &n, err);
	if (r < 0)
		return r;
	r = gc_entries(opts, state_dir, v, n, rep, err);
	nshash_list_free(v, n);
	if (r < 0)
		return r;
	/* the last spare gone: spares/'s bind onto itself goes too */
	if (!opts->dry_run && lockfd >= 0)
		nsh_spares_dir_release(state_dir);
	/* Container pins whose container never ran or whose hook or wrapper
	 * died before handing them on (nshash_reclaim, now, one /proc pass for
	 * all), and the table ledger.  It takes the state lock itself. */
	if (lockfd >= 0) {
		close(lockfd);
		lockfd = -1;
	}
	struct nshash_reclaim_opts ro = {.state_dir = state_dir,
					 .min_age = opts->stale_min_age,
					 .dry_run = opts->dry_run,
					 .removed = opts->removed,
					 .ctx = opts->ctx};
	struct nshash_reclaim_report rr;
	r = nshash_reclaim(&ro, &rr, err);
	if (r < 0)
		return nshash_error_prefix(err, "gc");
	rep->orphans_removed = rr.orphans_removed;
	rep->ledger_dropped = rr.ledger_dropped;
	rep->usage = rr.usage;
	/* gc_entries counted every container pin as kept: not the orphans. */
	rep->kept -= rep->orphans_removed < rep->kept ? rep->orphans_removed : rep->kept;
	return 0;
}
