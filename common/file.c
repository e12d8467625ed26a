/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading whole files and streams into memory, bounded; sweeping the
 * temporary files of writers killed before their rename. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int nsh_read_file_stat(const char *path, size_t max, char **out, size_t *out_len, struct stat *st,
		       struct nshash_error *err)
{
	return nsh_read_file_flags(path, 0, max, out, out_len, st, err);
}

int nsh_read_file_flags(const char *path, int oflags, size_t max, char **out, size_t *out_len, struct stat *st,
			struct nshash_error *err)
{
	struct stat scratch;
	char fdpath[64];
	int r;

	if (!st)
		st = &scratch;
	/* O_PATH first: a FIFO would block the read, a device's driver would
	 * run; only a regular file is opened for reading, the same inode. */
	int pfd = open(path, O_PATH | O_CLOEXEC | oflags);
	if (pfd < 0 || fstat(pfd, st) < 0) {
		r = nsh_error_sys(err, errno, "read %s", path);
		goto out;
	}
	if (S_ISDIR(st->st_mode)) {
		r = nsh_error_sys(err, EISDIR, "read %s", path);
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		r = nshash_error_set(err, EINVAL, "read %s: not a regular file (%s)", path,
				     nshash_file_kind(st->st_mode));
		goto out;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", pfd);
	int fd = open(fdpath, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		r = nsh_error_sys(err, errno, "read %s", path);
		goto out;
	}
	r = nsh_read_fd(fd, path, max, out, out_len, err);
	close(fd);
out:
	if (pfd >= 0)
		close(pfd);
	return r;
}

int nsh_read_file(const char *path, size_t max, char **out, size_t *out_len, struct nshash_error *err)
{
	return nsh_read_file_stat(path, max, out, out_len, NULL, err);
}

void nsh_sweep_tmp(const char *dir, const char *name, int64_t age)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[300];
	snprintf(prefix, sizeof(prefix), "%s.tmp.", name);
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (strncmp(de->d_name, prefix, strlen(prefix)) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (now - st.st_mtime >= age || st.st_mtime > now + age)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}
