/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running the real runtime under nshash-runtime: as a child, with signals
 * passed on and its exit status kept, optionally reading a sized config in
 * place of the user's file through a bind mount that exists only in the
 * child's private mount namespace. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
#define N_FORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t noted;
static volatile pid_t child_pid;

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
	(void)uctx;
	if (child_pid <= 0) {
		if (sig != SIGWINCH)
			noted = sig;
		return;
	}
	/* A terminal's ^C (or ^\, a hangup) goes to the whole foreground
	 * process group: the runtime got it already. */
	if (info && info->si_code == SI_KERNEL)
		return;
	kill(child_pid, sig);
}

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaddset(set, forwarded[i]);
}

void nsh_signals_catch(void)
{
	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaction(forwarded[i], &sa, NULL);
}

int nsh_signal_noted(void)
{
	return noted;
}

/* In the child, before exec: default dispositions, then the mask of the
 * wrapper's caller (a signal pending now acts on the child). */
static void child_signals_reset(const sigset_t *old)
{
	for (size_t i = 0; i < N_FORWARDED; i++)
		signal(forwarded[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* Child: the private mount namespace with the sized config over the
 * target.  0 or the failing step's errno (*step names it). */
static int child_deliver(const struct nsh_runtime_child *c, const char **step)
{
	char file[4200];
	int fd;

	*step = "unshare a mount namespace";
	if (unshare(CLONE_NEWNS) < 0)
		return errno;
	/* slave: the host's mounts and unmounts (pins) still reach us, ours
	 * never reach the host */
	*step = "make the mounts slaves of the host's";
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		return errno;
	*step = "mount a private tmpfs";
	if (mount("nshash", c->run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
		return errno;
	snprintf(file, sizeof(file), "%s/config.json", c->run_dir);
	*step = "write the sized config";
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno;
	if (nsh_write_all(fd, c->config, c->config_len) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		return e;
	}
	close(fd);
	*step = "bind it over the runtime's config";
	if (mount(file, c->target, NULL, MS_BIND, NULL) < 0)
		return errno;
	return 0;
}

struct child_failure {
	int errnum;
	char step[120];
};

int nsh_runtime_run(const struct nsh_runtime_child *c, int *status, struct nshash_error *err)
{
	sigset_t set, old;
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return nshash_error_set(err, errno, "start %s: pipe: %s", c->runtime, strerror(errno));
	/* Blocked across the fork: a signal now is handled once child_pid is
	 * known (passed on), or in the child after its dispositions are reset. */
	forwarded_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid == 0) {
		struct child_failure f = {0};
		const char *step = "exec";
		child_signals_reset(&old);
		close(pipefd[0]);
		f.errnum = c->config ? child_deliver(c, &step) : 0;
		if (f.errnum == 0) {
			execv(c->runtime, c->argv);
			f.errnum = errno;
			step = "exec";
		}
		snprintf(f.step, sizeof(f.step), "%s", step);
		if (write(pipefd[1], &f, sizeof(f)) < 0) {
			/* the parent sees the exit status alone */
		}
		_exit(127);
	}
	int fork_errno = errno;
	if (pid > 0)
		child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		return nshash_error_set(err, fork_errno, "start %s: fork: %s", c->runtime, strerror(fork_errno));
	}
	struct child_failure f = {0};
	ssize_t n;
	do
		n = read(pipefd[0], &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			child_pid = 0;
			return nshash_error_set(err, errno, "wait for %s: %s", c->runtime, strerror(errno));
		}
	}
	child_pid = 0;
	if (n == (ssize_t)sizeof(f) && f.errnum) {
		f.step[sizeof(f.step) - 1] = '\0';
		if (!strcmp(f.step, "exec"))
			return nshash_error_set(err, f.errnum, "exec %s: %s", c->runtime, strerror(f.errnum));
		return nshash_error_set(err, f.errnum, "hand the sized config to %s: %s (%s over %s): %s", c->runtime,
					f.step, c->run_dir, c->target, strerror(f.errnum));
	}
	return 0;
}

void nsh_exit_as(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		sigset_t set;
		struct rlimit no_core = {0, 0};
		/* die of the same signal, without a core file of our own */
		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int nsh_runtime_exec(const char *runtime, char **argv, struct nshash_error *err)
{
	/* From here on a signal acts as it would on the runtime itself; one
	 * noted before (while the config was read) ends us the same way. */
	int sig = nsh_signal_noted();

	for (size_t i = 0; i < N_FORWARDED; i++)
		signal(forwarded[i], SIG_DFL);
	if (sig)
		raise(sig);
	execv(runtime, argv);
	return nshash_error_set(err, errno, "exec %.900s: %s", runtime, strerror(errno));
}
