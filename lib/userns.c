/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A sized netns owned by a user namespace of its own (nshash.h, "user
 * namespaces").  A helper process unshares the user namespace; the caller
 * writes exactly the requested mappings into it (its privileges, not the
 * helper's, allow any mapping); the helper, root of that user namespace,
 * makes a throwaway parent netns there with the child knobs set and the
 * sized netns from it (the nested strategy, nsh_netns_nested_here); the
 * caller opens both through /proc/HELPER/ns and checks that the netns is
 * owned by the user namespace before the helper ends. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "internal.h"

/* How long the caller waits for each of the helper's answers: after its
 * unshare (stage 1), after the netns (stage 2). */
#define HELPER_TIMEOUT_S 10

/* What the helper is given. */
struct helper_job {
	const struct nshash_create_opts *opts;
	int join_fd;
};

/* The helper: unshare (or, join_fd >= 0, join that user namespace), wait
 * for the mappings, make the netns, stay until the caller has opened it
 * (the socket closes). */
__attribute__((noreturn)) static void helper(int sock, pid_t parent, const void *arg)
{
	const struct helper_job *job = arg;
	const struct nshash_create_opts *opts = job->opts;
	int join_fd = job->join_fd;
	struct nsh_helper_reply rep = {0};
	char go;

	/* never outlive the caller (a killed wrapper): its namespaces go too */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	/* Not dumpable while in a user namespace others may be in: a process
	 * there holding CAP_SYS_PTRACE or CAP_KILL over it could attach to, or
	 * stop, a helper whose credentials are still the host's root.  A new
	 * user namespace stays dumpable until the caller has written its maps
	 * (it needs /proc/PID/uid_map), and holds nobody else until then. */
	if (join_fd >= 0)
		prctl(PR_SET_DUMPABLE, 0);
	if (join_fd >= 0 && setns(join_fd, CLONE_NEWUSER) < 0) {
		int e = errno;
		rep.r = nshash_error_set(&rep.err, e, "join the user namespace: %s%s", strerror(e),
					 e == EPERM ? " (needs CAP_SYS_ADMIN over it)" : "");
	} else if (join_fd < 0 && unshare(CLONE_NEWUSER) < 0) {
		int e = errno;
		rep.r = nshash_error_set(&rep.err, e, "unshare a user namespace: %s%s", strerror(e),
					 e == ENOSPC  ? " (user.max_user_namespaces reached?)"
					 : e == EPERM ? " (needs CAP_SYS_ADMIN, and no chroot)"
						      : "");
	}
	if (nsh_helper_send(sock, &rep, -1) < 0 || rep.r < 0)
		_exit(1);
	if (recv(sock, &go, 1, 0) != 1 || go != 'g')
		_exit(1); /* the caller could not write the mappings */
	prctl(PR_SET_DUMPABLE, 0);
	int nsfd = -1;
	rep.r = nsh_netns_nested_here(opts, &nsfd, &rep.info, &rep.err);
	if (rep.r < 0)
		nshash_error_prefix(&rep.err, "in the %s user namespace", join_fd >= 0 ? "container's" : "new");
	if (nsh_helper_send(sock, &rep, -1) < 0 || rep.r < 0)
		_exit(1);
	while (recv(sock, &go, 1, 0) > 0) /* until the caller closes */
		;
	_exit(0);
}

/* "INSIDE OUTSIDE COUNT\n" lines; 0, or -E2BIG when they do not fit. */
static int map_text(const struct nshash_idmap *m, size_t n, char *buf, size_t len)
{
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, len - off, "%u %u %u\n", m[i].inside, m[i].outside, m[i].count);
		if (w < 0 || (size_t)w >= len - off)
			return -E2BIG;
		off += (size_t)w;
	}
	return 0;
}

static int map_check(const char *what, const struct nshash_idmap *m, size_t n, struct nshash_error *err)
{
	if (n == 0 || n > NSHASH_IDMAP_MAX)
		return nshash_error_set(err, EINVAL, "%s: %zu lines (1 to %d)", what, n, NSHASH_IDMAP_MAX);
	for (size_t i = 0; i < n; i++)
		if (m[i].count == 0 || (uint64_t)m[i].inside + m[i].count > 4294967295ull ||
		    (uint64_t)m[i].outside + m[i].count > 4294967295ull)
			return nshash_error_set(err, EINVAL, "%s[%zu] = %u %u %u: empty, or past 2^32-1", what, i,
						m[i].inside, m[i].outside, m[i].count);
	return 0;
}

/* Write one map of the helper's user namespace (one write: the kernel
 * takes a map once, whole). */
static int map_write(pid_t pid, const char *file, const char *text, struct nshash_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		int e = errno;
		char shown[120], lines[120];
		snprintf(lines, sizeof(lines), "%s", text);
		for (char *c = lines; *c; c++)
			if (*c == '\n')
				*c = c[1] ? ',' : '\0';
		nshash_escape(lines, shown, sizeof(shown));
		return nshash_error_set(err, e, "write %s \"%s\" of the new user namespace: %s%s", file, shown,
					strerror(e),
					e == EPERM    ? " (needs CAP_SETUID/CAP_SETGID over those ids in the caller's "
							"user namespace)"
					: e == EINVAL ? " (overlapping ranges, or ids not mapped in the caller's user "
							"namespace?)"
						      : "");
	}
	return 0;
}

static int open_ns(pid_t pid, const char *which, int *fd, struct nshash_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, which);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? nsh_error_sys(err, errno, "open %s", path) : 0;
}

/* 0 when the netns behind nsfd is owned by the user namespace behind ufd. */
static int check_owner(int nsfd, int ufd, struct nshash_error *err)
{
	struct stat a, b;
	cleanup_close int owner = ioctl(nsfd, NS_GET_USERNS);
	if (owner < 0)
		return nsh_error_sys(err, errno, "the new netns's owner (NS_GET_USERNS)");
	if (fstat(owner, &a) < 0 || fstat(ufd, &b) < 0)
		return nsh_error_sys(err, errno, "the new netns's owner: fstat");
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return nshash_error_set(err, EIO, "the new netns is owned by user namespace %lu, not the new one (%lu)",
					(unsigned long)a.st_ino, (unsigned long)b.st_ino);
	return 0;
}

/* The helper's part, seen from the caller: fds on both namespaces.  With
 * join_fd >= 0 the helper joins that user namespace (no maps: NULL). */
static int make_in_helper(const struct nshash_create_opts *opts, int join_fd, const char *uid_text,
			  const char *gid_text, int *ufd, int *nsfd, struct nshash_netns_info *info,
			  struct nshash_error *err)
{
	struct helper_job job = {.opts = opts, .join_fd = join_fd};
	struct nsh_helper h;
	struct nsh_helper_reply rep;
	int r = nsh_helper_start(&h, "user namespace helper", HELPER_TIMEOUT_S, helper, &job, err);
	if (r < 0)
		return r;
	r = nsh_helper_recv(&h, "unshare", &rep, NULL, err);
	/* the mappings: gid first (either order works for a privileged writer) */
	if (r == 0 && gid_text)
		r = map_write(h.pid, "gid_map", gid_text, err);
	if (r == 0 && uid_text)
		r = map_write(h.pid, "uid_map", uid_text, err);
	if (r == 0 && send(h.sock, "g", 1, MSG_NOSIGNAL) != 1)
		r = nsh_error_sys(err, errno, "user namespace helper");
	if (r == 0)
		r = nsh_helper_recv(&h, "sized netns", &rep, NULL, err);
	if (r == 0)
		r = open_ns(h.pid, "user", ufd, err);
	if (r == 0)
		r = open_ns(h.pid, "net", nsfd, err);
	if (r == 0 && !nsh_fd_is_netns(*nsfd))
		r = nshash_error_set(err, EIO, "the helper's namespace is not a network namespace");
	if (r == 0)
		r = check_owner(*nsfd, *ufd, err);
	nsh_helper_end(&h, r < 0);
	if (r == 0)
		*info = rep.info;
	return r;
}

/* The helper's work recorded and budgeted like any creation (create.c). */
static int made_recorded(const struct nshash_create_opts *opts, int join_fd, const char *uid_text, const char *gid_text,
			 int *userns_fd, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	struct nsh_ticket ticket;
	int r;
	memset(&ticket, 0, sizeof(ticket));
	if (opts->max_table_bytes &&
	    (r = nsh_ledger_reserve(state_dir, eff, opts->max_table_bytes, "", &ticket, err)) < 0)
		return r;
	struct nshash_netns_info scratch;
	r = make_in_helper(opts, join_fd, uid_text, gid_text, userns_fd, nsfd, info ? info : &scratch, err);
	if (r == 0) {
		struct stat st;
		if (info && fstat(*nsfd, &st) == 0)
			info->inode = st.st_ino;
		r = nsh_ledger_commit(state_dir, &ticket, eff, *nsfd, "", opts->max_table_bytes != 0, err);
	}
	if (r < 0) {
		nsh_ledger_cancel(state_dir, &ticket);
		if (*nsfd >= 0)
			close(*nsfd);
		if (*userns_fd >= 0)
			close(*userns_fd);
		*userns_fd = *nsfd = -1;
	}
	return r;
}

int nshash_userns_netns_new(const struct nshash_create_opts *opts, const struct nshash_userns_spec *spec,
			    int *userns_fd, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err)
{
	char uid_text[NSHASH_IDMAP_MAX * 34], gid_text[NSHASH_IDMAP_MAX * 34];
	uint32_t ignored;
	*userns_fd = *nsfd = -1;
	int r = nshash_size_check(NSHASH_TCP, "tcp", opts->sizes.tcp, &ignored, err);
	if (r == 0)
		r = nshash_size_check(NSHASH_UDP, "udp", opts->sizes.udp, &ignored, err);
	if (r == 0)
		r = map_check("uid mappings", spec->uid, spec->nuid, err);
	if (r == 0)
		r = map_check("gid mappings", spec->gid, spec->ngid, err);
	if (r == 0 && (map_text(spec->uid, spec->nuid, uid_text, sizeof(uid_text)) < 0 ||
		       map_text(spec->gid, spec->ngid, gid_text, sizeof(gid_text)) < 0))
		r = nshash_error_set(err, E2BIG, "id mappings: too long");
	if (r < 0)
		return r;
	return made_recorded(opts, -1, uid_text, gid_text, userns_fd, nsfd, info, err);
}

int nshash_userns_netns_join(const struct nshash_create_opts *opts, int userns_fd, int *nsfd,
			     struct nshash_netns_info *info, struct nshash_error *err)
{
	uint32_t ignored;
	*nsfd = -1;
	if (ioctl(userns_fd, NS_GET_NSTYPE) != CLONE_NEWUSER)
		return nshash_error_set(err, EINVAL, "create netns: the fd given is not a user namespace");
	int r = nshash_size_check(NSHASH_TCP, "tcp", opts->sizes.tcp, &ignored, err);
	if (r == 0)
		r = nshash_size_check(NSHASH_UDP, "udp", opts->sizes.udp, &ignored, err);
	if (r < 0)
		return r;
	int ufd = -1;
	r = made_recorded(opts, userns_fd, NULL, NULL, &ufd, nsfd, info, err);
	if (ufd >= 0)
		close(ufd);
	return r;
}

int nshash_userns_pin(int userns_fd, const char *path, struct nshash_error *err)
{
	if (ioctl(userns_fd, NS_GET_NSTYPE) != CLONE_NEWUSER)
		return nshash_error_set(err, EINVAL, "pin %s: not a user namespace", path);
	return nsh_pin_ns_fd(userns_fd, path, "create user namespace pin", "user namespace", err);
}

int nshash_userns_pin_remove(const char *path, struct nshash_error *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : nsh_error_sys(err, errno, "remove pin %s", path);
	if (!S_ISREG(st.st_mode))
		return nshash_error_set(err, EINVAL, "remove pin %s: not a pin (%s)", path,
					nshash_file_kind(st.st_mode));
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int type = fd >= 0 ? ioctl(fd, NS_GET_NSTYPE) : -1;
	if (type == CLONE_NEWUSER) {
		while (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			;
		if (errno != EINVAL && errno != ENOENT)
			return nshash_error_set(err, errno, "unmount pin %s: %s%s", path, strerror(errno),
						nsh_mount_hint(errno));
	} else if (fd < 0 || st.st_size != 0 || type >= 0) {
		return nshash_error_set(err, EINVAL, "remove pin %s: not a user namespace pin", path);
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove pin %s", path);
	return 0;
}

static int userns_pin_gone(const char *path, const struct stat *st, void *ctx)
{
	struct nshash_error ignored;
	(void)st, (void)ctx;
	return nshash_userns_pin_remove(path, &ignored);
}

int nshash_userns_sweep(const char *state_dir, int64_t min_age, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	state_dir = nsh_state_dir(state_dir, sdbuf, sizeof(sdbuf));
	if (min_age < NSHASH_STALE_AGE_MIN)
		min_age = NSHASH_STALE_AGE_MIN;
	return nsh_sweep_unpinned(state_dir, "userns", min_age, userns_pin_gone, NULL, err);
}

int nshash_netns_foreign_userns(const char *path, struct nshash_error *err)
{
	cleanup_close int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(path, true, &fd, &not_netns);
	if (r < 0)
		return nsh_error_sys(err, r, "open %s", path);
	if (fd < 0)
		return nshash_error_set(err, EINVAL, "%s: not a network namespace (%s)", path, not_netns);
	cleanup_close int owner = ioctl(fd, NS_GET_USERNS);
	struct stat a, b;
	if (owner < 0)
		return nsh_error_sys(err, errno, "%s: its user namespace (NS_GET_USERNS)", path);
	if (fstat(owner, &a) < 0 || stat("/proc/self/ns/user", &b) < 0)
		return nsh_error_sys(err, errno, "%s: its user namespace", path);
	return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

int nshash_userns_open(const char *path, int *fd, bool *callers, struct nshash_error *err)
{
	*fd = -1;
	*callers = false;
	/* O_PATH first: nothing but nsfs is ever opened for real (no device,
	 * no FIFO, no tty); links are followed (/proc/PID/ns/user is one) */
	cleanup_close int pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return nsh_error_sys(err, errno, "user namespace %s", path);
	struct stat st, mine;
	struct statfs sfs;
	if (fstat(pfd, &st) < 0 || fstatfs(pfd, &sfs) < 0)
		return nsh_error_sys(err, errno, "user namespace %s", path);
	if (sfs.f_type != NSFS_MAGIC || !S_ISREG(st.st_mode))
		return nshash_error_set(err, EINVAL, "user namespace %s: not a namespace (%s)", path,
					S_ISREG(st.st_mode) ? "no nsfs pin there" : nshash_file_kind(st.st_mode));
	int nfd = nsh_reopen(pfd, O_RDONLY | O_NONBLOCK);
	if (nfd < 0)
		return nsh_error_sys(err, errno, "user namespace %s", path);
	if (ioctl(nfd, NS_GET_NSTYPE) != CLONE_NEWUSER) {
		close(nfd);
		return nshash_error_set(err, EINVAL, "user namespace %s: a namespace of another type", path);
	}
	if (stat("/proc/self/ns/user", &mine) == 0)
		*callers = mine.st_ino == st.st_ino && mine.st_dev == st.st_dev;
	*fd = nfd;
	return 0;
}
