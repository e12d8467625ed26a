/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash record: one sample of every netns nshash sized for a workload
 * (STATE_DIR/workloads marks), folded into the peaks of HISTORY/history.
 * Run every minute by nshash-record.timer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auto.h"
#include "cli.h"
#include "common.h"

static const char record_usage[] = "Usage: nshash record [-j|--json]\n"
			    "Sample the sockets of every network namespace nshash sized for a workload\n"
			    "(io.nshash.workload or the front-end's key, see nshash(8) AUTO SIZES) and\n"
			    "keep each workload's peak TCP established-hash sockets (TIME_WAIT included)\n"
			    "and bound UDP sockets in HISTORY/history, the peaks `auto` sizes from\n"
			    "(HISTORY: /var/lib/nshash beside the default state dir, else STATE_DIR).\n"
			    "A mark counts only when it holds that netns's id (a stale one is removed),\n"
			    "and marks of netns gone are removed.  A damaged history file is repaired\n"
			    "with a warning.  Run every minute by nshash-record.timer.\n";

static int record_command(const char *state_dir, bool json)
{
	struct nshash_error err = {0};
	struct nshash_stats_netns *v = NULL;
	size_t n = 0;
	struct nshash_stats_opts opts = {.state_dir = state_dir};
	struct timespec began;
	clock_gettime(CLOCK_REALTIME, &began);
	if (nshash_stats_scan(&opts, &v, &n, &err) < 0)
		return cli_fail(EXIT_FAIL, "record: %s", err.msg);
	/* each netns with a mark whose id is that netns's (a stale mark of a
	 * netns gone whose inode the kernel gave to this one is dropped) */
	struct nsh_history_sample *samples = calloc(n ? n : 1, sizeof(*samples));
	char(*keys)[NSH_WORKLOAD_KEY_MAX] = calloc(n ? n : 1, sizeof(*keys));
	if (!samples || !keys) {
		free(samples);
		free(keys);
		free(v);
		return cli_fail(EXIT_FAIL, "record: out of memory");
	}
	size_t sampled = 0;
	for (size_t i = 0; i < n; i++) {
		char probe[NSH_WORKLOAD_KEY_MAX];
		struct nshash_error merr = {0};
		if (nsh_workload_read(state_dir, v[i].dev, v[i].inode, probe, sizeof(probe)) < 0)
			continue;
		int m = nsh_workload_of(state_dir, &v[i], keys[sampled], sizeof(keys[sampled]), true, &merr);
		if (m < 0)
			fprintf(stderr, "nshash: warning: record: %s\n", merr.msg);
		if (m != 1)
			continue;
		samples[sampled] = (struct nsh_history_sample){keys[sampled], v[i].sockets.tcp, v[i].sockets.udp};
		sampled++;
	}
	char warn[4500] = "";
	size_t workloads = 0;
	int r = nsh_history_add(state_dir, samples, sampled, warn, sizeof(warn), &workloads, &err);
	free(samples);
	free(keys);
	if (warn[0])
		fprintf(stderr, "nshash: warning: record: %s\n", warn);
	nsh_workload_reap(state_dir, v, n, began);
	free(v);
	if (r < 0)
		return cli_fail(EXIT_FAIL, "record: %s", err.msg);
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "netns", json_object_new_int64((int64_t)n));
		json_object_object_add(o, "sampled", json_object_new_int64((int64_t)sampled));
		json_object_object_add(o, "workloads", json_object_new_int64((int64_t)workloads));
		cli_print_json(o);
	} else {
		printf("sampled %zu of %zu netns; %zu workloads in the history\n", sampled, n, workloads);
	}
	return EXIT_OK;
}

static int cmd_record(struct cli *c, int argc, char **argv)
{
	if (argc > 0)
		return cli_fail(EXIT_USAGE, "record: takes no arguments");
	(void)argv;
	return record_command(c->state_dir, c->json);
}

const struct command cli_cmd_record = {"record", cmd_record, BIT(OPT_JSON), record_usage};
