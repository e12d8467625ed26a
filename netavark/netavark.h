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
/* The sizes the container's networks ask for (the network_info object of
 * netavark's input): those of the first network with io.nshash.* labels,
 * each within the policy's caps; another network with other labelled
 * sizes is refused.  0 (*found; *first: that network's name, quoted;
 * said[p]: its labels name protocol p), or 1 (msg written). */
int nsh_netavark_network_sizes(json_object *root, const struct nsh_policy *pol, struct nshash_sizes *sizes,
			       bool said[2], bool *found, char *first, size_t flen, char *msg, size_t mlen);

#endif
