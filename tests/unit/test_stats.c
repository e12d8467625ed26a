/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash stats arithmetic: recommended sizes, which netns use the global
 * table, the shared totals and their top contributors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nshash.h"

static uint32_t rec(enum nshash_proto proto, long tcp, long tw, long udp)
{
	struct nshash_sockets s = {.tcp = tcp, .tcp_tw = tw, .tcp_listen = 0, .udp = udp};
	return nshash_stats_recommend(proto, &s);
}

static void test_recommend(void **state)
{
	(void)state;
	assert_int_equal(rec(NSHASH_TCP, 0, 0, 0), 128); /* the floor */
	assert_int_equal(rec(NSHASH_UDP, 0, 0, 0), 128);
	assert_int_equal(rec(NSHASH_TCP, 128, 0, 0), 128);
	assert_int_equal(rec(NSHASH_TCP, 129, 0, 0), 256);
	assert_int_equal(rec(NSHASH_UDP, 0, 0, 300), 512);
	assert_int_equal(rec(NSHASH_UDP, 0, 0, 65536), 65536);
	assert_int_equal(rec(NSHASH_UDP, 0, 0, 1000000), 65536); /* the kernel's maximum */
	assert_int_equal(rec(NSHASH_TCP, 1L << 30, 0, 0), 16777216);
	/* TIME_WAIT room: tcp_max_tw_buckets = entries / 2 */
	assert_int_equal(rec(NSHASH_TCP, 300, 300, 0), 1024);
	assert_int_equal(rec(NSHASH_TCP, -5, 0, -1), 128); /* nonsense stays sane */
}

static struct nshash_stats_netns ns(long tcp_entries, long udp_entries, bool host, long tcp, long udp)
{
	struct nshash_stats_netns e;
	memset(&e, 0, sizeof(e));
	e.info.tcp_entries = tcp_entries;
	e.info.udp_entries = udp_entries;
	e.host = host;
	e.sockets.tcp = tcp;
	e.sockets.udp = udp;
	return e;
}

static void test_global(void **state)
{
	(void)state;
	struct nshash_stats_netns shared = ns(-262144, -16384, false, 0, 0), own = ns(4096, 1024, false, 0, 0),
				  host = ns(262144, 16384, true, 0, 0), none = ns(0, 0, false, 0, 0),
				  mixed = ns(4096, -16384, false, 0, 0);
	assert_true(nshash_stats_global(&shared, NSHASH_TCP));
	assert_true(nshash_stats_global(&host, NSHASH_UDP));
	assert_false(nshash_stats_global(&own, NSHASH_TCP));
	assert_false(nshash_stats_global(&none, NSHASH_TCP)); /* knob missing: unknown, not counted */
	assert_false(nshash_stats_global(&mixed, NSHASH_TCP));
	assert_true(nshash_stats_global(&mixed, NSHASH_UDP));
}

static void test_shared_totals(void **state)
{
	(void)state;
	struct nshash_stats_netns v[] = {
	    ns(262144, 16384, true, 100, 5),	/* 0 host */
	    ns(-262144, -16384, false, 7, 0),	/* 1 */
	    ns(4096, 1024, false, 999999, 99),	/* 2 own: not in the totals */
	    ns(-262144, -16384, false, 500, 3), /* 3 */
	    ns(-262144, 1024, false, 7, 1000),	/* 4: tcp shared, udp own */
	    ns(-262144, -16384, false, 0, 0),	/* 5: no sockets, not a contributor */
	    ns(-262144, -16384, false, 1, 1),	/* 6 */
	    ns(-262144, -16384, false, 2, 2),	/* 7 */
	    ns(-262144, -16384, false, 3, 0),	/* 8 */
	};
	struct nshash_stats_shared sh;
	nshash_stats_shared(v, sizeof(v) / sizeof(v[0]), NSHASH_TCP, &sh);
	assert_int_equal(sh.buckets, 262144);
	assert_int_equal(sh.netns, 8);
	assert_int_equal(sh.sockets, 100 + 7 + 500 + 7 + 0 + 1 + 2 + 3);
	assert_true(sh.chain > 620.0 / 262144 - 1e-9 && sh.chain < 620.0 / 262144 + 1e-9);
	assert_int_equal(sh.ntop, NSHASH_STATS_TOP);
	size_t want[NSHASH_STATS_TOP] = {3, 0, 1, 4, 8}; /* ties keep scan order */
	for (size_t i = 0; i < NSHASH_STATS_TOP; i++)
		assert_int_equal(sh.top[i], want[i]);

	nshash_stats_shared(v, sizeof(v) / sizeof(v[0]), NSHASH_UDP, &sh);
	assert_int_equal(sh.buckets, 16384);
	assert_int_equal(sh.netns, 7);
	assert_int_equal(sh.sockets, 5 + 0 + 3 + 0 + 1 + 2 + 0);
	assert_int_equal(sh.ntop, 4); /* only netns with sockets */
	size_t want_udp[] = {0, 3, 7, 6};
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(sh.top[i], want_udp[i]);

	nshash_stats_shared(&v[2], 1, NSHASH_TCP, &sh);
	assert_int_equal(sh.netns, 0);
	assert_int_equal(sh.buckets, 0);
	assert_true(sh.chain == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recommend),
	    cmocka_unit_test(test_global),
	    cmocka_unit_test(test_shared_totals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
