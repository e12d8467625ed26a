/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON decoder for untrusted input: one document, nothing after it,
 * errors that say where. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* JSON white space at the start of text[0..len). */
static size_t blank_run(const char *text, size_t len)
{
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	return i;
}

/* The offset of a \u0000 escape inside a string of text[0..len), or -1:
 * json-c would cut a key there ("io.nshash.tcp\u0000x" read as
 * io.nshash.tcp) where Go engines keep it whole. */
static long nul_escape(const char *text, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '"') {
			in_string = !in_string;
		} else if (in_string && text[i] == '\\' && i + 1 < len) {
			if (text[i + 1] == 'u' && i + 5 < len && !memcmp(text + i + 2, "0000", 4))
				return (long)i;
			i++; /* the escaped character, '"' and '\\' included */
		}
	}
	return -1;
}

int nsh_json_decode(const char *text, size_t len, struct json_object **out, struct nsh_json_fault *fault)
{
	*out = NULL;
	memset(fault, 0, sizeof(*fault));
	if (len > INT_MAX)
		return fault->kind = NSH_JSON_TOO_LARGE, -EFBIG;
	if (memchr(text, '\0', len))
		return fault->kind = NSH_JSON_NUL, -EINVAL;
	if (blank_run(text, len) == len)
		return fault->kind = NSH_JSON_EMPTY, fault->offset = len, -EINVAL;
	long nul = nul_escape(text, len);
	if (nul >= 0)
		return fault->kind = NSH_JSON_NUL_ESCAPE, fault->offset = (size_t)nul, -EINVAL;
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return fault->kind = NSH_JSON_NOMEM, -ENOMEM;
	/* (text, len) need not be NUL-terminated: nothing here reads text[len] */
	struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	fault->offset = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue) {
		/* a number or literal ending the input ("42", "null") is complete
		 * only at the end of input: say so with a NUL */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		fault->offset = len;
	}
	json_tokener_free(tok);
	if (jerr != json_tokener_success) {
		json_object_put(obj);
		bool eof = jerr == json_tokener_continue || fault->offset >= len;
		fault->kind = eof ? NSH_JSON_TRUNCATED : NSH_JSON_SYNTAX;
		fault->offset = eof ? len : fault->offset;
		fault->why = json_tokener_error_desc(jerr);
		return -EINVAL;
	}
	if (blank_run(text + fault->offset, len - fault->offset) != len - fault->offset) {
		json_object_put(obj);
		fault->kind = NSH_JSON_TRAILING;
		return -EINVAL;
	}
	*out = obj; /* NULL for the document null */
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
	case NSH_JSON_NUL_ESCAPE:
		return nshash_error_set(
		    err, EINVAL, "%s: malformed JSON at line %u column %u: \\u0000 (a NUL character) in a string",
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

int nsh_json_read_file(const char *path, size_t max, struct json_object **out, bool *unreadable,
		       struct nshash_error *err)
{
	char *text;
	size_t len;
	*out = NULL;
	int r = nsh_read_file(path, max, &text, &len, err);
	if (unreadable)
		*unreadable = r < 0;
	if (r < 0)
		return r;
	r = nsh_json_parse_text(text, len, path, out, err);
	free(text);
	return r;
}
