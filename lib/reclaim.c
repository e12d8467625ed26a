/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reclaiming orphan container pins without an operator.
 *
 * A container pin (STATE_DIR/pins/NAME) is handed to a runtime by the hook
 * or the wrapper, and removed by poststop or the wrapper's delete.  When the
 * container's create fails after the pin was made (podman runs no poststop
 * then), or the hook is killed mid-way, the pin and its tables stay for
 * good.  Every hook, wrapper and plugin run calls nshash_reclaim() with an
 * interval: at most one run per interval scans, everyone else pays a
 * stat(2).  A pin is an orphan when it is older than the stale age and no
 * thread and no open fd of any process holds its netns; one /proc pass
 * decides for all pins at once.
 *
 * A pin's age is its own: the time its file was claimed (O_EXCL, just
 * before the bind), never its netns's.  A spare taken for a container is a
 * netns made minutes earlier, and the nsfs inode the pin shows carries
 * that netns's times.  The claimed file lies under the mount; a clone of
 * the pins directory's mount alone (open_tree without AT_RECURSIVE, or of
 * the mount above when that one is unbindable) shows it, with the mtime it
 * got when it was created.  Nothing is written on a
 * container's start for it, and a crash cannot leave it wrong.  Below
 * NSHASH_STALE_AGE_MIN no age is taken: that is how long a runtime may
 * legitimately take to open a pin handed to it. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"

struct pin_candidate {
	char name[NAME_MAX + 1];
	uint64_t ino;
};

/* Container pins or a ledger to look at. */
static bool has_work(const char *state_dir)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/pins", state_dir);
	if (stat(path, &st) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/ledger", state_dir);
	return stat(path, &st) == 0;
}

/* Claim this run: false when a run started within `interval` seconds or
 * one is under way.  *stampfd keeps the claim (flock) until closed.  The
 * stamp's size tells a stamp that never ran (0) from one that did (1). */
static int claim_run(const char *state_dir, int64_t interval, int *stampfd, bool *run, struct nshash_error *err)
{
	char path[PATH_MAX];
	struct stat before, st;
	*run = false;
	if ((size_t)snprintf(path, sizeof(path), "%s/reclaim.stamp", state_dir) >= sizeof(path))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	/* The cheap refusal first: one stat. */
	bool existed = stat(path, &before) == 0;
	/* The stamp's mtime is the kernel's fine-grained clock when a stat asked
	 * for it since the last tick (multigrain timestamps, Linux 6.13+): up to
	 * a tick ahead of time(), which is the tick's.  Compared with time(), a
	 * stamp touched in the last tick of a second looked like one from the
	 * future: refused neither here nor under the lock below (nobody touched
	 * it in between), and a second reclaim ran (seen: 6 of 8 at once).  The
	 * fine clock, read after the stat, is never behind the mtime it saw. */
	struct timespec ts;
	time_t now = clock_gettime(CLOCK_REALTIME, &ts) == 0 ? ts.tv_sec : time(NULL);
	if (interval > 0 && existed && before.st_size > 0 && now >= before.st_mtime && now - before.st_mtime < interval)
		return 0;
	if (!existed && !has_work(state_dir))
		return 0; /* leave no file where nothing of ours is */
	/* nor in a directory nshash does not accept as a state dir */
	int r = existed ? 0 : nsh_state_dir_check(state_dir, false, err);
	if (r < 0)
		return nshash_error_prefix(err, "reclaim");
	*stampfd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (*stampfd < 0) {
		if (errno == ENOENT)
			return 0; /* no state dir: nothing of ours to reclaim */
		return nsh_error_sys(err, errno, "reclaim: open %s", path);
	}
	if (flock(*stampfd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : nsh_error_sys(err, errno, "reclaim: lock %s", path);
	if (fstat(*stampfd, &st) < 0)
		return nsh_error_sys(err, errno, "reclaim: stat %s", path);
	/* Someone ran between our stat and our lock. */
	if (interval > 0 && st.st_size > 0 &&
	    (!existed || st.st_mtim.tv_sec != before.st_mtim.tv_sec || st.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
		return 0;
	if ((st.st_size != 1 && ftruncate(*stampfd, 1) < 0) || futimens(*stampfd, NULL) < 0)
		return nsh_error_sys(err, errno, "reclaim: touch %s", path);
	*run = true;
	return 0;
}

/* An fd on `dir` as it is without anything mounted below it: the dir in a
 * clone of its own mount alone (open_tree, not recursive), or, when that
 * mount may not be cloned (unbindable), of the nearest mount above that
 * may, provided the dir reached there is the very same (a self-bind, the
 * way nshash and ip-netns make pin dirs).  -errno when neither works. */
static int open_under(const char *dir, const struct stat *want)
{
	struct stat got;
	char real[PATH_MAX], top[PATH_MAX];
	/* walked up from the real path: a link on the way (/var/run) would
	 * lead out of the clone */
	if (!realpath(dir, real))
		return -errno;
	dir = real;
	snprintf(top, sizeof(top), "%s", dir);
	for (;;) {
		int tree = open_tree(AT_FDCWD, top, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		/* out of the source's peer group: no pin made meanwhile shows up
		 * in it (the names are checked to be on the dir's device anyway) */
		struct mount_attr priv = {.propagation = MS_PRIVATE};
		if (tree >= 0 && mount_setattr(tree, "", AT_EMPTY_PATH, &priv, sizeof(priv)) < 0) {
			int e = errno;
			close(tree);
			return -e;
		}
		if (tree >= 0) {
			const char *rel = dir + strlen(top);
			while (*rel == '/')
				rel++;
			int fd = *rel ? openat(tree, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : tree;
			int e = errno;
			if (fd != tree)
				close(tree);
			if (fd < 0)
				return -e;
			if (fstat(fd, &got) < 0 || got.st_dev != want->st_dev || got.st_ino != want->st_ino) {
				close(fd);
				return -EXDEV; /* another filesystem is mounted on it */
			}
			return fd;
		}
		char *slash = strrchr(top, '/');
		if (errno != EINVAL || !slash || top[1] == '\0')
			return -errno;
		slash[slash == top ? 1 : 0] = '\0';
	}
}

/* The container pins old enough to be orphans: mounted, nsfs netns,
 * claimed at least min_age seconds ago (the mtime of the file under the
 * mount, read through `under`, a clone of the directory's mount alone). */
static int list_candidates(const char *dir, int64_t min_age, struct pin_candidate **out, size_t *count, size_t *seen,
			   struct nshash_error *err)
{
	*out = NULL;
	*count = *seen = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : nsh_error_sys(err, errno, "reclaim: list %s", dir);
	int dfd = dirfd(d);
	struct stat dir_st;
	if (fstat(dfd, &dir_st) < 0) {
		int e = errno;
		closedir(d);
		return nsh_error_sys(err, e, "reclaim: stat %s", dir);
	}
	cleanup_close int under = open_under(dir, &dir_st);
	if (under < 0) {
		closedir(d);
		return nshash_error_set(err, -under, "reclaim: read the claim times under %s: %s (nothing removed)",
					dir, strerror(-under));
	}
	struct pin_candidate *v = NULL;
	size_t n = 0, cap = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		(*seen)++;
		struct stat st, claim;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		/* the claimed file itself, on the dir's filesystem (never a
		 * mount's nsfs inode): not a regular empty file is not ours */
		if (fstatat(under, de->d_name, &claim, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(claim.st_mode) ||
		    claim.st_size != 0 || claim.st_dev != dir_st.st_dev)
			continue;
		if (now < claim.st_mtime || now - claim.st_mtime < min_age)
			continue;
		cleanup_close int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || !nsh_fd_is_netns(fd) || fstat(fd, &st) < 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct pin_candidate *nv = realloc(v, ncap * sizeof(*nv));
			if (!nv) {
				r = nshash_error_set(err, ENOMEM, "reclaim: out of memory");
				break;
			}
			v = nv;
			cap = ncap;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n++].ino = st.st_ino;
	}
	closedir(d);
	*out = v;
	*count = n;
	return r;
}

int nshash_reclaim(const struct nshash_reclaim_opts *opts, struct nshash_reclaim_report *rep, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	memset(rep, 0, sizeof(*rep));
	cleanup_close int stampfd = -1;
	int r = claim_run(state_dir, opts->interval, &stampfd, &rep->ran, err);
	if (r < 0 || !rep->ran)
		return r;
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/pins", state_dir) >= sizeof(dir))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	cleanup_free struct pin_candidate *cand = NULL;
	size_t n = 0;
	int64_t min_age = opts->min_age < NSHASH_STALE_AGE_MIN ? NSHASH_STALE_AGE_MIN : opts->min_age;
	r = list_candidates(dir, min_age, &cand, &n, &rep->pins_seen, err);
	if (r < 0)
		return r;
	cleanup_free struct nsh_scan_item *items = calloc(n ? n : 1, sizeof(*items));
	cleanup_free uint64_t *gone = calloc(n ? n : 1, sizeof(*gone));
	if (!items || !gone)
		return nshash_error_set(err, ENOMEM, "reclaim: out of memory");
	for (size_t i = 0; i < n; i++)
		items[i] = (struct nsh_scan_item){.ino = cand[i].ino, .want = NSH_SCAN_THREADS | NSH_SCAN_FDS};
	/* from a PID namespace whose /proc does not show every holder
	 * (statedir.c), no scan can prove a pin unused */
	r = !n || nsh_state_sees_holders(state_dir) ? nsh_netns_scan(items, n, true, opts->max_scan_ms) : -EACCES;
	if (NSH_SCAN_INCOMPLETE(r)) {
		/* Not all sources were seen: nothing is proven an orphan. */
		rep->incomplete = true;
		return nshash_table_usage(state_dir, false, &rep->usage, err);
	}
	if (r < 0)
		return nsh_error_sys(err, -r, "reclaim: read /proc");
	size_t ngone = 0;
	for (size_t i = 0; i < n; i++) {
		if (items[i].held)
			continue;
		char path[PATH_MAX + NAME_MAX + 2];
		snprintf(path, sizeof(path), "%s/%s", dir, cand[i].name);
		if (!opts->dry_run) {
			/* Still the netns we scanned for (not replaced meanwhile)? */
			struct stat st;
			if (stat(path, &st) < 0 || (uint64_t)st.st_ino != cand[i].ino)
				continue;
			r = nshash_pin_remove(path, err);
			if (r < 0)
				return nshash_error_prefix(err, "reclaim");
		}
		gone[ngone++] = cand[i].ino; /* a dry run: what the real one removes */
		if (opts->removed)
			opts->removed(path, "orphaned container pin", opts->ctx);
		rep->orphans_removed++;
	}
	/* a dry run judges the ledger as the real run would, writing nothing */
	r = nsh_ledger_reconcile(state_dir, gone, ngone, opts->max_scan_ms, opts->dry_run, &rep->ledger_dropped,
				 &rep->usage, err);
	if (r == -ETIMEDOUT) {
		rep->incomplete = true;
		r = 0;
	}
	return r;
}
