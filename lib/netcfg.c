/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A netns's network configuration, read from the kernel as raw rtnetlink
 * messages and replayed into another netns (the way `ip route save` /
 * `ip route restore` work): every attribute the kernel reported is given
 * back, so nothing is lost to a model that does not know it.  What the
 * kernel creates by itself (routes of protocol "kernel": prefix, local and
 * broadcast routes; IPv6 link-local addresses at link up) is left to it and
 * checked afterwards by comparing both sides. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/nexthop.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "netcfg.h"

#ifndef IFLA_NETNS_IMMUTABLE
#define IFLA_NETNS_IMMUTABLE 67 /* Linux 6.15+: u8, the link cannot change netns */
#endif
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h: carrier; glibc's net/if.h stops before it */
#endif
#define SYSNET "/proc/sys/net/"

/* ------------------------------------------------------------ messages */

static int msgs_push(struct nsh_msgs *m, const struct nlmsghdr *h)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct nlmsghdr **v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	struct nlmsghdr *c = malloc(h->nlmsg_len);
	if (!c)
		return -ENOMEM;
	memcpy(c, h, h->nlmsg_len);
	m->v[m->n++] = c;
	return 0;
}

static void msgs_free(struct nsh_msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

struct reply {
	struct nsh_msgs *out;
	int error;	  /* positive errno from the kernel */
	char extack[200]; /* the kernel's extended ack message */
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct reply *rp = arg;
	if (rp->out && msgs_push(rp->out, nlmsg_hdr(msg)) < 0) {
		rp->error = ENOMEM;
		return NL_STOP;
	}
	return NL_OK;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	(void)who;
	struct reply *rp = arg;
	rp->error = -e->error;
	struct nlmsghdr *h = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	size_t off = sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
	long len = (long)h->nlmsg_len - NLMSG_HDRLEN - (long)off;
	if (len > 0) {
		struct nlattr *a = nla_find((struct nlattr *)((char *)e + off), (int)len, NLMSGERR_ATTR_MSG);
		if (a)
			snprintf(rp->extack, sizeof(rp->extack), "%.*s", nla_len(a), (const char *)nla_data(a));
	}
	return NL_STOP;
}

/* Send `req`, collect replies into `out` (a dump) or wait for the ack. */
static int nl_exchange(struct nl_sock *sk, struct nl_msg *req, struct nsh_msgs *out, struct reply *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->out = out;
	int r = nl_send_auto(sk, req);
	if (r >= 0) {
		struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
		if (!cb) {
			rp->error = ENOMEM;
			return -ENOMEM;
		}
		nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, rp);
		nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, rp);
		nl_cb_err(cb, NL_CB_CUSTOM, on_error, rp);
		r = nl_recvmsgs(sk, cb);
		nl_cb_put(cb);
	}
	if (rp->error)
		return -rp->error;
	if (r < 0) {
		rp->error = EIO;
		snprintf(rp->extack, sizeof(rp->extack), "netlink: %s", nl_geterror(r));
		return -EIO;
	}
	return 0;
}

/* "why" for an error message: the kernel's extended ack if it gave one. */
static const char *why(const struct reply *rp)
{
	return rp->extack[0] ? rp->extack : strerror(rp->error);
}

/* Send a request built by the caller (NULL: building it ran out of memory)
 * and free it. */
static int send_request(struct nl_sock *sk, struct nl_msg *m, struct reply *rp)
{
	if (!m) {
		memset(rp, 0, sizeof(*rp));
		rp->error = ENOMEM;
		return -ENOMEM;
	}
	int r = nl_exchange(sk, m, NULL, rp);
	nlmsg_free(m);
	return r;
}

static int nsh_dump(struct nl_sock *sk, int type, const void *hdr, size_t hdrlen, struct nsh_msgs *out,
		    struct reply *rp)
{
	struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_DUMP);
	if (!m || nlmsg_append(m, (void *)hdr, hdrlen, NLMSG_ALIGNTO) < 0) {
		nlmsg_free(m);
		memset(rp, 0, sizeof(*rp));
		rp->error = ENOMEM;
		return -ENOMEM;
	}
	int r = nl_exchange(sk, m, out, rp);
	nlmsg_free(m);
	return r;
}

int nsh_nl_open(int protocol, struct nl_sock **out, struct nshash_error *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return nshash_error_set(err, ENOMEM, "netlink socket: out of memory");
	int r = nl_connect(sk, protocol);
	if (r < 0) {
		nl_socket_free(sk);
		return nshash_error_set(err, EIO, "netlink socket (protocol %d): %s", protocol, nl_geterror(r));
	}
	int one = 1;
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	*out = sk;
	return 0;
}

#define ATTRS(h, hdrlen)   ((struct nlattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdrlen)))
#define ATTRLEN(h, hdrlen) ((int)(h)->nlmsg_len - (int)NLMSG_HDRLEN - (int)NLMSG_ALIGN(hdrlen))

static struct nlattr *attr(const struct nlmsghdr *h, size_t hdrlen, int type)
{
	return nla_find(ATTRS(h, hdrlen), ATTRLEN(h, hdrlen), type);
}

/* ------------------------------------------------------------ links */

static void link_parse(const struct nlmsghdr *h, struct nsh_link *l)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	memset(l, 0, sizeof(*l));
	l->index = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	l->immutable = -1;
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, ATTRS(h, sizeof(*ifi)), ATTRLEN(h, sizeof(*ifi)), rem)
	{
		switch (nla_type(a)) {
		case IFLA_IFNAME:
			snprintf(l->name, sizeof(l->name), "%.*s", nla_len(a), (const char *)nla_data(a));
			break;
		case IFLA_MTU:
			l->mtu = nla_get_u32(a);
			break;
		case IFLA_TXQLEN:
			l->txqlen = nla_get_u32(a);
			break;
		case IFLA_ADDRESS:
			l->maclen = nla_len(a) < (int)sizeof(l->mac) ? nla_len(a) : (int)sizeof(l->mac);
			memcpy(l->mac, nla_data(a), (size_t)l->maclen);
			break;
		case IFLA_MASTER:
			l->master = (int)nla_get_u32(a);
			break;
		case IFLA_NETNS_IMMUTABLE:
			l->immutable = nla_get_u8(a) ? 1 : 0;
			break;
		case IFLA_LINKINFO: {
			struct nlattr *k = nla_find(nla_data(a), nla_len(a), IFLA_INFO_KIND);
			if (k)
				snprintf(l->kind, sizeof(l->kind), "%.*s", nla_len(k), (const char *)nla_data(k));
			break;
		}
		case IFLA_XDP: {
			struct nlattr *x = nla_find(nla_data(a), nla_len(a), IFLA_XDP_ATTACHED);
			l->xdp = x && nla_get_u8(x) != XDP_ATTACHED_NONE;
			break;
		}
		}
	}
}

int nsh_netcfg_add(struct nsh_netcfg *cfg, const void *buf, size_t len)
{
	const struct nlmsghdr *h = buf;
	int left = len > INT32_MAX ? INT32_MAX : (int)len;
	for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		struct nsh_msgs *to = NULL;
		size_t hdrlen = 0;
		switch (h->nlmsg_type) {
		case RTM_NEWLINK: {
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
				return -EINVAL;
			struct nsh_link *v = realloc(cfg->links, (cfg->nlinks + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			cfg->links = v;
			link_parse(h, &cfg->links[cfg->nlinks++]);
			continue;
		}
		case RTM_NEWADDR:
			to = &cfg->addrs, hdrlen = sizeof(struct ifaddrmsg);
			break;
		case RTM_NEWROUTE:
			to = &cfg->routes, hdrlen = sizeof(struct rtmsg);
			break;
		case RTM_NEWNEIGH:
			to = &cfg->neighs, hdrlen = sizeof(struct ndmsg);
			break;
		default:
			continue;
		}
		if (h->nlmsg_len < NLMSG_LENGTH(hdrlen))
			return -EINVAL;
		if (msgs_push(to, h) < 0)
			return -ENOMEM;
	}
	return left == 0 ? 0 : -EINVAL;
}

static int read_links(struct nl_sock *sk, struct nsh_netcfg *cfg, struct nshash_error *err)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nsh_msgs m = {0};
	struct reply rp;
	if (nsh_dump(sk, RTM_GETLINK, &ifi, sizeof(ifi), &m, &rp) < 0) {
		msgs_free(&m);
		return nshash_error_set(err, rp.error, "list links: %s", why(&rp));
	}
	cfg->links = calloc(m.n ? m.n : 1, sizeof(*cfg->links));
	if (!cfg->links) {
		msgs_free(&m);
		return nshash_error_set(err, ENOMEM, "list links: out of memory");
	}
	for (size_t i = 0; i < m.n; i++)
		if (m.v[i]->nlmsg_type == RTM_NEWLINK)
			link_parse(m.v[i], &cfg->links[cfg->nlinks++]);
	msgs_free(&m);
	return 0;
}

const struct nsh_link *nsh_netcfg_link(const struct nsh_netcfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nlinks; i++)
		if (strcmp(cfg->links[i].name, name) == 0)
			return &cfg->links[i];
	return NULL;
}

static const char *link_name(const struct nsh_netcfg *cfg, int index)
{
	for (size_t i = 0; i < cfg->nlinks; i++)
		if (cfg->links[i].index == index)
			return cfg->links[i].name;
	return "?";
}

static int link_set(struct nl_sock *sk, int index, unsigned flags, unsigned change, int attr_type, uint32_t value,
		    struct reply *rp)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = flags, .ifi_change = change};
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_ACK);
	if (m && (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
		  (attr_type && nla_put_u32(m, attr_type, value) < 0))) {
		nlmsg_free(m);
		m = NULL;
	}
	return send_request(sk, m, rp);
}

int nsh_link_move(struct nl_sock *sk, const struct nsh_link *l, int nsfd, struct nshash_error *err)
{
	struct reply rp;
	if (link_set(sk, l->index, 0, 0, IFLA_NET_NS_FD, (uint32_t)nsfd, &rp) < 0)
		return nshash_error_set(err, rp.error, "move link %s%s%s%s: %s", l->name, l->kind[0] ? " (" : "",
					l->kind, l->kind[0] ? ")" : "", why(&rp));
	return 0;
}

/* ------------------------------------------------------------ sysctls */

int nsh_sysvec_push(struct nsh_sysvec *s, const char *path, const char *value)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct nsh_sysent *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].path = strdup(path);
	s->v[s->n].value = strdup(value);
	if (!s->v[s->n].path || !s->v[s->n].value) {
		free(s->v[s->n].path);
		free(s->v[s->n].value);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

static void sysvec_free(struct nsh_sysvec *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].value);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* /proc/sys/net/REL of the calling thread's netns, through sysctl.c.  -errno. */
static int sys_read(const char *rel, char *buf, size_t len)
{
	char path[512];
	if ((size_t)snprintf(path, sizeof(path), SYSNET "%s", rel) >= sizeof(path))
		return -ENAMETOOLONG;
	return nsh_sysctl_text(AT_FDCWD, path, buf, len);
}

static int sys_write(const char *rel, const char *value)
{
	char path[512];
	if ((size_t)snprintf(path, sizeof(path), SYSNET "%s", rel) >= sizeof(path))
		return -ENAMETOOLONG;
	return nsh_sysctl_put(AT_FDCWD, path, value);
}

/* ipv4|ipv6 / conf|neigh / DEV / ...: a per-device knob unless DEV is
 * "all" or "default". */
static bool per_device(const char *rel)
{
	if (strncmp(rel, "ipv4/", 5) && strncmp(rel, "ipv6/", 5))
		return false;
	const char *p = rel + 5;
	if (strncmp(p, "conf/", 5) && strncmp(p, "neigh/", 6))
		return false;
	p = strchr(p, '/') + 1;
	return strncmp(p, "all/", 4) && strncmp(p, "default/", 8);
}

/* Every readable and writable knob under /proc/sys/net/REL. */
static int sys_walk(const char *rel, struct nsh_netcfg *cfg)
{
	char dir[512];
	snprintf(dir, sizeof(dir), SYSNET "%s", rel);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char sub[512], value[4096];
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= sizeof(sub))
			continue;
		if (de->d_type == DT_DIR) {
			r = sys_walk(sub, cfg);
			continue;
		}
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || (st.st_mode & 0600) != 0600)
			continue; /* read-only (mc_forwarding, *_entries) or write-only (flush) */
		if (sys_read(sub, value, sizeof(value)) < 0)
			continue; /* unset (stable_secret reads EIO) */
		r = nsh_sysvec_push(per_device(sub) ? &cfg->dev : &cfg->wide, sub, value);
	}
	closedir(d);
	return r;
}

static bool sys_selected(const struct nsh_sysent *e, const char *prefix, size_t plen)
{
	if (!plen)
		return true;
	const char *p = strchr(e->path + 5, '/'); /* "ipvN/conf|neigh/DEV/knob" */
	return p && strncmp(p, prefix, plen) == 0;
}

int nsh_sysctl_sync(const struct nsh_sysvec *want, const char *dev, unsigned *written, struct nshash_error *err)
{
	char prefix[IF_NAMESIZE + 2] = "";
	size_t plen = dev ? (size_t)snprintf(prefix, sizeof(prefix), "/%s/", dev) : 0;
	const struct nsh_sysent *failed = NULL;
	int failed_r = 0;
	/* Several passes: writing one knob can change or allow another
	 * (conf/all/forwarding sets every device's; ip_local_port_range must
	 * stay above ip_unprivileged_port_start; a _ms twin). */
	for (int pass = 0; pass < 4; pass++) {
		bool differs = false;
		for (size_t i = 0; i < want->n; i++) {
			const struct nsh_sysent *e = &want->v[i];
			char have[4096];
			if (!sys_selected(e, prefix, plen))
				continue;
			int r = sys_read(e->path, have, sizeof(have));
			if (r == -ENOENT || (r == 0 && strcmp(have, e->value) == 0))
				continue; /* as wanted, or not in this kernel */
			if (pass == 3) {
				if (failed == e)
					return nshash_error_set(err, failed_r, "set net/%s to \"%s\": %s", e->path,
								e->value, strerror(-failed_r));
				return nshash_error_set(err, EIO, "net/%s reads \"%s\" after writing \"%s\"", e->path,
							r == 0 ? have : "?", e->value);
			}
			differs = true;
			r = sys_write(e->path, e->value);
			if (r < 0) {
				failed = e;
				failed_r = r;
			} else if (written) {
				(*written)++;
			}
		}
		if (!differs)
			break;
	}
	return 0;
}

/* ------------------------------------------------------------ netfilter */

/* nftables tables (iptables-nft keeps its rules there too) and legacy
 * x_tables tables instantiated in the calling thread's netns. */
static int read_firewall(struct nsh_netcfg *cfg, struct nshash_error *err)
{
	static const char *const legacy[] = {"ip_tables_names", "ip6_tables_names", "arp_tables_names"};
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]) && !cfg->firewall[0]; i++) {
		char path[64], buf[128] = "";
		snprintf(path, sizeof(path), "/proc/thread-self/net/%s", legacy[i]);
		cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;
		if (n > 0) {
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(cfg->firewall, sizeof(cfg->firewall), "%.*s table %s (legacy x_tables)",
				 (int)strcspn(legacy[i], "_"), legacy[i], buf);
		}
	}
	if (cfg->firewall[0])
		return 0;
	struct nl_sock *sk;
	int r = nsh_nl_open(NETLINK_NETFILTER, &sk, err);
	if (r < 0)
		return r;
	struct nfgenmsg nfg = {.nfgen_family = AF_UNSPEC, .version = NFNETLINK_V0};
	struct nsh_msgs m = {0};
	struct reply rp;
	r = nsh_dump(sk, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, &nfg, sizeof(nfg), &m, &rp);
	nl_socket_free(sk);
	if (r < 0 && rp.error != EOPNOTSUPP && rp.error != ENOENT && rp.error != EPROTONOSUPPORT) {
		msgs_free(&m);
		return nshash_error_set(err, rp.error, "list nftables tables: %s", why(&rp));
	}
	if (m.n) {
		const struct nfgenmsg *g = NLMSG_DATA(m.v[0]);
		struct nlattr *a = attr(m.v[0], sizeof(*g), NFTA_TABLE_NAME);
		static const char *const fam[] = {
		    [1] = "inet", [2] = "ip", [3] = "arp", [5] = "netdev", [7] = "bridge", [10] = "ip6"};
		const char *f =
		    g->nfgen_family < sizeof(fam) / sizeof(fam[0]) && fam[g->nfgen_family] ? fam[g->nfgen_family] : "?";
		snprintf(cfg->firewall, sizeof(cfg->firewall), "nftables table %s %.*s", f, a ? nla_len(a) - 1 : 1,
			 a ? (const char *)nla_data(a) : "?");
	}
	msgs_free(&m);
	return 0;
}

/* ------------------------------------------------------------ reading */

static int dump_into(struct nl_sock *sk, int type, size_t hdrlen, struct nsh_msgs *out, const char *what, bool optional,
		     struct nshash_error *err)
{
	unsigned char hdr[32] = {0}; /* every rtnetlink header starts with the family: AF_UNSPEC */
	struct reply rp;
	if (nsh_dump(sk, type, hdr, hdrlen, out, &rp) < 0) {
		if (optional && (rp.error == EOPNOTSUPP || rp.error == EINVAL))
			return 0;
		return nshash_error_set(err, rp.error, "list %s: %s", what, why(&rp));
	}
	return 0;
}

int nsh_netcfg_read(struct nl_sock *sk, unsigned what, struct nsh_netcfg *cfg, struct nshash_error *err)
{
	int r = 0;
	memset(cfg, 0, sizeof(*cfg));
	if (what & NSH_CFG_LINKS)
		r = read_links(sk, cfg, err);
	if (r == 0 && (what & NSH_CFG_ADDRS))
		r = dump_into(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &cfg->addrs, "addresses", false, err);
	if (r == 0 && (what & NSH_CFG_ROUTES))
		r = dump_into(sk, RTM_GETROUTE, sizeof(struct rtmsg), &cfg->routes, "routes", false, err);
	if (r == 0 && (what & NSH_CFG_NEIGHS))
		r = dump_into(sk, RTM_GETNEIGH, sizeof(struct ndmsg), &cfg->neighs, "neighbours", false, err);
	if (r == 0 && (what & NSH_CFG_RULES))
		r = dump_into(sk, RTM_GETRULE, sizeof(struct rtmsg), &cfg->rules, "routing rules", false, err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = dump_into(sk, RTM_GETQDISC, sizeof(struct tcmsg), &cfg->qdiscs, "qdiscs", false, err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = dump_into(sk, RTM_GETNEXTHOP, sizeof(struct nhmsg), &cfg->nexthops, "nexthop objects", true, err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = read_firewall(cfg, err);
	if (r == 0 && (what & NSH_CFG_SYSCTL)) {
		r = sys_walk("", cfg);
		if (r < 0)
			nshash_error_set(err, r, "read /proc/sys/net: %s", strerror(-r));
	}
	if (r < 0)
		nsh_netcfg_free(cfg);
	return r;
}

void nsh_netcfg_free(struct nsh_netcfg *cfg)
{
	free(cfg->links);
	msgs_free(&cfg->addrs);
	msgs_free(&cfg->routes);
	msgs_free(&cfg->neighs);
	msgs_free(&cfg->rules);
	msgs_free(&cfg->qdiscs);
	msgs_free(&cfg->nexthops);
	sysvec_free(&cfg->wide);
	sysvec_free(&cfg->dev);
	memset(cfg, 0, sizeof(*cfg));
}

/* ------------------------------------------------------------ describing */

static void addr_text(int family, const struct nlattr *a, char *buf, size_t len)
{
	if (!a || (family != AF_INET && family != AF_INET6) || nla_len(a) < (family == AF_INET ? 4 : 16))
		snprintf(buf, len, "?");
	else
		inet_ntop(family, nla_data(a), buf, (socklen_t)len);
}

static void describe_addr(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct nlattr *a = attr(h, sizeof(*ifa), IFA_LOCAL);
	char ip[64];
	addr_text(ifa->ifa_family, a ? a : attr(h, sizeof(*ifa), IFA_ADDRESS), ip, sizeof(ip));
	snprintf(buf, len, "address %s/%u on %s", ip, ifa->ifa_prefixlen, link_name(cfg, (int)ifa->ifa_index));
}

static uint32_t route_table(const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *t = attr(h, sizeof(*rtm), RTA_TABLE);
	return t ? nla_get_u32(t) : rtm->rtm_table;
}

static void describe_route(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	char dst[64] = "default", gw[80] = "", dev[48] = "", metric[32] = "";
	struct nlattr *a;
	if ((a = attr(h, sizeof(*rtm), RTA_DST))) {
		char ip[48];
		addr_text(rtm->rtm_family, a, ip, sizeof(ip));
		snprintf(dst, sizeof(dst), "%s/%u", ip, rtm->rtm_dst_len);
	}
	if ((a = attr(h, sizeof(*rtm), RTA_GATEWAY))) {
		char ip[48];
		addr_text(rtm->rtm_family, a, ip, sizeof(ip));
		snprintf(gw, sizeof(gw), " via %s", ip);
	}
	if ((a = attr(h, sizeof(*rtm), RTA_OIF)))
		snprintf(dev, sizeof(dev), " dev %s", link_name(cfg, (int)nla_get_u32(a)));
	if ((a = attr(h, sizeof(*rtm), RTA_PRIORITY)))
		snprintf(metric, sizeof(metric), " metric %u", nla_get_u32(a));
	snprintf(buf, len, "%sroute %s%s%s table %u%s proto %u", rtm->rtm_family == AF_INET6 ? "IPv6 " : "", dst, gw,
		 dev, route_table(h), metric, rtm->rtm_protocol);
}

/* ------------------------------------------------------------ canonical forms */

/* Address flags a user sets (the rest is state: tentative, dadfailed, ...). */
#define ADDR_SETTABLE (IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN)
/* ... and what a comparison looks at. */
#define ADDR_COMPARED (ADDR_SETTABLE | IFA_F_SECONDARY | IFA_F_PERMANENT | IFA_F_DEPRECATED)
/* Route flags that are configuration, not state (dead, linkdown, offload). */
#define ROUTE_SETTABLE RTNH_F_ONLINK

static uint32_t addr_flags(const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct nlattr *f = attr(h, sizeof(*ifa), IFA_FLAGS);
	return f ? nla_get_u32(f) : ifa->ifa_flags;
}

struct buf {
	unsigned char d[4096];
	size_t n;
};
static void put(struct buf *b, const void *p, size_t len)
{
	if (b->n + len <= sizeof(b->d)) {
		memcpy(b->d + b->n, p, len);
		b->n += len;
	} else {
		b->n = sizeof(b->d) + 1; /* marks overflow: never equal */
	}
}
static void put_attr(struct buf *b, const struct nlattr *a)
{
	uint16_t t = (uint16_t)nla_type(a);
	put(b, &t, sizeof(t));
	put(b, a, (size_t)a->nla_len);
}

/* The parts of an address a comparison cares about: not the remaining
 * lifetimes (they tick), only whether they are finite. */
static void canon_addr(const struct nlmsghdr *h, struct buf *b)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	uint32_t hdr[4] = {ifa->ifa_family | ifa->ifa_prefixlen << 8 | (uint32_t)ifa->ifa_scope << 16, ifa->ifa_index,
			   addr_flags(h) & ADDR_COMPARED, 0};
	struct nlattr *ci = attr(h, sizeof(*ifa), IFA_CACHEINFO);
	if (ci && nla_len(ci) >= (int)sizeof(struct ifa_cacheinfo)) {
		const struct ifa_cacheinfo *c = nla_data(ci);
		hdr[3] = (c->ifa_valid == 0xFFFFFFFFu) | (c->ifa_prefered == 0xFFFFFFFFu) << 1;
	}
	b->n = 0;
	put(b, hdr, sizeof(hdr));
	static const int keep[] = {IFA_ADDRESS, IFA_LOCAL, IFA_BROADCAST, IFA_LABEL, IFA_RT_PRIORITY, IFA_PROTO};
	for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
		struct nlattr *a = attr(h, sizeof(*ifa), keep[k]);
		if (a)
			put_attr(b, a);
	}
}

static bool route_attr_compared(int type)
{
	return type != RTA_CACHEINFO && type != RTA_EXPIRES && type != RTA_TABLE;
}

/* A route: header (state flags masked), table, attributes in the
 * kernel's order minus cache info; multipath nexthops without state flags. */
static void canon_route(const struct nlmsghdr *h, struct buf *b)
{
	struct rtmsg rtm = *(const struct rtmsg *)NLMSG_DATA(h);
	rtm.rtm_flags &= ROUTE_SETTABLE;
	rtm.rtm_table = 0;
	uint32_t table = route_table(h);
	b->n = 0;
	put(b, &rtm, sizeof(rtm));
	put(b, &table, sizeof(table));
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, ATTRS(h, sizeof(rtm)), ATTRLEN(h, sizeof(rtm)), rem)
	{
		if (!route_attr_compared(nla_type(a)))
			continue;
		if (nla_type(a) != RTA_MULTIPATH) {
			put_attr(b, a);
			continue;
		}
		const unsigned char *p = nla_data(a);
		int left = nla_len(a);
		while (left >= (int)sizeof(struct rtnexthop)) {
			struct rtnexthop nh;
			memcpy(&nh, p, sizeof(nh));
			if (nh.rtnh_len < sizeof(nh) || nh.rtnh_len > left)
				break;
			unsigned short len = nh.rtnh_len;
			nh.rtnh_flags &= ROUTE_SETTABLE;
			put(b, &nh, sizeof(nh));
			put(b, p + sizeof(nh), len - sizeof(nh));
			p += RTNH_ALIGN(len);
			left -= RTNH_ALIGN(len);
		}
	}
}

static bool neigh_kept(const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return (nd->ndm_family == AF_INET || nd->ndm_family == AF_INET6) && (nd->ndm_state & NUD_PERMANENT) &&
	       !(nd->ndm_flags & NTF_PROXY);
}

static void canon_neigh(const struct nlmsghdr *h, struct buf *b)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	uint32_t hdr[3] = {nd->ndm_family, (uint32_t)nd->ndm_ifindex, nd->ndm_state | (uint32_t)nd->ndm_flags << 16};
	b->n = 0;
	put(b, hdr, sizeof(hdr));
	struct nlattr *a;
	if ((a = attr(h, sizeof(*nd), NDA_DST)))
		put_attr(b, a);
	if ((a = attr(h, sizeof(*nd), NDA_LLADDR)))
		put_attr(b, a);
}

/* ------------------------------------------------------------ what to replay */

static bool ifindex_wanted(const struct nsh_netcfg *want, int index)
{
	for (size_t i = 0; i < want->nlinks; i++)
		if (want->links[i].index == index)
			return true;
	return false;
}

/* The kernel makes its own routes (prefix, local, broadcast, link-local,
 * multicast) from addresses and link state: those are added only when they
 * are still missing once everything else is back (the order addresses and
 * link state were set in decides some), and never the local routes of
 * addresses, which the kernel owns. */
static bool route_replayed(const struct nlmsghdr *h, bool kernel_pass)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	if (h->nlmsg_type != RTM_NEWROUTE || (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) ||
	    (rtm->rtm_flags & RTM_F_CLONED))
		return false;
	if (rtm->rtm_protocol != RTPROT_KERNEL)
		return !kernel_pass;
	return kernel_pass && rtm->rtm_type != RTN_LOCAL && rtm->rtm_type != RTN_ANYCAST &&
	       rtm->rtm_type != RTN_BROADCAST;
}

/* A new request of `type` from the dumped message `h`: the header the
 * caller prepared from h's (state flags cleared), then h's attributes that
 * `keep` accepts (all when NULL). */
static struct nl_msg *replay_msg(int type, int flags, const struct nlmsghdr *h, const void *hdr, size_t hdrlen,
				 bool (*keep)(int type))
{
	struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_ACK | flags);
	if (!m || nlmsg_append(m, (void *)hdr, hdrlen, NLMSG_ALIGNTO) < 0)
		goto fail;
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, ATTRS(h, hdrlen), ATTRLEN(h, hdrlen), rem)
	{
		if (keep && !keep(nla_type(a)))
			continue;
		if (nla_put(m, a->nla_type, nla_len(a), nla_data(a)) < 0)
			goto fail;
	}
	return m;
fail:
	nlmsg_free(m);
	return NULL;
}

static bool addr_attr_kept(int type)
{
	return type == IFA_ADDRESS || type == IFA_LOCAL || type == IFA_BROADCAST || type == IFA_LABEL ||
	       type == IFA_CACHEINFO || type == IFA_RT_PRIORITY || type == IFA_PROTO || type == IFA_ANYCAST;
}

static int addr_add(struct nl_sock *sk, const struct nlmsghdr *h, struct reply *rp)
{
	struct ifaddrmsg ifa = *(const struct ifaddrmsg *)NLMSG_DATA(h);
	uint32_t flags = addr_flags(h) & ADDR_SETTABLE;
	ifa.ifa_flags = (unsigned char)flags;
	struct nl_msg *m = replay_msg(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, h, &ifa, sizeof(ifa), addr_attr_kept);
	if (m && nla_put_u32(m, IFA_FLAGS, flags) < 0) {
		nlmsg_free(m);
		m = NULL;
	}
	return send_request(sk, m, rp);
}

static int addr_del(struct nl_sock *sk, const struct nlmsghdr *h, struct reply *rp)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	return send_request(sk, replay_msg(RTM_DELADDR, 0, h, ifa, sizeof(*ifa), addr_attr_kept), rp);
}

static int route_add(struct nl_sock *sk, const struct nlmsghdr *h, struct reply *rp)
{
	struct rtmsg rtm = *(const struct rtmsg *)NLMSG_DATA(h);
	rtm.rtm_flags &= ROUTE_SETTABLE;
	/* State flags cleared in multipath nexthops too, cache info dropped and
	 * an IPv6 expiry turned back into RTA_EXPIRES.  IPv4 keeps routes that
	 * differ only in their nexthop side by side (two default routes of the
	 * same metric via eth0 and eth1): append, in the order they were read;
	 * an identical route is still EEXIST.  IPv6 reports such routes as one
	 * multipath route, given back as such. */
	int excl = rtm.rtm_family == AF_INET ? NLM_F_APPEND : NLM_F_EXCL;
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | excl);
	if (!m || nlmsg_append(m, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0)
		goto nomem;
	struct nlattr *a;
	int rem;
	nla_for_each_attr(a, ATTRS(h, sizeof(rtm)), ATTRLEN(h, sizeof(rtm)), rem)
	{
		int t = nla_type(a), r = 0;
		if (t == RTA_CACHEINFO) {
			const struct rta_cacheinfo *ci = nla_data(a);
			long hz = sysconf(_SC_CLK_TCK);
			if (rtm.rtm_family == AF_INET6 && nla_len(a) >= (int)sizeof(*ci) && ci->rta_expires && hz > 0)
				r = nla_put_u32(m, RTA_EXPIRES, (uint32_t)((long)ci->rta_expires / hz));
		} else if (t == RTA_MULTIPATH) {
			unsigned char mp[4096];
			int len = nla_len(a) < (int)sizeof(mp) ? nla_len(a) : (int)sizeof(mp);
			memcpy(mp, nla_data(a), (size_t)len);
			for (int off = 0; off + (int)sizeof(struct rtnexthop) <= len;) {
				struct rtnexthop *nh = (struct rtnexthop *)(mp + off);
				if (nh->rtnh_len < sizeof(*nh))
					break;
				nh->rtnh_flags &= ROUTE_SETTABLE;
				off += RTNH_ALIGN(nh->rtnh_len);
			}
			r = nla_put(m, a->nla_type, len, mp);
		} else {
			r = nla_put(m, a->nla_type, nla_len(a), nla_data(a));
		}
		if (r < 0)
			goto nomem;
	}
	return send_request(sk, m, rp);
nomem:
	nlmsg_free(m);
	return send_request(sk, NULL, rp);
}

static int neigh_add(struct nl_sock *sk, const struct nlmsghdr *h, struct reply *rp)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return send_request(sk, replay_msg(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, h, nd, sizeof(*nd), NULL), rp);
}

/* ------------------------------------------------------------ applying */

static bool same_canon(const struct buf *a, const struct buf *b)
{
	return a->n == b->n && a->n <= sizeof(a->d) && memcmp(a->d, b->d, a->n) == 0;
}

/* Index in `have` of a message whose canonical form equals `h`'s, or -1. */
static long find_same(const struct nsh_msgs *have, const struct nlmsghdr *h,
		      void (*canon)(const struct nlmsghdr *, struct buf *))
{
	struct buf x, y;
	canon(h, &x);
	for (size_t i = 0; i < have->n; i++) {
		canon(have->v[i], &y);
		if (same_canon(&x, &y))
			return (long)i;
	}
	return -1;
}

/* Same address (family, link, local/address, prefix), whatever its flags. */
static bool same_addr_key(const struct nlmsghdr *a, const struct nlmsghdr *b)
{
	const struct ifaddrmsg *x = NLMSG_DATA(a), *y = NLMSG_DATA(b);
	if (x->ifa_family != y->ifa_family || x->ifa_index != y->ifa_index || x->ifa_prefixlen != y->ifa_prefixlen)
		return false;
	static const int keys[] = {IFA_LOCAL, IFA_ADDRESS};
	for (size_t k = 0; k < 2; k++) {
		struct nlattr *p = attr(a, sizeof(*x), keys[k]), *q = attr(b, sizeof(*y), keys[k]);
		if (!p != !q ||
		    (p && (nla_len(p) != nla_len(q) || memcmp(nla_data(p), nla_data(q), (size_t)nla_len(p)))))
			return false;
	}
	return true;
}

static int apply_addrs(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned *count, struct nshash_error *err)
{
	struct nsh_msgs have = {0};
	int r = dump_into(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &have, "addresses", false, err);
	/* The kernel appends IPv4 addresses and puts a new IPv6 address first
	 * among those of its scope: IPv4 in the order read, IPv6 backwards. */
	size_t n = want->addrs.n;
	for (size_t k = 0; r == 0 && k < 2 * n; k++) {
		const struct nlmsghdr *h = want->addrs.v[k < n ? k : 2 * n - 1 - k];
		const struct ifaddrmsg *ifa = NLMSG_DATA(h);
		if (h->nlmsg_type != RTM_NEWADDR || !ifindex_wanted(want, (int)ifa->ifa_index) ||
		    ifa->ifa_family != (k < n ? AF_INET : AF_INET6))
			continue;
		long j = find_same(&have, h, canon_addr);
		if (j >= 0)
			continue;
		struct reply rp;
		for (size_t k = 0; k < have.n; k++) /* there, but different: replace it */
			if (same_addr_key(have.v[k], h) && addr_del(sk, have.v[k], &rp) < 0 &&
			    rp.error != EADDRNOTAVAIL) {
				char d[160];
				describe_addr(want, h, d, sizeof(d));
				r = nshash_error_set(err, rp.error, "replace %s: %s", d, why(&rp));
			}
		if (r == 0 && addr_add(sk, h, &rp) < 0) {
			char d[160];
			describe_addr(want, h, d, sizeof(d));
			r = nshash_error_set(err, rp.error, "add %s: %s", d, why(&rp));
		}
		(*count)++;
	}
	msgs_free(&have);
	return r;
}

/* Addresses the kernel made that `want` does not have (an IPv6 link-local
 * address generated at link up under another addr_gen_mode). */
static int drop_extra_addrs(struct nl_sock *sk, const struct nsh_netcfg *want, struct nshash_error *err)
{
	struct nsh_msgs have = {0};
	int r = dump_into(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &have, "addresses", false, err);
	for (size_t i = 0; r == 0 && i < have.n; i++) {
		const struct ifaddrmsg *ifa = NLMSG_DATA(have.v[i]);
		if (!ifindex_wanted(want, (int)ifa->ifa_index))
			continue;
		bool wanted = false;
		for (size_t k = 0; !wanted && k < want->addrs.n; k++)
			wanted = same_addr_key(want->addrs.v[k], have.v[i]);
		struct reply rp;
		if (!wanted && addr_del(sk, have.v[i], &rp) < 0 && rp.error != EADDRNOTAVAIL) {
			char d[160];
			describe_addr(want, have.v[i], d, sizeof(d));
			r = nshash_error_set(err, rp.error, "remove %s: %s", d, why(&rp));
		}
	}
	msgs_free(&have);
	return r;
}

static bool route_wanted(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *oif = attr(h, sizeof(*rtm), RTA_OIF);
	return !oif || ifindex_wanted(want, (int)nla_get_u32(oif));
}

/* Routes in several passes: one whose gateway is reachable only through
 * another route waits for it. */
static int apply_routes(struct nl_sock *sk, const struct nsh_netcfg *want, bool kernel_pass, unsigned *count,
			struct nshash_error *err)
{
	size_t n = want->routes.n, pending = 0;
	bool *done = calloc(n ? n : 1, sizeof(bool));
	if (!done)
		return nshash_error_set(err, ENOMEM, "routes: out of memory");
	for (size_t i = 0; i < n; i++) {
		done[i] = !route_replayed(want->routes.v[i], kernel_pass) || !route_wanted(want, want->routes.v[i]);
		pending += !done[i];
	}
	int r = 0;
	const struct nlmsghdr *last = NULL;
	struct reply last_rp = {0};
	while (pending) {
		size_t progress = 0;
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			struct reply rp;
			if (route_add(sk, want->routes.v[i], &rp) == 0 || rp.error == EEXIST) {
				done[i] = true;
				progress++;
				*count += rp.error == 0;
				continue;
			}
			last = want->routes.v[i];
			last_rp = rp;
			if (rp.error != ENETUNREACH && rp.error != EHOSTUNREACH && rp.error != EINVAL &&
			    rp.error != ENODEV && rp.error != ESRCH)
				break;
		}
		pending -= progress;
		if (!progress && pending) {
			char d[256];
			describe_route(want, last, d, sizeof(d));
			r = nshash_error_set(err, last_rp.error, "add %s: %s", d, why(&last_rp));
			break;
		}
	}
	free(done);
	return r;
}

static int apply_neighs(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned *count, struct nshash_error *err)
{
	for (size_t i = 0; i < want->neighs.n; i++) {
		const struct nlmsghdr *h = want->neighs.v[i];
		const struct ndmsg *nd = NLMSG_DATA(h);
		if (h->nlmsg_type != RTM_NEWNEIGH || !neigh_kept(h) || !ifindex_wanted(want, nd->ndm_ifindex))
			continue;
		struct reply rp;
		if (neigh_add(sk, h, &rp) < 0) {
			char ip[64];
			addr_text(nd->ndm_family, attr(h, sizeof(*nd), NDA_DST), ip, sizeof(ip));
			return nshash_error_set(err, rp.error, "add permanent neighbour %s on %s: %s", ip,
						link_name(want, nd->ndm_ifindex), why(&rp));
		}
		(*count)++;
	}
	return 0;
}

static int apply_link(struct nl_sock *sk, const struct nsh_link *l, const struct nsh_link *cur, bool up,
		      struct nshash_error *err)
{
	struct reply rp;
	if (!up && cur->mtu != l->mtu && link_set(sk, cur->index, 0, 0, IFLA_MTU, l->mtu, &rp) < 0)
		return nshash_error_set(err, rp.error, "set MTU %u on %s: %s", l->mtu, l->name, why(&rp));
	if (up && (l->flags & IFF_UP) != (cur->flags & IFF_UP) &&
	    link_set(sk, cur->index, l->flags & IFF_UP, IFF_UP, 0, 0, &rp) < 0)
		return nshash_error_set(err, rp.error, "set %s %s: %s", l->name, l->flags & IFF_UP ? "up" : "down",
					why(&rp));
	return 0;
}

/* For each link: MTU, then its sysctls (IPv6 DAD off while the addresses go
 * back: they passed it, or were exempt, where they come from), addresses,
 * up, routes, neighbours.  DAD stays off until nsh_netcfg_finish(): the
 * kernel completes even a skipped DAD in a work item, later. */
int nsh_netcfg_apply(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned counts[4], struct nshash_error *err)
{
	unsigned scratch[4] = {0};
	if (!counts)
		counts = scratch;
	struct nsh_netcfg cur;
	int r = nsh_netcfg_read(sk, NSH_CFG_LINKS, &cur, err);
	for (size_t i = 0; r == 0 && i < want->nlinks; i++) {
		const struct nsh_link *l = &want->links[i], *c = nsh_netcfg_link(&cur, l->name);
		if (!c)
			continue;
		r = apply_link(sk, l, c, false, err);
		if (r == 0)
			r = nsh_sysctl_sync(&want->dev, l->name, &counts[3], err);
		if (r == 0) {
			char dad[96];
			snprintf(dad, sizeof(dad), "ipv6/conf/%s/accept_dad", l->name);
			int w = sys_write(dad, "0");
			if (w < 0 && w != -ENOENT)
				r = nshash_error_set(err, w, "set net/%s to 0: %s", dad, strerror(-w));
		}
	}
	if (r == 0)
		r = apply_addrs(sk, want, &counts[0], err);
	for (size_t i = 0; r == 0 && i < want->nlinks; i++) {
		const struct nsh_link *c = nsh_netcfg_link(&cur, want->links[i].name);
		if (c)
			r = apply_link(sk, &want->links[i], c, true, err);
	}
	if (r == 0)
		r = drop_extra_addrs(sk, want, err);
	if (r == 0)
		r = apply_routes(sk, want, false, &counts[1], err);
	if (r == 0)
		r = apply_routes(sk, want, true, &counts[1], err);
	if (r == 0)
		r = apply_neighs(sk, want, &counts[2], err);
	nsh_netcfg_free(&cur);
	return r;
}

int nsh_netcfg_finish(const struct nsh_netcfg *want, unsigned counts[4], struct nshash_error *err)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < want->nlinks; i++)
		r = nsh_sysctl_sync(&want->dev, want->links[i].name, &counts[3], err);
	return r;
}

/* ------------------------------------------------------------ comparing */

#define LINK_FLAGS_COMPARED                                                                                            \
	(IFF_UP | IFF_LOWER_UP | IFF_NOARP | IFF_PROMISC | IFF_ALLMULTI | IFF_MULTICAST | IFF_DEBUG | IFF_POINTOPOINT)

static int compare_links(const struct nsh_netcfg *want, const struct nsh_netcfg *have, struct nshash_error *err)
{
	for (size_t i = 0; i < want->nlinks; i++) {
		const struct nsh_link *w = &want->links[i], *h = nsh_netcfg_link(have, w->name);
		if (!h)
			return nshash_error_set(err, ENODEV, "link %s is missing", w->name);
		if (h->index != w->index)
			return nshash_error_set(err, EIO, "link %s has ifindex %d, had %d", w->name, h->index,
						w->index);
		if (h->maclen != w->maclen || memcmp(h->mac, w->mac, (size_t)w->maclen))
			return nshash_error_set(err, EIO, "link %s: its hardware address changed", w->name);
		if (h->mtu != w->mtu)
			return nshash_error_set(err, EIO, "link %s has MTU %u, had %u", w->name, h->mtu, w->mtu);
		if (h->txqlen != w->txqlen)
			return nshash_error_set(err, EIO, "link %s has qlen %u, had %u", w->name, h->txqlen, w->txqlen);
		if ((h->flags ^ w->flags) & LINK_FLAGS_COMPARED)
			return nshash_error_set(err, EIO, "link %s has flags 0x%x, had 0x%x", w->name,
						h->flags & LINK_FLAGS_COMPARED, w->flags & LINK_FLAGS_COMPARED);
	}
	return 0;
}

/* Every message of `want` (accepted by `pick`) has an equal one in `have`
 * and the other way round, for the wanted links. */
static int compare_set(const struct nsh_netcfg *want, const struct nsh_msgs *w, const struct nsh_msgs *h,
		       bool (*pick)(const struct nsh_netcfg *, const struct nlmsghdr *),
		       void (*canon)(const struct nlmsghdr *, struct buf *),
		       void (*describe)(const struct nsh_netcfg *, const struct nlmsghdr *, char *, size_t),
		       struct nshash_error *err)
{
	for (int dir = 0; dir < 2; dir++) {
		const struct nsh_msgs *a = dir ? h : w, *b = dir ? w : h;
		for (size_t i = 0; i < a->n; i++) {
			if (!pick(want, a->v[i]) || find_same(b, a->v[i], canon) >= 0)
				continue;
			/* duplicates in b that pick refuses are fine; look only among picked */
			char d[256];
			describe(want, a->v[i], d, sizeof(d));
			return nshash_error_set(err, EIO, "%s %s", d, dir ? "appeared" : "is missing");
		}
	}
	return 0;
}

static bool pick_addr(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	return h->nlmsg_type == RTM_NEWADDR && ifindex_wanted(want, (int)ifa->ifa_index);
}
/* The local route of an IPv6 address still in DAD where `want` was read
 * comes only once DAD is done; the restored address skips DAD. */
static bool local_route_of_tentative(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *dst = attr(h, sizeof(*rtm), RTA_DST);
	if (rtm->rtm_family != AF_INET6 || rtm->rtm_type != RTN_LOCAL || rtm->rtm_protocol != RTPROT_KERNEL || !dst)
		return false;
	for (size_t i = 0; i < want->addrs.n; i++) {
		const struct nlmsghdr *a = want->addrs.v[i];
		const struct ifaddrmsg *ifa = NLMSG_DATA(a);
		struct nlattr *ip = attr(a, sizeof(*ifa), IFA_ADDRESS);
		if (ifa->ifa_family == AF_INET6 && (addr_flags(a) & IFA_F_TENTATIVE) && ip &&
		    nla_len(ip) == nla_len(dst) && memcmp(nla_data(ip), nla_data(dst), (size_t)nla_len(ip)) == 0)
			return true;
	}
	return false;
}

static bool pick_route(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	return h->nlmsg_type == RTM_NEWROUTE && !(rtm->rtm_flags & RTM_F_CLONED) && route_wanted(want, h) &&
	       !local_route_of_tentative(want, h);
}
static bool pick_neigh(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return h->nlmsg_type == RTM_NEWNEIGH && neigh_kept(h) && ifindex_wanted(want, nd->ndm_ifindex);
}
static void describe_neigh(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	char ip[64];
	addr_text(nd->ndm_family, attr(h, sizeof(*nd), NDA_DST), ip, sizeof(ip));
	snprintf(buf, len, "permanent neighbour %s on %s", ip, link_name(cfg, nd->ndm_ifindex));
}

int nsh_netcfg_diff(const struct nsh_netcfg *want, const struct nsh_netcfg *have, struct nshash_error *err)
{
	int r = compare_links(want, have, err);
	if (r == 0)
		r = compare_set(want, &want->addrs, &have->addrs, pick_addr, canon_addr, describe_addr, err);
	if (r == 0)
		r = compare_set(want, &want->routes, &have->routes, pick_route, canon_route, describe_route, err);
	if (r == 0)
		r = compare_set(want, &want->neighs, &have->neighs, pick_neigh, canon_neigh, describe_neigh, err);
	return r;
}

static int compare_once(struct nl_sock *sk, const struct nsh_netcfg *want, struct nshash_error *err)
{
	struct nsh_netcfg have;
	int r = nsh_netcfg_read(sk, NSH_CFG_LINKS | NSH_CFG_ADDRS | NSH_CFG_ROUTES | NSH_CFG_NEIGHS, &have, err);
	if (r < 0)
		return r;
	r = nsh_netcfg_diff(want, &have, err);
	nsh_netcfg_free(&have);
	return r;
}

int nsh_netcfg_compare(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned wait_ms, struct nshash_error *err)
{
	int64_t start = nsh_monotonic_ms();
	for (unsigned delay_us = 200;; delay_us = delay_us < 20000 ? delay_us * 2 : delay_us) {
		int r = compare_once(sk, want, err);
		if (r == 0 || r != -EIO)
			return r;
		if (nsh_monotonic_ms() - start >= (int64_t)wait_ms)
			return r;
		usleep(delay_us);
	}
	return 0;
}
