/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A podman network's io.nshash.* labels: the sizes they ask for. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "netavark.h"

#define MAX_LABEL_LEN 10 /* decimal digits of a size label */

/* `s` as a JSON string (json-c escapes it), cut to fit: hostile text
 * shown in a message. */
void nsh_netavark_quote(const char *s, char *buf, size_t len)
{
	json_object *o = json_object_new_string(s);
	snprintf(buf, len, "%s",
		 o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
		   : "\"?\"");
	json_object_put(o);
}

/* One size label of network `net`: absent (0, *set false), or decimal
 * digits within `cap`.  0 or 1 (message written). */
static int label_size(json_object *labels, const char *net, const char *key, unsigned cap, unsigned *out, bool *set,
		      char *msg, size_t mlen)
{
	json_object *v;
	*out = 0;
	*set = false;
	if (!json_object_object_get_ex(labels, key, &v))
		return 0;
	*set = true;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, mlen, "network %s: label %s is not a string", net, key);
		return 1;
	}
	const char *s = json_object_get_string(v);
	size_t n = strlen(s);
	bool digits = n > 0 && n <= MAX_LABEL_LEN;
	for (size_t i = 0; digits && i < n; i++)
		digits = s[i] >= '0' && s[i] <= '9';
	char shown[40];
	nsh_netavark_quote(s, shown, sizeof(shown));
	if (!digits) {
		snprintf(msg, mlen,
			 "network %s: label %s=%s is not a decimal number of hash buckets: "
			 "recreate the network with e.g. --label %s=4096",
			 net, key, shown, key);
		return 1;
	}
	enum nshash_proto proto = strcmp(key, NSH_ANNOTATION_TCP) ? NSHASH_UDP : NSHASH_TCP;
	struct nshash_error e;
	uint32_t x;
	if (nshash_size_parse(proto, key, s, &x, &e) < 0) {
		snprintf(msg, mlen, "network %s: label %s", net, e.msg);
		return 1;
	}
	/* the policy's caps compare what the kernel makes of it */
	uint32_t eff = nshash_size_effective(proto, x);
	if (eff > cap) {
		snprintf(
		    msg, mlen,
		    "network %s: label %s=%s (effective %u) is above the policy's cap %u: lower it or raise the cap",
		    net, key, s, eff, cap);
		return 1;
	}
	*out = (unsigned)x;
	return 0;
}

/* One protocol of a resolved network, as a conflict message shows it:
 * io.nshash.tcp=N (labelled, or shared by nobody), defaultTcp N. */
static void proto_shown(const struct nsh_decision *d, int p, char *buf, size_t len)
{
	unsigned v = p ? d->sizes.udp : d->sizes.tcp;
	if (d->src[p] == NSH_SRC_DEFAULT)
		snprintf(buf, len, "%s %u", p ? "defaultUdp" : "defaultTcp", v);
	else
		snprintf(buf, len, "%s=%u", p ? NSH_ANNOTATION_UDP : NSH_ANNOTATION_TCP, v);
}

void nsh_netavark_resolve(const struct nsh_policy *pol, struct nshash_sizes labels, const bool said[2],
			  struct nsh_decision *d, char *from, size_t flen)
{
	static const char *const names[NSH_SRC_COUNT] = {
	    [NSH_SRC_NETWORK] = "io.nshash.* labels",
	    [NSH_SRC_DEFAULT] = "the node's defaultTcp/defaultUdp",
	};
	struct nsh_said net = {.said = {said[0], said[1]}, .size = {labels.tcp, labels.udp}}, def;
	nsh_said_policy_defaults(pol, &def);
	for (int p = 0; p < 2; p++)
		if (def.is_auto[p]) /* needs a workload's history: the hook's */
			def.said[p] = false;
	const struct nsh_said *by[NSH_SRC_COUNT] = {[NSH_SRC_NETWORK] = &net, [NSH_SRC_DEFAULT] = &def};
	nsh_decide(by, d);
	enum nsh_src one = d->src[0] != NSH_SRC_NONE ? d->src[0] : d->src[1];
	if (d->src[0] == NSH_SRC_NONE || d->src[1] == NSH_SRC_NONE)
		snprintf(from, flen, "%s", names[one] ? names[one] : names[NSH_SRC_NETWORK]);
	else
		nsh_decision_text(d, names, from, flen);
}

/* The sizes the container's networks ask for: those of the first network
 * (in podman's order) with io.nshash.* labels, a protocol its labels leave
 * from the node's defaults; another network that resolves to other sizes
 * is refused.  0 (*found), or 1 (message written). */
int nsh_netavark_network_sizes(json_object *root, const struct nsh_policy *pol, struct nshash_sizes *sizes, bool *found,
			       char *first, size_t flen, char *from, size_t fromlen, char *msg, size_t mlen)
{
	json_object *info;
	*found = false;
	if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "network_info", &info) ||
	    !json_object_is_type(info, json_type_object))
		return 0; /* not ours to judge: netavark says what is wrong */
	struct nsh_decision firstd;
	json_object_object_foreach(info, name, net)
	{
		json_object *labels;
		if (!json_object_is_type(net, json_type_object) || !json_object_object_get_ex(net, "labels", &labels) ||
		    !json_object_is_type(labels, json_type_object))
			continue;
		char quoted[160];
		nsh_netavark_quote(name, quoted, sizeof(quoted));
		struct nshash_sizes s;
		bool said[2];
		if (label_size(labels, quoted, NSH_ANNOTATION_TCP, pol->max.tcp, &s.tcp, &said[0], msg, mlen) ||
		    label_size(labels, quoted, NSH_ANNOTATION_UDP, pol->max.udp, &s.udp, &said[1], msg, mlen))
			return 1;
		if (!said[0] && !said[1])
			continue;
		struct nsh_decision d;
		char f[120];
		nsh_netavark_resolve(pol, s, said, &d, f, sizeof(f));
		if (!*found) {
			*found = true;
			*sizes = d.sizes;
			firstd = d;
			snprintf(first, flen, "%s", quoted);
			snprintf(from, fromlen, "%s", f);
		} else if (d.sizes.tcp != sizes->tcp || d.sizes.udp != sizes->udp) {
			char a[2][48], b[2][48];
			for (int p = 0; p < 2; p++) {
				proto_shown(&firstd, p, a[p], sizeof(a[p]));
				proto_shown(&d, p, b[p], sizeof(b[p]));
			}
			snprintf(msg, mlen,
				 "networks %s (%s %s) and %s (%s %s) ask for other sizes: a netns has one pair of "
				 "tables; attach the container to networks whose labels agree",
				 first, a[0], a[1], quoted, b[0], b[1]);
			return 1;
		}
	}
	return 0;
}
