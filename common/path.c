/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one check of directory and file paths that come from configuration
 * (the policy's stateDir, hookPath, logFile; the CNI config's stateDir). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* The uid that `uid` maps to outside the user namespace (itself in the
 * initial one); *initial says whether this is the initial namespace. */
static uid_t outer_uid(uid_t uid, bool *initial)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;
	uid_t found = uid;

	*initial = true;
	if (!f)
		return uid;
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
		if (!(inside == 0 && outside == 0 && count == 4294967295UL))
			*initial = false;
		if (uid >= inside && uid - inside < count)
			found = (uid_t)(outside + (uid - inside));
	}
	fclose(f);
	return found;
}

void nsh_default_state_dir(char *out, size_t len)
{
	bool initial;
	uid_t uid = outer_uid(geteuid(), &initial);
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (initial && geteuid() == 0)
		snprintf(out, len, "%s", NSHASH_DEFAULT_STATE_DIR);
	else if (xdg && xdg[0] == '/' && !nsh_path_unclean(xdg))
		snprintf(out, len, "%s/nshash", xdg);
	else
		snprintf(out, len, "/run/user/%u/nshash", (unsigned)uid);
}

const char *nsh_path_unclean(const char *path)
{
	if (path[0] != '/')
		return "is not an absolute path";
	if (strlen(path) >= PATH_MAX)
		return "is too long";
	for (const char *p = path; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "contains a control character";
		if (p[0] != '/')
			continue;
		if (p[1] == '/')
			return "contains \"//\"";
		if (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))
			return "contains \"..\"";
		if (p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			return "contains a \".\" component";
		if (p[1] == '\0' && p != path)
			return "ends with \"/\"";
	}
	return NULL;
}
