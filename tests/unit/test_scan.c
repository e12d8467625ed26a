/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI ADD's look for a process inside CNI_NETNS, confined to one
 * cgroup subtree (nsh_cgroup_netns_user): the thread lists (cgroup.threads,
 * tasks) of every cgroup below it read, this process's own threads left
 * out, a tid split across reads still found, garbage ignored, the bounds
 * refused as "not proven" (-E2BIG).  A directory tree of the test's own
 * stands for the cgroup file system: the walk reads files, the netns
 * comes from /proc/TID/ns/net of real processes (a child in the test's own
 * netns: found; looked for in another inode: not). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static char root[PATH_MAX];
static int rootfd = -1;
static pid_t child = -1;
static uint64_t own_ino;

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void dir(const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(mkdir(p, 0700), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/nshash-test-scan.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (rootfd < 0 || stat("/proc/self/ns/net", &st) < 0)
		return -1;
	own_ino = st.st_ino;
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	return child > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (rootfd >= 0)
		close(rootfd);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fresh tree for each case. */
static void fresh(void)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/*", root);
	assert_int_equal(system(cmd), 0);
}

static void test_found_below(void **state)
{
	(void)state;
	fresh();
	char text[64];
	/* this process and its thread: never reported */
	snprintf(text, sizeof(text), "%d\n%ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	put("tasks", text);
	dir("a");
	put("a/cgroup.threads", "garbage\n-5\n0\n99999999999999\n");
	dir("a/b");
	snprintf(text, sizeof(text), "%d\n", (int)child);
	put("a/b/cgroup.threads", text);
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), child);
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino + 1), 0); /* another netns: nobody */
}

static void test_own_only(void **state)
{
	(void)state;
	fresh();
	char text[64];
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	put("cgroup.threads", text);
	dir("empty");
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), 0);
}

/* A tid whose line crosses the reader's 4096-byte buffer. */
static void test_split_line(void **state)
{
	(void)state;
	fresh();
	char *text = malloc(8192);
	assert_non_null(text);
	size_t n = 0;
	while (n < 4093)
		n += (size_t)sprintf(text + n, "%s\n", n + 11 < 4093 ? "999999999" : "x");
	n += (size_t)sprintf(text + n, "%d\n", (int)child);
	put("tasks", text);
	free(text);
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), child);
}

static void test_bounds(void **state)
{
	(void)state;
	fresh(); /* more threads than looked at: nothing proven */
	FILE *f;
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/tasks", root);
	assert_non_null(f = fopen(p, "w"));
	for (int i = 0; i <= NSH_CGROUP_MAX_THREADS; i++)
		fprintf(f, "%d\n", (int)getpid());
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), -E2BIG);

	fresh(); /* exactly at the bound: looked at whole */
	assert_non_null(f = fopen(p, "w"));
	for (int i = 1; i < NSH_CGROUP_MAX_THREADS; i++)
		fprintf(f, "%d\n", (int)getpid());
	fprintf(f, "%d\n", (int)child);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), child);

	fresh(); /* deeper than the bound */
	char rel[PATH_MAX] = "";
	for (int i = 0; i <= NSH_CGROUP_MAX_DEPTH; i++) {
		strcat(rel, i ? "/d" : "d");
		dir(rel);
	}
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), -E2BIG);

	fresh(); /* more cgroups than the bound */
	for (int i = 0; i <= NSH_CGROUP_MAX_DIRS; i++) {
		snprintf(rel, sizeof(rel), "c%d", i);
		dir(rel);
	}
	assert_int_equal(nsh_cgroup_netns_user(rootfd, own_ino), -E2BIG);
}

/* nsh_netns_holders_among: only the listed processes are looked at. */
static int note_holder(pid_t pid, unsigned source, const char *entry, void *arg)
{
	(void)source;
	(void)entry;
	pid_t *seen = arg;
	if (seen[0] < 8)
		seen[1 + seen[0]] = pid;
	seen[0]++;
	return 0;
}

static void test_holders_among(void **state)
{
	(void)state;
	pid_t seen[9] = {0};
	pid_t only[] = {child};
	assert_int_equal(nsh_netns_holders_among(own_ino, NSH_SCAN_THREADS, only, 1, note_holder, seen), 0);
	assert_int_equal(seen[0], 1); /* the child, and none of the other processes in this netns */
	assert_int_equal(seen[1], child);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(nsh_netns_holders_among(own_ino, NSH_SCAN_THREADS, only, 0, note_holder, seen), 0);
	assert_int_equal(seen[0], 0); /* an empty list: nobody */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	pid_t gone[] = {dead};
	assert_int_equal(nsh_netns_holders_among(own_ino, NSH_SCAN_THREADS, gone, 1, note_holder, seen), 0);
	assert_int_equal(seen[0], 0); /* a process gone holds nothing */
	memset(seen, 0, sizeof(seen));
	assert_int_equal(nsh_netns_holders(own_ino, NSH_SCAN_THREADS, note_holder, seen), 0);
	assert_true(seen[0] > 1); /* every process: this one's parent too */
}

/* nsh_sockets_in_use_here: the kernel's per-protocol counts of the netns,
 * at once (no grace period after a close). */
static int sockets_child(void)
{
	char kind[32];
	if (unshare(CLONE_NEWNET) < 0)
		return 10;
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || kind[0])
		return 11; /* a new netns: none */
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || kind[0])
		return 12; /* an unbound UDP socket is not in use */
	struct sockaddr_in a = {.sin_family = AF_INET};
	if (bind(u, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 13;
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || strcmp(kind, "UDP") != 0)
		return 14;
	close(u);
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || kind[0])
		return 15; /* gone with its close */
	int n = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || strcmp(kind, "NETLINK") != 0)
		return 16;
	close(n);
	if (nsh_sockets_in_use_here(kind, sizeof(kind)) < 0 || kind[0])
		return 17; /* not counted for a grace period, as sockstat's "used" */
	return 0;
}

static void test_sockets_in_use(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* a netns of its own needs root */
	pid_t p = fork();
	if (p == 0)
		_exit(sockets_child());
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* nsh_engine_fresh_netns: a netns made now by a child of this process
 * (its parent, started before) and owned by the initial user namespace is
 * fresh; one owned by a user namespace of its own is not; the clock part
 * (nsh_pin_recent) at its bounds. */
static int fresh_child(int flags)
{
	if (unshare(flags) < 0)
		return 10;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC); /* its nsfs inode made now */
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 11;
	return nsh_engine_fresh_netns(fd, &st, 0) ? 1 : 0;
}

static void test_engine_fresh(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* a netns of its own needs root */
	int want[2][2] = {{CLONE_NEWNET, 1}, {CLONE_NEWUSER | CLONE_NEWNET, 0}};
	for (int i = 0; i < 2; i++) {
		usleep(30000); /* over a clock tick after this process started */
		pid_t p = fork();
		if (p == 0)
			_exit(fresh_child(want[i][0]));
		int st;
		assert_int_equal(waitpid(p, &st, 0), p);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), want[i][1]);
	}
	struct stat ns = {0};
	time_t now = 1800000000;
	ns.st_ctim.tv_sec = now - NSH_ENGINE_FRESH_S;
	assert_true(nsh_pin_recent(now, &ns));
	ns.st_ctim.tv_sec = now - NSH_ENGINE_FRESH_S - 1;
	assert_false(nsh_pin_recent(now, &ns)); /* older than a start's */
	ns.st_ctim.tv_sec = now + 1;
	assert_true(nsh_pin_recent(now, &ns));
	ns.st_ctim.tv_sec = now + 2;
	assert_false(nsh_pin_recent(now, &ns)); /* from the future: the clock stepped back */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_found_below),
	    cmocka_unit_test(test_own_only),
	    cmocka_unit_test(test_split_line),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_holders_among),
	    cmocka_unit_test(test_sockets_in_use),
	    cmocka_unit_test(test_engine_fresh),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
