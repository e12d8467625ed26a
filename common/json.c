/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON decoder for untrusted input: one document, nothing after it,
 * errors that say where. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

/* 1-based line and column of byte `offset` in `text`. */
void nsh_text_position(const char *text, size_t len, size_t offset, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < offset && i < len; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* The JSON white space: what may follow the document. */
#define JSON_SPACE " \t\r\n"

int nsh_json_decode(const char *text, size_t len, struct json_object **out, struct nsh_json_fault *fault)
{
	*out = NULL;
	memset(fault, 0, sizeof(*fault));
	if (len > INT_MAX)
		return fault->kind = NSH_JSON_TOO_LARGE, -EFBIG;
	if (memchr(text, '\0', len))
		return fault->kind = NSH_JSON_NUL, -EINVAL;
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return fault->kind = NSH_JSON_NOMEM, -ENOMEM;
	struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	fault->offset = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!obj && jerr == json_tokener_continue) {
		fault->kind = strspn(text, JSON_SPACE) >= len ? NSH_JSON_EMPTY : NSH_JSON_TRUNCATED;
		fault->offset = len;
		return -EINVAL;
	}
	if (!obj || jerr != json_tokener_success) {
		json_object_put(obj);
		fault->kind = NSH_JSON_SYNTAX;
		fault->why = json_tokener_error_desc(jerr);
		return -EINVAL;
	}
	if (strspn(text + fault->offset, JSON_SPACE) != len - fault->offset) {
		json_object_put(obj);
		fault->kind = NSH_JSON_TRAILING;
		return -EINVAL;
	}
	*out = obj;
	return 0;
}

int nsh_json_parse_text(const char *text, size_t len, const char *source, struct json_object **out,
			struct nshash_error *err)
{
	struct nsh_json_fault f;
	unsigned line, col;
	int r = nsh_json_decode(text, len, out, &f);

	if (r == 0)
		return 0;
	nsh_text_position(text, len, f.offset, &line, &col);
	switch (f.kind) {
	case NSH_JSON_TOO_LARGE:
		return nshash_error_set(err, EFBIG, "%s: %zu bytes is too large", source, len);
	case NSH_JSON_NUL:
		return nshash_error_set(err, EINVAL, "%s: malformed JSON: contains a NUL byte", source);
	case NSH_JSON_NOMEM:
		return nshash_error_set(err, ENOMEM, "%s: cannot allocate a JSON parser", source);
	case NSH_JSON_EMPTY:
		return nshash_error_set(err, EINVAL, "%s: malformed JSON: empty input", source);
	case NSH_JSON_TRUNCATED:
		return nshash_error_set(err, EINVAL, "%s: malformed JSON at line %u column %u: unexpected end of input",
					source, line, col);
	case NSH_JSON_TRAILING:
		return nshash_error_set(err, EINVAL,
					"%s: malformed JSON at line %u column %u: trailing data after the document",
					source, line, col);
	default:
		return nshash_error_set(err, EINVAL, "%s: malformed JSON at line %u column %u: %s", source, line, col,
					f.why);
	}
}
