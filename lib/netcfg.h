/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A network namespace's configuration as the kernel reports it (links,
 * addresses, routes, permanent neighbours, per-device and netns-wide
 * sysctls), read (netcfg.c), applied to another netns (netapply.c) and
 * compared (netcompare.c) over rtnetlink (rtnl.c, rtnl.h).  Used by transplant.c;
 * not installed. */
#ifndef NSH_NETCFG_H
#define NSH_NETCFG_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>
#include <net/if.h>
#include <netlink/netlink.h>

#include "internal.h"
#include "rtnl.h"

/* A sysctl under /proc/sys/net: path relative to it, value as read. */
struct nsh_sysent {
	char *path;
	char *value;
};
struct nsh_sysvec {
	struct nsh_sysent *v;
	size_t n, cap;
};

struct nsh_link {
	char name[IF_NAMESIZE];
	int index;
	char kind[32];	/* IFLA_INFO_KIND, "" for none (lo, physical) */
	unsigned flags; /* IFF_* */
	unsigned mtu, txqlen;
	unsigned char mac[32];
	int maclen;
	int master;    /* IFLA_MASTER, 0 none */
	int immutable; /* IFLA_NETNS_IMMUTABLE: 1, 0, or -1 not reported */
	bool xdp;      /* an XDP program is attached */
	bool kept;     /* not moved: every netns has it (lo) */
};

/* What nsh_netcfg_read() collects. */
enum {
	NSH_CFG_LINKS = 1 << 0,
	NSH_CFG_ADDRS = 1 << 1,
	NSH_CFG_ROUTES = 1 << 2,
	NSH_CFG_NEIGHS = 1 << 3,
	NSH_CFG_RULES = 1 << 4,
	NSH_CFG_EXTRA = 1 << 5, /* qdiscs, nexthop objects, netfilter tables */
	NSH_CFG_SYSCTL = 1 << 6,
	NSH_CFG_ALL = 0x7f,
};

struct nsh_netcfg {
	struct nsh_link *links;
	size_t nlinks;
	struct nsh_msgs addrs, routes, neighs, rules, qdiscs, nexthops;
	struct nsh_sysvec wide; /* netns-wide net.* (incl. conf/all, conf/default) */
	struct nsh_sysvec dev;	/* per device: ipv4|ipv6 / conf|neigh / DEV / KNOB */
	char firewall[160];	/* first netfilter table found, "" none */
};

int nsh_sysvec_push(struct nsh_sysvec *v, const char *path, const char *value);

/* Read the configuration of the netns `sk` was opened in; NSH_CFG_SYSCTL
 * and the netfilter part of NSH_CFG_EXTRA need the thread in that netns. */
int nsh_netcfg_read(struct nl_sock *sk, unsigned what, struct nsh_netcfg *cfg, struct nshash_error *err);
void nsh_netcfg_free(struct nsh_netcfg *cfg);
const struct nsh_link *nsh_netcfg_link(const struct nsh_netcfg *cfg, const char *name);

/* Move link `index` of the netns `sk` is in to the netns behind `nsfd`. */
int nsh_link_move(struct nl_sock *sk, const struct nsh_link *link, int nsfd, struct nshash_error *err);

/* Make the netns `sk` (and the calling thread) is in match `want` for the
 * links named in `want` that exist there: MTU, per-device sysctls (IPv6 DAD
 * off), addresses, up state, routes, permanent neighbours.  `counts` (may
 * be NULL) gets what was written: [0] addresses, [1] routes, [2]
 * neighbours, [3] sysctls. */
int nsh_netcfg_apply(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned counts[4], struct nshash_error *err);
/* After nsh_netcfg_apply() and nsh_netcfg_compare(): the per-device sysctls
 * once more, with IPv6 DAD as wanted. */
int nsh_netcfg_finish(const struct nsh_netcfg *want, unsigned counts[4], struct nshash_error *err);
/* Write the netns-wide sysctls of `want` that differ here. */
int nsh_sysctl_sync(const struct nsh_sysvec *want, const char *dev, unsigned *written, struct nshash_error *err);
/* File rtnetlink messages as the kernel sends them (buf: len bytes of
 * whole messages, e.g. a dump's) into cfg as nsh_netcfg_read would:
 * RTM_NEWLINK parsed into links, RTM_NEWADDR, _NEWROUTE and _NEWNEIGH
 * copied; others skipped.  0, -ENOMEM, or -EINVAL for a cut message. */
int nsh_netcfg_add(struct nsh_netcfg *cfg, const void *buf, size_t len);
/* 0 when `have` has what `want` describes (links, addresses, routes,
 * permanent neighbours of want's links, in canonical forms: state flags,
 * cache info and remaining lifetimes aside); else -EIO (-ENODEV for a
 * missing link) with err naming the first difference: "link L has MTU M,
 * had N", "address A/P on L is missing", "route ... appeared", ... */
int nsh_netcfg_diff(const struct nsh_netcfg *want, const struct nsh_netcfg *have, struct nshash_error *err);
/* 0 when the netns `sk` is in has what `want` describes (links, addresses,
 * routes, neighbours, per-device sysctls); else an error naming the first
 * difference.  Waits up to `wait_ms` for routes the kernel adds
 * asynchronously (IPv6 local routes). */
int nsh_netcfg_compare(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned wait_ms, struct nshash_error *err);

/* veth.c: a veth of P whose peer is a bridge port in the caller's netns,
 * recreated instead of moved (see there). */
#define NSH_VETH_FEATW 4 /* 32-bit words of ethtool features compared */
struct nsh_veth {
	bool candidate;		 /* a veth whose peer is a bridge port here */
	bool ok;		 /* and nothing seen that a new pair would not carry */
	char why[240];		 /* a candidate not recreated: why */
	int host, bridge, fresh; /* ifindex: the old host side, its bridge, the new host side */
	char name[IF_NAMESIZE];	 /* the host side's name */
	char fresh_name[IF_NAMESIZE]; /* the new host side's (the kernel's vethN) */
	unsigned char mac[32];	 /* the host side's */
	int maclen;
	bool up;		      /* the old host side was up */
	int state;		      /* how far the recreation went (veth.c) */
	struct nlmsghdr *hmsg, *cmsg; /* the old host side, container side as read */
	uint32_t hfeat[NSH_VETH_FEATW], cfeat[NSH_VETH_FEATW];
	struct nsh_netcfg hsys; /* the old host side's per-device sysctls */
	int sysdir[2];		/* the host's /proc/sys/net/ipv4 and ipv6, fd + 1 (0: not open) */
};
/* Look at link l of P (socket skp, fd pfd) from the caller's netns (skh,
 * home): 1 recreatable (v->ok), 0 not (v->why when a candidate), or an
 * error. */
int nsh_veth_plan(struct nl_sock *skp, struct nl_sock *skh, int pfd, int home, const struct nsh_link *l,
		  struct nsh_veth *v, struct nshash_error *err);
/* Recreate it: the container side in S (sks, sfd) as l with ifindex
 * `index` (0: the kernel's choice).  1 done, 0 not exact (v->why; the old
 * pair is back as it was: move it), or an error (the old pair could not
 * be put back). */
int nsh_veth_recreate(struct nl_sock *skh, struct nl_sock *sks, int sfd, int home, const struct nsh_link *l, int index,
		      struct nsh_veth *v, struct nshash_error *err);
/* Delete the new pair, put the old host side back (name, bridge, up). */
int nsh_veth_undo(struct nl_sock *skh, struct nsh_veth *v, struct nshash_error *err);
void nsh_veth_free(struct nsh_veth *v);

/* ---------------------------------------------------- between netcfg's files
 * rtnl.c (transport) <- netcfg.c (read) <- netcompare.c (canonical forms,
 * descriptions, compare) <- netapply.c (replay). */

/* netcfg.c: the name of link `index` in cfg, "?" when unknown; a
 * /proc/sys/net/REL file of the calling thread's netns (sysctl.c). */
const char *nsh_netcfg_link_name(const struct nsh_netcfg *cfg, int index);
int nsh_netsys_read(const char *rel, char *buf, size_t len);
/* Every readable and writable knob under /proc/sys/net/REL into cfg; `dir`:
 * an fd of that directory in the netns to read (closed here), or -1: the
 * path in the calling thread's netns. */
int nsh_netsys_walk(int dir, const char *rel, struct nsh_netcfg *cfg);
/* A dump of `type` (header hdrlen bytes, AF_UNSPEC) into out; `optional`:
 * a kernel without it (EOPNOTSUPP, EINVAL) gives none.  "list WHAT: why". */
int nsh_netcfg_dump(struct nl_sock *sk, int type, size_t hdrlen, struct nsh_msgs *out, const char *what, bool optional,
		    struct nshash_error *err);
int nsh_netsys_write(const char *rel, const char *value);
/* carry.c: the sysctls a new netns made from opts's template has (its note,
 * else read there and noted): 0, -ENOENT without a template (err not set),
 * or -errno. */
/* Index of `path` in `v`, looking at `hint` first (lists from the same
 * directory walk are mostly in step); -1 if absent. */
long nsh_sysvec_find(const struct nsh_sysvec *v, const char *path, size_t *hint);
int nsh_sysctl_baseline(const struct nshash_create_opts *opts, struct nsh_netcfg *fresh, struct nshash_error *err);

/* Address flags a user sets (the rest is state: tentative, dadfailed, ...). */
#define ADDR_SETTABLE (IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN)
/* Route flags that are configuration, not state (dead, linkdown, offload). */
#define ROUTE_SETTABLE RTNH_F_ONLINK

/* netcompare.c: describing ("address A/P on L", "route ..."), the
 * canonical form of an address, what is picked. */
struct nsh_canon;
void nsh_addr_text(int family, const struct nlattr *a, char *buf, size_t len);
void nsh_describe_addr(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len);
void nsh_describe_route(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len);
uint32_t nsh_addr_flags(const struct nlmsghdr *h);
void nsh_canon_addr(const struct nlmsghdr *h, struct nsh_canon *b);
/* Index in `have` of a message whose canonical form equals `h`'s, or -1. */
long nsh_msgs_find_same(const struct nsh_msgs *have, const struct nlmsghdr *h,
			void (*canon)(const struct nlmsghdr *, struct nsh_canon *));
/* A permanent IPv4/IPv6 neighbour (not a proxy entry). */
bool nsh_neigh_kept(const struct nlmsghdr *h);
/* want has a link of this ifindex; a route through one of want's links
 * (or through none). */
bool nsh_netcfg_has_index(const struct nsh_netcfg *want, int index);
bool nsh_route_wanted(const struct nsh_netcfg *want, const struct nlmsghdr *h);

#endif
