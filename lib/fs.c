/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File helpers: mkdir -p, reading a whole fd, writing all of a buffer,
 * replacing a file atomically (lib/shared.h: common/ and the front-ends
 * use them too).  Depends on nothing else in lib/ but error.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
				return nsh_error_sys(err, errno, "mkdir %s", buf);
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

int nsh_read_fd(int fd, const char *what, size_t max, char **out, size_t *out_len, struct nshash_error *err)
{
	size_t cap = max < 4096 ? max : 4096, len = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return nshash_error_set(err, ENOMEM, "read %s: out of memory", what);
	for (;;) {
		if (len == cap && cap >= max) {
			/* exactly `max` bytes are fine: refuse only a byte more */
			char extra;
			ssize_t n = read(fd, &extra, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0)
				break;
			int e = n < 0 ? errno : EFBIG;
			free(buf);
			if (n < 0)
				return nsh_error_sys(err, e, "read %s", what);
			return nshash_error_set(err, EFBIG, "read %s: larger than %zu bytes", what, max);
		}
		if (len == cap) {
			cap = cap > max / 2 ? max : cap * 2;
			char *nbuf = realloc(buf, cap + 1);
			if (!nbuf) {
				free(buf);
				return nshash_error_set(err, ENOMEM, "read %s: out of memory", what);
			}
			buf = nbuf;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return nsh_error_sys(err, e, "read %s", what);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

int nsh_write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int nsh_write_replace(const char *path, const char *tmp, const char *data, size_t len, const struct stat *like,
		      struct nshash_error *err)
{
	char name[PATH_MAX + 32];
	int fd, e;

	if ((size_t)snprintf(name, sizeof(name), "%s", tmp ? tmp : path) >= sizeof(name) - 16)
		return nshash_error_set(err, ENAMETOOLONG, "write %s: path too long", path);
	if (tmp) {
		unlink(name); /* left by a writer killed before its rename */
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} else {
		strcat(name, ".nshash-XXXXXX");
		fd = mkostemp(name, O_CLOEXEC);
	}
	if (fd < 0)
		return nsh_error_sys(err, errno, "write %s: create %s", path, name);
	if (like && (fchown(fd, like->st_uid, like->st_gid) < 0 || fchmod(fd, like->st_mode & 07777) < 0))
		goto fail;
	if (nsh_write_all(fd, data, len) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(name, path) < 0)
		goto fail;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(name);
	return nsh_error_sys(err, e, "write %s", path);
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
