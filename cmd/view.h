/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What one scan shows (cmd/view.c), for `nshash stats` (stats.c) and its
 * Prometheus text (metrics.c). */
#ifndef NSH_CMD_VIEW_H
#define NSH_CMD_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "auto.h"
#include "cnistate.h"
#include "common.h"

/* What one scan shows: the netns, the shared totals, the plugin's records. */
struct cli_view {
	struct nshash_stats_netns *v;
	size_t n;
	struct nshash_stats_shared sh[2];
	struct nsh_policy policy;
	struct nsh_cni_pod *pods;
	size_t npods;
	uint64_t adds[3]; /* sized, warned, refused */
	/* `auto` (docs/auto.md): each netns's workload ("" none) and the history */
	char (*keys)[NSH_WORKLOAD_KEY_MAX];
	struct nsh_history hist;
	int64_t now;
};

/* Scan (only: those paths, NULL every netns) and gather what the output
 * shows: 0, or an exit status (the error said on stderr). */
int cli_view_load(const char *state_dir, const char *const *only, size_t nonly, struct cli_view *w);
void cli_view_free(struct cli_view *w);
extern const char *const cli_proto_key[2]; /* "tcp", "udp" */
/* Netns e's numbers for protocol k (0 tcp, 1 udp): entries (< 0 shared),
 * sockets, sockets per bucket, the size recommended within cap. */
long cli_entries(const struct nshash_netns_info *i, int k);
long cli_sockets(const struct nshash_sockets *s, int k);
double cli_load(const struct nshash_stats_netns *e, int k);
uint32_t cli_recommend(const struct nshash_stats_netns *e, int k, const struct nshash_sizes *cap);
/* "host", "process", "template", "container", "spare" or "netns". */
const char *cli_kind_name(const struct nshash_stats_netns *e);
/* The size `auto` gives netns i's workload now; false: no workload. */
bool cli_view_auto(const struct cli_view *w, size_t i, struct nshash_sizes *out);
/* The CNI plugin's record of netns i, or NULL. */
const struct nsh_cni_pod *cli_view_pod(const struct cli_view *w, size_t i);
/* metrics.c: the Prometheus text of a loaded view (!commands: the command
 * label left empty). */
void cli_metrics_view(FILE *f, const struct cli_view *w, bool commands);

#endif
