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
