/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A network namespace's configuration as the kernel reports it (links,
 * addresses, routes, permanent neighbours, per-device and netns-wide
 * sysctls), applied to another netns and compared.  Used by transplant.c;
 * not installed. */
#ifndef NSHASH_NETCFG_H
#define NSHASH_NETCFG_H

#include <linux/netlink.h>
#include <net/if.h>
#include <netlink/netlink.h>

#include "internal.h"

/* Raw netlink messages as the kernel sent them (copies). */
struct nsh_msgs {
	struct nlmsghdr **v;
	size_t n, cap;
};

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

/* Netlink sockets act on the netns they were opened in, whatever the
 * thread's netns is later. */
int nsh_nl_open(int protocol, struct nl_sock **sk, struct nshash_error *err);

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

#endif
