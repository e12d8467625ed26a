/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Spares: sized netns made ahead of need and pinned in STATE_DIR/spares/
 * (SIZES, the template's name, starts each name), so that a creation of
 * those sizes costs no unshare (and no `lo` up) on its caller's path.  A spare is
 * made like any other sized netns (template, verified, lo up, recorded in
 * the table ledger); nobody but root can reach the 0700 state dir, and a
 * netns's table sizes never change, so a spare is as good as new until it
 * is taken.  Its name carries what its verification read,
 * SIZES.TCP.UDP.RANDOM (the raw *_hash_entries: negative = the shared
 * table of that many buckets), so a take reads no /proc/sys: each lookup
 * there compares against a dentry of every live netns that looked
 * (docs/kernel.md).  A spare named SIZES.RANDOM (0.2.0) is read back.
 * Takers queue on spares/.take for the few syscalls a take is: an
 * unmount decides nothing between mount namespaces (a taker in a slave one
 * detaches only its own copy), the unlink that ends a take does (the
 * kernel detaches a deleted file's mounts everywhere). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>

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

/* One "-?DIGITS" then `end` at *p; false when it is not there. */
static bool name_number(const char **p, char end, long *out)
{
	const char *q = *p + (**p == '-');
	if (*q < '0' || *q > '9')
		return false;
	char *e;
	errno = 0;
	*out = strtol(*p, &e, 10);
	if (errno || *e != end)
		return false;
	*p = e + 1;
	return true;
}

/* "TCP.UDP.RANDOM" (after SIZES.): the entries its verification read, as
 * a creation reports them (child knobs and derived limits unread).  UDP 0:
 * no udp_hash_entries (Linux 6.1), what a creation reports there too. */
static bool spare_name_info(const char *rest, struct nshash_netns_info *info)
{
	long tcp, udp;
	const char *p = rest;
	if (!name_number(&p, '.', &tcp) || !name_number(&p, '.', &udp) || !tcp || strlen(p) != 16 ||
	    strspn(p, "0123456789abcdef") != 16)
		return false;
	*info = (struct nshash_netns_info){.tcp_entries = tcp,
					   .udp_entries = udp,
					   .tcp_child = -1,
					   .udp_child = -1,
					   .tcp_max_tw_buckets = -1,
					   .tcp_max_syn_backlog = -1};
	return true;
}

struct spare_name {
	const char *dir, *prefix;
	uint64_t rnd;
};

static int spare_namer(const struct nshash_netns_info *info, void *arg, char *path, size_t len,
		       struct nshash_error *err)
{
	const struct spare_name *n = arg;
	if ((size_t)snprintf(path, len, "%s/%s%ld.%ld.%016llx", n->dir, n->prefix, info->tcp_entries, info->udp_entries,
			     (unsigned long long)n->rnd) >= len)
		return nshash_error_set(err, ENAMETOOLONG, "spares: path too long");
	return 0;
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
		/* Verified when it was made, and sizes never change: what its
		 * name says it read (else read back), and the netns opened anew
		 * from inside: fd came through the mount just detached. */
		struct nshash_error ignored;
		struct nshash_netns_info got;
		int clean = -1;
		bool named = spare_name_info(de->d_name + plen, &got);
		int r = nsh_inspect_reopen(fd, &clean, named ? NULL : &got, &ignored);
		close(fd);
		fd = clean;
		struct stat st;
		if (r == 0 && named) {
			r = fstat(fd, &st) < 0 ? -errno : 0;
			got.inode = st.st_ino;
		}
		if (r < 0 || nshash_verify(&got, opts->sizes, "spare", &ignored) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		*info = got;
		*nsfd = fd;
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
	/* Each spare is verified in a fresh netns, where the first lookup under
	 * /proc/sys compares against a dentry of every live netns that looked
	 * there (~2 ms at 2000): through a proc of our own it meets only ours.
	 * Its teardown at close is this background filler's, off every path;
	 * made once there is a spare to make. */
	cleanup_close int proc = -1;
	/* counted again after each one made: takers do not wait for us */
	for (unsigned n = 0; n < opts->spares && spares_ready(dir, prefix) < opts->spares; n++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return nshash_error_set(err, errno, "spares: getrandom: %s", strerror(errno));
		/* made and verified first, then named after what it has */
		if (made == 0)
			proc = nsh_proc_private(); /* < 0: the caller's /proc */
		struct spare_name name = {dir, prefix, rnd};
		r = nsh_netns_create_named(&one, proc, spare_namer, &name, path, sizeof(path), err);
		if (r < 0)
			return nshash_error_prefix(err, "spare");
		made++;
	}
	return made;
}
