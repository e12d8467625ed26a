/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Checks of paths that come from configuration. */
#include <string.h>

#include "common.h"

bool nsh_path_has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}
