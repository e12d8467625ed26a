/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One process's /proc entries: its comm and its stat line.  (What holds a
 * netns, over all of /proc, is scan.c.) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t nsh_proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	if (len == 0)
		return 0;
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
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
	char path[64], buf[1024];
	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
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
