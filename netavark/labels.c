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

/* The sizes the container's networks ask for: those of the first network
 * (in podman's order) with io.nshash.* labels; another network with other
 * labelled sizes is refused.  0 (*found), or 1 (message written). */
int nsh_netavark_network_sizes(json_object *root, const struct nsh_policy *pol, struct nshash_sizes *sizes,
			       bool said[2], bool *found, char *first, size_t flen, char *msg, size_t mlen)
{
	json_object *info;
	*found = false;
	said[0] = said[1] = false;
	if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "network_info", &info) ||
	    !json_object_is_type(info, json_type_object))
		return 0; /* not ours to judge: netavark says what is wrong */
	json_object_object_foreach(info, name, net)
	{
		json_object *labels;
		if (!json_object_is_type(net, json_type_object) || !json_object_object_get_ex(net, "labels", &labels) ||
		    !json_object_is_type(labels, json_type_object))
			continue;
		char quoted[160];
		nsh_netavark_quote(name, quoted, sizeof(quoted));
		struct nshash_sizes s;
		bool ts, us;
		if (label_size(labels, quoted, NSH_ANNOTATION_TCP, pol->max.tcp, &s.tcp, &ts, msg, mlen) ||
		    label_size(labels, quoted, NSH_ANNOTATION_UDP, pol->max.udp, &s.udp, &us, msg, mlen))
			return 1;
		if (!ts && !us)
			continue;
		if (!*found) {
			*found = true;
			*sizes = s;
			said[0] = ts;
			said[1] = us;
			snprintf(first, flen, "%s", quoted);
		} else if (s.tcp != sizes->tcp || s.udp != sizes->udp) {
			snprintf(msg, mlen,
				 "networks %s (io.nshash.tcp=%u io.nshash.udp=%u) and %s (io.nshash.tcp=%u "
				 "io.nshash.udp=%u) ask for other sizes: a netns has one pair of tables; attach "
				 "the container to networks whose labels agree",
				 first, sizes->tcp, sizes->udp, quoted, s.tcp, s.udp);
			return 1;
		}
	}
	return 0;
}
