/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* rtnl.c: rtnetlink requests and dumps, replies as the kernel's own
 * messages.  Under netcfg.c; not installed. */
#ifndef NSH_RTNL_H
#define NSH_RTNL_H

#include <linux/netlink.h>
#include <netlink/netlink.h>

#include "internal.h"

/* Raw netlink messages as the kernel sent them (copies). */
struct nsh_msgs {
	struct nlmsghdr **v;
	size_t n, cap;
};

/* Netlink sockets act on the netns they were opened in, whatever the
 * thread's netns is later. */
int nsh_nl_open(int protocol, struct nl_sock **sk, struct nshash_error *err);

/* The outcome of a request. */
struct nsh_reply {
	struct nsh_msgs *out;
	int error;	  /* positive errno from the kernel */
	char extack[200]; /* the kernel's extended ack message */
	bool acked;	  /* the request's ack was read */
};
int nsh_msgs_push(struct nsh_msgs *m, const struct nlmsghdr *h);
void nsh_msgs_free(struct nsh_msgs *m);
/* Send a request built by the caller (NULL: building it ran out of
 * memory), wait for the ack, free it.  -errno, rp says why. */
int nsh_rtnl_send(struct nl_sock *sk, struct nl_msg *m, struct nsh_reply *rp);
/* The same, keeping the replies (a GET's answer) in out. */
int nsh_rtnl_ask(struct nl_sock *sk, struct nl_msg *m, struct nsh_msgs *out, struct nsh_reply *rp);
/* A dump of `type` with header hdr[hdrlen] into out. */
int nsh_rtnl_dump(struct nl_sock *sk, int type, const void *hdr, size_t hdrlen, struct nsh_msgs *out,
		  struct nsh_reply *rp);
/* A dump the kernel filters: NETLINK_GET_STRICT_CHK for this request, the
 * header's filter fields (ifa_index, ndm_ifindex, ...) and one u32
 * attribute `attr` (RTA_OIF, ...; 0 none) as the filter.  A kernel
 * without strict checks (before 4.20) ignores them and dumps everything:
 * callers still filter what they get. */
int nsh_rtnl_dump_strict(struct nl_sock *sk, int type, const void *hdr, size_t hdrlen, int attr, uint32_t value,
			 struct nsh_msgs *out, struct nsh_reply *rp);
/* "why" for an error message: the kernel's extended ack if it gave one. */
const char *nsh_rtnl_why(const struct nsh_reply *rp);
/* A message's attributes after its family header of hdrlen bytes. */
#define ATTRS(h, hdrlen)   ((struct nlattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdrlen)))
#define ATTRLEN(h, hdrlen) ((int)(h)->nlmsg_len - (int)NLMSG_HDRLEN - (int)NLMSG_ALIGN(hdrlen))
struct nlattr *nsh_nla(const struct nlmsghdr *h, size_t hdrlen, int type);

#endif
