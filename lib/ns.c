/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Entering and leaving network namespaces with the calling thread only, and
 * reading what a netns has. */
#include <ctype.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "internal.h"

int nsh_fd_is_netns(int fd)
{
	int type = ioctl(fd, NS_GET_NSTYPE);
	return type == CLONE_NEWNET;
}

const char *nshash_file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	case S_IFLNK:
		return "a symbolic link";
	}
	return "a special file";
}

/* Skip "DIGITS/" at *p; false when it is not there. */
static bool skip_number_dir(const char **p)
{
	const char *q = *p;
	if (!isdigit((unsigned char)*q))
		return false;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q != '/')
		return false;
	*p = q + 1;
	return true;
}

bool nsh_is_proc_netns_link(const char *path)
{
	/* /proc/PID/ns/net, /proc/self/..., /proc/PID/task/TID/ns/net */
	if (strncmp(path, "/proc/", 6) != 0)
		return false;
	const char *p = path + 6;
	if (strncmp(p, "self/", 5) == 0)
		p += 5;
	else if (strncmp(p, "thread-self/", 12) == 0)
		p += 12;
	else if (!skip_number_dir(&p))
		return false;
	else if (strncmp(p, "task/", 5) == 0) {
		p += 5;
		if (!skip_number_dir(&p))
			return false;
	}
	return strcmp(p, "ns/net") == 0;
}

int nsh_reopen(int pathfd, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pathfd);
	return open(p, flags | O_CLOEXEC | O_NOCTTY);
}

int nsh_path_open_netns(const char *path, bool follow, int *fd, const char **not_netns)
{
	*fd = -1;
	*not_netns = NULL;
	/* O_PATH: no driver's open(), no blocking on a FIFO, no tty; the
	 * kernel's own /proc/.../ns/net links are the only ones followed
	 * unless the caller asks (and nothing but nsfs is ever opened). */
	if (!follow && nsh_is_proc_netns_link(path))
		follow = true;
	cleanup_close int pfd = open(path, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (pfd < 0)
		return -errno;
	struct stat st;
	struct statfs sfs;
	if (fstat(pfd, &st) < 0 || fstatfs(pfd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != NSFS_MAGIC || !S_ISREG(st.st_mode)) {
		*not_netns = S_ISREG(st.st_mode) ? "no nsfs pin there" : nshash_file_kind(st.st_mode);
		return 0;
	}
	int nfd = nsh_reopen(pfd, O_RDONLY | O_NONBLOCK);
	if (nfd < 0)
		return -errno;
	if (!nsh_fd_is_netns(nfd)) {
		close(nfd);
		*not_netns = "a namespace of another type";
		return 0;
	}
	*fd = nfd;
	return 0;
}

int nsh_netns_open_current(int *fd, struct nshash_error *err)
{
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return nsh_error_sys(err, errno, "open /proc/thread-self/ns/net");
	return 0;
}

int nsh_netns_enter(int nsfd, const char *what, struct nshash_error *err)
{
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return nshash_error_set(err, errno, "enter network namespace %s: %s%s", what, strerror(errno),
					errno == EPERM
					    ? " (needs CAP_SYS_ADMIN over the user namespace that owns it: run "
					      "as root, or use a netns your own user namespace made)"
					    : "");
	return 0;
}

int nsh_netns_return(int home, struct nshash_error *err)
{
	if (setns(home, CLONE_NEWNET) < 0)
		return nshash_error_set(err, errno,
					"return to the caller's network namespace: %s (this thread is now in another "
					"network namespace; do not reuse it)",
					strerror(errno));
	return 0;
}

static void read_or(int dirfd, const char *name, long *out, long fallback)
{
	if (nsh_sysctl_read_at(dirfd, name, out) < 0)
		*out = fallback;
}

int nsh_read_info_here(int proc, struct nshash_netns_info *info, bool full, struct nshash_error *err)
{
	struct nshash_netns_info i = {
	    .tcp_child = -1, .udp_child = -1, .tcp_max_tw_buckets = -1, .tcp_max_syn_backlog = -1};
	cleanup_close int dir = nsh_sysctl_dir_open_in(proc);
	if (dir < 0)
		return nshash_error_set(err, -dir, "open " NSH_SYSCTL_DIR ": %s", strerror(-dir));
	int r = nsh_sysctl_read_at(dir, NSH_TCP_ENTRIES, &i.tcp_entries);
	if (r < 0 && r != -ENOENT)
		return nshash_error_set(err, r, "read net.ipv4." NSH_TCP_ENTRIES ": %s", strerror(-r));
	r = nsh_sysctl_read_at(dir, NSH_UDP_ENTRIES, &i.udp_entries);
	if (r < 0 && r != -ENOENT)
		return nshash_error_set(err, r, "read net.ipv4." NSH_UDP_ENTRIES ": %s", strerror(-r));
	if (full) {
		read_or(dir, NSH_TCP_CHILD, &i.tcp_child, -1);
		read_or(dir, NSH_UDP_CHILD, &i.udp_child, -1);
		read_or(dir, "tcp_max_tw_buckets", &i.tcp_max_tw_buckets, -1);
		read_or(dir, "tcp_max_syn_backlog", &i.tcp_max_syn_backlog, -1);
		struct stat st;
		if (stat("/proc/thread-self/ns/net", &st) == 0)
			i.inode = st.st_ino;
	}
	*info = i;
	return 0;
}

struct nshash_sizes nshash_info_sizes(const struct nshash_netns_info *info)
{
	return (struct nshash_sizes){info->tcp_entries > 0 ? (uint32_t)info->tcp_entries : 0,
				     info->udp_entries > 0 ? (uint32_t)info->udp_entries : 0};
}

struct inspect_req {
	int nsfd;
	bool read; /* false: only reopen it (no /proc/sys lookup) */
	int proc;  /* the proc root to read through (nsh_sysctl_dir_open_in) */
};

static int inspect_here(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	const struct inspect_req *q = arg;
	int r = nsh_netns_enter(q->nsfd, q->read ? "to inspect it" : "to reopen it", err);
	if (r < 0 || (q->read && (r = nsh_read_info_here(q->proc, info, true, err)) < 0) || !fd)
		return r;
	/* the netns opened anew from inside: through no mount but nsfs's own */
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? nsh_error_sys(err, errno, "open /proc/thread-self/ns/net") : 0;
}

static int inspect_fd(int nsfd, int proc, int *reopened, struct nshash_netns_info *info, struct nshash_error *err)
{
	if (!nsh_fd_is_netns(nsfd))
		return nshash_error_set(err, EINVAL, "%s fd %d: not a network namespace", info ? "inspect" : "reopen",
					nsfd);
	struct nshash_netns_info unread;
	struct inspect_req q = {nsfd, info != NULL, proc};
	if (!info)
		info = &unread;
	cleanup_close int home = -1;
	int r = nsh_netns_open_current(&home, err);
	if (r < 0)
		return r;
	if (nsh_can_return(home) == -EPERM) /* in a user namespace: see helper.c */
		return nsh_in_child(inspect_here, &q, NSH_CHILD_TIMEOUT_S, reopened, info, err);
	r = inspect_here(&q, reopened, info, err);
	int r2 = nsh_netns_return(home, err);
	if (r2 < 0 && reopened && *reopened >= 0) {
		close(*reopened);
		*reopened = -1;
	}
	return r2 < 0 ? r2 : r;
}

int nshash_inspect_fd(int nsfd, struct nshash_netns_info *info, struct nshash_error *err)
{
	return inspect_fd(nsfd, -1, NULL, info, err);
}

int nsh_inspect_reopen(int nsfd, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	*fd = -1;
	return inspect_fd(nsfd, -1, fd, info, err);
}

static int inspect_open(const char *path, const char *shown, int proc, struct nshash_netns_info *info,
			struct nshash_error *err)
{
	cleanup_close int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(path, false, &fd, &not_netns);
	if (r < 0)
		return nsh_error_sys(err, r, "inspect %s", shown);
	if (not_netns)
		return nshash_error_set(err, EINVAL, "inspect %s: not a network namespace (%s)", shown, not_netns);
	r = inspect_fd(fd, proc, NULL, info, err);
	if (r < 0)
		return nshash_error_prefix(err, "inspect %s", shown);
	return 0;
}

int nshash_inspect_path(const char *path, struct nshash_netns_info *info, struct nshash_error *err)
{
	return inspect_open(path, path, -1, info, err);
}

int nsh_inspect_path_in(const char *path, int proc, struct nshash_netns_info *info, struct nshash_error *err)
{
	return inspect_open(path, path, proc, info, err);
}

int nsh_inspect_fd_in(int nsfd, int proc, struct nshash_netns_info *info, struct nshash_error *err)
{
	return inspect_fd(nsfd, proc, NULL, info, err);
}

int nshash_inspect_pid(pid_t pid, struct nshash_netns_info *info, struct nshash_error *err)
{
	char path[64], shown[64];
	if (pid <= 0)
		return nshash_error_set(err, EINVAL, "inspect pid %d: not a valid pid", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	snprintf(shown, sizeof(shown), "pid %d", (int)pid);
	return inspect_open(path, shown, -1, info, err);
}

static void describe(long entries, char *buf, size_t len)
{
	if (entries > 0)
		snprintf(buf, len, "own table of %ld", entries);
	else if (entries < 0)
		snprintf(buf, len, "the shared table (%ld)", -entries);
	else
		snprintf(buf, len, "no such knob");
}

int nshash_verify(const struct nshash_netns_info *info, struct nshash_sizes requested, const char *what,
		  struct nshash_error *err)
{
	struct nshash_sizes eff = nshash_sizes_effective(requested);
	for (int i = 0; i < 2; i++) {
		enum nshash_proto proto = i ? NSHASH_UDP : NSHASH_TCP;
		long have = i ? info->udp_entries : info->tcp_entries;
		uint32_t want = i ? eff.udp : eff.tcp, asked = i ? requested.udp : requested.tcp;
		char got[64];
		describe(have, got, sizeof(got));
		if (want == 0) {
			if (have > 0)
				return nshash_error_set(err, NSHASH_E_MISMATCH,
							"%s: %s should share the global table, but has %s", what,
							nshash_proto_name(proto), got);
			continue;
		}
		if (have == (long)want)
			continue;
		if (have < 0)
			return nshash_error_set(err, NSHASH_E_FALLBACK,
						"%s: %s size %u requested (effective %u), kernel gave %s "
						"(allocation failed?)",
						what, nshash_proto_name(proto), asked, want, got);
		return nshash_error_set(err, NSHASH_E_MISMATCH, "%s: %s size %u requested (effective %u), has %s", what,
					nshash_proto_name(proto), asked, want, got);
	}
	return 0;
}

int nsh_unshare_net(const char *what, struct nshash_error *err)
{
	if (unshare(CLONE_NEWNET) < 0) {
		int e = errno;
		return nshash_error_set(err, e, "unshare a network namespace (%s): %s%s", what, strerror(e),
					e == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
	}
	return 0;
}

#ifndef NS_GET_ID
#define NS_GET_ID _IOR(NSIO, 13, __u64)
#endif
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

int nsh_netns_cookie(int nsfd, uint64_t *cookie, struct nshash_error *err)
{
	__u64 v = 0;
	cleanup_close int home = -1;
	*cookie = 0;
	int r = nsh_netns_open_current(&home, err);
	if (r < 0)
		return r;
	r = nsh_netns_enter(nsfd, "to read its cookie", err);
	if (r < 0)
		return r;
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int e = s < 0 ? errno : 0;
	socklen_t len = sizeof(v);
	if (s >= 0 && getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, &v, &len) < 0)
		e = errno;
	if (s >= 0)
		close(s);
	r = nsh_netns_return(home, err);
	if (r < 0)
		return r;
	if (e == ENOPROTOOPT || (!e && !v))
		return nshash_error_set(err, EOPNOTSUPP, "netns id: the kernel has neither NS_GET_ID nor SO_NETNS_COOKIE");
	if (e)
		return nsh_error_sys(err, e, "netns id: SO_NETNS_COOKIE");
	*cookie = v;
	return 0;
}

uint64_t nsh_ns_get_id(int nsfd)
{
	__u64 v = 0;
	return ioctl(nsfd, NS_GET_ID, &v) == 0 ? v : 0;
}

int nshash_netns_id(int nsfd, uint64_t *id, struct nshash_error *err)
{
	*id = 0;
	if (!nsh_fd_is_netns(nsfd))
		return nshash_error_set(err, EINVAL, "netns id of fd %d: not a network namespace", nsfd);
	uint64_t v = nsh_ns_get_id(nsfd);
	if (v) {
		*id = v;
		return 0;
	}
	if (errno != ENOTTY && errno != EINVAL)
		return nsh_error_sys(err, errno, "netns id: NS_GET_ID");
	/* before 6.18: the cookie of a socket made inside (the same number) */
	return nsh_netns_cookie(nsfd, id, err);
}
