/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Comparing two configurations read by netcfg.c in canonical forms
 * (headers with state flags masked, attributes minus cache info and
 * remaining lifetimes), and describing a message in an error's words
 * ("address A/P on L", "route ... via ... dev ..."). */
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "netcfg.h"

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h: carrier; glibc's net/if.h stops before it */
#endif
/* What an address comparison looks at (not tentative, dadfailed, ...). */
#define ADDR_COMPARED (ADDR_SETTABLE | IFA_F_SECONDARY | IFA_F_PERMANENT | IFA_F_DEPRECATED)

void nsh_addr_text(int family, const struct nlattr *a, char *buf, size_t len)
{
	if (!a || (family != AF_INET && family != AF_INET6) || nla_len(a) < (family == AF_INET ? 4 : 16))
		snprintf(buf, len, "?");
	else
		inet_ntop(family, nla_data(a), buf, (socklen_t)len);
}

void nsh_describe_addr(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct nlattr *a = nsh_nla(h, sizeof(*ifa), IFA_LOCAL);
	char ip[64];
	nsh_addr_text(ifa->ifa_family, a ? a : nsh_nla(h, sizeof(*ifa), IFA_ADDRESS), ip, sizeof(ip));
	snprintf(buf, len, "address %s/%u on %s", ip, ifa->ifa_prefixlen,
		 nsh_netcfg_link_name(cfg, (int)ifa->ifa_index));
}

static uint32_t route_table(const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *t = nsh_nla(h, sizeof(*rtm), RTA_TABLE);
	return t ? nla_get_u32(t) : rtm->rtm_table;
}

void nsh_describe_route(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	char dst[64] = "default", gw[80] = "", dev[48] = "", metric[32] = "";
	struct nlattr *a;
	if ((a = nsh_nla(h, sizeof(*rtm), RTA_DST))) {
		char ip[48];
		nsh_addr_text(rtm->rtm_family, a, ip, sizeof(ip));
		snprintf(dst, sizeof(dst), "%s/%u", ip, rtm->rtm_dst_len);
	}
	if ((a = nsh_nla(h, sizeof(*rtm), RTA_GATEWAY))) {
		char ip[48];
		nsh_addr_text(rtm->rtm_family, a, ip, sizeof(ip));
		snprintf(gw, sizeof(gw), " via %s", ip);
	}
	if ((a = nsh_nla(h, sizeof(*rtm), RTA_OIF)))
		snprintf(dev, sizeof(dev), " dev %s", nsh_netcfg_link_name(cfg, (int)nla_get_u32(a)));
	if ((a = nsh_nla(h, sizeof(*rtm), RTA_PRIORITY)))
		snprintf(metric, sizeof(metric), " metric %u", nla_get_u32(a));
	snprintf(buf, len, "%sroute %s%s%s table %u%s proto %u", rtm->rtm_family == AF_INET6 ? "IPv6 " : "", dst, gw,
		 dev, route_table(h), metric, rtm->rtm_protocol);
}

uint32_t nsh_addr_flags(const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct nlattr *f = nsh_nla(h, sizeof(*ifa), IFA_FLAGS);
	return f ? nla_get_u32(f) : ifa->ifa_flags;
}

struct nsh_canon {
	unsigned char d[4096];
	size_t n;
};

static void put(struct nsh_canon *b, const void *p, size_t len)
{
	if (b->n + len <= sizeof(b->d)) {
		memcpy(b->d + b->n, p, len);
		b->n += len;
	} else {
		b->n = sizeof(b->d) + 1; /* marks overflow: never equal */
	}
}

static void put_attr(struct nsh_canon *b, const struct nlattr *a)
{
	uint16_t t = (uint16_t)nla_type(a);
	put(b, &t, sizeof(t));
	put(b, a, (size_t)a->nla_len);
}

/* The parts of an address a comparison cares about: not the remaining
 * lifetimes (they tick), only whether they are finite. */
void nsh_canon_addr(const struct nlmsghdr *h, struct nsh_canon *b)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	uint32_t hdr[4] = {ifa->ifa_family | ifa->ifa_prefixlen << 8 | (uint32_t)ifa->ifa_scope << 16, ifa->ifa_index,
			   nsh_addr_flags(h) & ADDR_COMPARED, 0};
	struct nlattr *ci = nsh_nla(h, sizeof(*ifa), IFA_CACHEINFO);
	if (ci && nla_len(ci) >= (int)sizeof(struct ifa_cacheinfo)) {
		const struct ifa_cacheinfo *c = nla_data(ci);
		hdr[3] = (c->ifa_valid == 0xFFFFFFFFu) | (c->ifa_prefered == 0xFFFFFFFFu) << 1;
	}
	b->n = 0;
	put(b, hdr, sizeof(hdr));
	static const int keep[] = {IFA_ADDRESS, IFA_LOCAL, IFA_BROADCAST, IFA_LABEL, IFA_RT_PRIORITY, IFA_PROTO};
	for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
		struct nlattr *a = nsh_nla(h, sizeof(*ifa), keep[k]);
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
static void canon_route(const struct nlmsghdr *h, struct nsh_canon *b)
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

bool nsh_neigh_kept(const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return (nd->ndm_family == AF_INET || nd->ndm_family == AF_INET6) && (nd->ndm_state & NUD_PERMANENT) &&
	       !(nd->ndm_flags & NTF_PROXY);
}

static void canon_neigh(const struct nlmsghdr *h, struct nsh_canon *b)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	uint32_t hdr[3] = {nd->ndm_family, (uint32_t)nd->ndm_ifindex, nd->ndm_state | (uint32_t)nd->ndm_flags << 16};
	b->n = 0;
	put(b, hdr, sizeof(hdr));
	struct nlattr *a;
	if ((a = nsh_nla(h, sizeof(*nd), NDA_DST)))
		put_attr(b, a);
	if ((a = nsh_nla(h, sizeof(*nd), NDA_LLADDR)))
		put_attr(b, a);
}

bool nsh_netcfg_has_index(const struct nsh_netcfg *want, int index)
{
	for (size_t i = 0; i < want->nlinks; i++)
		if (want->links[i].index == index)
			return true;
	return false;
}

static bool canon_same(const struct nsh_canon *a, const struct nsh_canon *b)
{
	return a->n == b->n && a->n <= sizeof(a->d) && memcmp(a->d, b->d, a->n) == 0;
}

/* Index in `have` of a message whose canonical form equals `h`'s, or -1. */
long nsh_msgs_find_same(const struct nsh_msgs *have, const struct nlmsghdr *h,
			void (*canon)(const struct nlmsghdr *, struct nsh_canon *))
{
	struct nsh_canon x, y;
	canon(h, &x);
	for (size_t i = 0; i < have->n; i++) {
		canon(have->v[i], &y);
		if (canon_same(&x, &y))
			return (long)i;
	}
	return -1;
}

bool nsh_route_wanted(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *oif = nsh_nla(h, sizeof(*rtm), RTA_OIF);
	return !oif || nsh_netcfg_has_index(want, (int)nla_get_u32(oif));
}

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
		       void (*canon)(const struct nlmsghdr *, struct nsh_canon *),
		       void (*describe)(const struct nsh_netcfg *, const struct nlmsghdr *, char *, size_t),
		       struct nshash_error *err)
{
	for (int dir = 0; dir < 2; dir++) {
		const struct nsh_msgs *a = dir ? h : w, *b = dir ? w : h;
		for (size_t i = 0; i < a->n; i++) {
			if (!pick(want, a->v[i]) || nsh_msgs_find_same(b, a->v[i], canon) >= 0)
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
	return h->nlmsg_type == RTM_NEWADDR && nsh_netcfg_has_index(want, (int)ifa->ifa_index);
}

/* The local route of an IPv6 address still in DAD where `want` was read
 * comes only once DAD is done; the restored address skips DAD. */
static bool local_route_of_tentative(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct nlattr *dst = nsh_nla(h, sizeof(*rtm), RTA_DST);
	if (rtm->rtm_family != AF_INET6 || rtm->rtm_type != RTN_LOCAL || rtm->rtm_protocol != RTPROT_KERNEL || !dst)
		return false;
	for (size_t i = 0; i < want->addrs.n; i++) {
		const struct nlmsghdr *a = want->addrs.v[i];
		const struct ifaddrmsg *ifa = NLMSG_DATA(a);
		struct nlattr *ip = nsh_nla(a, sizeof(*ifa), IFA_ADDRESS);
		if (ifa->ifa_family == AF_INET6 && (nsh_addr_flags(a) & IFA_F_TENTATIVE) && ip &&
		    nla_len(ip) == nla_len(dst) && memcmp(nla_data(ip), nla_data(dst), (size_t)nla_len(ip)) == 0)
			return true;
	}
	return false;
}

static bool pick_route(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	return h->nlmsg_type == RTM_NEWROUTE && !(rtm->rtm_flags & RTM_F_CLONED) && nsh_route_wanted(want, h) &&
	       !local_route_of_tentative(want, h);
}

static bool pick_neigh(const struct nsh_netcfg *want, const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return h->nlmsg_type == RTM_NEWNEIGH && nsh_neigh_kept(h) && nsh_netcfg_has_index(want, nd->ndm_ifindex);
}

static void describe_neigh(const struct nsh_netcfg *cfg, const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	char ip[64];
	nsh_addr_text(nd->ndm_family, nsh_nla(h, sizeof(*nd), NDA_DST), ip, sizeof(ip));
	snprintf(buf, len, "permanent neighbour %s on %s", ip, nsh_netcfg_link_name(cfg, nd->ndm_ifindex));
}

int nsh_netcfg_diff(const struct nsh_netcfg *want, const struct nsh_netcfg *have, struct nshash_error *err)
{
	int r = compare_links(want, have, err);
	if (r == 0)
		r = compare_set(want, &want->addrs, &have->addrs, pick_addr, nsh_canon_addr, nsh_describe_addr, err);
	if (r == 0)
		r = compare_set(want, &want->routes, &have->routes, pick_route, canon_route, nsh_describe_route, err);
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
