/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Errors as values: "what: to what: why", and untrusted input shown in them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int nshash_error_set(struct nshash_error *err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EINVAL;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->errnum = errnum;
	}
	return -errnum;
}

int nshash_error_prefix(struct nshash_error *err, const char *fmt, ...)
{
	if (!err)
		return -EINVAL;
	char prefix[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(prefix, sizeof(prefix) - 2, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(prefix) - 3)
		n = sizeof(prefix) - 3;
	memcpy(prefix + n, ": ", 3);
	size_t plen = (size_t)n + 2, olen = strnlen(err->msg, sizeof(err->msg) - 1);
	if (plen + olen >= sizeof(err->msg))
		olen = sizeof(err->msg) - 1 - plen;
	memmove(err->msg + plen, err->msg, olen);
	memcpy(err->msg, prefix, plen);
	err->msg[plen + olen] = '\0';
	return -(err->errnum ? err->errnum : EINVAL);
}

void nshash_quote(const char *text, char *buf, size_t len)
{
	size_t o = 0;
	buf[o++] = '"';
	for (const unsigned char *p = (const unsigned char *)text; *p && o + 8 < len; p++) {
		if (p - (const unsigned char *)text >= 40) {
			o += snprintf(buf + o, len - o, "...");
			break;
		}
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			o += snprintf(buf + o, len - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}
