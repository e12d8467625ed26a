/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI_* environment. */
#include <stdlib.h>
#include <string.h>

#include "cni.h"

void nshash_cni_env_from_environ(struct nshash_cni_env *env)
{
	env->command = getenv("CNI_COMMAND");
	env->containerid = getenv("CNI_CONTAINERID");
	env->netns = getenv("CNI_NETNS");
	env->ifname = getenv("CNI_IFNAME");
	env->args = getenv("CNI_ARGS");
	env->path = getenv("CNI_PATH");
}

static const struct {
	const char *name;
	enum nshash_cni_command command;
} commands[] = {
    {"ADD", NSHASH_CNI_ADD},	   {"DEL", NSHASH_CNI_DEL}, {"CHECK", NSHASH_CNI_CHECK},
    {"STATUS", NSHASH_CNI_STATUS}, {"GC", NSHASH_CNI_GC},   {"VERSION", NSHASH_CNI_VERSION},
};

int nshash_cni_env_check(const struct nshash_cni_env *env, enum nshash_cni_command *command,
			 struct nshash_cni_failure *err)
{
	if (!env->command || !*env->command)
		return nshash_cni_fail(err, NSHASH_CNI_E_ENV, NULL,
				       "required environment variable CNI_COMMAND is missing or empty");
	size_t i;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(env->command, commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return nshash_cni_fail(
		    err, NSHASH_CNI_E_ENV, NULL,
		    "CNI_COMMAND=\"%.64s\" is not a CNI command (ADD, DEL, CHECK, STATUS, GC, VERSION)", env->command);
	*command = commands[i].command;

	/* The spec: ADD and CHECK need the container, netns and interface;
	 * DEL does not need the netns; STATUS, GC and VERSION only the command. */
	bool need_id = *command == NSHASH_CNI_ADD || *command == NSHASH_CNI_CHECK || *command == NSHASH_CNI_DEL;
	bool need_netns = *command == NSHASH_CNI_ADD || *command == NSHASH_CNI_CHECK;
	char missing[256] = "";
	if (need_id && (!env->containerid || !*env->containerid))
		nsh_append(missing, sizeof(missing), "%sCNI_CONTAINERID", *missing ? ", " : "");
	if (need_netns && (!env->netns || !*env->netns))
		nsh_append(missing, sizeof(missing), "%sCNI_NETNS", *missing ? ", " : "");
	if (need_id && (!env->ifname || !*env->ifname))
		nsh_append(missing, sizeof(missing), "%sCNI_IFNAME", *missing ? ", " : "");
	if (*missing)
		return nshash_cni_fail(err, NSHASH_CNI_E_ENV, NULL,
				       "required environment variable%s missing or empty for %s: %s",
				       strchr(missing, ',') ? "s" : "", env->command, missing);
	if (need_netns && env->netns[0] != '/')
		return nshash_cni_fail(err, NSHASH_CNI_E_ENV, NULL, "CNI_NETNS=\"%.256s\" is not an absolute path",
				       env->netns);
	return 0;
}
