/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The load generator and meter shared by `make value` and `make
 * value-node` (value-load.h).
 *
 * Workloads (one thread; loopback delivers within the sending call, so a
 * slice measures the whole path, send and receive lookups included):
 *   udp flood    packets/s: bursts of 32 datagrams, each to the next of
 *                the victim's server sockets, drained
 *   udp rr       round trips/s: request to the next server socket, reply
 *   udp bind     binds/s: socket, bind to port 0, close
 *   tcp segments segments/s: one-byte writes, two on each of the
 *                established connections in turn
 *   tcp rr       round trips/s over the same connections
 *   tcp connect  connections/s: connect, accept, close with RST
 * Traffic stays on 127.0.0.1 inside the netns. */
#include "value-load.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NOISE_LISTENERS 128
#define UDP_NOISE_PORTS 50000
#define UDP_NOISE_PORT0 10000

const char *vl_prog = "value";

void vl_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", vl_prog, what, strerror(errno));
	exit(1);
}

void vl_enter(int fd)
{
	if (setns(fd, CLONE_NEWNET) < 0)
		vl_die("setns");
}

double vl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: what a slice lasts and what a rate is per.  The
 * machine may be shared: wall time would count the time the victim waited
 * for a CPU.  Loopback delivery runs in the sender's softirq context, which
 * (without CONFIG_IRQ_TIME_ACCOUNTING) is charged to this thread too. */
double vl_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int vl_open_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		vl_die(path);
	return fd;
}

long vl_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	if (!d)
		vl_die("/proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
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
		vl_die("socket udp");
	struct sockaddr_in a = addr(ip, port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		vl_die("bind udp");
	return fd;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		vl_die("getsockname");
	return ntohs(a.sin_port);
}

static void set_int(int fd, int level, int opt, int v)
{
	if (setsockopt(fd, level, opt, &v, sizeof(v)) < 0)
		vl_die("setsockopt");
}

static void linger0(int fd)
{
	struct linger l = {1, 0};
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
		vl_die("SO_LINGER");
}

static int tcp_listener(uint16_t port, int backlog)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		vl_die("socket tcp");
	set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	struct sockaddr_in a = addr(INADDR_LOOPBACK, port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, backlog) < 0)
		vl_die("listen");
	return fd;
}

/* An established pair through `listener` (port): client, server ends.  A
 * client address other than 0 is bound first (ip, port): the noise avoids
 * the connect-time port search that way. */
static void tcp_pair(int listener, uint16_t port, int *cli, int *srv, int linger, struct sockaddr_in *from)
{
	*cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*cli < 0)
		vl_die("socket tcp");
	if (linger)
		linger0(*cli);
	if (from && bind(*cli, (struct sockaddr *)from, sizeof(*from)) < 0)
		vl_die("bind tcp client");
	struct sockaddr_in a = addr(INADDR_LOOPBACK, port);
	if (connect(*cli, (struct sockaddr *)&a, sizeof(a)) < 0)
		vl_die("connect");
	*srv = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (*srv < 0)
		vl_die("accept");
	if (linger)
		linger0(*srv);
}

/* ------------------------------------------------------------- victims */

static void *alloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p)
		vl_die("calloc");
	return p;
}

void vl_victim_setup(struct vl_victim *v, int flows)
{
	v->flows = flows;
	v->udp = alloc((size_t)flows, sizeof(int));
	v->udp_addr = alloc((size_t)flows, sizeof(struct sockaddr_in));
	v->cli = alloc((size_t)flows, sizeof(int));
	v->srv = alloc((size_t)flows, sizeof(int));
	for (int i = 0; i < flows; i++) {
		v->udp[i] = udp_bound(INADDR_LOOPBACK, 0);
		v->udp_addr[i] = addr(INADDR_LOOPBACK, port_of(v->udp[i]));
	}
	v->client = udp_bound(INADDR_LOOPBACK, 0);
	v->client_addr = addr(INADDR_LOOPBACK, port_of(v->client));
	v->listener = tcp_listener(0, 128);
	v->listen_port = port_of(v->listener);
	for (int i = 0; i < flows; i++) {
		tcp_pair(v->listener, v->listen_port, &v->cli[i], &v->srv[i], 0, NULL);
		set_int(v->cli[i], IPPROTO_TCP, TCP_NODELAY, 1);
		set_int(v->srv[i], IPPROTO_TCP, TCP_NODELAY, 1);
	}
	v->next = 0;
}

static void lat_add(struct vl_lat *lat, double seconds)
{
	if (lat->n == lat->cap) {
		size_t cap = lat->cap ? lat->cap * 2 : 4096;
		uint32_t *ns = realloc(lat->ns, cap * sizeof(*ns));
		if (!ns)
			vl_die("realloc");
		lat->ns = ns;
		lat->cap = cap;
	}
	double ns = seconds * 1e9;
	lat->ns[lat->n++] = ns < 0 ? 0 : ns > 4e9 ? 4000000000u : (uint32_t)ns;
}

/* One request/response workload: `op` 16 times a round until `end`; with
 * `lat`, the CPU time from the end of one round trip to the end of the
 * next is each one's latency. */
#define RR_LOOP(op)                                                                                                    \
	do {                                                                                                           \
		double t_ = lat ? vl_cpu_now() : 0;                                                                    \
		while (lat ? t_ < end : vl_cpu_now() < end) {                                                          \
			for (int i_ = 0; i_ < 16; i_++) {                                                              \
				op;                                                                                    \
				if (lat) {                                                                             \
					double u_ = vl_cpu_now();                                                      \
					lat_add(lat, u_ - t_);                                                         \
					t_ = u_;                                                                       \
				}                                                                                      \
			}                                                                                              \
			n += 16;                                                                                       \
		}                                                                                                      \
	} while (0)

static long w_udp_flood(struct vl_victim *v, double end, struct vl_lat *lat)
{
	(void)lat;
	char payload[64] = {0}, rbuf[64];
	struct iovec siov = {payload, sizeof(payload)};
	struct mmsghdr smsg[32];
	unsigned flows = (unsigned)v->flows;
	long got = 0;
	while (vl_cpu_now() < end) {
		unsigned first = v->next;
		for (int i = 0; i < 32; i++) {
			struct sockaddr_in *to = &v->udp_addr[(first + (unsigned)i) % flows];
			smsg[i] = (struct mmsghdr){
			    .msg_hdr = {.msg_name = to, .msg_namelen = sizeof(*to), .msg_iov = &siov, .msg_iovlen = 1}};
		}
		v->next = (first + 32) % flows;
		if (sendmmsg(v->client, smsg, 32, 0) != 32)
			vl_die("sendmmsg");
		for (int i = 0; i < 32; i++)
			if (recv(v->udp[(first + (unsigned)i) % flows], rbuf, sizeof(rbuf), MSG_DONTWAIT) > 0)
				got++;
	}
	return got;
}

static void udp_rr_once(struct vl_victim *v, char *buf)
{
	unsigned k = v->next;
	v->next = (k + 1) % (unsigned)v->flows;
	if (sendto(v->client, buf, 32, 0, (struct sockaddr *)&v->udp_addr[k], sizeof(v->udp_addr[k])) < 0 ||
	    recv(v->udp[k], buf, 64, 0) < 0 ||
	    sendto(v->udp[k], buf, 32, 0, (struct sockaddr *)&v->client_addr, sizeof(v->client_addr)) < 0 ||
	    recv(v->client, buf, 64, 0) < 0)
		vl_die("udp rr");
}

static long w_udp_rr(struct vl_victim *v, double end, struct vl_lat *lat)
{
	char buf[64] = {0};
	long n = 0;
	RR_LOOP(udp_rr_once(v, buf));
	return n;
}

static long w_udp_bind(struct vl_victim *v, double end, struct vl_lat *lat)
{
	(void)v;
	(void)lat;
	long n = 0;
	while (vl_cpu_now() < end) {
		for (int i = 0; i < 16; i++)
			close(udp_bound(INADDR_LOOPBACK, 0));
		n += 16;
	}
	return n;
}

static void tcp_rr_once(struct vl_victim *v)
{
	char b = 'x';
	unsigned k = v->next;
	v->next = (k + 1) % (unsigned)v->flows;
	if (write(v->cli[k], &b, 1) != 1 || read(v->srv[k], &b, 1) != 1 || write(v->srv[k], &b, 1) != 1 ||
	    read(v->cli[k], &b, 1) != 1)
		vl_die("tcp rr");
}

static long w_tcp_rr(struct vl_victim *v, double end, struct vl_lat *lat)
{
	long n = 0;
	RR_LOOP(tcp_rr_once(v));
	return n;
}

/* One-byte segments (TCP_NODELAY), two per connection in turn, drained:
 * one established-hash lookup per segment at the receiver. */
static long w_tcp_segments(struct vl_victim *v, double end, struct vl_lat *lat)
{
	(void)lat;
	char b[64] = {0};
	long n = 0;
	while (vl_cpu_now() < end) {
		for (int i = 0; i < 16; i++) {
			unsigned k = v->next;
			v->next = (k + 1) % (unsigned)v->flows;
			if (write(v->cli[k], b, 1) != 1 || write(v->cli[k], b, 1) != 1)
				vl_die("tcp segments");
			for (int got = 0; got < 2;) {
				ssize_t r = read(v->srv[k], b, sizeof(b));
				if (r <= 0)
					vl_die("tcp segments");
				got += (int)r;
			}
		}
		n += 32;
	}
	return n;
}

static long w_tcp_connect(struct vl_victim *v, double end, struct vl_lat *lat)
{
	(void)lat;
	long n = 0;
	while (vl_cpu_now() < end) {
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

const struct vl_workload vl_workloads[] = {
    {"udp", "flood_pps", w_udp_flood},	       {"udp", "rr_per_s", w_udp_rr}, {"udp", "bind_per_s", w_udp_bind},
    {"tcp", "segments_per_s", w_tcp_segments}, {"tcp", "rr_per_s", w_tcp_rr}, {"tcp", "connect_per_s", w_tcp_connect},
};
const size_t vl_nworkloads = sizeof(vl_workloads) / sizeof(vl_workloads[0]);

const struct vl_workload *vl_workload(const char *proto, const char *metric)
{
	for (size_t i = 0; i < vl_nworkloads; i++)
		if (strcmp(vl_workloads[i].proto, proto) == 0 && strcmp(vl_workloads[i].metric, metric) == 0)
			return &vl_workloads[i];
	return NULL;
}

/* ------------------------------------------------------------- noise */

/* The noise lives in worker processes, each holding as many sockets as its
 * RLIMIT_NOFILE allows (no CAP_SYS_RESOURCE needed, fs.nr_open untouched);
 * a worker exits, closing them, when killed or when this process dies. */
static pid_t workers[4096];
static int nworkers, noise_fd = -1, noise_home = -1;
static long per_worker;
static int noise_listeners[NOISE_LISTENERS];

void vl_noise_init(int nsfd, int home_fd)
{
	noise_fd = nsfd;
	noise_home = home_fd;
	signal(SIGCHLD, SIG_IGN);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		vl_die("getrlimit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		vl_die("setrlimit");
	/* Workers inherit this process's fds (its own sockets, then the noise
	 * listeners): the rest of the limit is theirs. */
	per_worker = ((long)rl.rlim_cur - vl_count_fds() - NOISE_LISTENERS - 64) & ~1L;
	if (per_worker > 65536)
		per_worker = 65536;
	if (per_worker < 1024) {
		fprintf(stderr, "%s: RLIMIT_NOFILE %ld is too small\n", vl_prog, (long)rl.rlim_cur);
		exit(1);
	}
}

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

static void enter_noise(void)
{
	if (noise_fd >= 0)
		vl_enter(noise_fd);
}

static void leave_noise(void)
{
	if (noise_fd >= 0)
		vl_enter(noise_home);
}

/* The UDP and the TCP noise count separately: each grows from where it is
 * (socket numbers, hence addresses and ports, go on from there). */
static long nnoise_of[2];

void vl_noise_to(int tcp, long target)
{
	if (tcp && !noise_listeners[0]) {
		enter_noise();
		for (int i = 0; i < NOISE_LISTENERS; i++)
			noise_listeners[i] = tcp_listener((uint16_t)(20000 + i), 4096);
		leave_noise();
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN), nnoise = nnoise_of[tcp];
	pid_t parent = getpid(); /* pid 1 in a container: the workers' parent */
	while (nnoise < target) {
		/* One worker per CPU at a time. */
		int ready[64], batch = 0;
		while (nnoise < target && batch < online && batch < 64) {
			long count = target - nnoise < per_worker ? target - nnoise : per_worker;
			int pfd[2];
			if (nworkers == (int)(sizeof(workers) / sizeof(workers[0])) || pipe2(pfd, O_CLOEXEC) < 0)
				vl_die("too many noise workers");
			pid_t pid = fork();
			if (pid < 0)
				vl_die("fork");
			if (pid == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				if (getppid() != parent)
					_exit(1);
				enter_noise();
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
				fprintf(stderr, "%s: a noise worker failed\n", vl_prog);
				exit(1);
			}
			close(ready[i]);
		}
	}
	nnoise_of[tcp] = nnoise;
}

/* Kill the workers and go on: the kernel tears their sockets down in the
 * background (a minute for millions of them on a busy machine); SIGCHLD is
 * ignored, so nothing is left. */
void vl_noise_clear(void)
{
	for (int i = 0; i < nworkers; i++)
		kill(workers[i], SIGKILL);
	nworkers = 0;
	nnoise_of[0] = nnoise_of[1] = 0;
	for (int i = 0; i < NOISE_LISTENERS && noise_listeners[i]; i++) {
		close(noise_listeners[i]);
		noise_listeners[i] = 0;
	}
}
