/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running the real runtime under nshash-runtime: in place (exec), reading a
 * sized config through a bind mount that exists only in the wrapper's
 * private mount namespace, or as a child with signals passed on and its
 * exit status kept. */
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

int nsh_private_enter(const char *run_dir, struct nsh_mnt_saved *saved, struct nshash_error *err)
{
	saved->mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	saved->cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (saved->mnt < 0 || saved->cwd < 0)
		return nsh_error_sys(err, errno, "private mount namespace: save the current one");
	if (unshare(CLONE_NEWNS) < 0)
		return nsh_error_sys(err, errno, "unshare a mount namespace");
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		return nsh_error_sys(err, errno, "make the mounts slaves of the host's");
	if (mount("nshash", run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
		return nsh_error_sys(err, errno, "mount a private tmpfs on %s", run_dir);
	return 0;
}

int nsh_private_leave(struct nsh_mnt_saved *saved, struct nshash_error *err)
{
	/* setns into a mount namespace moves root and cwd to its root */
	if (setns(saved->mnt, CLONE_NEWNS) < 0 || fchdir(saved->cwd) < 0)
		return nsh_error_sys(err, errno, "return to the host's mount namespace");
	close(saved->mnt);
	close(saved->cwd);
	return 0;
}

int nsh_private_config(const char *run_dir, const char *config, size_t len, const char *target,
		       const struct stat *read, struct nshash_error *err)
{
	char file[4200], fdpath[64];
	struct stat st;
	int fd;

	/* The file the config was read from, opened once without following a
	 * symbolic link, and mounted over through that fd: nothing in the
	 * bundle is resolved twice. */
	int tfd = open(target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0 || fstat(tfd, &st) < 0)
		return nsh_error_sys(err, errno, "bind the sized config over %s", target);
	if (!S_ISREG(st.st_mode) || st.st_dev != read->st_dev || st.st_ino != read->st_ino)
		return close(tfd), nshash_error_set(err, ESTALE,
					"bind the sized config over %s: it is no longer the file that was read (%s now): "
					"something replaced it meanwhile; try again",
					target, nshash_file_kind(st.st_mode));
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", tfd);

	snprintf(file, sizeof(file), "%s/config.json", run_dir);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int r = 0;
	if (fd < 0 || nsh_write_all(fd, config, len) < 0)
		r = nsh_error_sys(err, errno, "write %s", file);
	/* the user's file's owner and mode: a container that reads its own
	 * config (runtime-tools' runtimetest reads /config.json) as a root
	 * that is not the host's (its own user namespace) still can */
	if (r == 0 && (fchown(fd, st.st_uid, st.st_gid) < 0 || fchmod(fd, st.st_mode & 07777) < 0))
		r = nsh_error_sys(err, errno, "give %s the owner and mode of %s", file, target);
	if (fd >= 0)
		close(fd);
	if (r == 0 && mount(file, fdpath, NULL, MS_BIND, NULL) < 0)
		r = nsh_error_sys(err, errno, "bind the sized config over %s", target);
	close(tfd);
	return r;
}

int nsh_runtime_run(const struct nsh_runtime_child *c, int *status, struct nshash_error *err)
{
	sigset_t set, old;
	pid_t pid;

	/* Blocked across the fork: a signal now is handled once child_pid is
	 * known (passed on), or in the child after its dispositions are reset. */
	forwarded_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid == 0) {
		child_signals_reset(&old);
		execv(c->runtime, c->argv);
		_exit(127);
	}
	int fork_errno = errno;
	if (pid > 0)
		child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return nsh_error_sys(err, fork_errno, "start %s: fork", c->runtime);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			child_pid = 0;
			return nsh_error_sys(err, errno, "wait for %s", c->runtime);
		}
	}
	child_pid = 0;
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
	return nsh_error_sys(err, errno, "exec %.900s", runtime);
}
