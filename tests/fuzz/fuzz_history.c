/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: the `auto` history file's parser (HISTORY/history:
 * root's own file, but a torn write or an editor may leave anything; a
 * start reads it).  Every entry kept must be valid: peaks and times in
 * range, keys NUL-free and unique; the decay of any entry at any time
 * must not overflow (UBSan); eviction keeps the file within its cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "common.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	size_t dropped = 0;
	if (nsh_history_parse(text, size, &h, &dropped, &err) == 0) {
		CHECK(h.n <= NSH_HISTORY_MAX);
		for (size_t i = 0; i < h.n; i++) {
			const struct nsh_history_entry *e = &h.v[i];
			CHECK(e->tcp_peak >= 0 && e->udp_peak >= 0);
			CHECK(e->tcp_at >= 0 && e->udp_at >= 0 && e->last_seen >= 0);
			CHECK(strlen(e->key) > 0 && strlen(e->key) < sizeof(e->key));
			for (size_t j = i + 1; j < h.n && j < i + 64; j++)
				CHECK(strcmp(e->key, h.v[j].key) != 0);
			long p = nsh_history_peak_now(e, NSHASH_TCP, INT64_MAX);
			CHECK(p >= 0 && p <= e->tcp_peak);
			p = nsh_history_peak_now(e, NSHASH_UDP, e->udp_at + 86400 * 400);
			CHECK(p >= 0 && p <= e->udp_peak);
		}
		size_t n = h.n;
		size_t gone = nsh_history_evict(&h, 16);
		CHECK(h.n + gone == n && h.n <= 16);
	}
	nsh_history_free(&h);
	free(text);
	return 0;
}
