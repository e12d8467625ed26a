/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one check of directory and file paths that come from configuration
 * (the policy's stateDir, hookPath, logFile; the CNI config's stateDir). */
#include <limits.h>
#include <string.h>

#include "common.h"

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
	}
	return NULL;
}
