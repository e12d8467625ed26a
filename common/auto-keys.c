/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto`'s workload keys (docs/auto.md): "FRONTEND:SCOPE:NAME", their
 * checks, how they are shown and written (printable ASCII but space, '%'
 * and '\\' kept, the rest %XX), and pod owner names. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auto.h"

/* Keys: printable ASCII but space, '%' and '\\' kept; the rest %XX. */
static size_t key_escape(const char *key, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)key; *p && o + 4 < len; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '%' && *p != '\\') {
			buf[o++] = (char)*p;
		} else {
			buf[o++] = '%';
			buf[o++] = hex[*p >> 4];
			buf[o++] = hex[*p & 15];
		}
	}
	buf[o] = '\0';
	return o;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int nsh_workload_unescape(const char *in, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = in; *p; p++) {
		if (o + 1 >= len)
			return -1;
		if (*p == '%') {
			int a = unhex(p[1]), b = a < 0 ? -1 : unhex(p[2]);
			if (b < 0 || (a == 0 && b == 0))
				return -1;
			out[o++] = (char)(a * 16 + b);
			p += 2;
		} else if ((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f && *p != '\\') {
			out[o++] = *p;
		} else {
			return -1;
		}
	}
	out[o] = '\0';
	return o ? 0 : -1;
}

size_t nsh_workload_show(const char *key, char *buf, size_t len)
{
	return key_escape(key, buf, len);
}

/* name: at most max bytes, no control character */
static int name_check(const char *name, size_t max, struct nshash_error *err)
{
	if (!name || !*name)
		return nshash_error_set(err, EINVAL, "workload key: empty name");
	size_t n = strlen(name);
	if (n > max) {
		char shown[64];
		nshash_quote(name, shown, sizeof(shown));
		return nshash_error_set(
		    err, ENAMETOOLONG,
		    "workload key %s: %zu bytes, at most %u (set io.nshash.workload to a shorter key)", shown, n,
		    NSH_WORKLOAD_NAME_MAX);
	}
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			char shown[64];
			nshash_quote(name, shown, sizeof(shown));
			return nshash_error_set(
			    err, EINVAL, "workload key %s: control characters are not allowed (use printable text)",
			    shown);
		}
	return 0;
}

int nsh_workload_check(const char *value, struct nshash_error *err)
{
	return name_check(value, NSH_WORKLOAD_NAME_MAX, err);
}

int nsh_workload_key(const char *frontend, const char *scope, const char *name, char *out, size_t len,
		     struct nshash_error *err)
{
	/* name: a front-end's prefix ("w=", "image=", ...) and a value of at
	 * most NSH_WORKLOAD_NAME_MAX (nsh_workload_check, or cut to it) */
	int r = name_check(name, NSH_WORKLOAD_NAME_MAX + NSH_WORKLOAD_PREFIX_MAX, err);
	if (r < 0)
		return r;
	/* the front-end and the scope end at the first ':' of their own part:
	 * neither may hold one, so a name cannot reach into another scope */
	int w = snprintf(out, len, "%s:%s:%s", frontend, scope ? scope : "", name);
	if (w < 0 || (size_t)w >= len)
		return nshash_error_set(err, ENAMETOOLONG, "workload key: too long");
	return 0;
}

/* K8S_POD_NAME without what controllers generate: a Deployment's pod
 * NAME-<pod-template-hash>-<5 chars> (hash 1..10 of [bcdfghjklmnpqrstvwxz2456789]),
 * a ReplicaSet's, DaemonSet's or Job's NAME-<5 chars>, a StatefulSet's
 * NAME-<ordinal>.  Anything else is kept whole. */
static bool rand_chars(const char *s, size_t n)
{
	static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(alnum, s[i]) || s[i] == '\0')
			return false;
	return true;
}

void nsh_pod_owner(const char *pod, char *out, size_t len)
{
	snprintf(out, len, "%s", pod);
	size_t n = strlen(out);
	char *dash = strrchr(out, '-');
	if (!dash || dash == out)
		return;
	size_t tail = n - (size_t)(dash + 1 - out);
	if (tail == 5 && rand_chars(dash + 1, 5)) {
		*dash = '\0';
		char *d2 = strrchr(out, '-');
		if (d2 && d2 != out) {
			size_t h = strlen(d2 + 1);
			if (h >= 1 && h <= 10 && rand_chars(d2 + 1, h))
				*d2 = '\0';
		}
		return;
	}
	bool digits = tail > 0 && tail <= 9;
	for (size_t i = 0; digits && i < tail; i++)
		digits = dash[1 + i] >= '0' && dash[1 + i] <= '9';
	if (digits)
		*dash = '\0';
}
