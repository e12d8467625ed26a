/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash: create, inspect and clean up network namespaces with their own
 * TCP/UDP hash tables.  A thin shell over libnshash: argv, output, exit
 * codes. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nshash.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char *prog = "nshash";

static const char usage_text[] =
    "Usage: nshash [--state-dir DIR] COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "Give network namespaces their own TCP established-hash and UDP hash tables.\n"
    "\n"
    "Commands:\n"
    "  create [--tcp N] [--udp N] [--strategy template|nested] [--keep-lo-down] NAME|PATH\n"
    "                 create a netns with its own tables, verify them, pin it at\n"
    "                 /run/netns/NAME (usable with `ip netns exec NAME`) or at PATH\n"
    "  show NAME|PATH | --pid PID\n"
    "                 the netns's table sizes (own or shared), derived limits, memory\n"
    "  list           every pinned netns under /run/netns and the state dir\n"
    "  delete NAME|PATH...\n"
    "                 unmount and remove pins (succeeds if already gone)\n"
    "  gc [--max-idle SECONDS] [--stale-age SECONDS] [--dry-run]\n"
    "                 remove damaged templates, templates unused for --max-idle\n"
    "                 (default 3600), pin files a crash left unmounted and container\n"
    "                 pins no process uses (older than --stale-age, default 60)\n"
    "  check          can this host work? kernel knobs, privileges, state dir\n"
    "\n"
    "Options:\n"
    "  --tcp N        TCP established-hash entries, 1..16777216 (next power of two)\n"
    "  --udp N        UDP hash entries, 1..65536 (next power of two, at least 128)\n"
    "                 0 or absent: that protocol stays on the shared table\n"
    "  --state-dir DIR  templates, lock and container pins (default " NSHASH_DEFAULT_STATE_DIR ",\n"
    "                 or $NSHASH_STATE_DIR)\n"
    "  --json         machine-readable output on stdout\n"
    "  -h, --help     this text;  --version  the version\n"
    "\n"
    "Exit status: 0 success, 1 failure (kernel, privileges, system), 2 bad usage or input.\n";

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
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

struct cli {
	const char *cmd;
	struct nshash_create_opts create;
	const char *state_dir;
	bool json, dry_run;
	pid_t pid;
	int64_t max_idle, stale_age;
	unsigned seen; /* bit per option id, to refuse options a command does not take */
};

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

static int fail_err(int code, const struct nshash_error *err)
{
	return fail(code, "%s", err->msg);
}

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

/* ------------------------------------------------------------- output */

static json_object *info_json(const struct nshash_netns_info *i)
{
	json_object *o = json_object_new_object();
	long ent[2] = {i->tcp_entries, i->udp_entries};
	for (int k = 0; k < 2; k++) {
		json_object *p = json_object_new_object();
		bool own = ent[k] > 0;
		json_object_object_add(p, "supported", json_object_new_boolean(ent[k] != 0));
		json_object_object_add(p, "own", json_object_new_boolean(own));
		json_object_object_add(p, "entries", json_object_new_int64(ent[k] < 0 ? -ent[k] : ent[k]));
		json_object_object_add(
		    p, "bytes", json_object_new_int64(own ? (int64_t)nshash_table_bytes(k, (uint32_t)ent[k]) : 0));
		json_object_object_add(p, "child", json_object_new_int64(k ? i->udp_child : i->tcp_child));
		json_object_object_add(o, k ? "udp" : "tcp", p);
	}
	json_object_object_add(o, "tcp_max_tw_buckets", json_object_new_int64(i->tcp_max_tw_buckets));
	json_object_object_add(o, "tcp_max_syn_backlog", json_object_new_int64(i->tcp_max_syn_backlog));
	json_object_object_add(o, "inode", json_object_new_int64((int64_t)i->inode));
	return o;
}

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1024 * 1024)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
}

static void table_text(const char *proto, long entries, char *buf, size_t len)
{
	char mem[32];
	if (entries > 0) {
		human_bytes(nshash_table_bytes(strcmp(proto, "tcp") ? NSHASH_UDP : NSHASH_TCP, (uint32_t)entries), mem,
			    sizeof(mem));
		snprintf(buf, len, "own table, %ld entries (%s)", entries, mem);
	} else if (entries < 0) {
		snprintf(buf, len, "shared global table (%ld entries)", -entries);
	} else {
		snprintf(buf, len, "not supported by this kernel");
	}
}

static void print_info_text(const char *what, const struct nshash_netns_info *i)
{
	char t[128], u[128];
	table_text("tcp", i->tcp_entries, t, sizeof(t));
	table_text("udp", i->udp_entries, u, sizeof(u));
	printf("%s\n  tcp: %s\n  udp: %s\n", what, t, u);
	if (i->tcp_max_tw_buckets >= 0)
		printf("  tcp_max_tw_buckets: %ld\n  tcp_max_syn_backlog: %ld\n", i->tcp_max_tw_buckets,
		       i->tcp_max_syn_backlog);
	if (i->tcp_child >= 0 || i->udp_child >= 0)
		printf("  children get: tcp %ld, udp %ld (0 = shared)\n", i->tcp_child, i->udp_child);
	if (i->tcp_entries > 0 && i->tcp_max_tw_buckets >= 0 && i->tcp_max_tw_buckets < 1024)
		printf("  note: this small table allows only %ld TIME_WAIT sockets\n", i->tcp_max_tw_buckets);
}

/* ------------------------------------------------------------- commands */

static int cmd_create(struct cli *c, int argc, char **argv)
{
	if (argc != 1)
		return fail(EXIT_USAGE, "create: expected one NAME or PATH (see --help)");
	char path[4096];
	struct nshash_error err = {0};
	if (nshash_pin_resolve(argv[0], path, sizeof(path), &err) < 0)
		return fail_err(EXIT_USAGE, &err);
	c->create.state_dir = c->state_dir;
	struct nshash_netns_info info;
	if (nshash_netns_create(&c->create, path, &info, &err) < 0)
		return fail_err(err.errnum == EEXIST ? EXIT_USAGE : EXIT_FAIL, &err);
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
	if (c->json) {
		json_object *o = info_json(&info);
		json_object_object_add(o, "path", json_object_new_string(path));
		print_json(o);
	} else {
		print_info_text(path, &info);
	}
	return EXIT_OK;
}

static const char *kind_name(enum nshash_entry_kind k)
{
	return k == NSHASH_ENTRY_TEMPLATE ? "template" : k == NSHASH_ENTRY_CONTAINER ? "container" : "netns";
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
			json_object *o = v[i].pinned ? info_json(&v[i].info) : json_object_new_object();
			json_object_object_add(o, "path", json_object_new_string(v[i].path));
			json_object_object_add(o, "name", json_object_new_string(v[i].name));
			json_object_object_add(o, "kind", json_object_new_string(kind_name(v[i].kind)));
			json_object_object_add(o, "pinned", json_object_new_boolean(v[i].pinned));
			if (v[i].kind == NSHASH_ENTRY_TEMPLATE) {
				json_object_object_add(o, "damaged", json_object_new_boolean(v[i].damaged));
				json_object_object_add(o, "last_used", json_object_new_int64(v[i].last_used));
			}
			json_object_array_add(a, o);
		}
		print_json(a);
	} else {
		printf("%-10s %-12s %-12s %s\n", "KIND", "TCP", "UDP", "PATH");
		for (size_t i = 0; i < n; i++) {
			char t[24], u[24];
			size_cell(&v[i], false, t, sizeof(t));
			size_cell(&v[i], true, u, sizeof(u));
			printf("%-10s %-12s %-12s %s%s%s\n", kind_name(v[i].kind), t, u, v[i].path,
			       v[i].pinned ? "" : " (not mounted: stale)",
			       v[i].damaged && v[i].pinned ? " (damaged)" : "");
		}
	}
	nshash_list_free(v, n);
	return EXIT_OK;
}

static int cmd_delete(struct cli *c, int argc, char **argv)
{
	(void)c;
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
		if (nshash_pin_remove(path, &err) < 0)
			rc = fail_err(err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	}
	return rc;
}

static int cmd_gc(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "gc: takes no arguments");
	struct nshash_gc_opts o = {.state_dir = c->state_dir,
				   .template_max_idle = c->max_idle,
				   .stale_min_age = c->stale_age,
				   .dry_run = c->dry_run};
	struct nshash_gc_report rep;
	struct nshash_error err = {0};
	if (nshash_gc(&o, &rep, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "templates_removed", json_object_new_int64((int64_t)rep.templates_removed));
		json_object_object_add(j, "stale_removed", json_object_new_int64((int64_t)rep.stale_removed));
		json_object_object_add(j, "orphans_removed", json_object_new_int64((int64_t)rep.orphans_removed));
		json_object_object_add(j, "kept", json_object_new_int64((int64_t)rep.kept));
		json_object_object_add(j, "dry_run", json_object_new_boolean(c->dry_run));
		print_json(j);
	} else {
		printf("%s%zu template(s), %zu stale pin file(s), %zu orphaned container pin(s); kept %zu\n",
		       c->dry_run ? "would remove " : "removed ", rep.templates_removed, rep.stale_removed,
		       rep.orphans_removed, rep.kept);
	}
	return EXIT_OK;
}

static int cmd_check(struct cli *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return fail(EXIT_USAGE, "check: takes no arguments");
	struct nshash_probe p;
	struct nshash_error err = {0};
	if (nshash_probe(&p, &err) < 0)
		return fail_err(EXIT_FAIL, &err);
	const char *state_dir = c->state_dir ? c->state_dir : NSHASH_DEFAULT_STATE_DIR;
	/* Problems: each makes the host unable to work. */
	char problems[4][1024];
	int np = 0;
	if (nshash_probe_require(&p, (struct nshash_sizes){1, 0}, &err) < 0)
		snprintf(problems[np++], sizeof(problems[0]), "%s", err.msg);
	if (p.has_tcp_knob && nshash_probe_require(&p, (struct nshash_sizes){0, 1}, &err) < 0)
		snprintf(problems[np++], sizeof(problems[0]), "%s", err.msg);
	/* Writable, or creatable: its nearest existing ancestor is writable. */
	char probe_dir[4096];
	snprintf(probe_dir, sizeof(probe_dir), "%s", state_dir);
	bool state_ok;
	while (!(state_ok = access(probe_dir, W_OK) == 0) && errno == ENOENT) {
		char *slash = strrchr(probe_dir, '/');
		if (!slash || slash == probe_dir) {
			state_ok = access("/", W_OK) == 0;
			break;
		}
		*slash = '\0';
	}
	if (!state_ok)
		snprintf(problems[np++], sizeof(problems[0]), "state dir %s is not writable", state_dir);
	bool host_set = p.caller_tcp_child > 0 || p.caller_udp_child > 0;
	if (c->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "kernel", json_object_new_string(p.release));
		json_object_object_add(o, "tcp_supported", json_object_new_boolean(p.has_tcp_knob));
		json_object_object_add(o, "udp_supported", json_object_new_boolean(p.has_udp_knob));
		json_object_object_add(o, "global_tcp_entries", json_object_new_int64(p.global_tcp));
		json_object_object_add(o, "global_udp_entries", json_object_new_int64(p.global_udp));
		json_object_object_add(o, "host_tcp_child", json_object_new_int64(p.caller_tcp_child));
		json_object_object_add(o, "host_udp_child", json_object_new_int64(p.caller_udp_child));
		json_object_object_add(o, "cap_sys_admin", json_object_new_boolean(p.cap_sys_admin));
		json_object_object_add(o, "cap_net_admin", json_object_new_boolean(p.cap_net_admin));
		json_object_object_add(o, "state_dir", json_object_new_string(state_dir));
		json_object *a = json_object_new_array();
		for (int i = 0; i < np; i++)
			json_object_array_add(a, json_object_new_string(problems[i]));
		json_object_object_add(o, "problems", a);
		json_object_object_add(o, "ok", json_object_new_boolean(np == 0));
		print_json(o);
	} else {
		printf("kernel: %s\n", p.release);
		printf("tcp per-netns tables (6.1+): %s\n", p.has_tcp_knob ? "yes" : "no");
		printf("udp per-netns tables (6.2+): %s\n", p.has_udp_knob ? "yes" : "no");
		printf("global tables: tcp %ld entries, udp %ld entries\n", p.global_tcp, p.global_udp);
		printf("host child knobs: tcp %ld, udp %ld%s\n", p.caller_tcp_child, p.caller_udp_child,
		       host_set
			   ? " (set on the host: every netns created here gets own tables; nshash never sets these)"
			   : "");
		printf("capabilities: CAP_SYS_ADMIN %s, CAP_NET_ADMIN %s\n", p.cap_sys_admin ? "yes" : "no",
		       p.cap_net_admin ? "yes" : "no");
		printf("state dir: %s (%s)\n", state_dir, state_ok ? "writable" : "NOT writable");
		printf("%s\n", np ? "result: this host cannot use nshash" : "result: ok");
	}
	for (int i = 0; i < np; i++)
		fail(0, "%s", problems[i]);
	return np ? EXIT_FAIL : EXIT_OK;
}

/* ------------------------------------------------------------- main */

struct command {
	const char *name;
	int (*run)(struct cli *, int, char **);
	unsigned allowed; /* option ids (bit = id - OPT_TCP) this command takes */
};

#define BIT(o) (1u << ((o)-OPT_TCP))
static const struct command commands[] = {
    {"create", cmd_create, BIT(OPT_TCP) | BIT(OPT_UDP) | BIT(OPT_STRATEGY) | BIT(OPT_KEEP_LO_DOWN) | BIT(OPT_JSON)},
    {"show", cmd_show, BIT(OPT_PID) | BIT(OPT_JSON)},
    {"list", cmd_list, BIT(OPT_JSON)},
    {"delete", cmd_delete, 0},
    {"gc", cmd_gc, BIT(OPT_MAX_IDLE) | BIT(OPT_STALE_AGE) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON)},
    {"check", cmd_check, BIT(OPT_JSON)},
};

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
	case OPT_DRY_RUN:
		c->dry_run = true;
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(word, commands[i].name) == 0)
			p->cmd = &commands[i];
	if (!p->cmd)
		return fail(EXIT_USAGE, "unknown command \"%s\" (see --help)", word);
	return CONTINUE;
}

/* The next option: --help, --version, or one the command takes. */
static int take_option(struct parse *p, struct cli *c, int argc, char **argv)
{
	int li = -1;
	const char *word = argv[optind];
	int opt = getopt_long(argc, argv, "+h", long_opts, &li);

	switch (opt) {
	case -1:
		return STOP;
	case 'h':
		fputs(usage_text, stdout);
		return EXIT_OK;
	case OPT_VERSION:
		puts("nshash " NSHASH_VERSION);
		return EXIT_OK;
	case '?':
		if (optopt || strchr(word, '='))
			return fail(EXIT_USAGE, "option \"%s\" needs a value or takes none", word);
		return fail(EXIT_USAGE, "unknown option \"%s\" (see --help)", word);
	}
	if (opt != OPT_STATE_DIR) {
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
	struct cli c = {.max_idle = 3600, .stale_age = 60};
	struct parse p = {.pos = pos};
	c.state_dir = getenv("NSHASH_STATE_DIR");
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
