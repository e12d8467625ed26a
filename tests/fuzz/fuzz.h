/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the libFuzzer harnesses: the entry point and an invariant
 * check that stops the fuzzer on the spot (ASan/UBSan catch the rest). */
#ifndef NSH_FUZZ_H
#define NSH_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                                       \
	do {                                                                                                           \
		if (!(c))                                                                                              \
			__builtin_trap();                                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated copy (malloc'd; NULL: out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (text) {
		memcpy(text, data, size);
		text[size] = '\0';
	}
	return text;
}

#endif
