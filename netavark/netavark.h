/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash's netavark (docs/networks.md): what its files share. */
#ifndef NSH_NETAVARK_H
#define NSH_NETAVARK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "common.h"

/* netavark's command line as nshash reads it.  Only netavark's own global
 * options are understood (netavark 1.4's -a/--aardvark-binary, -c/--config,
 * -f/--file, -r/--rootless, -h/--help, -V/--version, and netavark 1.14's
 * --firewall-driver and --plugin-directory), each in the forms clap takes
 * (--opt VALUE, --opt=VALUE, -o VALUE, -oVALUE); the subcommand, then its
 * operand (setup's and teardown's netns path) and nothing else.  Anything
 * else (an unknown option, one whose value is missing, an option after the
 * subcommand) is not understood: netavark's to judge, nshash does nothing
 * (it never sizes a path it may have misread). */
struct nsh_netavark_cmdline {
	bool understood;
	const char *cmd, *netns;
	const char *file;     /* --file's value: the input is there, not on stdin */
	const char *rootless; /* --rootless's value, NULL when not given */
};
void nsh_netavark_cmdline_parse(int argc, char **argv, struct nsh_netavark_cmdline *c);
/* NETNS where podman pins a rootful container's netns: /run/netns/NAME. */
bool nsh_netavark_under_run_netns(const char *netns);

/* `s` as a JSON string, cut to fit `len`: hostile text shown in a message. */
void nsh_netavark_quote(const char *s, char *buf, size_t len);
/* Per protocol (docs/sizing.md): a network's labels (said[p]: it names
 * protocol p), else the policy's defaultTcp/defaultUdp; an `auto` default
 * is left to the hook (it needs a workload's history): that protocol
 * shared.  `from` says where the sizes came from. */
void nsh_netavark_resolve(const struct nsh_policy *pol, struct nshash_sizes labels, const bool said[2],
			  struct nsh_decision *d, char *from, size_t flen);
/* The sizes the container's networks ask for (the network_info object of
 * netavark's input): those of the first network with io.nshash.* labels,
 * each label within the policy's caps, resolved as above; another
 * labelled network that resolves to other sizes is refused.  0 (*found;
 * *first: that network's name, quoted; *from: where its sizes came from),
 * or 1 (msg written). */
int nsh_netavark_network_sizes(json_object *root, const struct nsh_policy *pol, struct nshash_sizes *sizes, bool *found,
			       char *first, size_t flen, char *from, size_t fromlen, char *msg, size_t mlen);

#endif
