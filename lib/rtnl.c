/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* netcfg's transport: rtnetlink requests and dumps over libnl sockets,
 * replies kept as the raw messages the kernel sent, the kernel's extended
 * ack kept for the error message. */
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "rtnl.h"

/* gcc 12's -fanalyzer loses what is stored through a caller's struct (the
 * vector is the caller's, freed with nsh_msgs_free) and reports a leak;
 * it did not look this far while this was one file with netcfg.c. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
int nsh_msgs_push(struct nsh_msgs *m, const struct nlmsghdr *h)
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

void nsh_msgs_free(struct nsh_msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nsh_reply *rp = arg;
	if (rp->out && nsh_msgs_push(rp->out, nlmsg_hdr(msg)) < 0) {
		rp->error = ENOMEM;
		return NL_STOP;
	}
	return NL_OK;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static int on_ack(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct nsh_reply *)arg)->acked = true;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	(void)who;
	struct nsh_reply *rp = arg;
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
static int nl_exchange(struct nl_sock *sk, struct nl_msg *req, struct nsh_msgs *out, struct nsh_reply *rp)
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
		/* a request's answer comes before its ack: read on to the ack,
		 * or it would be taken for the next request's */
		bool dump = nlmsg_hdr(req)->nlmsg_flags & NLM_F_DUMP;
		do
			r = nl_recvmsgs(sk, cb);
		while (r >= 0 && !dump && !rp->acked && !rp->error);
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
const char *nsh_rtnl_why(const struct nsh_reply *rp)
{
	return rp->extack[0] ? rp->extack : strerror(rp->error);
}

/* Send a request built by the caller (NULL: building it ran out of memory)
 * and free it. */
int nsh_rtnl_ask(struct nl_sock *sk, struct nl_msg *m, struct nsh_msgs *out, struct nsh_reply *rp)
{
	if (!m) {
		memset(rp, 0, sizeof(*rp));
		rp->error = ENOMEM;
		return -ENOMEM;
	}
	int r = nl_exchange(sk, m, out, rp);
	nlmsg_free(m);
	return r;
}

int nsh_rtnl_send(struct nl_sock *sk, struct nl_msg *m, struct nsh_reply *rp)
{
	return nsh_rtnl_ask(sk, m, NULL, rp);
}

int nsh_rtnl_dump(struct nl_sock *sk, int type, const void *hdr, size_t hdrlen, struct nsh_msgs *out,
		  struct nsh_reply *rp)
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

int nsh_rtnl_dump_strict(struct nl_sock *sk, int type, const void *hdr, size_t hdrlen, int attr, uint32_t value,
			 struct nsh_msgs *out, struct nsh_reply *rp)
{
	struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_DUMP);
	if (!m || nlmsg_append(m, (void *)hdr, hdrlen, NLMSG_ALIGNTO) < 0 ||
	    (attr && nla_put_u32(m, attr, value) < 0)) {
		nlmsg_free(m);
		memset(rp, 0, sizeof(*rp));
		rp->error = ENOMEM;
		return -ENOMEM;
	}
	/* for this request only: the socket's other requests (libnl's
	 * link requests) are built for the lenient checks */
	int fd = nl_socket_get_fd(sk), on = 1, off = 0;
	bool strict = setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on, sizeof(on)) == 0;
	int r = nl_exchange(sk, m, out, rp);
	if (strict)
		setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &off, sizeof(off));
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

struct nlattr *nsh_nla(const struct nlmsghdr *h, size_t hdrlen, int type)
{
	return nla_find(ATTRS(h, hdrlen), ATTRLEN(h, hdrlen), type);
}
