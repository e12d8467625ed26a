/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash list, gc, reclaim: the state dir's netns, its cleanup, the
 * rate-limited reclaim of orphan container pins; the table memory line. */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "auto.h"
#include "cnistate.h"
#include "common.h"

static const char list_usage[] =
    "Usage: nshash list [--max-table-bytes BYTES] [-j]\n"
    "\n"
    "Every pin under /run/netns and the state dir (templates, container pins, spares), with sizes;\n"
    "a template shows what its children get (child:N), unmounted pin files are marked stale.\n";

static const char gc_usage[] = "Usage: nshash gc [--max-idle SECONDS] [--stale-age SECONDS] [--dry-run] [-j]\n"
			       "\n"
			       "Remove damaged templates, templates unused and spares made --max-idle seconds ago\n"
			       "(default 3600; the last spare gone, spares/ is unmounted too), pin files a crashed creator left unmounted (never one that is a\n"
			       "mount point in another mount namespace) and container pins no process uses (both\n"
			       "claimed longer than --stale-age seconds ago: default 60, and never less than 60).\n"
			       "Prints each path removed and why;\n"
			       "--dry-run prints what would go and removes nothing.  `kept` counts what nshash\n"
			       "owns (templates, container pins, spares) and left in place.\n";

static const char reclaim_usage[] =
    "Usage: nshash reclaim [--stale-age SECONDS] [--interval SECONDS] [--dry-run] [-j]\n"
    "\n"
    "What every hook, wrapper and plugin run does, rate-limited: remove container pins no\n"
    "thread or open fd holds (claimed longer than --stale-age seconds ago: default 60,\n"
    "and never less than 60) and drop table-ledger records of netns that are gone.\n"
    "With --interval, only if no run started within that\n"
    "many seconds (default 0: now).\n";

static void print_usage_text(const struct nshash_table_usage *u, uint64_t max)
{
	char mem[32], of[96] = "";
	cli_human_bytes(u->bytes, mem, sizeof(mem));
	if (max)
		snprintf(of, sizeof(of), " of maxTableBytes %llu", (unsigned long long)max);
	printf("table memory: %llu bytes (%s)%s in %zu netns sized by nshash", (unsigned long long)u->bytes, mem, of,
	       u->netns);
	if (u->pending)
		printf(", %zu being created", u->pending);
	if (u->unverified)
		printf(", %zu not proven alive (their pin is gone and no nsfs file handle tells here: an older "
		       "kernel, or a PID namespace of its own; counted until reclaim or gc scans /proc)",
		       u->unverified);
	putchar('\n');
}

static void usage_json(json_object *o, const struct nshash_table_usage *u, uint64_t max)
{
	json_object *j = json_object_new_object();
	json_object_object_add(j, "bytes", json_object_new_int64((int64_t)u->bytes));
	json_object_object_add(j, "netns", json_object_new_int64((int64_t)u->netns));
	json_object_object_add(j, "pending", json_object_new_int64((int64_t)u->pending));
	json_object_object_add(j, "unverified", json_object_new_int64((int64_t)u->unverified));
	if (max)
		json_object_object_add(j, "max_table_bytes", json_object_new_int64((int64_t)max));
	json_object_object_add(o, "table_memory", j);
}

static const char *kind_name(enum nshash_entry_kind k)
{
	return k == NSHASH_ENTRY_TEMPLATE    ? "template"
	       : k == NSHASH_ENTRY_CONTAINER ? "container"
	       : k == NSHASH_ENTRY_SPARE     ? "spare"
					     : "netns";
}

static void size_cell(const struct nshash_entry *e, bool udp, char *buf, size_t len)
{
	long entries = udp ? e->info.udp_entries : e->info.tcp_entries;
	bool pinned = e->pinned;
	if (pinned && e->kind == NSHASH_ENTRY_TEMPLATE) /* what it gives its children */
		snprintf(buf, len, "child:%ld", udp ? e->info.udp_child : e->info.tcp_child);
	else if (!pinned)
		snprintf(buf, len, "-");
	else
		cli_entries_cell(entries, "", buf, len);
}

/* list shows what the caller may read; say what it could not. */
static void note_unreadable(const char *state_dir)
{
	char dirs[4][4200];
	const char *sd = state_dir;
	snprintf(dirs[0], sizeof(dirs[0]), "%s", NSHASH_NETNS_RUN_DIR);
	snprintf(dirs[1], sizeof(dirs[1]), "%s/templates", sd);
	snprintf(dirs[2], sizeof(dirs[2]), "%s/pins", sd);
	snprintf(dirs[3], sizeof(dirs[3]), "%s/spares", sd);
	for (int i = 0; i < 4; i++) {
		DIR *d = opendir(dirs[i]);
		if (d)
			closedir(d);
		else if (errno == EACCES || errno == EPERM)
			cli_fail(0, "%s: %s: not listed (run as root, or --state-dir for a state dir of your own)", dirs[i],
			     strerror(errno));
	}
}

static int cmd_list(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return cli_fail(EXIT_USAGE, "list: takes no arguments");
	struct nshash_error err = {0};
	struct nshash_entry *v = NULL;
	size_t n = 0;
	if (nshash_list(c->state_dir, &v, &n, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < n; i++) {
			json_object *o =
			    v[i].pinned && !v[i].unknown ? cli_info_json(&v[i].info) : json_object_new_object();
			json_object_object_add(o, "path", json_object_new_string(v[i].path));
			json_object_object_add(o, "name", json_object_new_string(v[i].name));
			json_object_object_add(o, "kind", json_object_new_string(kind_name(v[i].kind)));
			json_object_object_add(o, "pinned", json_object_new_boolean(v[i].pinned));
			if (v[i].unknown)
				json_object_object_add(o, "inspect_error",
						       json_object_new_string(strerror(v[i].unknown)));
			if (v[i].kind == NSHASH_ENTRY_TEMPLATE) {
				json_object_object_add(o, "damaged", json_object_new_boolean(v[i].damaged));
				json_object_object_add(o, "last_used", json_object_new_int64(v[i].last_used));
			}
			if (v[i].kind == NSHASH_ENTRY_SPARE)
				json_object_object_add(o, "made", json_object_new_int64(v[i].last_used));
			json_object_array_add(a, o);
		}
		cli_print_json(a);
	} else {
		/* Wide enough for the largest cell, "child:16777216". */
		printf("%-10s %-14s %-14s %s\n", "KIND", "TCP", "UDP", "PATH");
		for (size_t i = 0; i < n; i++) {
			char t[24], u[24];
			size_cell(&v[i], false, t, sizeof(t));
			size_cell(&v[i], true, u, sizeof(u));
			if (v[i].unknown)
				printf("%-10s %-14s %-14s %s (cannot inspect: %s)\n", kind_name(v[i].kind), "?", "?",
				       v[i].path, strerror(v[i].unknown));
			else
				printf("%-10s %-14s %-14s %s%s%s\n", kind_name(v[i].kind), t, u, v[i].path,
				       v[i].pinned ? "" : " (not mounted: stale)",
				       v[i].damaged && v[i].pinned ? " (damaged)" : "");
		}
		struct nshash_table_usage usage;
		/* Without the right to the state dir (not root), no footer. */
		if (nshash_table_usage(c->state_dir, false, &usage, &err) == 0)
			print_usage_text(&usage, c->create.max_table_bytes);
		else if (err.errnum != EACCES && err.errnum != EPERM) {
			free(v);
			return cli_fail_err(EXIT_FAIL, &err);
		}
	}
	nshash_list_free(v, n);
	note_unreadable(c->state_dir);
	return EXIT_OK;
}

struct gc_seen {
	bool json, dry_run;
	json_object *paths;
};

static void gc_removed(const char *path, const char *why, void *ctx)
{
	struct gc_seen *g = ctx;
	if (g->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "why", json_object_new_string(why));
		json_object_array_add(g->paths, o);
	} else {
		printf("%s %s (%s)\n", g->dry_run ? "would remove" : "removed", path, why);
	}
}

/* A --stale-age under the library's floor is raised to it: say so. */
void cli_stale_age_note(const struct cli *c)
{
	if (c->stale_age < NSHASH_STALE_AGE_MIN)
		fprintf(stderr,
			"nshash: --stale-age %lld is below the floor of %d s: pins claimed less than %d s ago are "
			"kept (a runtime may be about to open them)\n",
			(long long)c->stale_age, NSHASH_STALE_AGE_MIN, NSHASH_STALE_AGE_MIN);
}

static int cmd_gc(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return cli_fail(EXIT_USAGE, "gc: takes no arguments");
	cli_stale_age_note(c);
	struct gc_seen seen = {.json = c->json, .dry_run = c->dry_run, .paths = json_object_new_array()};
	struct nshash_gc_opts o = {.state_dir = c->state_dir,
				   .template_max_idle = c->max_idle,
				   .stale_min_age = c->stale_age,
				   .dry_run = c->dry_run,
				   .removed = gc_removed,
				   .ctx = &seen};
	struct nshash_gc_report rep;
	struct nshash_error err = {0};
	if (nshash_gc(&o, &rep, &err) < 0) {
		json_object_put(seen.paths);
		return cli_fail_priv(EXIT_FAIL, &err);
	}
	bool sees = nshash_state_sees_holders(c->state_dir);
	if (!sees && !c->json)
		fprintf(stderr,
			"nshash: gc: from this PID namespace not every process is in sight (STATE/pidns names "
			"the one the state dir's creations ran in: another, several, or none yet): no pin was "
			"judged unused, no stale pin file removed, no ledger record dropped by a scan; run gc in "
			"the initial PID namespace (hostPID) or in the one the creations ran in\n");
	/* the CNI plugin's records of pods whose netns is gone (DEL missed) */
	size_t pods = 0;
	if (!c->dry_run && nsh_cni_pods_prune(c->state_dir, &pods, &err) < 0)
		cli_fail(0, "gc: %s", err.msg);
	/* `auto`'s marks of netns gone (no `nshash record` timer): a netns
	 * scan, only when there are marks (an unprivileged caller's state dir
	 * has none, and a node without `auto` pays nothing) */
	size_t marks = 0;
	if (!c->dry_run && nsh_workload_marks_any(c->state_dir)) {
		struct nshash_stats_netns *v = NULL;
		size_t n = 0;
		struct nshash_stats_opts so = {.state_dir = c->state_dir};
		struct timespec began;
		clock_gettime(CLOCK_REALTIME, &began);
		if (nshash_stats_scan(&so, &v, &n, &err) < 0)
			cli_fail(0, "gc: workload marks kept: %s", err.msg);
		else
			marks = nsh_workload_reap(c->state_dir, v, n, began);
		free(v);
	}
	if (c->json) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "templates_removed", json_object_new_int64((int64_t)rep.templates_removed));
		json_object_object_add(j, "spares_removed", json_object_new_int64((int64_t)rep.spares_removed));
		json_object_object_add(j, "stale_removed", json_object_new_int64((int64_t)rep.stale_removed));
		json_object_object_add(j, "orphans_removed", json_object_new_int64((int64_t)rep.orphans_removed));
		json_object_object_add(j, "kept", json_object_new_int64((int64_t)rep.kept));
		json_object_object_add(j, "ledger_dropped", json_object_new_int64((int64_t)rep.ledger_dropped));
		json_object_object_add(j, "pod_records_removed", json_object_new_int64((int64_t)pods));
		json_object_object_add(j, "workload_marks_removed", json_object_new_int64((int64_t)marks));
		json_object_object_add(j, "dry_run", json_object_new_boolean(c->dry_run));
		json_object_object_add(j, "sees_holders", json_object_new_boolean(sees));
		json_object_object_add(j, "paths", seen.paths);
		usage_json(j, &rep.usage, c->create.max_table_bytes);
		cli_print_json(j);
	} else {
		json_object_put(seen.paths);
		printf(
		    "%s%zu template(s), %zu spare(s), %zu stale pin file(s), %zu orphaned container pin(s), %zu pod "
		    "record(s); kept %zu of nshash's\n",
		    c->dry_run ? "would remove " : "removed ", rep.templates_removed, rep.spares_removed,
		    rep.stale_removed, rep.orphans_removed, pods, rep.kept);
		if (marks)
			printf("removed %zu workload mark(s) of network namespaces gone\n", marks);
		print_usage_text(&rep.usage, c->create.max_table_bytes);
	}
	return EXIT_OK;
}

static int cmd_reclaim(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return cli_fail(EXIT_USAGE, "reclaim: takes no arguments");
	cli_stale_age_note(c);
	struct nshash_reclaim_opts o = {
	    .state_dir = c->state_dir, .min_age = c->stale_age, .interval = c->interval, .dry_run = c->dry_run};
	struct nshash_reclaim_report rep;
	struct nshash_error err = {0};
	if (nshash_reclaim(&o, &rep, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "ran", json_object_new_boolean(rep.ran));
		json_object_object_add(j, "pins_seen", json_object_new_int64((int64_t)rep.pins_seen));
		json_object_object_add(j, "orphans_removed", json_object_new_int64((int64_t)rep.orphans_removed));
		json_object_object_add(j, "ledger_dropped", json_object_new_int64((int64_t)rep.ledger_dropped));
		json_object_object_add(j, "incomplete", json_object_new_boolean(rep.incomplete));
		json_object_object_add(j, "dry_run", json_object_new_boolean(c->dry_run));
		if (rep.ran)
			usage_json(j, &rep.usage, c->create.max_table_bytes);
		cli_print_json(j);
	} else if (!rep.ran) {
		printf("skipped: another reclaim ran less than %lld seconds ago or is running\n",
		       (long long)c->interval);
	} else {
		printf("%s%zu orphaned container pin(s) of %zu; dropped %zu ledger record(s)\n",
		       c->dry_run ? "would remove " : "removed ", rep.orphans_removed, rep.pins_seen,
		       rep.ledger_dropped);
		print_usage_text(&rep.usage, c->create.max_table_bytes);
	}
	return EXIT_OK;
}

const struct command cli_cmd_list = {"list", cmd_list, BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES), list_usage};
const struct command cli_cmd_gc = {
    "gc", cmd_gc, BIT(OPT_MAX_IDLE) | BIT(OPT_STALE_AGE) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES),
    gc_usage};
const struct command cli_cmd_reclaim = {"reclaim", cmd_reclaim,
				    BIT(OPT_STALE_AGE) | BIT(OPT_INTERVAL) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON) |
					BIT(OPT_MAX_TABLE_BYTES),
				    reclaim_usage};
