/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: the start path's history index (HISTORY/history.idx,
 * read with a few preads on every container start).  The input is split in
 * two: the first part picks workload keys and peaks, which are saved (the
 * history and its index, as `nshash record` writes them); the second part's
 * bytes then overwrite the index at offsets it picks (a torn write, a
 * damaged disk).  A lookup of every key must then never crash or hang,
 * and must give either that key's entry exactly or none: a damaged index
 * is no answer (the history is read whole). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "auto.h"
#include "common.h"
#include "fuzz.h"

static void remove_dir(const char *dir)
{
	static const char *const names[] = {NSH_HISTORY_FILE, NSH_HISTORY_INDEX_FILE, NSH_HISTORY_FILE ".lock"};
	char p[4300];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a directory of its own per input: nothing carried from the last one */
	char dir[4096];
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/nshash-fuzz-histindex-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir))
		return 0;
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	size_t i = 0;
	char key[64];
	/* entries: 1 byte key length (1..32), the key's bytes, 2 bytes peak */
	while (i < size && h.n < 64) {
		size_t kl = (size_t)(data[i] % 32) + 1;
		if (i + 1 + kl + 2 > size || data[i] == 0xff)
			break;
		for (size_t k = 0; k < kl; k++)
			key[k] = (char)('a' + data[i + 1 + k] % 26);
		key[kl] = '\0';
		long peak = data[i + 1 + kl] | (long)data[i + 2 + kl] << 8;
		i += 1 + kl + 2;
		if (nsh_history_sample(&h, key, peak, peak / 2, 1000 + (int64_t)h.n, &err) < 0)
			break;
	}
	i++; /* past the separator */
	if (nsh_history_save(dir, &h, &err) < 0) {
		nsh_history_free(&h);
		remove_dir(dir);
		return 0;
	}
	char idx[4200];
	snprintf(idx, sizeof(idx), "%s/%s", dir, NSH_HISTORY_INDEX_FILE);
	int fd = open(idx, O_WRONLY | O_CLOEXEC);
	/* damage: 3 bytes each, offset (2) then value */
	for (; fd >= 0 && i + 3 <= size; i += 3) {
		uint8_t v = data[i + 2];
		(void)!pwrite(fd, &v, 1, (off_t)(data[i] | data[i + 1] << 8));
	}
	if (fd >= 0)
		close(fd);
	for (size_t e = 0; e < h.n; e++) {
		struct nsh_history got = {0};
		char warn[4500];
		if (nsh_history_load_key(dir, h.v[e].key, &got, warn, sizeof(warn), &err) == 0) {
			const struct nsh_history_entry *g = nsh_history_find(&got, h.v[e].key);
			/* the index or the history whole: the entry as saved, never another's */
			CHECK(g && g->tcp_peak == h.v[e].tcp_peak && g->udp_peak == h.v[e].udp_peak);
		}
		nsh_history_free(&got);
	}
	nsh_history_free(&h);
	remove_dir(dir);
	return 0;
}
