/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CLI's command files share: cmd/output.c's helpers. */
#ifndef NSH_CLI_H
#define NSH_CLI_H

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#include "nshash.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail_err(int code, const struct nshash_error *err);
json_object *info_json(const struct nshash_netns_info *i);
void print_json(json_object *o);
void print_info_text(const char *what, const struct nshash_netns_info *i);
/* "N KiB" or "N MiB". */
void human_bytes(uint64_t b, char *buf, size_t len);

int fail_priv(int code, const struct nshash_error *err);

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
void stale_age_note(const struct cli *c);

/* cmd/resize.c */
int resize_run(const struct nshash_create_opts *create, bool json, bool dry_run, const char *arg);

/* cmd/history.c: nshash_auto_entries{workload,proto} (history --prometheus,
 * stats --prometheus, serve). */
struct nsh_history;
struct nsh_policy;
void history_prometheus(FILE *f, const struct nsh_history *h, const struct nsh_policy *policy, int64_t now);

/* cmd/serve.c */
#define SERVE_DEFAULT_LISTEN "127.0.0.1:9490"
struct serve_opts {
	const char *state_dir;
	const char *listen;	  /* ADDR:PORT */
	const char *textfile_dir; /* NULL none */
	int64_t gc_every;	  /* seconds, 0 = no gc */
	int64_t max_idle, stale_age;
};
int serve_command(const struct serve_opts *o);

#endif
