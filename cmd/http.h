/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `nshash serve`'s HTTP (cmd/http.c): request heads in, status lines out. */
#ifndef NSH_CMD_HTTP_H
#define NSH_CMD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

enum http_route { HTTP_NONE = 0, HTTP_METRICS, HTTP_HEALTHZ };
struct http_request {
	char method[16];  /* "GET"; only A-Z */
	char target[256]; /* "/metrics", query included; printable ASCII */
	enum http_route route;
};
/* The request head received so far, buf[0..len) (max: what the server
 * reads at most): 0 while incomplete; else the status to answer: 200 with
 * req->route set (GET /metrics or /healthz, any query), 404 another path,
 * 405 another method on those paths, 400 a malformed request line (or a
 * NUL byte in the head), 414 a target of 256 bytes or more or no request
 * line within max, 431 no end of the head within max.  Each is decided at
 * the first byte that shows it: more bytes never change an answer given
 * (bytes after the head are not looked at). */
int cli_http_request_parse(const char *buf, size_t len, size_t max, struct http_request *req);
/* "Not Found", ... */
const char *cli_http_reason(int status);
/* The status line and headers ("Connection: close"; 405 with "Allow: GET",
 * 503 with "Retry-After: 1") into buf: snprintf's return. */
int cli_http_response_head(int status, const char *content_type, size_t content_length, char *buf, size_t len);

#endif
