/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

void nsh_append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* Length of the UTF-8 character at p (1..4), 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (p[0] >= 0xe0 && p[0] <= 0xef) {
		unsigned char lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		unsigned char lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

size_t nsh_prom_label(const char *s, char *buf, size_t len)
{
	size_t j = 0;
	if (!len)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char tmp[4];
		const char *put = tmp;
		size_t n = 0, adv = 1;
		if (*p == '\\' || *p == '"') {
			tmp[0] = '\\';
			tmp[1] = (char)*p;
			n = 2;
		} else if (*p == '\n') {
			put = "\\n";
			n = 2;
		} else if (*p < 0x20 || *p == 0x7f || !(adv = utf8_len(p))) {
			put = "\xef\xbf\xbd"; /* U+FFFD */
			n = 3;
			adv = 1;
		} else {
			put = (const char *)p;
			n = adv;
		}
		if (j + n + 1 > len)
			break;
		memcpy(buf + j, put, n);
		j += n;
		p += adv;
	}
	buf[j] = '\0';
	return j;
}
