/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Size requests: strict parsing, the kernel's rounding, memory cost, caps. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *nshash_proto_name(enum nshash_proto proto)
{
	return proto == NSHASH_TCP ? "tcp" : "udp";
}

uint32_t nshash_proto_max(enum nshash_proto proto)
{
	return proto == NSHASH_TCP ? NSHASH_TCP_MAX : NSHASH_UDP_MAX;
}

int nshash_size_check(enum nshash_proto proto, const char *key, int64_t value, uint32_t *out, struct nshash_error *err)
{
	uint32_t max = nshash_proto_max(proto);
	if (value < 0 || value > (int64_t)max)
		return nshash_error_set(err, ERANGE, "%s: %lld is out of range (%s sizes are 0..%u, 0 = shared table)",
					key, (long long)value, nshash_proto_name(proto), max);
	*out = (uint32_t)value;
	return 0;
}

int nshash_size_parse(enum nshash_proto proto, const char *key, const char *text, uint32_t *out,
		      struct nshash_error *err)
{
	char shown[128];
	if (!text)
		text = "";
	nshash_quote(text, shown, sizeof(shown));
	if (*text == '\0')
		return nshash_error_set(err, EINVAL, "%s: empty value (expected a decimal number of entries)", key);
	uint64_t v = 0;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return nshash_error_set(err, EINVAL, "%s: %s is not a decimal number of entries", key, shown);
		if (v <= NSHASH_TCP_MAX)
			v = v * 10 + (uint64_t)(*p - '0');
	}
	uint32_t max = nshash_proto_max(proto);
	if (v > max)
		return nshash_error_set(err, ERANGE, "%s: %s is out of range (%s sizes are 0..%u, 0 = shared table)",
					key, shown, nshash_proto_name(proto), max);
	*out = (uint32_t)v;
	return 0;
}

static uint32_t next_pow2(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

uint32_t nshash_size_effective(enum nshash_proto proto, uint32_t requested)
{
	if (requested == 0)
		return 0;
	if (requested > nshash_proto_max(proto))
		requested = nshash_proto_max(proto);
	uint32_t e = next_pow2(requested);
	if (proto == NSHASH_UDP && e < NSHASH_UDP_MIN)
		e = NSHASH_UDP_MIN;
	return e;
}

struct nshash_sizes nshash_sizes_effective(struct nshash_sizes r)
{
	return (struct nshash_sizes){nshash_size_effective(NSHASH_TCP, r.tcp),
				     nshash_size_effective(NSHASH_UDP, r.udp)};
}

uint64_t nshash_table_bytes(enum nshash_proto proto, uint32_t effective)
{
	/* TCP: one 8-byte bucket head per entry; UDP: hash + hash2, each
	 * slot a list head, a count and a lock (measured 64 bytes per entry). */
	return (uint64_t)effective * (proto == NSHASH_TCP ? 8u : 64u);
}

uint64_t nshash_sizes_bytes(struct nshash_sizes eff)
{
	return nshash_table_bytes(NSHASH_TCP, eff.tcp) + nshash_table_bytes(NSHASH_UDP, eff.udp);
}

int nshash_sizes_cap(struct nshash_sizes requested, struct nshash_sizes cap, const char *source,
		     struct nshash_error *err)
{
	for (int i = 0; i < 2; i++) {
		enum nshash_proto proto = i ? NSHASH_UDP : NSHASH_TCP;
		uint32_t want = nshash_size_effective(proto, i ? requested.udp : requested.tcp);
		uint32_t max = i ? cap.udp : cap.tcp;
		if (want > max)
			return nshash_error_set(
			    err, EPERM, "%s: %s size %u (effective %u) is above the allowed maximum %u (max%s)", source,
			    nshash_proto_name(proto), i ? requested.udp : requested.tcp, want, max, i ? "Udp" : "Tcp");
	}
	return 0;
}

int nshash_strategy_parse(const char *text, enum nshash_strategy *out, struct nshash_error *err)
{
	if (text && strcmp(text, "template") == 0)
		*out = NSHASH_STRATEGY_TEMPLATE;
	else if (text && strcmp(text, "nested") == 0)
		*out = NSHASH_STRATEGY_NESTED;
	else
		return nshash_error_set(err, EINVAL, "strategy \"%s\": expected template or nested", text ? text : "");
	return 0;
}
