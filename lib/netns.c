/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Creating sized network namespaces without ever touching the host's knobs.
 *
 * The kernel sizes a new netns from the *_child_* knobs of the netns its
 * creator is in.  A private parent with the knobs set is therefore enough:
 * the template strategy keeps one such parent pinned per effective size pair
 * (built once under the state lock, used without a lock afterwards), the
 * nested strategy makes a throwaway parent each time. */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "internal.h"

/* From inside a parent whose knobs are set: make the child, verify it,
 * bring lo up, return an fd to it.  The thread is left in the child. */
static int spawn_child(const struct nshash_create_opts *opts, int proc, int *nsfd, struct nshash_netns_info *info,
		       struct nshash_error *err)
{
	int r = nsh_unshare_net("the sized child", err);
	if (r < 0)
		return r;
	r = nsh_read_info_here(proc, info, false, err);
	if (r < 0)
		return r;
	r = nshash_verify(info, opts->sizes, "new network namespace", err);
	if (r < 0)
		return r;
	if (!opts->keep_lo_down) {
		r = nsh_loopback_up(err);
		if (r < 0)
			return r;
	}
	return nsh_netns_open_current(nsfd, err);
}

/* Return the thread home after spawn_child() gave `r`.  Failing to return
 * outranks any earlier result; the child's fd is then dropped. */
static int leave_child(int home, int r, int *nsfd, struct nshash_error *err)
{
	int r2 = nsh_netns_return(home, err);
	if (r2 < 0 && r == 0) {
		close(*nsfd);
		*nsfd = -1;
	}
	return r2 < 0 ? r2 : r;
}

static int validate_request(struct nshash_sizes s, struct nshash_error *err)
{
	uint32_t out;
	int r = nshash_size_check(NSHASH_TCP, "tcp", s.tcp, &out, err);
	return r < 0 ? r : nshash_size_check(NSHASH_UDP, "udp", s.udp, &out, err);
}

/* The knobs of every requested protocol must exist in the caller's own
 * netns, before any parent is made: a kernel without them is refused up
 * front, and so is a caller whose /proc/sys/net/ipv4 hides them (a fresh
 * netns would see the real ones there and quietly succeed).  One walk down
 * /proc/sys/net/ipv4, both names looked up beside each other: a walk from
 * / compares against one cached dentry for every live netns whose sysctls
 * anyone looked at (docs/kernel.md), ~0.5 ms on a host running 2000
 * containers.  nshash_probe() is not needed on the hot path; the template
 * path skips this when the template is pinned. */
static int require_knobs(struct nshash_sizes s, struct nshash_error *err)
{
	/* Once seen, a knob stays: a long-lived caller looks only once. */
	static bool seen_tcp, seen_udp;
	bool tcp_ok = !s.tcp || __atomic_load_n(&seen_tcp, __ATOMIC_RELAXED);
	bool udp_ok = !s.udp || __atomic_load_n(&seen_udp, __ATOMIC_RELAXED);
	if (!tcp_ok || !udp_ok) {
		cleanup_close int dir = nsh_sysctl_dir_open();
		tcp_ok = tcp_ok || (dir >= 0 && faccessat(dir, NSH_TCP_CHILD, F_OK, 0) == 0);
		udp_ok = udp_ok || (dir >= 0 && faccessat(dir, NSH_UDP_CHILD, F_OK, 0) == 0);
	}
	if (s.tcp && tcp_ok)
		__atomic_store_n(&seen_tcp, true, __ATOMIC_RELAXED);
	if (s.udp && udp_ok)
		__atomic_store_n(&seen_udp, true, __ATOMIC_RELAXED);
	if (tcp_ok && udp_ok)
		return 0;
	struct nshash_probe p;
	int r = nshash_probe(&p, err);
	if (r < 0)
		return r;
	r = nshash_probe_require(&p, s, err);
	if (r < 0)
		return r;
	/* The knob came back between the two looks: report it rather than race. */
	return nshash_error_set(err, EAGAIN, "net.ipv4.*_child_* knobs appeared while being probed; retry");
}

static int new_from_template(const struct nshash_create_opts *opts, int proc, int home, int *nsfd,
			     struct nshash_netns_info *info, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	struct nsh_template t;
	int r = nsh_template_paths(state_dir, eff, &t, err);
	if (r < 0)
		return r;
	/* The fast path opens a template without the lock: the dirs on the way
	 * are checked every time (a few microseconds). */
	if ((r = nsh_state_dir_check(state_dir, false, err)) < 0)
		return r;
	/* A pinned template was made on this kernel since boot, its knobs set
	 * and read back: it proves them, without the walk.  Without one they
	 * are checked before anything is made. */
	cleanup_close int found = nsh_template_open(&t);
	if (found < 0 && (r = require_knobs(opts->sizes, err)) < 0)
		return r;
	for (int attempt = 0; attempt < 2; attempt++) {
		cleanup_close int tfd = -1;
		if (attempt == 0 && found >= 0) {
			tfd = found;
			found = -1;
		} else if ((r = nsh_template_get(state_dir, &t, eff, home, attempt > 0, &tfd, err)) < 0)
			return r;
		r = nsh_netns_enter(tfd, t.path, err);
		if (r < 0)
			return r;
		/* The child is verified anyway, so the template's knobs are read
		 * only when the child came out wrong (hot path: 6 syscalls fewer). */
		r = leave_child(home, spawn_child(opts, proc, nsfd, info, err), nsfd, err);
		if (r == 0) {
			nsh_template_touch(&t);
			return 0;
		}
		if (r != -NSHASH_E_MISMATCH && r != -NSHASH_E_FALLBACK)
			return r;
		int r2 = nsh_netns_enter(tfd, t.path, err);
		if (r2 < 0)
			return r2;
		bool damaged = !nsh_parent_knobs_are(eff);
		r2 = nsh_netns_return(home, err);
		if (r2 < 0)
			return r2;
		if (!damaged)
			return r; /* a sound template: the kernel's doing (allocation failed?) */
				  /* Someone changed the template's knobs: rebuild it, try again. */
	}
	return nshash_error_set(err, EIO, "template %s: knobs keep changing under us (another program writes them?)",
				t.path);
}

static int new_nested(const struct nshash_create_opts *opts, int proc, int home, int *nsfd,
		      struct nshash_netns_info *info, struct nshash_error *err)
{
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	int r = nsh_unshare_net("throwaway parent", err);
	if (r < 0)
		return r;
	r = nsh_parent_knobs_set(eff, err);
	if (r == 0)
		r = spawn_child(opts, proc, nsfd, info, err);
	return leave_child(home, r, nsfd, err);
}

/* In a helper process that need not come back: a throwaway parent, then
 * the sized child. */
static int nested_here(const void *arg, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err)
{
	const struct nshash_create_opts *opts = arg;
	int r = nsh_unshare_net("throwaway parent", err);
	if (r == 0)
		r = nsh_parent_knobs_set(nshash_sizes_effective(opts->sizes), err);
	return r < 0 ? r : spawn_child(opts, -1, nsfd, info, err);
}

/* Both protocols on the shared tables, and the caller's knobs give children
 * exactly that (the host's normally do): a plain child of the caller's own
 * netns, verified like any other; no parent, no template for "0/0". */
static int new_plain(const struct nshash_create_opts *opts, int proc, int home, int *nsfd,
		     struct nshash_netns_info *info, struct nshash_error *err)
{
	int r = spawn_child(opts, proc, nsfd, info, err);
	return leave_child(home, r, nsfd, err);
}

/* The netns itself: validated request, parent, child, verification (its
 * sysctls read through `proc`, a proc instance of the caller's, or the
 * caller's /proc when -1). */
static int netns_make(const struct nshash_create_opts *opts, int proc, int *nsfd, struct nshash_netns_info *info,
		      struct nshash_error *err)
{
	cleanup_close int home = -1;
	int r = nsh_netns_open_current(&home, err);
	if (r < 0)
		return r;
	/* Prove we may come back before leaving: setns needs CAP_SYS_ADMIN over
	 * the user namespace owning the caller's netns, which a process in
	 * `unshare -Ur` (without -n) lacks for the host's netns.  With
	 * CAP_SYS_ADMIN in its own user namespace it can still make netns
	 * owned by that one: a helper process does it (nested, no state). */
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	int back = nsh_can_return(home);
	/* new_from_template() checks the knobs itself, after the state dir: a
	 * pinned template proves them. */
	if ((back < 0 || opts->strategy != NSHASH_STRATEGY_TEMPLATE) && (r = require_knobs(opts->sizes, err)) < 0)
		return r;
	r = back;
	if (r < 0) {
		struct nshash_probe p;
		if (r == -EPERM && nshash_probe(&p, NULL) == 0 && !p.cap_sys_admin)
			return nshash_error_set(
			    err, -r,
			    "enter network namespaces: %s (needs CAP_SYS_ADMIN and "
			    "CAP_NET_ADMIN; run as root, or inside a user namespace: unshare -Urmn)",
			    strerror(-r));
		if (r != -EPERM)
			return nshash_error_set(err, -r, "cannot re-enter the caller's own network namespace: %s",
						strerror(-r));
		r = nsh_in_child(nested_here, opts, nsfd, info, err);
	} else if (!eff.tcp && !eff.udp && nsh_parent_knobs_are(eff) == 1)
		r = new_plain(opts, proc, home, nsfd, info, err);
	else if (opts->strategy == NSHASH_STRATEGY_NESTED)
		r = new_nested(opts, proc, home, nsfd, info, err);
	else
		r = new_from_template(opts, proc, home, nsfd, info, err);
	if (r < 0)
		return r;
	struct stat st;
	if (fstat(*nsfd, &st) == 0)
		info->inode = st.st_ino;
	return 0;
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
	int r = validate_request(opts->sizes, err);
	if (r < 0)
		return r;
	/* a spare is recorded in the ledger already */
	if (nshash_spare_take(opts, nsfd, info) == 1)
		return 0;
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	if (opts->max_table_bytes) {
		r = nsh_ledger_reserve(state_dir, eff, opts->max_table_bytes, pin, ticket, err);
		if (r < 0)
			return r;
	}
	r = netns_make(opts, proc, nsfd, info, err);
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

int nsh_netns_create_named(const struct nshash_create_opts *opts, int proc, nsh_pin_namer namer, void *arg, char *path,
			   size_t len, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	if (opts->max_table_bytes)
		return nshash_error_set(err, EINVAL, "create netns: a named pin cannot be reserved under a budget");
	int r = validate_request(opts->sizes, err);
	if (r < 0)
		return r;
	cleanup_close int nsfd = -1;
	struct nshash_netns_info info;
	r = netns_make(opts, proc, &nsfd, &info, err);
	if (r < 0)
		return r;
	r = namer(&info, arg, path, len, err);
	if (r < 0)
		return r;
	/* committed with its pin before the pin exists, as any creation */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	struct nsh_ticket ticket;
	memset(&ticket, 0, sizeof(ticket));
	r = nsh_ledger_commit(state_dir, &ticket, nshash_sizes_effective(opts->sizes), nsfd, path, false, err);
	if (r == 0)
		r = nshash_pin_fd(nsfd, path, err);
	if (r < 0)
		nsh_ledger_cancel(state_dir, &ticket);
	return r;
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
		return nshash_error_set(err, r, "replace netns %s: %s", pin_path, strerror(-r));
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
