/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recreating a bridged veth pair instead of moving it (transplant.c).
 * Moving a link to another netns costs the kernel an rcu_barrier() (a
 * grace period or more, whatever the link); creating a veth pair with one
 * end in S and the other in the caller's netns does not.  So a veth of P
 * whose peer is a port of a bridge in the caller's netns is made again:
 * the container side in S with the same name, ifindex (when free), MAC,
 * MTU, queue length and queue counts, the host side with the old one's
 * MAC, MTU and queues, on the same bridge, up as it was, under a name the
 * kernel picks (vethN, as for the pairs netavark makes): renaming the old
 * one to free its name would free it for a concurrent engine too (seen:
 * 20 parallel podman starts, EEXIST).  The old pair is left in P, its host
 * side down and out of the bridge: it dies with P, as the kernel destroys
 * a veth whose netns goes (deleting it would cost the rcu_barrier()
 * again).
 *
 * Only when nothing could tell the pairs apart: what is not carried
 * (addresses beyond the IPv6 link-local, routes through the host side,
 * qdiscs, XDP, static FDB entries, a VLAN-filtering bridge) sends the link
 * to the move before anything changed; what only the new pair can show
 * (every link attribute, bridge port options, ethtool features, the host
 * side's sysctls) is compared once it exists, and a difference puts the
 * old pair back and moves it. */
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/net_namespace.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "netcfg.h"

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif
#ifndef IFF_DORMANT
#define IFF_DORMANT 0x20000
#endif

enum { NEW_MADE = 1, OLD_RELEASED = 2 }; /* bits of v->state */

/* One link's current message (stats skipped); NULL with rp->error. */
static struct nlmsghdr *link_get(struct nl_sock *sk, int index, const char *name, struct nsh_reply *rp)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index};
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, 0);
	if (m && (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
		  (name && nla_put_string(m, IFLA_IFNAME, name) < 0) ||
		  nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)) {
		nlmsg_free(m);
		m = NULL;
	}
	struct nsh_msgs out = {0};
	struct nlmsghdr *h = NULL;
	if (nsh_rtnl_ask(sk, m, &out, rp) == 0 && out.n && out.v[0]->nlmsg_type == RTM_NEWLINK) {
		h = out.v[0];
		out.v[0] = NULL;
	} else if (!rp->error) {
		rp->error = ENODEV;
	}
	nsh_msgs_free(&out);
	return h;
}

static long attr_u32(const struct nlmsghdr *h, int type)
{
	struct nlattr *a = nsh_nla(h, sizeof(struct ifinfomsg), type);
	return a && nla_len(a) >= 4 ? (long)nla_get_u32(a) : -1;
}

static void link_kind(const struct nlmsghdr *h, char *kind, size_t len)
{
	struct nlattr *li = nsh_nla(h, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	struct nlattr *k = li ? nla_find(nla_data(li), nla_len(li), IFLA_INFO_KIND) : NULL;
	snprintf(kind, len, "%.*s", k ? nla_len(k) : 0, k ? (const char *)nla_data(k) : "");
	kind[strcspn(kind, "\n")] = '\0';
}

/* The id the netns of `sk` gives the netns behind nsfd; -1 none. */
static int32_t nsid_of(struct nl_sock *sk, int nsfd)
{
	struct rtgenmsg g = {.rtgen_family = AF_UNSPEC};
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETNSID, 0);
	if (m && (nlmsg_append(m, &g, sizeof(g), NLMSG_ALIGNTO) < 0 || nla_put_u32(m, NETNSA_FD, (uint32_t)nsfd) < 0)) {
		nlmsg_free(m);
		m = NULL;
	}
	struct nsh_msgs out = {0};
	struct nsh_reply rp;
	int32_t id = -1;
	if (nsh_rtnl_ask(sk, m, &out, &rp) == 0 && out.n && out.v[0]->nlmsg_type == RTM_NEWNSID) {
		struct nlattr *a = nsh_nla(out.v[0], sizeof(g), NETNSA_NSID);
		if (a && nla_len(a) >= 4)
			id = (int32_t)nla_get_u32(a);
	}
	nsh_msgs_free(&out);
	return id;
}

/* ------------------------------------------------------------ comparing */

/* State, or what is compared on its own or set afterwards (addresses and
 * sysctls in IFLA_AF_SPEC, up state), or what must differ (the peer's
 * index and netns, the host side's name while the old one has it). */
static bool link_attr_state(int type)
{
	switch (type) {
	case IFLA_IFNAME:
	case IFLA_LINK:
	case IFLA_LINK_NETNSID:
	case IFLA_STATS:
	case IFLA_STATS64:
	case IFLA_OPERSTATE:
	case IFLA_CARRIER:
	case IFLA_CARRIER_CHANGES:
	case IFLA_CARRIER_UP_COUNT:
	case IFLA_CARRIER_DOWN_COUNT:
	case IFLA_QDISC:
	case IFLA_AF_SPEC:
	case IFLA_XDP:
	case IFLA_MASTER:
	case IFLA_MAP:
	case IFLA_EVENT:
		return true;
	}
	return false;
}

/* A bridge port's state, timers and identity (its number, its STP ids). */
static bool brport_attr_state(int type)
{
	switch (type) {
	case IFLA_BRPORT_STATE:
	case IFLA_BRPORT_ROOT_ID:
	case IFLA_BRPORT_BRIDGE_ID:
	case IFLA_BRPORT_DESIGNATED_PORT:
	case IFLA_BRPORT_DESIGNATED_COST:
	case IFLA_BRPORT_ID:
	case IFLA_BRPORT_NO:
	case IFLA_BRPORT_TOPOLOGY_CHANGE_ACK:
	case IFLA_BRPORT_CONFIG_PENDING:
	case IFLA_BRPORT_MESSAGE_AGE_TIMER:
	case IFLA_BRPORT_FORWARD_DELAY_TIMER:
	case IFLA_BRPORT_HOLD_TIMER:
	case IFLA_BRPORT_PAD:
	case IFLA_BRPORT_MCAST_EHT_HOSTS_CNT:
	case IFLA_BRPORT_LOCKED + 2: /* IFLA_BRPORT_MCAST_N_GROUPS (Linux 6.3), a count */
		return true;
	}
	return false;
}

static bool no_attr_state(int type)
{
	(void)type;
	return false;
}

/* 0 when the attributes a and b (level 0: a link's, 1: its IFLA_LINKINFO,
 * 2: a bridge port's) agree but for state; else 1, why says which. */
static int attrs_diff(struct nlattr *a, int alen, struct nlattr *b, int blen, int level, char *why, size_t len)
{
	bool (*state)(int) = level == 0 ? link_attr_state : level == 2 ? brport_attr_state : no_attr_state;
	static const char *const what[] = {"link attribute", "link info attribute", "bridge port attribute"};
	struct nlattr *x;
	int rem;
	nla_for_each_attr(x, a, alen, rem)
	{
		int t = nla_type(x);
		if (state(t))
			continue;
		struct nlattr *y = nla_find(b, blen, t);
		if (!y) {
			snprintf(why, len, "%s %d is not carried", what[level], t);
			return 1;
		}
		if ((level == 0 && t == IFLA_LINKINFO) || (level == 1 && t == IFLA_INFO_SLAVE_DATA)) {
			if (attrs_diff(nla_data(x), nla_len(x), nla_data(y), nla_len(y), level + 1, why, len))
				return 1;
		} else if (nla_len(x) != nla_len(y) || memcmp(nla_data(x), nla_data(y), (size_t)nla_len(x))) {
			snprintf(why, len, "%s %d differs", what[level], t);
			return 1;
		}
	}
	nla_for_each_attr(x, b, blen, rem)
	{
		if (!state(nla_type(x)) && !nla_find(a, alen, nla_type(x))) {
			snprintf(why, len, "%s %d appeared", what[level], nla_type(x));
			return 1;
		}
	}
	return 0;
}

static int link_diff(const struct nlmsghdr *old, const struct nlmsghdr *now, unsigned flags_ignored, char *why,
		     size_t len)
{
	const struct ifinfomsg *a = NLMSG_DATA(old), *b = NLMSG_DATA(now);
	if (a->ifi_type != b->ifi_type || ((a->ifi_flags ^ b->ifi_flags) & ~flags_ignored)) {
		snprintf(why, len, "link flags %#x, were %#x", b->ifi_flags, a->ifi_flags);
		return 1;
	}
	return attrs_diff(ATTRS(old, sizeof(*a)), ATTRLEN(old, sizeof(*a)), ATTRS(now, sizeof(*b)),
			  ATTRLEN(now, sizeof(*b)), 0, why, len);
}

/* The active ethtool features of link `name` of the netns socket fd is in. */
static int features(int fd, const char *name, uint32_t out[NSH_VETH_FEATW])
{
	struct ethtool_gfeatures *g = calloc(1, sizeof(*g) + NSH_VETH_FEATW * sizeof(g->features[0]));
	if (!g)
		return -ENOMEM;
	g->cmd = ETHTOOL_GFEATURES;
	g->size = NSH_VETH_FEATW;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)g;
	int r = ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
	for (int i = 0; r == 0 && i < NSH_VETH_FEATW; i++)
		out[i] = g->features[i].active;
	free(g);
	return r;
}

/* Features of a link in the netns behind nsfd (-1: the caller's). */
static int features_in(int nsfd, int home, const char *name, uint32_t out[NSH_VETH_FEATW])
{
	struct nshash_error e;
	if (nsfd >= 0 && nsh_netns_enter(nsfd, "a netns", &e) < 0)
		return -e.errnum;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r = fd < 0 ? -errno : features(fd, name, out);
	if (fd >= 0)
		close(fd);
	if (nsfd >= 0 && nsh_netns_return(home, &e) < 0)
		return -e.errnum;
	return r;
}

/* The host side `name`'s per-device sysctls (the calling thread is in its
 * netns).  The host's own ipv4 and ipv6 directories are looked up once a
 * plan (v->sysdir), not once a file: the host's cached dentries are the
 * oldest, the last of one per live netns that such a lookup compares
 * (docs/kernel.md). */
static int host_sysctls(struct nsh_veth *v, const char *name, struct nsh_netcfg *out)
{
	static const char *const tops[] = {"ipv4", "ipv6"}, *const kinds[] = {"conf", "neigh"};
	memset(out, 0, sizeof(*out));
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof(tops) / sizeof(tops[0]); i++) {
		char rel[64];
		if (!v->sysdir[i]) {
			snprintf(rel, sizeof(rel), "/proc/sys/net/%s", tops[i]);
			int top = open(rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (top < 0 && errno != ENOENT)
				return -errno;
			v->sysdir[i] = top + 1; /* 0 again when absent (no IPv6) */
		}
		for (size_t k = 0; v->sysdir[i] && r == 0 && k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			snprintf(rel, sizeof(rel), "%s/%s", kinds[k], name);
			int fd = openat(v->sysdir[i] - 1, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				r = errno == ENOENT ? 0 : -errno;
				continue;
			}
			snprintf(rel, sizeof(rel), "%s/%s/%s", tops[i], kinds[k], name);
			r = nsh_netsys_walk(fd, rel, out);
		}
	}
	return r;
}

/* "ipv4/conf/NAME/KNOB": equal but for NAME (the two host sides' differ) */
static bool same_knob(const char *a, const char *b)
{
	const char *ta = a, *tb = b;
	for (int k = 0; k < 3 && ta && tb; k++) {
		ta = strchr(ta, '/');
		tb = strchr(tb, '/');
		if (ta && tb && k < 2 && (ta - a != tb - b || memcmp(a, b, (size_t)(ta - a))))
			return false;
		ta = ta ? ta + 1 : NULL;
		tb = tb ? tb + 1 : NULL;
	}
	return ta && tb && !strcmp(ta, tb);
}

static int sysctls_diff(const struct nsh_sysvec *a, const struct nsh_sysvec *b, char *why, size_t len)
{
	if (a->n != b->n) {
		snprintf(why, len, "%zu per-device sysctls, had %zu", b->n, a->n);
		return 1;
	}
	for (size_t i = 0; i < a->n; i++)
		if (!same_knob(a->v[i].path, b->v[i].path) || strcmp(a->v[i].value, b->v[i].value)) {
			snprintf(why, len, "net/%s is \"%.40s\" (the old one's, \"%.40s\", is not carried)",
				 a->v[i].path, b->v[i].value, a->v[i].value);
			return 1;
		}
	return 0;
}

/* ------------------------------------------------------------ deciding */

void nsh_veth_free(struct nsh_veth *v)
{
	free(v->hmsg);
	free(v->cmsg);
	nsh_netcfg_free(&v->hsys);
	for (int i = 0; i < 2; i++)
		if (v->sysdir[i] > 0)
			close(v->sysdir[i] - 1);
	memset(v, 0, sizeof(*v));
}

static bool mac_multicast(const struct nlattr *a)
{
	return a && nla_len(a) > 0 && (((const unsigned char *)nla_data(a))[0] & 1);
}

/* A dump of the host side's own entries only: filtered in the kernel
 * (nsh_rtnl_dump_strict), so that its cost does not grow with the host's
 * tables (100 000 routes, thousands of addresses: docs/benchmarks.md); the
 * whole table where the kernel refuses the filter.  The callers look at
 * the ifindex of each entry either way. */
static int host_dump(struct nl_sock *skh, int type, const void *hdr, size_t hdrlen, int attr, uint32_t value,
		     struct nsh_msgs *out, const char *what, struct nshash_error *err)
{
	struct nsh_reply rp;
	int r = nsh_rtnl_dump_strict(skh, type, hdr, hdrlen, attr, value, out, &rp);
	if (r < 0 && (rp.error == EINVAL || rp.error == EOPNOTSUPP)) {
		nsh_msgs_free(out);
		unsigned char plain[32] = {0};
		memcpy(plain, hdr, hdrlen < 1 ? hdrlen : 1); /* the family */
		r = nsh_rtnl_dump(skh, type, plain, hdrlen, out, &rp);
	}
	return r < 0 ? nshash_error_set(err, rp.error, "list %s: %s", what, nsh_rtnl_why(&rp)) : 0;
}

/* The host side's root and ingress qdiscs (one request each: the kernel
 * does not filter a qdisc dump by device).  A veth has no queue of its
 * own (IFF_NO_QUEUE): its default root is noqueue, classless, and a qdisc
 * anyone configures there or under it needs a configured root, which has
 * a handle; the kernel answers for a default one with nothing, for no
 * ingress qdisc ENOENT.  NLM_F_ECHO: since Linux 6.8 (rtnl_notify_needed)
 * the answer to a qdisc GET is a notification, sent to nobody when no one
 * listens to RTNLGRP_TC and the request does not ask for its echo; a
 * listener (tc monitor) sees this one too. */
static int host_qdiscs(struct nl_sock *skh, int host, struct nsh_msgs *out, struct nshash_error *err)
{
	static const uint32_t parents[] = {TC_H_ROOT, TC_H_INGRESS};
	for (size_t i = 0; i < 2; i++) {
		struct tcmsg tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = host, .tcm_parent = parents[i]};
		struct nl_msg *m = nlmsg_alloc_simple(RTM_GETQDISC, NLM_F_ECHO);
		if (m && nlmsg_append(m, &tc, sizeof(tc), NLMSG_ALIGNTO) < 0) {
			nlmsg_free(m);
			m = NULL;
		}
		struct nsh_reply rp;
		if (nsh_rtnl_ask(skh, m, out, &rp) < 0 && rp.error != ENOENT)
			return nshash_error_set(err, rp.error, "read the qdiscs of link %d: %s", host,
						nsh_rtnl_why(&rp));
	}
	return 0;
}

/* What the host side has that a new one would not: 0 none, 1 (why). */
static int host_extras(struct nl_sock *skh, const struct nsh_veth *v, char *why, size_t len, struct nshash_error *err)
{
	struct nsh_netcfg h = {0};
	struct ifaddrmsg ifa0 = {.ifa_family = AF_UNSPEC, .ifa_index = (uint32_t)v->host};
	struct rtmsg rtm0 = {.rtm_family = AF_UNSPEC};
	struct ndmsg nd = {.ndm_family = AF_BRIDGE, .ndm_ifindex = v->host};
	int r = host_dump(skh, RTM_GETADDR, &ifa0, sizeof(ifa0), 0, 0, &h.addrs, "addresses", err);
	if (r == 0)
		r = host_dump(skh, RTM_GETROUTE, &rtm0, sizeof(rtm0), RTA_OIF, (uint32_t)v->host, &h.routes, "routes",
			      err);
	if (r == 0)
		r = host_qdiscs(skh, v->host, &h.qdiscs, err);
	if (r == 0)
		r = host_dump(skh, RTM_GETNEIGH, &nd, sizeof(nd), 0, 0, &h.neighs, "the bridge's forwarding entries",
			      err);
	int found = 0;
	for (size_t i = 0; r == 0 && !found && i < h.addrs.n; i++) {
		const struct ifaddrmsg *ifa = NLMSG_DATA(h.addrs.v[i]);
		if ((int)ifa->ifa_index == v->host &&
		    !(ifa->ifa_family == AF_INET6 && ifa->ifa_scope == RT_SCOPE_LINK)) {
			const struct nlmsghdr *m = h.addrs.v[i];
			struct nlattr *a = nsh_nla(m, sizeof(*ifa), IFA_LOCAL);
			char ip[64];
			nsh_addr_text(ifa->ifa_family, a ? a : nsh_nla(m, sizeof(*ifa), IFA_ADDRESS), ip, sizeof(ip));
			found = snprintf(why, len, "it has address %s/%u", ip, ifa->ifa_prefixlen) > 0;
		}
	}
	for (size_t i = 0; r == 0 && !found && i < h.routes.n; i++) {
		const struct nlmsghdr *m = h.routes.v[i];
		const struct rtmsg *rtm = NLMSG_DATA(m);
		struct nlattr *oif = nsh_nla(m, sizeof(*rtm), RTA_OIF), *mp = nsh_nla(m, sizeof(*rtm), RTA_MULTIPATH);
		bool via = oif && (int)nla_get_u32(oif) == v->host;
		for (int off = 0; mp && !via && off + (int)sizeof(struct rtnexthop) <= nla_len(mp);) {
			const struct rtnexthop *nh = (const void *)((const char *)nla_data(mp) + off);
			if (nh->rtnh_len < sizeof(*nh))
				break;
			via = nh->rtnh_ifindex == v->host;
			off += RTNH_ALIGN(nh->rtnh_len);
		}
		if (via && rtm->rtm_protocol != RTPROT_KERNEL)
			found = snprintf(why, len, "a route goes through it (protocol %u)", rtm->rtm_protocol) > 0;
	}
	for (size_t i = 0; r == 0 && !found && i < h.qdiscs.n; i++) {
		const struct tcmsg *tc = NLMSG_DATA(h.qdiscs.v[i]);
		if (h.qdiscs.v[i]->nlmsg_type == RTM_NEWQDISC && tc->tcm_ifindex == v->host &&
		    (tc->tcm_handle != 0 || tc->tcm_parent == TC_H_INGRESS))
			found = snprintf(why, len, "it has a qdisc configured") > 0;
	}
	for (size_t i = 0; r == 0 && !found && i < h.neighs.n; i++) {
		const struct nlmsghdr *m = h.neighs.v[i];
		const struct ndmsg *e = NLMSG_DATA(m);
		struct nlattr *mac = nsh_nla(m, sizeof(*e), NDA_LLADDR);
		if (m->nlmsg_type != RTM_NEWNEIGH || e->ndm_ifindex != v->host ||
		    !(e->ndm_state & (NUD_PERMANENT | NUD_NOARP)))
			continue;
		bool own = mac && nla_len(mac) == v->maclen && !memcmp(nla_data(mac), v->mac, (size_t)v->maclen);
		if (!own && !((e->ndm_flags & NTF_SELF) && mac_multicast(mac)))
			found = snprintf(why, len, "it has a static forwarding (FDB) entry") > 0;
	}
	nsh_netcfg_free(&h);
	return r < 0 ? r : found;
}

int nsh_veth_plan(struct nl_sock *skp, struct nl_sock *skh, int pfd, int home, const struct nsh_link *l,
		  struct nsh_veth *v, struct nshash_error *err)
{
	memset(v, 0, sizeof(*v));
	if (strcmp(l->kind, "veth") != 0)
		return 0;
	struct nsh_reply rp;
	v->cmsg = link_get(skp, l->index, NULL, &rp);
	if (!v->cmsg)
		return nshash_error_set(err, rp.error, "read link %s: %s", l->name, nsh_rtnl_why(&rp));
	long peer = attr_u32(v->cmsg, IFLA_LINK);
	if (peer <= 0 || !nsh_nla(v->cmsg, sizeof(struct ifinfomsg), IFLA_LINK_NETNSID))
		return 0; /* its peer is in P too */
	v->hmsg = link_get(skh, (int)peer, NULL, &rp);
	char kind[32];
	if (v->hmsg)
		link_kind(v->hmsg, kind, sizeof(kind));
	/* the host side is the peer: a veth whose own peer is l in P */
	int32_t id = v->hmsg ? nsid_of(skh, pfd) : -1;
	if (!v->hmsg || strcmp(kind, "veth") || attr_u32(v->hmsg, IFLA_LINK) != l->index || id < 0 ||
	    attr_u32(v->hmsg, IFLA_LINK_NETNSID) != (long)id)
		return 0; /* in another netns than the caller's */
	v->host = (int)peer;
	struct nlattr *a = nsh_nla(v->hmsg, sizeof(struct ifinfomsg), IFLA_IFNAME);
	snprintf(v->name, sizeof(v->name), "%.*s", a ? nla_len(a) : 0, a ? (const char *)nla_data(a) : "");
	a = nsh_nla(v->hmsg, sizeof(struct ifinfomsg), IFLA_ADDRESS);
	v->maclen = a && nla_len(a) <= (int)sizeof(v->mac) ? nla_len(a) : 0;
	if (v->maclen)
		memcpy(v->mac, nla_data(a), (size_t)v->maclen);
	v->up = ((const struct ifinfomsg *)NLMSG_DATA(v->hmsg))->ifi_flags & IFF_UP;
	long master = attr_u32(v->hmsg, IFLA_MASTER);
	cleanup_free struct nlmsghdr *br = master > 0 ? link_get(skh, (int)master, NULL, &rp) : NULL;
	if (br)
		link_kind(br, kind, sizeof(kind));
	if (!br || strcmp(kind, "bridge"))
		return 0; /* not a bridge port */
	v->bridge = (int)master;
	v->candidate = true;
	/* the new host side gets a name from the kernel: only a name the
	 * kernel gave (NET_NAME_ENUM, as netavark's own vethN) is not lost;
	 * one its creator chose (netavark's host_interface_name, ...) may be
	 * what firewall rules or tc name */
	char np[96], nt[8] = "";
	snprintf(np, sizeof(np), "/sys/class/net/%s/name_assign_type", v->name);
	FILE *f = v->name[0] && !strchr(v->name, '/') ? fopen(np, "re") : NULL;
	if (f) {
		if (!fgets(nt, sizeof(nt), f))
			nt[0] = '\0';
		fclose(f);
	}
	if (strcmp(nt, "1\n") != 0) {
		snprintf(v->why, sizeof(v->why), "its host side %s has a name its creator chose (a new one would not keep it)",
			 v->name);
		return 0;
	}
	struct nlattr *li = nsh_nla(br, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	struct nlattr *d = li ? nla_find(nla_data(li), nla_len(li), IFLA_INFO_DATA) : NULL;
	struct nlattr *vf = d ? nla_find(nla_data(d), nla_len(d), IFLA_BR_VLAN_FILTERING) : NULL;
	if (vf && nla_get_u8(vf)) {
		snprintf(v->why, sizeof(v->why), "its bridge filters VLANs");
		return 0;
	}
	a = nsh_nla(v->hmsg, sizeof(struct ifinfomsg), IFLA_XDP);
	struct nlattr *x = a ? nla_find(nla_data(a), nla_len(a), IFLA_XDP_ATTACHED) : NULL;
	if (x && nla_get_u8(x) != XDP_ATTACHED_NONE) {
		snprintf(v->why, sizeof(v->why), "its host side %s has an XDP program", v->name);
		return 0;
	}
	char why[200];
	int r = host_extras(skh, v, why, sizeof(why), err);
	if (r < 0)
		return r;
	if (r) {
		snprintf(v->why, sizeof(v->why), "its host side %s: %s", v->name, why);
		return 0;
	}
	if (host_sysctls(v, v->name, &v->hsys) < 0 || features_in(-1, home, v->name, v->hfeat) < 0 ||
	    features_in(pfd, home, l->name, v->cfeat) < 0) {
		snprintf(v->why, sizeof(v->why), "its sysctls or ethtool features could not be read");
		return 0;
	}
	v->ok = true;
	return 1;
}

/* ------------------------------------------------------------ making, undoing */

static int set_old(struct nl_sock *skh, const struct nsh_veth *v, int master, bool up)
{
	struct rtnl_link *old = rtnl_link_alloc(), *ch = rtnl_link_alloc();
	int r = -NLE_NOMEM;
	if (old && ch) {
		rtnl_link_set_ifindex(old, v->host);
		rtnl_link_set_master(ch, master);
		if (up)
			rtnl_link_set_flags(ch, IFF_UP);
		else
			rtnl_link_unset_flags(ch, IFF_UP);
		r = rtnl_link_change(skh, old, ch, 0);
	}
	rtnl_link_put(old);
	rtnl_link_put(ch);
	return r;
}

static struct nl_addr *mac_addr(const struct nlmsghdr *h)
{
	struct nlattr *a = nsh_nla(h, sizeof(struct ifinfomsg), IFLA_ADDRESS);
	return a ? nl_addr_build(AF_LLC, nla_data(a), (size_t)nla_len(a)) : NULL;
}

/* The new pair: the container side named l in S (sfd), the host side
 * here, named by the kernel. */
static int make_pair(struct nl_sock *skh, const struct nsh_link *l, int index, int sfd, const struct nsh_veth *v)
{
	struct rtnl_link *c = rtnl_link_veth_alloc();
	if (!c)
		return -NLE_NOMEM;
	struct rtnl_link *h = rtnl_link_veth_get_peer(c);
	const struct nlmsghdr *src[2] = {v->cmsg, v->hmsg};
	struct rtnl_link *dst[2] = {c, h};
	for (int k = 0; k < 2; k++) {
		struct nl_addr *mac = mac_addr(src[k]);
		if (mac)
			rtnl_link_set_addr(dst[k], mac);
		nl_addr_put(mac);
		long n;
		if ((n = attr_u32(src[k], IFLA_MTU)) > 0)
			rtnl_link_set_mtu(dst[k], (unsigned)n);
		if ((n = attr_u32(src[k], IFLA_TXQLEN)) >= 0)
			rtnl_link_set_txqlen(dst[k], (unsigned)n);
		if ((n = attr_u32(src[k], IFLA_NUM_TX_QUEUES)) > 0)
			rtnl_link_set_num_tx_queues(dst[k], (uint32_t)n);
		if ((n = attr_u32(src[k], IFLA_NUM_RX_QUEUES)) > 0)
			rtnl_link_set_num_rx_queues(dst[k], (uint32_t)n);
		if ((n = attr_u32(src[k], IFLA_GROUP)) > 0)
			rtnl_link_set_group(dst[k], (uint32_t)n);
	}
	rtnl_link_set_name(c, l->name);
	if (index > 0)
		rtnl_link_set_ifindex(c, index);
	rtnl_link_set_ns_fd(c, sfd);
	int r = rtnl_link_add(skh, c, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(h);
	rtnl_link_veth_release(c);
	return r;
}

/* Delete the new pair: by its host side's index, else (not read back) by
 * its container side's name in S. */
static int delete_new(struct nl_sock *skh, struct nl_sock *sks, const struct nsh_veth *v, const char *cname)
{
	struct rtnl_link *n = rtnl_link_alloc();
	if (!n)
		return -NLE_NOMEM;
	if (v->fresh)
		rtnl_link_set_ifindex(n, v->fresh);
	else
		rtnl_link_set_name(n, cname);
	int r = rtnl_link_delete(v->fresh || !sks ? skh : sks, n);
	rtnl_link_put(n);
	return r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND ? 0 : r;
}

int nsh_veth_undo(struct nl_sock *skh, struct nsh_veth *v, struct nshash_error *err)
{
	/* the old host side back on its bridge first: the bridge never has
	 * one port fewer (netavark deletes a bridge it finds without ports) */
	if (v->state & OLD_RELEASED) {
		int r = set_old(skh, v, v->bridge, v->up);
		if (r < 0)
			return nshash_error_set(err, EIO, "put %s back on its bridge: %s", v->name, nl_geterror(r));
		v->state &= ~OLD_RELEASED;
	}
	if (v->state & NEW_MADE) {
		if (!v->fresh) /* neither found nor deleted: only S's end takes it */
			return nshash_error_set(err, EIO, "the new veth pair could not be read back nor deleted");
		int r = delete_new(skh, NULL, v, NULL);
		if (r < 0)
			return nshash_error_set(err, EIO, "delete the new veth %s: %s", v->fresh_name, nl_geterror(r));
		v->state &= ~NEW_MADE;
		v->fresh = 0;
	}
	return 0;
}

int nsh_veth_recreate(struct nl_sock *skh, struct nl_sock *sks, int sfd, int home, const struct nsh_link *l, int index,
		      struct nsh_veth *v, struct nshash_error *err)
{
	char why[200] = "";
	/* the new pair, on the bridge and up, before the old one leaves it */
	int r = make_pair(skh, l, index, sfd, v);
	if (r < 0)
		snprintf(why, sizeof(why), "create the new pair: %s", nl_geterror(r));
	else
		v->state |= NEW_MADE;
	/* the new host side: the container side's peer */
	struct nsh_reply rp;
	cleanup_free struct nlmsghdr *cs = why[0] ? NULL : link_get(sks, 0, l->name, &rp);
	long fresh = cs ? attr_u32(cs, IFLA_LINK) : -1;
	cleanup_free struct nlmsghdr *nh = fresh > 0 ? link_get(skh, (int)fresh, NULL, &rp) : NULL;
	if (!why[0] && !nh) {
		snprintf(why, sizeof(why), "read the new pair: %s", cs ? nsh_rtnl_why(&rp) : "no peer");
		/* not found through its host side: delete it through S */
		if (delete_new(skh, sks, v, l->name) == 0)
			v->state &= ~NEW_MADE;
	}
	if (nh) {
		v->fresh = ((const struct ifinfomsg *)NLMSG_DATA(nh))->ifi_index;
		struct nlattr *a = nsh_nla(nh, sizeof(struct ifinfomsg), IFLA_IFNAME);
		snprintf(v->fresh_name, sizeof(v->fresh_name), "%.*s", a ? nla_len(a) : 0,
			 a ? (const char *)nla_data(a) : "");
		struct rtnl_link *o = rtnl_link_alloc(), *ch = rtnl_link_alloc();
		r = -NLE_NOMEM;
		if (o && ch) {
			rtnl_link_set_ifindex(o, v->fresh);
			rtnl_link_set_master(ch, v->bridge);
			if (v->up)
				rtnl_link_set_flags(ch, IFF_UP);
			r = rtnl_link_change(skh, o, ch, 0);
		}
		rtnl_link_put(o);
		rtnl_link_put(ch);
		if (r < 0)
			snprintf(why, sizeof(why), "put the new %s on its bridge: %s", v->fresh_name, nl_geterror(r));
	}
	/* then the old host side off the bridge and down (marked first: a
	 * request half applied is undone too) */
	if (!why[0]) {
		v->state |= OLD_RELEASED;
		if ((r = set_old(skh, v, 0, false)) < 0)
			snprintf(why, sizeof(why), "take %s off its bridge: %s", v->name, nl_geterror(r));
	}
	/* now only the new pair can tell */
	cleanup_free struct nlmsghdr *hn = why[0] ? NULL : link_get(skh, v->fresh, NULL, &rp);
	cleanup_free struct nlmsghdr *cn = why[0] ? NULL : link_get(sks, 0, l->name, &rp);
	uint32_t hf[NSH_VETH_FEATW], cf[NSH_VETH_FEATW];
	struct nsh_netcfg sys = {0};
	char d[160];
	if (!why[0] && (!hn || !cn))
		snprintf(why, sizeof(why), "read the new pair: %s", nsh_rtnl_why(&rp));
	else if (!why[0] && link_diff(v->hmsg, hn, IFF_RUNNING | IFF_LOWER_UP | IFF_DORMANT, d, sizeof(d)))
		snprintf(why, sizeof(why), "its host side %s: %s", v->name, d);
	else if (!why[0] && link_diff(v->cmsg, cn, IFF_UP | IFF_RUNNING | IFF_LOWER_UP | IFF_DORMANT, d, sizeof(d)))
		snprintf(why, sizeof(why), "%s", d);
	else if (!why[0] && (features_in(-1, home, v->fresh_name, hf) < 0 || features_in(sfd, home, l->name, cf) < 0 ||
			     memcmp(hf, v->hfeat, sizeof(hf)) || memcmp(cf, v->cfeat, sizeof(cf))))
		snprintf(why, sizeof(why), "its ethtool features differ from a new veth's");
	else if (!why[0] && host_sysctls(v, v->fresh_name, &sys) < 0)
		snprintf(why, sizeof(why), "read the new %s's sysctls", v->fresh_name);
	else if (!why[0] && sysctls_diff(&v->hsys.dev, &sys.dev, d, sizeof(d)))
		snprintf(why, sizeof(why), "its host side %s: %s", v->name, d);
	nsh_netcfg_free(&sys);
	if (!why[0])
		return 1;
	snprintf(v->why, sizeof(v->why), "%s", why);
	r = nsh_veth_undo(skh, v, err);
	return r < 0 ? nshash_error_prefix(err, "%s: not recreated (%s), then", l->name, why) : 0;
}
