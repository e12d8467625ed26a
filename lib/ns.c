/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Entering and leaving network namespaces with the calling thread only, and
 * reading what a netns has. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "internal.h"

int nsh_fd_is_netns(int fd)
{
	int type = ioctl(fd, NS_GET_NSTYPE);
	return type == CLONE_NEWNET;
}

int nsh_netns_open_current(int *fd, struct nshash_error *err)
{
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return nshash_error_set(err, errno, "open /proc/thread-self/ns/net: %s", strerror(errno));
	return 0;
}

int nsh_netns_enter(int nsfd, const char *what, struct nshash_error *err)
{
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return nshash_error_set(err, errno, "enter network namespace %s: %s", what, strerror(errno));
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

static void read_or(const char *name, long *out, long fallback)
{
	if (nsh_sysctl_read(name, out) < 0)
		*out = fallback;
}

int nsh_read_info_here(struct nshash_netns_info *info, bool full, struct nshash_error *err)
{
	struct nshash_netns_info i = {.tcp_child = -1, .udp_child = -1, .tcp_max_tw_buckets = -1,
				      .tcp_max_syn_backlog = -1};
	int r = nsh_sysctl_read(NSH_TCP_ENTRIES, &i.tcp_entries);
	if (r < 0 && r != -ENOENT)
		return nshash_error_set(err, r, "read net.ipv4." NSH_TCP_ENTRIES ": %s", strerror(-r));
	r = nsh_sysctl_read(NSH_UDP_ENTRIES, &i.udp_entries);
	if (r < 0 && r != -ENOENT)
		return nshash_error_set(err, r, "read net.ipv4." NSH_UDP_ENTRIES ": %s", strerror(-r));
	if (full) {
		read_or(NSH_TCP_CHILD, &i.tcp_child, -1);
		read_or(NSH_UDP_CHILD, &i.udp_child, -1);
		read_or("tcp_max_tw_buckets", &i.tcp_max_tw_buckets, -1);
		read_or("tcp_max_syn_backlog", &i.tcp_max_syn_backlog, -1);
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

int nshash_inspect_fd(int nsfd, struct nshash_netns_info *info, struct nshash_error *err)
{
	if (!nsh_fd_is_netns(nsfd))
		return nshash_error_set(err, EINVAL, "inspect fd %d: not a network namespace", nsfd);
	cleanup_close int home = -1;
	int r = nsh_netns_open_current(&home, err);
	if (r < 0)
		return r;
	r = nsh_netns_enter(nsfd, "to inspect it", err);
	if (r < 0)
		return r;
	r = nsh_read_info_here(info, true, err);
	int r2 = nsh_netns_return(home, err);
	return r2 < 0 ? r2 : r;
}

static int inspect_open(const char *path, const char *shown, struct nshash_netns_info *info,
			struct nshash_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "inspect %s: %s", shown, strerror(errno));
	if (!nsh_fd_is_netns(fd))
		return nshash_error_set(err, EINVAL, "inspect %s: not a network namespace (no nsfs pin there)", shown);
	int r = nshash_inspect_fd(fd, info, err);
	if (r < 0)
		return nshash_error_prefix(err, "inspect %s", shown);
	return 0;
}

int nshash_inspect_path(const char *path, struct nshash_netns_info *info, struct nshash_error *err)
{
	return inspect_open(path, path, info, err);
}

int nshash_inspect_pid(pid_t pid, struct nshash_netns_info *info, struct nshash_error *err)
{
	char path[64], shown[64];
	if (pid <= 0)
		return nshash_error_set(err, EINVAL, "inspect pid %d: not a valid pid", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	snprintf(shown, sizeof(shown), "pid %d", (int)pid);
	return inspect_open(path, shown, info, err);
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

pid_t nsh_netns_user(dev_t dev, ino_t ino)
{
	/* Every netns is an inode of the one nsfs, and readlink of
	 * /proc/PID/ns/net names it ("net:[INO]") for ~40 % less than a stat,
	 * which makes the kernel set up an nsfs dentry per process. */
	char want[64], got[64];
	struct stat self_ns;
	bool by_name = stat("/proc/self/ns/net", &self_ns) == 0 && self_ns.st_dev == dev;
	int want_len = snprintf(want, sizeof(want), "net:[%lu]", (unsigned long)ino);
	DIR *proc = opendir("/proc");
	if (!proc)
		return -errno;
	pid_t self = getpid(), found = 0;
	struct dirent *de;
	while (!found && (de = readdir(proc))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		char path[64];
		struct stat st;
		snprintf(path, sizeof(path), "%d/ns/net", (int)pid);
		if (pid == self)
			continue;
		if (by_name) {
			ssize_t n = readlinkat(dirfd(proc), path, got, sizeof(got));
			if (n == want_len && memcmp(got, want, (size_t)n) == 0)
				found = pid;
		} else if (fstatat(dirfd(proc), path, &st, 0) == 0 && st.st_ino == ino && st.st_dev == dev) {
			found = pid;
		}
	}
	closedir(proc);
	return found;
}
