/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The load generator and meter of `make value` (bench/value.c) and `make
 * value-node` (bench/value-node.c): a victim's sockets and workloads, one
 * slice of CPU time at a time, and the noise held by worker processes.
 * Errors end the process with "PROG: what: why" on stderr (vl_prog). */
#ifndef NSH_VALUE_LOAD_H
#define NSH_VALUE_LOAD_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

extern const char *vl_prog; /* the name error messages start with */

_Noreturn void vl_die(const char *what);
void vl_enter(int nsfd);  /* setns(CLONE_NEWNET) or die */
double vl_now(void);	  /* CLOCK_MONOTONIC, seconds */
double vl_cpu_now(void);  /* this thread's CPU time, seconds */
int vl_open_ns(const char *path);
long vl_count_fds(void);

/* A victim serves many flows, as a real service does: its lookups land in
 * many different chains, so the noise in them is not all in the CPU's
 * caches (a workload on one socket walks one chain, always warm). */
struct vl_victim {
	int flows;		     /* UDP server sockets, and established connections */
	int *udp;		     /* servers: flood and request/response targets */
	struct sockaddr_in *udp_addr;
	int client;
	struct sockaddr_in client_addr;
	int listener;
	uint16_t listen_port;
	int *cli, *srv;
	unsigned next; /* round robin over the flows, kept between slices */
};
/* The victim's sockets, in the calling thread's netns, on 127.0.0.1. */
void vl_victim_setup(struct vl_victim *v, int flows);

/* Per-operation CPU time of a request/response workload, in ns. */
struct vl_lat {
	uint32_t *ns;
	size_t n, cap;
};

/* A workload runs until `end` (this thread's CPU time) and returns the
 * operations done; with `lat`, the request/response workloads also time
 * every round trip (one more clock read each). */
struct vl_workload {
	const char *proto, *metric;
	long (*run)(struct vl_victim *v, double end, struct vl_lat *lat);
};
extern const struct vl_workload vl_workloads[];
extern const size_t vl_nworkloads;
const struct vl_workload *vl_workload(const char *proto, const char *metric);

/* The noise: sockets held by worker processes, each within RLIMIT_NOFILE
 * (raised to its hard limit in this process only).  vl_noise_init after
 * this process's own sockets are made: the rest of the limit is the
 * workers'.  nsfd: the netns the workers enter (-1: the caller's own), and
 * home_fd the caller's, to come back to.  vl_noise_to grows the UDP noise
 * (tcp 0: bound sockets) or the TCP noise (tcp 1: established pairs, both
 * ends counted) to `target` sockets; vl_noise_clear kills the workers. */
void vl_noise_init(int nsfd, int home_fd);
void vl_noise_to(int tcp, long target);
void vl_noise_clear(void);

#endif
