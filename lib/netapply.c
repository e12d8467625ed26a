/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replaying a configuration read by netcfg.c into another netns (the way
 * `ip route restore` works): links moved, MTU, per-device sysctls,
 * addresses, up state, routes in passes, permanent neighbours.  What the
 * kernel creates by itself (routes of protocol "kernel": prefix, local and
 * broadcast routes; IPv6 link-local addresses at link up) is left to it
 * and checked afterwards by netcompare.c. */
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "netcfg.h"

static int link_set(struct nl_sock *sk, int index, unsigned flags, unsigned change, int attr_type, uint32_t value,
		    struct nsh_reply *rp)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = flags, .ifi_change = change};
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_ACK);
	if (m && (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
		  (attr_type && nla_put_u32(m, attr_type, value) < 0))) {
		nlmsg_free(m);
		m = NULL;
	}
	return nsh_rtnl_send(sk, m, rp);
}

int nsh_link_move(struct nl_sock *sk, const struct nsh_link *l, int nsfd, struct nshash_error *err)
{
	struct nsh_reply rp;
	if (link_set(sk, l->index, 0, 0, IFLA_NET_NS_FD, (uint32_t)nsfd, &rp) < 0)
		return nshash_error_set(err, rp.error, "move link %s%s%s%s: %s", l->name, l->kind[0] ? " (" : "",
					l->kind, l->kind[0] ? ")" : "", nsh_rtnl_why(&rp));
	return 0;
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
			int r = nsh_netsys_read(e->path, have, sizeof(have));
			if (r == -ENOENT || (r == 0 && strcmp(have, e->value) == 0))
				continue; /* as wanted, or not in this kernel */
			if (pass == 3) {
				if (failed == e)
					return nsh_error_sys(err, failed_r, "set net/%s to \"%s\"", e->path, e->value);
				return nshash_error_set(err, EIO, "net/%s reads \"%s\" after writing \"%s\"", e->path,
							r == 0 ? have : "?", e->value);
			}
			differs = true;
			r = nsh_netsys_write(e->path, e->value);
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

static int addr_add(struct nl_sock *sk, const struct nlmsghdr *h, struct nsh_reply *rp)
{
	struct ifaddrmsg ifa = *(const struct ifaddrmsg *)NLMSG_DATA(h);
	uint32_t flags = nsh_addr_flags(h) & ADDR_SETTABLE;
	ifa.ifa_flags = (unsigned char)flags;
	struct nl_msg *m = replay_msg(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, h, &ifa, sizeof(ifa), addr_attr_kept);
	if (m && nla_put_u32(m, IFA_FLAGS, flags) < 0) {
		nlmsg_free(m);
		m = NULL;
	}
	return nsh_rtnl_send(sk, m, rp);
}

static int addr_del(struct nl_sock *sk, const struct nlmsghdr *h, struct nsh_reply *rp)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	return nsh_rtnl_send(sk, replay_msg(RTM_DELADDR, 0, h, ifa, sizeof(*ifa), addr_attr_kept), rp);
}

static int route_add(struct nl_sock *sk, const struct nlmsghdr *h, struct nsh_reply *rp)
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
	return nsh_rtnl_send(sk, m, rp);
nomem:
	nlmsg_free(m);
	return nsh_rtnl_send(sk, NULL, rp);
}

static int neigh_add(struct nl_sock *sk, const struct nlmsghdr *h, struct nsh_reply *rp)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	return nsh_rtnl_send(sk, replay_msg(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, h, nd, sizeof(*nd), NULL), rp);
}

/* Same address (family, link, local/address, prefix), whatever its flags. */
static bool same_addr_key(const struct nlmsghdr *a, const struct nlmsghdr *b)
{
	const struct ifaddrmsg *x = NLMSG_DATA(a), *y = NLMSG_DATA(b);
	if (x->ifa_family != y->ifa_family || x->ifa_index != y->ifa_index || x->ifa_prefixlen != y->ifa_prefixlen)
		return false;
	static const int keys[] = {IFA_LOCAL, IFA_ADDRESS};
	for (size_t k = 0; k < 2; k++) {
		struct nlattr *p = nsh_nla(a, sizeof(*x), keys[k]), *q = nsh_nla(b, sizeof(*y), keys[k]);
		if (!p != !q ||
		    (p && (nla_len(p) != nla_len(q) || memcmp(nla_data(p), nla_data(q), (size_t)nla_len(p)))))
			return false;
	}
	return true;
}

static int apply_addrs(struct nl_sock *sk, const struct nsh_netcfg *want, unsigned *count, struct nshash_error *err)
{
	struct nsh_msgs have = {0};
	int r = nsh_netcfg_dump(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &have, "addresses", false, err);
	/* The kernel appends IPv4 addresses and puts a new IPv6 address first
	 * among those of its scope: IPv4 in the order read, IPv6 backwards. */
	size_t n = want->addrs.n;
	for (size_t k = 0; r == 0 && k < 2 * n; k++) {
		const struct nlmsghdr *h = want->addrs.v[k < n ? k : 2 * n - 1 - k];
		const struct ifaddrmsg *ifa = NLMSG_DATA(h);
		if (h->nlmsg_type != RTM_NEWADDR || !nsh_netcfg_has_index(want, (int)ifa->ifa_index) ||
		    ifa->ifa_family != (k < n ? AF_INET : AF_INET6))
			continue;
		long j = nsh_msgs_find_same(&have, h, nsh_canon_addr);
		if (j >= 0)
			continue;
		struct nsh_reply rp;
		for (size_t k = 0; k < have.n; k++) /* there, but different: replace it */
			if (same_addr_key(have.v[k], h) && addr_del(sk, have.v[k], &rp) < 0 &&
			    rp.error != EADDRNOTAVAIL) {
				char d[160];
				nsh_describe_addr(want, h, d, sizeof(d));
				r = nshash_error_set(err, rp.error, "replace %s: %s", d, nsh_rtnl_why(&rp));
			}
		if (r == 0 && addr_add(sk, h, &rp) < 0) {
			char d[160];
			nsh_describe_addr(want, h, d, sizeof(d));
			r = nshash_error_set(err, rp.error, "add %s: %s", d, nsh_rtnl_why(&rp));
		}
		(*count)++;
	}
	nsh_msgs_free(&have);
	return r;
}

/* Addresses the kernel made that `want` does not have (an IPv6 link-local
 * address generated at link up under another addr_gen_mode). */
static int drop_extra_addrs(struct nl_sock *sk, const struct nsh_netcfg *want, struct nshash_error *err)
{
	struct nsh_msgs have = {0};
	int r = nsh_netcfg_dump(sk, RTM_GETADDR, sizeof(struct ifaddrmsg), &have, "addresses", false, err);
	for (size_t i = 0; r == 0 && i < have.n; i++) {
		const struct ifaddrmsg *ifa = NLMSG_DATA(have.v[i]);
		if (!nsh_netcfg_has_index(want, (int)ifa->ifa_index))
			continue;
		bool wanted = false;
		for (size_t k = 0; !wanted && k < want->addrs.n; k++)
			wanted = same_addr_key(want->addrs.v[k], have.v[i]);
		struct nsh_reply rp;
		if (!wanted && addr_del(sk, have.v[i], &rp) < 0 && rp.error != EADDRNOTAVAIL) {
			char d[160];
			nsh_describe_addr(want, have.v[i], d, sizeof(d));
			r = nshash_error_set(err, rp.error, "remove %s: %s", d, nsh_rtnl_why(&rp));
		}
	}
	nsh_msgs_free(&have);
	return r;
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
		done[i] = !route_replayed(want->routes.v[i], kernel_pass) || !nsh_route_wanted(want, want->routes.v[i]);
		pending += !done[i];
	}
	int r = 0;
	const struct nlmsghdr *last = NULL;
	struct nsh_reply last_rp = {0};
	while (pending) {
		size_t progress = 0;
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			struct nsh_reply rp;
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
			nsh_describe_route(want, last, d, sizeof(d));
			r = nshash_error_set(err, last_rp.error, "add %s: %s", d, nsh_rtnl_why(&last_rp));
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
		if (h->nlmsg_type != RTM_NEWNEIGH || !nsh_neigh_kept(h) || !nsh_netcfg_has_index(want, nd->ndm_ifindex))
			continue;
		struct nsh_reply rp;
		if (neigh_add(sk, h, &rp) < 0) {
			char ip[64];
			nsh_addr_text(nd->ndm_family, nsh_nla(h, sizeof(*nd), NDA_DST), ip, sizeof(ip));
			return nshash_error_set(err, rp.error, "add permanent neighbour %s on %s: %s", ip,
						nsh_netcfg_link_name(want, nd->ndm_ifindex), nsh_rtnl_why(&rp));
		}
		(*count)++;
	}
	return 0;
}

static int apply_link(struct nl_sock *sk, const struct nsh_link *l, const struct nsh_link *cur, bool up,
		      struct nshash_error *err)
{
	struct nsh_reply rp;
	if (!up && cur->mtu != l->mtu && link_set(sk, cur->index, 0, 0, IFLA_MTU, l->mtu, &rp) < 0)
		return nshash_error_set(err, rp.error, "set MTU %u on %s: %s", l->mtu, l->name, nsh_rtnl_why(&rp));
	if (up && (l->flags & IFF_UP) != (cur->flags & IFF_UP) &&
	    link_set(sk, cur->index, l->flags & IFF_UP, IFF_UP, 0, 0, &rp) < 0)
		return nshash_error_set(err, rp.error, "set %s %s: %s", l->name, l->flags & IFF_UP ? "up" : "down",
					nsh_rtnl_why(&rp));
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
			int w = nsh_netsys_write(dad, "0");
			if (w < 0 && w != -ENOENT)
				r = nsh_error_sys(err, w, "set net/%s to 0", dad);
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
