/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scale benchmark of the table ledger and orphan reclaim, as root:
 *
 *   build/bench/reclaim [-n PINS] [-r REPEAT]
 *
 * Makes PINS (default 1000) container pins under a private state dir's
 * pins/ (each in the ledger), held alive by a child process's open fds, then
 * measures, each REPEAT (default 5) times, median in ms:
 *   reclaim-held    nshash_reclaim with every pin held (the usual case: a
 *                   full look at every pin, the scan stops when all are found)
 *   reclaim-orphans nshash_reclaim --dry-run with the holder gone (every pin
 *                   an orphan: the scan must read all of /proc, fds included)
 *   reclaim-skipped a call within the interval (one stat)
 *   create          nshash_netns_create + pin_remove, no budget, PINS records
 *   create-budget   the same under a budget it never reaches: reads and sums
 *                   the PINS-record ledger under the lock every time
 * and prints "ratio-budget" = create-budget / create (interleaved). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "nshash.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const struct nshash_error *err)
{
	fprintf(stderr, "bench/reclaim: %s: %s\n", what, err ? err->msg : strerror(errno));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The pins' claims an hour old: a pin's age is the mtime of the file under
 * its mount (seen here in a non-recursive clone of the pins dir), and the
 * reclaim takes none younger than NSHASH_STALE_AGE_MIN. */
static void age_claims(const char *state, int pins)
{
	char dir[256], name[32];
	snprintf(dir, sizeof(dir), "%s/pins", state);
	int tree = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		die("open_tree", NULL);
	struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
	for (int i = 0; i < pins; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		if (utimensat(tree, name, old, AT_SYMLINK_NOFOLLOW) < 0)
			die("age a claim", NULL);
	}
	close(tree);
}

static double time_reclaim(const char *state, int64_t interval, bool dry_run, size_t *removed)
{
	struct nshash_reclaim_opts o = {.state_dir = state, .interval = interval, .dry_run = dry_run};
	struct nshash_reclaim_report rep;
	struct nshash_error err = {0};
	double t0 = now_ms();
	if (nshash_reclaim(&o, &rep, &err) < 0)
		die("reclaim", &err);
	*removed = rep.orphans_removed;
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int pins = 1000, repeat = 5, opt;
	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			pins = atoi(optarg);
		else if (opt == 'r')
			repeat = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-n PINS] [-r REPEAT]\n", argv[0]);
			return 2;
		}
	}
	if (pins < 1 || repeat < 1)
		return 2;
	char dir[] = "/run/nshash-bench-reclaim-XXXXXX", path[256], state[128];
	if (!mkdtemp(dir))
		die("mkdtemp", NULL);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/pins", state);
	struct nshash_error err = {0};
	struct nshash_create_opts copts = {.sizes = {4096, 1024}, .state_dir = state};
	int *fds = calloc((size_t)pins, sizeof(int));
	if (!fds || mkdir(state, 0700) < 0 || mkdir(path, 0700) < 0)
		die("setup", NULL);
	double t0 = now_ms();
	for (int i = 0; i < pins; i++) {
		snprintf(path, sizeof(path), "%s/pins/p%d", state, i);
		if (nshash_netns_create(&copts, path, NULL, &err) < 0)
			die("create", &err);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
	}
	printf("setup: %d pins in %.0f ms\n", pins, now_ms() - t0);
	age_claims(state, pins);
	pid_t holder = fork();
	if (holder == 0) {
		pause();
		_exit(0);
	}
	for (int i = 0; i < pins; i++)
		close(fds[i]);
	double *v = calloc((size_t)repeat, sizeof(double));
	size_t removed = 0;
	for (int r = 0; r < repeat; r++)
		v[r] = time_reclaim(state, 0, false, &removed);
	printf("reclaim-held %.2f ms (%d pins, %zu removed)\n", median(v, repeat), pins, removed);
	for (int r = 0; r < repeat; r++)
		v[r] = time_reclaim(state, 3600, false, &removed) * 1000;
	printf("reclaim-skipped %.1f us\n", median(v, repeat));

	/* Creation with PINS records in the ledger, with and without a budget. */
	struct nshash_create_opts budget = copts;
	budget.max_table_bytes = UINT64_MAX / 2;
	int n = 200;
	double *a = calloc((size_t)n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
	snprintf(path, sizeof(path), "%s/extra", dir);
	for (int i = 0; i < 2 * n; i++) {
		const struct nshash_create_opts *o = i % 2 ? &budget : &copts;
		double s = now_ms();
		if (nshash_netns_create(o, path, NULL, &err) < 0 || nshash_pin_remove(path, &err) < 0)
			die("create", &err);
		(i % 2 ? b : a)[i / 2] = (now_ms() - s) * 1000;
	}
	double ma = median(a, n), mb = median(b, n);
	printf("create %.1f us, create-budget %.1f us (ledger of %d live records), ratio-budget %.3f\n", ma, mb, pins,
	       mb / ma);

	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	for (int r = 0; r < repeat; r++)
		v[r] = time_reclaim(state, 0, true, &removed);
	printf("reclaim-orphans %.2f ms (%d pins, %zu orphans found, dry run)\n", median(v, repeat), pins, removed);
	t0 = now_ms();
	time_reclaim(state, 0, false, &removed);
	printf("reclaim-remove %.0f ms (%zu orphans removed)\n", now_ms() - t0, removed);
	struct nshash_table_usage u;
	nshash_table_usage(state, true, &u, &err);
	printf("left: %zu netns in the ledger\n", u.netns);
	/* Leave nothing. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "for t in %s/templates/*; do [ -f \"$t\" ] && umount -l \"$t\" 2>/dev/null; done; rm -rf %s", state,
		 dir);
	return system(cmd) == 0 && u.netns == 0 ? 0 : 1;
}
