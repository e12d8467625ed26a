/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Socket counts per network namespace and the scan of every netns on the
 * host behind `nshash stats`.  Counters only: sockstat/sockstat6 read
 * inside the netns, plus an inet_diag dump restricted to listeners, so the
 * cost does not grow with the sockets in a table. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netlink/idiag/idiagnl.h>
#include <netlink/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "internal.h"

/* ------------------------------------------------------------- one netns */

/* Read a small /proc file into buf; a missing file (no IPv6: no sockstat6)
 * reads as empty. */
static int read_small(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Add the number after `key` on the line of `proto` in sockstat text
 * ("TCP: inuse 3 orphan 0 tw 1 ..."); no such line counts 0. */
static int sockstat_field(const char *text, const char *proto, const char *key, long *out)
{
	char head[16], pattern[32];
	snprintf(head, sizeof(head), "%s:", proto);
	snprintf(pattern, sizeof(pattern), " %s ", key);
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		if (strncmp(line, head, strlen(head)) == 0) {
			const char *p = memmem(line, (size_t)(eol - line), pattern, strlen(pattern));
			if (!p)
				return -EIO;
			*out += strtol(p + strlen(pattern), NULL, 10);
			return 0;
		}
		line = *eol ? eol + 1 : eol;
	}
	return 0;
}

static int count_cb(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(*(long *)arg)++;
	return NL_OK;
}

/* Listening TCP sockets of the calling thread's netns: a dump of LISTEN
 * only, which the kernel serves from the listening hash without walking the
 * established one.  libnl sends the old TCPDIAG_GETSOCK request, which the
 * kernel answers for both families at once. */
static int count_listeners(long *out)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	long n = 0;
	int r = idiagnl_connect(sk);
	if (r == 0)
		r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, count_cb, &n);
	if (r == 0)
		r = idiagnl_send_simple(sk, NLM_F_DUMP, AF_INET, 1 << TCP_LISTEN, 0);
	if (r >= 0) /* bytes sent */
		r = nl_recvmsgs_default(sk);
	nl_socket_free(sk);
	if (r < 0)
		return -EIO;
	*out = n;
	return 0;
}

/* Socket counts of the calling thread's netns. */
static int sockets_here(struct nshash_sockets *s, struct nshash_error *err)
{
	char v4[1024], v6[1024];
	long inuse = 0, tw = 0, udp = 0;
	int r = read_small("/proc/thread-self/net/sockstat", v4, sizeof(v4));
	if (r == 0)
		r = read_small("/proc/thread-self/net/sockstat6", v6, sizeof(v6));
	if (r == 0)
		r = sockstat_field(v4, "TCP", "inuse", &inuse);
	if (r == 0)
		r = sockstat_field(v4, "TCP", "tw", &tw);
	if (r == 0)
		r = sockstat_field(v4, "UDP", "inuse", &udp);
	if (r == 0)
		r = sockstat_field(v6, "TCP6", "inuse", &inuse);
	if (r == 0)
		r = sockstat_field(v6, "UDP6", "inuse", &udp);
	if (r < 0)
		return nsh_error_sys(err, -r, "read /proc/net/sockstat");
	long listen = 0;
	if (inuse > 0 && count_listeners(&listen) < 0)
		listen = -1;
	long tcp = inuse - (listen > 0 ? listen : 0);
	*s = (struct nshash_sockets){.tcp = (tcp > 0 ? tcp : 0) + tw, .tcp_tw = tw, .tcp_listen = listen, .udp = udp};
	return 0;
}

/* Enter nsfd, read (info when asked, through `proc`: see
 * nsh_sysctl_dir_open_in; sockets), come back to `home`. */
static int read_netns(int home, int proc, int nsfd, struct nshash_netns_info *info, struct nshash_sockets *s,
		      struct nshash_error *err)
{
	int r = nsh_netns_enter(nsfd, "to count its sockets", err);
	if (r < 0)
		return r;
	r = info ? nsh_read_info_here(proc, info, false, err) : 0;
	if (r == 0)
		r = sockets_here(s, err);
	int r2 = nsh_netns_return(home, err);
	return r2 < 0 ? r2 : r;
}

int nshash_sockets_fd(int nsfd, struct nshash_sockets *s, struct nshash_error *err)
{
	if (!nsh_fd_is_netns(nsfd))
		return nshash_error_set(err, EINVAL, "count sockets of fd %d: not a network namespace", nsfd);
	cleanup_close int home = -1;
	int r = nsh_netns_open_current(&home, err);
	return r < 0 ? r : read_netns(home, -1, nsfd, NULL, s, err);
}

int nsh_sockets_in_use_here(char *kind, size_t len)
{
	/* /proc/net/protocols: a row per protocol, its third column the
	 * sockets this netns has of it (0 also for a protocol that counts
	 * none: vsock).  The kernel counts a socket there from its creation
	 * (unix, netlink, packet, raw, XDP...) or from when it is hashed (UDP
	 * bound or connected, TCP listening or connected, ping bound), and
	 * stops at its release: not sockstat's "sockets: used", which counts
	 * a closed socket until the kernel frees it a grace period later (a
	 * netlink socket: 15-50 ms here, e.g. those of the engine's network
	 * set-up, just exited).  The kernel's own sockets are not counted but
	 * for a tunnel link's (a vxlan's UDP socket). */
	kind[0] = '\0';
	FILE *f = fopen("/proc/thread-self/net/protocols", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	bool head = true;
	int r = 0;
	while (!r && !kind[0] && getline(&line, &cap, f) > 0) {
		char name[32];
		long n;
		if (head)
			r = strncmp(line, "protocol ", 9) == 0 ? 0 : -EPROTO;
		else if (sscanf(line, "%31s %*s %ld", name, &n) != 2)
			r = -EPROTO; /* not the table it should be: nothing is known */
		else if (n > 0)
			snprintf(kind, len, "%s", name);
		head = false;
	}
	if (!r)
		r = ferror(f) ? -EIO : head ? -ENODATA : 0;
	free(line);
	fclose(f);
	return r;
}

int nshash_sockets_path(const char *path, struct nshash_sockets *s, struct nshash_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nsh_error_sys(err, errno, "count sockets of %s", path);
	int r = nshash_sockets_fd(fd, s, err);
	return r < 0 ? nshash_error_prefix(err, "%s", path) : 0;
}

/* ------------------------------------------------------------- sizing */

bool nshash_stats_global(const struct nshash_stats_netns *ns, enum nshash_proto proto)
{
	long entries = proto == NSHASH_UDP ? ns->info.udp_entries : ns->info.tcp_entries;
	return entries < 0 || (ns->host && entries > 0);
}

uint32_t nshash_stats_recommend(enum nshash_proto proto, const struct nshash_sockets *s)
{
	uint64_t want = proto == NSHASH_UDP ? (uint64_t)(s->udp > 0 ? s->udp : 0) : (uint64_t)(s->tcp > 0 ? s->tcp : 0);
	if (proto == NSHASH_TCP && s->tcp_tw > 0 && (uint64_t)s->tcp_tw * 2 > want)
		want = (uint64_t)s->tcp_tw * 2;
	uint64_t size = NSHASH_UDP_MIN;
	while (size < want && size < nshash_proto_max(proto))
		size <<= 1;
	return (uint32_t)(size < nshash_proto_max(proto) ? size : nshash_proto_max(proto));
}

void nshash_stats_shared(const struct nshash_stats_netns *v, size_t n, enum nshash_proto proto,
			 struct nshash_stats_shared *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		if (!nshash_stats_global(&v[i], proto))
			continue;
		long entries = proto == NSHASH_UDP ? v[i].info.udp_entries : v[i].info.tcp_entries;
		long sockets = proto == NSHASH_UDP ? v[i].sockets.udp : v[i].sockets.tcp;
		out->buckets = entries < 0 ? -entries : entries;
		out->netns++;
		out->sockets += sockets;
		/* Insert into the top list, largest first; ties keep scan order. */
		size_t pos = out->ntop;
		while (pos > 0) {
			const struct nshash_stats_netns *o = &v[out->top[pos - 1]];
			if ((proto == NSHASH_UDP ? o->sockets.udp : o->sockets.tcp) >= sockets)
				break;
			pos--;
		}
		if (pos >= NSHASH_STATS_TOP || sockets <= 0)
			continue;
		size_t last = out->ntop < NSHASH_STATS_TOP ? out->ntop : NSHASH_STATS_TOP - 1;
		memmove(&out->top[pos + 1], &out->top[pos], (last - pos) * sizeof(out->top[0]));
		out->top[pos] = i;
		if (out->ntop < NSHASH_STATS_TOP)
			out->ntop++;
	}
	out->chain = out->buckets ? (double)out->sockets / (double)out->buckets : 0;
}

/* ------------------------------------------------------------- naming */

static bool is_hex_id(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* The container id one cgroup path component names, with its engine:
 * podman "libpod-ID(.scope)", docker "docker-ID.scope" or ".../docker/ID",
 * containerd's CRI "cri-containerd-ID.scope", CRI-O "crio-ID.scope", and a
 * bare 64-hex component under kubepods (cgroupfs drivers). */
static bool component_id(const char *parent, const char *comp, size_t len, char *id, char *engine)
{
	static const struct {
		const char *prefix, *engine;
	} prefixes[] = {
	    {"libpod-", "podman"}, {"docker-", "docker"}, {"cri-containerd-", "containerd"}, {"crio-", "cri-o"}};
	if (len > 6 && memcmp(comp + len - 6, ".scope", 6) == 0)
		len -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i].prefix);
		if (len > pl && memcmp(comp, prefixes[i].prefix, pl) == 0 && is_hex_id(comp + pl, len - pl)) {
			memcpy(id, comp + pl, len - pl);
			id[len - pl] = '\0';
			strcpy(engine, prefixes[i].engine);
			return true;
		}
	}
	/* cgroupfs drivers: docker/ID, libpod_parent/libpod-ID (above),
	 * kubepods/.../podUID/ID. */
	const char *eng = strcmp(parent, "docker") == 0						  ? "docker"
			  : strncmp(parent, "kubepods", 8) == 0 || strncmp(parent, "pod", 3) == 0 ? "kubernetes"
												  : NULL;
	if (!eng || !is_hex_id(comp, len))
		return false;
	memcpy(id, comp, len);
	id[len] = '\0';
	strcpy(engine, eng);
	return true;
}

/* The outermost container id in /proc/PID/cgroup: the engine put the
 * process there; anything deeper the container may have made itself. */
static void read_container(pid_t pid, char *id, size_t idlen, char *engine, size_t englen)
{
	char path[64], buf[4096];
	id[0] = engine[0] = '\0';
	if (idlen < 65 || englen < 16)
		return;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *line = buf; *line;) {
		char *eol = strchrnul(line, '\n');
		char *p = memchr(line, ':', (size_t)(eol - line));
		p = p ? memchr(p + 1, ':', (size_t)(eol - p - 1)) : NULL;
		char parent[16] = "";
		while (p && p < eol) {
			char *comp = p + 1;
			char *next = comp;
			while (next < eol && *next != '/')
				next++;
			if (component_id(parent, comp, (size_t)(next - comp), id, engine))
				return;
			snprintf(parent, sizeof(parent), "%.*s", (int)(next - comp), comp);
			p = next < eol ? next : NULL;
		}
		line = *eol ? eol + 1 : eol;
	}
}

/* ------------------------------------------------------------- the scan */

struct scan {
	struct nshash_stats_netns *v;
	size_t n, cap;
	size_t *index;	  /* open addressing on (dev, inode): v's index + 1, 0 free */
	size_t index_cap; /* a power of two, > 2 n */
	int home;
	/* the proc instances netns are read through (nsh_proc_round_next):
	 * never the host's /proc, whose lookups grow with the netns count */
	struct nsh_proc_round proc;
};

static size_t slot_of(const struct scan *s, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev << 32 | dev >> 32)) * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 17) & (s->index_cap - 1);
}

static struct nshash_stats_netns *find(struct scan *s, uint64_t dev, uint64_t ino)
{
	if (!s->index_cap)
		return NULL;
	for (size_t i = slot_of(s, dev, ino); s->index[i]; i = (i + 1) & (s->index_cap - 1)) {
		struct nshash_stats_netns *e = &s->v[s->index[i] - 1];
		if (e->inode == ino && e->dev == dev)
			return e;
	}
	return NULL;
}

/* File v[n - 1] in the index. */
static void index_add(struct scan *s)
{
	const struct nshash_stats_netns *e = &s->v[s->n - 1];
	size_t i = slot_of(s, e->dev, e->inode);
	while (s->index[i])
		i = (i + 1) & (s->index_cap - 1);
	s->index[i] = s->n;
}

static int grow(struct scan *s, struct nshash_error *err)
{
	if (s->n < s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct nshash_stats_netns *v = realloc(s->v, cap * sizeof(*v));
	size_t *index = calloc(cap * 4, sizeof(*index));
	if (!v || !index) {
		if (v)
			s->v = v;
		free(index);
		return nshash_error_set(err, ENOMEM, "stats: out of memory");
	}
	s->v = v;
	s->cap = cap;
	free(s->index);
	s->index = index;
	s->index_cap = cap * 4;
	size_t n = s->n;
	for (s->n = 1; s->n <= n; s->n++)
		index_add(s);
	s->n = n;
	return 0;
}

/* Open a netns file and add it unless its netns is already there.  A file
 * that is gone or no (longer a) netns is skipped. */
static int add_netns(struct scan *s, const char *path, bool pinned, enum nshash_entry_kind kind, pid_t pid,
		     struct nshash_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !nsh_fd_is_netns(fd))
		return 0;
	struct nshash_stats_netns *e = find(s, st.st_dev, st.st_ino);
	if (e) {
		if (!e->pid && pid) /* a pinned netns a process uses */
			e->pid = pid;
		return 0;
	}
	int r = grow(s, err);
	if (r < 0)
		return r;
	e = &s->v[s->n];
	memset(e, 0, sizeof(*e));
	e->dev = st.st_dev;
	e->inode = st.st_ino;
	e->pinned = pinned;
	e->kind = kind;
	e->pid = pid;
	if (pinned)
		snprintf(e->name, sizeof(e->name), "%s", path);
	else
		snprintf(e->name, sizeof(e->name), "pid:%d", (int)pid);
	r = read_netns(s->home, nsh_proc_round_next(&s->proc), fd, &e->info, &e->sockets, err);
	if (r == -EPERM)
		return nshash_error_set(
		    err, EPERM, "stats %s: entering a network namespace needs CAP_SYS_ADMIN (run as root)", path);
	if (r < 0)
		return nshash_error_prefix(err, "stats %s", path);
	s->n++;
	index_add(s);
	return 0;
}

struct proc_scan {
	struct scan *s;
	bool add;
	int r; /* add_netns's error: err filled */
	struct nshash_error *err;
};

static int scan_process(pid_t pid, const struct stat *ns, void *arg)
{
	struct proc_scan *p = arg;
	struct nshash_stats_netns *e = find(p->s, ns->st_dev, ns->st_ino);
	if (e) {
		if (!e->pid || pid < e->pid)
			e->pid = pid;
		return 0;
	}
	if (!p->add)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	p->r = add_netns(p->s, path, false, NSHASH_ENTRY_NETNS, pid, p->err);
	return p->r < 0;
}

/* Every process's netns; `add` false only attaches pids to known ones. */
static int scan_processes(struct scan *s, bool add, struct nshash_error *err)
{
	struct proc_scan p = {.s = s, .add = add, .err = err};
	int r = nsh_proc_netns_each(scan_process, &p);
	if (p.r < 0)
		return p.r;
	return r < 0 ? nsh_error_sys(err, -r, "stats: read /proc") : 0;
}

/* Pins in one directory: regular files with a netns mounted on them
 * (anything else there — stale pin files, the lock, symlinks, devices — is
 * left unopened or skipped). */
static int scan_pin_dir(struct scan *s, const char *dir, enum nshash_entry_kind kind, struct nshash_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : nsh_error_sys(err, errno, "stats: list %s", dir);
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;
		if (de->d_name[0] == '.' ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (de->d_type != DT_REG && (de->d_type != DT_UNKNOWN || lstat(path, &st) < 0 || !S_ISREG(st.st_mode)))
			continue;
		r = add_netns(s, path, true, kind, 0, err);
	}
	closedir(d);
	return r;
}

/* The pins nshash_list() reports: /run/netns, then the state dir's
 * templates and container pins. */
static int scan_pins(struct scan *s, const char *state_dir, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	char dir[PATH_MAX];
	state_dir = nsh_state_dir(state_dir, sdbuf, sizeof(sdbuf));
	int r = scan_pin_dir(s, NSHASH_NETNS_RUN_DIR, NSHASH_ENTRY_NETNS, err);
	snprintf(dir, sizeof(dir), "%s/templates", state_dir);
	if (r == 0)
		r = scan_pin_dir(s, dir, NSHASH_ENTRY_TEMPLATE, err);
	snprintf(dir, sizeof(dir), "%s/pins", state_dir);
	if (r == 0)
		r = scan_pin_dir(s, dir, NSHASH_ENTRY_CONTAINER, err);
	snprintf(dir, sizeof(dir), "%s/spares", state_dir);
	if (r == 0)
		r = scan_pin_dir(s, dir, NSHASH_ENTRY_SPARE, err);
	return r;
}

static int scan_only(struct scan *s, const struct nshash_stats_opts *opts, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	for (size_t i = 0; i < opts->nonly; i++) {
		const char *path = opts->only[i];
		int pid = 0, end = 0;
		bool proc = sscanf(path, "/proc/%d/ns/net%n", &pid, &end) == 1 && path[end] == '\0' && pid > 0;
		cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return nsh_error_sys(err, errno, "stats %s", path);
		if (!nsh_fd_is_netns(fd))
			return nshash_error_set(err, EINVAL, "stats %s: not a network namespace", path);
		size_t before = s->n;
		int r = add_netns(s, path, !proc, NSHASH_ENTRY_NETNS, proc ? pid : 0, err);
		if (r < 0)
			return r;
		if (s->n == before + 1 && !proc) {
			/* Which directory of nshash's, for the kind column. */
			char dir[PATH_MAX];
			const char *sd = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
			snprintf(dir, sizeof(dir), "%s/templates/", sd);
			if (strncmp(path, dir, strlen(dir)) == 0)
				s->v[before].kind = NSHASH_ENTRY_TEMPLATE;
			snprintf(dir, sizeof(dir), "%s/pins/", sd);
			if (strncmp(path, dir, strlen(dir)) == 0)
				s->v[before].kind = NSHASH_ENTRY_CONTAINER;
			snprintf(dir, sizeof(dir), "%s/spares/", sd);
			if (strncmp(path, dir, strlen(dir)) == 0)
				s->v[before].kind = NSHASH_ENTRY_SPARE;
		}
	}
	return 0;
}

int nshash_stats_scan(const struct nshash_stats_opts *opts, struct nshash_stats_netns **out, size_t *count,
		      struct nshash_error *err)
{
	struct scan s = {.home = -1, .proc = NSH_PROC_ROUND_INIT};
	int r = nsh_netns_open_current(&s.home, err);
	if (r == 0)
		r = opts->only ? scan_only(&s, opts, err) : scan_pins(&s, opts->state_dir, err);
	if (r == 0)
		r = scan_processes(&s, !opts->only, err);
	if (s.home >= 0)
		close(s.home);
	nsh_proc_round_end(&s.proc);
	free(s.index);
	if (r < 0) {
		free(s.v);
		return r;
	}
	/* The host's netns is init_net, where kernel threads live: kthreadd is
	 * pid 2 in the initial pid namespace; elsewhere pid 1 is the best guess. */
	char comm[32];
	struct stat init;
	nsh_proc_comm(2, comm, sizeof(comm));
	bool have_init = stat(strcmp(comm, "kthreadd") == 0 ? "/proc/2/ns/net" : "/proc/1/ns/net", &init) == 0;
	for (size_t i = 0; i < s.n; i++) {
		struct nshash_stats_netns *e = &s.v[i];
		e->host = have_init && e->dev == init.st_dev && e->inode == init.st_ino;
		if (e->pid) {
			nsh_proc_comm(e->pid, e->command, sizeof(e->command));
			read_container(e->pid, e->container, sizeof(e->container), e->engine, sizeof(e->engine));
		}
	}
	*out = s.v;
	*count = s.n;
	return 0;
}
