/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bring lo up in the calling thread's netns: runtimes do it only in a netns
 * they create themselves, never in one they join by path. */
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <string.h>

#include "internal.h"

int nsh_loopback_up(struct nshash_error *err)
{
	int r = 0;
	struct nl_sock *sk = nl_socket_alloc();
	struct rtnl_link *orig = rtnl_link_alloc(), *change = rtnl_link_alloc();
	if (!sk || !orig || !change) {
		r = nshash_error_set(err, ENOMEM, "bring lo up: out of memory");
		goto out;
	}
	int nr = nl_connect(sk, NETLINK_ROUTE);
	if (nr < 0) {
		r = nshash_error_set(err, EIO, "bring lo up: netlink connect: %s", nl_geterror(nr));
		goto out;
	}
	/* lo is always ifindex 1 in a new netns; no need to ask the kernel. */
	rtnl_link_set_ifindex(orig, 1);
	rtnl_link_set_flags(change, IFF_UP);
	nr = rtnl_link_change(sk, orig, change, 0);
	if (nr < 0)
		r = nshash_error_set(err, EIO, "bring lo up: %s", nl_geterror(nr));
out:
	rtnl_link_put(change);
	rtnl_link_put(orig);
	nl_socket_free(sk);
	return r;
}
