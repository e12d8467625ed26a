/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the running kernel and the caller can do. */
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/utsname.h>

#include "internal.h"

static bool cap_effective(cap_t caps, cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	return caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

bool nsh_cap_in_effect(int cap)
{
	cap_t caps = cap_get_proc();
	bool yes = cap_effective(caps, (cap_value_t)cap);
	if (caps)
		cap_free(caps);
	return yes;
}

int nshash_probe(struct nshash_probe *p, struct nshash_error *err)
{
	memset(p, 0, sizeof(*p));
	struct utsname u;
	if (uname(&u) < 0)
		return nsh_error_sys(err, errno, "probe: uname");
	snprintf(p->release, sizeof(p->release), "%s", u.release);
	p->has_tcp_knob = access(NSH_SYSCTL_DIR NSH_TCP_CHILD, F_OK) == 0;
	p->has_udp_knob = access(NSH_SYSCTL_DIR NSH_UDP_CHILD, F_OK) == 0;
	long v;
	if (nsh_sysctl_read(NSH_TCP_ENTRIES, &v) == 0)
		p->global_tcp = v < 0 ? -v : v;
	if (nsh_sysctl_read(NSH_UDP_ENTRIES, &v) == 0)
		p->global_udp = v < 0 ? -v : v;
	p->caller_tcp_child = p->caller_udp_child = -1;
	if (nsh_sysctl_read(NSH_TCP_CHILD, &v) == 0)
		p->caller_tcp_child = v;
	if (nsh_sysctl_read(NSH_UDP_CHILD, &v) == 0)
		p->caller_udp_child = v;
	cap_t caps = cap_get_proc();
	p->cap_sys_admin = cap_effective(caps, CAP_SYS_ADMIN);
	p->cap_net_admin = cap_effective(caps, CAP_NET_ADMIN);
	if (caps)
		cap_free(caps);
	return 0;
}

int nsh_knob_missing(enum nshash_proto proto, const char *release, struct nshash_error *err)
{
	return nshash_error_set(err, EOPNOTSUPP, "kernel %s has no net.ipv4.%s (needs Linux %s)", release,
				proto == NSHASH_TCP ? NSH_TCP_CHILD : NSH_UDP_CHILD,
				proto == NSHASH_TCP ? "6.1" : "6.2");
}

int nshash_probe_require(const struct nshash_probe *p, struct nshash_sizes req, struct nshash_error *err)
{
	if (req.tcp && !p->has_tcp_knob)
		return nsh_knob_missing(NSHASH_TCP, p->release, err);
	if (req.udp && !p->has_udp_knob)
		return nsh_knob_missing(NSHASH_UDP, p->release, err);
	if (!p->cap_sys_admin)
		return nshash_error_set(err, EPERM,
					"missing CAP_SYS_ADMIN (needed to create, enter and pin network namespaces)");
	if (!p->cap_net_admin)
		return nshash_error_set(err, EPERM, "missing CAP_NET_ADMIN (needed to set the child table sizes)");
	return 0;
}
