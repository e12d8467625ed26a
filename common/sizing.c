/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One sizing request for every front-end (docs/sizing.md): each source
 * says, per protocol, whether it names it and as what; the first source in
 * the one order that names a protocol decides that protocol, and only
 * that one.  `auto` is resolved and the caps applied by the front-end on
 * the decision; what was decided, and by whom, travels with it. */
#include <stdio.h>
#include <string.h>

#include "common.h"

void nsh_decide(const struct nsh_said *const by[NSH_SRC_COUNT], struct nsh_decision *d)
{
	memset(d, 0, sizeof(*d));
	for (int p = 0; p < 2; p++)
		for (int s = NSH_SRC_ANNOTATION; s < NSH_SRC_COUNT; s++) {
			const struct nsh_said *w = by[s];
			if (!w || !w->said[p])
				continue;
			d->src[p] = (enum nsh_src)s;
			d->is_auto[p] = w->is_auto[p];
			*(p ? &d->sizes.udp : &d->sizes.tcp) = w->is_auto[p] ? 0 : w->size[p];
			break;
		}
}

/* Protocol p asks for something: a size, or `auto`. */
static bool asks(const struct nsh_decision *d, int p)
{
	return d->is_auto[p] || (p ? d->sizes.udp : d->sizes.tcp) > 0;
}

bool nsh_decision_decided(const struct nsh_decision *d)
{
	return d->src[0] != NSH_SRC_NONE || d->src[1] != NSH_SRC_NONE;
}

bool nsh_decision_any_from(const struct nsh_decision *d, enum nsh_src src)
{
	return d->src[0] == src || d->src[1] == src;
}

bool nsh_decision_asks_only_from(const struct nsh_decision *d, enum nsh_src src)
{
	bool any = false;
	for (int p = 0; p < 2; p++) {
		if (!asks(d, p))
			continue; /* a protocol decided 0 asks nothing */
		if (d->src[p] != src)
			return false;
		any = true;
	}
	return any;
}

void nsh_said_policy_defaults(const struct nsh_policy *policy, struct nsh_said *s)
{
	memset(s, 0, sizeof(*s));
	s->is_auto[0] = policy->defaults_auto.tcp;
	s->is_auto[1] = policy->defaults_auto.udp;
	s->size[0] = policy->defaults.tcp;
	s->size[1] = policy->defaults.udp;
	/* a default of 0 names nothing: that protocol stays shared unless
	 * another source names it */
	s->said[0] = s->is_auto[0] || s->size[0] > 0;
	s->said[1] = s->is_auto[1] || s->size[1] > 0;
}

int nsh_decision_cap(const struct nsh_decision *d, struct nshash_sizes cap, const char *const names[NSH_SRC_COUNT],
		     struct nshash_error *err)
{
	for (int p = 0; p < 2; p++) {
		struct nshash_sizes one = {0, 0}, lim = cap;
		*(p ? &one.udp : &one.tcp) = p ? d->sizes.udp : d->sizes.tcp;
		/* the other protocol is not this source's: not checked here */
		*(p ? &lim.tcp : &lim.udp) = UINT32_MAX;
		const char *name = names[d->src[p]] ? names[d->src[p]] : "request";
		int r = nshash_sizes_cap(one, lim, name, err);
		if (r < 0)
			return r;
	}
	return 0;
}

const char *nsh_decision_text(const struct nsh_decision *d, const char *const names[NSH_SRC_COUNT], char *buf,
			      size_t len)
{
	const char *t = names[d->src[0]] ? names[d->src[0]] : "none";
	const char *u = names[d->src[1]] ? names[d->src[1]] : "none";
	if (d->src[0] == d->src[1])
		snprintf(buf, len, "%s", t);
	else
		snprintf(buf, len, "tcp: %s, udp: %s", t, u);
	return buf;
}
