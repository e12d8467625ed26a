/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-runtime: an OCI runtime wrapper called exactly like runc.  On
 * create/run it sizes the container's netns from its io.nshash.*
 * annotations (the transform of the precreate hook) and starts the real
 * runtime with the argv untouched, reading the sized config through a bind
 * mount in a private mount namespace: the user's bundle is never written,
 * and no hook runs.  After create the pin goes (the container's processes
 * hold the netns).  On delete a pin a killed wrapper or an older version
 * left is removed once no process uses it.  Everything else is a pure exec;
 * the runtime's exit status is always the wrapper's.
 * Policy file: $NSHASH_POLICY, else /etc/nshash/nshash.json. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

static const char *log_path, *log_format;

__attribute__((noreturn)) static void die(const char *id, const char *msg)
{
	nshash_log(NSHASH_LOG_ERROR, id, "%s", msg);
	exit(1);
}

/* --log / --log-format from the global options, for runc-style error logs. */
static void find_log(int argc, char **argv, int stop)
{
	for (int i = 1; i < stop && i < argc; i++) {
		const char *a = argv[i] + (argv[i][0] == '-' && argv[i][1] == '-');
		if (!strcmp(a, "-log") && i + 1 < stop)
			log_path = argv[i + 1];
		else if (!strncmp(a, "-log=", 5))
			log_path = a + 5;
		else if (!strcmp(a, "-log-format") && i + 1 < stop)
			log_format = argv[i + 1];
		else if (!strncmp(a, "-log-format=", 12))
			log_format = a + 12;
	}
}

/* The runtime with the wrapper's global options and CMD ARGS... (for the
 * `delete --force` after a failed check). */
static int run_command(const char *runtime, char **argv, const struct nshash_runtime_args *args, const char *cmd,
		       const char *opt)
{
	char *cargv[args->subcommand_index + 4];
	struct nsh_runtime_child child = {.runtime = runtime, .argv = cargv};
	struct nshash_error err;
	int n = 0, status;

	cargv[n++] = (char *)runtime;
	for (int i = 1; i < args->subcommand_index; i++)
		cargv[n++] = argv[i];
	cargv[n++] = (char *)cmd;
	cargv[n++] = (char *)opt;
	cargv[n++] = (char *)args->id;
	cargv[n] = NULL;
	return nsh_runtime_run(&child, &status, &err) < 0 ? -1 : status;
}

static void drop_pin(const char *id, const char *pin_path)
{
	struct nshash_error err;

	if (nshash_pin_remove(pin_path, &err) < 0)
		nshash_log(NSHASH_LOG_WARN, id, "%s", err.msg);
}

/* The file the runtime will read: crun's --config/-f (relative to the
 * current directory, as crun takes it), else BUNDLE/config.json. */
static void config_target(const struct nshash_runtime_args *args, char *out, size_t len)
{
	const char *bundle = args->bundle ? args->bundle : ".";
	struct nshash_error err = {0};
	struct stat st;

	if (args->config) {
		snprintf(out, len, "%s", args->config);
		return;
	}
	if (stat(bundle, &st) < 0)
		nshash_error_set(&err, errno, "bundle %s: %s", bundle, strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		nshash_error_set(&err, ENOTDIR, "bundle %s: not a directory", bundle);
	else if ((size_t)snprintf(out, len, "%s/config.json", bundle) >= len)
		nshash_error_set(&err, ENAMETOOLONG, "bundle %.100s...: path too long", bundle);
	if (err.msg[0])
		die(args->id, err.msg);
}

/* Read the config; heal what an older wrapper left in it (rewriting the
 * file once).  The text to transform, malloc'd. */
static char *read_config(const char *id, const char *bundle, const char *target, const struct nshash_policy *policy,
			 size_t *len)
{
	struct nshash_error err = {0};
	char *text, *healed, what[600];
	size_t healed_len;
	int r = nsh_read_file(target, NSHASH_OCI_CONFIG_MAX_BYTES, &text, len, &err);

	if (r < 0) {
		if (bundle)
			nshash_error_prefix(&err, "bundle %s", bundle);
		die(id, err.msg);
	}
	/* cheap test first: a leftover names a pin */
	if (!memmem(text, *len, "/pins/", 6) &&
	    !memmem(text, *len, NSHASH_ANNOTATION_PIN, strlen(NSHASH_ANNOTATION_PIN)))
		return text;
	r = nsh_oci_heal(text, *len, policy, &healed, &healed_len, what, sizeof(what), &err);
	if (r <= 0) {
		if (r < 0)
			die(id, err.msg);
		return text;
	}
	char shown[PATH_MAX];
	if (!realpath(target, shown))
		snprintf(shown, sizeof(shown), "%s", target);
	if (nsh_write_replacing(target, healed, healed_len, &err) < 0)
		nshash_log(NSHASH_LOG_WARN, id, "%s (left as it was)", err.msg);
	else
		nshash_log(NSHASH_LOG_INFO, id, "healed %s: removed what an older nshash-runtime left there (%s)",
			   shown, what);
	free(text);
	*len = healed_len;
	return healed;
}

/* After create / run --detach: the init must be in the pin's netns.  With
 * no pid file the runtime is trusted to have joined the path it was given. */
static int check_init(const char *pid_file, const struct stat *pin, struct nshash_error *err)
{
	char *text, path[64];
	size_t len;
	struct stat st;
	long pid;

	if (!pid_file)
		return 0;
	if (nsh_read_file(pid_file, 64, &text, &len, err) < 0)
		return nshash_error_prefix(err, "check the container's netns: pid file"), -EIO;
	pid = strtol(text, NULL, 10);
	free(text);
	if (pid <= 0)
		return nshash_error_set(err, EINVAL, "check the container's netns: pid file %s holds no pid", pid_file);
	snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
	if (stat(path, &st) < 0)
		return nshash_error_set(err, errno, "check the container's netns: %s: %s", path, strerror(errno));
	if (st.st_ino != pin->st_ino || st.st_dev != pin->st_dev)
		return nshash_error_set(err, NSHASH_E_MISMATCH,
					"the container's init (pid %ld) is not in the sized netns the config named "
					"(netns inode %lu, expected %lu): the runtime did not join it",
					pid, (unsigned long)st.st_ino, (unsigned long)pin->st_ino);
	return 0;
}

/* create / run: size, start the runtime on the sized config, drop the pin. */
static int wrap_create(char **argv, const char *runtime, const struct nshash_policy *policy,
		       const struct nshash_runtime_args *args)
{
	struct nshash_error err = {0};
	struct nshash_oci_result res;
	char pin[300], target[PATH_MAX], run_dir[1100], *text, *sized;
	size_t len, sized_len;
	struct nshash_oci_opts opts = {.mode = NSHASH_OCI_WRAPPER, .policy = policy, .pin_name = pin};
	bool foreground = !strcmp(args->subcommand, "run") && !args->detach;
	struct stat pin_st;
	int status;

	if (!args->id)
		die(NULL, "create: no container id in the arguments");
	if (nshash_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0)
		die(NULL, err.msg); /* names the bad id */
	config_target(args, target, sizeof(target));
	text = read_config(args->id, args->config ? NULL : args->bundle ? args->bundle : ".", target, policy, &len);
	if (nshash_oci_transform(text, len, &opts, &sized, &sized_len, &res, &err) < 0) {
		nshash_error_prefix(&err, "%s", target);
		die(args->id, err.msg);
	}
	free(text);
	nshash_oci_log_result(args->id, &res);
	if (res.action != NSHASH_OCI_SIZED) {
		free(sized);
		if (nsh_runtime_exec(runtime, argv, &err) < 0)
			die(args->id, err.msg);
	}
	/* a pin exists from here on: every way out removes it */
	if (res.shared_propagation) {
		drop_pin(args->id, res.pin_path);
		nshash_error_set(&err, EINVAL,
				 "%s: cannot size a container that asks for shared mount propagation "
				 "(rootfsPropagation or a mount option shared/rshared): nshash-runtime hands the "
				 "runtime the sized config in a private mount namespace, where mounts cannot reach "
				 "the host; drop %s/%s, or size its netns with `nshash create` and a netns path",
				 target, NSHASH_ANNOTATION_TCP, NSHASH_ANNOTATION_UDP);
		die(args->id, err.msg);
	}
	if (stat(res.pin_path, &pin_st) < 0 || nsh_signal_noted()) {
		int sig = nsh_signal_noted();
		drop_pin(args->id, res.pin_path);
		if (sig)
			nsh_exit_as(W_EXITCODE(0, sig));
		die(args->id, "the sized netns's pin vanished");
	}
	snprintf(run_dir, sizeof(run_dir), "%s/run", policy->state_dir);
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST) {
		drop_pin(args->id, res.pin_path);
		nshash_error_set(&err, errno, "create %s: %s", run_dir, strerror(errno));
		die(args->id, err.msg);
	}
	struct nsh_runtime_child child = {
	    .runtime = runtime,
	    .argv = argv,
	    .config = sized,
	    .config_len = sized_len,
	    .target = target,
	    .run_dir = run_dir,
	};
	if (nsh_runtime_run(&child, &status, &err) < 0) {
		drop_pin(args->id, res.pin_path);
		die(args->id, err.msg);
	}
	free(sized);
	if (!foreground && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    check_init(args->pid_file, &pin_st, &err) < 0) {
		if (policy->on_failure == NSHASH_ON_FAILURE_WARN) {
			nshash_log(NSHASH_LOG_WARN, args->id, "%s (onFailure warn: container runs anyway)", err.msg);
		} else {
			run_command(runtime, argv, args, "delete", "--force");
			drop_pin(args->id, res.pin_path);
			die(args->id, err.msg);
		}
	}
	/* The container's processes hold the netns now (or it is gone). */
	drop_pin(args->id, res.pin_path);
	nsh_exit_as(status);
}

/* delete: nothing to do unless a pin named for this container is left (a
 * wrapper killed before it dropped it, an older version's): then delete,
 * and remove the pin once no process uses its netns.  Never asks `state`. */
static int wrap_delete(char **argv, const char *runtime, const struct nshash_policy *policy,
		       const struct nshash_runtime_args *args)
{
	struct nshash_error err = {0};
	struct nshash_occupancy occ;
	char pin[300], pin_path[4096];
	struct stat st;
	int status;

	if (nshash_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0 ||
	    nshash_oci_pin_path(policy, pin, pin_path, sizeof(pin_path), &err) < 0 ||
	    (lstat(pin_path, &st) < 0 && errno == ENOENT))
		return -1;
	struct nsh_runtime_child child = {.runtime = runtime, .argv = argv};
	if (nsh_runtime_run(&child, &status, &err) < 0)
		die(args->id, err.msg);
	if (nshash_pin_is_netns(pin_path, &err) != 1)
		drop_pin(args->id, pin_path); /* a stale pin file */
	else if (nshash_netns_occupancy(pin_path, &occ, &err) < 0)
		nshash_log(NSHASH_LOG_WARN, args->id, "keeping pin %s: %s", pin_path, err.msg);
	else if (occ.pid == 0)
		drop_pin(args->id, pin_path);
	nsh_exit_as(status);
}

int main(int argc, char **argv)
{
	const char *policy_path = getenv("NSHASH_POLICY");
	struct nshash_policy policy;
	struct nshash_runtime_args args;
	struct nshash_error err = {0};
	char self[PATH_MAX], runtime[PATH_MAX];
	ssize_t n;

	nsh_signals_catch();
	nshash_log_setup("nshash-runtime", NULL);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die(NULL, "readlink /proc/self/exe failed");
	self[n] = '\0';
	if (nshash_runtime_args_parse(argc, argv, &args, &err) < 0)
		die(NULL, err.msg);
	find_log(argc, argv, args.subcommand_index < 0 ? argc : args.subcommand_index);
	nshash_log_wrapper_mode(NSHASH_LOG_ERROR, log_path, log_format);
	if (nshash_policy_load(policy_path, &policy, &err) < 0)
		die(args.id, err.msg);
	nshash_log_setup("nshash-runtime", &policy);
	if (nshash_runtime_find(&policy, self, runtime, sizeof(runtime), &err) < 0)
		die(args.id, err.msg);
	argv[0] = runtime;

	if (args.subcommand && (!strcmp(args.subcommand, "create") || !strcmp(args.subcommand, "run")))
		wrap_create(argv, runtime, &policy, &args);
	else if (args.subcommand && !strcmp(args.subcommand, "delete") && args.id)
		wrap_delete(argv, runtime, &policy, &args);
	if (nsh_runtime_exec(runtime, argv, &err) < 0)
		die(args.id, err.msg);
	return 1;
}
