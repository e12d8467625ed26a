/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash CNI plugin: stdin + CNI_* env in, result or error JSON on stdout,
 * diagnostics on stderr.  The logic is in cni/ and libnshash. */
#include <errno.h>
#include <linux/capability.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni.h"

#define MAX_INPUT (16u << 20)

int main(void)
{
	struct nsh_cni_env env;
	struct nsh_cni_output out;
	struct nshash_error err;
	char *input = NULL;
	size_t len = 0;

	/* the ADD's threads share the one malloc arena: no 64 MiB reservation
	 * each, on a path every pod start takes */
	mallopt(M_ARENA_MAX, 1);
	nsh_cni_env_from_environ(&env);
	/* Run by hand (no CNI_COMMAND): say what this is, as the reference
	 * plugins do, instead of a protocol error. */
	if (!env.command || !env.command[0]) {
		fprintf(stderr,
			"CNI nshash plugin version %s (own TCP/UDP hash tables per pod netns; man nshash-cni)\n",
			NSHASH_VERSION);
		fprintf(stderr, "CNI protocol versions supported:");
		for (int i = 0; nsh_cni_versions[i]; i++)
			fprintf(stderr, "%s %s", i ? "," : "", nsh_cni_versions[i]);
		fputc('\n', stderr);
		return 0;
	}
	if (nsh_read_fd(STDIN_FILENO, "the network config on stdin", MAX_INPUT, &input, &len, &err) < 0) {
		struct nsh_cni_failure cerr;
		nsh_cni_fail(&cerr, NSH_CNI_E_IO, NULL, "%s", err.msg);
		char *json = nsh_cni_error_json(NULL, &cerr);
		if (json)
			printf("%s\n", json);
		fprintf(stderr, "nshash: %s\n", err.msg);
		free(json);
		return 1;
	}
	/* Root on hostile input: before parsing it, keep only what sizing a
	 * netns needs (namespaces, mounts, lo and sysctls of the new netns,
	 * /proc of other users' processes, their fd dirs: mode 0500 of their
	 * uid, which CAP_SYS_PTRACE alone does not open); DEL the first, to
	 * enter the pod's netns for `auto`'s last sample; GC and VERSION
	 * nothing. */
	static const int keep[] = {CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH};
	bool sizes = env.command &&
		     (!strcmp(env.command, "ADD") || !strcmp(env.command, "CHECK") || !strcmp(env.command, "STATUS"));
	bool del = env.command && !strcmp(env.command, "DEL");
	if (nsh_caps_keep(keep, sizes ? sizeof(keep) / sizeof(keep[0]) : del ? 1 : 0, &err) < 0) {
		free(input);
		fprintf(stderr, "nshash: %s\n", err.msg);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN); /* a closed stdout is reported, not fatal */
	/* node-side settings (state dir, caps, budget, spares): the policy
	 * file of the hook and the wrapper, never the network config alone */
	static struct nsh_cni_node node;
	nsh_cni_node_load(&node);
	nsh_cni_run(&env, input, len, NULL, &node, &out);
	free(input);
	if (out.log[0])
		fputs(out.log, stderr);
	int status = out.status;
	if (out.stdout_text && (printf("%s\n", out.stdout_text) < 0 || fflush(stdout) != 0)) {
		/* the runtime gets no result: it must not take this for success */
		fprintf(stderr, "nshash: write the result to stdout: %s\n", strerror(errno));
		status = 1;
	}
	/* What `nshash stats` and `nshash serve` show of this run: the ADD's
	 * outcome and the pod it was for (never a failure of the run).  A
	 * result the runtime never got is a failed ADD to it. */
	if (status != 0 && out.outcome != NSH_CNI_NONE)
		out.outcome = NSH_CNI_REFUSED;
	if (nsh_cni_state_update(&env, &out, node.policy.state_dir, &err) < 0)
		fprintf(stderr, "nshash: record for metrics: %s\n", err.msg);
	/* The next ADD of these sizes takes a spare: a detached child makes
	 * it now that the answer is out. */
	if (out.refill_due && status == 0)
		nsh_spares_refill(&out.refill);
	/* Orphans of containers whose create failed, now that the engine has
	 * its answer: rate-limited, one stat most of the time.  An ADD makes
	 * no pin under STATE/pins (it sizes the runtime's own pin at
	 * CNI_NETNS), so this run's work is never among them. */
	char msg[1400];
	/* (not after DEL, GC or VERSION: they ran with every capability
	 * dropped, and a reclaim that cannot look would only use up the
	 * interval) */
	if (out.have_config && sizes &&
	    nsh_reclaim_orphans(node.policy.state_dir, out.stale_age, out.reclaim_interval, msg, sizeof(msg)))
		fprintf(stderr, "nshash: %s\n", msg);
	nsh_cni_output_free(&out);
	return status;
}
