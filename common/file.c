/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading whole files and streams into memory, bounded. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int nsh_read_file(const char *path, size_t max, char **out, size_t *out_len, struct nshash_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "read %s: %s", path, strerror(errno));
	int r = nsh_read_fd(fd, path, max, out, out_len, err);
	close(fd);
	return r;
}

int nsh_read_fd(int fd, const char *what, size_t max, char **out, size_t *out_len, struct nshash_error *err)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return nshash_error_set(err, ENOMEM, "read %s: out of memory", what);
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				free(buf);
				return nshash_error_set(err, EFBIG, "read %s: larger than %zu bytes", what, max);
			}
			cap *= 2;
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
			return nshash_error_set(err, e, "read %s: %s", what, strerror(e));
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
