/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash: create, inspect and clean up network namespaces with their own
 * TCP/UDP hash tables.  A thin shell over libnshash: argv, output, exit
 * codes. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "stats.h"
#include "auto.h"

static const char *prog = "nshash";

static const char usage_text[] =
    "Usage: nshash [-j|--json] [--state-dir DIR] COMMAND [OPTIONS] [ARGS]\n"
    "       nshash help [COMMAND]    nshash COMMAND --help\n"
    "\n"
    "Give network namespaces their own TCP established-hash and UDP hash tables.\n"
    "\n"
    "Commands:\n"
    "  create [--tcp N] [--udp N] [--strategy template|nested] [--keep-lo-down]\n"
    "         [--max-table-bytes BYTES] NAME|PATH\n"
    "                 create a netns with its own tables, verify them, pin it at\n"
    "                 /run/netns/NAME (usable with `ip netns exec NAME`) or at PATH\n"
    "  resize [--tcp N] [--udp N] [--strategy S] [--dry-run] NAME|PATH\n"
    "                 replace a pinned netns someone already configured (an engine's)\n"
    "                 by a sized one with the same links, addresses, routes and\n"
    "                 sysctls; refuses, changing nothing, what it cannot carry over\n"
    "  show NAME|PATH | --pid PID\n"
    "                 the netns's table sizes (own, shared or the host's global ones)\n"
    "  list [--max-table-bytes BYTES]\n"
    "                 every pinned netns under /run/netns and the state dir, and the\n"
    "                 table memory of the netns nshash sized (of the budget, if given)\n"
    "  stats [-j|--json] [--prometheus] [NAME|PATH|pid:PID...]\n"
    "                 every netns (pins, then processes): tables, sockets, load,\n"
    "                 recommended size; the shared tables' totals\n"
    "  record [-j|--json]   sample sized netns into the `auto` history (nshash-record.timer)\n"
    "  history [-j|--json] [--prometheus]   workloads, peaks and the sizes `auto` gives\n"
    "  delete NAME|PATH...\n"
    "                 unmount and remove pins (succeeds if already gone)\n"
    "  gc [--max-idle SECONDS] [--stale-age SECONDS] [--dry-run]\n"
    "                 remove damaged or idle templates, pins a crash left and container\n"
    "                 pins no process uses; drop table-ledger records of netns that are gone\n"
    "  reclaim [--stale-age SECONDS] [--interval SECONDS] [--dry-run]\n"
    "                 what every hook and plugin run does: remove container pins no\n"
    "                 thread or open fd holds and drop ledger records of netns that are gone\n"
    "  serve [--listen ADDR:PORT] [--gc-every SECONDS] [--max-idle SECONDS]\n"
    "        [--textfile-dir DIR]\n"
    "                 the node's long-running side: gc on a schedule, and the metrics\n"
    "                 of `stats --prometheus` on GET /metrics (Kubernetes' node container)\n"
    "  check          can this host work, and can you? kernel, privileges, state dir\n"
    "  help [COMMAND] this text, or a command's\n"
    "\n"
    "Options:\n"
    "  -j, --json     machine-readable output on stdout (before or after the command)\n"
    "  --state-dir DIR  templates, lock and container pins (default " NSHASH_DEFAULT_STATE_DIR " for root,\n"
    "                 $XDG_RUNTIME_DIR/nshash otherwise, or $NSHASH_STATE_DIR)\n"
    "  -h, --help     this text, or after a command that command's;  --version  the version\n"
    "\n"
    "Exit status: 0 success, 1 failure (kernel, privileges, system, already exists),\n"
    "2 bad usage or input.  Man page: nshash(8).\n";

static const char create_usage[] =
    "Usage: nshash create [--tcp N] [--udp N] [--strategy template|nested] [--keep-lo-down] [-j] NAME|PATH\n"
    "\n"
    "Create a network namespace with its own tables, read the sizes back from it, bring lo\n"
    "up and pin it at /run/netns/NAME (`ip netns exec NAME` works) or at PATH.\n"
    "\n"
    "  --tcp N        TCP established-hash entries, 1..16777216 (next power of two)\n"
    "  --udp N        UDP hash entries, 1..65536 (next power of two, at least 128)\n"
    "                 0 or absent: that protocol stays on the shared table\n"
    "  --strategy S   template (default): a pinned private parent per size pair, in the\n"
    "                 state dir; nested: a throwaway parent, no state (works without root\n"
    "                 in `unshare -Urmn`, with PATH on a mount of your own)\n"
    "  --keep-lo-down leave the loopback interface down\n"
    "  --max-table-bytes BYTES  node-wide table memory budget (maxTableBytes): refuse\n"
    "                 a creation that would take the table bytes (TCP 8, UDP 64 per\n"
    "                 entry) of all live netns nshash sized past BYTES\n"
    "\n"
    "Exit status: 0 created, 1 failure (also: NAME already exists, as `ip netns add`),\n"
    "2 bad input.\n";

static const char resize_usage[] =
    "Usage: nshash resize [--tcp N] [--udp N] [--strategy template|nested] [--dry-run] [-j] NAME|PATH\n"
    "\n"
    "Replace a pinned netns someone already configured (an engine's) by a sized one with\n"
    "the same links, addresses, routes, neighbours and sysctls, bound at the same path.\n"
    "Refuses, changing nothing, what it cannot carry over (a process inside, firewall\n"
    "tables, links that cannot move, ...); undoes everything if a step fails midway.\n"
    "--dry-run only checks.\n";

static const char show_usage[] =
    "Usage: nshash show [-j] NAME|PATH\n"
    "       nshash show [-j] --pid PID\n"
    "\n"
    "The table sizes of a pinned netns or of a process's netns: own table (with its memory),\n"
    "the shared global table, or (the host's own netns) the global table itself; the\n"
    "limits the kernel derives; what children of the netns get.\n";

static const char list_usage[] =
    "Usage: nshash list [--max-table-bytes BYTES] [-j]\n"
    "\n"
    "Every pin under /run/netns and the state dir (templates, container pins, spares), with sizes;\n"
    "a template shows what its children get (child:N), unmounted pin files are marked stale.\n";

static const char delete_usage[] =
    "Usage: nshash delete NAME|PATH...\n"
    "\n"
    "Unmount and remove pins; succeeds when a pin is already gone.  Warns when a process\n"
    "still uses the netns: the netns then lives on until that process exits.\n";

static const char gc_usage[] = "Usage: nshash gc [--max-idle SECONDS] [--stale-age SECONDS] [--dry-run] [-j]\n"
			       "\n"
			       "Remove damaged templates, templates unused and spares made --max-idle seconds ago\n"
			       "(default 3600), pin files a crashed creator left unmounted (never one that is a\n"
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

static const char check_usage[] = "Usage: nshash check [-j]\n"
				  "\n"
				  "Whether this host supports per-netns tables (kernel 6.1 TCP, 6.2 UDP), whether you\n"
				  "have the privileges to use them (CAP_SYS_ADMIN, CAP_NET_ADMIN), and whether the\n"
				  "state dir is writable.  Exit 0 when nshash works for you here, 1 otherwise (the\n"
				  "reasons on stderr).\n";

static const char stats_usage[] = "Usage: nshash stats [-j|--json] [--prometheus] [NAME|PATH|pid:PID...]\n"
				  "\n"
				  "Every network namespace of the host (pins under /run/netns and the state dir, then\n"
				  "each distinct netns of a running process), or only those named: its TCP and UDP\n"
				  "tables (own, shared or global), the sockets in them, the load (sockets per bucket)\n"
				  "and a recommended size; then the shared tables' totals and top contributors.\n"
				  "  --prometheus   the Prometheus text format (node_exporter's textfile collector)\n";

static const char serve_usage[] =
    "Usage: nshash serve [--listen ADDR:PORT] [--gc-every SECONDS] [--max-idle SECONDS]\n"
    "                    [--stale-age SECONDS] [--textfile-dir DIR]\n"
    "\n"
    "Run until SIGTERM or SIGINT: every --gc-every seconds (default 900; 0: never) what\n"
    "`nshash gc --max-idle SECONDS --stale-age SECONDS` does (a failed run is logged, never\n"
    "fatal), plus removing the CNI plugin's pod records of netns that are gone; and answer\n"
    "HTTP on --listen (default " SERVE_DEFAULT_LISTEN "; [::]:PORT for IPv6):\n"
    "  GET /metrics   `nshash stats --prometheus` (pod and namespace labels, the plugin's\n"
    "                 ADDs by outcome, pod netns on the shared tables), gc runs, then every\n"
    "                 DIR/*.prom of --textfile-dir (each at most 256 KiB, else skipped)\n"
    "  GET /healthz   \"ok\"\n"
    "Anything else: 404 or 405.  One request per connection, heads of at most 8 KiB\n"
    "within 5 s.  Needs root with the host's PID namespace (it scans /proc) and the\n"
    "state dir mounted with propagation both ways (gc unmounts pins).\n";

enum opt_id {
	OPT_TCP = 1000,
	OPT_UDP,
	OPT_STRATEGY,
	OPT_STATE_DIR,
	OPT_JSON,
	OPT_PID,
	OPT_KEEP_LO_DOWN,
	OPT_MAX_IDLE,
	OPT_STALE_AGE,
	OPT_DRY_RUN,
	OPT_VERSION,
	OPT_HELP,
	OPT_PROMETHEUS,
	OPT_MAX_TABLE_BYTES,
	OPT_INTERVAL,
	OPT_LISTEN,
	OPT_GC_EVERY,
	OPT_TEXTFILE_DIR,
};

static const struct option long_opts[] = {
    {"tcp", required_argument, NULL, OPT_TCP},
    {"udp", required_argument, NULL, OPT_UDP},
    {"strategy", required_argument, NULL, OPT_STRATEGY},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"pid", required_argument, NULL, OPT_PID},
    {"keep-lo-down", no_argument, NULL, OPT_KEEP_LO_DOWN},
    {"max-idle", required_argument, NULL, OPT_MAX_IDLE},
    {"stale-age", required_argument, NULL, OPT_STALE_AGE},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
    {"max-table-bytes", required_argument, NULL, OPT_MAX_TABLE_BYTES},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"gc-every", required_argument, NULL, OPT_GC_EVERY},
    {"textfile-dir", required_argument, NULL, OPT_TEXTFILE_DIR},
    {NULL, 0, NULL, 0},
};

struct cli {
	const char *cmd;
	struct nshash_create_opts create;
	const char *state_dir; /* never NULL: --state-dir, $NSHASH_STATE_DIR or the default (run) */
	bool json, dry_run, prometheus;
	pid_t pid;
	int64_t max_idle, stale_age, interval, gc_every;
	const char *listen, *textfile_dir;
	unsigned seen; /* bit per option id, to refuse options a command does not take */
};

static int parse_seconds(const char *opt, const char *text, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < 0 || text[0] == '-' || text[0] == '+' || text[0] == ' ')
		return fail(EXIT_USAGE, "%s \"%s\": expected a number of seconds", opt, text);
	*out = v;
	return 0;
}

static int parse_bytes(const char *opt, const char *text, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] < '0' || text[0] > '9')
		return fail(EXIT_USAGE, "%s \"%s\": expected a number of bytes (plain decimal)", opt, text);
	*out = v;
	return 0;
}

static int parse_pid(const char *text, pid_t *out)
{
	char *end;
	errno = 0;
	long p = strtol(text, &end, 10);
	if (errno || end == text || *end || p <= 0 || p > 4194304 || text[0] < '0' || text[0] > '9')
		return fail(EXIT_USAGE, "--pid \"%s\": expected a process id", text);
	*out = (pid_t)p;
	return 0;
}

/* A refusal for lack of privileges says what to do, not only which
 * syscall failed: run as root, or size a netns of your own without root. */
static int fail_priv(int code, const struct nshash_error *err)
{
	struct nshash_probe p;
	if ((err->errnum == EPERM || err->errnum == EACCES) && nshash_probe(&p, NULL) == 0 && !p.cap_sys_admin)
		return fail(EXIT_FAIL,
			    "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run as root, or without root size a "
			    "netns of your own: unshare -Urmn nshash create --strategy nested --tcp N PATH (PATH on "
			    "a mount of that namespace, e.g. a tmpfs)  [what failed: %s]",
			    err->msg);
	return fail_err(code, err);
}

static void print_usage_text(const struct nshash_table_usage *u, uint64_t max)
{
	char mem[32], of[96] = "";
	human_bytes(u->bytes, mem, sizeof(mem));
	if (max)
		snprintf(of, sizeof(of), " of maxTableBytes %llu", (unsigned long long)max);
	printf("table memory: %llu bytes (%s)%s in %zu netns sized by nshash", (unsigned long long)u->bytes, mem, of,
	       u->netns);
	if (u->pending)
		printf(", %zu being created", u->pending);
	if (u->unverified)
		printf(", %zu unpinned (counted while a process may hold them; gc checks)", u->unverified);
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

/* ------------------------------------------------------------- commands */

static int cmd_create(struct cli *c, int argc, char **argv)
{
	if (argc != 1)
		return fail(EXIT_USAGE, "create: expected one NAME or PATH (see nshash help create)");
	char path[4096];
	struct nshash_error err = {0};
	if (nshash_pin_resolve(argv[0], path, sizeof(path), &err) < 0)
		return fail_err(EXIT_USAGE, &err);
	c->create.state_dir = c->state_dir;
	struct nshash_netns_info info;
	/* "already exists" is a failure (1), as `ip netns add` has it. */
	if (nshash_netns_create(&c->create, path, &info, &err) < 0)
		return fail_priv(EXIT_FAIL, &err);
	/* Read everything back from the pin itself: the user sees what is there. */
	if (nshash_inspect_path(path, &info, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *o = info_json(&info);
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "requested_tcp", json_object_new_int64(c->create.sizes.tcp));
		json_object_object_add(o, "requested_udp", json_object_new_int64(c->create.sizes.udp));
		print_json(o);
	} else {
		char what[4200];
		snprintf(what, sizeof(what), "created %s", path);
		print_info_text(what, &info);
	}
	return EXIT_OK;
}

static int cmd_resize(struct cli *c, int argc, char **argv)
{
	if (argc != 1)
		return fail(EXIT_USAGE, "resize: expected one NAME or PATH (see --help)");
	c->create.state_dir = c->state_dir;
	return resize_run(&c->create, c->json, c->dry_run, argv[0]);
}

static int cmd_show(struct cli *c, int argc, char **argv)
{
	struct nshash_error err = {0};
	struct nshash_netns_info info;
	char path[4096] = "";
	if (c->pid) {
		if (argc != 0)
			return fail(EXIT_USAGE, "show: give either --pid PID or a NAME|PATH");
		if (nshash_inspect_pid(c->pid, &info, &err) < 0)
			return fail_err(err.errnum == ENOENT || err.errnum == ESRCH ? EXIT_USAGE : EXIT_FAIL, &err);
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c->pid);
	} else {
		if (argc != 1)
			return fail(EXIT_USAGE, "show: expected one NAME or PATH, or --pid PID");
		if (nshash_pin_resolve(argv[0], path, sizeof(path), &err) < 0)
			return fail_err(EXIT_USAGE, &err);
		if (nshash_inspect_path(path, &info, &err) < 0)
			return fail_err(err.errnum == ENOENT || err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	}
	struct nshash_sockets socks;
	if (nshash_sockets_path(path, &socks, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *o = info_json(&info);
		json_object_object_add(o, "path", json_object_new_string(path));
		stats_sockets_json(o, &socks);
		print_json(o);
	} else {
		print_info_text(path, &info);
		stats_sockets_text(&socks, &info);
	}
	return EXIT_OK;
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
	else if (entries > 0)
		snprintf(buf, len, "%ld", entries);
	else if (entries < 0)
		snprintf(buf, len, "shared");
	else
		snprintf(buf, len, "n/a");
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
			fail(0, "%s: %s: not listed (run as root, or --state-dir for a state dir of your own)", dirs[i],
			     strerror(errno));
	}
}

static int cmd_list(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "list: takes no arguments");
	struct nshash_error err = {0};
	struct nshash_entry *v = NULL;
	size_t n = 0;
	if (nshash_list(c->state_dir, &v, &n, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < n; i++) {
			json_object *o =
			    v[i].pinned && !v[i].unknown ? info_json(&v[i].info) : json_object_new_object();
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
		print_json(a);
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
			return fail_err(EXIT_FAIL, &err);
		}
	}
	nshash_list_free(v, n);
	note_unreadable(c->state_dir);
	return EXIT_OK;
}

/* A netns outlives its pin while a process is in it: say so. */
static void warn_if_used(const char *path)
{
	struct nshash_occupancy occ;
	struct nshash_error err = {0};
	enum nshash_path_kind kind;
	char detail[256];
	if (nshash_path_classify(path, &kind, detail, sizeof(detail), &err) < 0 || kind != NSHASH_PATH_PIN)
		return;
	if (nshash_netns_occupancy(path, &occ, &err) == 0 && occ.pid > 0)
		fprintf(stderr,
			"%s: warning: %s: process %d (%s) still uses this netns: removing the pin does not end it; "
			"it lives on until that process exits\n",
			prog, path, (int)occ.pid, occ.comm);
}

/* An unmounted file is a pin (one a creator claimed and never bound) only
 * in the netns run dir or the state dir: elsewhere it belongs to someone. */
static bool in_pin_dir(const char *path, const char *state_dir)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	const char *sd = state_dir;
	const char *subs[] = {"", "/pins", "/templates", "/spares"};
	if (n == strlen(NSHASH_NETNS_RUN_DIR) && !strncmp(path, NSHASH_NETNS_RUN_DIR, n))
		return true;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s%s", sd, subs[i]);
		if (n == strlen(dir) && !strncmp(path, dir, n))
			return true;
	}
	return false;
}

static int cmd_delete(struct cli *c, int argc, char **argv)
{
	if (argc < 1)
		return fail(EXIT_USAGE, "delete: expected at least one NAME or PATH");
	int rc = EXIT_OK;
	for (int i = 0; i < argc; i++) {
		char path[4096];
		struct nshash_error err = {0};
		if (nshash_pin_resolve(argv[i], path, sizeof(path), &err) < 0) {
			rc = fail_err(EXIT_USAGE, &err);
			continue;
		}
		struct stat st;
		if (nshash_pin_is_netns(path, &err) == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size == 0 && !in_pin_dir(path, c->state_dir)) {
			rc = fail(EXIT_USAGE,
				  "remove pin %s: not a pin (an unmounted file outside %s and the state dir)", path,
				  NSHASH_NETNS_RUN_DIR);
			continue;
		}
		warn_if_used(path);
		if (nshash_pin_remove(path, &err) < 0)
			rc = fail_priv(err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	}
	return rc;
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
static void stale_age_note(const struct cli *c)
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
		return fail(EXIT_USAGE, "gc: takes no arguments");
	stale_age_note(c);
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
		return fail_priv(EXIT_FAIL, &err);
	}
	/* the CNI plugin's records of pods whose netns is gone (DEL missed) */
	size_t pods = 0;
	if (!c->dry_run && nsh_pod_records_prune(c->state_dir, &pods, &err) < 0)
		fail(0, "gc: %s", err.msg);
	if (c->json) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "templates_removed", json_object_new_int64((int64_t)rep.templates_removed));
		json_object_object_add(j, "spares_removed", json_object_new_int64((int64_t)rep.spares_removed));
		json_object_object_add(j, "stale_removed", json_object_new_int64((int64_t)rep.stale_removed));
		json_object_object_add(j, "orphans_removed", json_object_new_int64((int64_t)rep.orphans_removed));
		json_object_object_add(j, "kept", json_object_new_int64((int64_t)rep.kept));
		json_object_object_add(j, "ledger_dropped", json_object_new_int64((int64_t)rep.ledger_dropped));
		json_object_object_add(j, "pod_records_removed", json_object_new_int64((int64_t)pods));
		json_object_object_add(j, "dry_run", json_object_new_boolean(c->dry_run));
		json_object_object_add(j, "paths", seen.paths);
		usage_json(j, &rep.usage, c->create.max_table_bytes);
		print_json(j);
	} else {
		json_object_put(seen.paths);
		printf(
		    "%s%zu template(s), %zu spare(s), %zu stale pin file(s), %zu orphaned container pin(s); kept %zu "
		    "of nshash's\n",
		    c->dry_run ? "would remove " : "removed ", rep.templates_removed, rep.spares_removed,
		    rep.stale_removed, rep.orphans_removed, rep.kept);
		print_usage_text(&rep.usage, c->create.max_table_bytes);
	}
	return EXIT_OK;
}

static int cmd_reclaim(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "reclaim: takes no arguments");
	stale_age_note(c);
	struct nshash_reclaim_opts o = {
	    .state_dir = c->state_dir, .min_age = c->stale_age, .interval = c->interval, .dry_run = c->dry_run};
	struct nshash_reclaim_report rep;
	struct nshash_error err = {0};
	if (nshash_reclaim(&o, &rep, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
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
		print_json(j);
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

/* A value the kernel reports, or JSON null / "unknown" where it does not. */
static json_object *json_known(bool known, int64_t v)
{
	return known ? json_object_new_int64(v) : NULL;
}

/* What `check` finds: the kernel's answer, then the caller's problems
 * (the first host_problems of them are the host's). */
struct check {
	struct nshash_probe p;
	const char *state_dir;
	char problems[5][1024];
	int np, host_problems;
	bool privileged, state_ok, policy_ok;
	struct nsh_policy policy;
};

static int check_gather(struct check *k, struct nshash_error *err)
{
	if (nshash_probe(&k->p, err) < 0)
		return -1;
	const struct nshash_probe *p = &k->p;
	/* Two questions: can this host do it (kernel), and can you (privileges,
	 * state dir)?  Each problem is one stderr line. */
	struct nshash_probe host = *p; /* the kernel alone: privileges are the next question */
	host.cap_sys_admin = host.cap_net_admin = true;
	if (nshash_probe_require(&host, (struct nshash_sizes){1, 0}, err) < 0)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	if (p->has_tcp_knob && nshash_probe_require(&host, (struct nshash_sizes){0, 1}, err) < 0)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	k->host_problems = k->np;
	k->privileged = p->cap_sys_admin && p->cap_net_admin;
	if (!k->privileged)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]),
			 "you lack %s%s%s: run as root, or inside a user namespace with a network and mount "
			 "namespace of its own (unshare -Urmn) with --state-dir in a directory you own",
			 p->cap_sys_admin ? "" : "CAP_SYS_ADMIN", !p->cap_sys_admin && !p->cap_net_admin ? " and " : "",
			 p->cap_net_admin ? "" : "CAP_NET_ADMIN");
	/* Writable, or creatable: its nearest existing ancestor is writable. */
	char probe_dir[4096];
	snprintf(probe_dir, sizeof(probe_dir), "%s", k->state_dir);
	while (!(k->state_ok = access(probe_dir, W_OK) == 0) && errno == ENOENT) {
		char *slash = strrchr(probe_dir, '/');
		if (!slash || slash == probe_dir) {
			k->state_ok = access("/", W_OK) == 0;
			break;
		}
		*slash = '\0';
	}
	if (!k->state_ok)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]),
			 "state dir %s is not writable for you: use --state-dir (or NSHASH_STATE_DIR) with a directory "
			 "you own, or run as root",
			 k->state_dir);
	/* the node's policy, as the hook, the wrapper and the plugin read it:
	 * one they cannot read fails every container start */
	k->policy_ok = nsh_policy_load(getenv("NSHASH_POLICY"), &k->policy, err) == 0;
	if (!k->policy_ok)
		snprintf(k->problems[k->np++], sizeof(k->problems[0]), "%s", err->msg);
	return 0;
}

static void check_json(const struct check *k)
{
	const struct nshash_probe *p = &k->p;
	bool host_ok = k->host_problems == 0;
	bool tcp_known = p->has_tcp_knob && p->global_tcp > 0, udp_known = p->has_udp_knob && p->global_udp > 0;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "kernel", json_object_new_string(p->release));
	json_object_object_add(o, "tcp_supported", json_object_new_boolean(p->has_tcp_knob));
	json_object_object_add(o, "udp_supported", json_object_new_boolean(p->has_udp_knob));
	json_object_object_add(o, "global_tcp_entries", json_known(tcp_known, p->global_tcp));
	json_object_object_add(o, "global_udp_entries", json_known(udp_known, p->global_udp));
	json_object_object_add(o, "host_tcp_child", json_known(p->caller_tcp_child >= 0, p->caller_tcp_child));
	json_object_object_add(o, "host_udp_child", json_known(p->caller_udp_child >= 0, p->caller_udp_child));
	json_object_object_add(o, "cap_sys_admin", json_object_new_boolean(p->cap_sys_admin));
	json_object_object_add(o, "cap_net_admin", json_object_new_boolean(p->cap_net_admin));
	json_object_object_add(o, "state_dir", json_object_new_string(k->state_dir));
	json_object_object_add(o, "state_dir_writable", json_object_new_boolean(k->state_ok));
	/* host_supported and host_ok say the same (both are in use by scripts) */
	json_object_object_add(o, "host_supported", json_object_new_boolean(host_ok));
	json_object_object_add(o, "privileged", json_object_new_boolean(k->privileged));
	json_object_object_add(o, "policy_ok", json_object_new_boolean(k->policy_ok));
	json_object_object_add(o, "defaults", k->policy_ok ? stats_defaults_json(&k->policy) : NULL);
	json_object_object_add(o, "host_ok", json_object_new_boolean(host_ok));
	json_object_object_add(o, "caller_ok", json_object_new_boolean(k->np == k->host_problems));
	json_object *a = json_object_new_array();
	for (int i = 0; i < k->np; i++)
		json_object_array_add(a, json_object_new_string(k->problems[i]));
	json_object_object_add(o, "problems", a);
	json_object_object_add(o, "ok", json_object_new_boolean(k->np == 0));
	print_json(o);
}

static void check_text(const struct check *k)
{
	const struct nshash_probe *p = &k->p;
	bool host_ok = k->host_problems == 0;
	bool host_set = p->caller_tcp_child > 0 || p->caller_udp_child > 0;
	char t[48] = "unknown (kernel too old to report it)", u[48] = "unknown (kernel too old to report it)";
	if (p->has_tcp_knob && p->global_tcp > 0)
		snprintf(t, sizeof(t), "%ld entries", p->global_tcp);
	if (p->has_udp_knob && p->global_udp > 0)
		snprintf(u, sizeof(u), "%ld entries", p->global_udp);
	printf("kernel: %s\n", p->release);
	printf("tcp per-netns tables (6.1+): %s\n", p->has_tcp_knob ? "yes" : "no");
	printf("udp per-netns tables (6.2+): %s\n", p->has_udp_knob ? "yes" : "no");
	printf("global tables: tcp %s, udp %s\n", t, u);
	if (p->caller_tcp_child >= 0 || p->caller_udp_child >= 0) {
		printf("host child knobs:");
		if (p->caller_tcp_child >= 0)
			printf(" tcp %ld", p->caller_tcp_child);
		if (p->caller_udp_child >= 0)
			printf("%s udp %ld", p->caller_tcp_child >= 0 ? "," : "", p->caller_udp_child);
		printf("%s\n", host_set ? " (set on the host: every netns created here gets own tables; "
					  "nshash never sets these)"
					: "");
	}
	printf("capabilities: CAP_SYS_ADMIN %s, CAP_NET_ADMIN %s\n", p->cap_sys_admin ? "yes" : "no",
	       p->cap_net_admin ? "yes" : "no");
	printf("state dir: %s (%s)\n", k->state_dir, k->state_ok ? "writable" : "NOT writable");
	char line[1400] = "policy: cannot be read (see below)\n";
	if (k->policy_ok)
		stats_defaults_text(&k->policy, line, sizeof(line));
	fputs(line, stdout);
	printf("this host: %s\n", host_ok ? "supports per-netns tables" : "cannot use nshash (kernel)");
	printf("you: %s\n", k->privileged ? "have the privileges" : "lack the privileges: run as root");
	if (!host_ok)
		printf("result: this host cannot use nshash\n");
	else if (k->np)
		printf("result: this host supports nshash, but you cannot use it as you are (see below)\n");
	else
		printf("result: ok\n");
}

static int cmd_check(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "check: takes no arguments");
	struct check k = {.state_dir = c->state_dir};
	struct nshash_error err = {0};
	if (check_gather(&k, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	if (c->json)
		check_json(&k);
	else
		check_text(&k);
	for (int i = 0; i < k.np; i++)
		fail(0, "%s", k.problems[i]);
	return k.np ? EXIT_FAIL : EXIT_OK;
}

static int cmd_serve(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "serve: takes no arguments");
	if (c->gc_every > 366LL * 24 * 3600)
		return fail(EXIT_USAGE, "serve: --gc-every %lld: at most a year", (long long)c->gc_every);
	stale_age_note(c);
	struct serve_opts o = {.state_dir = c->state_dir,
			       .listen = c->listen ? c->listen : SERVE_DEFAULT_LISTEN,
			       .textfile_dir = c->textfile_dir,
			       .gc_every = c->gc_every,
			       .max_idle = c->max_idle,
			       .stale_age = c->stale_age};
	return serve_command(&o);
}

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

static int cmd_record(struct cli *c, int argc, char **argv)
{
	if (argc > 0)
		return fail(EXIT_USAGE, "record: takes no arguments");
	(void)argv;
	return record_command(c->state_dir, c->json);
}

static int cmd_history(struct cli *c, int argc, char **argv)
{
	if (argc > 0)
		return fail(EXIT_USAGE, "history: takes no arguments");
	(void)argv;
	if (c->json && c->prometheus)
		return fail(EXIT_USAGE, "history: give --json or --prometheus, not both");
	return history_command(c->state_dir, c->prometheus ? HISTORY_PROMETHEUS
					     : c->json	   ? HISTORY_JSON
							   : HISTORY_TEXT);
}

/* ------------------------------------------------------------- main */

struct command {
	const char *name;
	int (*run)(struct cli *, int, char **);
	unsigned allowed;  /* option ids (bit = id - OPT_TCP) this command takes */
	const char *usage; /* nshash help NAME, nshash NAME --help */
};

#define BIT(o) (1u << ((o)-OPT_TCP))
static int cmd_help(struct cli *c, int argc, char **argv);

static const struct command commands[] = {
    {"create", cmd_create,
     BIT(OPT_TCP) | BIT(OPT_UDP) | BIT(OPT_STRATEGY) | BIT(OPT_KEEP_LO_DOWN) | BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES),
     create_usage},
    {"resize", cmd_resize, BIT(OPT_TCP) | BIT(OPT_UDP) | BIT(OPT_STRATEGY) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON),
     resize_usage},
    {"show", cmd_show, BIT(OPT_PID) | BIT(OPT_JSON), show_usage},
    {"list", cmd_list, BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES), list_usage},
    {"delete", cmd_delete, 0, delete_usage},
    {"gc", cmd_gc, BIT(OPT_MAX_IDLE) | BIT(OPT_STALE_AGE) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES),
     gc_usage},
    {"reclaim", cmd_reclaim,
     BIT(OPT_STALE_AGE) | BIT(OPT_INTERVAL) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES),
     reclaim_usage},
    {"check", cmd_check, BIT(OPT_JSON), check_usage},
    {"serve", cmd_serve,
     BIT(OPT_LISTEN) | BIT(OPT_GC_EVERY) | BIT(OPT_MAX_IDLE) | BIT(OPT_STALE_AGE) | BIT(OPT_TEXTFILE_DIR), serve_usage},
    {"stats", cmd_stats, BIT(OPT_JSON) | BIT(OPT_PROMETHEUS), stats_usage},
    {"record", cmd_record, BIT(OPT_JSON), record_usage},
    {"history", cmd_history, BIT(OPT_JSON) | BIT(OPT_PROMETHEUS), history_usage},
    {"help", cmd_help, 0, usage_text},
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* nshash help [COMMAND] */
static int cmd_help(struct cli *c, int argc, char **argv)
{
	(void)c;
	if (argc > 1)
		return fail(EXIT_USAGE, "help: expected at most one COMMAND");
	const struct command *cmd = argc ? find_command(argv[0]) : NULL;
	if (argc && !cmd)
		return fail(EXIT_USAGE,
			    "help: unknown command \"%s\" (commands: create, resize, show, list, stats, delete, gc, "
			    "reclaim, check, serve)",
			    argv[0]);
	fputs(cmd ? cmd->usage : usage_text, stdout);
	return EXIT_OK;
}

/* Parsing in progress: the command found so far and its positional
 * arguments, collected from among the options. */
struct parse {
	const struct command *cmd;
	char **pos;
	int npos;
};

/* Exit codes are >= 0; these mean "go on" and "no more options". */
#define CONTINUE (-1)
#define STOP	 (-2)

/* The option `opt`: its value into c.  CONTINUE, or the exit code of a
 * usage error. */
static int apply_option(struct cli *c, int opt)
{
	struct nshash_error err = {0};
	int r = 0;

	switch (opt) {
	case OPT_TCP:
		r = nshash_size_parse(NSHASH_TCP, "--tcp", optarg, &c->create.sizes.tcp, &err);
		break;
	case OPT_UDP:
		r = nshash_size_parse(NSHASH_UDP, "--udp", optarg, &c->create.sizes.udp, &err);
		break;
	case OPT_STRATEGY:
		r = nshash_strategy_parse(optarg, &c->create.strategy, &err);
		break;
	case OPT_STATE_DIR:
		if (optarg[0] != '/')
			return fail(EXIT_USAGE, "--state-dir \"%s\": must be an absolute path", optarg);
		c->state_dir = optarg;
		break;
	case OPT_JSON:
		c->json = true;
		break;
	case OPT_PID:
		return parse_pid(optarg, &c->pid) ? EXIT_USAGE : CONTINUE;
	case OPT_KEEP_LO_DOWN:
		c->create.keep_lo_down = true;
		break;
	case OPT_MAX_IDLE:
		return parse_seconds("--max-idle", optarg, &c->max_idle) ? EXIT_USAGE : CONTINUE;
	case OPT_STALE_AGE:
		return parse_seconds("--stale-age", optarg, &c->stale_age) ? EXIT_USAGE : CONTINUE;
	case OPT_INTERVAL:
		return parse_seconds("--interval", optarg, &c->interval) ? EXIT_USAGE : CONTINUE;
	case OPT_MAX_TABLE_BYTES:
		return parse_bytes("--max-table-bytes", optarg, &c->create.max_table_bytes) ? EXIT_USAGE : CONTINUE;
	case OPT_DRY_RUN:
		c->dry_run = true;
		break;
	case OPT_PROMETHEUS:
		c->prometheus = true;
		break;
	case OPT_LISTEN:
		c->listen = optarg;
		break;
	case OPT_GC_EVERY:
		return parse_seconds("--gc-every", optarg, &c->gc_every) ? EXIT_USAGE : CONTINUE;
	case OPT_TEXTFILE_DIR:
		if (optarg[0] != '/')
			return fail(EXIT_USAGE, "--textfile-dir \"%s\": must be an absolute path", optarg);
		c->textfile_dir = optarg;
		break;
	}
	return r < 0 ? fail_err(EXIT_USAGE, &err) : CONTINUE;
}

/* A word that is not an option: the command, or one of its arguments. */
static int take_word(struct parse *p, const char *word)
{
	if (p->cmd) {
		p->pos[p->npos++] = (char *)word;
		return CONTINUE;
	}
	p->cmd = find_command(word);
	if (!p->cmd)
		return fail(EXIT_USAGE, "unknown command \"%s\" (see nshash help)", word);
	return CONTINUE;
}

/* The next option: --help, --version, -j/--json (before the command, as
 * `ip -j`, or after it), --state-dir, or one the command takes. */
static int take_option(struct parse *p, struct cli *c, int argc, char **argv)
{
	int li = -1;
	const char *word = argv[optind];
	int opt = getopt_long(argc, argv, "+hj", long_opts, &li);

	switch (opt) {
	case -1:
		return STOP;
	case 'h':
	case OPT_HELP:
		fputs(p->cmd ? p->cmd->usage : usage_text, stdout);
		return EXIT_OK;
	case 'j':
		opt = OPT_JSON;
		li = 4; /* "json" in long_opts */
		break;
	case OPT_VERSION:
		puts("nshash " NSHASH_VERSION);
		return EXIT_OK;
	case '?':
		if (optopt || strchr(word, '='))
			return fail(EXIT_USAGE, "option \"%s\" needs a value or takes none", word);
		return fail(EXIT_USAGE, "unknown option \"%s\" (see --help)", word);
	}
	if (opt != OPT_STATE_DIR && !(opt == OPT_JSON && !p->cmd)) {
		if (!p->cmd)
			return fail(EXIT_USAGE, "option \"%s\" must follow a command", word);
		if (!(p->cmd->allowed & BIT(opt)))
			return fail(EXIT_USAGE, "%s does not take \"--%s\"", p->cmd->name, long_opts[li].name);
	}
	return apply_option(c, opt);
}

/* The command is the first non-option word; options may come before or
 * after it and among its arguments; "--" ends options. */
static int parse_args(struct parse *p, struct cli *c, int argc, char **argv)
{
	opterr = 0;
	while (optind < argc) {
		int r;
		if (strcmp(argv[optind], "--") == 0) {
			while (++optind < argc)
				p->pos[p->npos++] = argv[optind];
			break;
		}
		if (argv[optind][0] != '-' || strcmp(argv[optind], "-") == 0)
			r = take_word(p, argv[optind++]);
		else
			r = take_option(p, c, argc, argv);
		if (r == STOP)
			break;
		if (r != CONTINUE)
			return r;
	}
	return CONTINUE;
}

static int run(int argc, char **argv, char **pos)
{
	struct cli c = {.max_idle = 3600, .stale_age = 60, .gc_every = 900};
	struct parse p = {.pos = pos};
	char default_state[PATH_MAX];
	c.state_dir = getenv("NSHASH_STATE_DIR");
	if (!c.state_dir || !*c.state_dir) {
		nsh_default_state_dir(default_state, sizeof(default_state));
		c.state_dir = default_state;
	}
	int r = parse_args(&p, &c, argc, argv);
	if (r != CONTINUE)
		return r;
	if (!p.cmd) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	return p.cmd->run(&c, p.npos, pos);
}

int main(int argc, char **argv)
{
	/* The command's positional arguments, collected from among options. */
	char **pos = calloc((size_t)argc + 1, sizeof(char *));
	if (!pos)
		return fail(EXIT_FAIL, "out of memory");
	int rc = run(argc, argv, pos);
	free(pos);
	return rc;
}
