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

int nsh_json_parse_text(const char *text, size_t len, const char *source, struct json_object **out,
			struct nshash_error *err)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t end;
	unsigned line, col;

	*out = NULL;
	if (len > INT_MAX)
		return nshash_error_set(err, EFBIG, "%s: %zu bytes is too large", source, len);
	if (memchr(text, '\0', len))
		return nshash_error_set(err, EINVAL, "%s: malformed JSON: contains a NUL byte", source);
	tok = json_tokener_new();
	if (!tok)
		return nshash_error_set(err, ENOMEM, "%s: cannot allocate a JSON parser", source);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (!obj && jerr == json_tokener_continue) {
		json_tokener_free(tok);
		if (len == 0 || strspn(text, " \t\r\n") == len)
			return nshash_error_set(err, EINVAL, "%s: malformed JSON: empty input", source);
		nsh_text_position(text, len, len, &line, &col);
		return nshash_error_set(err, EINVAL, "%s: malformed JSON at line %u column %u: unexpected end of input",
					source, line, col);
	}
	if (!obj || jerr != json_tokener_success) {
		nsh_text_position(text, len, end, &line, &col);
		nshash_error_set(err, EINVAL, "%s: malformed JSON at line %u column %u: %s", source, line, col,
				 json_tokener_error_desc(jerr));
		json_object_put(obj);
		json_tokener_free(tok);
		return -EINVAL;
	}
	json_tokener_free(tok);
	if (strspn(text + end, " \t\r\n") != len - end) {
		nsh_text_position(text, len, end, &line, &col);
		json_object_put(obj);
		return nshash_error_set(err, EINVAL,
					"%s: malformed JSON at line %u column %u: trailing data after the document",
					source, line, col);
	}
	*out = obj;
	return 0;
}
