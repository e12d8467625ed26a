/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `nshash record` (cmd/record.c) and `nshash history` (cmd/history.c). */
#ifndef NSH_CMD_AUTO_H
#define NSH_CMD_AUTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct nsh_history;
struct nsh_policy;

extern const char record_usage[];
extern const char history_usage[];
int record_command(const char *state_dir, bool json);
enum history_format { HISTORY_TEXT = 0, HISTORY_JSON, HISTORY_PROMETHEUS };
int history_command(const char *state_dir, enum history_format format);
/* nshash_auto_entries{workload,proto}: history --prometheus, stats --prometheus, serve. */
void history_prometheus(FILE *f, const struct nsh_history *h, const struct nsh_policy *policy, int64_t now);

#endif
