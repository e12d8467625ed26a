/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto` sizes: the workload key, the peaks file (HISTORY/history: nsh_history_dir) and
 * the rule that turns a peak into a size.  See docs/auto.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

uint32_t nsh_auto_size(enum nshash_proto proto, long peak, uint32_t cap)
{
	uint64_t want = peak > 0 ? (uint64_t)peak * 2 : 0;
	uint64_t size = NSH_AUTO_MIN;
	uint64_t max = nshash_proto_max(proto);
	if (cap && cap < max) {
		/* the kernel rounds a size up to a power of two: the largest one
		 * within the cap, or the shared tables when none is */
		max = 1;
		while (max * 2 <= cap)
			max <<= 1;
		if (max < NSH_AUTO_MIN)
			return 0;
	}
	while (size < want && size < max)
		size <<= 1;
	return (uint32_t)(size < max ? size : max);
}

long nsh_history_peak_now(const struct nsh_history_entry *e, enum nshash_proto proto, int64_t now)
{
	long p = proto == NSHASH_TCP ? e->tcp_peak : e->udp_peak;
	int64_t at = proto == NSHASH_TCP ? e->tcp_at : e->udp_at;
	if (now <= at || p <= 0)
		return p;
	if (at < 0 || now - at < 0) /* a damaged time (never written so): no overflow, forgotten */
		return 0;
	/* whole days multiply by NSH_HISTORY_DECAY, the part of a day in
	 * between linearly (no libm on the start path) */
	int64_t secs = now - at, days = secs / 86400;
	if (days > 3650)
		return 0;
	double v = (double)p;
	for (int64_t d = 0; d < days; d++)
		v *= NSH_HISTORY_DECAY;
	v *= 1.0 - (1.0 - NSH_HISTORY_DECAY) * (double)(secs % 86400) / 86400.0;
	return (long)(v + 0.5); /* nearest: a second of decay is not a socket less */
}

/* Keys: printable ASCII but space, '%' and '\\' kept; the rest %XX. */
static size_t key_escape(const char *key, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)key; *p && o + 4 < len; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '%' && *p != '\\') {
			buf[o++] = (char)*p;
		} else {
			buf[o++] = '%';
			buf[o++] = hex[*p >> 4];
			buf[o++] = hex[*p & 15];
		}
	}
	buf[o] = '\0';
	return o;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int key_unescape(const char *in, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = in; *p; p++) {
		if (o + 1 >= len)
			return -1;
		if (*p == '%') {
			int a = unhex(p[1]), b = a < 0 ? -1 : unhex(p[2]);
			if (b < 0 || (a == 0 && b == 0))
				return -1;
			out[o++] = (char)(a * 16 + b);
			p += 2;
		} else if ((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f && *p != '\\') {
			out[o++] = *p;
		} else {
			return -1;
		}
	}
	out[o] = '\0';
	return o ? 0 : -1;
}

size_t nsh_workload_show(const char *key, char *buf, size_t len)
{
	return key_escape(key, buf, len);
}

/* name: at most max bytes, no control character */
static int name_check(const char *name, size_t max, struct nshash_error *err)
{
	if (!name || !*name)
		return nshash_error_set(err, EINVAL, "workload key: empty name");
	size_t n = strlen(name);
	if (n > max) {
		char shown[64];
		nshash_quote(name, shown, sizeof(shown));
		return nshash_error_set(
		    err, ENAMETOOLONG,
		    "workload key %s: %zu bytes, at most %u (set io.nshash.workload to a shorter key)", shown, n,
		    NSH_WORKLOAD_NAME_MAX);
	}
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			char shown[64];
			nshash_quote(name, shown, sizeof(shown));
			return nshash_error_set(
			    err, EINVAL, "workload key %s: control characters are not allowed (use printable text)",
			    shown);
		}
	return 0;
}

int nsh_workload_check(const char *value, struct nshash_error *err)
{
	return name_check(value, NSH_WORKLOAD_NAME_MAX, err);
}

int nsh_workload_key(const char *frontend, const char *scope, const char *name, char *out, size_t len,
		     struct nshash_error *err)
{
	/* name: a front-end's prefix ("w=", "image=", ...) and a value of at
	 * most NSH_WORKLOAD_NAME_MAX (nsh_workload_check, or cut to it) */
	int r = name_check(name, NSH_WORKLOAD_NAME_MAX + NSH_WORKLOAD_PREFIX_MAX, err);
	if (r < 0)
		return r;
	/* the front-end and the scope end at the first ':' of their own part:
	 * neither may hold one, so a name cannot reach into another scope */
	int w = snprintf(out, len, "%s:%s:%s", frontend, scope ? scope : "", name);
	if (w < 0 || (size_t)w >= len)
		return nshash_error_set(err, ENAMETOOLONG, "workload key: too long");
	return 0;
}

/* K8S_POD_NAME without what controllers generate: a Deployment's pod
 * NAME-<pod-template-hash>-<5 chars> (hash 1..10 of [bcdfghjklmnpqrstvwxz2456789]),
 * a ReplicaSet's, DaemonSet's or Job's NAME-<5 chars>, a StatefulSet's
 * NAME-<ordinal>.  Anything else is kept whole. */
static bool rand_chars(const char *s, size_t n)
{
	static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(alnum, s[i]) || s[i] == '\0')
			return false;
	return true;
}

void nsh_pod_owner(const char *pod, char *out, size_t len)
{
	snprintf(out, len, "%s", pod);
	size_t n = strlen(out);
	char *dash = strrchr(out, '-');
	if (!dash || dash == out)
		return;
	size_t tail = n - (size_t)(dash + 1 - out);
	if (tail == 5 && rand_chars(dash + 1, 5)) {
		*dash = '\0';
		char *d2 = strrchr(out, '-');
		if (d2 && d2 != out) {
			size_t h = strlen(d2 + 1);
			if (h >= 1 && h <= 10 && rand_chars(d2 + 1, h))
				*d2 = '\0';
		}
		return;
	}
	bool digits = tail > 0 && tail <= 9;
	for (size_t i = 0; digits && i < tail; i++)
		digits = dash[1 + i] >= '0' && dash[1 + i] <= '9';
	if (digits)
		*dash = '\0';
}

/* ---------------------------------------------------------------- file */
/* Text, one workload a line:
 *   nshash-history 1
 *   w KEY TCP_PEAK TCP_AT UDP_PEAK UDP_AT LAST_SEEN
 * KEY escaped as above, times in seconds since the epoch.  Written to a
 * temporary file, fsync'd and renamed over: a reader sees the old or the
 * new file whole.  Lines that do not parse are dropped (repaired) and
 * counted in `dropped`. */
void nsh_history_free(struct nsh_history *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

static struct nsh_history_entry *add(struct nsh_history *h)
{
	if (h->n == h->cap) {
		size_t c = h->cap ? h->cap * 2 : 16;
		struct nsh_history_entry *v = realloc(h->v, c * sizeof(*v));
		if (!v)
			return NULL;
		h->v = v;
		h->cap = c;
	}
	struct nsh_history_entry *e = &h->v[h->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

struct nsh_history_entry *nsh_history_find(struct nsh_history *h, const char *key)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->v[i].key, key) == 0)
			return &h->v[i];
	return NULL;
}

static int by_key(const void *a, const void *b)
{
	const struct nsh_history_entry *x = a, *y = b;
	return strcmp(x->key, y->key);
}

int nsh_history_parse(const char *text, size_t len, struct nsh_history *h, size_t *dropped, struct nshash_error *err)
{
	memset(h, 0, sizeof(*h));
	*dropped = 0;
	const char *p = text, *end = text + len;
	bool first = true, header = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) { /* torn last line */
			(*dropped)++;
			break;
		}
		size_t n = (size_t)(nl - p);
		char line[NSH_WORKLOAD_KEY_MAX * 3 + 128];
		if (n >= sizeof(line) || memchr(p, '\0', n)) {
			(*dropped)++;
			p = nl + 1;
			first = false;
			continue;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (first) {
			first = false;
			if (strcmp(line, NSH_HISTORY_MAGIC) == 0) {
				header = true;
				continue;
			}
		}
		char ekey[sizeof(line)];
		_Static_assert(sizeof(ekey) == 1664, "the sscanf width below is sizeof(ekey) - 1");
		long long tp, ta, up, ua, seen;
		char extra;
		struct nsh_history_entry tmp = {0};
		if (sscanf(line, "w %1663s %lld %lld %lld %lld %lld %c", ekey, &tp, &ta, &up, &ua, &seen, &extra) != 6 ||
		    tp < 0 || up < 0 || tp > NSHASH_TCP_MAX || up > NSHASH_TCP_MAX || ta < 0 || ua < 0 || seen < 0 ||
		    ta > (1LL << 40) || ua > (1LL << 40) || seen > (1LL << 40) ||
		    key_unescape(ekey, tmp.key, sizeof(tmp.key)) < 0) {
			(*dropped)++;
			continue;
		}
		if (h->n >= NSH_HISTORY_MAX) {
			(*dropped)++;
			continue;
		}
		struct nsh_history_entry *e = add(h);
		if (!e) {
			nsh_history_free(h);
			return nshash_error_set(err, ENOMEM, "history: out of memory");
		}
		*e = tmp;
		e->tcp_peak = (long)tp;
		e->tcp_at = ta;
		e->udp_peak = (long)up;
		e->udp_at = ua;
		e->last_seen = seen;
	}
	if (len > 0 && !header)
		(*dropped)++;
	/* a key twice (a damaged file): one kept, the other dropped; by a
	 * sort, O(n log n) on the start path, not a search per line */
	if (h->n > 1) {
		qsort(h->v, h->n, sizeof(*h->v), by_key);
		size_t o = 1;
		for (size_t i = 1; i < h->n; i++) {
			if (strcmp(h->v[i].key, h->v[o - 1].key) == 0) {
				(*dropped)++;
				continue;
			}
			if (o != i)
				h->v[o] = h->v[i];
			o++;
		}
		h->n = o;
	}
	return 0;
}

void nsh_history_dir(const char *state_dir, char *buf, size_t len)
{
	if (!state_dir || !strcmp(state_dir, NSHASH_DEFAULT_STATE_DIR))
		snprintf(buf, len, "%s", NSH_HISTORY_DIR);
	else
		snprintf(buf, len, "%s", state_dir);
}

static void history_path(const char *state_dir, char *buf, size_t len)
{
	char dir[4096];
	nsh_history_dir(state_dir, dir, sizeof(dir));
	snprintf(buf, len, "%s/%s", dir, NSH_HISTORY_FILE);
}

int nsh_history_load(const char *state_dir, struct nsh_history *h, char *warn, size_t wlen, struct nshash_error *err)
{
	char path[4200];
	char *text = NULL;
	size_t len = 0;
	history_path(state_dir, path, sizeof(path));
	if (warn && wlen)
		warn[0] = '\0';
	memset(h, 0, sizeof(*h));
	int r = nsh_read_file(path, NSH_HISTORY_MAX_BYTES, &text, &len, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		/* unreadable or too large: start afresh; the next record replaces it */
		if (warn && wlen)
			snprintf(warn, wlen, "%s (ignored: the next `nshash record` rewrites it)", err->msg);
		return 0;
	}
	size_t dropped = 0;
	r = nsh_history_parse(text, len, h, &dropped, err);
	free(text);
	if (r < 0)
		return r;
	if (dropped && warn && wlen)
		snprintf(warn, wlen, "%s: %zu damaged line%s dropped (repaired on the next `nshash record`)", path,
			 dropped, dropped == 1 ? "" : "s");
	return 0;
}

static int by_seen_desc(const void *a, const void *b)
{
	const struct nsh_history_entry *x = a, *y = b;
	return x->last_seen < y->last_seen ? 1 : x->last_seen > y->last_seen ? -1 : strcmp(x->key, y->key);
}

/* A workload with something learned: a peak above 0 for some protocol. */
static bool learned(const struct nsh_history_entry *e)
{
	return e->tcp_peak > 0 || e->udp_peak > 0;
}

/* The bytes one entry takes in the history file (its line). */
static size_t line_bytes(const struct nsh_history_entry *e)
{
	char ek[NSH_WORKLOAD_KEY_MAX * 3 + 4];
	return key_escape(e->key, ek, sizeof(ek)) + 2 /* "w " */ + 5 * 21 + 1;
}

size_t nsh_history_evict(struct nsh_history *h, size_t max)
{
	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), by_seen_desc);
	/* Fair to what was learned: entries with nothing learned (a peak of 0,
	 * what every short-lived `auto` pod leaves, with a workload name its
	 * tenant chose) go first, least recently seen first; then learned ones,
	 * least recently seen first.  And within NSH_HISTORY_MAX_BYTES, so that
	 * the file written always loads (2048 entries of the longest keys
	 * would not fit). */
	size_t keep_learned = 0, keep_other = 0, bytes = sizeof(NSH_HISTORY_MAGIC) + 1;
	for (size_t i = 0; i < h->n; i++)
		if (learned(&h->v[i]) && keep_learned < max && bytes + line_bytes(&h->v[i]) <= NSH_HISTORY_MAX_BYTES) {
			keep_learned++;
			bytes += line_bytes(&h->v[i]);
		}
	for (size_t i = 0; i < h->n; i++)
		if (!learned(&h->v[i]) && keep_learned + keep_other < max &&
		    bytes + line_bytes(&h->v[i]) <= NSH_HISTORY_MAX_BYTES) {
			keep_other++;
			bytes += line_bytes(&h->v[i]);
		}
	if (keep_learned + keep_other == h->n)
		return 0;
	/* keep, in order (most recently seen first), the first keep_learned
	 * learned entries and the first keep_other others */
	size_t o = 0, kl = 0, ko = 0;
	for (size_t i = 0; i < h->n; i++) {
		bool l = learned(&h->v[i]);
		if ((l && kl < keep_learned) || (!l && ko < keep_other)) {
			kl += l;
			ko += !l;
			h->v[o++] = h->v[i];
		}
	}
	size_t gone = h->n - o;
	h->n = o;
	return gone;
}

int nsh_history_sample(struct nsh_history *h, const char *key, long tcp, long udp, int64_t now,
		       struct nshash_error *err)
{
	struct nsh_history_entry *e = nsh_history_find(h, key);
	if (!e) {
		if (strlen(key) >= sizeof(e->key))
			return nshash_error_set(err, ENAMETOOLONG, "history: key too long");
		e = add(h);
		if (!e)
			return nshash_error_set(err, ENOMEM, "history: out of memory");
		snprintf(e->key, sizeof(e->key), "%s", key);
	}
	/* what the file's reader takes back (it drops a line above these) */
	if (tcp > (long)NSHASH_TCP_MAX)
		tcp = (long)NSHASH_TCP_MAX;
	if (udp > (long)NSHASH_TCP_MAX)
		udp = (long)NSHASH_TCP_MAX;
	if (tcp >= nsh_history_peak_now(e, NSHASH_TCP, now)) {
		e->tcp_peak = tcp;
		e->tcp_at = now;
	}
	if (udp >= nsh_history_peak_now(e, NSHASH_UDP, now)) {
		e->udp_peak = udp;
		e->udp_at = now;
	}
	e->last_seen = now;
	return 0;
}

/* Temporary files of writers killed before their rename (NAME.tmp.*,
 * older than NSH_HISTORY_TMP_AGE seconds) removed from dir. */
#define NSH_HISTORY_TMP_AGE 600
void nsh_history_sweep_tmp(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[300];
	snprintf(prefix, sizeof(prefix), "%s.tmp.", name);
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (strncmp(de->d_name, prefix, strlen(prefix)) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (now - st.st_mtime >= NSH_HISTORY_TMP_AGE || st.st_mtime > now + NSH_HISTORY_TMP_AGE)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int nsh_history_save(const char *state_dir, struct nsh_history *h, struct nshash_error *err)
{
	char path[4200], tmp[4300];
	history_path(state_dir, path, sizeof(path));
	/* a name of its own (mkostemp: O_EXCL, 0600), never one a killed
	 * writer of the same pid left */
	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	nsh_history_evict(h, NSH_HISTORY_MAX);
	char dir[4096];
	nsh_history_dir(state_dir, dir, sizeof(dir));
	if (!strcmp(dir, NSH_HISTORY_DIR) && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return nshash_error_set(err, errno, "history: create %s", dir);
	nsh_history_sweep_tmp(dir, NSH_HISTORY_FILE);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "history: create %s", tmp);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return nshash_error_set(err, errno, "history: %s", tmp);
	}
	fprintf(f, "%s\n", NSH_HISTORY_MAGIC);
	for (size_t i = 0; i < h->n; i++) {
		char ek[NSH_WORKLOAD_KEY_MAX * 3 + 4];
		const struct nsh_history_entry *e = &h->v[i];
		key_escape(e->key, ek, sizeof(ek));
		fprintf(f, "w %s %ld %lld %ld %lld %lld\n", ek, e->tcp_peak, (long long)e->tcp_at, e->udp_peak,
			(long long)e->udp_at, (long long)e->last_seen);
	}
	int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
	int e = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	struct stat st;
	if (!bad && stat(tmp, &st) != 0) {
		bad = 1;
		e = errno;
	}
	if (bad || rename(tmp, path) != 0) {
		if (!bad)
			e = errno;
		unlink(tmp);
		return nshash_error_set(err, e, "history: write %s", path);
	}
	/* the start path's lookup (histindex.c), made from this file */
	/* the start path's index: its failure is no lost history (a start
	 * without it reads the history whole, with a warning) */
	struct nshash_error ie = {0};
	(void)nsh_history_index_write(state_dir, h, &st, 0, &ie);
	return 0;
}

struct nshash_sizes nsh_auto_resolve(const struct nsh_history *h, const char *key, const struct nsh_policy *policy,
				     bool tcp_auto, bool udp_auto, struct nshash_sizes asked, int64_t now, bool *known)
{
	struct nshash_sizes s = asked;
	const struct nsh_history_entry *e = key ? nsh_history_find((struct nsh_history *)h, key) : NULL;
	*known = e != NULL;
	if (tcp_auto)
		s.tcp = e ? nsh_auto_size(NSHASH_TCP, nsh_history_peak_now(e, NSHASH_TCP, now), policy->max.tcp)
			  : policy->auto_initial.tcp;
	if (udp_auto)
		s.udp = e ? nsh_auto_size(NSHASH_UDP, nsh_history_peak_now(e, NSHASH_UDP, now), policy->max.udp)
			  : policy->auto_initial.udp;
	return s;
}

/* ------------------------------------------------------------ marks */
/* STATE_DIR/workloads/DEV-INO marks the netns nshash sized with that nsfs
 * identity for a workload:
 *   KEY\n
 *   id N\n        the netns's id (nshash_netns_id), absent when the kernel
 *                 has none
 * nsfs inode numbers are reused once a netns is gone; the id is not, so a
 * mark left by a netns that died is never taken for a new one that got its
 * inode (docs/auto.md). */
static void marks_dir(const char *state_dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", state_dir ? state_dir : NSHASH_DEFAULT_STATE_DIR, NSH_WORKLOAD_DIR);
}

bool nsh_workload_marks_any(const char *state_dir)
{
	char dir[4200];
	marks_dir(state_dir, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	bool any = false;
	while (!any && (de = readdir(d)))
		any = de->d_name[0] != '.';
	closedir(d);
	return any;
}

static void mark_path(const char *state_dir, uint64_t dev, uint64_t ino, char *buf, size_t len)
{
	char dir[4200];
	marks_dir(state_dir, dir, sizeof(dir));
	snprintf(buf, len, "%s/%llu-%llu", dir, (unsigned long long)dev, (unsigned long long)ino);
}

int nsh_workload_mark(const char *state_dir, uint64_t dev, uint64_t ino, uint64_t id, const char *key,
		      struct nshash_error *err)
{
	char dir[4200], path[4300], tmp[4400], text[NSH_WORKLOAD_KEY_MAX + 32];
	marks_dir(state_dir, dir, sizeof(dir));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return nshash_error_set(err, errno, "workload: mkdir %s", dir);
	mark_path(state_dir, dev, ino, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	int n = id ? snprintf(text, sizeof(text), "%s\nid %llu\n", key, (unsigned long long)id)
		   : snprintf(text, sizeof(text), "%s\n", key);
	if (n < 0 || (size_t)n >= sizeof(text) || strchr(key, '\n'))
		return nshash_error_set(err, EINVAL, "workload: key too long");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return nshash_error_set(err, errno, "workload: create %s", tmp);
	struct stat tst;
	if (fstat(fd, &tst) < 0 || !S_ISREG(tst.st_mode)) {
		close(fd);
		return nshash_error_set(err, EINVAL, "workload: %s is not a regular file: not written", tmp);
	}
	ssize_t w = write(fd, text, (size_t)n);
	int e = errno;
	close(fd);
	if (w != n || rename(tmp, path) < 0) {
		if (w == n)
			e = errno;
		unlink(tmp);
		return nshash_error_set(err, e ? e : EIO, "workload: write %s", path);
	}
	return 0;
}

/* The mark's text: its key, and its id (0 none).  -ENOENT, -EINVAL (not a
 * mark) or -errno. */
static int mark_parse_fd(int fd, char *key, size_t len, uint64_t *id)
{
	char text[NSH_WORKLOAD_KEY_MAX + 64];
	ssize_t r = read(fd, text, sizeof(text) - 1);
	if (r <= 0)
		return r < 0 ? -errno : -EINVAL;
	text[r] = '\0';
	if (strlen(text) != (size_t)r)
		return -EINVAL;
	*id = 0;
	char *nl = strchr(text, '\n');
	if (nl) { /* else a mark of an older version: a key alone */
		*nl = '\0';
		unsigned long long v;
		char tail;
		if (nl[1] && (sscanf(nl + 1, "id %llu%c", &v, &tail) != 2 || tail != '\n' || !v))
			return -EINVAL;
		*id = nl[1] ? v : 0;
	}
	if (!text[0] || strlen(text) >= len)
		return -EINVAL;
	snprintf(key, len, "%s", text);
	return 0;
}

static int mark_read(const char *state_dir, uint64_t dev, uint64_t ino, char *key, size_t len, uint64_t *id,
		     struct stat *st)
{
	char path[4300];
	mark_path(state_dir, dev, ino, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat own;
	if (fstat(fd, &own) < 0 || !S_ISREG(own.st_mode)) { /* a FIFO there must not hang a start */
		close(fd);
		return -EINVAL;
	}
	if (st)
		*st = own;
	int r = mark_parse_fd(fd, key, len, id);
	close(fd);
	return r;
}

int nsh_workload_read(const char *state_dir, uint64_t dev, uint64_t ino, char *key, size_t len)
{
	uint64_t id;
	return mark_read(state_dir, dev, ino, key, len, &id, NULL);
}

/* Remove the mark that was read as `st` (not one written since over it). */
static void mark_drop(const char *state_dir, uint64_t dev, uint64_t ino, const struct stat *st)
{
	char path[4300];
	struct stat now;
	mark_path(state_dir, dev, ino, path, sizeof(path));
	if (lstat(path, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev)
		unlink(path);
}

static int match(const char *state_dir, int nsfd, char *key, size_t len, bool drop, struct nshash_error *err)
{
	struct stat ns, st;
	uint64_t id = 0, have = 0;
	if (fstat(nsfd, &ns) < 0)
		return nshash_error_set(err, errno, "workload mark: fstat");
	int r = mark_read(state_dir, (uint64_t)ns.st_dev, (uint64_t)ns.st_ino, key, len, &have, &st);
	if (r == -ENOENT)
		return 0;
	if (r == 0) {
		struct nshash_error ie = {0};
		int g = nshash_netns_id(nsfd, &id, &ie);
		if (g < 0 && g != -EOPNOTSUPP) {
			*err = ie;
			return g;
		}
		/* no id on this kernel (0): dev-ino alone (docs/auto.md).  A mark
		 * without an id (an older version's) on a kernel with ids cannot
		 * tell its netns from a successor: stale too */
		if (have == id)
			return 1;
	}
	/* stale (another netns had this inode) or not a mark: never attributed */
	if (r == 0 || r == -EINVAL) {
		if (drop)
			mark_drop(state_dir, (uint64_t)ns.st_dev, (uint64_t)ns.st_ino, &st);
		return 0;
	}
	return nshash_error_set(err, -r, "workload mark: read");
}

int nsh_workload_match(const char *state_dir, int nsfd, char *key, size_t len, struct nshash_error *err)
{
	return match(state_dir, nsfd, key, len, true, err);
}

int nsh_workload_of(const char *state_dir, const struct nshash_stats_netns *ns, char *key, size_t len, bool drop,
		    struct nshash_error *err)
{
	char path[4200];
	if (ns->pinned)
		snprintf(path, sizeof(path), "%s", ns->name);
	else if (ns->pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)ns->pid);
	else
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0; /* gone since the scan */
	struct stat st;
	/* another netns at that path now: not this one's */
	int r = fstat(fd, &st) == 0 && (uint64_t)st.st_dev == ns->dev && (uint64_t)st.st_ino == ns->inode
		    ? match(state_dir, fd, key, len, drop, err)
		    : 0;
	close(fd);
	if (r < 0)
		nshash_error_prefix(err, "%s", path);
	return r;
}

/* One writer of STATE_DIR/history at a time (record, a teardown): each
 * reads, adds its sample and renames over; without it one's sample is lost. */
static int history_lock(const char *state_dir)
{
	char path[4300];
	char dir[4096];
	nsh_history_dir(state_dir, dir, sizeof(dir));
	if (!strcmp(dir, NSH_HISTORY_DIR) && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.lock", dir, NSH_HISTORY_FILE); /* beside the history */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	struct stat lst;
	if (fd >= 0 && (fstat(fd, &lst) < 0 || !S_ISREG(lst.st_mode))) {
		close(fd);
		return -1;
	}
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int nsh_history_add(const char *state_dir, const struct nsh_history_sample *v, size_t n, char *warn, size_t wlen,
		    size_t *workloads, struct nshash_error *err)
{
	struct nsh_history h;
	int lock = history_lock(state_dir);
	int r = nsh_history_load(state_dir, &h, warn, wlen, err);
	int64_t now = (int64_t)time(NULL);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = nsh_history_sample(&h, v[i].key, v[i].tcp, v[i].udp, now, err);
	if (r == 0)
		r = nsh_history_save(state_dir, &h, err);
	if (workloads)
		*workloads = h.n;
	nsh_history_free(&h);
	if (lock >= 0)
		close(lock);
	return r;
}

int nsh_workload_teardown(const char *state_dir, int nsfd, char *key, size_t len, struct nshash_error *err)
{
	struct stat ns;
	int r = nsh_workload_match(state_dir, nsfd, key, len, err);
	if (r <= 0)
		return r;
	if (fstat(nsfd, &ns) < 0)
		return nshash_error_set(err, errno, "workload mark: fstat");
	struct nshash_sockets s;
	struct nsh_history_sample one = {.key = key};
	char warn[4500] = "";
	r = nshash_sockets_fd(nsfd, &s, err);
	if (r == 0) {
		one.tcp = s.tcp;
		one.udp = s.udp;
		r = nsh_history_add(state_dir, &one, 1, warn, sizeof(warn), NULL, err);
	}
	/* the mark goes even when the sample failed: the netns is going */
	char path[4300];
	mark_path(state_dir, (uint64_t)ns.st_dev, (uint64_t)ns.st_ino, path, sizeof(path));
	unlink(path);
	return r < 0 ? r : 1;
}

size_t nsh_workload_reap(const char *state_dir, const struct nshash_stats_netns *v, size_t n, struct timespec began)
{
	char dir[4200];
	size_t gone = 0;
	marks_dir(state_dir, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned long long dev, ino;
		char tail;
		struct stat st;
		/* one made while the scan ran belongs to a netns it may have
		 * missed: kept for the next run */
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_mtim.tv_sec > began.tv_sec ||
		    (st.st_mtim.tv_sec == began.tv_sec && st.st_mtim.tv_nsec >= began.tv_nsec))
			continue;
		int fields = sscanf(de->d_name, "%llu-%llu%c", &dev, &ino, &tail);
		if (fields == 3 && strstr(de->d_name, ".tmp.") && st.st_mtime + 60 <= began.tv_sec) {
			unlinkat(dirfd(d), de->d_name, 0); /* a killed writer's */
			continue;
		}
		if (fields != 2)
			continue;
		const struct nshash_stats_netns *live = NULL;
		for (size_t i = 0; i < n && !live; i++)
			if (v[i].dev == dev && v[i].inode == ino)
				live = &v[i];
		if (!live) {
			gone += unlinkat(dirfd(d), de->d_name, 0) == 0;
			continue;
		}
		/* live inode: the same netns, or a successor with its inode */
		char key[NSH_WORKLOAD_KEY_MAX];
		struct nshash_error err = {0};
		if (nsh_workload_of(state_dir, live, key, sizeof(key), true, &err) == 0) /* it drops a stale one */
			gone += faccessat(dirfd(d), de->d_name, F_OK, AT_SYMLINK_NOFOLLOW) < 0;
	}
	closedir(d);
	return gone;
}

/* More than NSH_WORKLOAD_MARKS_MAX marks (no `nshash record` runs, or
 * teardowns nshash does not see): reap those of netns gone.  Looked at
 * most once a minute (a stamp file's mtime), so a start pays one stat,
 * not a read of the whole directory, and a node with that many live netns
 * does not scan on every start. */
static void marks_bound(const char *state_dir)
{
	char dir[4200], stamp[4300];
	marks_dir(state_dir, dir, sizeof(dir));
	snprintf(stamp, sizeof(stamp), "%s/.reaped", dir);
	struct stat st;
	time_t began = time(NULL);
	if (stat(stamp, &st) == 0 && st.st_mtime + 60 > began && st.st_mtime <= began)
		return;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t count = 0;
	struct dirent *de;
	while (count <= nsh_workload_marks_max && (de = readdir(d)))
		count += de->d_name[0] != '.';
	closedir(d);
	if (count <= nsh_workload_marks_max)
		return;
	struct nshash_stats_netns *v = NULL;
	size_t n = 0;
	struct nshash_stats_opts opts = {.state_dir = state_dir};
	struct nshash_error err = {0};
	if (nshash_stats_scan(&opts, &v, &n, &err) == 0)
		nsh_workload_reap(state_dir, v, n, (struct timespec){.tv_sec = began});
	free(v);
}

size_t nsh_workload_marks_max = NSH_WORKLOAD_MARKS_MAX;

int nsh_workload_mark_fd(const char *state_dir, int nsfd, const char *key, struct nshash_error *err)
{
	struct stat st;
	uint64_t id = 0;
	if (fstat(nsfd, &st) < 0)
		return nshash_error_set(err, errno, "workload: fstat the netns");
	int r = nshash_netns_id(nsfd, &id, err);
	if (r < 0 && r != -EOPNOTSUPP)
		return r;
	r = nsh_workload_mark(state_dir, (uint64_t)st.st_dev, (uint64_t)st.st_ino, id, key, err);
	if (r == 0)
		marks_bound(state_dir);
	return r;
}
