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
#include "view.h"
#include "auto.h"

enum stats_format { STATS_TEXT = 0, STATS_JSON, STATS_PROMETHEUS };

/* Names come from /run/netns and /proc: anything but '/' and NUL. */
static void printable(const char *in, char *out, size_t len)
{
	size_t j = 0;
	for (; *in && j + 1 < len; in++)
		out[j++] = (unsigned char)*in < 0x20 || (unsigned char)*in == 0x7f ? '?' : *in;
	out[j] = '\0';
}

/* ------------------------------------------------------------- json */

static json_object *netns_json(const struct cli_view *w, size_t i)
{
	const struct nshash_stats_netns *e = &w->v[i];
	const struct nshash_sizes *cap = &w->policy.max;
	const struct nsh_cni_pod *pod = cli_view_pod(w, i);
	const char *shared = nsh_pod_netns_shared(e, pod);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(e->name));
	json_object_object_add(o, "kind", json_object_new_string(cli_kind_name(e)));
	json_object_object_add(o, "pinned", json_object_new_boolean(e->pinned));
	json_object_object_add(o, "host", json_object_new_boolean(e->host));
	json_object_object_add(o, "pid", e->pid ? json_object_new_int(e->pid) : NULL);
	json_object_object_add(o, "command", e->pid ? json_object_new_string(e->command) : NULL);
	json_object_object_add(o, "container", e->container[0] ? json_object_new_string(e->container) : NULL);
	json_object_object_add(o, "engine", e->engine[0] ? json_object_new_string(e->engine) : NULL);
	json_object_object_add(o, "inode", json_object_new_int64((int64_t)e->inode));
	for (int k = 0; k < 2; k++) {
		json_object *p = json_object_new_object();
		long entries = cli_entries(&e->info, k);
		json_object_object_add(p, "entries", json_object_new_int64(entries));
		json_object_object_add(p, "own", json_object_new_boolean(entries > 0 && !e->host));
		json_object_object_add(p, "global", json_object_new_boolean(nshash_stats_global(e, k)));
		json_object_object_add(p, "sockets", json_object_new_int64(cli_sockets(&e->sockets, k)));
		json_object_object_add(p, "load", json_object_new_double(cli_load(e, k)));
		json_object_object_add(p, "recommended", json_object_new_int64(cli_recommend(e, k, cap)));
		json_object_object_add(o, cli_proto_key[k], p);
	}
	cli_sockets_json(o, &e->sockets);
	json_object_object_add(o, "namespace",
			       pod && pod->namespace_[0] ? json_object_new_string(pod->namespace_) : NULL);
	json_object_object_add(o, "pod", pod && pod->pod[0] ? json_object_new_string(pod->pod) : NULL);
	json_object_object_add(o, "cni_outcome",
			       pod ? json_object_new_string(nsh_cni_outcome_name(pod->outcome)) : NULL);
	json_object_object_add(o, "pod_shared", shared ? json_object_new_string(shared) : NULL);
	struct nshash_sizes a;
	if (cli_view_auto(w, i, &a)) {
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
		json_object_object_add(t, "sockets", json_object_new_int64(cli_sockets(&v[sh->top[i]].sockets, k)));
		json_object_array_add(top, t);
	}
	json_object_object_add(o, "top", top);
	return o;
}

/* ------------------------------------------------------------- text */

static void table_cell(const struct nshash_stats_netns *e, int k, char *buf, size_t len)
{
	cli_entries_cell(cli_entries(&e->info, k), e->host ? "global " : "own ", buf, len);
}

static void print_text(const struct cli_view *w)
{
	const struct nshash_stats_netns *v = w->v;
	printf("%-14s %8s %8s %6s  %-14s %8s %8s %6s  %s\n", "TCP", "SOCKETS", "LOAD", "REC", "UDP", "SOCKETS", "LOAD",
	       "REC", "NETNS");
	for (size_t i = 0; i < w->n; i++) {
		const struct nshash_stats_netns *e = &v[i];
		for (int k = 0; k < 2; k++) {
			char cell[32];
			table_cell(e, k, cell, sizeof(cell));
			printf("%-14s %8ld %8.3f %6u  ", cell, cli_sockets(&e->sockets, k), cli_load(e, k),
			       cli_recommend(e, k, &w->policy.max));
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
		const struct nsh_cni_pod *p = cli_view_pod(w, i);
		if (p && (p->namespace_[0] || p->pod[0])) {
			char ns[NSH_POD_LABEL_MAX + 1], pod[NSH_POD_LABEL_MAX + 1];
			printable(p->namespace_, ns, sizeof(ns));
			printable(p->pod, pod, sizeof(pod));
			printf(" pod %s/%s", ns, pod);
		}
		struct nshash_sizes a;
		if (cli_view_auto(w, i, &a)) {
			char shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
			nsh_workload_show(w->keys[i], shown, sizeof(shown));
			printf(" workload %s auto tcp=%u udp=%u", shown, a.tcp, a.udp);
		}
		putchar('\n');
	}
	for (int k = 0; k < 2; k++) {
		printf("\nshared %s table: ", cli_proto_key[k]);
		if (!w->sh[k].netns) {
			printf("no netns uses it\n");
			continue;
		}
		printf("%ld buckets, %ld sockets from %zu netns, average chain %.3f\n", w->sh[k].buckets,
		       w->sh[k].sockets, w->sh[k].netns, w->sh[k].chain);
		for (size_t i = 0; i < w->sh[k].ntop; i++) {
			char name[4096];
			printable(v[w->sh[k].top[i]].name, name, sizeof(name));
			printf("  %10ld  %s\n", cli_sockets(&v[w->sh[k].top[i]].sockets, k), name);
		}
	}
	size_t shared = 0;
	for (size_t i = 0; i < w->n; i++)
		shared += nsh_pod_netns_shared(&v[i], cli_view_pod(w, i)) != NULL;
	if (shared) {
		printf("\npod netns on the shared tables: %zu (restart the pod to give it its own: docs/cni.md)\n",
		       shared);
		for (size_t i = 0; i < w->n; i++) {
			const char *why = nsh_pod_netns_shared(&v[i], cli_view_pod(w, i));
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

/* ------------------------------------------------------------- command */

/* NETNS: NAME, PATH or pid:PID → a path nshash_stats_scan takes. */
static int resolve(const char *arg, char *out, size_t len)
{
	if (strncmp(arg, "pid:", 4) == 0) {
		char *end;
		errno = 0;
		long pid = strtol(arg + 4, &end, 10);
		if (errno || end == arg + 4 || *end || pid <= 0 || pid > 4194304 || arg[4] < '0' || arg[4] > '9') {
			return cli_fail(-1, "stats: \"%s\": expected pid:PID with a process id", arg);
		}
		snprintf(out, len, "/proc/%ld/ns/net", pid);
		return 0;
	}
	struct nshash_error err = {0};
	if (nshash_pin_resolve(arg, out, len, &err) < 0)
		return cli_fail(-1, "stats: %s", err.msg);
	return 0;
}

static int stats_command(const char *state_dir, enum stats_format format, int argc, char **argv)
{
	char(*paths)[4096] = argc ? calloc((size_t)argc, sizeof(*paths)) : NULL;
	const char **only = argc ? calloc((size_t)argc, sizeof(*only)) : NULL;
	int rc = EXIT_OK;
	struct cli_view w = {0};
	if (argc && (!paths || !only)) {
		rc = cli_fail(EXIT_FAIL, "out of memory");
		goto out;
	}
	for (int i = 0; i < argc; i++) {
		if (resolve(argv[i], paths[i], sizeof(paths[i])) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		only[i] = paths[i];
	}
	rc = cli_view_load(state_dir, argc ? only : NULL, (size_t)argc, &w);
	if (rc != EXIT_OK)
		goto out;
	if (format == STATS_JSON) {
		json_object *o = json_object_new_object(), *a = json_object_new_array(), *s = json_object_new_object();
		for (size_t i = 0; i < w.n; i++)
			json_object_array_add(a, netns_json(&w, i));
		for (int k = 0; k < 2; k++)
			json_object_object_add(s, cli_proto_key[k], shared_json(w.v, &w.sh[k], k));
		json_object_object_add(o, "netns", a);
		json_object_object_add(o, "shared", s);
		json_object_object_add(o, "policy", json_object_new_string(w.policy.source));
		json_object_object_add(o, "defaults", cli_defaults_json(&w.policy));
		json_object *adds = json_object_new_object();
		json_object_object_add(adds, "sized", json_object_new_int64((int64_t)w.adds[0]));
		json_object_object_add(adds, "warned", json_object_new_int64((int64_t)w.adds[1]));
		json_object_object_add(adds, "refused", json_object_new_int64((int64_t)w.adds[2]));
		json_object_object_add(o, "cni_adds", adds);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (format == STATS_PROMETHEUS) {
		cli_metrics_view(stdout, &w, true);
	} else {
		char line[1400];
		print_text(&w);
		cli_defaults_text(&w.policy, line, sizeof(line));
		printf("\n%s", line);
	}
out:
	cli_view_free(&w);
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
		return cli_fail(EXIT_USAGE, "stats: give --json or --prometheus, not both");
	return stats_command(c->state_dir,
			     c->prometheus ? STATS_PROMETHEUS
			     : c->json	   ? STATS_JSON
					   : STATS_TEXT,
			     argc, argv);
}

const struct command cli_cmd_stats = {"stats", cmd_stats, BIT(OPT_JSON) | BIT(OPT_PROMETHEUS), stats_usage};
