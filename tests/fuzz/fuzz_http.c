/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: what `nshash serve` reads from a client and what it
 * writes of untrusted text.  http_request_parse: a status from the list,
 * a route only with 200, a method of A-Z and a printable target; called as
 * serve calls it, on what has arrived so far (prefixes of the input, at
 * lengths the input picks), the first answer is the answer to the whole,
 * and at the end of serve's buffer there is always an answer, never "wait
 * for more"; and nsh_prom_label over the same bytes: no raw quote,
 * backslash or newline outside an escape, valid UTF-8, always terminated. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "http.h"

static size_t utf8_ok(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

static void check_request(int s, const struct http_request *req)
{
	CHECK(s == 0 || s == 200 || s == 400 || s == 404 || s == 405 || s == 414 || s == 431);
	CHECK((s == 200) == (req->route != HTTP_NONE));
	CHECK(memchr(req->method, '\0', sizeof(req->method)) && memchr(req->target, '\0', sizeof(req->target)));
	for (const char *c = req->method; *c; c++)
		CHECK(*c >= 'A' && *c <= 'Z');
	for (const char *c = req->target; *c; c++)
		CHECK(*c > ' ' && *c < 0x7f);
}

/* serve's buffer (cmd/serve.c REQUEST_MAX) */
#define SERVE_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request req, part;
	if (size > SERVE_MAX)
		return 0;
	int s = cli_http_request_parse((const char *)data, size, SERVE_MAX, &req);
	check_request(s, &req);
	/* the bytes as they arrive in pieces (serve parses what it has after
	 * each read, and stops at the first answer): lengths chosen by the
	 * bytes themselves, so the fuzzer explores the splits too */
	for (size_t p = 1; p < size; p += 1 + (data[p] & 0x3f)) {
		int ps = cli_http_request_parse((const char *)data, p, SERVE_MAX, &part);
		check_request(ps, &part);
		CHECK(ps == 0 || ps == s);
		/* a complete head: the same request (a refused request line is
		 * logged with what was read of it, which may differ) */
		if (ps == 200 || ps == 404 || ps == 405)
			CHECK(part.route == req.route && !strcmp(part.method, req.method) &&
			      !strcmp(part.target, req.target));
		if (ps)
			break;
	}
	/* a full buffer is answered: serve could not read more */
	if (size) {
		int full = cli_http_request_parse((const char *)data, size, size, &part);
		check_request(full, &part);
		CHECK(full != 0);
	}

	char *text = malloc(size + 1), out[512];
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	size_t n = nsh_prom_label(text, out, sizeof(out));
	free(text);
	CHECK(n < sizeof(out) && out[n] == '\0' && strlen(out) == n);
	for (size_t i = 0; i < n;) {
		const unsigned char *p = (const unsigned char *)out + i;
		if (*p == '\\') {
			CHECK(i + 1 < n && (p[1] == '\\' || p[1] == '"' || p[1] == 'n'));
			i += 2;
			continue;
		}
		CHECK(*p != '"' && *p != '\n' && *p >= 0x20 && *p != 0x7f);
		size_t k = utf8_ok(p);
		CHECK(k > 0 && i + k <= n);
		i += k;
	}
	return 0;
}
