/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-runtime: an OCI runtime wrapper called exactly like runc.  On
 * create/run it sizes the container's netns from its io.nshash.*
 * annotations (same transform as the precreate hook, plus verify and cleanup
 * hooks), then execs the real runtime with the argv untouched.  On delete it
 * also removes the container's pin.  Everything else is a pure exec.
 * Policy file: $NSHASH_POLICY, else /etc/nshash/nshash.json. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"

static const char *log_path, *log_format;

static void die(const char *id, const char *msg)
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

static volatile pid_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* Run the real runtime and return its exit status (128+N for a signal);
 * signals a terminal or an engine sends us go to it. */
static int run_runtime(const char *runtime, char **argv, bool quiet)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	struct sigaction sa = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
	int status;
	pid_t pid = fork();

	if (pid > 0) {
		child_pid = pid;
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			sigaction(sigs[i], &sa, NULL);
	}

	if (pid < 0)
		die(NULL, "fork failed");
	if (pid == 0) {
		if (quiet) {
			freopen("/dev/null", "w", stdout);
			freopen("/dev/null", "w", stderr);
		}
		execv(runtime, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* After a failed delete: does the runtime still know the container?  (A
 * create that never happened, e.g. the wrapper was killed, leaves a pin that
 * the engine's "delete --force" must still clean.) */
static bool container_exists(const char *runtime, int argc, char **argv, const struct nshash_runtime_args *args)
{
	char *sargv[argc + 3];
	int n = 0;

	sargv[n++] = (char *)runtime;
	for (int i = 1; i < args->subcommand_index; i++)
		sargv[n++] = argv[i];
	sargv[n++] = "state";
	sargv[n++] = (char *)args->id;
	sargv[n] = NULL;
	return run_runtime(runtime, sargv, true) == 0;
}

/* Where the verify/cleanup hooks the transform adds live: hookPath, else
 * nshash-hook next to this binary. */
static void hook_location(const struct nshash_policy *policy, const char *self, char *hook, size_t len)
{
	char dir[PATH_MAX];

	if (policy->hook_path[0]) {
		snprintf(hook, len, "%s", policy->hook_path);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", self);
	snprintf(hook, len, "%s/nshash-hook", dirname(dir));
}

/* create / run: transform the bundle's config.  Returns -1 to go on and
 * exec the runtime, or the exit status of a `run` it waited for. */
static int wrap_create(int argc, char **argv, const char *runtime, const char *self, const char *policy_path,
		       const struct nshash_policy *policy, const struct nshash_runtime_args *args)
{
	struct nshash_error err = {0};
	struct nshash_oci_result res;
	char hook[PATH_MAX + 16], pin[300];
	struct nshash_oci_opts opts = {
	    .mode = NSHASH_OCI_WRAPPER,
	    .policy = policy,
	    .pin_name = pin,
	    .hook_path = hook,
	    .policy_path = policy_path,
	};

	if (!args->id)
		die(NULL, "create: no container id in the arguments");
	if (nshash_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0)
		die(NULL, err.msg); /* names the bad id */
	hook_location(policy, self, hook, sizeof(hook));
	if (nshash_oci_bundle_transform(args->bundle ? args->bundle : ".", &opts, &res, &err) < 0)
		die(args->id, err.msg);
	nshash_oci_log_result(args->id, &res);
	if (strcmp(args->subcommand, "run") != 0 || res.action != NSHASH_OCI_SIZED)
		return -1;
	/* runc run can fail before the container exists (bad rootfs):
	 * then no poststop runs.  Stay around to clean up. */
	int status = run_runtime(runtime, argv, false);
	/* a foreground run has deleted its container by now */
	if ((!args->detach || !container_exists(runtime, argc, argv, args)) &&
	    nshash_oci_cleanup(policy, pin, &err) < 0)
		nshash_log(NSHASH_LOG_WARN, args->id, "%s", err.msg);
	return status;
}

/* delete: run it, then drop the pin: cleanup must not depend on poststop
 * alone, and must not happen if the delete failed. */
static int wrap_delete(int argc, char **argv, const char *runtime, const struct nshash_policy *policy,
		       const struct nshash_runtime_args *args)
{
	struct nshash_error err = {0};
	char pin[300];
	int status = run_runtime(runtime, argv, false);

	if (status != 0 && container_exists(runtime, argc, argv, args))
		return status;
	if (nshash_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0 ||
	    nshash_oci_cleanup(policy, pin, &err) < 0)
		nshash_log(NSHASH_LOG_WARN, args->id, "%s", err.msg);
	return 0;
}

int main(int argc, char **argv)
{
	const char *policy_path = getenv("NSHASH_POLICY");
	struct nshash_policy policy;
	struct nshash_runtime_args args;
	struct nshash_error err = {0};
	char self[PATH_MAX], runtime[PATH_MAX];
	ssize_t n;
	int status = -1;

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
		status = wrap_create(argc, argv, runtime, self, policy_path, &policy, &args);
	else if (args.subcommand && !strcmp(args.subcommand, "delete") && args.id)
		status = wrap_delete(argc, argv, runtime, &policy, &args);
	if (status >= 0)
		return status;
	execv(runtime, argv);
	nshash_error_set(&err, errno, "exec %.900s: %s", runtime, strerror(errno));
	die(args.id, err.msg);
	return 1;
}
