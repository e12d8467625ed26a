/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One process's /proc entries: its comm, its stat line, a thread's process.  (What holds a
 * netns, over all of /proc, is scan.c.) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* /proc/PID/FILE's first len - 1 bytes into buf, NUL-terminated: its
 * length, or -errno. */
static ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

size_t nsh_proc_comm(pid_t pid, char *buf, size_t len)
{
	if (len == 0)
		return 0;
	ssize_t n = proc_read(pid, "comm", buf, len);
	if (n <= 0)
		n = 0;
	buf[n] = '\0';
	n = (ssize_t)strcspn(buf, "\n");
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
			buf[i] = '?';
	return (size_t)n;
}

int nsh_proc_stat(pid_t pid, struct nsh_proc_stat *st)
{
	char buf[1024];
	memset(st, 0, sizeof(*st));
	ssize_t n = proc_read(pid, "stat", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* "PID (COMM) S PPID ...": COMM may hold spaces and ')', so fields
	 * count from its last ')'; field 3 (the state) follows it. */
	const char *p = strrchr(buf, ')');
	int ppid = 0;
	unsigned long long start = 0;
	if (!p || sscanf(p + 1, " %c %d", &st->state, &ppid) != 2)
		return -EINVAL;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -EINVAL;
	st->ppid = (pid_t)ppid;
	st->start = start;
	return 0;
}

char *nsh_mountinfo_field(char *s)
{
	char *end = strchr(s, ' ');
	if (end)
		*end = '\0';
	char *w = s;
	for (char *r = s; *r; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = '\0';
	return s;
}

pid_t nsh_proc_tgid(pid_t tid)
{
	char buf[512];
	ssize_t n = proc_read(tid, "status", buf, sizeof(buf));
	if (n < 0)
		return (pid_t)n;
	/* "Name:" may hold anything but a newline: Tgid starts a line */
	const char *t = strstr(buf, "\nTgid:");
	long v = t ? strtol(t + 6, NULL, 10) : 0;
	return v > 0 && v <= INT32_MAX ? (pid_t)v : -EINVAL;
}
