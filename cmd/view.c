/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What one scan of the host shows (`nshash stats`, its Prometheus text,
 * `nshash serve`): every netns with its tables and sockets, the shared
 * totals, the CNI plugin's pod records and ADD counts, each netns's
 * `auto` workload; and what follows from a netns's numbers (its load, a
 * recommended size). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auto.h"
#include "cli.h"
#include "common.h"
#include "view.h"

const char *const cli_proto_key[2] = {"tcp", "udp"};

long cli_entries(const struct nshash_netns_info *i, int k)
{
	return k ? i->udp_entries : i->tcp_entries;
}

long cli_sockets(const struct nshash_sockets *s, int k)
{
	return k ? s->udp : s->tcp;
}

double cli_load(const struct nshash_stats_netns *e, int k)
{
	long entries = cli_entries(&e->info, k);
	long buckets = entries < 0 ? -entries : entries;
	return buckets ? (double)cli_sockets(&e->sockets, k) / (double)buckets : 0;
}

/* The kernel's recommendation capped by the policy's maxTcp/maxUdp (the
 * largest power of two within the cap: what an annotation may ask for). */
uint32_t cli_recommend(const struct nshash_stats_netns *e, int k, const struct nshash_sizes *cap)
{
	uint32_t r = nshash_stats_recommend(k ? NSHASH_UDP : NSHASH_TCP, &e->sockets);
	uint32_t c = k ? cap->udp : cap->tcp;
	while (r > c && r > 1)
		r >>= 1;
	return r <= c ? r : 0;
}

const char *cli_kind_name(const struct nshash_stats_netns *e)
{
	if (!e->pinned)
		return e->host ? "host" : "process";
	return e->kind == NSHASH_ENTRY_TEMPLATE	   ? "template"
	       : e->kind == NSHASH_ENTRY_CONTAINER ? "container"
	       : e->kind == NSHASH_ENTRY_SPARE	   ? "spare"
						   : "netns";
}

/* The size `auto` gives netns i's workload now; false: no workload. */
bool cli_view_auto(const struct cli_view *w, size_t i, struct nshash_sizes *out)
{
	if (!w->keys || !w->keys[i][0])
		return false;
	bool known;
	*out =
	    nsh_auto_resolve(&w->hist, w->keys[i], &w->policy, true, true, (struct nshash_sizes){0, 0}, w->now, &known);
	return true;
}

const struct nsh_cni_pod *cli_view_pod(const struct cli_view *w, size_t i)
{
	return nsh_cni_pod_find(w->pods, w->npods, w->v[i].inode);
}

/* Scan and gather what the output shows.  0, or an exit status. */
int cli_view_load(const char *state_dir, const char *const *only, size_t nonly, struct cli_view *w)
{
	struct nshash_error err = {0};
	memset(w, 0, sizeof(*w));
	if (nsh_policy_load(nsh_policy_env(), &w->policy, &err) < 0) {
		cli_fail(0, "stats: %s (recommendations ignore the policy's caps)", err.msg);
		nsh_policy_defaults(&w->policy);
		w->policy.max = (struct nshash_sizes){NSHASH_TCP_MAX, NSHASH_UDP_MAX};
	}
	struct nshash_stats_opts opts = {.state_dir = state_dir, .only = only, .nonly = nonly};
	if (nshash_stats_scan(&opts, &w->v, &w->n, &err) < 0)
		return cli_fail_err(err.errnum == ENOENT || err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	for (int k = 0; k < 2; k++)
		nshash_stats_shared(w->v, w->n, k, &w->sh[k]);
	/* the plugin's records: what they cannot say is only less shown */
	if (nsh_cni_pods_read(state_dir, &w->pods, &w->npods, &err) < 0)
		cli_fail(0, "stats: %s (pods unnamed)", err.msg);
	if (nsh_cni_adds_read(state_dir, w->adds, &err) < 0)
		cli_fail(0, "stats: %s (ADDs not counted)", err.msg);
	char warn[4500];
	w->now = (int64_t)time(NULL);
	if (nsh_history_load(state_dir, &w->hist, warn, sizeof(warn), &err) < 0)
		cli_fail(0, "stats: %s (auto sizes not shown)", err.msg);
	else if (warn[0])
		cli_fail(0, "stats: warning: %s", warn);
	w->keys = w->n ? calloc(w->n, sizeof(*w->keys)) : NULL;
	for (size_t i = 0; w->keys && i < w->n; i++)
		if (nsh_workload_read(state_dir, w->v[i].dev, w->v[i].inode, w->keys[i], sizeof(w->keys[i])) < 0 ||
		    nsh_workload_of(state_dir, &w->v[i], w->keys[i], sizeof(w->keys[i]), false, &err) != 1)
			w->keys[i][0] = '\0'; /* none, or stale: another netns's */
	return EXIT_OK;
}

void cli_view_free(struct cli_view *w)
{
	free(w->v);
	free(w->pods);
	free(w->keys);
	nsh_history_free(&w->hist);
}
