/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File-system helpers under pin.c, netns.c and state.c (depends on nothing
 * else in lib/). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

int nsh_mkdir_p(const char *path, mode_t mode, struct nshash_error *err)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return nshash_error_set(err, ENAMETOOLONG, "mkdir %s: path too long", path);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return nshash_error_set(err, errno, "mkdir %s: %s", buf, strerror(errno));
			if (c == '\0')
				break;
			*p = c;
		}
	}
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return nshash_error_set(err, ENOTDIR, "%s: not a directory", path);
	return 0;
}
