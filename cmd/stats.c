/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash stats: every network namespace of the host, its tables, its
 * sockets, its load and a recommended size; then the shared tables'
 * totals.  Text, JSON or the Prometheus text exposition format. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "common.h"
#include "stats.h"
#include "auto.h"

static const char *const proto_key[2] = {"tcp", "udp"};

static long entries_of(const struct nshash_netns_info *i, int k)
{
	return k ? i->udp_entries : i->tcp_entries;
}
static long sockets_of(const struct nshash_sockets *s, int k)
{
	return k ? s->udp : s->tcp;
}

static double load_of(const struct nshash_stats_netns *e, int k)
{
	long entries = entries_of(&e->info, k);
	long buckets = entries < 0 ? -entries : entries;
	return buckets ? (double)sockets_of(&e->sockets, k) / (double)buckets : 0;
}

/* The kernel's recommendation capped by the policy's maxTcp/maxUdp (the
 * largest power of two within the cap: what an annotation may ask for). */
static uint32_t recommend(const struct nshash_stats_netns *e, int k, const struct nshash_sizes *cap)
{
	uint32_t r = nshash_stats_recommend(k ? NSHASH_UDP : NSHASH_TCP, &e->sockets);
	uint32_t c = k ? cap->udp : cap->tcp;
	while (r > c && r > 1)
		r >>= 1;
	return r <= c ? r : 0;
}

/* Names come from /run/netns and /proc: anything but '/' and NUL. */
static void printable(const char *in, char *out, size_t len)
{
	size_t j = 0;
	for (; *in && j + 1 < len; in++)
		out[j++] = (unsigned char)*in < 0x20 || (unsigned char)*in == 0x7f ? '?' : *in;
	out[j] = '\0';
}

static const char *kind_name(const struct nshash_stats_netns *e)
{
	if (!e->pinned)
		return e->host ? "host" : "process";
	return e->kind == NSHASH_ENTRY_TEMPLATE	   ? "template"
	       : e->kind == NSHASH_ENTRY_CONTAINER ? "container"
	       : e->kind == NSHASH_ENTRY_SPARE	   ? "spare"
						   : "netns";
}

/* What one scan shows: the netns, the shared totals, the plugin's records. */
struct view {
	struct nshash_stats_netns *v;
	size_t n;
	struct nshash_stats_shared sh[2];
	struct nsh_policy policy;
	struct nsh_pod_record *pods;
	size_t npods;
	uint64_t adds[3]; /* sized, warned, refused */
	/* `auto` (docs/auto.md): each netns's workload ("" none) and the history */
	char (*keys)[NSH_WORKLOAD_KEY_MAX];
	struct nsh_history hist;
	int64_t now;
};

/* The size `auto` gives netns i's workload now; false: no workload. */
static bool auto_of(const struct view *w, size_t i, struct nshash_sizes *out)
{
	if (!w->keys || !w->keys[i][0])
		return false;
	bool known;
	*out =
	    nsh_auto_resolve(&w->hist, w->keys[i], &w->policy, true, true, (struct nshash_sizes){0, 0}, w->now, &known);
	return true;
}

static const struct nsh_pod_record *pod_of(const struct view *w, size_t i)
{
	return nsh_pod_record_find(w->pods, w->npods, w->v[i].inode);
}

/* ------------------------------------------------------------- json */

static json_object *netns_json(const struct view *w, size_t i)
{
	const struct nshash_stats_netns *e = &w->v[i];
	const struct nshash_sizes *cap = &w->policy.max;
	const struct nsh_pod_record *pod = pod_of(w, i);
	const char *shared = nsh_pod_netns_shared(e, pod);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(e->name));
	json_object_object_add(o, "kind", json_object_new_string(kind_name(e)));
	json_object_object_add(o, "pinned", json_object_new_boolean(e->pinned));
	json_object_object_add(o, "host", json_object_new_boolean(e->host));
	json_object_object_add(o, "pid", e->pid ? json_object_new_int(e->pid) : NULL);
	json_object_object_add(o, "command", e->pid ? json_object_new_string(e->command) : NULL);
	json_object_object_add(o, "container", e->container[0] ? json_object_new_string(e->container) : NULL);
	json_object_object_add(o, "engine", e->engine[0] ? json_object_new_string(e->engine) : NULL);
	json_object_object_add(o, "inode", json_object_new_int64((int64_t)e->inode));
	for (int k = 0; k < 2; k++) {
		json_object *p = json_object_new_object();
		long entries = entries_of(&e->info, k);
		json_object_object_add(p, "entries", json_object_new_int64(entries));
		json_object_object_add(p, "own", json_object_new_boolean(entries > 0 && !e->host));
		json_object_object_add(p, "global", json_object_new_boolean(nshash_stats_global(e, k)));
		json_object_object_add(p, "sockets", json_object_new_int64(sockets_of(&e->sockets, k)));
		json_object_object_add(p, "load", json_object_new_double(load_of(e, k)));
		json_object_object_add(p, "recommended", json_object_new_int64(recommend(e, k, cap)));
		json_object_object_add(o, proto_key[k], p);
	}
	stats_sockets_json(o, &e->sockets);
	json_object_object_add(o, "namespace",
			       pod && pod->namespace_[0] ? json_object_new_string(pod->namespace_) : NULL);
	json_object_object_add(o, "pod", pod && pod->pod[0] ? json_object_new_string(pod->pod) : NULL);
	json_object_object_add(o, "cni_outcome",
			       pod ? json_object_new_string(nsh_cni_outcome_name(pod->outcome)) : NULL);
	json_object_object_add(o, "pod_shared", shared ? json_object_new_string(shared) : NULL);
	struct nshash_sizes a;
	if (auto_of(w, i, &a)) {
		char shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
		nsh_workload_show(w->keys[i], shown, sizeof(shown));
		json_object_object_add(o, "workload", json_object_new_string(shown));
		json_object *ao = json_object_new_object();
		json_object_object_add(ao, "tcp", json_object_new_int64(a.tcp));
		json_object_object_add(ao, "udp", json_object_new_int64(a.udp));
		json_object_object_add(o, "auto", ao);
	} else {
		json_object_object_add(o, "workload", NULL);
		json_object_object_add(o, "auto", NULL);
	}
	return o;
}

static json_object *shared_json(const struct nshash_stats_netns *v, const struct nshash_stats_shared *sh, int k)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "buckets", json_object_new_int64(sh->buckets));
	json_object_object_add(o, "netns", json_object_new_int64((int64_t)sh->netns));
	json_object_object_add(o, "sockets", json_object_new_int64(sh->sockets));
	json_object_object_add(o, "chain", json_object_new_double(sh->chain));
	json_object *top = json_object_new_array();
	for (size_t i = 0; i < sh->ntop; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "id", json_object_new_string(v[sh->top[i]].name));
		json_object_object_add(t, "sockets", json_object_new_int64(sockets_of(&v[sh->top[i]].sockets, k)));
		json_object_array_add(top, t);
	}
	json_object_object_add(o, "top", top);
	return o;
}

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
static void netns_labels(FILE *f, const struct view *w, size_t i)
{
	fputs("netns=\"", f);
	label(f, w->v[i].name);
	fputc('"', f);
	const struct nsh_pod_record *p = pod_of(w, i);
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
static void prom_netns(FILE *f, const struct view *w, bool commands)
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
				fprintf(f, ",proto=\"%s\"} ", proto_key[k]);
				if (m == 0)
					fprintf(f, "%ld\n", entries_of(&v[i].info, k));
				else if (m == 1)
					fprintf(f, "%ld\n", sockets_of(&v[i].sockets, k));
				else if (m == 2)
					fprintf(f, "%.6g\n", load_of(&v[i], k));
				else
					fprintf(f, "%u\n", recommend(&v[i], k, &w->policy.max));
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
		fprintf(f, ",kind=\"%s\",pid=\"", kind_name(&v[i]));
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
			fprintf(f, "%s{proto=\"%s\"} ", help[m][0], proto_key[k]);
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
static void prom_cni(FILE *f, const struct view *w)
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
		const char *why = nsh_pod_netns_shared(&w->v[i], pod_of(w, i));
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
static void prom_defaults(FILE *f, const struct view *w)
{
	prom_head(f, "nshash_policy_default_entries", "gauge",
		  "The policy's defaultTcp/defaultUdp: the size of a container that asks for none (0 = shared).");
	fprintf(f, "nshash_policy_default_entries{proto=\"tcp\"} %u\n", w->policy.defaults.tcp);
	fprintf(f, "nshash_policy_default_entries{proto=\"udp\"} %u\n", w->policy.defaults.udp);
}

/* Everything `stats --prometheus` prints, and `serve` serves. */
static void prom_all(FILE *f, const struct view *w, bool commands)
{
	prom_netns(f, w, commands);
	prom_shared(f, w->sh);
	prom_cni(f, w);
	prom_defaults(f, w);
	history_prometheus(f, &w->hist, &w->policy, w->now);
}

/* ------------------------------------------------------------- text */

static void table_cell(const struct nshash_stats_netns *e, int k, char *buf, size_t len)
{
	long entries = entries_of(&e->info, k);
	if (e->host && entries > 0)
		snprintf(buf, len, "global %ld", entries);
	else if (entries > 0)
		snprintf(buf, len, "own %ld", entries);
	else if (entries < 0)
		snprintf(buf, len, "shared");
	else
		snprintf(buf, len, "n/a");
}

static void print_text(const struct view *w)
{
	const struct nshash_stats_netns *v = w->v;
	printf("%-14s %8s %8s %6s  %-14s %8s %8s %6s  %s\n", "TCP", "SOCKETS", "LOAD", "REC", "UDP", "SOCKETS", "LOAD",
	       "REC", "NETNS");
	for (size_t i = 0; i < w->n; i++) {
		const struct nshash_stats_netns *e = &v[i];
		for (int k = 0; k < 2; k++) {
			char cell[32];
			table_cell(e, k, cell, sizeof(cell));
			printf("%-14s %8ld %8.3f %6u  ", cell, sockets_of(&e->sockets, k), load_of(e, k),
			       recommend(e, k, &w->policy.max));
		}
		char name[4096], who[200] = "";
		printable(e->name, name, sizeof(name));
		if (e->pid && e->pinned)
			snprintf(who, sizeof(who), " (pid %d %s)", (int)e->pid, e->command);
		else if (e->pid)
			snprintf(who, sizeof(who), " %s%s", e->command, e->host ? " (host)" : "");
		printf("%s%s", name, who);
		if (e->container[0])
			printf(" %s %.12s", e->engine[0] ? e->engine : "container", e->container);
		const struct nsh_pod_record *p = pod_of(w, i);
		if (p && (p->namespace_[0] || p->pod[0])) {
			char ns[NSH_POD_LABEL_MAX + 1], pod[NSH_POD_LABEL_MAX + 1];
			printable(p->namespace_, ns, sizeof(ns));
			printable(p->pod, pod, sizeof(pod));
			printf(" pod %s/%s", ns, pod);
		}
		struct nshash_sizes a;
		if (auto_of(w, i, &a)) {
			char shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
			nsh_workload_show(w->keys[i], shown, sizeof(shown));
			printf(" workload %s auto tcp=%u udp=%u", shown, a.tcp, a.udp);
		}
		putchar('\n');
	}
	for (int k = 0; k < 2; k++) {
		printf("\nshared %s table: ", proto_key[k]);
		if (!w->sh[k].netns) {
			printf("no netns uses it\n");
			continue;
		}
		printf("%ld buckets, %ld sockets from %zu netns, average chain %.3f\n", w->sh[k].buckets,
		       w->sh[k].sockets, w->sh[k].netns, w->sh[k].chain);
		for (size_t i = 0; i < w->sh[k].ntop; i++) {
			char name[4096];
			printable(v[w->sh[k].top[i]].name, name, sizeof(name));
			printf("  %10ld  %s\n", sockets_of(&v[w->sh[k].top[i]].sockets, k), name);
		}
	}
	size_t shared = 0;
	for (size_t i = 0; i < w->n; i++)
		shared += nsh_pod_netns_shared(&v[i], pod_of(w, i)) != NULL;
	if (shared) {
		printf("\npod netns on the shared tables: %zu (restart the pod to give it its own: docs/cni.md)\n",
		       shared);
		for (size_t i = 0; i < w->n; i++) {
			const char *why = nsh_pod_netns_shared(&v[i], pod_of(w, i));
			if (!why)
				continue;
			char name[4096];
			printable(v[i].name, name, sizeof(name));
			printf("  %-7s %s\n", why, name);
		}
	}
	if (w->adds[0] || w->adds[1] || w->adds[2])
		printf("\nCNI ADDs: %llu sized, %llu warned (shared tables), %llu refused\n",
		       (unsigned long long)w->adds[0], (unsigned long long)w->adds[1], (unsigned long long)w->adds[2]);
}

/* ------------------------------------------------------------- the defaults */

json_object *stats_defaults_json(const struct nsh_policy *policy)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "tcp", json_object_new_int64(policy->defaults.tcp));
	json_object_object_add(o, "udp", json_object_new_int64(policy->defaults.udp));
	json_object_object_add(o, "source", json_object_new_string(policy->source));
	return o;
}

void stats_defaults_text(const struct nsh_policy *policy, char *out, size_t len)
{
	if (!nsh_policy_has_defaults(policy))
		snprintf(out, len,
			 "defaults: none, a container that asks for no sizes shares the global tables (policy: %s)\n",
			 policy->source);
	else
		snprintf(out, len,
			 "defaults: tcp=%u udp=%u for every container that asks for no sizes (defaultTcp/defaultUdp of "
			 "%s)\n",
			 policy->defaults.tcp, policy->defaults.udp, policy->source);
}

/* ------------------------------------------------------------- show's part */

void stats_sockets_json(json_object *o, const struct nshash_sockets *s)
{
	json_object *tcp = NULL, *udp = NULL;
	if (!json_object_object_get_ex(o, "tcp", &tcp) || !json_object_object_get_ex(o, "udp", &udp))
		return;
	json_object_object_add(tcp, "sockets", json_object_new_int64(s->tcp));
	json_object_object_add(tcp, "time_wait", json_object_new_int64(s->tcp_tw));
	json_object_object_add(tcp, "listeners", json_object_new_int64(s->tcp_listen));
	json_object_object_add(udp, "sockets", json_object_new_int64(s->udp));
}

void stats_sockets_text(const struct nshash_sockets *s, const struct nshash_netns_info *info)
{
	long ent[2] = {info->tcp_entries, info->udp_entries};
	long socks[2] = {s->tcp, s->udp};
	for (int k = 0; k < 2; k++) {
		long buckets = ent[k] < 0 ? -ent[k] : ent[k];
		printf("  %s sockets: %ld", proto_key[k], socks[k]);
		if (k == 0)
			printf(" (%ld TIME_WAIT; listeners, not in this table: %ld)", s->tcp_tw, s->tcp_listen);
		if (buckets)
			printf(", %.3f per bucket%s", (double)socks[k] / (double)buckets,
			       ent[k] < 0 ? " of the shared table" : "");
		putchar('\n');
	}
}

/* ------------------------------------------------------------- command */

/* NETNS: NAME, PATH or pid:PID → a path nshash_stats_scan takes. */
static int resolve(const char *arg, char *out, size_t len)
{
	if (strncmp(arg, "pid:", 4) == 0) {
		char *end;
		errno = 0;
		long pid = strtol(arg + 4, &end, 10);
		if (errno || end == arg + 4 || *end || pid <= 0 || pid > 4194304 || arg[4] < '0' || arg[4] > '9') {
			return fail(-1, "stats: \"%s\": expected pid:PID with a process id", arg);
		}
		snprintf(out, len, "/proc/%ld/ns/net", pid);
		return 0;
	}
	struct nshash_error err = {0};
	if (nshash_pin_resolve(arg, out, len, &err) < 0)
		return fail(-1, "stats: %s", err.msg);
	return 0;
}

/* Scan and gather what the output shows.  0, or an exit status. */
static int view_load(const char *state_dir, const char *const *only, size_t nonly, struct view *w)
{
	struct nshash_error err = {0};
	memset(w, 0, sizeof(*w));
	if (nsh_policy_load(getenv("NSHASH_POLICY"), &w->policy, &err) < 0) {
		fail(0, "stats: %s (recommendations ignore the policy's caps)", err.msg);
		nsh_policy_defaults(&w->policy);
		w->policy.max = (struct nshash_sizes){NSHASH_TCP_MAX, NSHASH_UDP_MAX};
	}
	struct nshash_stats_opts opts = {.state_dir = state_dir, .only = only, .nonly = nonly};
	if (nshash_stats_scan(&opts, &w->v, &w->n, &err) < 0)
		return fail_err(err.errnum == ENOENT || err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	for (int k = 0; k < 2; k++)
		nshash_stats_shared(w->v, w->n, k, &w->sh[k]);
	/* the plugin's records: what they cannot say is only less shown */
	if (nsh_pod_records_read(state_dir, &w->pods, &w->npods, &err) < 0)
		fail(0, "stats: %s (pods unnamed)", err.msg);
	if (nsh_cni_adds_read(state_dir, w->adds, &err) < 0)
		fail(0, "stats: %s (ADDs not counted)", err.msg);
	char warn[4500];
	w->now = (int64_t)time(NULL);
	if (nsh_history_load(state_dir, &w->hist, warn, sizeof(warn), &err) < 0)
		fail(0, "stats: %s (auto sizes not shown)", err.msg);
	else if (warn[0])
		fail(0, "stats: warning: %s", warn);
	w->keys = w->n ? calloc(w->n, sizeof(*w->keys)) : NULL;
	for (size_t i = 0; w->keys && i < w->n; i++)
		if (nsh_workload_read(state_dir, w->v[i].dev, w->v[i].inode, w->keys[i], sizeof(w->keys[i])) < 0 ||
		    nsh_workload_of(state_dir, &w->v[i], w->keys[i], sizeof(w->keys[i]), false, &err) != 1)
			w->keys[i][0] = '\0'; /* none, or stale: another netns's */
	return EXIT_OK;
}

static void view_free(struct view *w)
{
	free(w->v);
	free(w->pods);
	free(w->keys);
	nsh_history_free(&w->hist);
}

int stats_prometheus(FILE *f, const char *state_dir, bool commands)
{
	struct view w;
	int rc = view_load(state_dir, NULL, 0, &w);
	if (rc == EXIT_OK)
		prom_all(f, &w, commands);
	view_free(&w);
	return rc;
}

int stats_command(const char *state_dir, enum stats_format format, int argc, char **argv)
{
	char(*paths)[4096] = argc ? calloc((size_t)argc, sizeof(*paths)) : NULL;
	const char **only = argc ? calloc((size_t)argc, sizeof(*only)) : NULL;
	int rc = EXIT_OK;
	struct view w = {0};
	if (argc && (!paths || !only)) {
		rc = fail(EXIT_FAIL, "out of memory");
		goto out;
	}
	for (int i = 0; i < argc; i++) {
		if (resolve(argv[i], paths[i], sizeof(paths[i])) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		only[i] = paths[i];
	}
	rc = view_load(state_dir, argc ? only : NULL, (size_t)argc, &w);
	if (rc != EXIT_OK)
		goto out;
	if (format == STATS_JSON) {
		json_object *o = json_object_new_object(), *a = json_object_new_array(), *s = json_object_new_object();
		for (size_t i = 0; i < w.n; i++)
			json_object_array_add(a, netns_json(&w, i));
		for (int k = 0; k < 2; k++)
			json_object_object_add(s, proto_key[k], shared_json(w.v, &w.sh[k], k));
		json_object_object_add(o, "netns", a);
		json_object_object_add(o, "shared", s);
		json_object_object_add(o, "policy", json_object_new_string(w.policy.source));
		json_object_object_add(o, "defaults", stats_defaults_json(&w.policy));
		json_object *adds = json_object_new_object();
		json_object_object_add(adds, "sized", json_object_new_int64((int64_t)w.adds[0]));
		json_object_object_add(adds, "warned", json_object_new_int64((int64_t)w.adds[1]));
		json_object_object_add(adds, "refused", json_object_new_int64((int64_t)w.adds[2]));
		json_object_object_add(o, "cni_adds", adds);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (format == STATS_PROMETHEUS) {
		prom_all(stdout, &w, true);
	} else {
		char line[1400];
		print_text(&w);
		stats_defaults_text(&w.policy, line, sizeof(line));
		printf("\n%s", line);
	}
out:
	view_free(&w);
	free(paths);
	free(only);
	return rc;
}

static const char stats_usage[] = "Usage: nshash stats [-j|--json] [--prometheus] [NAME|PATH|pid:PID...]\n"
				  "\n"
				  "Every network namespace of the host (pins under /run/netns and the state dir, then\n"
				  "each distinct netns of a running process), or only those named: its TCP and UDP\n"
				  "tables (own, shared or global), the sockets in them, the load (sockets per bucket)\n"
				  "and a recommended size; then the shared tables' totals and top contributors.\n"
				  "  --prometheus   the Prometheus text format (node_exporter's textfile collector)\n";

static int cmd_stats(struct cli *c, int argc, char **argv)
{
	if (c->json && c->prometheus)
		return fail(EXIT_USAGE, "stats: give --json or --prometheus, not both");
	return stats_command(c->state_dir,
			     c->prometheus ? STATS_PROMETHEUS
			     : c->json	   ? STATS_JSON
					   : STATS_TEXT,
			     argc, argv);
}

const struct command stats_cmd = {"stats", cmd_stats, BIT(OPT_JSON) | BIT(OPT_PROMETHEUS), stats_usage};
