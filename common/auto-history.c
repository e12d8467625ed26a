/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto`'s peaks file, HISTORY/history (nsh_history_dir): parse, load,
 * evict, sample, save (temp + fsync + rename, then its index:
 * auto-index.c), the one-key lookup of the start path, and the lock of
 * its writers.  See docs/auto.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auto.h"

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

/* ---------------------------------------------------------------- file */
/* Text, one workload a line:
 *   nshash-history 1
 *   w KEY TCP_PEAK TCP_AT UDP_PEAK UDP_AT LAST_SEEN
 * KEY as nsh_workload_show writes it, times in seconds since the epoch.  Written to a
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
		if (sscanf(line, "w %1663s %lld %lld %lld %lld %lld %c", ekey, &tp, &ta, &up, &ua, &seen, &extra) !=
			6 ||
		    tp < 0 || up < 0 || tp > NSHASH_TCP_MAX || up > NSHASH_TCP_MAX || ta < 0 || ua < 0 || seen < 0 ||
		    ta > (1LL << 40) || ua > (1LL << 40) || seen > (1LL << 40) ||
		    nsh_workload_unescape(ekey, tmp.key, sizeof(tmp.key)) < 0) {
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
	return nsh_workload_show(e->key, ek, sizeof(ek)) + 2 /* "w " */ + 5 * 21 + 1;
}

/* The scope of a key, "FRONTEND:SCOPE" (up to its second ':'; a key
 * without one is its own scope): what a tenant cannot choose. */
static size_t scope_len(const char *key)
{
	const char *c = strchr(key, ':');
	if (c)
		c = strchr(c + 1, ':');
	return c ? (size_t)(c - key) : strlen(key);
}

static int by_scope(const void *a, const void *b)
{
	const struct nsh_history_entry *const *x = a, *const *y = b;
	size_t lx = scope_len((*x)->key), ly = scope_len((*y)->key);
	int c = memcmp((*x)->key, (*y)->key, lx < ly ? lx : ly);
	return c ? c : lx < ly ? -1 : lx > ly ? 1 : 0;
}

/* scope[i]: a number for entry i's scope; count[scope]: its entries */
static int scopes_count(const struct nsh_history *h, size_t *scope, size_t *count)
{
	const struct nsh_history_entry **by = malloc(h->n * sizeof(*by));
	if (!by)
		return -1;
	for (size_t i = 0; i < h->n; i++)
		by[i] = &h->v[i];
	qsort(by, h->n, sizeof(*by), by_scope);
	size_t id = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (i > 0 && by_scope(&by[i - 1], &by[i]) != 0)
			id++;
		scope[by[i] - h->v] = id;
		count[id] = 0;
	}
	for (size_t i = 0; i < h->n; i++)
		count[scope[i]]++;
	free(by);
	return 0;
}

/* The entry to drop next among those alive: what taught nothing (a peak
 * of 0) before what was learned; within that, from the scope holding the
 * most entries, its least recently seen (h->v is most recent first). */
static size_t evict_pick(const struct nsh_history *h, const bool *alive, const size_t *scope, const size_t *count)
{
	bool any_unlearned = false;
	for (size_t i = 0; i < h->n && !any_unlearned; i++)
		any_unlearned = alive[i] && !learned(&h->v[i]);
	size_t most = 0;
	for (size_t i = 0; i < h->n; i++)
		if (alive[i] && learned(&h->v[i]) != any_unlearned && count[scope[i]] > most)
			most = count[scope[i]];
	for (size_t i = h->n; i-- > 0;)
		if (alive[i] && learned(&h->v[i]) != any_unlearned && count[scope[i]] == most)
			return i;
	return h->n; /* not reached while something is alive */
}

size_t nsh_history_evict(struct nsh_history *h, size_t max)
{
	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), by_seen_desc);
	/* Fair to what was learned and to other tenants: entries with nothing
	 * learned (a peak of 0, what every short-lived `auto` pod leaves, with a
	 * workload name its tenant chose) go first, then learned ones; each
	 * time from the scope (FRONTEND:SCOPE, docs/auto.md) that holds the
	 * most entries, its least recently seen first, so that a tenant who
	 * churns workloads in its namespace evicts its own.  And within
	 * NSH_HISTORY_MAX_BYTES, so that the file written always loads (2048
	 * entries of the longest keys would not fit). */
	size_t n_alive = h->n, bytes = sizeof(NSH_HISTORY_MAGIC) + 1;
	for (size_t i = 0; i < h->n; i++)
		bytes += line_bytes(&h->v[i]);
	if (n_alive <= max && bytes <= NSH_HISTORY_MAX_BYTES)
		return 0;
	bool *alive = malloc(h->n * sizeof(*alive));
	size_t *scope = malloc(h->n * sizeof(*scope)), *count = malloc(h->n * sizeof(*count));
	if (!alive || !scope || !count || scopes_count(h, scope, count) < 0) {
		/* no memory for fairness: the least recently seen go */
		free(alive);
		free(scope);
		free(count);
		size_t keep = h->n;
		while (keep > 0 && (keep > max || bytes > NSH_HISTORY_MAX_BYTES))
			bytes -= line_bytes(&h->v[--keep]);
		size_t gone = h->n - keep;
		h->n = keep;
		return gone;
	}
	for (size_t i = 0; i < h->n; i++)
		alive[i] = true;
	while (n_alive > 0 && (n_alive > max || bytes > NSH_HISTORY_MAX_BYTES)) {
		size_t i = evict_pick(h, alive, scope, count);
		if (i >= h->n)
			break;
		alive[i] = false;
		count[scope[i]]--;
		bytes -= line_bytes(&h->v[i]);
		n_alive--;
	}
	size_t o = 0;
	for (size_t i = 0; i < h->n; i++)
		if (alive[i])
			h->v[o++] = h->v[i];
	size_t gone = h->n - o;
	h->n = o;
	free(alive);
	free(scope);
	free(count);
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
	nsh_sweep_tmp(dir, NSH_HISTORY_FILE, NSH_HISTORY_TMP_AGE);
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
		nsh_workload_show(e->key, ek, sizeof(ek));
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
	/* the start path's index (auto-index.c), made from this file: its
	 * failure is no lost history (a start without it reads the history
	 * whole, with a warning) */
	struct nshash_error ie = {0};
	(void)nsh_history_index_write(dir, h, &st, 0, &ie);
	return 0;
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

int nsh_history_load_key(const char *state_dir, const char *key, struct nsh_history *h, char *warn, size_t wlen,
			 struct nshash_error *err)
{
	char dir[4096], hpath[4200], why[64] = "";
	nsh_history_dir(state_dir, dir, sizeof(dir));
	snprintf(hpath, sizeof(hpath), "%s/%s", dir, NSH_HISTORY_FILE);
	memset(h, 0, sizeof(*h));
	if (warn && wlen)
		warn[0] = '\0';
	struct stat hist;
	if (stat(hpath, &hist) < 0) {
		if (errno == ENOENT)
			return 0; /* no history: no workload has one (an index left alone is no answer) */
		snprintf(why, sizeof(why), "the history: %s", strerror(errno));
	} else {
		struct nsh_history_entry e;
		int r = nsh_history_index_lookup(dir, &hist, key, &e, why, sizeof(why));
		if (r == 0)
			return 0;
		if (r == 1) {
			h->v = malloc(sizeof(*h->v));
			if (!h->v)
				return nshash_error_set(err, ENOMEM, "history: out of memory");
			h->v[0] = e;
			h->n = h->cap = 1;
			return 0;
		}
	}
	/* the index does not answer: the history itself, whole */
	char hwarn[4500];
	int r = nsh_history_load(state_dir, h, hwarn, sizeof(hwarn), err);
	if (warn && wlen)
		snprintf(warn, wlen, "%s/%s: %s: read the history whole (the next `nshash record` writes it)%s%s", dir,
			 NSH_HISTORY_INDEX_FILE, why, hwarn[0] ? "; " : "", hwarn);
	return r;
}
