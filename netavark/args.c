/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* netavark's command line, as nshash's netavark reads it (netavark.h). */
#include <stdio.h>
#include <string.h>

#include "netavark.h"

struct option_spec {
	char shrt; /* 0: none */
	const char *lng;
	bool valued;
};
static const struct option_spec known_options[] = {
    {'a', "aardvark-binary", true}, {'c', "config", true},	   {'f', "file", true},	 {'r', "rootless", true},
    {0, "firewall-driver", true},   {0, "plugin-directory", true}, {'h', "help", false}, {'V', "version", false},
};

/* The option named by `lng` (len bytes) or, with lng NULL, by `shrt`. */
static const struct option_spec *known_option(const char *lng, size_t len, char shrt)
{
	for (size_t k = 0; k < sizeof(known_options) / sizeof(known_options[0]); k++) {
		const struct option_spec *o = &known_options[k];
		if (lng ? strlen(o->lng) == len && !strncmp(lng, o->lng, len) : o->shrt && o->shrt == shrt)
			return o;
	}
	return NULL;
}

void nsh_netavark_cmdline_parse(int argc, char **argv, struct nsh_netavark_cmdline *c)
{
	memset(c, 0, sizeof(*c));
	bool positional_only = false;
	const char *operands[2] = {NULL, NULL};
	int nops = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (positional_only || a[0] != '-' || !strcmp(a, "-")) {
			if (!c->cmd)
				c->cmd = a;
			else if (nops < 2)
				operands[nops++] = a;
			else
				return; /* a third operand: not understood */
			continue;
		}
		if (!strcmp(a, "--")) {
			positional_only = true;
			continue;
		}
		if (c->cmd)
			return; /* an option of the subcommand (setup -h): netavark's */
		const struct option_spec *o;
		const char *value = NULL;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			o = known_option(a + 2, eq ? (size_t)(eq - (a + 2)) : strlen(a + 2), 0);
			if (!o || (eq && !o->valued))
				return;
			value = eq ? eq + 1 : NULL;
		} else {
			o = known_option(NULL, 0, a[1]);
			if (!o || (a[2] && !o->valued))
				return;
			value = a[2] ? a + 2 + (a[2] == '=') : NULL;
		}
		if (o->valued && !value) {
			if (i + 1 >= argc)
				return;
			value = argv[++i];
		}
		if (o->shrt == 'f')
			c->file = value;
		if (o->shrt == 'r')
			c->rootless = value;
	}
	if (!c->cmd)
		return;
	c->netns = operands[0];
	/* setup and teardown take one operand exactly */
	if ((!strcmp(c->cmd, "setup") || !strcmp(c->cmd, "teardown")) && (nops != 1))
		return;
	c->understood = true;
}

/* NETNS where podman pins a rootful container's netns: /run/netns/NAME,
 * NAME one component (podman's netns-UUID). */
bool nsh_netavark_under_run_netns(const char *netns)
{
	const char *dir = NSHASH_NETNS_RUN_DIR "/";
	size_t n = strlen(dir);
	if (strncmp(netns, dir, n))
		return false;
	const char *name = netns + n;
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}
