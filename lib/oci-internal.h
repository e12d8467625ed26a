/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by lib/policy.c and lib/oci.c; not part of the public API. */
#ifndef NSHASH_OCI_INTERNAL_H
#define NSHASH_OCI_INTERNAL_H

#include "nshash.h"

struct json_object;

/* Parse one JSON document; errors give "SOURCE: malformed JSON at line L
 * column C: why". */
int nsh_json_parse_text(const char *text, size_t len, const char *source, struct json_object **out,
			struct nshash_error *err);
int nsh_read_file(const char *path, size_t max, char **out, size_t *out_len, struct nshash_error *err);
void nsh_text_position(const char *text, size_t len, size_t offset, unsigned *line, unsigned *col);
/* true when a path has a ".." component */
bool nsh_path_has_dotdot(const char *path);

#endif
