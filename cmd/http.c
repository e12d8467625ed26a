/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The little HTTP of `nshash serve`: one request per connection, only its
 * head is read (and only the request line looked at), GET of /metrics and
 * /healthz answered, everything else refused with the status that says
 * why.  Pure functions: cmd/serve.c does the sockets. */
#include <stdio.h>
#include <string.h>

#include "http.h"

static bool token_char(char c)
{
	return c >= 'A' && c <= 'Z';
}

/* The request line "METHOD SP TARGET SP HTTP/1.x" CRLF (or LF), read from
 * the start and refused at the first byte that shows it wrong: what comes
 * after that byte cannot change the answer, so the answer to part of a
 * request is the answer to the whole (serve parses after every read).
 * 0: right so far, not complete; 400 or 414; or -1: complete, *end the
 * index after its '\n'. */
static int request_line(const char *buf, size_t len, struct http_request *req, size_t *end)
{
	size_t i = 0, m = 0, t = 0;
	for (; i < len && buf[i] != ' '; i++) {
		if (!token_char(buf[i]) || m + 1 >= sizeof(req->method))
			return 400;
		req->method[m++] = buf[i];
	}
	req->method[m] = '\0';
	if (i == len)
		return 0;
	if (!m)
		return 400;
	for (i++; i < len && buf[i] != ' '; i++) {
		unsigned char c = (unsigned char)buf[i];
		if ((t == 0 && c != '/') || c <= ' ' || c >= 0x7f)
			return 400;
		if (t + 1 >= sizeof(req->target))
			return 414;
		req->target[t++] = (char)c;
	}
	req->target[t] = '\0';
	if (i == len)
		return 0;
	if (!t)
		return 400;
	static const char version[] = "HTTP/1.";
	for (size_t k = (i++, 0); k < sizeof(version) - 1; k++, i++) {
		if (i == len)
			return 0;
		if (buf[i] != version[k])
			return 400;
	}
	if (i == len)
		return 0;
	if (buf[i] != '0' && buf[i] != '1')
		return 400;
	if (++i == len)
		return 0;
	if (buf[i] == '\r' && ++i == len)
		return 0;
	if (buf[i] != '\n')
		return 400;
	*end = i + 1;
	return -1;
}

int cli_http_request_parse(const char *buf, size_t len, size_t max, struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	size_t line = 0, end = 0;
	int s = request_line(buf, len, req, &line);
	if (s > 0)
		return s;
	if (s == 0)
		return len >= max ? 414 : 0; /* no request line yet */
	/* the header lines, up to the empty line: only a NUL refused (the
	 * bytes after the head, a body, are never looked at) */
	for (size_t i = line; i < len && !end; i++)
		if (buf[i] == '\0')
			return 400;
		else if (buf[i] == '\n' && (buf[i - 1] == '\n' || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')))
			end = i + 1;
	if (!end)
		return len >= max ? 431 : 0;
	size_t plen = strcspn(req->target, "?");
	bool metrics = plen == 8 && !strncmp(req->target, "/metrics", 8);
	bool healthz = plen == 8 && !strncmp(req->target, "/healthz", 8);
	if (!metrics && !healthz)
		return 404;
	if (strcmp(req->method, "GET") != 0)
		return 405;
	req->route = metrics ? HTTP_METRICS : HTTP_HEALTHZ;
	return 200;
}

const char *cli_http_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	}
	return "Error";
}

int cli_http_response_head(int status, const char *content_type, size_t content_length, char *buf, size_t len)
{
	return snprintf(buf, len,
			"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
			status, cli_http_reason(status), content_type, content_length,
			status == 405	? "Allow: GET\r\n"
			: status == 503 ? "Retry-After: 1\r\n"
					: "");
}
