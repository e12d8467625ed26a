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

const char record_usage[] = "Usage: nshash record [-j|--json]\n"
			    "Sample the sockets of every network namespace nshash sized for a workload\n"
			    "(io.nshash.workload or the front-end's key, see nshash(8) AUTO SIZES) and\n"
			    "keep each workload's peak TCP established-hash sockets (TIME_WAIT included)\n"
			    "and bound UDP sockets in HISTORY/history, the peaks `auto` sizes from\n"
			    "(HISTORY: /var/lib/nshash beside the default state dir, else STATE_DIR).\n"
			    "A damaged history file is repaired with a warning.  Run every minute by\n"
			    "nshash-record.timer.\n";

/* Marks of netns the scan did not see, made before it began (one made
 * while it ran belongs to a netns it may have missed: kept for the next
 * run), and temporary files a killed writer left a minute ago or more. */
static void drop_stale_marks(const char *state_dir, const struct nshash_stats_netns *v, size_t n, time_t began)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/%s", state_dir ? state_dir : NSHASH_DEFAULT_STATE_DIR, NSH_WORKLOAD_DIR);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned long long dev, ino;
		char tail;
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_mtime >= began)
			continue;
		int fields = sscanf(de->d_name, "%llu-%llu%c", &dev, &ino, &tail);
		if (fields == 3 && strstr(de->d_name, ".tmp.") && st.st_mtime + 60 <= began) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (fields != 2)
			continue;
		bool live = false;
		for (size_t i = 0; i < n && !live; i++)
			live = v[i].dev == dev && v[i].inode == ino;
		if (!live)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int record_command(const char *state_dir, bool json)
{
	struct nshash_error err = {0};
	struct nshash_stats_netns *v = NULL;
	size_t n = 0;
	struct nshash_stats_opts opts = {.state_dir = state_dir};
	time_t began = time(NULL);
	if (nshash_stats_scan(&opts, &v, &n, &err) < 0)
		return fail(EXIT_FAIL, "record: %s", err.msg);
	struct nsh_history h;
	char warn[4500];
	if (nsh_history_load(state_dir, &h, warn, sizeof(warn), &err) < 0) {
		free(v);
		return fail(EXIT_FAIL, "record: %s", err.msg);
	}
	if (warn[0])
		fprintf(stderr, "nshash: warning: record: %s\n", warn);
	int64_t now = (int64_t)time(NULL);
	size_t sampled = 0;
	for (size_t i = 0; i < n; i++) {
		char key[NSH_WORKLOAD_KEY_MAX];
		if (nsh_workload_read(state_dir, v[i].dev, v[i].inode, key, sizeof(key)) < 0)
			continue;
		if (nsh_history_sample(&h, key, v[i].sockets.tcp, v[i].sockets.udp, now, &err) < 0) {
			nsh_history_free(&h);
			free(v);
			return fail(EXIT_FAIL, "record: %s", err.msg);
		}
		sampled++;
	}
	drop_stale_marks(state_dir, v, n, began);
	free(v);
	int r = nsh_history_save(state_dir, &h, &err);
	size_t workloads = h.n;
	nsh_history_free(&h);
	if (r < 0)
		return fail(EXIT_FAIL, "record: %s", err.msg);
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "netns", json_object_new_int64((int64_t)n));
		json_object_object_add(o, "sampled", json_object_new_int64((int64_t)sampled));
		json_object_object_add(o, "workloads", json_object_new_int64((int64_t)workloads));
		print_json(o);
	} else {
		printf("sampled %zu of %zu netns; %zu workloads in the history\n", sampled, n, workloads);
	}
	return EXIT_OK;
}

static int cmd_record(struct cli *c, int argc, char **argv)
{
	if (argc > 0)
		return fail(EXIT_USAGE, "record: takes no arguments");
	(void)argv;
	return record_command(c->state_dir, c->json);
}

const struct command record_cmd = {"record", cmd_record, BIT(OPT_JSON), record_usage};
