/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-hook STAGE [--policy FILE]: the OCI hook of nshash(8).
 *   precreate              config on stdin, (sized) config on stdout
 *   createRuntime|prestart state on stdin: verify the container's netns
 *   poststop               state on stdin: remove the container's pin
 *   state                  verify, or poststop when the state is "stopped"
 *                          or has no pid (one hooks.d file for both stages)
 * The logic lives in oci/, hook/state.c and libnshash; this is argv, I/O and
 * exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook.h"

#define STDIN_MAX (16 * 1024 * 1024)

/* What the hook keeps once its input is read: the first
 * HOOK_CAPS_PRECREATE for precreate (the last of them, CAP_NET_ADMIN, only
 * there), and for its transform also the last three, to write the id
 * mappings of a container's own user namespace (userns.c; the kernel asks
 * CAP_SETFCAP of a map that maps the writer's user namespace's uid 0, as
 * rootless podman's --userns=keep-id does). */
static const int hook_caps[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
				CAP_NET_ADMIN, CAP_SETUID,     CAP_SETGID,	 CAP_SETFCAP};
#define HOOK_CAPS_PRECREATE 5

static int usage(void)
{
	fprintf(stderr, "usage: nshash-hook precreate|createRuntime|prestart|poststop|state [--policy FILE]\n");
	return 2;
}

/* podman 4 drops a precreate hook's stderr and reports only "exit status
 * 1": say it also on podman's own stderr, where the user looks. */
static void tell_podman(const char *msg)
{
	char path[64], comm[32];
	struct stat ours, theirs;
	pid_t ppid = getppid();
	int fd;

	nsh_proc_comm(ppid, comm, sizeof(comm));
	if (strncmp(comm, "podman", 6) != 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)ppid);
	/* non-blocking: a FIFO nobody reads must not hang us (SIGPIPE is
	 * ignored in main) */
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &theirs) == 0 &&
	    (fstat(STDERR_FILENO, &ours) < 0 || ours.st_ino != theirs.st_ino || ours.st_dev != theirs.st_dev))
		dprintf(fd, "Error: nshash-hook: %s\n", msg);
	close(fd);
}

/* The pin has done its work once the container's init is in the netns:
 * a detached child waits for that (nshash_handoff_wait, woken by inotify)
 * and removes it, so that no createRuntime hook has to be exec'd for it.
 * The runtime's create comes seconds after precreate at most; a pin nobody
 * joined within staleAge is removed too (what the reclaim would do). */
static void hand_off(const struct nsh_policy *policy, const struct nsh_oci_result *res, const char *who,
		     struct nshash_handoff *h)
{
	pid_t pid = fork();

	if (pid != 0) {
		if (pid < 0)
			nsh_log(NSH_LOG_WARN, who, "fork: %s: %s stays until the reclaim removes it", strerror(errno),
				res->pin_path);
		nshash_handoff_end(h);
		return;
	}
	/* podman reads our stdout and stderr to their end: let go of them
	 * (the inotify fd and its slot's lock stay: they are why we are here) */
	int keep[2] = {h->fd, h->slot};
	nsh_detach(keep, 2);
	h->fd = keep[0];
	h->slot = keep[1];
	nsh_background();
	struct nshash_error err = {0};
	/* staleAge has a floor (a runtime's open of the pin may take that
	 * long): the policy raised a smaller one to it */
	int64_t wait_s = policy->stale_age < NSHASH_STALE_AGE_MIN ? NSHASH_STALE_AGE_MIN : policy->stale_age;
	unsigned timeout = wait_s > UINT_MAX / 1000 ? UINT_MAX : (unsigned)wait_s * 1000;
	pid_t user = nshash_handoff_wait(h, res->pin_path, timeout, &err);
	nshash_handoff_end(h);
	if (user == -ENOENT)
		_exit(0); /* removed already (a createRuntime hook, the reclaim) */
	if (user < 0) {	  /* cannot tell: the reclaim decides later, with its own look */
		nsh_log(NSH_LOG_WARN, who, "%s: %s stays until the reclaim removes it", err.msg, res->pin_path);
		_exit(0);
	}
	/* the container's user namespace (its own, userns.c) goes with it:
	 * the init holds both */
	if (res->userns_pin_path[0] && nshash_userns_pin_remove(res->userns_pin_path, &err) < 0)
		nsh_log(NSH_LOG_WARN, who, "%s", err.msg);
	if (nshash_pin_remove(res->pin_path, &err) < 0)
		nsh_log(NSH_LOG_WARN, who, "%s", err.msg);
	else if (user > 0)
		nsh_log(NSH_LOG_INFO, who, "removed pin %s%s%s (pid %d, the container's init, holds the netns)",
			res->pin_path, res->userns_pin_path[0] ? " and its user namespace's pin " : "",
			res->userns_pin_path, (int)user);
	else if (user == 0)
		nsh_log(NSH_LOG_WARN, who,
			"removed pin %s: no container was seen in its netns within %lld s (staleAge; a container that "
			"joined and ended in between is not seen)",
			res->pin_path, (long long)wait_s);
	/* the next container of these sizes takes a spare: make it now that
	 * this one runs (not while its runtime creates it) */
	struct nshash_create_opts copts = nsh_policy_create_opts(policy, res->request.sizes);
	/* ... never a spare of the shared tables (`auto` without history) */
	if (user > 0 && !res->userns_pin_path[0] && (res->request.sizes.tcp || res->request.sizes.udp))
		nsh_spares_work(&copts);
	_exit(0);
}

static int precreate(const struct nsh_policy *policy, const char *in, size_t len)
{
	struct nsh_oci_opts opts = {.mode = NSH_OCI_PRECREATE, .policy = policy};
	struct nsh_oci_result res;
	struct nshash_error err = {0};
	char *out;
	size_t out_len;

	char who[300];
	int r = nsh_oci_transform(in, len, &opts, &out, &out_len, &res, &err);
	/* CAP_SETUID/SETGID/SETFCAP wrote a user namespace's mappings, if any: no
	 * longer needed (main kept them for the transform only) */
	struct nshash_error cerr;
	if (nsh_caps_keep(hook_caps, HOOK_CAPS_PRECREATE, &cerr) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", cerr.msg);
		if (r == 0 && res.action == NSH_OCI_SIZED) {
			nshash_pin_remove(res.pin_path, &cerr);
			if (res.userns_pin_path[0])
				nshash_userns_pin_remove(res.userns_pin_path, &cerr);
		}
		if (r == 0)
			free(out);
		return 1;
	}

	/* no container id before the runtime runs: name it by its hostname */
	snprintf(who, sizeof(who), "hostname %s", res.hostname[0] ? res.hostname : "(none)");
	if (r < 0) {
		nsh_log(NSH_LOG_ERROR, who, "%s", err.msg);
		tell_podman(err.msg);
		return 1;
	}
	/* watched before the runtime can know the path */
	struct nshash_handoff h = {.fd = -1, .slot = -1};
	bool watching = res.action == NSH_OCI_SIZED && nshash_handoff_start(res.pin_path, &h, &err) == 0;
	if (res.action == NSH_OCI_SIZED && !watching)
		nsh_log(NSH_LOG_WARN, who, "%s: the pin stays until the reclaim removes it", err.msg);
	if (nsh_write_all(STDOUT_FILENO, out, out_len) < 0) {
		nsh_log(NSH_LOG_ERROR, who, "write config to stdout: %s", strerror(errno));
		nshash_handoff_end(&h);
		if (res.action == NSH_OCI_SIZED && nshash_pin_remove(res.pin_path, &err) < 0)
			nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		if (res.userns_pin_path[0] && nshash_userns_pin_remove(res.userns_pin_path, &err) < 0)
			nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		free(out);
		return 1;
	}
	free(out);
	nsh_oci_log_result(who, &res);
	if (watching)
		hand_off(policy, &res, who, &h);
	if (res.action == NSH_OCI_TRANSPLANTED && (res.request.sizes.tcp || res.request.sizes.udp)) {
		/* podman holds its netns: no hand-over, a refill now */
		struct nshash_create_opts copts = nsh_policy_create_opts(policy, res.request.sizes);
		nsh_spares_refill(&copts);
	}
	return 0;
}

/* The precreate pin has done its work once the container's init is in
 * that very netns: the init's processes hold it from now on, so the pin
 * goes here and no poststop hook is needed (one process less per start). */
static void drop_joined_pin(const struct nsh_policy *policy, const struct nsh_oci_state *st)
{
	struct nshash_error err = {0};
	char name[256], pin[4096], proc[64];
	struct stat a, b;

	/* the pin nshash recorded in the bundle (with its netns path), never
	 * a name the annotations give */
	if (nsh_oci_state_pin(st, policy, name, sizeof(name), &err) < 0 || !name[0] ||
	    nsh_oci_pin_path(policy, name, pin, sizeof(pin), &err) < 0 || nshash_pin_is_netns(pin, &err) != 1)
		return;
	snprintf(proc, sizeof(proc), "/proc/%d/ns/net", (int)st->pid);
	if (stat(pin, &a) < 0 || stat(proc, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return; /* not this container's netns: poststop or gc decides */
	/* The one process known to use it is this container's init, and the
	 * pin is the one nshash recorded for it: unlike poststop's cleanup,
	 * that use is no reason to keep the path. */
	if (nshash_pin_remove(pin, &err) < 0)
		nsh_log(NSH_LOG_WARN, st->id, "%s", err.msg);
	else
		nsh_log(NSH_LOG_INFO, st->id, "removed pin %s/pins/%s (the container's init holds the netns)",
			policy->state_dir, name);
}

static int verify(const struct nsh_policy *policy, const struct nsh_oci_state *st)
{
	struct nshash_netns_info info;
	struct nshash_error err = {0};
	bool warned;

	if (!st->request.present)
		return 0;
	if (nsh_oci_verify(st, policy, &info, &warned, &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg); /* names the container */
		return 1;
	}
	if (warned)
		nsh_log(NSH_LOG_WARN, NULL, "%s (onFailure warn: container runs anyway)", err.msg);
	else
		nsh_log(NSH_LOG_INFO, st->id, "verified pid %d: requested tcp=%u udp=%u, effective tcp=%ld udp=%ld",
			(int)st->pid, st->request.sizes.tcp, st->request.sizes.udp, info.tcp_entries, info.udp_entries);
	drop_joined_pin(policy, st);
	return 0;
}

static int poststop(const struct nsh_policy *policy, const struct nsh_oci_state *st)
{
	struct nshash_error err = {0};
	char pin[256];
	int r;

	/* only the pin nshash itself recorded in the bundle, never a name
	 * given in an annotation */
	if (nsh_oci_state_pin(st, policy, pin, sizeof(pin), &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg); /* names the container */
		return 1;
	}
	if (!pin[0])
		return 0;
	r = nsh_oci_cleanup(policy, pin, &err);
	if (r < 0) {
		nsh_log(NSH_LOG_ERROR, st->id, "%s", err.msg);
		return 1;
	}
	if (r > 0)
		nsh_log(NSH_LOG_WARN, st->id, "%s", err.msg);
	else
		nsh_log(NSH_LOG_INFO, st->id, "removed pin %s/pins/%s", policy->state_dir, pin);
	return 0;
}

int main(int argc, char **argv)
{
	const char *stage, *policy_path = nsh_policy_env();
	struct nsh_policy policy;
	struct nsh_oci_state st;
	struct nshash_error err = {0};
	char program[64], *in;
	size_t len;
	int rc;

	if (argc < 2)
		return usage();
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error to report, not death */
	stage = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			policy_path = argv[++i];
		else if (!strncmp(argv[i], "--policy=", 9))
			policy_path = argv[i] + 9;
		else
			return usage();
	}
	snprintf(program, sizeof(program), "nshash-hook[%.32s]", stage);
	nsh_policy_defaults(&policy); /* syslog too, before the policy is read */
	nsh_log_setup(program, &policy);
	if (strcmp(stage, "precreate") && strcmp(stage, "createRuntime") && strcmp(stage, "prestart") &&
	    strcmp(stage, "poststop") && strcmp(stage, "state")) {
		nsh_log(NSH_LOG_ERROR, NULL, "unknown stage \"%s\"", stage);
		return usage();
	}
	if (nsh_policy_load(policy_path, &policy, &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		if (!strcmp(stage, "precreate"))
			tell_podman(err.msg);
		return 1;
	}
	nsh_log_setup(program, &policy);
	if (nsh_read_fd(STDIN_FILENO, "stdin", STDIN_MAX, &in, &len, &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		return 1;
	}
	/* Root on hostile input: before parsing it, keep only what the stage
	 * needs (namespaces and mounts; links and sysctls of the new netns for
	 * precreate; /proc of other users' processes; a bundle owned by a
	 * user).  Nothing is exec'd. */
	size_t nkeep = strcmp(stage, "precreate") ? HOOK_CAPS_PRECREATE - 1 : sizeof(hook_caps) / sizeof(hook_caps[0]);
	if (nsh_caps_keep(hook_caps, nkeep, &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		free(in);
		return 1;
	}
	/* Whatever the stage: orphans of containers whose create failed.
	 * Before the stage's work: a pin this run makes does not exist yet, so
	 * no run ever reclaims its own. */
	char msg[1400];
	if (nsh_reclaim_orphans(policy.state_dir, policy.stale_age, policy.reclaim_interval, msg, sizeof(msg)))
		nsh_log(NSH_LOG_INFO, NULL, "%s", msg);
	if (!strcmp(stage, "precreate")) {
		rc = precreate(&policy, in, len);
	} else if (nsh_oci_state_parse(in, len, &st, &err) < 0) {
		nsh_log(NSH_LOG_ERROR, NULL, "%s", err.msg);
		rc = 1;
	} else if (!strcmp(stage, "poststop") ||
		   (!strcmp(stage, "state") && (st.pid == 0 || !strcmp(st.status, "stopped")))) {
		rc = poststop(&policy, &st);
	} else {
		rc = verify(&policy, &st);
	}
	free(in);
	return rc;
}
