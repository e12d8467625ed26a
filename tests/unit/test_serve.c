/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash serve's pieces: the HTTP request heads it accepts and refuses
 * (cmd/http.c), Prometheus label values (common/text.c), the CNI plugin's
 * pod records and ADD counters (common/cnistate.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cnistate.h"
#include "common.h"
#include "http.h"

static int parse(const char *text, struct http_request *req)
{
	return cli_http_request_parse(text, strlen(text), 8192, req);
}

static void test_requests(void **state)
{
	(void)state;
	struct http_request r;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r), 200);
	assert_int_equal(r.route, HTTP_METRICS);
	assert_int_equal(parse("GET /healthz HTTP/1.0\n\n", &r), 200);
	assert_int_equal(r.route, HTTP_HEALTHZ);
	assert_int_equal(parse("GET /metrics?x=1 HTTP/1.1\r\n\r\n", &r), 200);
	assert_int_equal(r.route, HTTP_METRICS);
	/* incomplete: wait */
	assert_int_equal(parse("", &r), 0);
	assert_int_equal(parse("GE", &r), 0);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n", &r), 0);
	/* other paths and methods */
	assert_int_equal(parse("GET / HTTP/1.1\r\n\r\n", &r), 404);
	assert_int_equal(parse("GET /metricsx HTTP/1.1\r\n\r\n", &r), 404);
	assert_int_equal(parse("GET /metrics/ HTTP/1.1\r\n\r\n", &r), 404);
	assert_int_equal(parse("POST /metrics HTTP/1.1\r\n\r\n", &r), 405);
	assert_int_equal(parse("HEAD /healthz HTTP/1.1\r\n\r\n", &r), 405);
	assert_int_equal(parse("DELETE /nope HTTP/1.1\r\n\r\n", &r), 404);
	/* malformed: refused as soon as the request line shows it */
	assert_int_equal(parse("\x16\x03\x01\x02", &r), 400);
	assert_int_equal(parse("get /metrics HTTP/1.1\r\n", &r), 400);
	assert_int_equal(parse("GET /metrics\r\n", &r), 400);
	assert_int_equal(parse("GET metrics HTTP/1.1\r\n", &r), 400);
	assert_int_equal(parse("GET /metrics HTTP/2.0\r\n", &r), 400);
	assert_int_equal(parse("GET  /metrics HTTP/1.1\r\n", &r), 400);
	assert_int_equal(parse("GET /me\x1btrics HTTP/1.1\r\n", &r), 400);
	assert_int_equal(parse("GET /me\x80 HTTP/1.1\r\n", &r), 400);
	assert_int_equal(parse("GETTTTTTTTTTTTTTTTTTTTT /metrics HTTP/1.1\r\n", &r), 400);
	assert_int_equal(cli_http_request_parse("GET /metrics HTTP/1.1\r\n\0\r\n\r\n", 29, 8192, &r), 400);
	/* a NUL after the head (a body serve never reads): as if it came in a
	 * later read, the head decides */
	assert_int_equal(cli_http_request_parse("GET /healthz HTTP/1.1\r\n\r\n\0", 26, 8192, &r), 200);
	assert_int_equal(r.route, HTTP_HEALTHZ);
	assert_int_equal(cli_http_request_parse("GET /healthz HTTP/1.1\r\n\r\nX\0", 27, 8192, &r), 200);
	/* decided at the first byte that shows it, whatever follows (as if
	 * the rest came in a later read) */
	char big[9000];
	int at = snprintf(big, sizeof(big), "GET /%0300d\x01 HTTP/1.1\r\n\r\n", 0);
	assert_int_equal(cli_http_request_parse(big, (size_t)at, 8192, &r), 414);
	assert_int_equal(cli_http_request_parse(big, 4 + 255, 8192, &r), 0);   /* a target of 255 bytes */
	assert_int_equal(cli_http_request_parse(big, 4 + 256, 8192, &r), 414); /* its 256th byte */
	at = snprintf(big, sizeof(big), "GET /%0300d HTTP/1.1\r\nX: ", 0);
	big[at] = '\0';
	assert_int_equal(cli_http_request_parse(big, (size_t)at + 1, 8192, &r), 414);
	assert_int_equal(cli_http_request_parse("GET /metrics HTTP/1.1\r\nX: a", 27, 8192, &r), 0);
	assert_int_equal(cli_http_request_parse("GET /metrics HTTP/1.1\r\nX: a\0", 28, 8192, &r), 400);
	assert_int_equal(cli_http_request_parse("GET /metrics HTTP/1.1\r", 22, 8192, &r), 0);
	assert_int_equal(cli_http_request_parse("GET /metrics HTTP/1.1\r\r\n", 24, 8192, &r), 400);
	/* sizes */
	memset(big, 0, sizeof(big));
	snprintf(big, sizeof(big), "GET /%0300d HTTP/1.1\r\n\r\n", 0);
	assert_int_equal(parse(big, &r), 414);
	memset(big, 'a', 8192);
	memcpy(big, "GET /", 5);
	assert_int_equal(cli_http_request_parse(big, 8192, 8192, &r), 414); /* no request line in 8 KiB */
	int n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX: ");
	memset(big + n, 'a', 8192 - (size_t)n);
	assert_int_equal(cli_http_request_parse(big, 8192, 8192, &r), 431);
	assert_int_equal(cli_http_request_parse(big, 4000, 8192, &r), 0);
}

static void test_response_head(void **state)
{
	(void)state;
	char buf[256];
	cli_http_response_head(405, "text/plain", 5, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
				 "Allow: GET\r\nConnection: close\r\n\r\n");
	cli_http_response_head(503, "text/plain", 5, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
				 "Retry-After: 1\r\nConnection: close\r\n\r\n");
	cli_http_response_head(200, "text/plain; version=0.0.4", 0, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: 0\r\n"
				 "Connection: close\r\n\r\n");
}

static void test_labels(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
		size_t len; /* of the buffer */
	} cases[] = {
	    {"kube-system", "kube-system", 64},
	    {"a\"b\\c\nd", "a\\\"b\\\\c\\nd", 64},
	    /* control characters and bytes that are not UTF-8: U+FFFD */
	    {"t\tr\r\x1b", "t\xef\xbf\xbdr\xef\xbf\xbd\xef\xbf\xbd", 64},
	    {"\xff\xc3(\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd", 64},
	    /* an overlong '/', a surrogate */
	    {"\xc0\xaf\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 64},
	    /* valid UTF-8 kept */
	    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 64},
	    /* cut when full, never inside an escape or a character */
	    {"ab\"cd", "ab\\\"c", 6},
	    {"abcd\"", "abcd", 6},
	    {"abc\xc3\xa9", "abc\xc3\xa9", 6},
	    {"abcd\xc3\xa9", "abcd", 6},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];
		size_t n = nsh_prom_label(cases[i].in, buf, cases[i].len);
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
	}
}

static void test_cni_pods(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-test-serve-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct nshash_error err = {0};
	uint64_t c[3] = {9, 9, 9};
	/* nothing yet: zeros */
	assert_int_equal(nsh_cni_adds_read(dir, c, &err), 0);
	assert_true(c[0] == 0 && c[1] == 0 && c[2] == 0);
	assert_int_equal(nsh_cni_adds_count(dir, NSH_CNI_SIZED, &err), 0);
	assert_int_equal(nsh_cni_adds_count(dir, NSH_CNI_SIZED, &err), 0);
	assert_int_equal(nsh_cni_adds_count(dir, NSH_CNI_REFUSED, &err), 0);
	assert_int_equal(nsh_cni_adds_count(dir, NSH_CNI_UNSIZED, &err), 0); /* not counted */
	assert_int_equal(nsh_cni_adds_read(dir, c, &err), 0);
	assert_true(c[0] == 2 && c[1] == 0 && c[2] == 1);

	struct nsh_cni_pod r = {.inode = 4026532000ull, .outcome = NSH_CNI_WARNED};
	snprintf(r.id, sizeof(r.id), "abc-1");
	snprintf(r.namespace_, sizeof(r.namespace_), "-");
	snprintf(r.pod, sizeof(r.pod), "p o%%d\n\"\\\xff");
	snprintf(r.netns, sizeof(r.netns), "%s/cni-1 2", dir); /* its dir is there, its pin not */
	assert_int_equal(nsh_cni_pod_write(dir, &r, &err), 0);
	struct nsh_cni_pod bad = r;
	snprintf(bad.id, sizeof(bad.id), "../x");
	assert_true(nsh_cni_pod_write(dir, &bad, &err) < 0);
	struct nsh_cni_pod *v;
	size_t n;
	assert_int_equal(nsh_cni_pods_read(dir, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].id, "abc-1");
	assert_string_equal(v[0].namespace_, "-");
	assert_string_equal(v[0].pod, r.pod);
	assert_string_equal(v[0].netns, r.netns);
	assert_int_equal(v[0].outcome, NSH_CNI_WARNED);
	/* the inode alone is not enough: its netns is not at its path (a stale
	 * record, a DEL that never came): it labels no netns of that inode */
	assert_null(nsh_cni_pod_find(v, n, 4026532000ull));
	assert_null(nsh_cni_pod_find(v, n, 1));
	/* another file at its path with that inode: not its netns either */
	char file[256];
	snprintf(file, sizeof(file), "%s/cni/not-a-netns", dir);
	FILE *nf = fopen(file, "w");
	assert_non_null(nf);
	fclose(nf);
	struct stat fst;
	assert_int_equal(stat(file, &fst), 0);
	snprintf(v[0].netns, sizeof(v[0].netns), "%s", file);
	v[0].inode = (uint64_t)fst.st_ino;
	assert_null(nsh_cni_pod_find(v, n, v[0].inode));
	assert_int_equal(unlink(file), 0);
	free(v);
	/* its netns is not there: pruned */
	size_t removed;
	assert_int_equal(nsh_cni_pods_prune(dir, &removed, &err), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(nsh_cni_pods_read(dir, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(nsh_cni_pod_remove(dir, "abc-1", &err), 0); /* gone already: fine */
	/* its netns's directory is not in this view (a node container without
	 * the runtime's /run/netns mounted): cannot tell gone from unseen, kept */
	struct nsh_cni_pod hidden = r;
	snprintf(hidden.netns, sizeof(hidden.netns), "%s/no-such-dir/cni-1", dir);
	assert_int_equal(nsh_cni_pod_write(dir, &hidden, &err), 0);
	assert_int_equal(nsh_cni_pods_prune(dir, &removed, &err), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(nsh_cni_pods_read(dir, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	free(v);
	/* the directory is there with the pin's file but not its mount (a
	 * non-recursive bind of the runtime's dir, no propagation): a plain
	 * file where the netns should be cannot tell gone from unseen, kept */
	char hdir[256], hfile[300];
	snprintf(hdir, sizeof(hdir), "%s/no-such-dir", dir);
	assert_int_equal(mkdir(hdir, 0700), 0);
	snprintf(hfile, sizeof(hfile), "%s/cni-1", hdir);
	FILE *hf = fopen(hfile, "w");
	assert_non_null(hf);
	fclose(hf);
	assert_int_equal(nsh_cni_pods_prune(dir, &removed, &err), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(unlink(hfile), 0);
	/* once the directory is there and the pin is not: gone, pruned */
	assert_int_equal(nsh_cni_pods_prune(dir, &removed, &err), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(rmdir(hdir), 0);
	/* a netns that is no absolute path: never a netns, pruned (whatever
	 * errno was left by the calls before) */
	struct nsh_cni_pod rel = r;
	snprintf(rel.netns, sizeof(rel.netns), "run/netns/cni-1");
	assert_int_equal(nsh_cni_pod_write(dir, &rel, &err), 0);
	errno = EACCES;
	assert_int_equal(nsh_cni_pods_prune(dir, &removed, &err), 0);
	assert_int_equal(removed, 1);

	char path[256], elsewhere[200];
	snprintf(path, sizeof(path), "%s/cni/pods", dir);
	assert_int_equal(rmdir(path), 0);
	/* cni/pods a symlink: not written through, nor removed through */
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	assert_int_equal(symlink(elsewhere, path), 0);
	assert_true(nsh_cni_pod_write(dir, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "/cni/pods"));
	snprintf(file, sizeof(file), "%s/abc-1", elsewhere);
	assert_int_equal(close(open(file, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
	assert_true(nsh_cni_pod_remove(dir, "abc-1", &err) < 0);
	assert_int_equal(access(file, F_OK), 0); /* still there */
	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(elsewhere), 0);
	assert_int_equal(unlink(path), 0);

	snprintf(path, sizeof(path), "%s/cni/adds", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/cni", dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_pod_netns(void **state)
{
	(void)state;
	assert_true(nsh_pod_netns_path("/run/netns/cni-1234"));
	assert_true(nsh_pod_netns_path("/var/run/netns/cni-x"));
	assert_false(nsh_pod_netns_path("/run/netns/cni-"));
	assert_false(nsh_pod_netns_path("/run/netns/other"));
	assert_false(nsh_pod_netns_path("/run/netns/cni-a/b"));
	/* CRI-O: namespaces_dir/netns/UUID */
	assert_true(nsh_pod_netns_path("/var/run/netns/0b5c2d9e-41f7-4c1a-9a3e-5d2f6b7c8e90"));
	assert_true(nsh_pod_netns_path("/run/netns/0b5c2d9e-41f7-4c1a-9a3e-5d2f6b7c8e90"));
	assert_false(nsh_pod_netns_path("/run/netns/0B5C2D9E-41F7-4C1A-9A3E-5D2F6B7C8E90"));
	assert_false(nsh_pod_netns_path("/run/netns/0b5c2d9e-41f7-4c1a-9a3e-5d2f6b7c8e9"));
	assert_false(nsh_pod_netns_path("/run/netns/0b5c2d9e-41f7-4c1a-9a3e-5d2f6b7c8e901"));
	assert_false(nsh_pod_netns_path("/run/netns/netns-0b5c2d9e-41f7-4c1a-9a3e-5d2f6b7c8e90"));
	struct nshash_stats_netns e = {.pinned = true, .kind = NSHASH_ENTRY_NETNS};
	snprintf(e.name, sizeof(e.name), "/run/netns/cni-1");
	e.info.tcp_entries = -262144;
	e.info.udp_entries = -16384;
	struct nsh_cni_pod warned = {.outcome = NSH_CNI_WARNED}, sized = {.outcome = NSH_CNI_SIZED};
	assert_string_equal(nsh_pod_netns_shared(&e, NULL), "unseen");
	assert_string_equal(nsh_pod_netns_shared(&e, &warned), "warned");
	assert_null(nsh_pod_netns_shared(&e, &sized));
	e.info.tcp_entries = 4096;
	assert_string_equal(nsh_pod_netns_shared(&e, NULL), "unseen"); /* udp shared */
	e.info.udp_entries = 1024;
	assert_null(nsh_pod_netns_shared(&e, NULL));
	e.info.tcp_entries = -1;
	e.kind = NSHASH_ENTRY_TEMPLATE;
	assert_null(nsh_pod_netns_shared(&e, NULL));
	/* elsewhere (CRI-O's pins, a process's netns): only a record tells a pod */
	struct nshash_stats_netns proc = {.info = {.tcp_entries = -262144, .udp_entries = -16384}};
	snprintf(proc.name, sizeof(proc.name), "pid:42");
	assert_null(nsh_pod_netns_shared(&proc, NULL));
	assert_string_equal(nsh_pod_netns_shared(&proc, &warned), "warned");
	assert_null(nsh_pod_netns_shared(&proc, &sized));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requests),	cmocka_unit_test(test_response_head), cmocka_unit_test(test_labels),
	    cmocka_unit_test(test_cni_pods), cmocka_unit_test(test_pod_netns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
