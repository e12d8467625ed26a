/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Prometheus text of a scan (docs/design.md "One formatter"):
 * `nshash stats --prometheus` and `nshash serve`'s /metrics. */
#include <stdio.h>
#include <string.h>

#include "auto.h"
#include "cli.h"
#include "common.h"
#include "view.h"

/* ------------------------------------------------------------- prometheus */

static void label(FILE *f, const char *s)
{
	char buf[3 * 4096 + 8];
	nsh_prom_label(s, buf, sizeof(buf));
	fputs(buf, f);
}

static void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* netns="...", and the pod's namespace and name where the plugin recorded them */
static void netns_labels(FILE *f, const struct cli_view *w, size_t i)
{
	fputs("netns=\"", f);
	label(f, w->v[i].name);
	fputc('"', f);
	const struct nsh_cni_pod *p = cli_view_pod(w, i);
	if (p && p->namespace_[0]) {
		fputs(",namespace=\"", f);
		label(f, p->namespace_);
		fputc('"', f);
	}
	if (p && p->pod[0]) {
		fputs(",pod=\"", f);
		label(f, p->pod);
		fputc('"', f);
	}
}

/* commands: the command (comm) of the process in each netns, else "" */
static void prom_netns(FILE *f, const struct cli_view *w, bool commands)
{
	static const struct {
		const char *name, *help;
	} metrics[] = {
	    {"nshash_table_entries", "Buckets of the netns's table as the kernel reports them (negative: it shares the "
				     "global table of that many buckets)."},
	    {"nshash_sockets",
	     "Sockets in the netns's table (tcp: established hash incl. TIME_WAIT; udp: bound sockets)."},
	    {"nshash_table_load", "Sockets of the netns per bucket of the table it uses."},
	    {"nshash_recommended_entries",
	     "Next power of two at or above the netns's sockets, within kernel and policy limits."},
	};
	const struct nshash_stats_netns *v = w->v;
	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		prom_head(f, metrics[m].name, "gauge", metrics[m].help);
		for (size_t i = 0; i < w->n; i++)
			for (int k = 0; k < 2; k++) {
				fprintf(f, "%s{", metrics[m].name);
				netns_labels(f, w, i);
				fprintf(f, ",proto=\"%s\"} ", cli_proto_key[k]);
				if (m == 0)
					fprintf(f, "%ld\n", cli_entries(&v[i].info, k));
				else if (m == 1)
					fprintf(f, "%ld\n", cli_sockets(&v[i].sockets, k));
				else if (m == 2)
					fprintf(f, "%.6g\n", cli_load(&v[i], k));
				else
					fprintf(f, "%u\n", cli_recommend(&v[i], k, &w->policy.max));
			}
	}
	/* TCP only: no proto label. */
	static const char *const tcp_only[2][2] = {
	    {"nshash_tcp_time_wait_sockets", "TIME_WAIT sockets of the netns (part of its tcp nshash_sockets)."},
	    {"nshash_tcp_listeners", "Listening TCP sockets of the netns (in the global listening hash; -1 unknown)."},
	};
	for (int m = 0; m < 2; m++) {
		prom_head(f, tcp_only[m][0], "gauge", tcp_only[m][1]);
		for (size_t i = 0; i < w->n; i++) {
			fprintf(f, "%s{", tcp_only[m][0]);
			netns_labels(f, w, i);
			fprintf(f, "} %ld\n", m ? v[i].sockets.tcp_listen : v[i].sockets.tcp_tw);
		}
	}
	prom_head(f, "nshash_netns_info", "gauge",
		  "Who is in the netns: a process, its command and container id (1 per netns).");
	for (size_t i = 0; i < w->n; i++) {
		fputs("nshash_netns_info{", f);
		netns_labels(f, w, i);
		fprintf(f, ",kind=\"%s\",pid=\"", cli_kind_name(&v[i]));
		if (v[i].pid)
			fprintf(f, "%d", (int)v[i].pid);
		fprintf(f, "\",command=\"");
		if (commands)
			label(f, v[i].command);
		fprintf(f, "\",container=\"%s\",engine=\"%s\"} 1\n", v[i].container, v[i].engine);
	}
}

static void prom_shared(FILE *f, const struct nshash_stats_shared sh[2])
{
	static const char *const help[4][2] = {
	    {"nshash_shared_buckets", "Buckets of the global (shared) table."},
	    {"nshash_shared_netns", "Network namespaces using the global table, the host's included."},
	    {"nshash_shared_sockets", "Sockets in the global table, summed over those netns."},
	    {"nshash_shared_chain_length", "Average chain length of the global table: sockets / buckets."},
	};
	for (int m = 0; m < 4; m++) {
		prom_head(f, help[m][0], "gauge", help[m][1]);
		for (int k = 0; k < 2; k++) {
			fprintf(f, "%s{proto=\"%s\"} ", help[m][0], cli_proto_key[k]);
			if (m == 0)
				fprintf(f, "%ld\n", sh[k].buckets);
			else if (m == 1)
				fprintf(f, "%zu\n", sh[k].netns);
			else if (m == 2)
				fprintf(f, "%ld\n", sh[k].sockets);
			else
				fprintf(f, "%.6g\n", sh[k].chain);
		}
	}
}

/* The plugin's side: ADDs by outcome, pod netns left on the shared tables. */
static void prom_cni(FILE *f, const struct cli_view *w)
{
	static const char *const outcomes[3] = {"sized", "warned", "refused"};
	prom_head(f, "nshash_cni_adds_total", "counter",
		  "CNI ADDs of the nshash plugin with this state dir: sized (own tables), warned (ran on the "
		  "shared tables under onFailure warn), refused (the ADD failed).");
	for (int k = 0; k < 3; k++)
		fprintf(f, "nshash_cni_adds_total{outcome=\"%s\"} %llu\n", outcomes[k], (unsigned long long)w->adds[k]);
	prom_head(f, "nshash_netns_shared", "gauge",
		  "A pod netns (/run/netns/cni-*) on the shared tables: reason unseen (no nshash ADD for it: "
		  "started before nshash was chained) or warned (1 per netns).");
	size_t unseen = 0, warned = 0;
	for (size_t i = 0; i < w->n; i++) {
		const char *why = nsh_pod_netns_shared(&w->v[i], cli_view_pod(w, i));
		if (!why)
			continue;
		*why == 'u' ? unseen++ : warned++;
		fputs("nshash_netns_shared{", f);
		netns_labels(f, w, i);
		fprintf(f, ",reason=\"%s\"} 1\n", why);
	}
	prom_head(f, "nshash_netns_shared_count", "gauge",
		  "Pod netns on the shared tables by reason (nshash_netns_shared).");
	fprintf(f,
		"nshash_netns_shared_count{reason=\"unseen\"} %zu\nnshash_netns_shared_count{reason=\"warned\"} %zu\n",
		unseen, warned);
}

/* The policy's defaultTcp/defaultUdp. */
static void prom_defaults(FILE *f, const struct cli_view *w)
{
	prom_head(f, "nshash_policy_default_entries", "gauge",
		  "The policy's defaultTcp/defaultUdp: the size of a container that asks for none (0 = shared).");
	fprintf(f, "nshash_policy_default_entries{proto=\"tcp\"} %u\n", w->policy.defaults.tcp);
	fprintf(f, "nshash_policy_default_entries{proto=\"udp\"} %u\n", w->policy.defaults.udp);
}

/* Everything `stats --prometheus` prints, and `serve` serves. */
void cli_metrics_view(FILE *f, const struct cli_view *w, bool commands)
{
	prom_netns(f, w, commands);
	prom_shared(f, w->sh);
	prom_cni(f, w);
	prom_defaults(f, w);
	cli_history_metrics(f, &w->hist, &w->policy, w->now);
}

int cli_metrics(FILE *f, const char *state_dir, bool commands)
{
	struct cli_view w;
	int rc = cli_view_load(state_dir, NULL, 0, &w);
	if (rc == EXIT_OK)
		cli_metrics_view(f, &w, commands);
	cli_view_free(&w);
	return rc;
}
