/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Finding the real OCI runtime the wrapper execs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

static bool find_in_path(const char *name, const char *self, char *out, size_t outlen)
{
	static const char fallback[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	const char *paths[2] = {getenv("PATH"), fallback};

	for (int k = 0; k < 2; k++) {
		const char *p = paths[k];
		while (p && *p) {
			const char *end = strchrnul(p, ':');
			if (end > p && (size_t)snprintf(out, outlen, "%.*s/%s", (int)(end - p), p, name) < outlen &&
			    access(out, X_OK) == 0 && !same_file(out, self))
				return true;
			p = *end ? end + 1 : end;
		}
	}
	return false;
}

int nshash_runtime_find(const struct nshash_policy *policy, const char *self, char *out, size_t outlen,
			struct nshash_error *err)
{
	const char *want = policy->runtime;

	if (want[0] == '/') {
		if (access(want, X_OK) < 0)
			return nshash_error_set(err, errno, "runtime %s (policy %s): %s", want, policy->source,
						strerror(errno));
		if (same_file(want, self))
			return nshash_error_set(err, ELOOP, "runtime %s (policy %s) is nshash-runtime itself", want,
						policy->source);
		snprintf(out, outlen, "%s", want);
		return 0;
	}
	if (want[0]) {
		if (find_in_path(want, self, out, outlen))
			return 0;
		return nshash_error_set(err, ENOENT, "runtime \"%s\" (policy %s): not found in PATH", want,
					policy->source);
	}
	if (find_in_path("runc", self, out, outlen) || find_in_path("crun", self, out, outlen))
		return 0;
	return nshash_error_set(
	    err, ENOENT, "no OCI runtime found: neither runc nor crun is in PATH; set \"runtime\" in the policy (%s)",
	    policy->source);
}
