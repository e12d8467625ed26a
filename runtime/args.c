/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The wrapper's argv, parsed with runc's conventions. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

static bool opt_is(const char *arg, const char *name, const char **inline_val)
{
	/* accepts -name, --name, -name=V, --name=V (Go's flag syntax) */
	size_t n = strlen(name);
	if (arg[0] != '-')
		return false;
	arg += arg[1] == '-' ? 2 : 1;
	if (strncmp(arg, name, n) != 0)
		return false;
	if (arg[n] == '\0') {
		*inline_val = NULL;
		return true;
	}
	if (arg[n] == '=') {
		*inline_val = arg + n + 1;
		return true;
	}
	return false;
}

static bool opt_in(const char *arg, const char *const *names, const char **inline_val)
{
	for (; *names; names++)
		if (opt_is(arg, *names, inline_val))
			return true;
	return false;
}

/* Global options before the subcommand (runc's: --root is kept, the
 * others' values skipped).  The index of the subcommand (argc = none), or
 * -errno. */
static const char *const global_val[] = {"root", "log", "log-format", "criu", "rootless", "cgroup-manager", NULL};

static int parse_global(int argc, char *const argv[], struct nsh_runtime_args *a, struct nshash_error *err)
{
	const char *v;
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (arg[0] != '-' || !strcmp(arg, "-"))
			break;
		if (!strcmp(arg, "--"))
			return i + 1;
		if (opt_in(arg, global_val, &v)) {
			if (!v) {
				if (i + 1 >= argc)
					return nshash_error_set(err, EINVAL, "option %s needs a value", arg);
				v = argv[++i];
			}
			if (opt_is(arg, "root", &(const char *){NULL}))
				a->root = v;
		}
	}
	return i;
}

/* The subcommand's options (create/run: --bundle kept, the others' values
 * skipped; --force, --detach) and its first operand, the container id. */
static int parse_subcommand(int argc, char *const argv[], int i, struct nsh_runtime_args *a, struct nshash_error *err)
{
	static const char *const create_val[] = {
	    "bundle", "b", "console-socket", "pid-file", "preserve-fds", "pidfd-socket", "config", "f", NULL};
	bool create = !strcmp(a->subcommand, "create") || !strcmp(a->subcommand, "run");
	bool options = true;
	const char *v, *dummy;

	for (i++; i < argc; i++) {
		const char *arg = argv[i];
		if (options && !strcmp(arg, "--")) {
			options = false;
			continue;
		}
		if (!options || arg[0] != '-' || !arg[1]) {
			if (!a->id)
				a->id = arg;
			continue;
		}
		if (create && opt_in(arg, create_val, &v)) {
			bool inline_ = v != NULL;
			if (!v) {
				if (i + 1 >= argc)
					return nshash_error_set(err, EINVAL, "%s: option %s needs a value",
								a->subcommand, arg);
				v = argv[++i];
			}
			if (opt_is(arg, "bundle", &dummy) || opt_is(arg, "b", &dummy)) {
				a->bundle = v;
				a->bundle_argi = i;
				a->bundle_inline = inline_;
			} else if (opt_is(arg, "config", &dummy) || opt_is(arg, "f", &dummy)) {
				a->config = v;
				a->config_argi = i;
				a->config_inline = inline_;
			} else if (opt_is(arg, "pid-file", &dummy))
				a->pid_file = v;
		} else if (!strcmp(arg, "-f") || !strcmp(arg, "--force") || !strcmp(arg, "-force")) {
			a->force = true;
		} else if (!strcmp(arg, "-d") || !strcmp(arg, "--detach") || !strcmp(arg, "-detach")) {
			a->detach = true;
		}
	}
	if (create && a->bundle && !a->bundle[0])
		return nshash_error_set(err, EINVAL, "%s: empty --bundle", a->subcommand);
	if (create && a->config && !a->config[0])
		return nshash_error_set(err, EINVAL, "%s: empty --config", a->subcommand);
	return 0;
}

int nsh_runtime_args_parse(int argc, char *const argv[], struct nsh_runtime_args *a, struct nshash_error *err)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->subcommand_index = -1;
	i = parse_global(argc, argv, a, err);
	if (i < 0 || i >= argc)
		return i < 0 ? i : 0;
	a->subcommand_index = i;
	a->subcommand = argv[i];
	return parse_subcommand(argc, argv, i, a, err);
}

#define OWN_PREFIX "--nshash-"
#define OWN_USAGE  "nshash-runtime [--nshash-tcp=N|auto] [--nshash-udp=N|auto] [runtime options] COMMAND ..."

/* One --nshash-NAME[=V] at argv[*i] (V may be the next word). */
static int own_option(int argc, char **argv, int *i, struct nsh_runtime_defaults *d, bool seen[2],
		      struct nshash_error *err)
{
	static const char *const names[2] = {"tcp", "udp"};
	const char *arg = argv[*i], *name = arg + strlen(OWN_PREFIX), *eq = strchr(name, '='), *val;
	size_t n = eq ? (size_t)(eq - name) : strlen(name);
	int p;

	for (p = 0; p < 2; p++)
		if (n == strlen(names[p]) && !strncmp(name, names[p], n))
			break;
	if (p == 2)
		return nshash_error_set(err, EINVAL, "unknown option %.100s (known: --nshash-tcp=N, --nshash-udp=N)",
					arg);
	if (seen[p])
		return nshash_error_set(err, EINVAL, "option --nshash-%s given twice", names[p]);
	seen[p] = true;
	if (eq) {
		val = eq + 1;
	} else {
		if (*i + 1 >= argc)
			return nshash_error_set(err, EINVAL, "option --nshash-%s needs a value (--nshash-%s=N)",
						names[p], names[p]);
		val = argv[++*i];
	}
	char key[32];
	snprintf(key, sizeof(key), "--nshash-%s", names[p]);
	d->said.said[p] = true;
	if (!strcmp(val, "auto")) { /* docs/auto.md */
		*(p ? &d->auto_udp : &d->auto_tcp) = true;
		d->said.is_auto[p] = true;
		d->present = true;
		return 0;
	}
	int r = nshash_size_parse(p ? NSHASH_UDP : NSHASH_TCP, key, val, p ? &d->sizes.udp : &d->sizes.tcp, err);
	if (r < 0)
		return r;
	d->said.size[p] = p ? d->sizes.udp : d->sizes.tcp;
	d->present = true;
	return 0;
}

/* create/run take options and an id only: one of ours there was meant for
 * us (other commands, e.g. exec, carry the process's own arguments). */
static int own_option_misplaced(int argc, char **argv, int sub, struct nshash_error *err)
{
	if (sub >= argc || (strcmp(argv[sub], "create") && strcmp(argv[sub], "run")))
		return 0;
	for (int k = sub + 1; k < argc && strcmp(argv[k], "--"); k++)
		if (!strncmp(argv[k] + (argv[k][0] == '-' && argv[k][1] == '-'), &OWN_PREFIX[1],
			     strlen(OWN_PREFIX) - 1))
			return nshash_error_set(err, EINVAL,
						"option %.100s after the command %s: it must come before it (%s)",
						argv[k], argv[sub], OWN_USAGE);
	return 0;
}

int nsh_runtime_own_options(int *argc, char **argv, struct nsh_runtime_defaults *d, struct nshash_error *err)
{
	char *keep[*argc + 1];
	bool seen[2] = {false, false};
	const char *v;
	int i, o = 1, r;

	memset(d, 0, sizeof(*d));
	keep[0] = argv[0];
	for (i = 1; i < *argc; i++) {
		const char *arg = argv[i];
		if (arg[0] != '-' || !strcmp(arg, "-") || !strcmp(arg, "--"))
			break;
		if (!strncmp(arg, OWN_PREFIX, strlen(OWN_PREFIX))) {
			r = own_option(*argc, argv, &i, d, seen, err);
			if (r < 0)
				return r;
			continue;
		}
		if (!strncmp(arg, &OWN_PREFIX[1], strlen(OWN_PREFIX) - 1))
			return nshash_error_set(err, EINVAL, "option %.100s: write it with two dashes (%s)", arg,
						OWN_USAGE);
		keep[o++] = argv[i];
		if (opt_in(arg, global_val, &v) && !v && i + 1 < *argc)
			keep[o++] = argv[++i];
	}
	r = own_option_misplaced(*argc, argv, i, err);
	if (r < 0)
		return r;
	for (; i < *argc; i++)
		keep[o++] = argv[i];
	keep[o] = NULL;
	memcpy(argv, keep, (size_t)(o + 1) * sizeof(*argv));
	*argc = o;
	return 0;
}
