/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start path's lookup of one workload's peaks: HISTORY/history.idx,
 * written beside HISTORY/history by every nsh_history_save, read with a
 * few small preads instead of parsing the whole history (up to 2048
 * workloads, 2 MiB) on every container start.  See docs/auto.md "Cost".
 *
 * Layout (native byte order; the file never leaves the machine):
 *   header   struct idx_header: magic, bucket count (a power of two),
 *            record count, the hash seed, the identity of the history file
 *            it was made from (dev, inode, size, mtime), a checksum
 *   offsets  u32[buckets + 1]: where each bucket's records start in the
 *            data, relative to its start
 *   data     the records, bucket by bucket: struct idx_record, then the
 *            key's bytes, padded to 8
 * A key is hashed (FNV-1a 64 over a random per-file seed and the key) to
 * its bucket; the lookup reads the header, the bucket's two offsets and
 * its records (about one), and compares the whole key: a key whose hash
 * collides with another's reads that record too and skips it.  Keys never
 * become file names.
 *
 * Anything that does not check out (no index, one made from another
 * history file, a damaged one) is no answer: the lookup
 * (nsh_history_load_key, auto-history.c) then parses the history, with a
 * warning: never an error on the start path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auto.h"

#define IDX_MAGIC	"nshash-hidx 2\n"
#define IDX_BUCKETS_MIN 16u
#define IDX_BUCKETS_MAX 65536u
#define IDX_PAD(n)	(((n) + 7u) & ~(size_t)7u)

struct idx_header {
	char magic[16];
	uint32_t buckets, records;
	uint64_t seed;
	uint64_t hist_dev, hist_ino, hist_size;
	int64_t hist_mtime_sec;
	uint32_t hist_mtime_nsec;
	uint32_t sum; /* of the bytes above */
};

struct idx_record {
	uint32_t len;			 /* the whole record: this, the key, the padding */
	uint32_t bucket, ordinal, count; /* count: the bucket's records */
	int64_t tcp_peak, tcp_at, udp_peak, udp_at, last_seen;
	uint32_t keylen;
	uint32_t sum; /* of the record (this field 0) and the key */
};

/* no padding: the checksums cover every byte */
_Static_assert(sizeof(struct idx_header) == 72, "struct idx_header has padding");
_Static_assert(sizeof(struct idx_record) == 64, "struct idx_record has padding");

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	return h;
}

static uint64_t key_hash(uint64_t seed, const char *key, size_t len)
{
	uint64_t h = fnv(0xcbf29ce484222325ULL, &seed, sizeof(seed));
	h = fnv(h, key, len);
	h ^= h >> 33; /* the low bits pick the bucket: mix the high ones in */
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static uint32_t header_sum(const struct idx_header *h)
{
	return (uint32_t)fnv(0xcbf29ce484222325ULL, h, offsetof(struct idx_header, sum));
}

static uint32_t record_sum(const struct idx_record *r, const char *key)
{
	struct idx_record c = *r;
	c.sum = 0;
	return (uint32_t)fnv(fnv(0xcbf29ce484222325ULL, &c, sizeof(c)), key, r->keylen);
}

/* A table entry: the bucket's start offset, and a check of it (bucket and
 * seed mixed in) in the high half, so that a damaged table is no answer --
 * an offset changed by a torn write could make a bucket look empty and
 * hide a workload's learned sizes. */
static uint64_t table_entry(uint64_t seed, uint32_t bucket, uint32_t off)
{
	uint64_t h = fnv(fnv(fnv(0xcbf29ce484222325ULL, &seed, sizeof(seed)), &bucket, sizeof(bucket)), &off,
			 sizeof(off));
	return (uint64_t)(uint32_t)(h ^ (h >> 32)) << 32 | off;
}

static void paths(const char *dir, char *hist, char *idx, size_t len)
{
	snprintf(hist, len, "%s/%s", dir, NSH_HISTORY_FILE);
	snprintf(idx, len, "%s/%s", dir, NSH_HISTORY_INDEX_FILE);
}

static bool same_file(const struct idx_header *h, const struct stat *st)
{
	return h->hist_dev == (uint64_t)st->st_dev && h->hist_ino == (uint64_t)st->st_ino &&
	       h->hist_size == (uint64_t)st->st_size && h->hist_mtime_sec == (int64_t)st->st_mtim.tv_sec &&
	       h->hist_mtime_nsec == (uint32_t)st->st_mtim.tv_nsec;
}

/* ---------------------------------------------------------------- write */

int nsh_history_index_write(const char *dir, const struct nsh_history *h, const struct stat *hist, unsigned buckets,
			    struct nshash_error *err)
{
	char hpath[4200], path[4200], tmp[4300];
	paths(dir, hpath, path, sizeof(path));
	if (!buckets) {
		buckets = IDX_BUCKETS_MIN;
		while (buckets < h->n && buckets < NSH_HISTORY_MAX * 2)
			buckets <<= 1;
	}
	if (buckets > IDX_BUCKETS_MAX || (buckets & (buckets - 1)))
		return nshash_error_set(err, EINVAL, "history index: %u buckets", buckets);
	struct idx_header hd = {.buckets = buckets, .records = (uint32_t)h->n};
	memcpy(hd.magic, IDX_MAGIC, sizeof(IDX_MAGIC) - 1);
	if (getrandom(&hd.seed, sizeof(hd.seed), 0) != sizeof(hd.seed))
		return nshash_error_set(err, errno, "history index: getrandom");
	hd.hist_dev = (uint64_t)hist->st_dev;
	hd.hist_ino = (uint64_t)hist->st_ino;
	hd.hist_size = (uint64_t)hist->st_size;
	hd.hist_mtime_sec = (int64_t)hist->st_mtim.tv_sec;
	hd.hist_mtime_nsec = (uint32_t)hist->st_mtim.tv_nsec;
	hd.sum = header_sum(&hd);

	/* each entry's bucket, then the entries bucket by bucket (a counting sort) */
	uint32_t *bucket_of = calloc(h->n ? h->n : 1, sizeof(*bucket_of));
	uint32_t *offs = calloc(buckets + 1, sizeof(*offs));
	uint32_t *count = calloc(buckets, sizeof(*count));
	size_t *order = calloc(h->n ? h->n : 1, sizeof(*order));
	size_t data = 0;
	char *buf = NULL;
	int r = 0;
	if (!bucket_of || !offs || !count || !order) {
		r = nshash_error_set(err, ENOMEM, "history index: out of memory");
		goto out;
	}
	for (size_t i = 0; i < h->n; i++) {
		size_t kl = strlen(h->v[i].key);
		bucket_of[i] = (uint32_t)(key_hash(hd.seed, h->v[i].key, kl) & (buckets - 1));
		count[bucket_of[i]]++;
		data += IDX_PAD(sizeof(struct idx_record) + kl);
	}
	{
		size_t *start = calloc(buckets, sizeof(*start)), at = 0;
		if (!start) {
			r = nshash_error_set(err, ENOMEM, "history index: out of memory");
			goto out;
		}
		for (uint32_t b = 0; b < buckets; b++) {
			start[b] = at;
			at += count[b];
		}
		for (size_t i = 0; i < h->n; i++)
			order[start[bucket_of[i]]++] = i;
		free(start);
	}
	size_t table = sizeof(hd) + (buckets + 1) * sizeof(uint64_t), total = table + data;
	buf = calloc(1, total);
	if (!buf) {
		r = nshash_error_set(err, ENOMEM, "history index: out of memory");
		goto out;
	}
	memcpy(buf, &hd, sizeof(hd));
	size_t o = 0;
	uint32_t prev = UINT32_MAX, ordinal = 0;
	for (size_t k = 0; k < h->n; k++) {
		const struct nsh_history_entry *e = &h->v[order[k]];
		uint32_t b = bucket_of[order[k]];
		while (prev != b) { /* this bucket and the empty ones before it start here */
			offs[++prev] = (uint32_t)o;
			ordinal = 0;
		}
		size_t kl = strlen(e->key);
		uint32_t nth = ordinal++;
		struct idx_record rec = {.len = (uint32_t)IDX_PAD(sizeof(rec) + kl),
					 .bucket = b,
					 .ordinal = nth,
					 .count = count[b],
					 .tcp_peak = e->tcp_peak,
					 .tcp_at = e->tcp_at,
					 .udp_peak = e->udp_peak,
					 .udp_at = e->udp_at,
					 .last_seen = e->last_seen,
					 .keylen = (uint32_t)kl};
		rec.sum = record_sum(&rec, e->key);
		memcpy(buf + table + o, &rec, sizeof(rec));
		memcpy(buf + table + o + sizeof(rec), e->key, kl);
		o += rec.len;
	}
	while (prev != buckets) /* the empty buckets at the end, and the end */
		offs[++prev] = (uint32_t)o;
	for (uint32_t b = 0; b <= buckets; b++) {
		uint64_t te = table_entry(hd.seed, b, offs[b]);
		memcpy(buf + sizeof(hd) + (size_t)b * sizeof(te), &te, sizeof(te));
	}

	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	nsh_sweep_tmp(dir, NSH_HISTORY_INDEX_FILE, NSH_HISTORY_TMP_AGE);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = nshash_error_set(err, errno, "history index: create %s", tmp);
		goto out;
	}
	ssize_t w = write(fd, buf, total);
	int e = errno;
	bool bad = w != (ssize_t)total || fsync(fd) != 0;
	if (bad && w == (ssize_t)total)
		e = errno;
	if (close(fd) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	/* another writer's history since ours: its index is the one to keep */
	struct stat now;
	if (!bad && (stat(hpath, &now) != 0 || now.st_ino != hist->st_ino || now.st_dev != hist->st_dev)) {
		unlink(tmp);
		goto out;
	}
	if (bad || rename(tmp, path) != 0) {
		if (!bad)
			e = errno;
		unlink(tmp);
		r = nshash_error_set(err, e ? e : EIO, "history index: write %s", path);
	}
out:
	free(buf);
	free(bucket_of);
	free(offs);
	free(count);
	free(order);
	return r;
}

/* ---------------------------------------------------------------- read */

/* The key's entry from the index at `fd`: 1 found, 0 not there, -1 the
 * index does not answer (why in `why`). */
/* A time as the history writes it: seconds since the epoch, not before it
 * nor absurdly far after (a damaged record: no overflow in the decay). */
static bool time_ok(int64_t t)
{
	return t >= 0 && t < (int64_t)1 << 40;
}

/* The fd is a regular file (a FIFO in its place must not hang a start). */
static bool fd_regular(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

static int index_find(int fd, const struct stat *hist, const char *key, struct nsh_history_entry *out, char *why,
		      size_t wlen)
{
	struct idx_header hd;
	if (pread(fd, &hd, sizeof(hd), 0) != (ssize_t)sizeof(hd) ||
	    memcmp(hd.magic, IDX_MAGIC, sizeof(IDX_MAGIC) - 1) != 0 || hd.sum != header_sum(&hd)) {
		snprintf(why, wlen, "damaged (no valid header)");
		return -1;
	}
	if (!same_file(&hd, hist)) {
		snprintf(why, wlen, "older than the history");
		return -1;
	}
	uint64_t table = sizeof(hd) + ((uint64_t)hd.buckets + 1) * sizeof(uint64_t);
	if (hd.buckets < 1 || hd.buckets > IDX_BUCKETS_MAX || (hd.buckets & (hd.buckets - 1)) ||
	    hd.records > NSH_HISTORY_MAX) {
		snprintf(why, wlen, "damaged (bad sizes)");
		return -1;
	}
	size_t kl = strlen(key);
	uint32_t b = (uint32_t)(key_hash(hd.seed, key, kl) & (hd.buckets - 1));
	uint64_t te[2];
	uint32_t se[2];
	if (pread(fd, te, sizeof(te), (off_t)(sizeof(hd) + (uint64_t)b * sizeof(uint64_t))) != (ssize_t)sizeof(te)) {
		snprintf(why, wlen, "damaged (short table)");
		return -1;
	}
	se[0] = (uint32_t)te[0];
	se[1] = (uint32_t)te[1];
	if (te[0] != table_entry(hd.seed, b, se[0]) || te[1] != table_entry(hd.seed, b + 1, se[1]) || se[0] > se[1] ||
	    se[1] - se[0] > (uint64_t)NSH_HISTORY_MAX * (sizeof(struct idx_record) + NSH_WORKLOAD_KEY_MAX)) {
		snprintf(why, wlen, "damaged (bad offsets)");
		return -1;
	}
	size_t len = se[1] - se[0];
	if (len == 0)
		return 0;
	char small[2048];
	char *buf = len <= sizeof(small) ? small : malloc(len);
	if (!buf) {
		snprintf(why, wlen, "out of memory");
		return -1;
	}
	int r = 0;
	if (pread(fd, buf, len, (off_t)(table + se[0])) != (ssize_t)len) {
		snprintf(why, wlen, "damaged (short)");
		r = -1;
	}
	/* every record of the bucket, in order, each checked: a damaged one
	 * or one of another bucket is no answer */
	uint32_t expect = 0, count = 0;
	for (size_t o = 0; r == 0 && o < len;) {
		struct idx_record rec;
		if (len - o < sizeof(rec)) {
			snprintf(why, wlen, "damaged (short record)");
			r = -1;
			break;
		}
		memcpy(&rec, buf + o, sizeof(rec));
		const char *k = buf + o + sizeof(rec);
		if (rec.len != IDX_PAD(sizeof(rec) + (size_t)rec.keylen) || rec.len > len - o || rec.keylen == 0 ||
		    rec.keylen >= NSH_WORKLOAD_KEY_MAX || rec.bucket != b || rec.ordinal != expect ||
		    (expect && rec.count != count) || rec.sum != record_sum(&rec, k) || memchr(k, '\0', rec.keylen) ||
		    (key_hash(hd.seed, k, rec.keylen) & (hd.buckets - 1)) != b || rec.tcp_peak < 0 ||
		    rec.udp_peak < 0 || rec.tcp_peak > NSHASH_TCP_MAX || rec.udp_peak > NSHASH_TCP_MAX ||
		    !time_ok(rec.tcp_at) || !time_ok(rec.udp_at) || !time_ok(rec.last_seen)) {
			snprintf(why, wlen, "damaged (bad record)");
			r = -1;
			break;
		}
		count = rec.count;
		expect++;
		if (r == 0 && rec.keylen == kl && memcmp(k, key, kl) == 0) {
			memset(out, 0, sizeof(*out));
			memcpy(out->key, k, kl);
			out->tcp_peak = (long)rec.tcp_peak;
			out->tcp_at = rec.tcp_at;
			out->udp_peak = (long)rec.udp_peak;
			out->udp_at = rec.udp_at;
			out->last_seen = rec.last_seen;
			r = 1;
			break;
		}
		o += rec.len;
	}
	if (r == 0 && expect != count) {
		snprintf(why, wlen, "damaged (records missing)");
		r = -1;
	}
	if (buf != small)
		free(buf);
	return r;
}

int nsh_history_index_lookup(const char *dir, const struct stat *hist, const char *key,
			     struct nsh_history_entry *out, char *why, size_t wlen)
{
	char hpath[4200], path[4200];
	paths(dir, hpath, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		snprintf(why, wlen, errno == ENOENT ? "missing" : "unreadable");
		return -1;
	}
	if (!fd_regular(fd)) {
		close(fd);
		snprintf(why, wlen, "not a regular file");
		return -1;
	}
	int r = index_find(fd, hist, key, out, why, wlen);
	close(fd);
	return r;
}
