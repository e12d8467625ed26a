/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The little HTTP of `nshash serve`: one request per connection, only its
 * head is read (and only the request line looked at), GET of /metrics and
 * /healthz answered, everything else refused with the status that says
 * why.  Pure functions: cmd/serve.c does the sockets. */
#include <stdio.h>
#include <string.h>

#include "http.h"

/* Where the head ends (the byte after the empty line), or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n' &&
		    ((i >= 1 && buf[i - 1] == '\n') || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')))
			return i + 1;
	return 0;
}

static bool token_char(char c)
{
	return c >= 'A' && c <= 'Z';
}

/* The request line "METHOD SP TARGET SP HTTP/1.x" (CR optional): 0 with
 * req filled, or the status that refuses it. */
static int request_line(const char *line, size_t len, struct http_request *req)
{
	if (len && line[len - 1] == '\r')
		len--;
	size_t i = 0, m = 0;
	for (; i < len && token_char(line[i]); i++)
		if (m + 1 < sizeof(req->method))
			req->method[m++] = line[i];
		else
			return 400;
	req->method[m] = '\0';
	if (!m || i >= len || line[i] != ' ')
		return 400;
	i++;
	size_t t0 = i;
	for (; i < len && line[i] != ' '; i++)
		if ((unsigned char)line[i] <= ' ' || (unsigned char)line[i] >= 0x7f)
			return 400;
	size_t tlen = i - t0;
	if (!tlen || line[t0] != '/')
		return 400;
	if (tlen >= sizeof(req->target))
		return 414;
	memcpy(req->target, line + t0, tlen);
	req->target[tlen] = '\0';
	if (i >= len || line[i] != ' ')
		return 400;
	i++;
	if (len - i != 8 || (memcmp(line + i, "HTTP/1.0", 8) != 0 && memcmp(line + i, "HTTP/1.1", 8) != 0))
		return 400;
	return 0;
}

int http_request_parse(const char *buf, size_t len, size_t max, struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	const char *nl = memchr(buf, '\n', len);
	if (memchr(buf, '\0', len))
		return 400;
	if (!nl) {
		/* not even a method: refused before the line ends */
		for (size_t i = 0; i < len && buf[i] != ' '; i++)
			if (!token_char(buf[i]) || i >= sizeof(req->method) - 1)
				return 400;
		return len >= max ? 414 : 0; /* no request line yet */
	}
	/* the request line decides early: a bad one is refused at once */
	int s = request_line(buf, (size_t)(nl - buf), req);
	if (s)
		return s;
	if (!head_end(buf, len))
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

const char *http_reason(int status)
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

int http_response_head(int status, const char *content_type, size_t content_length, char *buf, size_t len)
{
	return snprintf(buf, len,
			"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
			status, http_reason(status), content_type, content_length,
			status == 405	? "Allow: GET\r\n"
			: status == 503 ? "Retry-After: 1\r\n"
					: "");
}
