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

static int parse_seconds(const char *opt, const char *text, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < 0 || text[0] == '-' || text[0] == '+' || text[0] == ' ')
		return cli_fail(EXIT_USAGE, "%s \"%s\": expected a number of seconds", opt, text);
	*out = v;
	return 0;
}

static int parse_bytes(const char *opt, const char *text, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] < '0' || text[0] > '9')
		return cli_fail(EXIT_USAGE, "%s \"%s\": expected a number of bytes (plain decimal)", opt, text);
	*out = v;
	return 0;
}

static int parse_pid(const char *text, pid_t *out)
{
	char *end;
	errno = 0;
	long p = strtol(text, &end, 10);
	if (errno || end == text || *end || p <= 0 || p > 4194304 || text[0] < '0' || text[0] > '9')
		return cli_fail(EXIT_USAGE, "--pid \"%s\": expected a process id", text);
	*out = (pid_t)p;
	return 0;
}

/* ------------------------------------------------------------- main */

/* The commands, each defined in its file (usage next to its handler). */
extern const struct command cli_cmd_create, cli_cmd_resize, cli_cmd_show, cli_cmd_list, cli_cmd_stats, cli_cmd_delete, cli_cmd_gc, cli_cmd_reclaim,
    cli_cmd_check, cli_cmd_serve, cli_cmd_record, cli_cmd_history;
static const struct command help_cmd;

/* In the order `nshash help BOGUS` names them. */
static const struct command *const commands[] = {
    &cli_cmd_create, &cli_cmd_resize,  &cli_cmd_show,  &cli_cmd_list,  &cli_cmd_stats, &cli_cmd_delete,
    &cli_cmd_gc,	 &cli_cmd_reclaim, &cli_cmd_check, &cli_cmd_serve, &cli_cmd_record, &cli_cmd_history, &help_cmd,
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i]->name) == 0)
			return commands[i];
	return NULL;
}

/* nshash help [COMMAND] */
static int cmd_help(struct cli *c, int argc, char **argv)
{
	(void)c;
	if (argc > 1)
		return cli_fail(EXIT_USAGE, "help: expected at most one COMMAND");
	const struct command *cmd = argc ? find_command(argv[0]) : NULL;
	if (argc && !cmd) {
		char names[256] = "";
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (commands[i] != &help_cmd)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 *names ? ", " : "", commands[i]->name);
		return cli_fail(EXIT_USAGE, "help: unknown command \"%s\" (commands: %s)", argv[0], names);
	}
	fputs(cmd ? cmd->usage : usage_text, stdout);
	return EXIT_OK;
}

static const struct command help_cmd = {"help", cmd_help, 0, usage_text};
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
			return cli_fail(EXIT_USAGE, "--state-dir \"%s\": must be an absolute path", optarg);
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
			return cli_fail(EXIT_USAGE, "--textfile-dir \"%s\": must be an absolute path", optarg);
		c->textfile_dir = optarg;
		break;
	}
	return r < 0 ? cli_fail_err(EXIT_USAGE, &err) : CONTINUE;
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
		return cli_fail(EXIT_USAGE, "unknown command \"%s\" (see nshash help)", word);
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
			return cli_fail(EXIT_USAGE, "option \"%s\" needs a value or takes none", word);
		return cli_fail(EXIT_USAGE, "unknown option \"%s\" (see --help)", word);
	}
	if (opt != OPT_STATE_DIR && !(opt == OPT_JSON && !p->cmd)) {
		if (!p->cmd)
			return cli_fail(EXIT_USAGE, "option \"%s\" must follow a command", word);
		if (!(p->cmd->allowed & BIT(opt)))
			return cli_fail(EXIT_USAGE, "%s does not take \"--%s\"", p->cmd->name, long_opts[li].name);
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
		return cli_fail(EXIT_FAIL, "out of memory");
	int rc = run(argc, argv, pos);
	free(pos);
	return rc;
}
