/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CLI's command files share: cmd/output.c's helpers, the options,
 * the parsed command line, the command table's entries, and the few
 * functions one command file lends another. */
#ifndef NSH_CLI_H
#define NSH_CLI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "nshash.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_fail_err(int code, const struct nshash_error *err);
json_object *cli_info_json(const struct nshash_netns_info *i);
void cli_print_json(json_object *o);
void cli_info_text(const char *what, const struct nshash_netns_info *i);
/* A table's cell in list and stats: "OWN" + its entries (own table),
 * "shared", or "n/a" (0: the kernel has no per-netns tables). */
void cli_entries_cell(long entries, const char *own, char *buf, size_t len);
/* "N KiB" or "N MiB". */
void cli_human_bytes(uint64_t b, char *buf, size_t len);

int cli_fail_priv(int code, const struct nshash_error *err);

/* Options: the ids getopt returns (cmd/nshash.c's long_opts). */
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

/* The parsed command line a command runs with. */
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

/* One command: a file cmd/NAME.c defines it, cmd/nshash.c's commands[]
 * lists it. */
struct command {
	const char *name;
	int (*run)(struct cli *, int, char **);
	unsigned allowed;  /* option ids (bit = id - OPT_TCP) this command takes */
	const char *usage; /* nshash help NAME, nshash NAME --help */
};

#define BIT(o) (1u << ((o)-OPT_TCP))

/* cmd/list.c: a --stale-age under the library's floor is raised to it: say so (gc, serve). */
void cli_stale_age_note(const struct cli *c);

/* cmd/resize.c */
int cli_resize_run(const struct nshash_create_opts *create, bool json, bool dry_run, const char *arg);

/* cmd/history.c: nshash_auto_entries{workload,proto} (history --prometheus,
 * stats --prometheus, serve). */
struct nsh_history;
struct nsh_policy;
void cli_history_metrics(FILE *f, const struct nsh_history *h, const struct nsh_policy *policy, int64_t now);

/* cmd/metrics.c: what `nshash stats --prometheus` prints, into f (for
 * `nshash serve`): 0, or an exit status (the error said on stderr).
 * !commands: the command label of nshash_netns_info left empty (other
 * tenants' processes are not named to whoever can scrape). */
int cli_metrics(FILE *f, const char *state_dir, bool commands);

/* cmd/output.c: for show and stats --json: add "sockets" (and TIME_WAIT,
 * listeners) to the "tcp"/"udp" objects of `o`, or print them as text
 * lines. */
void cli_sockets_json(json_object *o, const struct nshash_sockets *s);
void cli_sockets_text(const struct nshash_sockets *s, const struct nshash_netns_info *info);

/* cmd/check.c: the policy's defaultTcp/defaultUdp for check and stats: a
 * JSON object {"tcp": N, "udp": N, "source": "FILE"} and a text line
 * ending in "\n". */
json_object *cli_defaults_json(const struct nsh_policy *policy);
void cli_defaults_text(const struct nsh_policy *policy, char *out, size_t len);

/* cmd/serve.c */
#define SERVE_DEFAULT_LISTEN "127.0.0.1:9490"
struct serve_opts {
	const char *state_dir;
	const char *listen;	  /* ADDR:PORT */
	const char *textfile_dir; /* NULL none */
	int64_t gc_every;	  /* seconds, 0 = no gc */
	int64_t max_idle, stale_age;
};
int cli_serve(const struct serve_opts *o);

#endif
