/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Load generator and meter of `make value` (driven by bench/value).
 *
 *   value NOISE_NS SHARED_NS OWN_NS CSV
 *
 * NOISE_NS shares the global tables and gets filled with noisy sockets, in
 * steps, up to the chain lengths of VALUE_UDP_CHAINS / VALUE_TCP_CHAINS
 * (average sockets per bucket of the global table; defaults 0,16,64,128
 * and 0,2,4,8).  SHARED_NS (global tables) and OWN_NS (sized by nshash)
 * are the victims: their sockets are made first, so the noise that comes
 * later sits before them in every chain, as in a long-running service.
 * At each step each workload runs in VALUE_ROUNDS (default 101) rounds of
 * one slice of VALUE_SLICE_MS (default 10) of CPU time per victim,
 * alternating which one goes first; the median slice rate (operations per
 * CPU-second of this thread) of each victim is the result.
 *
 * The workloads (value-load.c: UDP flood, request/response and bind; TCP
 * segments, request/response and connect) run on 1024 flows per victim:
 * 1024 UDP server sockets and 1024 established connections.  Traffic stays
 * on 127.0.0.1 inside these netns.  The noise is held by worker processes
 * of up to RLIMIT_NOFILE sockets each (raised to its hard limit, in this
 * process only). */
#include "value-load.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS_MAX 1001
#define VICTIM_FLOWS 1024

static int home_fd, noise_fd, victim_fd[2]; /* [0] shared, [1] own */
static int rounds = 101, slice_ms = 10;
static struct vl_victim victims[2];

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median slice rate of each victim, slices alternating between them. */
static void measure(const struct vl_workload *w, double out[2])
{
	double rates[2][ROUNDS_MAX];
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			int k = r % 2 ? 1 - j : j;
			vl_enter(victim_fd[k]);
			double t0 = vl_cpu_now();
			long ops = w->run(&victims[k], t0 + slice_ms / 1000.0, NULL);
			rates[k][r] = (double)ops / (vl_cpu_now() - t0);
			vl_enter(home_fd);
		}
	for (int k = 0; k < 2; k++) {
		qsort(rates[k], (size_t)rounds, sizeof(double), cmp_double);
		out[k] = rates[k][rounds / 2];
	}
}

/* ------------------------------------------------------------- main */

static long global_buckets(const char *knob)
{
	char path[128], buf[64];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", knob);
	vl_enter(noise_fd);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	vl_enter(home_fd);
	if (n <= 0)
		vl_die(path);
	close(fd);
	buf[n] = '\0';
	long v = strtol(buf, NULL, 10);
	if (v >= 0) {
		fprintf(stderr, "value: the noisy netns must share the global tables (%s = %ld)\n", knob, v);
		exit(1);
	}
	return -v;
}

/* The TCP noise binds its clients to ports 1024..65535 of many addresses. */
static void noise_port_range(void)
{
	vl_enter(noise_fd);
	int fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1024 65535\n", 11) != 11)
		vl_die("ip_local_port_range of the noisy netns");
	close(fd);
	vl_enter(home_fd);
}

static int parse_list(const char *env, const char *dflt, long *out, int max)
{
	const char *s = getenv(env);
	s = s && *s ? s : dflt;
	int n = 0;
	for (char *end; *s && n < max; s = *end ? end + 1 : end) {
		out[n++] = strtol(s, &end, 10);
		if (end == s || (*end && *end != ',')) {
			fprintf(stderr, "value: %s=\"%s\": expected numbers separated by commas\n", env, getenv(env));
			exit(2);
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: value NOISE_NS SHARED_NS OWN_NS CSV (see bench/value)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("VALUE_ROUNDS"))
		rounds = atoi(getenv("VALUE_ROUNDS"));
	if (getenv("VALUE_SLICE_MS"))
		slice_ms = atoi(getenv("VALUE_SLICE_MS"));
	if (rounds < 1 || rounds > ROUNDS_MAX || slice_ms < 1) {
		fprintf(stderr, "value: VALUE_ROUNDS must be 1..%d and VALUE_SLICE_MS positive\n", ROUNDS_MAX);
		return 2;
	}
	long chains[2][16];
	int nchains[2] = {parse_list("VALUE_UDP_CHAINS", "0,16,64,128", chains[0], 16),
			  parse_list("VALUE_TCP_CHAINS", "0,2,4,8", chains[1], 16)};
	home_fd = vl_open_ns("/proc/thread-self/ns/net");
	noise_fd = vl_open_ns(argv[1]);
	victim_fd[0] = vl_open_ns(argv[2]);
	victim_fd[1] = vl_open_ns(argv[3]);
	long buckets[2] = {global_buckets("udp_hash_entries"), global_buckets("tcp_ehash_entries")};
	FILE *csv = fopen(argv[4], "w");
	if (!csv)
		vl_die(argv[4]);
	fprintf(csv, "proto,metric,noise_sockets,shared,own\n");
	for (int k = 0; k < 2; k++) {
		vl_enter(victim_fd[k]);
		vl_victim_setup(&victims[k], VICTIM_FLOWS);
		vl_enter(home_fd);
	}
	vl_noise_init(noise_fd, home_fd);
	printf("%-4s %-14s %13s %6s %14s %14s %7s\n", "", "metric", "noise_sockets", "chain", "shared", "own",
	       "own/sh");
	for (int p = 0; p < 2; p++) {
		const char *proto = p ? "tcp" : "udp";
		if (p && nchains[p])
			noise_port_range();
		for (int i = 0; i < nchains[p]; i++) {
			long target = chains[p][i] * buckets[p];
			double t0 = vl_now();
			vl_noise_to(p, target);
			fprintf(stderr, "value: %s noise %ld sockets (chain %ld) in %.1f s\n", proto, target,
				chains[p][i], vl_now() - t0);
			for (size_t w = 0; w < vl_nworkloads; w++) {
				if (strcmp(vl_workloads[w].proto, proto) != 0)
					continue;
				double r[2];
				measure(&vl_workloads[w], r);
				fprintf(csv, "%s,%s,%ld,%.0f,%.0f\n", proto, vl_workloads[w].metric, target, r[0], r[1]);
				printf("%-4s %-14s %13ld %6ld %14.0f %14.0f %6.2fx\n", proto, vl_workloads[w].metric,
				       target, chains[p][i], r[0], r[1], r[0] > 0 ? r[1] / r[0] : 0);
			}
		}
		vl_noise_clear();
	}
	return fclose(csv) == 0 ? 0 : 1;
}
