/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: nshash_size_parse (annotation values, CLI options, CNI
 * config strings) and the rounding and byte counts built on it.  Any bytes
 * in; a parsed value must be in range, the effective size a power of two
 * no smaller than the request, and the table bytes what the kernel
 * allocates. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "nshash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A C-string API: a NUL cannot reach it (the JSON and argv layers
	 * must refuse one; their own harnesses check that). */
	if (memchr(data, '\0', size))
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (int p = 0; p < 2; p++) {
		enum nshash_proto proto = p ? NSHASH_UDP : NSHASH_TCP;
		struct nshash_error err = {0};
		uint32_t v = 0xdeadbeef;
		int r = nshash_size_parse(proto, "fuzz", text, &v, &err);
		if (r < 0) {
			CHECK(v == 0xdeadbeef && err.errnum == -r && err.msg[0]);
			CHECK(memchr(err.msg, '\0', sizeof(err.msg)));
			continue;
		}
		CHECK(r == 0 && v <= nshash_proto_max(proto));
		CHECK(size > 0); /* nothing empty accepted */
		uint32_t e = nshash_size_effective(proto, v);
		CHECK(v == 0 ? e == 0 : (e >= v && (e & (e - 1)) == 0 && e <= nshash_proto_max(proto)));
		CHECK(proto == NSHASH_TCP || v == 0 || e >= NSHASH_UDP_MIN);
		CHECK(nshash_table_bytes(proto, e) == (uint64_t)e * (proto == NSHASH_TCP ? 8u : 64u));
	}
	free(text);
	return 0;
}
