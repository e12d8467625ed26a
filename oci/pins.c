/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Container pins under STATE_DIR/pins: their names and removal. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "oci.h"

int nsh_oci_pin_path(const struct nsh_policy *policy, const char *name, char *out, size_t outlen,
		     struct nshash_error *err)
{
	int r = nshash_name_check("pin name", name, err);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, "%s/pins/%s", policy->state_dir, name) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "pin %s/pins/%s: path too long", policy->state_dir, name);
	return 0;
}

int nsh_oci_cleanup(const struct nsh_policy *policy, const char *pin_name, struct nshash_error *err)
{
	char path[4096];
	struct nshash_occupancy occ;
	int r = nsh_oci_pin_path(policy, pin_name, path, sizeof(path), err);
	if (r < 0)
		return r;
	/* Never take a netns from under a process: another container joined
	 * it, or the name should not have reached us. */
	if (nshash_pin_is_netns(path, NULL) == 1 && nshash_netns_occupancy(path, &occ, NULL) == 0 && occ.pid > 0) {
		nshash_error_set(err, EBUSY, "pin %s kept: process %d (%s) still uses its network namespace", path,
				 (int)occ.pid, occ.comm);
		return 1;
	}
	if (nshash_pin_is_netns(path, NULL) == 1)
		nsh_oci_auto_teardown(policy, path, NULL);
	return nshash_pin_remove(path, err);
}

int nsh_oci_wrapper_pin_name(const char *id, const char *root, char *out, size_t outlen, struct nshash_error *err)
{
	uint32_t h = 2166136261u; /* FNV-1a: a short stable tag for the runtime root */
	int r = nshash_name_check("container id", id ? id : "", err);

	if (r < 0)
		return r;
	for (const char *p = root ? root : ""; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	if (strlen(id) > 200)
		return nshash_error_set(err, ENAMETOOLONG, "container id \"%.40s...\": longer than 200 bytes", id);
	if ((size_t)snprintf(out, outlen, "%s-%08x", id, h) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "container id %s: pin name too long", id);
	return 0;
}

int nsh_oci_random_pin_name(char *out, size_t outlen, struct nshash_error *err)
{
	uint8_t b[8];
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return nsh_error_sys(err, errno ? errno : EIO, "pin name: getrandom");
	snprintf(out, outlen, "oci-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
	return 0;
}
