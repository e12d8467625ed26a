/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CNI versions nshash speaks. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

const char *const nsh_cni_versions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL};

bool nsh_cni_version_supported(const char *version)
{
	for (int i = 0; version && nsh_cni_versions[i]; i++)
		if (strcmp(version, nsh_cni_versions[i]) == 0)
			return true;
	return false;
}

static bool version_split(const char *v, long part[3])
{
	for (int i = 0; i < 3; i++) {
		if (!v || !isdigit((unsigned char)*v))
			return false;
		char *end;
		part[i] = strtol(v, &end, 10);
		if (i < 2 && *end != '.')
			return false;
		if (i == 2 && *end != '\0')
			return false;
		v = end + 1;
	}
	return true;
}

int nsh_cni_version_cmp(const char *a, const char *b)
{
	long pa[3], pb[3];
	bool oka = version_split(a, pa), okb = version_split(b, pb);
	if (!oka || !okb)
		return (int)oka - (int)okb;
	for (int i = 0; i < 3; i++)
		if (pa[i] != pb[i])
			return pa[i] < pb[i] ? -1 : 1;
	return 0;
}
