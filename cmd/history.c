/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash history: the workloads of HISTORY/history, their peaks (decayed
 * to now), when each was last seen and the sizes `auto` gives them now. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auto.h"
#include "cli.h"
#include "common.h"

static const char history_usage[] = "Usage: nshash history [-j|--json] [--prometheus]\n"
			     "List the workloads `nshash record` has seen: their peak TCP and UDP sockets\n"
			     "(decayed by 0.98 a day since seen), when they were last seen and the sizes\n"
			     "io.nshash.tcp=auto / io.nshash.udp=auto give them now (peak x 2, next power\n"
			     "of two, at least 128, at most the policy's maxTcp/maxUdp).\n";

void cli_history_metrics(FILE *f, const struct nsh_history *h, const struct nsh_policy *policy, int64_t now)
{
	fputs("# HELP nshash_auto_entries The size io.nshash.tcp/udp=auto gives the workload now.\n"
	      "# TYPE nshash_auto_entries gauge\n",
	      f);
	for (size_t i = 0; i < h->n; i++) {
		const struct nsh_history_entry *e = &h->v[i];
		char label[NSH_WORKLOAD_KEY_MAX * 4];
		nsh_prom_label(e->key, label, sizeof(label));
		for (int k = 0; k < 2; k++) {
			enum nshash_proto p = k ? NSHASH_UDP : NSHASH_TCP;
			fprintf(
			    f, "nshash_auto_entries{workload=\"%s\",proto=\"%s\"} %u\n", label, k ? "udp" : "tcp",
			    nsh_auto_size(p, nsh_history_peak_now(e, p, now), k ? policy->max.udp : policy->max.tcp));
		}
	}
}

enum history_format { HISTORY_TEXT = 0, HISTORY_JSON, HISTORY_PROMETHEUS };

static int history_command(const char *state_dir, enum history_format format)
{
	struct nshash_error err = {0};
	struct nsh_policy policy;
	if (nsh_policy_load(nsh_policy_env(), &policy, &err) < 0)
		return cli_fail(EXIT_FAIL, "history: %s", err.msg);
	struct nsh_history h;
	char warn[4500];
	if (nsh_history_load(state_dir, &h, warn, sizeof(warn), &err) < 0)
		return cli_fail(EXIT_FAIL, "history: %s", err.msg);
	if (warn[0])
		fprintf(stderr, "nshash: warning: history: %s\n", warn);
	nsh_history_evict(&h, h.n); /* most recently seen first */
	int64_t now = (int64_t)time(NULL);
	json_object *arr = format == HISTORY_JSON ? json_object_new_array() : NULL;
	if (format == HISTORY_TEXT)
		printf("%-40s %10s %10s %8s %8s %s\n", "WORKLOAD", "TCP-PEAK", "UDP-PEAK", "AUTO-TCP", "AUTO-UDP",
		       "LAST-SEEN");
	if (format == HISTORY_PROMETHEUS) {
		cli_history_metrics(stdout, &h, &policy, now);
		nsh_history_free(&h);
		return EXIT_OK;
	}
	for (size_t i = 0; i < h.n; i++) {
		const struct nsh_history_entry *e = &h.v[i];
		long tp = nsh_history_peak_now(e, NSHASH_TCP, now), up = nsh_history_peak_now(e, NSHASH_UDP, now);
		uint32_t at = nsh_auto_size(NSHASH_TCP, tp, policy.max.tcp);
		uint32_t au = nsh_auto_size(NSHASH_UDP, up, policy.max.udp);
		char shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
		nsh_workload_show(e->key, shown, sizeof(shown));
		if (format == HISTORY_JSON) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "workload", json_object_new_string(shown));
			json_object_object_add(o, "tcpPeak", json_object_new_int64(tp));
			json_object_object_add(o, "udpPeak", json_object_new_int64(up));
			json_object_object_add(o, "lastSeen", json_object_new_int64(e->last_seen));
			json_object_object_add(o, "autoTcp", json_object_new_int64(at));
			json_object_object_add(o, "autoUdp", json_object_new_int64(au));
			json_object_array_add(arr, o);
		} else {
			char when[32];
			time_t t = (time_t)e->last_seen;
			struct tm tm;
			if (gmtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
			else
				snprintf(when, sizeof(when), "?");
			printf("%-40s %10ld %10ld %8u %8u %s\n", shown, tp, up, at, au, when);
		}
	}
	if (arr) {
		cli_print_json(arr);
	}
	nsh_history_free(&h);
	return EXIT_OK;
}

static int cmd_history(struct cli *c, int argc, char **argv)
{
	if (argc > 0)
		return cli_fail(EXIT_USAGE, "history: takes no arguments");
	(void)argv;
	if (c->json && c->prometheus)
		return cli_fail(EXIT_USAGE, "history: give --json or --prometheus, not both");
	return history_command(c->state_dir, c->prometheus ? HISTORY_PROMETHEUS
					     : c->json	   ? HISTORY_JSON
							   : HISTORY_TEXT);
}

const struct command cli_cmd_history = {"history", cmd_history, BIT(OPT_JSON) | BIT(OPT_PROMETHEUS), history_usage};
