/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: what a container hands the OCI hook and the runtime
 * wrapper — a config.json (annotations, hostname, namespaces) for
 * nsh_oci_request_parse and the config transform, and the hook state on
 * stdin for nsh_oci_state_parse.  The process has no capabilities (they
 * are dropped at start), so a transform that gets as far as creating a
 * netns fails there: the harness checks that such a failure leaves no file
 * in the state dir and that every message is one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#include "common.h"
#include "fuzz.h"
#include "hook.h"

static char state_dir[4096]; /* $TMPDIR/nshash-fuzz-oci-XXXXXX (tests/fuzz/run: under build/) */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? 0 : 0;
}

/* The state dir goes with the fuzzer (nothing is mounted in it: no
 * capabilities, no netns). */
static void remove_state_dir(void)
{
	nftw(state_dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR");
	snprintf(state_dir, sizeof(state_dir), "%s/nshash-fuzz-oci-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	cap_t none = cap_init();
	if (!none || cap_set_proc(none) < 0 || !mkdtemp(state_dir))
		abort();
	cap_free(none);
	atexit(remove_state_dir);
	return 0;
}

static void one_line(const char *msg, size_t cap)
{
	CHECK(memchr(msg, '\0', cap));
	for (const char *p = msg; *p; p++)
		CHECK((unsigned char)*p >= 0x20 || *p == '\t');
}

static size_t files_under(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.' && strcmp(de->d_name, "lock") && strcmp(de->d_name, "templates") &&
		     strcmp(de->d_name, "pins");
	if (d)
		closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct nshash_error err = {0};
	struct nsh_oci_request req;
	if (nsh_oci_request_parse(text, size, &req, &err) < 0)
		one_line(err.msg, sizeof(err.msg));
	else
		CHECK(!req.present || req.sizes.tcp <= NSHASH_TCP_MAX);

	struct nsh_oci_state st;
	memset(&err, 0, sizeof(err));
	if (nsh_oci_state_parse(text, size, &st, &err) < 0)
		one_line(err.msg, sizeof(err.msg));

	struct nsh_policy policy;
	nsh_policy_defaults(&policy);
	snprintf(policy.state_dir, sizeof(policy.state_dir), "%s", state_dir);
	struct nsh_oci_opts opts = {.mode = NSH_OCI_PRECREATE, .policy = &policy};
	struct nsh_oci_result res;
	char *out = NULL;
	size_t out_len = 0;
	memset(&err, 0, sizeof(err));
	if (nsh_oci_transform(text, size, &opts, &out, &out_len, &res, &err) < 0) {
		one_line(err.msg, sizeof(err.msg));
		CHECK(!out);
	} else {
		CHECK(out && strlen(out) == out_len);
		CHECK(res.action != NSH_OCI_SIZED); /* no capabilities: never sized */
		free(out);
	}
	char pins[64];
	snprintf(pins, sizeof(pins), "%s/pins", state_dir);
	CHECK(files_under(pins) == 0 && files_under(state_dir) <= 1); /* nothing left but the ledger */
	return 0;
}
