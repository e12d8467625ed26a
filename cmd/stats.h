/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `nshash stats`, and the socket counts `nshash show` prints. */
#ifndef NSH_CMD_STATS_H
#define NSH_CMD_STATS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "nshash.h"

enum stats_format { STATS_TEXT = 0, STATS_JSON, STATS_PROMETHEUS };

/* nshash stats [NETNS...]: returns the exit status. */
int stats_command(const char *state_dir, enum stats_format format, int argc, char **argv);

/* What `nshash stats --prometheus` prints, into f (for `nshash serve`):
 * 0, or an exit status (the error said on stderr).  !commands: the command
 * label of nshash_netns_info left empty (other tenants' processes are not
 * named to whoever can scrape). */
int stats_prometheus(FILE *f, const char *state_dir, bool commands);

/* For show: add "sockets" (and TIME_WAIT, listeners) to the "tcp"/"udp"
 * objects of `o`, or print them as text lines. */
void stats_sockets_json(json_object *o, const struct nshash_sockets *s);
void stats_sockets_text(const struct nshash_sockets *s, const struct nshash_netns_info *info);

/* The policy's defaultTcp/defaultUdp for check and stats: a JSON object
 * {"tcp": N, "udp": N, "source": "FILE"} and a text line ending in "\n". */
struct nsh_policy;
json_object *stats_defaults_json(const struct nsh_policy *policy);
void stats_defaults_text(const struct nsh_policy *policy, char *out, size_t len);

#endif
