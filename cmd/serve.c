/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash serve: the node's long-running side (the Kubernetes DaemonSet's
 * node container): `nshash gc` on a schedule and the metrics of `nshash
 * stats --prometheus` (plus textfiles) over HTTP.  One thread, one poll
 * loop: every client has a deadline and a bounded buffer, so one that
 * sends slowly or reads slowly holds only its own connection.  At most
 * MAX_SCRAPES of the slots hold an answer to /metrics being written (the
 * large answers, whose readers may stall until the write deadline): a
 * scrape beyond that is answered 503 at once, so the other slots are
 * always there for request heads and /healthz, whose answers go at once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cnistate.h"
#include "common.h"
#include "http.h"

#define MAX_CLIENTS	 32
#define MAX_SCRAPES	 8 /* of them writing an answer to /metrics */
#define STR_(x)		 #x
#define STR(x)		 STR_(x)
#define REQUEST_MAX	 8192	     /* bytes of a request head */
#define READ_TIMEOUT_MS	 5000	     /* connect to end of the head */
#define WRITE_TIMEOUT_MS 10000	     /* the answer, from when it is ready */
#define TEXTFILE_MAX	 (256 << 10) /* bytes of one textfile */
#define TEXTFILES_MAX	 64	     /* textfiles read per scrape */
#define PROM_TYPE	 "text/plain; version=0.0.4; charset=utf-8"
/* A scan of /proc and every netns is the costly part of a scrape: its text is
 * kept this long (from when the scan ended) and a scrape within it gets that
 * text, so scrapes however many cost one scan a second at most. */
#define SCAN_CACHE_MS 1000

struct client {
	int fd;
	char req[REQUEST_MAX];
	size_t len;
	char *out; /* the answer, malloc'd */
	size_t outlen, sent;
	int64_t deadline; /* ms, monotonic */
	uint64_t seq;	  /* order of accept (ties of deadline) */
	bool scrape;	  /* out is an answer to /metrics (counted in scraping) */
};

struct server {
	const struct serve_opts *o;
	int lfd, sfd;
	struct client c[MAX_CLIENTS];
	size_t nc;
	size_t scraping;     /* clients with scrape set */
	uint64_t gc_runs[2]; /* ok, failed */
	int64_t gc_last_ok;  /* unix time */
	uint64_t refused, busy, evicted, timed_out;
	int64_t quiet_until; /* ms: refused requests are logged at most once a second */
	uint64_t quiet_count;
	/* the last scan's text: stats and textfiles (NULL: none kept) */
	char *scan, *files;
	size_t scan_len, files_len;
	bool scan_ok;
	int64_t scan_at; /* ms, monotonic: when it ended */
	uint64_t scans;
	uint64_t accepted;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("nshash serve: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ------------------------------------------------------------- gc */

static void gc_removed(const char *path, const char *why, void *ctx)
{
	(void)ctx;
	char shown[600];
	nshash_escape(path, shown, sizeof(shown));
	say("gc: removed %s (%s)", shown, why);
}

static void gc_run(struct server *s)
{
	struct nshash_gc_opts o = {.state_dir = s->o->state_dir,
				   .template_max_idle = s->o->max_idle,
				   .stale_min_age = s->o->stale_age,
				   .removed = gc_removed};
	struct nshash_gc_report rep;
	struct nshash_error err = {0};
	struct stat st;
	if (stat(s->o->state_dir, &st) < 0 && errno == ENOENT) {
		s->gc_runs[0]++; /* nothing of nshash's here yet */
		s->gc_last_ok = time(NULL);
		return;
	}
	if (nshash_gc(&o, &rep, &err) < 0) {
		s->gc_runs[1]++;
		say("gc failed (not fatal; next run in %lld s): %s", (long long)s->o->gc_every, err.msg);
		return;
	}
	size_t pods = 0;
	if (nsh_cni_pods_prune(s->o->state_dir, &pods, &err) < 0)
		say("gc: pod records: %s", err.msg);
	s->gc_runs[0]++;
	s->gc_last_ok = time(NULL);
	if (rep.templates_removed || rep.spares_removed || rep.stale_removed || rep.orphans_removed ||
	    rep.ledger_dropped || pods)
		say("gc: removed %zu template(s), %zu spare(s), %zu stale pin file(s), %zu orphaned container "
		    "pin(s), %zu pod record(s); dropped %zu ledger record(s); kept %zu",
		    rep.templates_removed, rep.spares_removed, rep.stale_removed, rep.orphans_removed, pods,
		    rep.ledger_dropped, rep.kept);
}

/* ------------------------------------------------------------- metrics */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.prom file of the textfile dir, in name order: regular files only,
 * each whole or not at all (larger than TEXTFILE_MAX, or with a NUL byte:
 * skipped with a comment, so the scrape stays parsable). */
static size_t textfiles(FILE *f, const char *dir)
{
	size_t skipped = 0, n = 0;
	char *names[TEXTFILES_MAX];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		fprintf(f, "# nshash serve: textfile dir unreadable: %s\n", strerror(errno));
		return 1;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".prom") != 0)
			continue;
		if (n == TEXTFILES_MAX) {
			skipped++;
			continue;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char shown[300];
		nshash_escape(names[i], shown, sizeof(shown));
		int fd = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		struct stat st;
		const char *why = NULL;
		char *text = NULL;
		size_t len = 0;
		struct nshash_error rerr;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			why = "not a regular file";
		else if (st.st_size > TEXTFILE_MAX)
			why = "larger than 262144 bytes";
		else if (nsh_read_fd(fd, shown, TEXTFILE_MAX, &text, &len, &rerr) < 0)
			why = rerr.errnum == EFBIG    ? "larger than 262144 bytes"
			      : rerr.errnum == ENOMEM ? "out of memory"
						      : "unreadable";
		else if (memchr(text, '\0', len))
			why = "has a NUL byte";
		if (fd >= 0)
			close(fd);
		if (why) {
			fprintf(f, "# nshash serve: textfile %s skipped: %s\n", shown, why);
			skipped++;
		} else if (len) {
			fwrite(text, 1, len, f);
			if (text[len - 1] != '\n')
				fputc('\n', f);
		}
		free(text);
		free(names[i]);
	}
	closedir(d);
	return skipped;
}

/* The costly part, redone only when the kept text is older than
 * SCAN_CACHE_MS: stats (a /proc and netns scan) and the textfiles. */
static void scan_refresh(struct server *s)
{
	if (s->scan_at && nsh_monotonic_ms() - s->scan_at < SCAN_CACHE_MS)
		return;
	free(s->scan);
	free(s->files);
	s->scan = s->files = NULL;
	s->scan_len = s->files_len = 0;
	s->scans++;
	FILE *f = open_memstream(&s->scan, &s->scan_len);
	int rc = f ? cli_metrics(f, s->o->state_dir, false) : EXIT_FAIL;
	s->scan_ok = f && fclose(f) == 0 && rc == EXIT_OK;
	if (s->scan_ok && s->o->textfile_dir) {
		f = open_memstream(&s->files, &s->files_len);
		if (f) {
			size_t skipped = textfiles(f, s->o->textfile_dir);
			fprintf(f,
				"# HELP nshash_serve_textfiles_skipped Textfiles left out of this scrape (too large, "
				"not regular, a NUL byte).\n# TYPE nshash_serve_textfiles_skipped gauge\n"
				"nshash_serve_textfiles_skipped %zu\n",
				skipped);
		}
		s->scan_ok = f && fclose(f) == 0;
	}
	s->scan_at = nsh_monotonic_ms(); /* a failed scan is kept too: no retry storm */
}

/* The body of GET /metrics (malloc'd), or NULL when the scan failed: the
 * kept scan, serve's own series as they are now, the kept textfiles. */
static char *metrics_body(struct server *s, size_t *len)
{
	scan_refresh(s);
	if (!s->scan_ok)
		return NULL;
	char *body = NULL;
	FILE *f = open_memstream(&body, len);
	if (!f)
		return NULL;
	fwrite(s->scan, 1, s->scan_len, f);
	fprintf(
	    f,
	    "# HELP nshash_serve_gc_runs_total Runs of gc by nshash serve.\n# TYPE nshash_serve_gc_runs_total "
	    "counter\nnshash_serve_gc_runs_total{result=\"ok\"} %llu\nnshash_serve_gc_runs_total{result=\"failed\"} "
	    "%llu\n",
	    (unsigned long long)s->gc_runs[0], (unsigned long long)s->gc_runs[1]);
	fprintf(f,
		"# HELP nshash_serve_gc_last_success_seconds Unix time of the last gc that succeeded (0 none).\n"
		"# TYPE nshash_serve_gc_last_success_seconds gauge\nnshash_serve_gc_last_success_seconds %lld\n",
		(long long)s->gc_last_ok);
	fprintf(f,
		"# HELP nshash_serve_scans_total Scans of the node's netns for /metrics (a scrape within 1 s of "
		"the last scan gets its result).\n# TYPE nshash_serve_scans_total counter\n"
		"nshash_serve_scans_total %llu\n",
		(unsigned long long)s->scans);
	fprintf(
	    f,
	    "# HELP nshash_serve_requests_refused_total HTTP requests answered 400, 404, 405, 414 or 431.\n"
	    "# TYPE nshash_serve_requests_refused_total counter\nnshash_serve_requests_refused_total %llu\n"
	    "# HELP nshash_serve_scrapes_busy_total Requests for /metrics answered 503 (Retry-After: 1) because " STR(
		MAX_SCRAPES) " answers to /metrics were being written.\n"
			     "# TYPE nshash_serve_scrapes_busy_total counter\nnshash_serve_scrapes_busy_total %llu\n"
			     "# HELP nshash_serve_clients_dropped_total Connections dropped: past their deadline (5 s "
			     "for the head, 10 "
			     "s for the answer), or, when 32 were open, one still sending its head pushed out by a new "
			     "one (or the "
			     "new one answered 503 and closed when all 32 were being answered).\n"
			     "# TYPE nshash_serve_clients_dropped_total counter\n"
			     "nshash_serve_clients_dropped_total{why=\"deadline\"} "
			     "%llu\nnshash_serve_clients_dropped_total{why=\"full\"} "
			     "%llu\n",
	    (unsigned long long)s->refused, (unsigned long long)s->busy, (unsigned long long)s->timed_out,
	    (unsigned long long)s->evicted);
	if (s->files)
		fwrite(s->files, 1, s->files_len, f);
	if (fclose(f) != 0) {
		free(body);
		return NULL;
	}
	return body;
}

/* ------------------------------------------------------------- clients */

static void client_drop(struct server *s, size_t i)
{
	if (s->c[i].scrape)
		s->scraping--;
	close(s->c[i].fd);
	free(s->c[i].out);
	s->c[i] = s->c[--s->nc];
}

static void answer(struct client *c, int status, const char *type, const char *body, size_t blen)
{
	char head[512];
	int h = cli_http_response_head(status, type, blen, head, sizeof(head));
	c->out = malloc((size_t)h + blen);
	if (!c->out) {
		c->outlen = 0;
		return;
	}
	memcpy(c->out, head, (size_t)h);
	if (blen)
		memcpy(c->out + h, body, blen);
	c->outlen = (size_t)h + blen;
	c->sent = 0;
	c->deadline = nsh_monotonic_ms() + WRITE_TIMEOUT_MS;
}

static void refused_log(struct server *s, int status, const struct http_request *req)
{
	if (status == 503)
		s->busy++;
	else
		s->refused++;
	int64_t t = nsh_monotonic_ms();
	if (t < s->quiet_until) {
		s->quiet_count++;
		return;
	}
	char m[64], p[64];
	nshash_quote(req->method, m, sizeof(m));
	nshash_quote(req->target, p, sizeof(p));
	say("answered %d to %s %s%s%s", status, m, p,
	    status == 503 ? " (" STR(MAX_SCRAPES) " answers to /metrics being written; Retry-After: 1)" : "",
	    s->quiet_count ? " (and more since the last line)" : "");
	s->quiet_until = t + 1000;
	s->quiet_count = 0;
}

/* The head is complete (or refused): make the answer. */
static void respond(struct server *s, struct client *c, int status, const struct http_request *req)
{
	if (status != 200) {
		refused_log(s, status, req);
		char body[64];
		int n = snprintf(body, sizeof(body), "%d %s\n", status, cli_http_reason(status));
		answer(c, status, "text/plain; charset=utf-8", body, (size_t)n);
		return;
	}
	if (req->route == HTTP_HEALTHZ) {
		answer(c, 200, "text/plain; charset=utf-8", "ok\n", 3);
		return;
	}
	if (s->scraping >= MAX_SCRAPES) {
		respond(s, c, 503, req);
		return;
	}
	size_t len = 0;
	char *body = metrics_body(s, &len);
	if (!body) {
		static const char msg[] = "nshash stats failed: see the log of nshash serve\n";
		answer(c, 500, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
		return;
	}
	answer(c, 200, PROM_TYPE, body, len);
	free(body);
	if (c->out) {
		c->scrape = true;
		s->scraping++;
	}
}

/* Readable: read what is there; 1 when the client is done with (dropped). */
static int client_read(struct server *s, size_t i)
{
	struct client *c = &s->c[i];
	ssize_t n = recv(c->fd, c->req + c->len, sizeof(c->req) - c->len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		client_drop(s, i);
		return 1;
	}
	c->len += (size_t)n;
	struct http_request req;
	int status = cli_http_request_parse(c->req, c->len, sizeof(c->req), &req);
	if (status)
		respond(s, c, status, &req);
	return 0;
}

/* Writable: send what is left; 1 when the client is done with (dropped). */
static int client_write(struct server *s, size_t i)
{
	struct client *c = &s->c[i];
	while (c->sent < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->sent, c->outlen - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			break;
		c->sent += (size_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	client_drop(s, i);
	return 1;
}

/* Full: the client to push out for a new one -- of those still sending
 * their head (a complete head is answered at once), the oldest, nearest its
 * deadline (a slow one: a kubelet probe sends its head at once); never one
 * whose answer is being written.  -1: every one is being answered. */
static ssize_t evictee(const struct server *s)
{
	ssize_t old = -1;
	for (size_t j = 0; j < s->nc; j++)
		if (!s->c[j].out && (old < 0 || s->c[j].deadline < s->c[old].deadline ||
				     (s->c[j].deadline == s->c[old].deadline && s->c[j].seq < s->c[old].seq)))
			old = (ssize_t)j;
	return old;
}

/* No slot for a new connection: 503 (a few bytes: the socket's buffer
 * takes them), what it sent so far read (a close with unread bytes would
 * reset the connection, and the answer with it), closed. */
static void busy_close(int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
				   "Content-Length: 5\r\nRetry-After: 1\r\nConnection: close\r\n\r\nbusy\n";
	char sink[REQUEST_MAX];
	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_WR);
	(void)!recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
	close(fd);
}

static void accept_all(struct server *s)
{
	/* at most as many a round as there are slots not being answered: a
	 * flood of connects does not keep the loop from the clients it has,
	 * and one accepted in this round (the oldest pushed out first) is still
	 * there when the next round reads its head */
	size_t room = MAX_CLIENTS, placed = 0;
	for (size_t j = 0; j < s->nc; j++)
		room -= s->c[j].out != NULL;
	for (int k = 0; k < MAX_CLIENTS; k++) {
		if (room && placed == room)
			return; /* the rest in the next round */
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a client gone before its accept */
		if (!room) {
			s->evicted++;
			busy_close(fd); /* all 32 being answered: the new one told to come back */
			continue;
		}
		if (s->nc == MAX_CLIENTS) {
			ssize_t old = evictee(s);
			s->evicted++;
			if (old < 0) { /* not reached: room says one is not being answered */
				busy_close(fd);
				continue;
			}
			client_drop(s, (size_t)old);
		}
		struct client *c = &s->c[s->nc++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->deadline = nsh_monotonic_ms() + READ_TIMEOUT_MS;
		c->seq = s->accepted++;
		placed++;
	}
}

/* ------------------------------------------------------------- setup */

/* "ADDR:PORT" or "[ADDR6]:PORT" → a listening socket, or -1 (bad usage) or
 * -2 (the system refused), said on stderr. */
static int listen_on(const char *spec)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || strlen(spec) >= sizeof(host))
		return cli_fail(-1, "serve: --listen \"%s\": expected ADDR:PORT (e.g. 127.0.0.1:9490, [::]:9490)", spec);
	size_t hl = (size_t)(colon - spec);
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	const char *port = colon + 1;
	char *end;
	long p = strtol(port, &end, 10);
	if (!*port || *end || p < 1 || p > 65535 || port[0] < '0' || port[0] > '9')
		return cli_fail(-1, "serve: --listen \"%s\": the port must be 1..65535", spec);
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a = {0};
	socklen_t alen;
	/* numeric only (inet_pton: no resolver, also in a static binary) */
	if (inet_pton(AF_INET, host, &a.in.sin_addr) == 1) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons((uint16_t)p);
		alen = sizeof(a.in);
	} else if (inet_pton(AF_INET6, host, &a.in6.sin6_addr) == 1) {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons((uint16_t)p);
		alen = sizeof(a.in6);
	} else {
		return cli_fail(-1, "serve: --listen \"%s\": \"%s\" is not a numeric IPv4 or IPv6 address", spec, host);
	}
	int fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, &a.sa, alen) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return cli_fail(-2, "serve: listen on %s: %s", spec, strerror(e));
	}
	return fd;
}

int cli_serve(const struct serve_opts *o)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return cli_fail(EXIT_FAIL, "out of memory");
	s->o = o;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	signal(SIGPIPE, SIG_IGN);
	/* blocked and read from a signalfd: works as PID 1 of a container too */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || (s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		free(s);
		return cli_fail(EXIT_FAIL, "serve: signalfd: %s", strerror(errno));
	}
	s->lfd = listen_on(o->listen);
	if (s->lfd < 0) {
		int rc = s->lfd == -1 ? EXIT_USAGE : EXIT_FAIL;
		close(s->sfd);
		free(s);
		return rc;
	}
	char dir[600];
	nshash_escape(o->state_dir, dir, sizeof(dir));
	say("listening on %s (GET /metrics, /healthz); state dir %s; gc every %lld s (--max-idle %lld)", o->listen, dir,
	    (long long)o->gc_every, (long long)o->max_idle);
	int64_t next_gc = o->gc_every ? nsh_monotonic_ms() : INT64_MAX;
	int rc = EXIT_OK;
	for (;;) {
		int64_t t = nsh_monotonic_ms();
		if (t >= next_gc) {
			gc_run(s);
			t = nsh_monotonic_ms();
			next_gc = t + o->gc_every * 1000;
		}
		/* clients past their deadline go (a slowloris one, a reader that stalls) */
		for (size_t i = 0; i < s->nc;)
			if (s->c[i].deadline <= t) {
				client_drop(s, i);
				s->timed_out++;
			} else
				i++;
		int64_t wake = next_gc;
		for (size_t i = 0; i < s->nc; i++)
			if (s->c[i].deadline < wake)
				wake = s->c[i].deadline;
		int timeout = wake == INT64_MAX ? -1 : wake - t > 60000 ? 60000 : (int)(wake - t);
		struct pollfd p[MAX_CLIENTS + 2] = {{.fd = s->sfd, .events = POLLIN}, {.fd = s->lfd, .events = POLLIN}};
		for (size_t i = 0; i < s->nc; i++)
			p[i + 2] = (struct pollfd){.fd = s->c[i].fd, .events = s->c[i].out ? POLLOUT : POLLIN};
		size_t np = s->nc + 2;
		if (poll(p, np, timeout < 0 ? -1 : timeout) < 0) {
			if (errno == EINTR)
				continue;
			rc = cli_fail(EXIT_FAIL, "serve: poll: %s", strerror(errno));
			break;
		}
		if (p[0].revents) {
			struct signalfd_siginfo si;
			if (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
				say("signal %u: exiting", si.ssi_signo);
				break;
			}
		}
		/* clients first (their slots move when one is dropped: walk from the end) */
		for (size_t k = np; k-- > 2;) {
			size_t i = k - 2;
			if (!p[k].revents || i >= s->nc || s->c[i].fd != p[k].fd)
				continue;
			if (s->c[i].out)
				client_write(s, i);
			else if ((p[k].revents & (POLLIN | POLLHUP | POLLERR)) && client_read(s, i) == 0 && s->c[i].out)
				client_write(s, i); /* most answers go at once */
		}
		if (p[1].revents & POLLIN)
			accept_all(s);
	}
	while (s->nc)
		client_drop(s, 0);
	free(s->scan);
	free(s->files);
	close(s->lfd);
	close(s->sfd);
	free(s);
	return rc;
}

static const char serve_usage[] =
    "Usage: nshash serve [--listen ADDR:PORT] [--gc-every SECONDS] [--max-idle SECONDS]\n"
    "                    [--stale-age SECONDS] [--textfile-dir DIR]\n"
    "\n"
    "Run until SIGTERM or SIGINT: every --gc-every seconds (default 900; 0: never) what\n"
    "`nshash gc --max-idle SECONDS --stale-age SECONDS` does (a failed run is logged, never\n"
    "fatal), plus removing the CNI plugin's pod records of netns that are gone; and answer\n"
    "HTTP on --listen (default " SERVE_DEFAULT_LISTEN "; [::]:PORT for IPv6):\n"
    "  GET /metrics   `nshash stats --prometheus` (pod and namespace labels, the plugin's\n"
    "                 ADDs by outcome, pod netns on the shared tables), gc runs, then every\n"
    "                 DIR/*.prom of --textfile-dir (each at most 256 KiB, else skipped)\n"
    "  GET /healthz   \"ok\"\n"
    "Anything else: 404 or 405.  One request per connection, heads of at most 8 KiB\n"
    "within 5 s; 32 connections at most (a new one pushes out the oldest still sending\n"
    "its head), " STR(
	MAX_SCRAPES) " of them receiving /metrics (a scrape beyond: 503 with Retry-After: 1;\n"
		     "/healthz is answered all the same).  Needs root with the host's PID namespace (it\n"
		     "scans /proc) and the state dir mounted with propagation both ways (gc unmounts pins).\n";

static int cmd_serve(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return cli_fail(EXIT_USAGE, "serve: takes no arguments");
	if (c->gc_every > 366LL * 24 * 3600)
		return cli_fail(EXIT_USAGE, "serve: --gc-every %lld: at most a year", (long long)c->gc_every);
	cli_stale_age_note(c);
	struct serve_opts o = {.state_dir = c->state_dir,
			       .listen = c->listen ? c->listen : SERVE_DEFAULT_LISTEN,
			       .textfile_dir = c->textfile_dir,
			       .gc_every = c->gc_every,
			       .max_idle = c->max_idle,
			       .stale_age = c->stale_age};
	return cli_serve(&o);
}

const struct command cli_cmd_serve = {
    "serve", cmd_serve,
    BIT(OPT_LISTEN) | BIT(OPT_GC_EVERY) | BIT(OPT_MAX_IDLE) | BIT(OPT_STALE_AGE) | BIT(OPT_TEXTFILE_DIR), serve_usage};
