/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto`: the rule, the decay, the history file (format, repair, LRU),
 * workload keys and pod owner names (common/auto-history.c, auto-keys.c,
 * auto-marks.c), the start path's index (common/auto-index.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "auto.h"
#include "common.h"
#include "internal.h" /* nsh_netns_cookie */

static void test_rule(void **state)
{
	(void)state;
	/* peak x 2, next power of two, at least 128, at most the cap */
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 0, 0), 128);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 64, 0), 128);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 65, 0), 256);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 5000, 0), 16384);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 10000, 0), 32768);
	assert_int_equal(nsh_auto_size(NSHASH_UDP, 3000, 0), 8192);
	assert_int_equal(nsh_auto_size(NSHASH_UDP, 4096, 0), 8192);
	assert_int_equal(nsh_auto_size(NSHASH_UDP, 4097, 0), 16384);
	assert_int_equal(nsh_auto_size(NSHASH_UDP, 1000000, 0), NSHASH_UDP_MAX);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 100000000, 0), NSHASH_TCP_MAX);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 5000, 4096), 4096); /* the policy's cap */
	assert_int_equal(nsh_auto_size(NSHASH_TCP, -5, 0), 128);
	/* a cap that is no power of two: the largest power of two within it
	 * (the kernel would round 3000 up to 4096, above the cap) */
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 5000, 3000), 2048);
	assert_int_equal(nsh_auto_size(NSHASH_TCP, 100, 3000), 256);
	/* no power of two >= the minimum within the cap: the shared tables */
	assert_int_equal(nsh_auto_size(NSHASH_UDP, 5000, 100), 0);
}

static void test_decay(void **state)
{
	(void)state;
	struct nsh_history_entry e = {.tcp_peak = 10000, .tcp_at = 1000, .udp_peak = 100, .udp_at = 1000};
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, 1000), 10000);
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, 1000 + 86400), 9800);
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, 1000 + 2 * 86400), 9604);
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, 1000 + 43200), 9900); /* half a day */
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, 1000 + 3651LL * 86400), 0);
	/* a lower sample keeps the (decayed) peak; a higher one replaces it */
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	assert_int_equal(nsh_history_sample(&h, "a:b:c", 10000, 50, 1000, &err), 0);
	assert_int_equal(nsh_history_sample(&h, "a:b:c", 10, 60, 1000 + 86400, &err), 0);
	struct nsh_history_entry *p = nsh_history_find(&h, "a:b:c");
	assert_non_null(p);
	assert_int_equal(p->tcp_peak, 10000);
	assert_int_equal(p->tcp_at, 1000);
	assert_int_equal(p->udp_peak, 60);
	assert_int_equal(p->last_seen, 1000 + 86400);
	nsh_history_free(&h);
}

static void test_keys(void **state)
{
	(void)state;
	char k[NSH_WORKLOAD_KEY_MAX], shown[NSH_WORKLOAD_KEY_MAX * 3 + 4];
	struct nshash_error err = {0};
	assert_int_equal(nsh_workload_key("cni", "default", "w=web", k, sizeof(k), &err), 0);
	assert_string_equal(k, "cni:default:w=web");
	char big[300];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(nsh_workload_key("cni", "x", big, k, sizeof(k), &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "at most 200"));
	/* a 200-byte io.nshash.workload is valid, and so is its key with the
	 * front-end's prefix; 201 bytes are not */
	big[200] = '\0';
	assert_int_equal(nsh_workload_check(big, &err), 0);
	char wname[sizeof(big) + 4];
	snprintf(wname, sizeof(wname), "w=%s", big);
	assert_int_equal(nsh_workload_key("runtime", "x", wname, k, sizeof(k), &err), 0);
	big[200] = 'a';
	big[201] = '\0';
	assert_int_equal(nsh_workload_check(big, &err), -ENAMETOOLONG);
	assert_int_equal(nsh_workload_key("cni", "x", "a\nb", k, sizeof(k), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control characters"));
	assert_int_equal(nsh_workload_key("cni", "x", "../../etc passwd%", k, sizeof(k), &err), 0);
	nsh_workload_show(k, shown, sizeof(shown));
	assert_string_equal(shown, "cni:x:../../etc%20passwd%25");
}

static void test_pod_owner(void **state)
{
	(void)state;
	char o[256];
	nsh_pod_owner("web-7d4b9c8f6d-x2k9p", o, sizeof(o)); /* Deployment */
	assert_string_equal(o, "web");
	nsh_pod_owner("web-x2k9p", o, sizeof(o)); /* ReplicaSet, DaemonSet, Job */
	assert_string_equal(o, "web");
	nsh_pod_owner("db-12", o, sizeof(o)); /* StatefulSet */
	assert_string_equal(o, "db");
	nsh_pod_owner("my-app", o, sizeof(o)); /* "app" is not a generated suffix */
	assert_string_equal(o, "my-app");
	nsh_pod_owner("cache-abcde", o, sizeof(o)); /* 'a', 'e' are not in the alphabet */
	assert_string_equal(o, "cache-abcde");
	nsh_pod_owner("solo", o, sizeof(o));
	assert_string_equal(o, "solo");
	nsh_pod_owner("-12", o, sizeof(o));
	assert_string_equal(o, "-12");
}

static void test_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-unit-history-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct nsh_history h = {0}, back;
	struct nshash_error err = {0};
	char warn[4500], path[4200];
	snprintf(path, sizeof(path), "%s/history", dir);
	/* missing: empty, no warning */
	assert_int_equal(nsh_history_load(dir, &back, warn, sizeof(warn), &err), 0);
	assert_int_equal(back.n, 0);
	assert_string_equal(warn, "");
	assert_int_equal(nsh_history_sample(&h, "runtime::id=a b\x01", 5000, 3000, 100, &err), 0);
	assert_int_equal(nsh_history_sample(&h, "cni:ns:w=k", 7, 8, 200, &err), 0);
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	nsh_history_free(&h);
	assert_int_equal(nsh_history_load(dir, &back, warn, sizeof(warn), &err), 0);
	assert_string_equal(warn, "");
	assert_int_equal(back.n, 2);
	struct nsh_history_entry *e = nsh_history_find(&back, "runtime::id=a b\x01");
	assert_non_null(e);
	assert_int_equal(e->tcp_peak, 5000);
	assert_int_equal(e->udp_peak, 3000);
	assert_int_equal(e->last_seen, 100);
	nsh_history_free(&back);
	/* the exact text */
	FILE *f = fopen(path, "r");
	char text[1000];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* the most recently seen first */
	assert_string_equal(text, "nshash-history 1\n"
				  "w cni:ns:w=k 7 200 8 200 200\n"
				  "w runtime::id=a%20b%01 5000 100 3000 100 100\n");
	/* torn: the last line cut; corrupt: garbage lines; both repaired */
	f = fopen(path, "w");
	fputs("nshash-history 1\nw good 1 2 3 4 5\nw bad x 2 3 4 5\n\x01\x02garbage\nw torn 1 2", f);
	fclose(f);
	assert_int_equal(nsh_history_load(dir, &back, warn, sizeof(warn), &err), 0);
	assert_int_equal(back.n, 1);
	assert_non_null(nsh_history_find(&back, "good"));
	assert_non_null(strstr(warn, "3 damaged lines dropped"));
	nsh_history_free(&back);
	/* no header at all: what parses is kept, the header counts as damage */
	f = fopen(path, "w");
	fputs("\xff\xfe binary junk\n", f);
	fclose(f);
	assert_int_equal(nsh_history_load(dir, &back, warn, sizeof(warn), &err), 0);
	assert_int_equal(back.n, 0);
	assert_non_null(strstr(warn, "damaged line"));
	nsh_history_free(&back);
	unlink(path);
	snprintf(path, sizeof(path), "%s/history.idx", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* One key's entry through load_key: its tcp peak, -1 when none. */
static long key_tcp(const char *dir, const char *key, char *warn, size_t wlen)
{
	struct nsh_history h;
	struct nshash_error err = {0};
	assert_int_equal(nsh_history_load_key(dir, key, &h, warn, wlen, &err), 0);
	struct nsh_history_entry *e = nsh_history_find(&h, key);
	long v = e ? e->tcp_peak : -1;
	nsh_history_free(&h);
	return v;
}

static void flip(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static void test_index(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-unit-hidx-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char hpath[4200], ipath[4200], warn[9000];
	snprintf(hpath, sizeof(hpath), "%s/history", dir);
	snprintf(ipath, sizeof(ipath), "%s/history.idx", dir);
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	/* no history, no index: none, quietly */
	assert_int_equal(key_tcp(dir, "a", warn, sizeof(warn)), -1);
	assert_string_equal(warn, "");
	/* keys that are prefixes of each other, escapes, a long one */
	char longkey[NSH_WORKLOAD_KEY_MAX];
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	const char *keys[] = {"cni:shop:pod=web", "cni:shop:pod=we", "cni:shop:pod=web2", "runtime::id=a b\x01",
			      longkey};
	for (int i = 0; i < 5; i++)
		assert_int_equal(nsh_history_sample(&h, keys[i], 100 + i, 7, 1000, &err), 0);
	for (int i = 0; i < 300; i++) { /* more than a bucket or two */
		char k[32];
		snprintf(k, sizeof(k), "bench:w%d:pod=w%d", i, i);
		assert_int_equal(nsh_history_sample(&h, k, 1000 + i, 7, 900, &err), 0);
	}
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	struct stat st;
	assert_int_equal(stat(ipath, &st), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(key_tcp(dir, keys[i], warn, sizeof(warn)), 100 + i);
		assert_string_equal(warn, "");
	}
	assert_int_equal(key_tcp(dir, "bench:w299:pod=w299", warn, sizeof(warn)), 1299);
	assert_int_equal(key_tcp(dir, "cni:shop:pod=w", warn, sizeof(warn)), -1);
	assert_string_equal(warn, "");
	assert_int_equal(key_tcp(dir, "cni:shop:pod=web ", warn, sizeof(warn)), -1);
	/* every key in one bucket (what a hostile choice of keys could at
	 * most reach): each still gets its own entry, never a neighbour's */
	assert_int_equal(stat(hpath, &st), 0);
	assert_int_equal(nsh_history_index_write(dir, &h, &st, 1, &err), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(key_tcp(dir, keys[i], warn, sizeof(warn)), 100 + i);
		assert_string_equal(warn, "");
	}
	assert_int_equal(key_tcp(dir, "cni:shop:pod=w", warn, sizeof(warn)), -1);
	assert_string_equal(warn, "");
	/* damaged: a byte of the data flipped, the file cut, the header
	 * flipped: the history answers, with a warning */
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(stat(ipath, &st), 0);
	for (off_t at = st.st_size - 1; at > st.st_size - 20000 && at > 100; at -= 997) {
		flip(ipath, at);
		for (int i = 0; i < 5; i++)
			assert_int_equal(key_tcp(dir, keys[i], warn, sizeof(warn)), 100 + i);
		assert_int_equal(key_tcp(dir, "cni:shop:pod=w", warn, sizeof(warn)), -1);
		flip(ipath, at);
	}
	flip(ipath, 10);
	assert_int_equal(key_tcp(dir, keys[0], warn, sizeof(warn)), 100);
	assert_non_null(strstr(warn, "history.idx: damaged (no valid header): read the history whole"));
	assert_int_equal(truncate(ipath, 60), 0);
	assert_int_equal(key_tcp(dir, keys[0], warn, sizeof(warn)), 100);
	assert_non_null(strstr(warn, "damaged"));
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(truncate(ipath, st.st_size - 8), 0);
	assert_int_equal(key_tcp(dir, keys[0], warn, sizeof(warn)), 100);
	assert_int_equal(key_tcp(dir, "cni:shop:pod=w", warn, sizeof(warn)), -1);
	/* a record damaged where it is read: caught, not taken */
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(stat(ipath, &st), 0);
	int bad = 0;
	for (off_t at = 72 + 4 * 512 + 4; at < st.st_size; at += 61) {
		flip(ipath, at);
		for (int i = 0; i < 5; i++)
			assert_int_equal(key_tcp(dir, keys[i], warn, sizeof(warn)), 100 + i);
		bad += strstr(warn, "damaged") != NULL;
		flip(ipath, at);
	}
	assert_true(bad > 0);
	/* stale: the history written by someone else (an older nshash, a
	 * hand): its answer, not the index's */
	FILE *f = fopen(hpath, "w");
	fputs("nshash-history 1\nw cni:shop:pod=web 42 1 2 3 4\n", f);
	fclose(f);
	assert_int_equal(key_tcp(dir, keys[0], warn, sizeof(warn)), 42);
	assert_non_null(strstr(warn, "history.idx: older than the history: read the history whole"));
	assert_int_equal(key_tcp(dir, keys[1], warn, sizeof(warn)), -1);
	/* missing */
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(unlink(ipath), 0);
	assert_int_equal(key_tcp(dir, keys[2], warn, sizeof(warn)), 102);
	assert_non_null(strstr(warn, "history.idx: missing: read the history whole"));
	/* the history gone, an index left: no history */
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(unlink(hpath), 0);
	assert_int_equal(key_tcp(dir, keys[2], warn, sizeof(warn)), -1);
	assert_string_equal(warn, "");
	nsh_history_free(&h);
	assert_int_equal(unlink(ipath), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_lru(void **state)
{
	(void)state;
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	char k[32];
	for (int i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_int_equal(nsh_history_sample(&h, k, i, i, 1000 + (i * 7) % 10, &err), 0);
	}
	assert_int_equal(nsh_history_evict(&h, 4), 6);
	assert_int_equal(h.n, 4);
	/* last seen 1000 + (i*7)%10: the 4 newest are 9,8,7,6 -> i = 7, 4, 1, 8 */
	assert_string_equal(h.v[0].key, "k7");
	assert_string_equal(h.v[1].key, "k4");
	assert_string_equal(h.v[2].key, "k1");
	assert_string_equal(h.v[3].key, "k8");
	nsh_history_free(&h);
}

static void test_resolve(void **state)
{
	(void)state;
	struct nsh_policy p;
	nsh_policy_defaults(&p);
	p.auto_initial.tcp = 1024;
	struct nsh_history h = {0};
	struct nshash_error err = {0};
	assert_int_equal(nsh_history_sample(&h, "a", 5000, 3000, 100, &err), 0);
	bool known;
	struct nshash_sizes s = nsh_auto_resolve(&h, "a", &p, true, true, (struct nshash_sizes){0, 0}, 100, &known);
	assert_true(known);
	assert_int_equal(s.tcp, 16384);
	assert_int_equal(s.udp, 8192);
	/* another workload's history never leaks */
	s = nsh_auto_resolve(&h, "b", &p, true, true, (struct nshash_sizes){0, 0}, 100, &known);
	assert_false(known);
	assert_int_equal(s.tcp, 1024);
	assert_int_equal(s.udp, 0);
	/* only the auto protocol changes */
	s = nsh_auto_resolve(&h, "a", &p, false, true, (struct nshash_sizes){4096, 0}, 100, &known);
	assert_int_equal(s.tcp, 4096);
	assert_int_equal(s.udp, 8192);
	nsh_history_free(&h);
}

static void test_policy_keys(void **state)
{
	(void)state;
	struct nsh_policy p;
	struct nshash_error err = {0};
	const char *t = "{\"defaultTcp\": \"auto\", \"defaultUdp\": 256, \"autoInitialTcp\": 2048}";
	assert_int_equal(nsh_policy_parse(t, strlen(t), "p.json", &p, &err), 0);
	assert_true(p.defaults_auto.tcp);
	assert_false(p.defaults_auto.udp);
	assert_int_equal(p.defaults.udp, 256);
	assert_int_equal(p.auto_initial.tcp, 2048);
	assert_true(nsh_policy_has_defaults(&p));
	t = "{\"defaultTcp\": \"big\"}";
	assert_true(nsh_policy_parse(t, strlen(t), "p.json", &p, &err) < 0);
	assert_non_null(strstr(err.msg, "defaultTcp"));
}

/* marks: the netns id makes a mark of a netns gone never attributed to a
 * successor with its inode; teardown samples and removes; reap and bound */
static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void aged(const char *path)
{
	struct timespec t[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static struct timespec now_ts(long off)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += off;
	return t;
}

static void test_marks(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-unit-marks-XXXXXX", mark[4300], fake[4300], text[700], key[NSH_WORKLOAD_KEY_MAX];
	assert_non_null(mkdtemp(dir));
	struct nshash_error err = {0};
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint64_t id = 0;
	assert_int_equal(nshash_netns_id(fd, &id, &err), 0);
	assert_true(id != 0);
	/* the fallback before 6.18 (SO_NETNS_COOKIE) gives the same number */
	uint64_t cookie = 0;
	assert_int_equal(nsh_netns_cookie(fd, &cookie, &err), 0);
	assert_true(cookie == id);
	snprintf(mark, sizeof(mark), "%s/workloads/%llu-%llu", dir, (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);

	/* a mark holds the key and the id; it matches its netns */
	assert_int_equal(nsh_workload_mark_fd(dir, fd, "cni:a:w=web", &err), 0);
	FILE *f = fopen(mark, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	char want[700];
	snprintf(want, sizeof(want), "cni:a:w=web\nid %llu\n", (unsigned long long)id);
	assert_string_equal(text, want);
	assert_int_equal(nsh_workload_match(dir, fd, key, sizeof(key), &err), 1);
	assert_string_equal(key, "cni:a:w=web");

	/* the same dev-ino, another id (a netns gone whose inode this one got):
	 * never attributed, removed */
	assert_int_equal(nsh_workload_mark(dir, (uint64_t)st.st_dev, (uint64_t)st.st_ino, id + 1, "cni:b:w=old", &err),
			 0);
	assert_int_equal(nsh_workload_match(dir, fd, key, sizeof(key), &err), 0);
	assert_false(exists(mark));
	/* an older version's mark (no id) and a damaged one: the same */
	put(mark, "cni:b:w=old");
	assert_int_equal(nsh_workload_match(dir, fd, key, sizeof(key), &err), 0);
	assert_false(exists(mark));
	put(mark, "cni:b:w=old\nid x\n");
	assert_int_equal(nsh_workload_match(dir, fd, key, sizeof(key), &err), 0);
	assert_false(exists(mark));
	assert_int_equal(nsh_workload_match(dir, fd, key, sizeof(key), &err), 0); /* none */

	/* teardown: one sample into the history, the mark gone */
	assert_int_equal(nsh_workload_mark_fd(dir, fd, "cni:a:w=web", &err), 0);
	assert_int_equal(nsh_workload_teardown(dir, fd, key, sizeof(key), &err), 1);
	assert_false(exists(mark));
	struct nsh_history h;
	char warn[4500];
	assert_int_equal(nsh_history_load(dir, &h, warn, sizeof(warn), &err), 0);
	assert_int_equal(h.n, 1);
	assert_string_equal(h.v[0].key, "cni:a:w=web");
	assert_true(h.v[0].last_seen >= time(NULL) - 5);
	nsh_history_free(&h);
	assert_int_equal(nsh_workload_teardown(dir, fd, key, sizeof(key), &err), 0); /* no mark: nothing */

	/* reap: a mark of a netns the scan did not see goes, the live one with
	 * its id stays, a live inode with another id goes */
	struct nshash_stats_netns live = {.dev = (uint64_t)st.st_dev, .inode = (uint64_t)st.st_ino, .pid = getpid()};
	snprintf(fake, sizeof(fake), "%s/workloads/1-1", dir);
	put(fake, "cni:c:w=gone\nid 7\n");
	aged(fake);
	assert_int_equal(nsh_workload_mark_fd(dir, fd, "cni:a:w=web", &err), 0);
	aged(mark);
	assert_int_equal(nsh_workload_reap(dir, &live, 1, now_ts(0)), 1);
	assert_false(exists(fake));
	assert_true(exists(mark));
	assert_int_equal(nsh_workload_mark(dir, (uint64_t)st.st_dev, (uint64_t)st.st_ino, id + 1, "cni:b:w=old", &err),
			 0);
	aged(mark);
	assert_int_equal(nsh_workload_reap(dir, &live, 1, now_ts(0)), 1);
	assert_false(exists(mark));
	/* a mark made while the scan ran is kept for the next one */
	put(fake, "cni:c:w=gone\nid 7\n");
	assert_int_equal(nsh_workload_reap(dir, &live, 1, now_ts(-10)), 0);
	assert_true(exists(fake));
	/* one made a moment before the scan began, in the same second, goes */
	unlink(fake);
	put(fake, "cni:c:w=gone\nid 7\n");
	struct timespec after = now_ts(0);
	after.tv_nsec += 1000000;
	if (after.tv_nsec >= 1000000000L)
		after.tv_sec++, after.tv_nsec -= 1000000000L;
	assert_int_equal(nsh_workload_reap(dir, &live, 1, after), 1);
	assert_false(exists(fake));

	/* the bound: beyond nsh_workload_marks_max marks, writing one reaps
	 * those of netns gone (a scan: root) */
	if (geteuid() == 0) {
		nsh_workload_marks_max = 2;
		/* a minute after the last look (earlier marks stamped it) */
		snprintf(fake, sizeof(fake), "%s/workloads/.reaped", dir);
		unlink(fake);
		for (int i = 1; i <= 3; i++) {
			snprintf(fake, sizeof(fake), "%s/workloads/1-%d", dir, i);
			put(fake, "cni:c:w=gone\nid 7\n");
			aged(fake);
		}
		assert_int_equal(nsh_workload_mark_fd(dir, fd, "cni:a:w=web", &err), 0);
		for (int i = 1; i <= 3; i++) {
			snprintf(fake, sizeof(fake), "%s/workloads/1-%d", dir, i);
			assert_false(exists(fake));
		}
		assert_true(exists(mark));
		/* at most once a minute: three more stay */
		for (int i = 1; i <= 3; i++) {
			snprintf(fake, sizeof(fake), "%s/workloads/1-%d", dir, i);
			put(fake, "cni:c:w=gone\nid 7\n");
			aged(fake);
		}
		assert_int_equal(nsh_workload_mark_fd(dir, fd, "cni:a:w=web", &err), 0);
		assert_true(exists(fake));
		nsh_workload_marks_max = NSH_WORKLOAD_MARKS_MAX;
	}
	close(fd);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* Issue 31 items 4-7: churn of peak-0 entries never evicts what was
 * learned; the byte cap trims rather than loses the file; a killed writer's
 * temp file neither blocks a save nor stays; a FIFO in the history dir
 * hangs nothing; damaged times overflow nothing. */
static void alarm_fail(int sig)
{
	(void)sig;
	fail_msg("hung (a FIFO in the history dir)");
}

static void test_hostile_history(void **state)
{
	(void)state;
	struct nsh_history h = {0}, back;
	struct nshash_error err = {0};
	char k[600], warn[4500];
	/* 3 learned workloads, seen long ago; 6 churned pods' entries (peak 0), newer */
	for (int i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), "learned%d", i);
		assert_int_equal(nsh_history_sample(&h, k, 500 + i, 100, 1000 + i, &err), 0);
	}
	for (int i = 0; i < 6; i++) {
		snprintf(k, sizeof(k), "churn%d", i);
		assert_int_equal(nsh_history_sample(&h, k, 0, 0, 5000 + i, &err), 0);
	}
	assert_int_equal(nsh_history_evict(&h, 4), 5);
	int learned = 0;
	for (size_t i = 0; i < h.n; i++)
		learned += !strncmp(h.v[i].key, "learned", 7);
	assert_int_equal(learned, 3);
	assert_string_equal(h.v[0].key, "churn5"); /* the newest unlearned one stays, order kept */
	nsh_history_free(&h);

	/* a tenant churning learned workloads in its namespace evicts its own:
	 * cni:b's 2 older entries stay, cni:a's 2 oldest go */
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < 2; i++) {
		snprintf(k, sizeof(k), "cni:b:pod=victim%d", i);
		assert_int_equal(nsh_history_sample(&h, k, 700, 100, 1000 + i, &err), 0);
	}
	for (int i = 0; i < 6; i++) {
		snprintf(k, sizeof(k), "cni:a:w=churn%d", i);
		assert_int_equal(nsh_history_sample(&h, k, 300, 100, 5000 + i, &err), 0);
	}
	assert_int_equal(nsh_history_evict(&h, 6), 2);
	assert_non_null(nsh_history_find(&h, "cni:b:pod=victim0"));
	assert_non_null(nsh_history_find(&h, "cni:b:pod=victim1"));
	assert_null(nsh_history_find(&h, "cni:a:w=churn0"));
	assert_null(nsh_history_find(&h, "cni:a:w=churn1"));
	assert_string_equal(h.v[0].key, "cni:a:w=churn5"); /* order kept */
	/* unlearned before learned still, whatever the scope */
	assert_int_equal(nsh_history_sample(&h, "cni:b:w=new", 0, 0, 9000, &err), 0);
	assert_int_equal(nsh_history_evict(&h, 6), 1);
	assert_null(nsh_history_find(&h, "cni:b:w=new"));
	nsh_history_free(&h);

	/* 2048 entries of the longest keys: more than 2 MiB as lines; trimmed
	 * to fit, and the file written loads (it was thrown away whole) */
	char dir[] = "/tmp/nshash-unit-history-XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < (int)NSH_HISTORY_MAX; i++) {
		memset(k, '%', 500);
		snprintf(k + 500, sizeof(k) - 500, "%05d", i);
		assert_int_equal(nsh_history_sample(&h, k, 1000 + i, 100, 10000 + i, &err), 0);
	}
	/* a temp file of a writer with this pid, killed before its rename, and an old one */
	char tmp[4300], old[4300];
	snprintf(tmp, sizeof(tmp), "%s/history.tmp.%ld", dir, (long)getpid());
	snprintf(old, sizeof(old), "%s/history.tmp.4242", dir);
	assert_int_equal(close(open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
	assert_int_equal(close(open(old, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
	struct timespec t[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	assert_int_equal(utimensat(AT_FDCWD, old, t, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, tmp, t, 0), 0);
	assert_int_equal(nsh_history_save(dir, &h, &err), 0);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(tmp, F_OK), -1);
	struct stat st;
	char path[4300];
	snprintf(path, sizeof(path), "%s/history", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size <= (off_t)NSH_HISTORY_MAX_BYTES);
	assert_int_equal(nsh_history_load(dir, &back, warn, sizeof(warn), &err), 0);
	assert_string_equal(warn, "");
	assert_true(back.n > 1000 && back.n < NSH_HISTORY_MAX);
	int64_t newest = 0, oldest = INT64_MAX;
	for (size_t i = 0; i < back.n; i++) {
		newest = back.v[i].last_seen > newest ? back.v[i].last_seen : newest;
		oldest = back.v[i].last_seen < oldest ? back.v[i].last_seen : oldest;
	}
	assert_int_equal(newest, 10000 + (int)NSH_HISTORY_MAX - 1); /* the newest kept, the oldest went */
	assert_int_equal(oldest, 10000 + (int)NSH_HISTORY_MAX - (int64_t)back.n);
	nsh_history_free(&back);
	nsh_history_free(&h);

	/* a FIFO as the index: the start path's lookup does not hang */
	char idx[4300];
	snprintf(idx, sizeof(idx), "%s/history.idx", dir);
	unlink(idx);
	assert_int_equal(mkfifo(idx, 0600), 0);
	signal(SIGALRM, alarm_fail);
	alarm(10);
	assert_int_equal(nsh_history_load_key(dir, "x", &back, warn, sizeof(warn), &err), 0);
	alarm(0);
	assert_non_null(strstr(warn, "not a regular file"));
	nsh_history_free(&back);
	unlink(idx);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);

	/* a damaged time: no signed overflow (UBSan in the sanitized run), forgotten */
	struct nsh_history_entry e = {.tcp_peak = 1000, .tcp_at = INT64_MIN, .udp_peak = 10, .udp_at = -5};
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_TCP, INT64_MAX), 0);
	assert_int_equal(nsh_history_peak_now(&e, NSHASH_UDP, 100), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rule),      cmocka_unit_test(test_decay),   cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_pod_owner), cmocka_unit_test(test_file),    cmocka_unit_test(test_index),
	    cmocka_unit_test(test_lru),	      cmocka_unit_test(test_resolve), cmocka_unit_test(test_policy_keys),
	    cmocka_unit_test(test_marks),
	    cmocka_unit_test(test_hostile_history),
	};
	return cmocka_run_group_tests_name("history", tests, NULL, NULL);
}
