/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Finding the real OCI runtime the wrapper execs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

/* The first executable `name` in an absolute PATH entry (then in the
 * usual directories), never nshash-runtime itself.  A relative entry (an
 * empty one is ".") would make the runtime depend on the caller's current
 * directory, which the bundle's owner may choose: skipped, like Go's
 * exec.LookPath (runc) refusing results in "."; the first match it would
 * have given goes into *skipped (NUL-terminated, may be cut) for the
 * message when nothing else is found. */
static bool find_in_path(const char *name, const char *self, char *out, size_t outlen, char *skipped,
			 size_t skippedlen)
{
	static const char fallback[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	const char *paths[2] = {getenv("PATH"), fallback};

	for (int k = 0; k < 2; k++) {
		const char *p = paths[k];
		while (p && *p) {
			const char *end = strchrnul(p, ':');
			int n = (int)(end - p);
			if (n == 0 || p[0] != '/') {
				if (!skipped[0] && (size_t)snprintf(out, outlen, "%.*s/%s", n ? n : 1, n ? p : ".", name) <
						       outlen && access(out, X_OK) == 0)
					snprintf(skipped, skippedlen, "%s", out);
			} else if ((size_t)snprintf(out, outlen, "%.*s/%s", n, p, name) < outlen &&
				   access(out, X_OK) == 0 && !same_file(out, self)) {
				return true;
			}
			p = *end ? end + 1 : end;
		}
	}
	return false;
}

/* What the error adds when a relative PATH entry had the runtime, else "". */
static const char *skipped_note(const char *skipped, char *buf, size_t len)
{
	if (!skipped[0])
		return "";
	char shown[600];
	nshash_quote(skipped, shown, sizeof(shown));
	snprintf(buf, len,
		 " (a relative PATH entry gives %s, which nshash-runtime does not use: a runtime found through a "
		 "relative PATH entry depends on the current directory; put an absolute directory in PATH or an "
		 "absolute path in \"runtime\")",
		 shown);
	return buf;
}

int nsh_runtime_find(const struct nsh_policy *policy, const char *self, char *out, size_t outlen,
		     struct nshash_error *err)
{
	const char *want = policy->runtime;

	if (want[0] == '/') {
		if (access(want, X_OK) < 0)
			return nsh_error_sys(err, errno, "runtime %s (policy %s)", want, policy->source);
		if (same_file(want, self))
			return nshash_error_set(err, ELOOP, "runtime %s (policy %s) is nshash-runtime itself", want,
						policy->source);
		snprintf(out, outlen, "%s", want);
		return 0;
	}
	char skipped[PATH_MAX] = "", note[PATH_MAX + 300];
	if (want[0]) {
		if (find_in_path(want, self, out, outlen, skipped, sizeof(skipped)))
			return 0;
		return nshash_error_set(err, ENOENT, "runtime \"%s\" (policy %s): not found in PATH%s", want,
					policy->source, skipped_note(skipped, note, sizeof(note)));
	}
	if (find_in_path("runc", self, out, outlen, skipped, sizeof(skipped)) ||
	    find_in_path("crun", self, out, outlen, skipped, sizeof(skipped)))
		return 0;
	return nshash_error_set(err, ENOENT,
				"no OCI runtime found: neither runc nor crun is in PATH%s; set \"runtime\" in the "
				"policy (%s)",
				skipped_note(skipped, note, sizeof(note)), policy->source);
}
