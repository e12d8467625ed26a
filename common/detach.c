/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A child that outlives its caller: detached from the caller's files (an
 * engine reads the hook's or plugin's output to its end), its session and
 * its current directory, and behind the containers being started. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <syslog.h>
#include <unistd.h>

#include "common.h"

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

void nsh_detach(int *keep, size_t n)
{
	/* above stdio, which /dev/null is about to take over */
	for (size_t i = 0; i < n; i++)
		if (keep[i] >= 0 && keep[i] <= STDERR_FILENO) {
			int moved = fcntl(keep[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
			close(keep[i]);
			keep[i] = moved;
		}
	/* syslog's socket goes too: disconnected properly, it is opened again
	 * at the next message (never a send on an fd number reused since) */
	closelog();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	/* every fd above stdio but the kept ones: the gaps between them */
	int sorted[8] = {0};
	size_t k = 0;
	for (size_t i = 0; i < n && k < sizeof(sorted) / sizeof(sorted[0]); i++)
		if (keep[i] > STDERR_FILENO)
			sorted[k++] = keep[i];
	qsort(sorted, k, sizeof(sorted[0]), cmp_int);
	unsigned from = STDERR_FILENO + 1;
	for (size_t i = 0; i < k; i++) {
		if ((unsigned)sorted[i] > from)
			close_range(from, (unsigned)sorted[i] - 1, 0);
		from = (unsigned)sorted[i] + 1;
	}
	close_range(from, ~0U, 0);
	setsid();
	if (chdir("/") < 0) { /* keep no directory of the caller busy */
	}
}

void nsh_background(void)
{
	/* behind the containers being started, not in their way (a nice
	 * level, not SCHED_IDLE: the creation takes the rtnl lock, and a
	 * holder that never runs would stall every netlink user) */
	if (setpriority(PRIO_PROCESS, 0, 10) < 0) { /* not fatal */
	}
}
