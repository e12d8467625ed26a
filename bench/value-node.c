/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The programs of `make value-node` (driven by bench/value-node), on
 * make value's load generator and meter (value-load.c).  Static: the first
 * two run inside busybox containers.
 *
 *   value-node victim SOCK FLOWS
 *       a victim container's service: FLOWS UDP server sockets and FLOWS
 *       established TCP connections on 127.0.0.1 in its netns (made once,
 *       then the noise comes), and on the unix socket SOCK one slice of a
 *       request/response workload at a time for the conductor: it runs
 *       `udp rr_per_s` or `tcp rr_per_s` for the CPU time asked and answers
 *       the round trips done, the CPU time they took and each one's CPU
 *       time (the whole path: on loopback the request's and the reply's
 *       lookups run in this thread's send calls)
 *   value-node noise SOCK
 *       the noisy container's workload: on SOCK, "udp N" or "tcp N" grows
 *       its bound UDP sockets / established-hash TCP sockets (connected
 *       pairs, both ends here) to N, "ok SECONDS" when done; the sockets
 *       are held by worker processes within RLIMIT_NOFILE, as make value's
 *   value-node ask SOCK LINE
 *       sends LINE to a noise socket and prints the answer (exit 1 unless
 *       "ok ...")
 *   value-node measure T0 PHASEFILE CSV VICTIMS_CSV SOCK...
 *       the conductor, on the host: ticks until PHASEFILE says "end".  A
 *       tick is, for each workload (UDP then TCP request/response), one
 *       slice of VALUE_SLICE_MS (default 10) ms of CPU time of every
 *       container in turn (the order rotating by tick), so only one
 *       container runs at a time and load from elsewhere hits every one
 *       alike.  A socket named ref*.sock is the reference group (a
 *       container with its own tables), the others the victims.  Per tick,
 *       group and protocol CSV gets the victims' median rate (round trips
 *       per CPU-second) and the p50 / p99 of all their round trips' CPU
 *       times; VICTIMS_CSV each container's rate and p99.  PHASEFILE's
 *       line "LABEL NOISY_UDP NOISY_TCP" labels the rows; T0 (Unix time)
 *       is the day's start. */
#include "value-load.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NWORK 2
static const char *const work_proto[NWORK] = {"udp", "tcp"};

struct request {
	char proto[4];
	uint32_t slice_us;
};
struct reply {
	uint64_t ops, cpu_ns;
	uint32_t nlat;
};

static void full_io(int fd, void *buf, size_t len, int out, const char *what)
{
	char *p = buf;
	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EPIPE;
			vl_die(what);
		}
		p += n;
		len -= (size_t)n;
	}
}

static int unix_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path)) {
		fprintf(stderr, "%s: %s: path too long\n", vl_prog, path);
		exit(2);
	}
	strcpy(a->sun_path, path);
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static int unix_listen(const char *path)
{
	struct sockaddr_un a;
	int fd = unix_addr(path, &a);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
		vl_die(path);
	return fd;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* pid 1 of a container ignores signals it has no handler for. */
static void exit_on_term(void)
{
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
}

/* podman brings lo up in a --network none netns; if not, try. */
static void lo_up(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		vl_die("lo flags");
	if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			vl_die("lo is down and cannot be brought up");
	}
	close(fd);
}

/* The next client of a listening unix socket. */
static int accept_next(int lfd)
{
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			return c;
		if (errno != EINTR)
			vl_die("accept");
	}
}

/* ------------------------------------------------------------- victim */

static _Noreturn void victim(const char *sock, int flows)
{
	exit_on_term();
	lo_up();
	static struct vl_victim v;
	vl_victim_setup(&v, flows);
	struct vl_lat lat = {0};
	int lfd = unix_listen(sock);
	for (;;) {
		int c = accept_next(lfd);
		struct request rq;
		for (;;) {
			ssize_t n = read(c, &rq, sizeof(rq));
			if (n != (ssize_t)sizeof(rq))
				break; /* the conductor is gone: wait for the next one */
			const struct vl_workload *w = vl_workload(strcmp(rq.proto, "udp") ? "tcp" : "udp", "rr_per_s");
			lat.n = 0;
			double t0 = vl_cpu_now();
			long ops = w->run(&v, t0 + rq.slice_us / 1e6, &lat);
			struct reply rp = {(uint64_t)ops, (uint64_t)((vl_cpu_now() - t0) * 1e9), (uint32_t)lat.n};
			full_io(c, &rp, sizeof(rp), 1, "reply");
			full_io(c, lat.ns, lat.n * sizeof(uint32_t), 1, "reply");
		}
		close(c);
	}
}

/* ------------------------------------------------------------- noise */

static _Noreturn void noise(const char *sock)
{
	exit_on_term();
	lo_up();
	vl_noise_init(-1, -1);
	int lfd = unix_listen(sock);
	for (;;) {
		int c = accept_next(lfd);
		FILE *f = fdopen(c, "r+");
		if (!f)
			vl_die("fdopen");
		char line[128], proto[8];
		long target;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%7s %ld", proto, &target) != 2 ||
			    (strcmp(proto, "udp") != 0 && strcmp(proto, "tcp") != 0) || target < 0) {
				fprintf(f, "error: expected \"udp N\" or \"tcp N\"\n");
				fflush(f);
				continue;
			}
			double t0 = vl_now();
			vl_noise_to(strcmp(proto, "tcp") == 0, target);
			fprintf(f, "ok %.1f\n", vl_now() - t0);
			fflush(f);
		}
		fclose(f);
	}
}

static int ask(const char *sock, const char *line)
{
	struct sockaddr_un a;
	int fd = unix_addr(sock, &a);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		vl_die(sock);
	FILE *f = fdopen(fd, "r+");
	char answer[256] = "";
	if (!f)
		vl_die("fdopen");
	fprintf(f, "%s\n", line);
	fflush(f);
	if (!fgets(answer, sizeof(answer), f))
		strcpy(answer, "no answer (the noisy container died?)\n");
	fputs(answer, stdout);
	fclose(f);
	return strncmp(answer, "ok ", 3) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- measure */

struct container {
	const char *name;
	int fd, ref;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct_us(const uint32_t *sorted, size_t n, double p)
{
	return n ? sorted[(size_t)(p * (double)(n - 1) + 0.5)] / 1000.0 : 0;
}

static int connect_retry(const char *path)
{
	struct sockaddr_un a;
	for (int i = 0; i < 1200; i++) {
		int fd = unix_addr(path, &a);
		if (fd < 0)
			vl_die("socket unix");
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		close(fd);
		usleep(100000);
	}
	vl_die(path);
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "LABEL UDP TCP" from the phase file; 0 when it says "end". */
static int read_phase(const char *path, char *label, size_t size, long *udp, long *tcp)
{
	FILE *f = fopen(path, "r");
	char line[256] = "";
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	char l[128] = "?";
	*udp = *tcp = 0;
	if (sscanf(line, "%127s %ld %ld", l, udp, tcp) < 1)
		strcpy(l, "?");
	snprintf(label, size, "%s", l);
	return strcmp(l, "end") != 0;
}

static int measure(int argc, char **argv)
{
	double t0 = atof(argv[2]);
	const char *phasefile = argv[3];
	int slice_ms = getenv("VALUE_SLICE_MS") ? atoi(getenv("VALUE_SLICE_MS")) : 10;
	if (slice_ms < 1 || slice_ms > 1000) {
		fprintf(stderr, "value-node: VALUE_SLICE_MS must be 1..1000\n");
		return 2;
	}
	FILE *csv = fopen(argv[4], "w"), *vcsv = fopen(argv[5], "w");
	if (!csv || !vcsv)
		vl_die("CSV");
	setvbuf(csv, NULL, _IOLBF, 0);
	fprintf(csv, "t_s,phase,noisy_udp,noisy_tcp,group,proto,containers,rate,p50_us,p99_us\n");
	fprintf(vcsv, "t_s,phase,container,proto,rate,p99_us\n");
	int n = argc - 6;
	struct container *c = calloc((size_t)n, sizeof(*c));
	struct vl_lat pool[2] = {{0}, {0}}; /* victims, reference */
	uint32_t *buf = NULL;
	size_t bufcap = 0;
	if (!c)
		vl_die("calloc");
	for (int i = 0; i < n; i++) {
		const char *path = argv[6 + i], *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		c[i].name = strndup(base, strcspn(base, "."));
		c[i].ref = strncmp(base, "ref", 3) == 0;
		c[i].fd = connect_retry(path);
	}
	char phase[128];
	long udp, tcp;
	for (long tick = 0; read_phase(phasefile, phase, sizeof(phase), &udp, &tcp); tick++) {
		for (int w = 0; w < NWORK; w++) {
			int nrate[2] = {0, 0};
			double grates[2][n];
			pool[0].n = pool[1].n = 0;
			for (int j = 0; j < n; j++) {
				struct container *k = &c[(tick + j) % n];
				struct request rq = {{0}, (uint32_t)slice_ms * 1000};
				strcpy(rq.proto, work_proto[w]);
				struct reply rp;
				full_io(k->fd, &rq, sizeof(rq), 1, k->name);
				full_io(k->fd, &rp, sizeof(rp), 0, k->name);
				if (rp.nlat > bufcap) {
					bufcap = rp.nlat;
					buf = realloc(buf, bufcap * sizeof(*buf));
					if (!buf)
						vl_die("realloc");
				}
				full_io(k->fd, buf, rp.nlat * sizeof(*buf), 0, k->name);
				double rate = rp.cpu_ns ? (double)rp.ops / ((double)rp.cpu_ns * 1e-9) : 0;
				struct vl_lat *p = &pool[k->ref];
				for (uint32_t i = 0; i < rp.nlat; i++) {
					if (p->n == p->cap) {
						p->cap = p->cap ? p->cap * 2 : 65536;
						p->ns = realloc(p->ns, p->cap * sizeof(uint32_t));
						if (!p->ns)
							vl_die("realloc");
					}
					p->ns[p->n++] = buf[i];
				}
				grates[k->ref][nrate[k->ref]++] = rate;
				qsort(buf, rp.nlat, sizeof(*buf), cmp_u32);
				fprintf(vcsv, "%.1f,%s,%s,%s,%.0f,%.2f\n", wall_now() - t0, phase, k->name, work_proto[w], rate,
					pct_us(buf, rp.nlat, 0.99));
			}
			for (int g = 0; g < 2; g++) {
				if (!nrate[g])
					continue;
				qsort(grates[g], (size_t)nrate[g], sizeof(double), cmp_double);
				qsort(pool[g].ns, pool[g].n, sizeof(uint32_t), cmp_u32);
				fprintf(csv, "%.1f,%s,%ld,%ld,%s,%s,%d,%.0f,%.2f,%.2f\n", wall_now() - t0, phase, udp, tcp,
					g ? "reference" : "victims", work_proto[w], nrate[g], grates[g][nrate[g] / 2],
					pct_us(pool[g].ns, pool[g].n, 0.5), pct_us(pool[g].ns, pool[g].n, 0.99));
			}
		}
		fflush(vcsv);
	}
	return fclose(csv) == 0 && fclose(vcsv) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	vl_prog = "value-node";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "victim") == 0)
		victim(argv[2], atoi(argv[3]) > 0 ? atoi(argv[3]) : 1024);
	if (argc == 3 && strcmp(argv[1], "noise") == 0)
		noise(argv[2]);
	if (argc == 4 && strcmp(argv[1], "ask") == 0)
		return ask(argv[2], argv[3]);
	if (argc >= 7 && strcmp(argv[1], "measure") == 0)
		return measure(argc, argv);
	fprintf(stderr, "usage: value-node victim SOCK FLOWS | noise SOCK | ask SOCK LINE |\n"
			"       measure T0 PHASEFILE CSV VICTIMS_CSV SOCK... (see bench/value-node)\n");
	return 2;
}
