/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: the runtime wrapper's argv (runc conventions),
 * nsh_runtime_args_parse.  Arguments are the input split at NULs; what
 * is found must point into argv, the subcommand index be in range. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	char **argv = calloc(size + 2, sizeof(char *));
	if (!buf || !argv) {
		free(buf);
		free(argv);
		return 0;
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	int argc = 0;
	argv[argc++] = "nshash-runtime";
	for (size_t at = 0; at < size; at += strlen(buf + at) + 1)
		argv[argc++] = buf + at;
	argv[argc] = NULL;
	struct nsh_runtime_args a;
	struct nshash_error err = {0};
	if (nsh_runtime_args_parse(argc, argv, &a, &err) == 0) {
		CHECK(a.subcommand_index < argc);
		CHECK(!a.subcommand || (a.subcommand_index > 0 && a.subcommand == argv[a.subcommand_index]));
	} else {
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)));
	}
	free(argv);
	free(buf);
	return 0;
}
