/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: the policy file (nshash.json(5)), nsh_policy_parse.
 * Accepted policies must hold values in range and clean paths; refusals one
 * line naming the file. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nsh_policy p;
	struct nshash_error err = {0};
	if (nsh_policy_parse((const char *)data, size, "fuzz.json", &p, &err) < 0) {
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) && strstr(err.msg, "fuzz.json"));
		for (const char *c = err.msg; *c; c++)
			CHECK((unsigned char)*c >= 0x20 || *c == '\t');
		return 0;
	}
	CHECK(p.max.tcp <= NSHASH_TCP_MAX && p.max.udp <= NSHASH_UDP_MAX);
	CHECK(memchr(p.state_dir, '\0', sizeof(p.state_dir)));
	CHECK(p.state_dir[0] == '\0' || p.state_dir[0] == '/');
	for (const char *c = p.state_dir; *c; c++)
		CHECK((unsigned char)*c >= 0x20);
	return 0;
}
