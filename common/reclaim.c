/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every hook, wrapper and plugin run does on its way out: reclaim
 * orphan container pins and drop the ledger's gone records, rate-limited
 * (nshash_reclaim), so that a container whose create failed after its
 * netns was pinned leaks nothing for long without an operator. */
#include <stdio.h>

#include "common.h"

int nsh_reclaim_orphans(const char *state_dir, int64_t stale_age, int64_t interval, char *msg, size_t len)
{
	struct nshash_reclaim_opts o = {.state_dir = state_dir,
					.min_age = stale_age,
					.interval = interval,
					.max_scan_ms = NSHASH_RECLAIM_MAX_SCAN_MS};
	struct nshash_reclaim_report rep;
	struct nshash_error err = {0};
	if (nshash_reclaim(&o, &rep, &err) < 0) {
		snprintf(msg, len, "reclaim orphan pins (not fatal): %s", err.msg);
		return 1;
	}
	if (rep.incomplete) {
		snprintf(msg, len,
			 "reclaim orphan pins: the /proc scan took longer than %u ms, could not read every "
			 "process (CAP_SYS_PTRACE), or would not see every process from this PID namespace "
			 "(the state dir's pidns names the one its creations ran in); nothing removed this time",
			 NSHASH_RECLAIM_MAX_SCAN_MS);
		return 1;
	}
	/* the user namespace pins of those netns pins follow them (the
	 * precreate hook's, STATE/userns/NAME) */
	int userns = rep.ran ? nshash_userns_sweep(state_dir, stale_age, &err) : 0;
	if (userns < 0) {
		snprintf(msg, len, "sweep user namespace pins (not fatal): %s", err.msg);
		return 1;
	}
	if (!rep.ran || (!rep.orphans_removed && !rep.ledger_dropped && !userns))
		return 0;
	snprintf(msg, len,
		 "reclaimed %zu orphan container pin(s) of %zu under %s/pins (no thread or fd held them), dropped %zu "
		 "ledger record(s); table memory now %llu bytes in %zu netns",
		 rep.orphans_removed, rep.pins_seen, state_dir, rep.ledger_dropped, (unsigned long long)rep.usage.bytes,
		 rep.usage.netns);
	if (userns > 0)
		nsh_append(msg, len, "; removed %d user namespace pin(s) under %s/userns whose netns pin is gone",
			   userns, state_dir);
	return 1;
}
