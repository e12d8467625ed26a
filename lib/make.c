/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Making a sized network namespace without ever touching the host's knobs.
 *
 * The kernel sizes a new netns from the *_child_* knobs of the netns its
 * creator is in.  A private parent with the knobs set is therefore enough:
 * the template strategy keeps one such parent pinned per effective size pair
 * (template.c), the nested strategy makes a throwaway parent each time.
 * The child is verified and its lo brought up; recording and pinning it
 * are the callers' (create.c, spare.c). */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
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

int nsh_size_request_check(struct nshash_sizes s, struct nshash_error *err)
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
 * the sized child (internal.h: also lib/userns.c's helper). */
int nsh_netns_nested_here(const void *arg, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err)
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
int nsh_netns_make(const struct nshash_create_opts *opts, int proc, int *nsfd, struct nshash_netns_info *info,
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
			return nsh_error_sys(err, -r, "cannot re-enter the caller's own network namespace");
		r = nsh_in_child(nsh_netns_nested_here, opts, NSH_CHILD_TIMEOUT_S, nsfd, info, err);
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
