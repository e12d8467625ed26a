/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Dropping capabilities: the hook and the CNI plugin run as root on
 * hostile input and keep only what their work needs. */
#include <errno.h>
#include <string.h>
#include <sys/capability.h>

#include "common.h"

int nsh_caps_keep(const int *keep, size_t n, struct nshash_error *err)
{
	cap_t now = cap_get_proc(), want = cap_init();
	int r = 0;
	if (!now || !want) {
		r = nsh_error_sys(err, errno, "drop capabilities");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		cap_value_t c = keep[i];
		cap_flag_value_t held = CAP_CLEAR;
		if (cap_get_flag(now, c, CAP_PERMITTED, &held) == 0 && held == CAP_SET &&
		    (cap_set_flag(want, CAP_PERMITTED, 1, &c, CAP_SET) < 0 ||
		     cap_set_flag(want, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0)) {
			r = nsh_error_sys(err, errno, "drop capabilities");
			goto out;
		}
	}
	/* inheritable empty; the kernel clears ambient bits no longer permitted */
	if (cap_set_proc(want) < 0)
		r = nsh_error_sys(err, errno, "drop capabilities");
out:
	if (now)
		cap_free(now);
	if (want)
		cap_free(want);
	return r;
}
