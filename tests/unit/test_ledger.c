/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table ledger's parser (last event of an id wins, bad lines ignored,
 * one netns counted once), its file (a torn last line closed by the next
 * append, a failed write undone, a pin that holds another netns with a
 * reused inode number proving nothing) and the reclaim rate limit, in
 * private dirs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
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

/* ------------------------------------------------------------ the file */

/* A state dir whose creations ran here, as the records written by hand
 * below claim (a /proc scan judges only in such a dir, statedir.c). */
static void make_dir(char *dir)
{
	assert_non_null(mkdtemp(dir));
	assert_int_equal(nsh_state_note_pidns(dir, NULL), 0);
}

static void remove_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static char *read_ledger(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/ledger", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static struct nshash_table_usage usage_in(const char *dir, bool reconcile)
{
	struct nshash_table_usage u;
	struct nshash_error err = {0};
	assert_int_equal(nshash_table_usage(dir, reconcile, &u, &err), 0);
	return u;
}

#define EACH ((struct nshash_sizes){4096, 1024}) /* 98304 bytes */

static char torn_dirs[2][32] = {"/tmp/nshash-unit-torn-XXXXXX", "/tmp/nshash-unit-torn-XXXXXX"};

/* A writer killed mid-append left a line without its newline: the next
 * record must not be glued onto it (it was lost, and its netns never
 * counted: two 96 KiB netns under a 96 KiB budget). */
static void test_torn_line_repaired(void **state)
{
	(void)state;
	char *dir = torn_dirs[0];
	make_dir(dir);
	write_file(dir, "ledger", "N " ID1 " 98304 4096 1024 40265"); /* torn inside its inode */
	assert_int_equal(usage_in(dir, false).bytes, 0);	     /* a half-written last line is ignored */
	struct nsh_ticket t;
	struct nshash_error err = {0};
	assert_int_equal(nsh_ledger_reserve(dir, EACH, 98304, "/run/x", &t, &err), 0);
	struct nshash_table_usage u = usage_in(dir, false);
	assert_int_equal(u.bytes, 98304); /* the reservation counts */
	assert_int_equal(u.pending, 1);
	struct nsh_ticket t2;
	assert_int_equal(nsh_ledger_reserve(dir, EACH, 98304, "/run/y", &t2, &err), -NSHASH_E_BUDGET);
	assert_non_null(strstr(err.msg, "maxTableBytes 98304 would be passed: 98304 bytes in use by 1 network "
					"namespace(s) (1 of them being created)"));
	/* The torn line closed as a line of its own; the record whole after it. */
	char *text = read_ledger(dir);
	assert_true(strncmp(text, "N " ID1 " 98304 4096 1024 40265\nR ", 41) == 0);
	/* The commit (our own netns: alive) replaces the reservation. */
	int nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(nsfd >= 0);
	assert_int_equal(nsh_ledger_commit(dir, &t, EACH, nsfd, "", true, &err), 0);
	u = usage_in(dir, false);
	assert_int_equal(u.bytes, 98304);
	assert_int_equal(u.netns, 1);
	assert_int_equal(u.pending, 0);

	/* A record torn inside its pin (the last field) is still a whole
	 * record once closed: it counts as any record whose pin is gone, for
	 * as long as its netns lives (its file handle or a scan decides). */
	text = read_ledger(dir);
	char *n = strstr(text, "\nN ");
	assert_non_null(n);
	char torn[512];
	snprintf(torn, sizeof(torn), "%s", n + 1);
	char *id = torn + 2;
	memcpy(id, ID2, NSH_LEDGER_ID_LEN); /* another record of the same netns */
	char *nl = strchr(torn, '\n');
	assert_non_null(nl);
	assert_true(nl[-1] == '-' && nl[-2] == ' ');
	strcpy(nl - 1, "/run/nshash/pins/oci-0123"); /* its pin, torn: */
	torn[strlen(torn) - 4] = '\0';
	char *dir2 = torn_dirs[1];
	make_dir(dir2);
	write_file(dir2, "ledger", torn);
	assert_int_equal(usage_in(dir2, false).bytes, 0);
	struct nsh_ticket x = {.id = ID3, .reserved = true};
	nsh_ledger_cancel(dir2, &x); /* any append: "X ID3" */
	u = usage_in(dir2, true);
	assert_int_equal(u.netns, 1);
	assert_int_equal(u.bytes, 98304);
	assert_non_null(strstr(read_ledger(dir2), "/run/nshash/pins/oci-\nX " ID3 "\n"));
	close(nsfd);
}

/* Removed even when a check failed. */
static int torn_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		if (strcmp(torn_dirs[i], "/tmp/nshash-unit-torn-XXXXXX") == 0)
			continue; /* not made */
		remove_dir(torn_dirs[i]);
		strcpy(torn_dirs[i], "/tmp/nshash-unit-torn-XXXXXX");
	}
	return 0;
}

/* A write that does not fit (a full /run): undone, the file ends with its
 * last whole line, the creation fails naming it.  Needs root (a 4 KiB
 * tmpfs in a private mount namespace, in a child). */
static int short_write_child(const char *dir)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=4k,mode=0700") < 0)
		return 2;
	/* 4050 bytes: one line with no record, and a newline */
	char fill[4051];
	memset(fill, '#', sizeof(fill) - 2);
	fill[sizeof(fill) - 2] = '\n';
	fill[sizeof(fill) - 1] = '\0';
	write_file(dir, "ledger", fill);
	struct nsh_ticket t;
	struct nshash_error err = {0};
	int r = nsh_ledger_reserve(dir, EACH, 1 << 20, "/run/x", &t, &err);
	struct stat st;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/ledger", dir);
	if (r != -ENOSPC || stat(path, &st) < 0 || st.st_size != 4050)
		return 3;
	if (!strstr(err.msg, "No space left on device (after a short write, undone)"))
		return 4;
	return 0;
}

/* Run fn(dir) in a child (root: its own namespaces, gone with it) on a
 * fresh dir; it returns 0 or the number of the check that failed. */
static void in_child(int (*fn)(const char *dir))
{
	if (geteuid() != 0)
		skip();
	char dir[] = "/tmp/nshash-unit-child-XXXXXX";
	make_dir(dir);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(dir));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	remove_dir(dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_short_write_undone(void **state)
{
	(void)state;
	in_child(short_write_child);
}

/* nsfs inode numbers are reused: a record of a dead netns whose pin path
 * now holds another netns with the same inode number is not alive.  Needs
 * root (a netns and a bind mount, in a child). */
static int inode_reuse_child(const char *dir)
{
	/* A netns that dies: its record (inode, handle) from a commit. */
	char dead[PATH_MAX];
	snprintf(dead, sizeof(dead), "%s/dead", dir);
	if (mkdir(dead, 0700) < 0)
		return 2;
	pid_t k = fork();
	if (k == 0) {
		struct nsh_ticket t = {0};
		struct nshash_error err = {0};
		int fd = unshare(CLONE_NEWNET) == 0 ? open("/proc/self/ns/net", O_RDONLY) : -1;
		_exit(fd >= 0 && nsh_ledger_commit(dead, &t, (struct nshash_sizes){4096, 0}, fd, "", true,
						  &err) == 0
			  ? 0
			  : 1);
	}
	int kst;
	if (waitpid(k, &kst, 0) != k || !WIFEXITED(kst) || WEXITSTATUS(kst))
		return 3;
	char *line = read_ledger(dead), fh[256];
	unsigned long long ino;
	if (sscanf(line, "N %*s %*s %*s %*s %llu@%*s %255s", &ino, fh) != 2)
		return 4;
	/* Another netns pinned at the record's pin path. */
	char pin[PATH_MAX];
	snprintf(pin, sizeof(pin), "%s/pin", dir);
	int pfd = open(pin, O_CREAT | O_WRONLY, 0600);
	if (pfd < 0 || unshare(CLONE_NEWNS | CLONE_NEWNET) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("/proc/self/ns/net", pin, NULL, MS_BIND, NULL) < 0)
		return 5;
	close(pfd);
	struct stat st;
	if (stat(pin, &st) < 0)
		return 6;
	/* The dead netns's record with the live one's inode number (what
	 * reuse gives), in the format without a ctime. */
	char text[PATH_MAX + 512];
	snprintf(text, sizeof(text), "N " ID1 " 32768 4096 0 %llu %s 1 %s\n", (unsigned long long)st.st_ino,
		 fh, pin);
	write_file(dir, "ledger", text);
	/* the dead netns goes (cleanup_net runs asynchronously) */
	struct nshash_table_usage u;
	struct nshash_error err = {0};
	for (int i = 0; i < 100; i++) {
		if (nshash_table_usage(dir, true, &u, &err) < 0)
			return 7;
		if (u.bytes == 0)
			break;
		usleep(50000);
	}
	if (u.bytes != 0)
		return 8;
	/* Without a handle (older kernels): the inode's ctime must match. */
	uint64_t ct = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
	snprintf(text, sizeof(text), "N " ID1 " 32768 4096 0 %llu@%llu - 1 %s\n", (unsigned long long)st.st_ino,
		 (unsigned long long)ct, pin);
	write_file(dir, "ledger", text);
	if (nshash_table_usage(dir, false, &u, &err) < 0 || u.bytes != 32768 || u.unverified != 0)
		return 9; /* proven alive by its pin */
	snprintf(text, sizeof(text), "N " ID1 " 32768 4096 0 %llu@%llu - 1 %s\n", (unsigned long long)st.st_ino,
		 (unsigned long long)ct + 1, pin);
	write_file(dir, "ledger", text);
	if (nshash_table_usage(dir, false, &u, &err) < 0 || u.bytes != 32768 || u.unverified != 1)
		return 10; /* another inode: not proven by the pin */
	return 0; /* the mount goes with the child's mount namespace */
}

static void test_inode_reuse(void **state)
{
	(void)state;
	in_child(inode_reuse_child);
}

/* A budget scan cut by its time limit goes on where it stopped: records
 * of netns that are gone are dropped without a gc even when no scan ever
 * ends within the limit (here 1 ms, with a process holding 20000 fds, the
 * last one a netns that only that fd keeps).  Records without file
 * handles, as older kernels write them, need the scan.  Needs root. */
static int cut_scan_child(const char *dir)
{
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), pfd[2];
	if (home < 0 || pipe(pfd) < 0)
		return 2;
	pid_t holder = fork();
	if (holder == 0) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max > 20000 ? 20000 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		int nfd = unshare(CLONE_NEWNET) == 0 ? open("/proc/self/ns/net", O_RDONLY) : -1;
		struct stat st;
		if (nfd < 0 || fstat(nfd, &st) < 0 || setns(home, CLONE_NEWNET) < 0 ||
		    dup2(nfd, (int)rl.rlim_cur - 1) < 0)
			_exit(1);
		close(nfd);
		while (open("/dev/null", O_RDONLY) >= 0) {
		}
		unsigned long long ino = st.st_ino;
		if (write(pfd[1], &ino, sizeof(ino)) != sizeof(ino))
			_exit(1);
		pause();
		_exit(0);
	}
	unsigned long long ino = 0;
	if (read(pfd[0], &ino, sizeof(ino)) != sizeof(ino))
		return 3;
	char text[256];
	snprintf(text, sizeof(text),
		 "N " ID1 " 32768 4096 0 12345 - 1 -\n" /* no netns has inode 12345 */
		 "N " ID2 " 1024 128 0 %llu - 1 -\n",	/* held by the fd */
		 ino);
	write_file(dir, "ledger", text);
	int cut = 0, rc = 4;
	struct nshash_table_usage u = {0};
	for (int i = 0; i < 3000 && u.bytes != 1024; i++) {
		size_t dropped;
		struct nshash_error err = {0};
		int r = nsh_ledger_reconcile(dir, NULL, 0, 1, false, &dropped, &u, &err);
		if (r < 0 && r != -ETIMEDOUT)
			break;
		cut += r == -ETIMEDOUT;
	}
	if (u.bytes == 1024 && u.netns == 1)
		rc = cut > 1 ? 0 : 5; /* it took more than one part */
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	return rc;
}

static void test_cut_scan_goes_on(void **state)
{
	(void)state;
	in_child(cut_scan_child);
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

/* A reservation's creator is judged by its pid only in its own PID
 * namespace; from another, /proc/PID is someone else: the reservation
 * stays until older than any creation takes (it was dropped, and the
 * budget could be passed by the creation still under way). */
static void test_reservation_other_pidns(void **state)
{
	(void)state;
	char dir[] = "/tmp/nshash-unit-resv-XXXXXX";
	make_dir(dir);
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	struct stat st;
	assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
	unsigned long long mine = (unsigned long long)st.st_ino, other = mine + 1;
	long long now = (long long)time(NULL);
	struct {
		unsigned long long pidns;
		long long age;
		uint64_t bytes;
		const char *what;
	} cases[] = {
	    {0, 0, 0, "an older line (no PID namespace): its dead creator's pid decides"},
	    {mine, 0, 0, "this PID namespace: the dead creator's reservation goes"},
	    {other, 0, 98304, "another PID namespace: kept, though that pid is dead here"},
	    {other, 700, 0, "another PID namespace, older than any creation takes: gone"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char pid[64], line[256];
		if (cases[i].pidns)
			snprintf(pid, sizeof(pid), "%d@%llu", (int)dead, cases[i].pidns);
		else
			snprintf(pid, sizeof(pid), "%d", (int)dead);
		snprintf(line, sizeof(line), "R " ID1 " 98304 4096 1024 %s 7 %lld /run/netns/a\n", pid, now - cases[i].age);
		write_file(dir, "ledger", line);
		struct nshash_table_usage u = usage_in(dir, false);
		if (u.bytes != cases[i].bytes)
			fail_msg("%s: %llu bytes counted", cases[i].what, (unsigned long long)u.bytes);
	}
	/* and a reservation made here names this PID namespace */
	write_file(dir, "ledger", "");
	struct nsh_ticket t;
	struct nshash_error err = {0};
	assert_int_equal(nsh_ledger_reserve(dir, EACH, 1 << 20, "/run/x", &t, &err), 0);
	char want[64];
	snprintf(want, sizeof(want), " %d@%llu ", (int)getpid(), mine);
	assert_non_null(strstr(read_ledger(dir), want));
	nsh_ledger_cancel(dir, &t);
	remove_dir(dir);
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
	    cmocka_unit_test_teardown(test_torn_line_repaired, torn_teardown),
	    cmocka_unit_test(test_short_write_undone),
	    cmocka_unit_test(test_inode_reuse),
	    cmocka_unit_test(test_cut_scan_goes_on),
	    cmocka_unit_test(test_reservation_other_pidns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
