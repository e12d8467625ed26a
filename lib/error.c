/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Errors as values: "what: to what: why", and untrusted input shown in them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The one byte-escaping loop: bytes for which `escape` says so become
 * \xNN; stops before `limit` input bytes or when `buf` (of `len`) is full.
 * Returns the input bytes used; *o is advanced. */
static size_t escape_into(const char *text, char *buf, size_t len, size_t *o, size_t limit, bool quoting)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0;
	for (; i < limit && p[i]; i++) {
		bool esc = p[i] < 0x20 || p[i] == 0x7f || (quoting && (p[i] > 0x7f || p[i] == '"' || p[i] == '\\'));
		if (quoting ? *o + 8 >= len : *o + (esc ? 4 : 1) >= len)
			break;
		if (esc)
			*o += (size_t)snprintf(buf + *o, len - *o, "\\x%02x", p[i]);
		else
			buf[(*o)++] = (char)p[i];
	}
	buf[*o] = '\0';
	return i;
}

size_t nshash_escape(const char *text, char *buf, size_t len)
{
	size_t o = 0;
	if (len)
		escape_into(text, buf, len, &o, (size_t)-1, false);
	return o;
}

int nshash_error_set(struct nshash_error *err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EINVAL;
	if (err) {
		/* Messages carry what containers supplied: no control character
		 * reaches a log or a terminal through them (a newline would
		 * forge a log line). */
		char raw[sizeof(err->msg)];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(raw, sizeof(raw), fmt, ap);
		va_end(ap);
		nshash_escape(raw, err->msg, sizeof(err->msg));
		err->errnum = errnum;
	}
	return -errnum;
}

int nsh_error_sys(struct nshash_error *err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EINVAL;
	char what[sizeof((struct nshash_error){0}.msg)]; /* err may be NULL */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return nshash_error_set(err, errnum, "%s: %s", what, strerror(errnum));
}

int nshash_error_prefix(struct nshash_error *err, const char *fmt, ...)
{
	if (!err)
		return -EINVAL;
	char raw[512], prefix[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	int n = (int)nshash_escape(raw, prefix, sizeof(prefix) - 2);
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
	size_t used = escape_into(text, buf, len, &o, 40, true);
	if (text[used])
		o += (size_t)snprintf(buf + o, len - o, "...");
	buf[o++] = '"';
	buf[o] = '\0';
}
