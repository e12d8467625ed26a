/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Spares: sized netns made ahead of need and pinned in STATE_DIR/spares/
 * as SIZES.RANDOM (SIZES the template's name), so that a creation of those
 * sizes costs no unshare (and no `lo` up) on its caller's path.  A spare is
 * made like any other sized netns (template, verified, lo up, recorded in
 * the table ledger); nobody but root can reach the 0700 state dir, and a
 * netns's table sizes never change, so a spare is as good as new until it
 * is taken.  Takers queue on spares/.take for the few syscalls a take is:
 * an unmount decides nothing between mount namespaces (a taker in a slave
 * one detaches only its own copy), the unlink that ends a take does (the
 * kernel detaches a deleted file's mounts everywhere). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>

#include "internal.h"

bool nshash_spares_apply(const struct nshash_create_opts *opts)
{
	/* under a budget a spare would hold bytes nobody asked for */
	return opts->spares && opts->strategy == NSHASH_STRATEGY_TEMPLATE && !opts->max_table_bytes &&
	       !opts->keep_lo_down;
}

static int spare_prefix(const struct nshash_create_opts *opts, char *buf, size_t len)
{
	char name[64];
	nsh_template_name(nshash_sizes_effective(opts->sizes), name, sizeof(name));
	return (size_t)snprintf(buf, len, "%s.", name) >= len ? -ENAMETOOLONG : 0;
}

int nshash_spare_take(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info)
{
	char dir[PATH_MAX], prefix[80], path[PATH_MAX];
	*nsfd = -1;
	if (!nshash_spares_apply(opts) || spare_prefix(opts, prefix, sizeof(prefix)) < 0)
		return 0;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/spares", nsh_state_dir(opts->state_dir)) >= sizeof(dir))
		return 0;
	char lock[PATH_MAX + 8];
	snprintf(lock, sizeof(lock), "%s/.take", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX) < 0)
		return 0; /* none made yet (no directory), or not ours to take from */
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	size_t plen = strlen(prefix);
	int taken = 0;
	while (!taken && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		int fd = -1;
		const char *not_netns;
		if (nsh_path_open_netns(path, false, &fd, &not_netns) < 0)
			continue;
		if (not_netns || umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 || unlink(path) < 0) {
			close(fd); /* being made, or gone */
			continue;
		}
		/* Verified when it was made, and sizes never change; read back
		 * all the same (the caller reports them), and the netns opened
		 * anew from inside: fd came through the mount just detached. */
		struct nshash_error ignored;
		int clean = -1;
		int r = nsh_inspect_reopen(fd, &clean, info, &ignored);
		close(fd);
		fd = clean;
		if (r < 0 || nshash_verify(info, opts->sizes, "spare", &ignored) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		*nsfd = fd; /* info->inode: read inside it, as the sizes */
		taken = 1;
	}
	closedir(d);
	return taken;
}

/* Mounted spares with this prefix in dir. */
static unsigned spares_ready(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	char path[PATH_MAX];
	unsigned n = 0;
	struct dirent *de;
	size_t plen = strlen(prefix);
	while ((de = readdir(d))) {
		struct nshash_error ignored;
		if (strncmp(de->d_name, prefix, plen) == 0 &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path) &&
		    nshash_pin_is_netns(path, &ignored) == 1)
			n++;
	}
	closedir(d);
	return n;
}

int nshash_spare_fill(const struct nshash_create_opts *opts, struct nshash_error *err)
{
	char dir[PATH_MAX], prefix[80], lock[PATH_MAX + 8], path[PATH_MAX];
	if (!nshash_spares_apply(opts))
		return 0;
	if (spare_prefix(opts, prefix, sizeof(prefix)) < 0)
		return nshash_error_set(err, ENAMETOOLONG, "spares: name too long");
	const char *state_dir = nsh_state_dir(opts->state_dir);
	int r = nshash_state_subdir(state_dir, "spares", dir, sizeof(dir), err);
	if (r == 0)
		r = nshash_pin_dir_prepare(dir, err);
	if (r < 0)
		return nshash_error_prefix(err, "spares");
	/* One filler per state dir at a time; the others wait their turn and
	 * count again (takes meanwhile leave fewer than the one before saw). */
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0)
		return nshash_error_set(err, errno, "spares: open %s: %s", lock, strerror(errno));
	if (flock(lockfd, LOCK_EX) < 0)
		return nshash_error_set(err, errno, "spares: lock %s: %s", lock, strerror(errno));
	struct nshash_create_opts one = *opts;
	one.spares = 0;
	int made = 0;
	/* counted again after each one made: takers do not wait for us */
	for (unsigned n = 0; n < opts->spares && spares_ready(dir, prefix) < opts->spares; n++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return nshash_error_set(err, errno, "spares: getrandom: %s", strerror(errno));
		if ((size_t)snprintf(path, sizeof(path), "%s/%s%016llx", dir, prefix, (unsigned long long)rnd) >=
		    sizeof(path))
			return nshash_error_set(err, ENAMETOOLONG, "spares: path too long");
		r = nshash_netns_create(&one, path, NULL, err);
		if (r < 0)
			return nshash_error_prefix(err, "spare");
		made++;
	}
	return made;
}
