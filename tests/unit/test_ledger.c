/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table ledger's parser (last event of an id wins, bad lines ignored,
 * one netns counted once) and the reclaim rate limit, in a private dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

#define ID1 "0123456789abcdef"
#define ID2 "fedcba9876543210"
#define ID3 "00000000000000aa"

static struct nsh_ledger parse(const char *text)
{
	struct nsh_ledger l;
	char *copy = strdup(text);
	assert_non_null(copy);
	assert_int_equal(nsh_ledger_parse(copy, strlen(copy), &l), 0);
	l.text = copy; /* freed with the ledger */
	return l;
}

static size_t counted(const struct nsh_ledger *l)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += !l->v[i].drop;
	return n;
}

static void test_last_event_wins(void **state)
{
	(void)state;
	struct nsh_ledger l = parse("R " ID1 " 98304 4096 1024 42 7 1700000000 /run/netns/a\n"
				    "N " ID2 " 1024 128 0 4026530000 - 1700000000 -\n"
				    "N " ID1 " 98304 4096 1024 4026531111 - 1700000001 /run/netns/a b\n"
				    "N " ID3 " 1024 128 0 4026532222 - 1700000002 /p\n"
				    "X " ID3 "\n");
	assert_int_equal(l.n, 2);
	assert_int_equal(l.lines, 5);
	assert_int_equal(l.v[0].kind, 'N'); /* in file order: ID2 first */
	assert_string_equal(l.v[0].id, ID2);
	assert_string_equal(l.v[0].pin, "");
	assert_string_equal(l.v[1].id, ID1);
	assert_int_equal(l.v[1].kind, 'N');
	assert_int_equal(l.v[1].ino, 4026531111ull);
	assert_int_equal(l.v[1].bytes, 98304);
	assert_string_equal(l.v[1].pin, "/run/netns/a b"); /* the rest of the line */
	nsh_ledger_free(&l);
}

static void test_bad_lines_ignored(void **state)
{
	(void)state;
	struct nsh_ledger l = parse("N " ID1 " 98305 4096 1024 4026531111 - 1 /a\n" /* bytes do not match the sizes */
				    "N " ID1 " 98304 4096 1024 0 - 1 /a\n"	    /* inode 0 */
				    "N 0123 98304 4096 1024 5 - 1 /a\n"		    /* short id */
				    "N " ID1 " 98304 4096 1024 5 1\n"		    /* no pin field */
				    "N " ID1 " 8 1 0 5 - 1 /a\n"		    /* tcp 1: 8 bytes, fine */
				    "N " ID2 " 134217736 16777217 0 5 - 1 /a\n"	    /* tcp above the kernel's max */
				    "R " ID2 " 8 1 0 0 1 1 /a\n"		    /* pid 0 */
				    "Q " ID2 "\n"				    /* unknown kind */
				    "X " ID2 " trailing\n"			    /* X takes no more */
				    "N " ID3 " -8 1 0 5 - 1 /a\n"		    /* sign */
				    "N " ID3 " 8 1 0 5 - 1 /unfinished");	    /* no newline: a writer died */
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].id, ID1);
	assert_int_equal(l.v[0].bytes, 8);
	nsh_ledger_free(&l);
	char nul[] = "N " ID1 " 8 1 0 5 - 1 /a\0b\n";
	struct nsh_ledger m;
	assert_int_equal(nsh_ledger_parse(nul, sizeof(nul) - 1, &m), 0);
	assert_int_equal(m.n, 0); /* a NUL inside a line: not a record */
	nsh_ledger_free(&m);
}

static void test_one_netns_counted_once(void **state)
{
	(void)state;
	struct nsh_ledger l = parse("H 2\n"
				    "N " ID1 " 8 1 0 77 - 1 /a\n"
				    "N " ID2 " 8 1 0 77 - 2 /b\n"
				    "N " ID3 " 8 1 0 78 - 3 /c\n");
	assert_int_equal(l.base, 2);
	assert_int_equal(l.n, 3);
	assert_int_equal(counted(&l), 2);
	assert_true(l.v[0].drop); /* the older record of inode 77 */
	nsh_ledger_free(&l);
}

static void test_empty_and_header(void **state)
{
	(void)state;
	struct nsh_ledger l = parse("");
	assert_int_equal(l.n, 0);
	nsh_ledger_free(&l);
	l = parse("H 5\n");
	assert_int_equal(l.base, 5);
	assert_int_equal(l.n, 0);
	nsh_ledger_free(&l);
	l = parse("N " ID1 " 8 1 0 5 - 1 /a\nH 9\n"); /* a header only counts first */
	assert_int_equal(l.base, 0);
	assert_int_equal(l.n, 1);
	nsh_ledger_free(&l);
}

static void test_file_handles(void **state)
{
	(void)state;
	struct nsh_ledger l = parse("N " ID1 " 8 1 0 5 241.0011aaff 1 /a\n"
				    "N " ID2 " 8 1 0 6 241. 1 /b\n"	/* no bytes */
				    "N " ID3 " 8 1 0 7 241.0g 1 /c\n"); /* not hex */
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].handle_type, 241);
	assert_int_equal(l.v[0].handle_len, 4);
	assert_memory_equal(l.v[0].handle, "\x00\x11\xaa\xff", 4);
	nsh_ledger_free(&l);
	l = parse("N " ID1 " 8 1 0 5 .00 1 /a\n"     /* no type */
		  "N " ID2 " 8 1 0 6 241.001 1 /b\n" /* odd length */
		  "N " ID3 " 8 1 0 7 -1.00 1 /c\n"); /* negative type */
	assert_int_equal(l.n, 0);
	nsh_ledger_free(&l);
}

static void test_sizes_bytes(void **state)
{
	(void)state;
	assert_int_equal(nshash_sizes_bytes((struct nshash_sizes){4096, 1024}), 4096 * 8 + 1024 * 64);
	assert_int_equal(nshash_sizes_bytes((struct nshash_sizes){0, 0}), 0);
	assert_int_equal(nshash_sizes_bytes((struct nshash_sizes){NSHASH_TCP_MAX, NSHASH_UDP_MAX}),
			 134217728ull + 4194304ull);
}

/* nshash_reclaim's rate limit needs no privilege: a dir with no pins. */
static void test_reclaim_rate_limit(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-unit-reclaim-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct nshash_reclaim_opts o0 = {.state_dir = dir, .interval = 60};
	struct nshash_reclaim_report r0;
	assert_int_equal(nshash_reclaim(&o0, &r0, NULL), 0);
	assert_false(r0.ran); /* nothing of ours there: no run, no stamp left */
	char pins[96];
	snprintf(pins, sizeof(pins), "%s/pins", dir);
	assert_int_equal(access(pins, F_OK), -1);
	assert_int_equal(mkdir(pins, 0700), 0);
	struct nshash_reclaim_opts o = {.state_dir = dir, .interval = 60};
	struct nshash_reclaim_report rep;
	struct nshash_error err = {0};
	assert_int_equal(nshash_reclaim(&o, &rep, &err), 0);
	assert_true(rep.ran);
	assert_int_equal(nshash_reclaim(&o, &rep, &err), 0);
	assert_false(rep.ran); /* within the interval */
	o.interval = 0;
	assert_int_equal(nshash_reclaim(&o, &rep, &err), 0);
	assert_true(rep.ran); /* 0 = now */
	/* 8 processes at once on an expired stamp: exactly one runs. */
	char stamp[96];
	snprintf(stamp, sizeof(stamp), "%s/reclaim.stamp", dir);
	struct timespec old[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};
	assert_int_equal(utimensat(AT_FDCWD, stamp, old, 0), 0);
	int ran = 0;
	pid_t kids[8];
	for (int i = 0; i < 8; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct nshash_reclaim_opts k = {.state_dir = dir, .interval = 60};
			struct nshash_reclaim_report r;
			_exit(nshash_reclaim(&k, &r, NULL) == 0 && r.ran ? 10 : 11);
		}
	}
	for (int i = 0; i < 8; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		ran += WIFEXITED(st) && WEXITSTATUS(st) == 10;
	}
	assert_int_equal(ran, 1);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_last_event_wins),
	    cmocka_unit_test(test_bad_lines_ignored),
	    cmocka_unit_test(test_one_netns_counted_once),
	    cmocka_unit_test(test_empty_and_header),
	    cmocka_unit_test(test_sizes_bytes),
	    cmocka_unit_test(test_file_handles),
	    cmocka_unit_test(test_reclaim_rate_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
