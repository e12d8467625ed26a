/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CLI's command files share: cmd/output.c's helpers. */
#ifndef NSH_CLI_H
#define NSH_CLI_H

#include <json-c/json.h>

#include "nshash.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail_err(int code, const struct nshash_error *err);
json_object *info_json(const struct nshash_netns_info *i);
void print_json(json_object *o);
void print_info_text(const char *what, const struct nshash_netns_info *i);
/* "N KiB" or "N MiB". */
void human_bytes(uint64_t b, char *buf, size_t len);

/* cmd/resize.c */
int resize_run(const struct nshash_create_opts *create, bool json, bool dry_run, const char *arg);

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
