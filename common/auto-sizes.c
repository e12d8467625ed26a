/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto` sizes (docs/auto.md): the rule that turns a workload's recorded
 * peak into a size, and the steps every front-end takes with it -- the
 * sizes for a workload at a start, the mark of the netns sized for it,
 * its last sample at a teardown.  Declared in auto.h with the pieces:
 * auto-keys.c (workload keys), auto-history.c (the peaks file),
 * auto-index.c (its index), auto-marks.c (which netns is whose). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auto.h"

uint32_t nsh_auto_size(enum nshash_proto proto, long peak, uint32_t cap)
{
	uint64_t want = peak > 0 ? (uint64_t)peak * 2 : 0;
	uint64_t size = NSH_AUTO_MIN;
	uint64_t max = nshash_proto_max(proto);
	if (cap && cap < max) {
		/* the kernel rounds a size up to a power of two: the largest one
		 * within the cap, or the shared tables when none is */
		max = 1;
		while (max * 2 <= cap)
			max <<= 1;
		if (max < NSH_AUTO_MIN)
			return 0;
	}
	while (size < want && size < max)
		size <<= 1;
	return (uint32_t)(size < max ? size : max);
}

struct nshash_sizes nsh_auto_resolve(const struct nsh_history *h, const char *key, const struct nsh_policy *policy,
				     bool tcp_auto, bool udp_auto, struct nshash_sizes asked, int64_t now, bool *known)
{
	struct nshash_sizes s = asked;
	const struct nsh_history_entry *e = key ? nsh_history_find((struct nsh_history *)h, key) : NULL;
	*known = e != NULL;
	if (tcp_auto)
		s.tcp = e ? nsh_auto_size(NSHASH_TCP, nsh_history_peak_now(e, NSHASH_TCP, now), policy->max.tcp)
			  : policy->auto_initial.tcp;
	if (udp_auto)
		s.udp = e ? nsh_auto_size(NSHASH_UDP, nsh_history_peak_now(e, NSHASH_UDP, now), policy->max.udp)
			  : policy->auto_initial.udp;
	return s;
}

int nsh_auto_sizes(const char *state_dir, const char *key, const struct nsh_policy *policy, bool tcp, bool udp,
		   struct nshash_sizes *sizes, const char *who, struct nshash_error *err)
{
	struct nsh_history h = {0};
	char warn[4500] = "";
	if (key[0] && nsh_history_load_key(state_dir, key, &h, warn, sizeof(warn), err) < 0)
		return err->errnum ? -err->errnum : -ENOMEM;
	if (warn[0])
		nsh_log(NSH_LOG_WARN, who, "%s", warn);
	bool known = false;
	*sizes = nsh_auto_resolve(&h, key[0] ? key : NULL, policy, tcp, udp, *sizes, (int64_t)time(NULL), &known);
	nsh_history_free(&h);
	char shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
	nsh_workload_show(key, shown, sizeof(shown));
	nsh_log(NSH_LOG_INFO, who, "auto: workload %s %s: tcp=%u udp=%u", key[0] ? shown : "(none)",
		known ? "from its history" : "has no history, initial sizes", sizes->tcp, sizes->udp);
	return 0;
}

void nsh_auto_mark(const char *state_dir, int nsfd, const char *key, const char *who)
{
	struct nshash_error err = {0};
	if (nsh_workload_mark_fd(state_dir, nsfd, key, &err) < 0)
		nsh_log(NSH_LOG_WARN, who, "auto: %s: the workload is not recorded", err.msg);
}

void nsh_auto_teardown(const char *state_dir, int nsfd, const char *who, const char *when)
{
	struct nshash_error err = {0};
	char key[NSH_WORKLOAD_KEY_MAX], shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
	int r = nsh_workload_teardown(state_dir, nsfd, key, sizeof(key), &err);
	if (r < 0) {
		nsh_log(NSH_LOG_WARN, who, "auto: %s: its last sample is not recorded", err.msg);
	} else if (r > 0) {
		nsh_workload_show(key, shown, sizeof(shown));
		nsh_log(NSH_LOG_INFO, who, "auto: workload %s: sampled at %s", shown, when);
	}
}
