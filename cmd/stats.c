/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash stats: every network namespace of the host, its tables, its
 * sockets, its load and a recommended size; then the shared tables'
 * totals.  Text, JSON or the Prometheus text exposition format. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "stats.h"

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

/* ------------------------------------------------------------- json */

static json_object *netns_json(const struct nshash_stats_netns *e, const struct nshash_sizes *cap)
{
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

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void prom_head(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_netns(const struct nshash_stats_netns *v, size_t n, const struct nshash_sizes *cap)
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
	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		prom_head(metrics[m].name, "gauge", metrics[m].help);
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2; k++) {
				printf("%s{netns=\"", metrics[m].name);
				label(stdout, v[i].name);
				printf("\",proto=\"%s\"} ", proto_key[k]);
				if (m == 0)
					printf("%ld\n", entries_of(&v[i].info, k));
				else if (m == 1)
					printf("%ld\n", sockets_of(&v[i].sockets, k));
				else if (m == 2)
					printf("%.6g\n", load_of(&v[i], k));
				else
					printf("%u\n", recommend(&v[i], k, cap));
			}
	}
	/* TCP only: no proto label. */
	static const char *const tcp_only[2][2] = {
	    {"nshash_tcp_time_wait_sockets", "TIME_WAIT sockets of the netns (part of its tcp nshash_sockets)."},
	    {"nshash_tcp_listeners", "Listening TCP sockets of the netns (in the global listening hash; -1 unknown)."},
	};
	for (int m = 0; m < 2; m++) {
		prom_head(tcp_only[m][0], "gauge", tcp_only[m][1]);
		for (size_t i = 0; i < n; i++) {
			printf("%s{netns=\"", tcp_only[m][0]);
			label(stdout, v[i].name);
			printf("\"} %ld\n", m ? v[i].sockets.tcp_listen : v[i].sockets.tcp_tw);
		}
	}
	prom_head("nshash_netns_info", "gauge",
		  "Who is in the netns: a process, its command and container id (1 per netns).");
	for (size_t i = 0; i < n; i++) {
		printf("nshash_netns_info{netns=\"");
		label(stdout, v[i].name);
		printf("\",kind=\"%s\",pid=\"", kind_name(&v[i]));
		if (v[i].pid)
			printf("%d", (int)v[i].pid);
		printf("\",command=\"");
		label(stdout, v[i].command);
		printf("\",container=\"%s\",engine=\"%s\"} 1\n", v[i].container, v[i].engine);
	}
}

static void prom_shared(const struct nshash_stats_shared sh[2])
{
	static const char *const help[4][2] = {
	    {"nshash_shared_buckets", "Buckets of the global (shared) table."},
	    {"nshash_shared_netns", "Network namespaces using the global table, the host's included."},
	    {"nshash_shared_sockets", "Sockets in the global table, summed over those netns."},
	    {"nshash_shared_chain_length", "Average chain length of the global table: sockets / buckets."},
	};
	for (int m = 0; m < 4; m++) {
		prom_head(help[m][0], "gauge", help[m][1]);
		for (int k = 0; k < 2; k++) {
			printf("%s{proto=\"%s\"} ", help[m][0], proto_key[k]);
			if (m == 0)
				printf("%ld\n", sh[k].buckets);
			else if (m == 1)
				printf("%zu\n", sh[k].netns);
			else if (m == 2)
				printf("%ld\n", sh[k].sockets);
			else
				printf("%.6g\n", sh[k].chain);
		}
	}
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

static void print_text(const struct nshash_stats_netns *v, size_t n, const struct nshash_stats_shared sh[2],
		       const struct nshash_sizes *cap)
{
	printf("%-14s %8s %8s %6s  %-14s %8s %8s %6s  %s\n", "TCP", "SOCKETS", "LOAD", "REC", "UDP", "SOCKETS", "LOAD",
	       "REC", "NETNS");
	for (size_t i = 0; i < n; i++) {
		const struct nshash_stats_netns *e = &v[i];
		for (int k = 0; k < 2; k++) {
			char cell[32];
			table_cell(e, k, cell, sizeof(cell));
			printf("%-14s %8ld %8.3f %6u  ", cell, sockets_of(&e->sockets, k), load_of(e, k),
			       recommend(e, k, cap));
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
		putchar('\n');
	}
	for (int k = 0; k < 2; k++) {
		printf("\nshared %s table: ", proto_key[k]);
		if (!sh[k].netns) {
			printf("no netns uses it\n");
			continue;
		}
		printf("%ld buckets, %ld sockets from %zu netns, average chain %.3f\n", sh[k].buckets, sh[k].sockets,
		       sh[k].netns, sh[k].chain);
		for (size_t i = 0; i < sh[k].ntop; i++) {
			char name[4096];
			printable(v[sh[k].top[i]].name, name, sizeof(name));
			printf("  %10ld  %s\n", sockets_of(&v[sh[k].top[i]].sockets, k), name);
		}
	}
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

int stats_command(const char *state_dir, enum stats_format format, int argc, char **argv)
{
	char(*paths)[4096] = argc ? calloc((size_t)argc, sizeof(*paths)) : NULL;
	const char **only = argc ? calloc((size_t)argc, sizeof(*only)) : NULL;
	int rc = EXIT_OK;
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
	struct nshash_error err = {0};
	struct nsh_policy policy;
	if (nsh_policy_load(getenv("NSHASH_POLICY"), &policy, &err) < 0) {
		fail(0, "stats: %s (recommendations ignore the policy's caps)", err.msg);
		nsh_policy_defaults(&policy);
		policy.max = (struct nshash_sizes){NSHASH_TCP_MAX, NSHASH_UDP_MAX};
	}
	struct nshash_stats_opts opts = {.state_dir = state_dir, .only = argc ? only : NULL, .nonly = (size_t)argc};
	struct nshash_stats_netns *v = NULL;
	size_t n = 0;
	if (nshash_stats_scan(&opts, &v, &n, &err) < 0) {
		rc = fail_err(err.errnum == ENOENT || err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
		goto out;
	}
	struct nshash_stats_shared sh[2];
	for (int k = 0; k < 2; k++)
		nshash_stats_shared(v, n, k, &sh[k]);
	if (format == STATS_JSON) {
		json_object *o = json_object_new_object(), *a = json_object_new_array(), *s = json_object_new_object();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, netns_json(&v[i], &policy.max));
		for (int k = 0; k < 2; k++)
			json_object_object_add(s, proto_key[k], shared_json(v, &sh[k], k));
		json_object_object_add(o, "netns", a);
		json_object_object_add(o, "shared", s);
		json_object_object_add(o, "policy", json_object_new_string(policy.source));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (format == STATS_PROMETHEUS) {
		prom_netns(v, n, &policy.max);
		prom_shared(sh);
	} else {
		print_text(v, n, sh, &policy.max);
	}
	free(v);
out:
	free(paths);
	free(only);
	return rc;
}
