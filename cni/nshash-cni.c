// SPDX-License-Identifier: LGPL-2.1-or-later
/* nshash CNI plugin: stdin + CNI_* env in, result or error JSON on stdout,
 * diagnostics on stderr.  All the logic is in lib/cni.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nshash.h"

#define MAX_INPUT (16u << 20)

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_INPUT) {
				free(b);
				return -EFBIG;
			}
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(b);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

int main(void)
{
	struct nshash_cni_env env;
	struct nshash_cni_output out;
	nshash_cni_env_from_environ(&env);
	char *input = NULL;
	size_t len = 0;
	int r = read_all(STDIN_FILENO, &input, &len);
	if (r < 0) {
		struct nshash_cni_error err;
		nshash_cni_error_set(&err, NSHASH_CNI_E_IO, NULL, "read the network config from stdin: %s",
				     strerror(-r));
		char *json = nshash_cni_error_json(NULL, &err);
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
