/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash CNI plugin: stdin + CNI_* env in, result or error JSON on stdout,
 * diagnostics on stderr.  The logic is in cni/ and libnshash. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cni.h"

#define MAX_INPUT (16u << 20)

int main(void)
{
	struct nshash_cni_env env;
	struct nshash_cni_output out;
	struct nshash_error err;
	char *input = NULL;
	size_t len = 0;

	nshash_cni_env_from_environ(&env);
	/* Run by hand (no CNI_COMMAND): say what this is, as the reference
	 * plugins do, instead of a protocol error. */
	if (!env.command || !env.command[0]) {
		fprintf(stderr,
			"CNI nshash plugin version %s (own TCP/UDP hash tables per pod netns; man nshash-cni)\n",
			NSHASH_VERSION);
		fprintf(stderr, "CNI protocol versions supported:");
		for (int i = 0; nshash_cni_versions[i]; i++)
			fprintf(stderr, "%s %s", i ? "," : "", nshash_cni_versions[i]);
		fputc('\n', stderr);
		return 0;
	}
	if (nsh_read_fd(STDIN_FILENO, "the network config on stdin", MAX_INPUT, &input, &len, &err) < 0) {
		struct nshash_cni_failure cerr;
		nshash_cni_fail(&cerr, NSHASH_CNI_E_IO, NULL, "%s", err.msg);
		char *json = nshash_cni_error_json(NULL, &cerr);
		if (json)
			printf("%s\n", json);
		fprintf(stderr, "nshash: %s\n", err.msg);
		free(json);
		return 1;
	}
	nshash_cni_run(&env, input, len, NULL, &out);
	free(input);
	if (out.log[0])
		fputs(out.log, stderr);
	if (out.stdout_text)
		printf("%s\n", out.stdout_text);
	int status = out.status;
	nshash_cni_output_free(&out);
	if (fflush(stdout) != 0)
		return 1;
	return status;
}
