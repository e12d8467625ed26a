/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Refilling the spares (nshash_spare_fill) off the caller's path: in a
 * detached child that holds none of the caller's files (an engine reads the
 * hook's, wrapper's or plugin's output to its end) and ends when the spares
 * are made; only after a start that used its netns (a refused or failed
 * one refills nothing).  Where spares do not apply (spares 0, a budget) it
 * still drops those left idle, at most once per idle time. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* Spares do not apply, but some may be left (made before a budget, or
 * with another policy): whether their idle time may have passed, by the
 * spares dir's time (a take, a spare made, a marker, or the last such look
 * touches it).  One stat. */
static bool expiry_due(const struct nshash_create_opts *opts)
{
	char dir[PATH_MAX], sdbuf[PATH_MAX];
	struct stat st;
	int64_t idle = opts->spare_max_idle ? opts->spare_max_idle : NSHASH_DEFAULT_SPARE_MAX_IDLE;
	if (opts->strategy != NSHASH_STRATEGY_TEMPLATE ||
	    (size_t)snprintf(dir, sizeof(dir), "%s/spares", nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf))) >=
		sizeof(dir) ||
	    stat(dir, &st) < 0)
		return false;
	return time(NULL) - st.st_mtime >= idle;
}

void nsh_spares_work(const struct nshash_create_opts *opts)
{
	struct nshash_error err = {0};
	if (nshash_spares_apply(opts)) {
		if (nshash_spare_fill(opts, &err) < 0)
			nsh_log(NSH_LOG_WARN, NULL, "%s (not fatal: the next container is made without one)", err.msg);
		return;
	}
	if (!expiry_due(opts))
		return;
	char dir[PATH_MAX], sdbuf[PATH_MAX];
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	int64_t idle = opts->spare_max_idle ? opts->spare_max_idle : NSHASH_DEFAULT_SPARE_MAX_IDLE;
	if (nshash_spare_expire(state_dir, idle, &err) < 0)
		nsh_log(NSH_LOG_WARN, NULL, "%s (not fatal)", err.msg);
	/* looked: the next look is due an idle time from now */
	snprintf(dir, sizeof(dir), "%s/spares", state_dir);
	if (utimensat(AT_FDCWD, dir, NULL, AT_SYMLINK_NOFOLLOW) < 0) { /* gone: nothing to look at */
	}
}

/* The child: detached, niced; waits for the go (a byte on `go`, -1: none
 * to wait for), then does the spares' work. */
static pid_t refill_fork(const struct nshash_create_opts *opts, int go)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid; /* the parent; -1: no spare this time */
	nsh_detach(&go, 1); /* go < 0: none to keep */
	nsh_background();
	char byte;
	if (go >= 0 && read(go, &byte, 1) != 1)
		_exit(0); /* the caller did not use its netns: nothing to refill */
	nsh_spares_work(opts);
	_exit(0);
}

pid_t nsh_spares_refill(const struct nshash_create_opts *opts)
{
	if (!nshash_spares_apply(opts) && !expiry_due(opts)) /* no fork for nothing */
		return 0;
	return refill_fork(opts, -1);
}

int nsh_spares_refill_gated(const struct nshash_create_opts *opts)
{
	int p[2];
	if ((!nshash_spares_apply(opts) && !expiry_due(opts)) || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = refill_fork(opts, p[0]);
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -1;
	}
	return p[1];
}

void nsh_spares_refill_go(int go)
{
	if (go < 0)
		return;
	if (write(go, "1", 1) != 1) { /* the child is gone: no refill */
	}
	close(go);
}
