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
 * Workloads (one thread; loopback delivers within the sending call, so a
 * slice measures the whole path, send and receive lookups included):
 *   udp flood    packets/s: bursts of 32 datagrams, each to the next of
 *                1024 server sockets, drained
 *   udp rr       round trips/s: request to the next server socket, reply
 *   udp bind     binds/s: socket, bind to port 0, close
 *   tcp segments segments/s: one-byte writes, two on each of 1024
 *                established connections in turn
 *   tcp rr       round trips/s over the same connections
 *   tcp connect  connections/s: connect, accept, close with RST
 * Traffic stays on 127.0.0.1 inside these netns.  The noise is held by
 * worker processes of up to RLIMIT_NOFILE sockets each (raised to its hard
 * limit, in this process only). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS_MAX	1001
#define VICTIM_SOCKETS	1024
#define VICTIM_CONNS	1024
#define NOISE_LISTENERS 128
#define UDP_NOISE_PORTS 50000
#define UDP_NOISE_PORT0 10000

static int home_fd, noise_fd, victim_fd[2]; /* [0] shared, [1] own */
static int rounds = 101, slice_ms = 10;

static void die(const char *what)
{
	fprintf(stderr, "value: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void enter(int fd)
{
	if (setns(fd, CLONE_NEWNET) < 0)
		die("setns");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: what a slice lasts and what a rate is per.  The
 * machine may be shared: wall time would count the time the victim waited
 * for a CPU.  Loopback delivery runs in the sender's softirq context, which
 * (without CONFIG_IRQ_TIME_ACCOUNTING) is charged to this thread too. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct sockaddr_in addr(uint32_t host_order_ip, uint16_t port)
{
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(host_order_ip)};
	return a;
}

static int udp_bound(uint32_t ip, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket udp");
	struct sockaddr_in a = addr(ip, port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind udp");
	return fd;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("getsockname");
	return ntohs(a.sin_port);
}

static void set_int(int fd, int level, int opt, int v)
{
	if (setsockopt(fd, level, opt, &v, sizeof(v)) < 0)
		die("setsockopt");
}

static void linger0(int fd)
{
	struct linger l = {1, 0};
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
		die("SO_LINGER");
}

static int tcp_listener(uint16_t port, int backlog)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket tcp");
	set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	struct sockaddr_in a = addr(INADDR_LOOPBACK, port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, backlog) < 0)
		die("listen");
	return fd;
}

/* An established pair through `listener` (port): client, server ends.  A
 * client address other than 0 is bound first (ip, port): the noise avoids
 * the connect-time port search that way. */
static void tcp_pair(int listener, uint16_t port, int *cli, int *srv, int linger, struct sockaddr_in *from)
{
	*cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*cli < 0)
		die("socket tcp");
	if (linger)
		linger0(*cli);
	if (from && bind(*cli, (struct sockaddr *)from, sizeof(*from)) < 0)
		die("bind tcp client");
	struct sockaddr_in a = addr(INADDR_LOOPBACK, port);
	if (connect(*cli, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	*srv = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (*srv < 0)
		die("accept");
	if (linger)
		linger0(*srv);
}

/* ------------------------------------------------------------- victims */

/* A victim serves many flows, as a real service does: its lookups land in
 * many different chains, so the noise in them is not all in the CPU's
 * caches (a workload on one socket walks one chain, always warm). */
struct victim {
	int udp[VICTIM_SOCKETS]; /* servers: flood and request/response targets */
	struct sockaddr_in udp_addr[VICTIM_SOCKETS];
	int client;
	struct sockaddr_in client_addr;
	int listener;
	uint16_t listen_port;
	int cli[VICTIM_CONNS], srv[VICTIM_CONNS];
	unsigned next; /* round robin over the sockets, kept between slices */
};
static struct victim victims[2];

static void victim_setup(struct victim *v, int nsfd)
{
	enter(nsfd);
	for (int i = 0; i < VICTIM_SOCKETS; i++) {
		v->udp[i] = udp_bound(INADDR_LOOPBACK, 0);
		v->udp_addr[i] = addr(INADDR_LOOPBACK, port_of(v->udp[i]));
	}
	v->client = udp_bound(INADDR_LOOPBACK, 0);
	v->client_addr = addr(INADDR_LOOPBACK, port_of(v->client));
	v->listener = tcp_listener(0, 128);
	v->listen_port = port_of(v->listener);
	for (int i = 0; i < VICTIM_CONNS; i++) {
		tcp_pair(v->listener, v->listen_port, &v->cli[i], &v->srv[i], 0, NULL);
		set_int(v->cli[i], IPPROTO_TCP, TCP_NODELAY, 1);
		set_int(v->srv[i], IPPROTO_TCP, TCP_NODELAY, 1);
	}
	enter(home_fd);
}

/* Each workload runs until `end` (this thread's CPU time) and returns
 * operations done. */
static long w_udp_flood(struct victim *v, double end)
{
	char payload[64] = {0}, rbuf[64];
	struct iovec siov = {payload, sizeof(payload)};
	struct mmsghdr smsg[32];
	long got = 0;
	while (cpu_now() < end) {
		unsigned first = v->next;
		for (int i = 0; i < 32; i++) {
			struct sockaddr_in *to = &v->udp_addr[(first + (unsigned)i) % VICTIM_SOCKETS];
			smsg[i] = (struct mmsghdr){
			    .msg_hdr = {.msg_name = to, .msg_namelen = sizeof(*to), .msg_iov = &siov, .msg_iovlen = 1}};
		}
		v->next = (first + 32) % VICTIM_SOCKETS;
		if (sendmmsg(v->client, smsg, 32, 0) != 32)
			die("sendmmsg");
		for (int i = 0; i < 32; i++)
			if (recv(v->udp[(first + (unsigned)i) % VICTIM_SOCKETS], rbuf, sizeof(rbuf), MSG_DONTWAIT) > 0)
				got++;
	}
	return got;
}

static long w_udp_rr(struct victim *v, double end)
{
	char buf[64] = {0};
	long n = 0;
	while (cpu_now() < end) {
		for (int i = 0; i < 16; i++) {
			unsigned k = v->next;
			v->next = (k + 1) % VICTIM_SOCKETS;
			if (sendto(v->client, buf, 32, 0, (struct sockaddr *)&v->udp_addr[k], sizeof(v->udp_addr[k])) <
				0 ||
			    recv(v->udp[k], buf, sizeof(buf), 0) < 0 ||
			    sendto(v->udp[k], buf, 32, 0, (struct sockaddr *)&v->client_addr, sizeof(v->client_addr)) <
				0 ||
			    recv(v->client, buf, sizeof(buf), 0) < 0)
				die("udp rr");
		}
		n += 16;
	}
	return n;
}

static long w_udp_bind(struct victim *v, double end)
{
	(void)v;
	long n = 0;
	while (cpu_now() < end) {
		for (int i = 0; i < 16; i++)
			close(udp_bound(INADDR_LOOPBACK, 0));
		n += 16;
	}
	return n;
}

static long w_tcp_rr(struct victim *v, double end)
{
	char b = 'x';
	long n = 0;
	while (cpu_now() < end) {
		for (int i = 0; i < 16; i++) {
			unsigned k = v->next;
			v->next = (k + 1) % VICTIM_CONNS;
			if (write(v->cli[k], &b, 1) != 1 || read(v->srv[k], &b, 1) != 1 ||
			    write(v->srv[k], &b, 1) != 1 || read(v->cli[k], &b, 1) != 1)
				die("tcp rr");
		}
		n += 16;
	}
	return n;
}

/* One-byte segments (TCP_NODELAY), two per connection in turn, drained:
 * one established-hash lookup per segment at the receiver. */
static long w_tcp_segments(struct victim *v, double end)
{
	char b[64] = {0};
	long n = 0;
	while (cpu_now() < end) {
		for (int i = 0; i < 16; i++) {
			unsigned k = v->next;
			v->next = (k + 1) % VICTIM_CONNS;
			if (write(v->cli[k], b, 1) != 1 || write(v->cli[k], b, 1) != 1)
				die("tcp segments");
			for (int got = 0; got < 2;) {
				ssize_t r = read(v->srv[k], b, sizeof(b));
				if (r <= 0)
					die("tcp segments");
				got += (int)r;
			}
		}
		n += 32;
	}
	return n;
}

static long w_tcp_connect(struct victim *v, double end)
{
	long n = 0;
	while (cpu_now() < end) {
		for (int i = 0; i < 4; i++) {
			int c, s;
			tcp_pair(v->listener, v->listen_port, &c, &s, 1, NULL);
			close(c);
			close(s);
		}
		n += 4;
	}
	return n;
}

struct workload {
	const char *proto, *metric;
	long (*run)(struct victim *, double);
};
static const struct workload workloads[] = {
    {"udp", "flood_pps", w_udp_flood},	       {"udp", "rr_per_s", w_udp_rr}, {"udp", "bind_per_s", w_udp_bind},
    {"tcp", "segments_per_s", w_tcp_segments}, {"tcp", "rr_per_s", w_tcp_rr}, {"tcp", "connect_per_s", w_tcp_connect},
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median slice rate of each victim, slices alternating between them. */
static void measure(const struct workload *w, double out[2])
{
	double rates[2][ROUNDS_MAX];
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			int k = r % 2 ? 1 - j : j;
			enter(victim_fd[k]);
			double t0 = cpu_now();
			long ops = w->run(&victims[k], t0 + slice_ms / 1000.0);
			rates[k][r] = (double)ops / (cpu_now() - t0);
			enter(home_fd);
		}
	for (int k = 0; k < 2; k++) {
		qsort(rates[k], (size_t)rounds, sizeof(double), cmp_double);
		out[k] = rates[k][rounds / 2];
	}
}

/* ------------------------------------------------------------- noise */

/* The noise lives in worker processes, each holding as many sockets as its
 * RLIMIT_NOFILE allows (no CAP_SYS_RESOURCE needed, fs.nr_open untouched);
 * a worker exits, closing them, when killed or when this process dies. */
static pid_t workers[4096];
static int nworkers;
static long nnoise, per_worker;
static int noise_listeners[NOISE_LISTENERS];

/* UDP socket i: a distinct (address, port), ports 10000..59999 on
 * 127.0.0.1, 127.0.0.2, ...: both the port hash and the address+port hash
 * fill evenly. */
static void udp_noise(long first, long count)
{
	for (long i = first; i < first + count; i++)
		udp_bound(INADDR_LOOPBACK + (uint32_t)(i / UDP_NOISE_PORTS),
			  (uint16_t)(UDP_NOISE_PORT0 + i % UDP_NOISE_PORTS));
}

/* TCP: established pairs (two ehash entries each) over 128 listeners on
 * 127.0.0.1, clients bound to distinct (127.1.x.y, port). */
static void tcp_noise(long first, long count)
{
	for (long i = first; i < first + count; i += 2) {
		long k = i / 2;
		int j = (int)(k % NOISE_LISTENERS), c, s;
		struct sockaddr_in from = addr((127u << 24 | 1u << 16) + (uint32_t)(k / UDP_NOISE_PORTS),
					       (uint16_t)(UDP_NOISE_PORT0 + k % UDP_NOISE_PORTS));
		tcp_pair(noise_listeners[j], (uint16_t)(20000 + j), &c, &s, 1, &from);
	}
}

static void noise_to(int tcp, long target)
{
	if (tcp && !noise_listeners[0]) {
		enter(noise_fd);
		int fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "1024 65535\n", 11) != 11)
			die("ip_local_port_range of the noisy netns");
		close(fd);
		for (int i = 0; i < NOISE_LISTENERS; i++)
			noise_listeners[i] = tcp_listener((uint16_t)(20000 + i), 4096);
		enter(home_fd);
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	while (nnoise < target) {
		/* One worker per CPU at a time. */
		int ready[64], batch = 0;
		while (nnoise < target && batch < online && batch < 64) {
			long count = target - nnoise < per_worker ? target - nnoise : per_worker;
			int pfd[2];
			if (nworkers == (int)(sizeof(workers) / sizeof(workers[0])) || pipe2(pfd, O_CLOEXEC) < 0)
				die("too many noise workers");
			pid_t pid = fork();
			if (pid < 0)
				die("fork");
			if (pid == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				if (getppid() == 1)
					_exit(1);
				enter(noise_fd);
				(tcp ? tcp_noise : udp_noise)(nnoise, count);
				if (write(pfd[1], "k", 1) != 1)
					_exit(1);
				for (;;)
					pause();
			}
			close(pfd[1]);
			ready[batch++] = pfd[0];
			workers[nworkers++] = pid;
			nnoise += count;
		}
		for (int i = 0; i < batch; i++) {
			char c;
			if (read(ready[i], &c, 1) != 1) {
				fprintf(stderr, "value: a noise worker failed\n");
				exit(1);
			}
			close(ready[i]);
		}
	}
}

/* Kill the workers and go on: the kernel tears their sockets down in the
 * background (a minute for millions of them on a busy machine), which
 * costs both victims alike; SIGCHLD is ignored, so nothing is left. */
static void noise_clear(void)
{
	for (int i = 0; i < nworkers; i++)
		kill(workers[i], SIGKILL);
	nworkers = 0;
	nnoise = 0;
	for (int i = 0; i < NOISE_LISTENERS && noise_listeners[i]; i++) {
		close(noise_listeners[i]);
		noise_listeners[i] = 0;
	}
}

/* ------------------------------------------------------------- main */

static long global_buckets(const char *knob)
{
	char path[128], buf[64];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", knob);
	enter(noise_fd);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	enter(home_fd);
	if (n <= 0)
		die(path);
	close(fd);
	buf[n] = '\0';
	long v = strtol(buf, NULL, 10);
	if (v >= 0) {
		fprintf(stderr, "value: the noisy netns must share the global tables (%s = %ld)\n", knob, v);
		exit(1);
	}
	return -v;
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	if (!d)
		die("/proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
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

static int open_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: value NOISE_NS SHARED_NS OWN_NS CSV (see bench/value)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGCHLD, SIG_IGN);
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
	home_fd = open_ns("/proc/thread-self/ns/net");
	noise_fd = open_ns(argv[1]);
	victim_fd[0] = open_ns(argv[2]);
	victim_fd[1] = open_ns(argv[3]);
	long buckets[2] = {global_buckets("udp_hash_entries"), global_buckets("tcp_ehash_entries")};
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("setrlimit");
	long limit = (long)rl.rlim_cur;
	FILE *csv = fopen(argv[4], "w");
	if (!csv)
		die(argv[4]);
	fprintf(csv, "proto,metric,noise_sockets,shared,own\n");
	for (int k = 0; k < 2; k++)
		victim_setup(&victims[k], victim_fd[k]);
	/* Workers inherit this process's fds (victims, then the noise
	 * listeners): the rest of the limit is theirs. */
	per_worker = (limit - count_fds() - NOISE_LISTENERS - 64) & ~1L;
	if (per_worker > 65536)
		per_worker = 65536;
	if (per_worker < 1024) {
		fprintf(stderr, "value: RLIMIT_NOFILE %ld is too small\n", limit);
		return 1;
	}
	printf("%-4s %-14s %13s %6s %14s %14s %7s\n", "", "metric", "noise_sockets", "chain", "shared", "own",
	       "own/sh");
	for (int p = 0; p < 2; p++) {
		const char *proto = p ? "tcp" : "udp";
		for (int i = 0; i < nchains[p]; i++) {
			long target = chains[p][i] * buckets[p];
			double t0 = now();
			noise_to(p, target);
			fprintf(stderr, "value: %s noise %ld sockets (chain %ld) in %.1f s\n", proto, target,
				chains[p][i], now() - t0);
			for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
				if (strcmp(workloads[w].proto, proto) != 0)
					continue;
				double r[2];
				measure(&workloads[w], r);
				fprintf(csv, "%s,%s,%ld,%.0f,%.0f\n", proto, workloads[w].metric, target, r[0], r[1]);
				printf("%-4s %-14s %13ld %6ld %14.0f %14.0f %6.2fx\n", proto, workloads[w].metric,
				       target, chains[p][i], r[0], r[1], r[0] > 0 ? r[1] / r[0] : 0);
			}
		}
		noise_clear();
	}
	return fclose(csv) == 0 ? 0 : 1;
}
