/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The creation entry points: nshash_netns_new (an fd), _create (a pin at a
 * path), _replace and _swap (in place of an existing pin).  Each takes a
 * ready spare first (spare.c), else makes one (make.c), records it in the
 * table ledger (ledger.c, under a budget reserved first) and pins it
 * (pin.c). */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "internal.h"

/* The netns behind nsfd, recorded in the ledger already, is (about to be)
 * pinned at `pin`: a record naming that pin, whose inode makes the older
 * one not count (ledger.c).  Best effort: a failure leaves the older record,
 * which counts as before, only without its cheap proof of life. */
static void note_pin(const char *state_dir, const struct nshash_create_opts *opts, int nsfd, const char *pin)
{
	struct nsh_ticket t;
	memset(&t, 0, sizeof(t));
	(void)nsh_ledger_commit(state_dir, &t, nshash_sizes_effective(opts->sizes), nsfd, pin, false, NULL);
}

int nshash_netns_record_pin(const struct nshash_create_opts *opts, int nsfd, const char *pin_path,
			    struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	if (!pin_path || pin_path[0] != '/')
		return nshash_error_set(err, EINVAL, "record the pin of a netns: pin path \"%s\" is not absolute",
					pin_path ? pin_path : "");
	struct nsh_ticket t;
	memset(&t, 0, sizeof(t));
	return nsh_ledger_commit(nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf)), &t,
				 nshash_sizes_effective(opts->sizes), nsfd, pin_path, false, err);
}

/* A netns made and recorded in the table ledger (see ledger.c): under a
 * budget the bytes are reserved first (refused when they would pass it),
 * and the netns is committed with the pin it is going to get before it is
 * pinned.  The caller cancels the ticket if the pin then fails. */
static int netns_new_recorded(const struct nshash_create_opts *opts, int proc, const char *pin, int *nsfd,
			      struct nshash_netns_info *info, struct nsh_ticket *ticket, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	struct nshash_netns_info scratch;
	if (!info)
		info = &scratch;
	*nsfd = -1;
	memset(ticket, 0, sizeof(*ticket));
	int r = nsh_size_request_check(opts->sizes, err);
	if (r < 0)
		return r;
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	/* A spare is recorded already, at its pin under spares/: recorded
	 * again at the pin it is going to get (the older record of its inode
	 * no longer counts), so that its pin proves it alive. */
	if (nshash_spare_take(opts, nsfd, info) == 1) {
		if (pin)
			note_pin(state_dir, opts, *nsfd, pin);
		return 0;
	}
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	if (opts->max_table_bytes) {
		r = nsh_ledger_reserve(state_dir, eff, opts->max_table_bytes, pin, ticket, err);
		if (r < 0)
			return r;
	}
	r = nsh_netns_make(opts, proc, nsfd, info, err);
	if (r == 0)
		r = nsh_ledger_commit(state_dir, ticket, eff, *nsfd, pin, opts->max_table_bytes != 0, err);
	if (r < 0) {
		nsh_ledger_cancel(state_dir, ticket);
		if (*nsfd >= 0) {
			close(*nsfd);
			*nsfd = -1;
		}
	}
	return r;
}

int nshash_netns_new(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		     struct nshash_error *err)
{
	struct nsh_ticket ticket;
	return netns_new_recorded(opts, -1, NULL, nsfd, info, &ticket, err);
}

static bool in_netns_run_dir(const char *path)
{
	size_t n = strlen(NSHASH_NETNS_RUN_DIR);
	return strncmp(path, NSHASH_NETNS_RUN_DIR "/", n + 1) == 0 && !strchr(path + n + 1, '/');
}

int nshash_netns_create(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	if (!pin_path || pin_path[0] != '/')
		return nshash_error_set(err, EINVAL, "create netns: pin path \"%s\" is not absolute",
					pin_path ? pin_path : "");
	int r;
	if (in_netns_run_dir(pin_path)) {
		r = nshash_pin_dir_prepare(NSHASH_NETNS_RUN_DIR, err);
		if (r < 0)
			return nshash_error_prefix(err, "create netns %s", pin_path);
	}
	/* Claim the name first (fail fast on a duplicate); the bind comes last,
	 * onto the claimed file itself. */
	cleanup_close int claimfd = -1;
	r = nsh_pin_claim(pin_path, "create netns", &claimfd, err);
	if (r < 0)
		return r;
	cleanup_close int nsfd = -1;
	struct nsh_ticket ticket;
	r = netns_new_recorded(opts, -1, pin_path, &nsfd, info, &ticket, err);
	if (r < 0) {
		nsh_pin_unclaim(pin_path, claimfd);
		return nshash_error_prefix(err, "create netns %s", pin_path);
	}
	r = nsh_bind_fd(nsfd, claimfd);
	if (r < 0) {
		nsh_ledger_cancel(nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf)), &ticket);
		nsh_pin_unclaim(pin_path, claimfd);
		return nshash_error_set(err, r, "create netns %s: bind mount: %s%s", pin_path, strerror(-r),
					r == -ENOENT ? " (the pin file was replaced meanwhile)" : nsh_mount_hint(-r));
	}
	return 0;
}

/* An fd on the netns bind-mounted at `pin_path` (never anything else
 * opened: see nsh_path_open_netns), or -errno. */
static int open_pinned(const char *pin_path, struct nshash_error *err)
{
	int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(pin_path, false, &fd, &not_netns);
	if (r < 0)
		return nsh_error_sys(err, r, "replace netns %s", pin_path);
	if (not_netns)
		return nshash_error_set(err, EINVAL, "replace netns %s: not a bind-mounted network namespace pin (%s)",
					pin_path, not_netns);
	return fd;
}

#ifndef MOVE_MOUNT_BENEATH
#define MOVE_MOUNT_BENEATH 0x00000200 /* Linux 6.5; not in glibc 2.36's headers */
#endif

/* True when fd was opened through a mount other than nsfs's own (a pin):
 * one that may be detached by now. */
static bool through_a_pin(int fd)
{
	struct statx a, b;
	return statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) == 0 &&
	       statx(AT_FDCWD, "/proc/thread-self/ns/net", 0, STATX_MNT_ID, &b) == 0 && (a.stx_mask & STATX_MNT_ID) &&
	       a.stx_mnt_id != b.stx_mnt_id;
}

/* swap, and *placed: the new netns is mounted at pin_path (under the old
 * pin, when unmounting that failed). */
static int swap(int nsfd, const char *pin_path, bool *placed, struct nshash_error *err)
{
	*placed = false;
	cleanup_close int oldfd = open_pinned(pin_path, err);
	if (oldfd < 0)
		return oldfd;
	/* the caller's fd may have come through a pin since removed */
	cleanup_close int clean = -1;
	if (through_a_pin(nsfd)) {
		int r = nsh_inspect_reopen(nsfd, &clean, NULL, err);
		if (r < 0)
			return nshash_error_prefix(err, "replace netns %s", pin_path);
		nsfd = clean;
	}
	/* The new netns mounted beneath the old pin's mount (the very one
	 * oldfd was opened through), then the old one detached: the path
	 * never shows anything but a netns. */
	cleanup_close int tree = nsh_mount_clone(nsfd);
	if (tree >= 0 && move_mount(tree, "", oldfd, "",
				    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH | MOVE_MOUNT_BENEATH) == 0) {
		*placed = true;
		if (umount2(pin_path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			return nshash_error_set(err, errno,
						"replace netns %s: the new netns is mounted beneath the old pin, which "
						"could not be unmounted: %s (unmount %s once more to uncover it)",
						pin_path, strerror(errno), pin_path);
		return 0;
	}
	/* Nothing changed.  Before Linux 6.5 (EINVAL: no such flag), or where
	 * a seccomp filter refuses the new mount API: unmount, then mount on
	 * the file beneath (for that instant the path is a plain file; a
	 * runtime opening it then fails).  The old netns's copy is made
	 * before its mount is detached, to put it back with. */
	cleanup_close int restore = nsh_mount_clone(oldfd);
	if (umount2(pin_path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return nshash_error_set(err, errno, "replace netns %s: unmount the old pin: %s (not a mount point?)",
					pin_path, strerror(errno));
	/* The file under the old mount, held without following a link. */
	cleanup_close int target = open(pin_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int r = target < 0 ? -errno : nsh_mount_at(tree, nsfd, target);
	if (r < 0) {
		const char *restored = target >= 0 && nsh_mount_at(restore, oldfd, target) == 0
					   ? "old netns put back"
					   : "old netns could NOT be put back";
		return nshash_error_set(err, r, "replace netns %s: mount the new netns: %s (%s)", pin_path,
					strerror(-r), restored);
	}
	*placed = true;
	return 0;
}

int nshash_netns_swap(int nsfd, const char *pin_path, struct nshash_error *err)
{
	bool placed;
	return swap(nsfd, pin_path, &placed, err);
}

int nshash_netns_replace(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			 struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	cleanup_close int oldfd = open_pinned(pin_path, err);
	if (oldfd < 0)
		return oldfd;
	cleanup_close int nsfd = -1;
	struct nsh_ticket ticket;
	int r = netns_new_recorded(opts, -1, pin_path, &nsfd, info, &ticket, err);
	if (r < 0)
		return nshash_error_prefix(err, "replace netns %s", pin_path);
	bool placed;
	r = swap(nsfd, pin_path, &placed, err);
	if (r < 0 && !placed) /* placed: alive at pin_path, and counted */
		nsh_ledger_cancel(nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf)), &ticket);
	return r;
}
