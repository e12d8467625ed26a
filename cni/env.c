/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI_* environment. */
#include <ctype.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

void nsh_cni_env_from_environ(struct nsh_cni_env *env)
{
	env->command = getenv("CNI_COMMAND");
	env->containerid = getenv("CNI_CONTAINERID");
	env->netns = getenv("CNI_NETNS");
	env->ifname = getenv("CNI_IFNAME");
	env->args = getenv("CNI_ARGS");
	env->path = getenv("CNI_PATH");
}

bool nsh_cni_args_get(const char *args, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	for (const char *p = args; p && *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t v = n - klen - 1;
			if (len) {
				if (v >= len)
					v = len - 1;
				memcpy(out, p + klen + 1, v);
				out[v] = '\0';
			}
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	if (len)
		out[0] = '\0';
	return false;
}

static const struct {
	const char *name;
	enum nsh_cni_command command;
} commands[] = {
    {"ADD", NSH_CNI_ADD},	   {"DEL", NSH_CNI_DEL}, {"CHECK", NSH_CNI_CHECK},
    {"STATUS", NSH_CNI_STATUS}, {"GC", NSH_CNI_GC},   {"VERSION", NSH_CNI_VERSION},
};

/* The reference plugins' rules (CNI's pkg/utils): a container id is a
 * letter or digit followed by letters, digits, '_', '.', '-'. */
static int containerid_check(const char *id, struct nsh_cni_failure *err)
{
	for (const char *p = id; *p; p++) {
		bool alnum = isascii((unsigned char)*p) && isalnum((unsigned char)*p);
		if (!alnum && (p == id || (*p != '_' && *p != '.' && *p != '-')))
			return nsh_cni_fail(
			    err, NSH_CNI_E_ENV, NULL,
			    "CNI_CONTAINERID=\"%.128s\": invalid characters (a letter or digit, then "
			    "letters, digits, '_', '.', '-')",
			    id);
	}
	return 0;
}

/* Unicode white space beyond ASCII (Go's unicode.IsSpace: U+0085, U+00A0,
 * U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) starting
 * at p in UTF-8: true if one does. */
static bool utf8_space(const unsigned char *p)
{
	if (p[0] == 0xc2)
		return p[1] == 0x85 || p[1] == 0xa0;
	if (p[0] == 0xe1)
		return p[1] == 0x9a && p[2] == 0x80;
	if (p[0] == 0xe2 && p[1] == 0x80)
		return (p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf;
	if (p[0] == 0xe2)
		return p[1] == 0x81 && p[2] == 0x9f;
	return p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80;
}

/* An interface name: at most 15 bytes, not "." or "..", no '/', ':' or
 * white space (the kernel's dev_valid_name, as the reference plugins check
 * it). */
static int ifname_check(const char *name, struct nsh_cni_failure *err)
{
	if (strlen(name) > IFNAMSIZ - 1)
		return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL, "CNI_IFNAME=\"%.64s\": longer than %d bytes", name,
				       IFNAMSIZ - 1);
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL, "CNI_IFNAME=\"%s\": not an interface name", name);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p == '/' || *p == ':' || isspace(*p) || utf8_space(p))
			return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL,
					       "CNI_IFNAME=\"%s\": contains '/', ':' or white space", name);
	return 0;
}

int nsh_cni_env_check(const struct nsh_cni_env *env, enum nsh_cni_command *command,
			 struct nsh_cni_failure *err)
{
	if (!env->command || !*env->command)
		return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL,
				       "required environment variable CNI_COMMAND is missing or empty");
	size_t i;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(env->command, commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return nsh_cni_fail(
		    err, NSH_CNI_E_ENV, NULL,
		    "CNI_COMMAND=\"%.64s\" is not a CNI command (ADD, DEL, CHECK, STATUS, GC, VERSION)", env->command);
	*command = commands[i].command;

	/* The spec: ADD and CHECK need the container, netns and interface;
	 * DEL does not need the netns; STATUS, GC and VERSION only the command. */
	bool need_id = *command == NSH_CNI_ADD || *command == NSH_CNI_CHECK || *command == NSH_CNI_DEL;
	bool need_netns = *command == NSH_CNI_ADD || *command == NSH_CNI_CHECK;
	char missing[256] = "";
	if (need_id && (!env->containerid || !*env->containerid))
		nsh_append(missing, sizeof(missing), "%sCNI_CONTAINERID", *missing ? ", " : "");
	if (need_netns && (!env->netns || !*env->netns))
		nsh_append(missing, sizeof(missing), "%sCNI_NETNS", *missing ? ", " : "");
	if (need_id && (!env->ifname || !*env->ifname))
		nsh_append(missing, sizeof(missing), "%sCNI_IFNAME", *missing ? ", " : "");
	if (*missing)
		return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL,
				       "required environment variable%s missing or empty for %s: %s",
				       strchr(missing, ',') ? "s" : "", env->command, missing);
	if (need_netns && env->netns[0] != '/')
		return nsh_cni_fail(err, NSH_CNI_E_ENV, NULL, "CNI_NETNS=\"%.256s\" is not an absolute path",
				       env->netns);
	if (need_id) {
		int r = containerid_check(env->containerid, err);
		return r < 0 ? r : ifname_check(env->ifname, err);
	}
	return 0;
}
