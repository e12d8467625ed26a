/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: the table ledger's parser (STATE_DIR/ledger: root's
 * own file, but whatever a crash or an editor left in it must never crash
 * a creator or make it count wrong).  Every record kept must be valid, ids
 * unique, bytes exactly those of its sizes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	struct nsh_ledger l;
	if (nsh_ledger_parse(text, size, &l) == 0) {
		CHECK(l.n <= l.lines);
		for (size_t i = 0; i < l.n; i++) {
			const struct nsh_ledger_entry *r = &l.v[i];
			CHECK(r->kind == 'R' || r->kind == 'N');
			CHECK(strlen(r->id) == NSH_LEDGER_ID_LEN);
			CHECK(r->bytes == nshash_sizes_bytes(nshash_sizes_effective(r->sizes)));
			CHECK(r->kind == 'R' ? r->pid > 0 : r->ino > 0);
			CHECK(r->pin && (r->pin[0] == '\0' || (r->pin >= text && r->pin < text + size)));
			for (size_t j = i + 1; j < l.n; j++)
				CHECK(strcmp(r->id, l.v[j].id) != 0);
		}
		/* a cut scan's ids: whole ids, inside the text */
		CHECK(!l.scan.ids || (l.scan.ids >= text && l.scan.ids <= text + size &&
				      (strlen(l.scan.ids) + 1) % (NSH_LEDGER_ID_LEN + 1) <= 1));
		free(l.v);
	}
	free(text);
	return 0;
}
