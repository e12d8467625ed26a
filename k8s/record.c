/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-cni-install record: the DaemonSet's `nshash record` loop (what
 * nshash-record.timer is on a systemd host; docs/auto.md).  PID 1 of a
 * scratch image: no shell, no cron.  Runs `NSHASH --state-dir DIR record`
 * at start and every --every seconds after each run began, logs a run that
 * fails and goes on, and stops on SIGTERM/SIGINT (after the run in
 * progress, which writes the history with a rename) with status 0. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "k8s.h"

/* One signal from the signalfd: its number, 0 when none was read. */
static unsigned take_signal(int sfd)
{
	struct signalfd_siginfo si;
	return read(sfd, &si, sizeof(si)) == sizeof(si) ? si.ssi_signo : 0;
}

/* One `nshash record`; true when a SIGTERM/SIGINT came while it ran. */
static bool run_once(const struct k8s_opts *o, int sfd, const sigset_t *old)
{
	char *argv[] = {(char *)o->nshash, "--state-dir", (char *)o->state_dir, "record", NULL};
	pid_t pid = fork();
	if (pid < 0) {
		k8s_log("record: fork: %s; again in %u s", strerror(errno), o->every);
		return false;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, old, NULL);
		execv(o->nshash, argv);
		k8s_log("record: run %s: %s (the image's CLI: --nshash names another)", o->nshash, strerror(errno));
		_exit(127);
	}
	bool stop = false;
	int ws = 0;
	for (;;) {
		pid_t r = waitpid(pid, &ws, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		struct pollfd p = {sfd, POLLIN, 0};
		if (poll(&p, 1, -1) > 0) {
			unsigned sig = take_signal(sfd);
			if ((sig == SIGTERM || sig == SIGINT) && !stop) {
				k8s_log("signal %u: stopping after the record in progress", sig);
				stop = true;
			}
		}
	}
	if (WIFEXITED(ws) && WEXITSTATUS(ws) != 0)
		k8s_log("record: %s --state-dir %s record exited with status %d; again in %u s", o->nshash,
			o->state_dir, WEXITSTATUS(ws), o->every);
	else if (WIFSIGNALED(ws))
		k8s_log("record: %s --state-dir %s record killed by signal %d; again in %u s", o->nshash, o->state_dir,
			WTERMSIG(ws), o->every);
	return stop;
}

int k8s_record_loop(const struct k8s_opts *o)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	/* signalfd: PID 1 of a container has no default action for SIGTERM */
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		k8s_log("signalfd: %s", strerror(errno));
		return 1;
	}
	k8s_log("record: %s --state-dir %s record now and every %u s", o->nshash, o->state_dir, o->every);
	for (;;) {
		long long began = nsh_monotonic_ms();
		if (run_once(o, sfd, &old))
			break;
		long long left = began + (long long)o->every * 1000 - nsh_monotonic_ms();
		bool stop = false;
		while (left > 0 && !stop) {
			struct pollfd p = {sfd, POLLIN, 0};
			int n = poll(&p, 1, (int)left);
			if (n < 0 && errno != EINTR) {
				k8s_log("poll: %s", strerror(errno));
				close(sfd);
				return 1;
			}
			unsigned sig;
			while (n > 0 && (sig = take_signal(sfd)))
				if (sig == SIGTERM || sig == SIGINT) {
					k8s_log("signal %u: stopping", sig);
					stop = true;
				}
			left = began + (long long)o->every * 1000 - nsh_monotonic_ms();
		}
		if (stop)
			break;
	}
	close(sfd);
	return 0;
}
