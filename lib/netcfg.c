/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A netns's network configuration, read from the kernel as raw rtnetlink
 * messages (the way `ip route save` works): every attribute the kernel
 * reported is kept, so nothing is lost to a model that does not know it;
 * links parsed, per-device and netns-wide sysctls, the first firewall
 * table.  Replayed by netapply.c, compared by netcompare.c; the transport
 * is rtnl.c. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_link.h>
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

#include "netcfg.h"

#ifndef IFLA_NETNS_IMMUTABLE
#define IFLA_NETNS_IMMUTABLE 67 /* Linux 6.15+: u8, the link cannot change netns */
#endif
#define SYSNET "/proc/sys/net/"

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
	for (size_t off = 0; off < len; off += NLMSG_ALIGN(((const struct nlmsghdr *)((const char *)buf + off))->nlmsg_len)) {
		const struct nlmsghdr *h = (const void *)((const char *)buf + off);
		if (len - off < sizeof(*h) || h->nlmsg_len < sizeof(*h) || h->nlmsg_len > len - off)
			return -EINVAL; /* a cut message */
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
		if (nsh_msgs_push(to, h) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int read_links(struct nl_sock *sk, struct nsh_netcfg *cfg, struct nshash_error *err)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nsh_msgs m = {0};
	struct nsh_reply rp;
	if (nsh_rtnl_dump(sk, RTM_GETLINK, &ifi, sizeof(ifi), &m, &rp) < 0) {
		nsh_msgs_free(&m);
		return nshash_error_set(err, rp.error, "list links: %s", nsh_rtnl_why(&rp));
	}
	cfg->links = calloc(m.n ? m.n : 1, sizeof(*cfg->links));
	if (!cfg->links) {
		nsh_msgs_free(&m);
		return nshash_error_set(err, ENOMEM, "list links: out of memory");
	}
	for (size_t i = 0; i < m.n; i++)
		if (m.v[i]->nlmsg_type == RTM_NEWLINK)
			link_parse(m.v[i], &cfg->links[cfg->nlinks++]);
	nsh_msgs_free(&m);
	return 0;
}

const struct nsh_link *nsh_netcfg_link(const struct nsh_netcfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nlinks; i++)
		if (strcmp(cfg->links[i].name, name) == 0)
			return &cfg->links[i];
	return NULL;
}

const char *nsh_netcfg_link_name(const struct nsh_netcfg *cfg, int index)
{
	for (size_t i = 0; i < cfg->nlinks; i++)
		if (cfg->links[i].index == index)
			return cfg->links[i].name;
	return "?";
}

/* gcc 12's -fanalyzer loses what is stored through a caller's struct (the
 * vector is the caller's, freed with nsh_netcfg_free) and reports a leak;
 * it did not look this far while this was one file with netcfg.c. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
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
int nsh_netsys_read(const char *rel, char *buf, size_t len)
{
	char path[512];
	if ((size_t)snprintf(path, sizeof(path), SYSNET "%s", rel) >= sizeof(path))
		return -ENAMETOOLONG;
	return nsh_sysctl_text(AT_FDCWD, path, buf, len);
}

int nsh_netsys_write(const char *rel, const char *value)
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

/* Every readable and writable knob under /proc/sys/net/REL, each looked up
 * relative to its directory's fd: a path through /proc/sys/net compares,
 * at the netns's own directory (ipv4, ipv6, core...), one cached dentry of
 * every live netns that looked there (docs/kernel.md: ~0.5 ms a lookup
 * from the host at 2000 netns), so a walk pays that once for each of those
 * directories it enters, not once for each of its ~1000 files. */
int nsh_netsys_walk(int dir, const char *rel, struct nsh_netcfg *cfg)
{
	if (dir < 0) {
		char path[512];
		if ((size_t)snprintf(path, sizeof(path), SYSNET "%s", rel) >= sizeof(path))
			return -ENAMETOOLONG;
		dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return errno == ENOENT ? 0 : -errno;
	}
	DIR *d = fdopendir(dir);
	if (!d) {
		int e = -errno;
		close(dir);
		return e;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char sub[512], value[4096];
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= sizeof(sub))
			continue;
		if (de->d_type == DT_DIR) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0)
				r = nsh_netsys_walk(fd, sub, cfg);
			else if (errno != ENOENT)
				r = -errno;
			continue;
		}
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || (st.st_mode & 0600) != 0600)
			continue; /* read-only (mc_forwarding, *_entries) or write-only (flush) */
		if (nsh_sysctl_text(dirfd(d), de->d_name, value, sizeof(value)) < 0)
			continue; /* unset (stable_secret reads EIO) */
		r = nsh_sysvec_push(per_device(sub) ? &cfg->dev : &cfg->wide, sub, value);
	}
	closedir(d);
	return r;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

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
	struct nsh_reply rp;
	r = nsh_rtnl_dump(sk, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, &nfg, sizeof(nfg), &m, &rp);
	nl_socket_free(sk);
	if (r < 0 && rp.error != EOPNOTSUPP && rp.error != ENOENT && rp.error != EPROTONOSUPPORT) {
		nsh_msgs_free(&m);
		return nshash_error_set(err, rp.error, "list nftables tables: %s", nsh_rtnl_why(&rp));
	}
	if (m.n) {
		const struct nfgenmsg *g = NLMSG_DATA(m.v[0]);
		struct nlattr *a = nsh_nla(m.v[0], sizeof(*g), NFTA_TABLE_NAME);
		static const char *const fam[] = {
		    [1] = "inet", [2] = "ip", [3] = "arp", [5] = "netdev", [7] = "bridge", [10] = "ip6"};
		const char *f =
		    g->nfgen_family < sizeof(fam) / sizeof(fam[0]) && fam[g->nfgen_family] ? fam[g->nfgen_family] : "?";
		snprintf(cfg->firewall, sizeof(cfg->firewall), "nftables table %s %.*s", f, a ? nla_len(a) - 1 : 1,
			 a ? (const char *)nla_data(a) : "?");
	}
	nsh_msgs_free(&m);
	return 0;
}

int nsh_netcfg_dump(struct nl_sock *sk, int type, size_t hdrlen, struct nsh_msgs *out, const char *what, bool optional,
		    struct nshash_error *err)
{
	unsigned char hdr[32] = {0}; /* every rtnetlink header starts with the family: AF_UNSPEC */
	struct nsh_reply rp;
	if (nsh_rtnl_dump(sk, type, hdr, hdrlen, out, &rp) < 0) {
		if (optional && (rp.error == EOPNOTSUPP || rp.error == EINVAL))
			return 0;
		return nshash_error_set(err, rp.error, "list %s: %s", what, nsh_rtnl_why(&rp));
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
		r = nsh_netcfg_dump(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &cfg->addrs, "addresses", false, err);
	if (r == 0 && (what & NSH_CFG_ROUTES))
		r = nsh_netcfg_dump(sk, RTM_GETROUTE, sizeof(struct rtmsg), &cfg->routes, "routes", false, err);
	if (r == 0 && (what & NSH_CFG_NEIGHS))
		r = nsh_netcfg_dump(sk, RTM_GETNEIGH, sizeof(struct ndmsg), &cfg->neighs, "neighbours", false, err);
	if (r == 0 && (what & NSH_CFG_RULES))
		r = nsh_netcfg_dump(sk, RTM_GETRULE, sizeof(struct rtmsg), &cfg->rules, "routing rules", false, err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = nsh_netcfg_dump(sk, RTM_GETQDISC, sizeof(struct tcmsg), &cfg->qdiscs, "qdiscs", false, err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = nsh_netcfg_dump(sk, RTM_GETNEXTHOP, sizeof(struct nhmsg), &cfg->nexthops, "nexthop objects", true,
				    err);
	if (r == 0 && (what & NSH_CFG_EXTRA))
		r = read_firewall(cfg, err);
	if (r == 0 && (what & NSH_CFG_SYSCTL)) {
		r = nsh_netsys_walk(-1, "", cfg);
		if (r < 0)
			nsh_error_sys(err, r, "read /proc/sys/net");
	}
	if (r < 0)
		nsh_netcfg_free(cfg);
	return r;
}

void nsh_netcfg_free(struct nsh_netcfg *cfg)
{
	free(cfg->links);
	nsh_msgs_free(&cfg->addrs);
	nsh_msgs_free(&cfg->routes);
	nsh_msgs_free(&cfg->neighs);
	nsh_msgs_free(&cfg->rules);
	nsh_msgs_free(&cfg->qdiscs);
	nsh_msgs_free(&cfg->nexthops);
	sysvec_free(&cfg->wide);
	sysvec_free(&cfg->dev);
	memset(cfg, 0, sizeof(*cfg));
}
