/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library benchmark: nshash_netns_create() + nshash_pin_remove() against
 * the bare minimum the kernel needs for the same result — unshare a netns
 * from a private parent whose knobs were set once, bind-mount it on a pin,
 * then umount and unlink — in one process, interleaved so that load and
 * the kernel's asynchronous netns teardown hit both alike.
 *
 *   build/bench/create [-n ITERATIONS] [-w WARMUP] [-s STATE_DIR] [-t TCP] [-u UDP]
 *
 * Run as root.  The process first moves into a private parent netns with
 * *_child_* set to TCP/UDP (the bare way's parent; the host's knobs are never
 * written) and every way runs from there.  Four ways, rotated each round:
 *   nshash          nshash_netns_create + nshash_pin_remove (verify, lo up)
 *   bare            unshare, bind, umount + unlink: the baseline of the target
 *   nshash-lo-down  the same with keep_lo_down
 *   bare-verify-lo  bare plus what the library adds, in the fewest syscalls:
 *                   read both sizes back, SIOCSIFFLAGS lo up
 *   nshash-budget   nshash under a table memory budget (maxTableBytes) it
 *                   never reaches: the ledger's reservation and commit
 *                   (every way records its netns in the ledger; this one
 *                   also reserves first, reading the ledger under the lock)
 * Prints "WAY median_us p99_us mean_us n" per way, then the ratios of
 * medians and of p99s ("ratio" is nshash / bare); every nshash-made netns
 * is checked to have exactly TCP/UDP ("exact OK/ALL"). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nshash.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	fprintf(stderr, "bench/create: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_knob(const char *name, unsigned value)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	FILE *f = fopen(path, "w");
	if (!f || fprintf(f, "%u\n", value) < 0 || fclose(f) != 0)
		die(path);
}

static long read_knob_here(const char *name)
{
	char path[128], buf[32];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		die(path);
	close(fd);
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* The same work as the library, done with the fewest syscalls: read both
 * table sizes back and bring lo up with one ioctl. */
static void verify_and_lo_up(struct nshash_sizes want)
{
	if (read_knob_here("tcp_ehash_entries") != (long)want.tcp ||
	    read_knob_here("udp_hash_entries") != (long)want.udp) {
		errno = EUCLEAN;
		die("bare: sizes");
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {.ifr_name = "lo"};
	ifr.ifr_flags = IFF_UP;
	if (s < 0 || ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("bare: lo up");
	close(s);
}

/* The bare way: the thread is in `parent`, whose knobs are already set.
 * With `want`, it also verifies and brings lo up. */
static void bare_once(int parent, const char *pin, const struct nshash_sizes *want)
{
	if (unshare(CLONE_NEWNET) < 0)
		die("unshare");
	if (want)
		verify_and_lo_up(*want);
	int fd = open(pin, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		die(pin);
	close(fd);
	if (mount("/proc/thread-self/ns/net", pin, "none", MS_BIND, NULL) < 0)
		die("bind mount");
	if (setns(parent, CLONE_NEWNET) < 0)
		die("setns back to the parent");
	if (umount2(pin, MNT_DETACH) < 0 || unlink(pin) < 0)
		die("umount/unlink");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct stats {
	double median, p99, mean;
};

static struct stats stats_of(double *v, int n)
{
	struct stats s = {0, 0, 0};
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	for (int i = 0; i < n; i++)
		s.mean += v[i];
	s.mean /= n;
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	int k = (int)(0.99 * n + 0.5);
	s.p99 = v[k >= n ? n - 1 : k];
	return s;
}

int main(int argc, char **argv)
{
	int iterations = 2000, warmup = 100, opt;
	unsigned tcp = 4096, udp = 4096;
	const char *state_dir = NULL;
	while ((opt = getopt(argc, argv, "n:w:s:t:u:")) != -1) {
		switch (opt) {
		case 'n':
			iterations = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 's':
			state_dir = optarg;
			break;
		case 't':
			tcp = (unsigned)atoi(optarg);
			break;
		case 'u':
			udp = (unsigned)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-n ITERATIONS] [-w WARMUP] [-s STATE_DIR] [-t TCP] [-u UDP]\n",
				argv[0]);
			return 2;
		}
	}
	if (iterations < 10 || warmup < 0) {
		fprintf(stderr, "bench/create: -n must be >= 10, -w >= 0\n");
		return 2;
	}
	char dir[] = "/run/nshash-bench-XXXXXX";
	if (!mkdtemp(dir))
		die("mkdtemp");
	char pin[64], own_state[96];
	snprintf(pin, sizeof(pin), "%s/pin", dir);
	snprintf(own_state, sizeof(own_state), "%s/state", dir);
	if (!state_dir)
		state_dir = own_state;

	/* The private parent: both ways start here. */
	if (unshare(CLONE_NEWNET) < 0)
		die("unshare the private parent");
	write_knob("tcp_child_ehash_entries", tcp);
	write_knob("udp_child_hash_entries", udp);
	int parent = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (parent < 0)
		die("open the parent netns");

	struct nshash_create_opts opts = {
	    .sizes = {tcp, udp}, .strategy = NSHASH_STRATEGY_TEMPLATE, .state_dir = state_dir};
	struct nshash_sizes want = nshash_sizes_effective(opts.sizes);
	struct nshash_create_opts lo_down = opts, budget = opts;
	lo_down.keep_lo_down = true;
	budget.max_table_bytes = UINT64_MAX / 2;
	enum { LIB, BARE, LIB_LO_DOWN, BARE_SAME_WORK, LIB_BUDGET, NWAYS };
	static const char *const names[NWAYS] = {"nshash", "bare", "nshash-lo-down", "bare-verify-lo", "nshash-budget"};
	double *v[NWAYS];
	for (int w = 0; w < NWAYS; w++)
		if (!(v[w] = calloc((size_t)iterations, sizeof(double))))
			die("calloc");
	int wrong = 0;
	for (int i = -warmup; i < iterations; i++) {
		/* Rotate the order, so no way always follows the same one's teardown. */
		for (int k = 0; k < NWAYS; k++) {
			int w = (k + (i < 0 ? -i : i)) % NWAYS;
			double t0 = now_us(), t1;
			if (w == LIB || w == LIB_LO_DOWN || w == LIB_BUDGET) {
				struct nshash_error err = {0};
				struct nshash_netns_info info;
				const struct nshash_create_opts *o = w == LIB	       ? &opts
								     : w == LIB_BUDGET ? &budget
										       : &lo_down;
				if (nshash_netns_create(o, pin, &info, &err) < 0 || nshash_pin_remove(pin, &err) < 0) {
					fprintf(stderr, "bench/create: %s\n", err.msg);
					return 1;
				}
				t1 = now_us();
				if (info.tcp_entries != (long)want.tcp || info.udp_entries != (long)want.udp)
					wrong++;
			} else {
				bare_once(parent, pin, w == BARE ? NULL : &want);
				t1 = now_us();
			}
			if (i >= 0)
				v[w][i] = t1 - t0;
		}
	}
	struct stats st[NWAYS];
	for (int w = 0; w < NWAYS; w++) {
		st[w] = stats_of(v[w], iterations);
		printf("%s %.1f %.1f %.1f %d\n", names[w], st[w].median, st[w].p99, st[w].mean, iterations);
	}
	printf("ratio %.3f %.3f\n", st[LIB].median / st[BARE].median, st[LIB].p99 / st[BARE].p99);
	printf("ratio-same-work %.3f %.3f\n", st[LIB].median / st[BARE_SAME_WORK].median,
	       st[LIB].p99 / st[BARE_SAME_WORK].p99);
	printf("ratio-lo-down %.3f %.3f\n", st[LIB_LO_DOWN].median / st[BARE].median,
	       st[LIB_LO_DOWN].p99 / st[BARE].p99);
	printf("ratio-budget %.3f %.3f\n", st[LIB_BUDGET].median / st[LIB].median, st[LIB_BUDGET].p99 / st[LIB].p99);
	printf("exact %d/%d\n", 3 * (iterations + warmup) - wrong, 3 * (iterations + warmup));

	/* Leave nothing: the template and the temporary dir. */
	char tpl[160];
	snprintf(tpl, sizeof(tpl), "%s/templates/tcp%u-udp%u", state_dir, want.tcp, want.udp);
	struct nshash_error err = {0};
	if (state_dir == own_state) {
		nshash_pin_remove(tpl, &err);
		char p[200];
		snprintf(p, sizeof(p), "%s.used", tpl);
		unlink(p);
		snprintf(p, sizeof(p), "%s/templates", state_dir);
		rmdir(p);
		snprintf(p, sizeof(p), "%s/lock", state_dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/ledger", state_dir);
		unlink(p);
		rmdir(state_dir);
	}
	rmdir(dir);
	return wrong ? 1 : 0;
}
