/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsh_in_child, lib's forked helper for netns work the caller could not
 * come back from: the helper's result, message and fd come back; a helper
 * that never answers (stopped, or asleep on a lock a thread of the caller
 * held at the fork) is an error after the timeout, killed and reaped, not
 * a hung hook; one still running is waited for; one that dies without an
 * answer says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

/* No child of this process is left, not even a zombie. */
static void no_child_left(void)
{
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static int hand_back_own_netns(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)arg;
	(void)err;
	info->tcp_entries = 4096;
	*fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? -errno : 0;
}

static void answers_with_fd_and_info(void **state)
{
	(void)state;
	int fd = -1;
	struct nshash_netns_info info = {0};
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(hand_back_own_netns, NULL, 5, &fd, &info, &err), 0);
	assert_true(fd >= 0);
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat("/proc/self/ns/net", &b), 0);
	assert_true(a.st_ino == b.st_ino); /* the helper's netns is the caller's */
	assert_int_equal(info.tcp_entries, 4096);
	close(fd);
	no_child_left();
}

static int refuse(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)fd;
	(void)info;
	return nshash_error_set(err, EINVAL, "%s: refused here", (const char *)arg);
}

static void its_error_comes_back(void **state)
{
	(void)state;
	int fd = -1;
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(refuse, "tcp=3", 5, &fd, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "tcp=3: refused here");
	assert_int_equal(fd, -1);
	no_child_left();
}

static int never_answer(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)arg;
	(void)fd;
	(void)info;
	(void)err;
	for (;;)
		pause();
	return 0;
}

static void silent_helper_is_killed_after_timeout(void **state)
{
	(void)state;
	int fd = -1;
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(never_answer, NULL, 1, &fd, NULL, &err), -ETIMEDOUT);
	assert_string_equal(err.msg, "helper process: no answer in 1 s");
	assert_int_equal(fd, -1);
	no_child_left();
}

/* A signal every 100 ms, 40 of them (4 s), each interrupting the wait. */
static volatile sig_atomic_t storm_signals;
static void storm_tick(int sig)
{
	(void)sig;
	if (++storm_signals >= 40) {
		struct itimerval off = {0};
		setitimer(ITIMER_REAL, &off, NULL);
	}
}

static void timeout_holds_under_a_signal_storm(void **state)
{
	(void)state;
	struct sigaction sa = {.sa_handler = storm_tick}, old; /* no SA_RESTART */
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	storm_signals = 0;
	struct itimerval every = {.it_interval = {.tv_usec = 100000}, .it_value = {.tv_usec = 100000}};
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	struct nshash_error err = {0};
	int r = nsh_in_child(never_answer, NULL, 1, NULL, NULL, &err);
	int seen = storm_signals;
	struct itimerval off = {0};
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_int_equal(r, -ETIMEDOUT);
	assert_string_equal(err.msg, "helper process: no answer in 1 s");
	/* The 1 s counted from the call: the storm (4 s) was still on.  A
	 * wait started again at each signal would end only after it. */
	assert_true(seen < 40);
	no_child_left();
}

static int stop_self(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)arg;
	(void)fd;
	(void)info;
	(void)err;
	raise(SIGSTOP); /* a stopped helper ends only by SIGKILL */
	return 0;
}

static void stopped_helper_is_killed_after_timeout(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(stop_self, NULL, 1, NULL, NULL, &err), -ETIMEDOUT);
	assert_string_equal(err.msg, "helper process: no answer in 1 s");
	no_child_left();
}

static int spin_then_answer(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)arg;
	(void)fd;
	(void)err;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do /* running (state R) past the 1 s timeout, as a slow creation is in the kernel */
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 2500);
	info->udp_entries = 1024;
	return 0;
}

static void busy_helper_is_waited_for(void **state)
{
	(void)state;
	struct nshash_netns_info info = {0};
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(spin_then_answer, NULL, 1, NULL, &info, &err), 0);
	assert_int_equal(info.udp_entries, 1024);
	no_child_left();
}

static int die(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)arg;
	(void)fd;
	(void)info;
	(void)err;
	_exit(3);
}

static void helper_dying_without_answer(void **state)
{
	(void)state;
	struct nshash_error err = {0};
	assert_int_equal(nsh_in_child(die, NULL, 5, NULL, NULL, &err), -EPROTO);
	assert_string_equal(err.msg, "helper process: died without an answer");
	no_child_left();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(answers_with_fd_and_info),
	    cmocka_unit_test(its_error_comes_back),
	    cmocka_unit_test(silent_helper_is_killed_after_timeout),
	    cmocka_unit_test(stopped_helper_is_killed_after_timeout),
	    cmocka_unit_test(timeout_holds_under_a_signal_storm),
	    cmocka_unit_test(busy_helper_is_waited_for),
	    cmocka_unit_test(helper_dying_without_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
