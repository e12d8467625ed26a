/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Transplant: replace the netns pinned at a path (P, made and configured by
 * an engine) by a sized netns (S) that carries the same network
 * configuration, and bind S at P's path.
 *
 * A netns's tables are fixed when it is made, so the configuration moves
 * instead: every link but lo goes from P to S (a move keeps a link's name,
 * ifindex, MAC and MTU but drops its addresses, routes and per-device
 * sysctls), and those are given back from what P had.  A veth whose peer
 * is a bridge port in the caller's netns is made again instead when that
 * is exact (veth.c: a move costs the kernel an rcu_barrier()).  All or nothing:
 * P is inspected first and refused, naming what was found, when the
 * result could not be the same (a process inside, firewall tables, a link
 * the kernel will not move, ...); a failure after the first move is undone
 * (links back to P, its configuration restored, P's mount back). */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "netcfg.h"

struct tp {
	const char *path;
	int home, pfd, sfd;
	int restore;		   /* a copy of P's mount made before it was detached: to put back */
	struct nl_sock *skp, *sks; /* rtnetlink in P, in S */
	struct nl_sock *skh;	   /* rtnetlink in the caller's netns (veth peers) */
	struct nsh_veth *veth;	   /* per p.links: a bridged veth, recreated rather than moved */
	struct nsh_netcfg p;	   /* P as found */
	struct nsh_netcfg s;	   /* S when new: links, rules */
	struct nsh_netcfg fwd;	   /* P's configuration minus the sysctls a new netns has anyway:
				    * what S is given (shares P's data; own sysctl arrays) */
	bool *moved;		   /* per p.links */
	bool *recreated;	   /* per p.links */
	bool touched;		   /* a link left P or the mount changed */
	bool unmounted, bound;	   /* P's mount detached; S bound at the path */
};

__attribute__((format(printf, 4, 5))) static int refuse(const struct tp *t, int errnum, struct nshash_error *err,
							const char *fmt, ...)
{
	char why[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return nshash_error_set(err, errnum, "transplant %s: refused: %s", t->path, why);
}

/* ------------------------------------------------------------ P: open, processes */

static int tp_open(struct tp *t, struct nshash_error *err)
{
	struct stat ls;
	/* Only a pin at this very path: never through a symbolic link (the
	 * netns of a process, or a link to someone else's pin). */
	if (lstat(t->path, &ls) == 0 && S_ISLNK(ls.st_mode))
		return refuse(t, EINVAL, err,
			      "it is a symbolic link (e.g. /proc/PID/ns/net, the netns of a running process), not a "
			      "pinned network namespace");
	t->pfd = open(t->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (t->pfd < 0)
		return nsh_error_sys(err, errno, "transplant %s", t->path);
	if (!nsh_fd_is_netns(t->pfd))
		return nshash_error_set(err, EINVAL, "transplant %s: not a network namespace (no nsfs pin there)",
					t->path);
	int r = nsh_netns_open_current(&t->home, err);
	if (r < 0)
		return r;
	struct stat ps, hs, is;
	if (fstat(t->pfd, &ps) < 0 || fstat(t->home, &hs) < 0)
		return nsh_error_sys(err, errno, "transplant %s: stat", t->path);
	if (ps.st_ino == hs.st_ino && ps.st_dev == hs.st_dev)
		return refuse(t, EINVAL, err, "it is the caller's own network namespace");
	if (stat("/proc/1/ns/net", &is) == 0 && ps.st_ino == is.st_ino && ps.st_dev == is.st_dev)
		return refuse(t, EINVAL, err, "it is the host's network namespace (that of pid 1)");
	return 0;
}

static pid_t parent_of(pid_t pid)
{
	struct nsh_proc_stat st;
	return nsh_proc_stat(pid, &st) == 0 ? st.ppid : 0;
}

/* The caller's parent, grandparent, ... (not init): up to `max` of them. */
static size_t ancestors(pid_t *out, size_t max)
{
	size_t n = 0;
	for (pid_t a = getppid(); a > 1 && n < max; a = parent_of(a))
		out[n++] = a;
	return n;
}

/* Does `pid` own a socket of netns `ns`?  Each of its socket fds is
 * copied (pidfd_getfd) and asked for its netns (SIOCGSKNS).  1 (`what`
 * names the fd), 0, or -1 when it cannot be told (`what` says why): a
 * socket that might be in P is taken to be. */
static int socket_in(pid_t pid, const struct stat *ns, char *what, size_t len)
{
	char dir[64], target[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	DIR *d = pidfd >= 0 ? opendir(dir) : NULL;
	if (!d) {
		snprintf(what, len, "whose sockets cannot be listed (%s)", strerror(errno));
		return -1;
	}
	struct dirent *de;
	int found = 0;
	while (!found && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "socket:", 7) != 0)
			continue;
		cleanup_close int sk = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(de->d_name), 0);
		if (sk < 0 && errno == EBADF)
			continue; /* closed since it was listed */
		cleanup_close int nsfd = sk < 0 ? -1 : ioctl(sk, SIOCGSKNS);
		struct stat st;
		if (nsfd < 0 || fstat(nsfd, &st) < 0) {
			found = -1;
			snprintf(what, len, "whose socket fd %.16s cannot be placed (%s)", de->d_name, strerror(errno));
		} else if (st.st_ino == ns->st_ino && st.st_dev == ns->st_dev) {
			found = 1;
			snprintf(what, len, "with a socket in it (fd %.16s)", de->d_name);
		}
	}
	closedir(d);
	return found;
}

/* A process inside P keeps its sockets there: nothing must live in P or
 * hold it (a thread, an open fd) but this process -- and, for a netns the
 * engine running the caller made, that engine, which must then hold it
 * open or have a thread in it (podman 5 leaves the thread that made the
 * netns in it: Go cannot end a locked main thread), and own no socket in
 * it. */
struct holders {
	const struct tp *t;
	const struct stat *ns;
	bool engine_made, engine_holds, refused;
	pid_t anc[64]; /* the caller's ancestors (engine_made): the engine */
	size_t nanc;
	pid_t engine[64]; /* ancestors found to hold P without a socket in it */
	size_t nengine;
	char sockets[32]; /* the protocol of a socket in use in P, "" none known */
	struct nshash_error *err;
};

static bool is_ancestor(const struct holders *h, pid_t pid)
{
	for (size_t i = 0; i < h->nanc; i++)
		if (h->anc[i] == pid)
			return true;
	return false;
}

/* Of the ancestors found to hold P, the nearest (the scan tells of
 * threads before fds, whatever the order of the list); 0 for none. */
static pid_t nearest_engine(const struct holders *h)
{
	for (size_t i = 0; i < h->nanc; i++)
		for (size_t k = 0; k < h->nengine; k++)
			if (h->engine[k] == h->anc[i])
				return h->anc[i];
	return 0;
}

/* scan.c tells of each process with a thread in P or an fd on it. */
static int check_holder(pid_t pid, unsigned source, const char *entry, void *arg)
{
	struct holders *h = arg;
	char what[64], comm[32], ps[16];
	for (size_t i = 0; i < h->nengine; i++)
		if (h->engine[i] == pid) /* told of again by the fd pass */
			return 0;
	if (source == NSH_SCAN_FDS)
		snprintf(what, sizeof(what), "holds it open (fd %.16s)", entry);
	else if (entry)
		snprintf(what, sizeof(what), "has thread %.16s in it", entry);
	else
		snprintf(what, sizeof(what), "lives in it");
	snprintf(ps, sizeof(ps), "%d", (int)pid);
	if (h->engine_made && is_ancestor(h, pid)) {
		char sock[96];
		if (socket_in(pid, h->ns, sock, sizeof(sock)) == 0) {
			h->engine_holds = true;
			if (h->nengine < sizeof(h->engine) / sizeof(h->engine[0]))
				h->engine[h->nengine++] = pid;
			return 0;
		}
		nsh_proc_comm(pid, comm, sizeof(comm));
		h->refused = true;
		return refuse(h->t, EBUSY, h->err,
			      "the engine, process %s (%s), uses it %s: its sockets would stay behind", ps, comm, sock);
	}
	nsh_proc_comm(pid, comm, sizeof(comm));
	h->refused = true;
	if (h->sockets[0]) /* a socket in use, whoever's: this process is one who can have it */
		return refuse(h->t, EBUSY, h->err, "process %s (%s) %s, and a %s socket is in use in it: they would stay behind",
			      ps, comm, what, h->sockets);
	return refuse(h->t, EBUSY, h->err, "process %s (%s) %s: its sockets would stay behind", ps, comm, what);
}

/* The sockets in use in P (nsh_sockets_in_use_here), read inside it. */
static int tp_sockets_in_use(struct tp *t, char *kind, size_t len, struct nshash_error *err)
{
	int r = nsh_netns_enter(t->pfd, t->path, err);
	if (r < 0)
		return r;
	int sr = nsh_sockets_in_use_here(kind, len);
	r = nsh_netns_return(t->home, err);
	if (r < 0)
		return r;
	return sr < 0 ? nsh_error_sys(err, -sr, "transplant %s: its sockets (/proc/net/protocols)", t->path) : 0;
}

static int tp_check_processes(struct tp *t, bool engine_made, struct nshash_error *err)
{
	struct stat ns;
	if (fstat(t->pfd, &ns) < 0)
		return nsh_error_sys(err, errno, "transplant %s: stat", t->path);
	struct holders h = {.t = t, .ns = &ns, .engine_made = engine_made, .err = err};
	if (engine_made)
		h.nanc = ancestors(h.anc, sizeof(h.anc) / sizeof(h.anc[0]));
	/* threads and fds, not mounts (P's own pin is one); a process whose
	 * /proc cannot be read (-EACCES without CAP_SYS_PTRACE) was never
	 * looked at before either */
	const unsigned want = NSH_SCAN_THREADS | NSH_SCAN_FDS | NSH_SCAN_SKIP_SELF;
	/* The engine first: its threads and fds (bounded by it, not the
	 * node), and P's sockets in use.  Then, for the engine's netns made
	 * for this start (since the nearest ancestor that holds it started,
	 * or the parent when none does) with no socket in use, nothing more
	 * (docs/design.md, "Who can be in the engine's netns"): anyone else in
	 * P is host root's and stays behind in it, away from the container.
	 * Else every process. */
	int r = engine_made ? nsh_netns_holders_among(ns.st_ino, want, h.anc, h.nanc, check_holder, &h) : 0;
	if (r < 0 && r != -EACCES)
		return h.refused ? r : nsh_error_sys(err, -r, "transplant %s: list /proc", t->path);
	char kind[32] = "";
	bool fresh = engine_made && r == 0 && nsh_engine_fresh_netns(t->pfd, &ns, nearest_engine(&h));
	r = engine_made ? tp_sockets_in_use(t, kind, sizeof(kind), err) : 0;
	if (r < 0)
		return r;
	snprintf(h.sockets, sizeof(h.sockets), "%s", kind);
	if (!fresh || kind[0])
		r = nsh_netns_holders(ns.st_ino, want, check_holder, &h);
	if ((r == 0 || r == -EACCES) && kind[0]) {
		/* a socket in use and no process in P or holding it to name */
		h.refused = true;
		r = refuse(t, EBUSY, err, "a %s socket is in use in it, %s: it would stay behind", kind,
			   r ? "and not every process could be looked at" : "of no process in it or holding it");
	}
	if (r == -EACCES)
		r = 0;
	else if (r < 0 && !h.refused)
		return nsh_error_sys(err, -r, "transplant %s: list /proc", t->path);
	/* podman 5 may hold no fd on P, nor leave a thread in it: P pinned
	 * since the parent started is then the evidence. */
	if (r == 0 && engine_made && !h.engine_holds)
		h.engine_holds = nsh_pinned_after_start(0, &ns);
	if (r == 0 && engine_made && !h.engine_holds)
		r = refuse(
		    t, EPERM, err,
		    "the engine running this process does not hold it open: not the netns it made for this container");
	return r;
}

/* ------------------------------------------------------------ P: read, refuse */

/* The kernel derives tcp_max_tw_buckets and tcp_max_syn_backlog from a
 * netns's own table size: S keeps its own unless the engine changed P's
 * from what P's table gives. */
static void drop_derived(struct nsh_sysvec *wide, long tcp_entries)
{
	long size = tcp_entries < 0 ? -tcp_entries : tcp_entries;
	char tw[32], syn[32];
	snprintf(tw, sizeof(tw), "%ld", size / 2);
	snprintf(syn, sizeof(syn), "%ld", size / 128 > 128 ? size / 128 : 128);
	for (size_t i = 0; i < wide->n; i++) {
		const char *p = wide->v[i].path, *v = wide->v[i].value;
		if ((strcmp(p, "ipv4/tcp_max_tw_buckets") == 0 && strcmp(v, tw) == 0) ||
		    (strcmp(p, "ipv4/tcp_max_syn_backlog") == 0 && strcmp(v, syn) == 0)) {
			free(wide->v[i].path);
			free(wide->v[i].value);
			wide->v[i--] = wide->v[--wide->n];
		}
	}
}

static int tp_read_p(struct tp *t, struct nshash_error *err)
{
	int r = nsh_netns_enter(t->pfd, t->path, err);
	if (r < 0)
		return r;
	struct nshash_netns_info info;
	r = nsh_nl_open(NETLINK_ROUTE, &t->skp, err);
	if (r == 0)
		r = nsh_netcfg_read(t->skp, NSH_CFG_ALL, &t->p, err);
	if (r == 0)
		r = nsh_read_info_here(-1, &info, false, err);
	int r2 = nsh_netns_return(t->home, err);
	if (r2 < 0)
		return r2;
	if (r < 0)
		return nshash_error_prefix(err, "transplant %s", t->path);
	drop_derived(&t->p.wide, info.tcp_entries);
	size_t n = t->p.nlinks ? t->p.nlinks : 1;
	t->moved = calloc(n, sizeof(bool));
	t->recreated = calloc(n, sizeof(bool));
	t->veth = calloc(n, sizeof(*t->veth));
	return t->moved && t->recreated && t->veth
		   ? 0
		   : nshash_error_set(err, ENOMEM, "transplant %s: out of memory", t->path);
}

static int refuse_qdiscs(const struct tp *t, struct nshash_error *err)
{
	for (size_t i = 0; i < t->p.qdiscs.n; i++) {
		const struct nlmsghdr *h = t->p.qdiscs.v[i];
		const struct tcmsg *tc = NLMSG_DATA(h);
		if (h->nlmsg_type != RTM_NEWQDISC || (tc->tcm_handle == 0 && tc->tcm_parent != TC_H_INGRESS))
			continue; /* a default qdisc */
		struct nlattr *k = nla_find((struct nlattr *)((char *)tc + NLMSG_ALIGN(sizeof(*tc))),
					    (int)h->nlmsg_len - NLMSG_HDRLEN - (int)NLMSG_ALIGN(sizeof(*tc)), TCA_KIND);
		char kind[32] = "?", dev[IF_NAMESIZE] = "?";
		if (k)
			snprintf(kind, sizeof(kind), "%.*s", nla_len(k) - 1, (const char *)nla_data(k));
		for (size_t j = 0; j < t->p.nlinks; j++)
			if (t->p.links[j].index == tc->tcm_ifindex)
				snprintf(dev, sizeof(dev), "%s", t->p.links[j].name);
		return refuse(t, EOPNOTSUPP, err,
			      "link %s has qdisc %s configured (traffic control does not move with a link)", dev, kind);
	}
	return 0;
}

/* What P holds that a transplant cannot carry over faithfully. */
static int tp_refuse_p(const struct tp *t, struct nshash_error *err)
{
	if (t->p.firewall[0])
		return refuse(t, EOPNOTSUPP, err, "it has %s: firewall rules cannot move with the links",
			      t->p.firewall);
	if (t->p.nexthops.n)
		return refuse(t, EOPNOTSUPP, err, "it has nexthop objects (ip nexthop), which are not carried over");
	for (size_t i = 0; i < t->p.routes.n; i++) {
		const struct rtmsg *rtm = NLMSG_DATA(t->p.routes.v[i]);
		char fam[16];
		snprintf(fam, sizeof(fam), "%u", rtm->rtm_family);
		if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6)
			return refuse(t, EOPNOTSUPP, err, "it has routes of address family %s (not understood)", fam);
	}
	for (size_t i = 0; i < t->p.nlinks; i++) {
		const struct nsh_link *l = &t->p.links[i], *m = NULL;
		for (size_t j = 0; l->master && j < t->p.nlinks; j++)
			if (t->p.links[j].index == l->master)
				m = &t->p.links[j];
		if (l->master)
			return refuse(t, EOPNOTSUPP, err, "link %s is enslaved to %s (enslaved links are not moved)",
				      l->name, m ? m->name : "another link");
		if (l->xdp)
			return refuse(t, EOPNOTSUPP, err, "link %s has an XDP program attached", l->name);
	}
	return refuse_qdiscs(t, err);
}

/* ------------------------------------------------------------ S */

static int tp_create_s(struct tp *t, const struct nshash_create_opts *opts, struct nshash_netns_info *info,
		       struct nshash_error *err)
{
	int r = nshash_netns_new(opts, &t->sfd, info, err);
	if (r < 0)
		return nshash_error_prefix(err, "transplant %s", t->path);
	r = nsh_netns_enter(t->sfd, "the sized netns", err);
	if (r < 0)
		return r;
	r = nsh_nl_open(NETLINK_ROUTE, &t->sks, err);
	if (r == 0)
		r = nsh_netcfg_read(t->sks, NSH_CFG_LINKS | NSH_CFG_RULES, &t->s, err);
	int r2 = nsh_netns_return(t->home, err);
	if (r2 < 0)
		return r2;
	return r < 0 ? nshash_error_prefix(err, "transplant %s: the sized netns", t->path) : 0;
}

static bool same_msgs(const struct nsh_msgs *a, const struct nsh_msgs *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i]->nlmsg_len != b->v[i]->nlmsg_len ||
		    memcmp(NLMSG_DATA(a->v[i]), NLMSG_DATA(b->v[i]), a->v[i]->nlmsg_len - NLMSG_HDRLEN))
			return false;
	return true;
}

/* Knobs a write to conf/all propagates to every device, and DAD, which the
 * restore switches itself: always given to S per device. */
static bool always_given(const char *knob)
{
	return !strcmp(knob, "forwarding") || !strcmp(knob, "disable_ipv6") || !strcmp(knob, "accept_dad");
}

/* Keep the entries of `from` that a new netns would not have as they are:
 * not in `fresh` (the template, a netns made the way S is), or different
 * there.  A device's knob is looked up as the template's own for lo and as
 * conf|neigh/default for the others, which a moved link gets in S. */
static int sys_filter(const struct nsh_sysvec *from, const struct nsh_sysvec *fresh, bool dev, struct nsh_sysvec *out)
{
	size_t hint = 0;
	out->v = calloc(from->n ? from->n : 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < from->n; i++) {
		const struct nsh_sysent *e = &from->v[i];
		const char *knob = strrchr(e->path, '/') + 1, *devp = dev ? strchr(e->path + 5, '/') : NULL;
		char path[512];
		snprintf(path, sizeof(path), "%s", e->path);
		if (devp && strncmp(devp, "/lo/", 4) != 0) /* ipvN/conf|neigh/DEV/knob */
			snprintf(path, sizeof(path), "%.*sdefault/%s", (int)(devp + 1 - e->path), e->path, knob);
		long j = nsh_sysvec_find(fresh, path, &hint);
		if (j < 0 || strcmp(fresh->v[j].value, e->value) != 0 || (dev && always_given(knob)))
			out->v[out->n++] = *e;
	}
	return 0;
}

/* What S is given: P's configuration, minus the sysctls a new netns (the
 * template S is made from: cheap to read, where S's files would each cost
 * the kernel a new inode) already has as P has them.  Without a template
 * (nested strategy): all of P's. */
static int tp_forward_config(struct tp *t, const struct nshash_create_opts *opts, struct nshash_error *err)
{
	t->fwd = t->p;
	memset(&t->fwd.wide, 0, sizeof(t->fwd.wide));
	memset(&t->fwd.dev, 0, sizeof(t->fwd.dev));
	struct nsh_netcfg fresh = {0};
	struct nsh_sysvec both = {0};
	/* A template's sysctls never change (it is rebuilt, as a new netns,
	 * when damaged): its note (carry.c) after the first read.  Reading
	 * ~580 files costs as much as in a new netns; one file does not. */
	int r = nsh_sysctl_baseline(opts, &fresh, err);
	if (r == -ENOENT)
		r = 0;
	if (r < 0)
		return nshash_error_prefix(err, "transplant %s", t->path);
	/* conf|neigh/default are among the wide ones, lo's among the per-device */
	both.v = calloc(fresh.wide.n + fresh.dev.n + 1, sizeof(*both.v));
	r = both.v ? sys_filter(&t->p.wide, &fresh.wide, false, &t->fwd.wide) : -ENOMEM;
	for (size_t i = 0; r == 0 && i < fresh.wide.n; i++)
		both.v[both.n++] = fresh.wide.v[i];
	for (size_t i = 0; r == 0 && i < fresh.dev.n; i++)
		both.v[both.n++] = fresh.dev.v[i];
	if (r == 0)
		r = sys_filter(&t->p.dev, &both, true, &t->fwd.dev);
	free(both.v);
	nsh_netcfg_free(&fresh);
	return r < 0 ? nshash_error_set(err, -r, "transplant %s: out of memory", t->path) : 0;
}

/* Links every netns has (lo, fallback tunnels) stay; the rest must move. */
static int tp_refuse_vs_s(struct tp *t, struct nshash_error *err)
{
	if (!same_msgs(&t->p.rules, &t->s.rules))
		return refuse(
		    t, EOPNOTSUPP, err,
		    "its policy routing rules (ip rule) differ from a new netns's; they are not carried over");
	for (size_t i = 0; i < t->p.nlinks; i++) {
		struct nsh_link *l = &t->p.links[i];
		const struct nsh_link *s = nsh_netcfg_link(&t->s, l->name);
		l->kept = s && s->index == l->index && strcmp(s->kind, l->kind) == 0 &&
			  (l->immutable == 1 || (l->flags & IFF_LOOPBACK));
		if (!l->kept && l->immutable == 1)
			return refuse(
			    t, EOPNOTSUPP, err,
			    "link %s%s%s cannot change network namespace (the kernel marks it netns-immutable)",
			    l->name, l->kind[0] ? " of kind " : "", l->kind);
		if (!l->kept && s)
			return refuse(t, EOPNOTSUPP, err, "link %s exists in a new netns too, as another link",
				      l->name);
	}
	return 0;
}

/* ------------------------------------------------------------ moving, restoring */

/* Which links are veths whose peer is a bridge port here, and can be
 * made again rather than moved (veth.c). */
static int tp_plan_veths(struct tp *t, struct nshash_error *err)
{
	for (size_t i = 0; i < t->p.nlinks; i++) {
		const struct nsh_link *l = &t->p.links[i];
		if (l->kept || strcmp(l->kind, "veth") != 0)
			continue;
		if (!t->skh) {
			int r = nsh_nl_open(NETLINK_ROUTE, &t->skh, err);
			if (r < 0)
				return r;
		}
		int r = nsh_veth_plan(t->skp, t->skh, t->pfd, t->home, l, &t->veth[i], err);
		if (r < 0)
			return nshash_error_prefix(err, "transplant %s", t->path);
	}
	return 0;
}

/* The new container side keeps its ifindex when S has it free. */
static int free_index(const struct tp *t, int index)
{
	for (size_t i = 0; i < t->s.nlinks; i++)
		if (t->s.links[i].index == index)
			return 0;
	return index;
}

static int tp_move_links(struct tp *t, int from_p, struct nshash_error *err)
{
	struct nsh_netcfg cur = {0};
	if (!from_p) { /* back: the links' current indexes in S */
		int r = nsh_netcfg_read(t->sks, NSH_CFG_LINKS, &cur, err);
		if (r < 0)
			return r;
	}
	int r = 0;
	for (size_t i = 0; r == 0 && i < t->p.nlinks; i++) {
		const struct nsh_link *l = &t->p.links[i];
		if (l->kept || (!from_p && !t->moved[i]))
			continue;
		if (from_p && t->veth[i].ok) {
			t->touched = true;
			r = nsh_veth_recreate(t->skh, t->sks, t->sfd, t->home, l, free_index(t, l->index), &t->veth[i],
					      err);
			t->recreated[i] = r == 1;
			if (r != 0) {
				r = r < 0 ? nshash_error_prefix(err, "transplant %s", t->path) : 0;
				continue;
			}
		}
		if (from_p) {
			t->touched = true;
			r = nsh_link_move(t->skp, l, t->sfd, err);
			t->moved[i] = r == 0;
		} else {
			const struct nsh_link *c = nsh_netcfg_link(&cur, l->name);
			if (c)
				r = nsh_link_move(t->sks, c, t->pfd, err);
			if (r == 0)
				t->moved[i] = false;
		}
	}
	nsh_netcfg_free(&cur);
	return r;
}

/* Give netns `nsfd` (socket `sk`) P's configuration and check it took. */
static int tp_restore_into(struct tp *t, int nsfd, struct nl_sock *sk, const struct nsh_netcfg *want, bool wide,
			   unsigned counts[4], struct nshash_error *err)
{
	int r = nsh_netns_enter(nsfd, nsfd == t->pfd ? t->path : "the sized netns", err);
	if (r < 0)
		return r;
	if (wide)
		r = nsh_sysctl_sync(&want->wide, NULL, &counts[3], err);
	if (r == 0)
		r = nsh_netcfg_apply(sk, want, counts, err);
	if (r == 0)
		r = nsh_netcfg_compare(sk, want, 3000, err);
	if (r == 0)
		r = nsh_netcfg_finish(want, counts, err);
	int r2 = nsh_netns_return(t->home, err);
	return r2 < 0 ? r2 : r;
}

/* Mount the copy `tree` (or, tree < 0, bind the netns behind nsfd) onto
 * the file at path, never following a symlink there (the path is the
 * engine's; see pin.c). */
static int bind_at(int tree, int nsfd, const char *path)
{
	int target = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return -errno;
	int r = nsh_mount_at(tree, nsfd, target);
	close(target);
	return r;
}

static int tp_swap_mount(struct tp *t, struct nshash_error *err)
{
	t->touched = true;
	t->restore = nsh_mount_clone(t->pfd); /* -errno: bound back from pfd instead */
	if (umount2(t->path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return nsh_error_sys(err, errno, "unmount %s", t->path);
	t->unmounted = true;
	if (nshash_pin_is_netns(t->path, err) != 0)
		return nshash_error_set(err, EBUSY, "%s: another netns is mounted under it (stacked mounts)", t->path);
	int r = bind_at(-1, t->sfd, t->path);
	if (r < 0)
		return nsh_error_sys(err, r, "bind the sized netns at %s", t->path);
	t->bound = true;
	return 0;
}

static int tp_verify(struct tp *t, const struct nshash_create_opts *opts, struct nshash_netns_info *info,
		     struct nshash_error *err)
{
	struct stat st;
	int r = nshash_inspect_path(t->path, info, err);
	if (r < 0)
		return r;
	if (fstat(t->sfd, &st) < 0 || st.st_ino != info->inode)
		return nshash_error_set(err, EIO, "%s is not the sized netns after binding it", t->path);
	return nshash_verify(info, opts->sizes, t->path, err);
}

/* Put everything back as it was: P's mount, its links, their configuration. */
static int tp_undo(struct tp *t, struct nshash_error *err)
{
	if (t->bound && umount2(t->path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return nsh_error_sys(err, errno, "unmount the sized netns from %s", t->path);
	t->bound = false;
	if (t->unmounted) {
		int r = bind_at(t->restore, t->pfd, t->path);
		if (r < 0)
			return nsh_error_sys(err, r, "bind the original netns back at %s", t->path);
		t->unmounted = false;
	}
	for (size_t i = 0; i < t->p.nlinks; i++) {
		int r = t->veth[i].state ? nsh_veth_undo(t->skh, &t->veth[i], err) : 0;
		if (r < 0)
			return r;
		t->recreated[i] = false;
	}
	int r = tp_move_links(t, 0, err);
	if (r < 0)
		return r;
	unsigned counts[4] = {0};
	return tp_restore_into(t, t->pfd, t->skp, &t->p, false, counts, err);
}

static void tp_close(struct tp *t)
{
	free(t->fwd.wide.v);
	free(t->fwd.dev.v);
	nsh_netcfg_free(&t->s);
	free(t->moved);
	free(t->recreated);
	for (size_t i = 0; t->veth && i < t->p.nlinks; i++)
		nsh_veth_free(&t->veth[i]);
	free(t->veth);
	if (t->skh)
		nl_socket_free(t->skh);
	if (t->skp)
		nl_socket_free(t->skp);
	if (t->sks)
		nl_socket_free(t->sks);
	nsh_closep(&t->pfd);
	nsh_closep(&t->sfd);
	nsh_closep(&t->restore);
	nsh_closep(&t->home);
	nsh_netcfg_free(&t->p);
}

static void tp_report(const struct tp *t, struct nshash_transplant_report *rep)
{
	size_t off = 0;
	for (size_t i = 0; i < t->p.nlinks; i++) {
		if (t->p.links[i].kept)
			continue;
		rep->links++;
		int n = snprintf(rep->link_names + off, sizeof(rep->link_names) - off, "%s%s", off ? ", " : "",
				 t->p.links[i].name);
		if (n > 0 && off + (size_t)n < sizeof(rep->link_names))
			off += (size_t)n;
	}
}

static void add_name(char *buf, size_t len, const char *name)
{
	size_t off = strlen(buf);
	snprintf(buf + off, len - off, "%s%s", off ? ", " : "", name);
}

static void tp_report_veths(const struct tp *t, struct nshash_transplant_report *rep)
{
	for (size_t i = 0; i < t->p.nlinks; i++) {
		const struct nsh_veth *v = &t->veth[i];
		if (t->recreated[i]) {
			rep->recreated++;
			add_name(rep->recreated_names, sizeof(rep->recreated_names), t->p.links[i].name);
		} else if (v->candidate && v->why[0] && !rep->fallback[0]) {
			snprintf(rep->fallback, sizeof(rep->fallback), "%.15s: %.230s", t->p.links[i].name, v->why);
		}
	}
}

int nshash_netns_transplant(const struct nshash_transplant_opts *opts, const char *path,
			    struct nshash_transplant_report *rep, struct nshash_error *err)
{
	struct nshash_transplant_report scratch;
	if (!rep)
		rep = &scratch;
	memset(rep, 0, sizeof(*rep));
	struct tp t = {.path = path, .home = -1, .pfd = -1, .sfd = -1, .restore = -1};
	int r = tp_open(&t, err);
	if (r == 0)
		r = tp_check_processes(&t, opts->engine_made, err);
	if (r == 0)
		r = tp_read_p(&t, err);
	if (r == 0)
		r = tp_refuse_p(&t, err);
	if (r == 0)
		r = tp_create_s(&t, &opts->create, &rep->info, err);
	if (r == 0)
		r = tp_refuse_vs_s(&t, err);
	if (r == 0)
		r = tp_forward_config(&t, &opts->create, err);
	rep->refused = r < 0 && strstr(err->msg, ": refused: ") != NULL;
	if (r == 0)
		tp_report(&t, rep);
	if (r < 0 || opts->dry_run)
		goto out;
	unsigned counts[4] = {0};
	/* S takes P's place right after the links moved, before it is
	 * configured: a caller killed from then on leaves the links in S at
	 * the path, where the engine's teardown finds them; only a kill
	 * between the move and the bind (a few syscalls) loses them. */
	r = tp_plan_veths(&t, err);
	if (r == 0)
		r = tp_move_links(&t, 1, err);
	if (r == 0)
		r = tp_swap_mount(&t, err);
	if (r == 0)
		r = tp_restore_into(&t, t.sfd, t.sks, &t.fwd, true, counts, err);
	if (r == 0)
		r = tp_verify(&t, &opts->create, &rep->info, err);
	rep->addresses = counts[0];
	rep->routes = counts[1];
	rep->neighbours = counts[2];
	rep->sysctls = counts[3];
	tp_report_veths(&t, rep);
	if (r < 0) {
		nshash_error_prefix(err, "transplant %s", path);
		struct nshash_error uerr = {0};
		int u = tp_undo(&t, &uerr);
		rep->undone = u == 0;
		size_t len = strlen(err->msg);
		if (u == 0)
			snprintf(err->msg + len, sizeof(err->msg) - len, " (undone: %s is as it was)", path);
		else
			snprintf(err->msg + len, sizeof(err->msg) - len, " (UNDO FAILED, %s is left changed: %s)", path,
				 uerr.msg);
	}
out:
	tp_close(&t);
	return r;
}
