/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one layer of sysctl file I/O (net.ipv4's numbers here, any
 * /proc/sys/net text for netcfg.c) in the calling thread's network
 * namespace.  An fd on /proc/sys/net stays bound to the netns it was
 * opened in, so these open the file on every call, after any
 * setns/unshare. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "internal.h"

int nsh_sysctl_read(const char *name, long *value)
{
	char path[128];
	snprintf(path, sizeof(path), NSH_SYSCTL_DIR "%s", name);
	return nsh_sysctl_read_at(AT_FDCWD, path, value);
}

int nsh_sysctl_dir_open(void)
{
	int fd = open(NSH_SYSCTL_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int nsh_sysctl_dir_open_in(int proc)
{
	if (proc < 0)
		return nsh_sysctl_dir_open();
	int fd = openat(proc, "sys/net/ipv4/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int nsh_proc_private(void)
{
	cleanup_close int fs = fsopen("proc", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	int m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return m < 0 ? -errno : m;
}

int nsh_proc_round_next(struct nsh_proc_round *r)
{
	if (r->proc >= 0 && r->used >= NSH_PROC_ROUND) {
		close(r->proc);
		r->proc = -1;
	}
	if (r->proc < 0 && !r->failed) {
		r->proc = nsh_proc_private();
		r->failed = r->proc < 0;
		r->used = 0;
	}
	r->used++;
	return r->proc;
}

void nsh_proc_round_end(struct nsh_proc_round *r)
{
	if (r->proc >= 0)
		close(r->proc);
	r->proc = -1;
	r->used = 0;
}

int nsh_sysctl_text(int dirfd, const char *path, char *buf, size_t len)
{
	cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

int nsh_sysctl_put(int dirfd, const char *path, const char *value)
{
	cleanup_close int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(value);
	ssize_t n = write(fd, value, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int nsh_sysctl_read_at(int dirfd, const char *name, long *value)
{
	char buf[64];
	int r = nsh_sysctl_text(dirfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	char *end;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EIO;
	*value = v;
	return 0;
}

int nsh_sysctl_write(const char *name, long value)
{
	char path[128], buf[32];
	snprintf(path, sizeof(path), NSH_SYSCTL_DIR "%s", name);
	snprintf(buf, sizeof(buf), "%ld\n", value);
	return nsh_sysctl_put(AT_FDCWD, path, buf);
}
