/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table ledger: STATE_DIR/ledger, the node-wide account of the table
 * memory of the netns nshash sized (maxTableBytes).
 *
 * One line per event, appended under the state lock:
 *   R ID BYTES TCP UDP PID START TIME PIN   a budgeted creation under way
 *   N ID BYTES TCP UDP INO@CT FH TIME PIN   a sized netns (nsfs inode INO with
 *                                           ctime CT in ns, "@CT" optional; file
 *                                           handle FH = TYPE.HEX or "-")
 *   X ID                                    cancelled / gone
 *   H COUNT                                 first line of a rewritten file:
 *                                           COUNT entries were live then
 * The last line of an ID is its state.  PIN is the rest of the line ("-" =
 * none); a line is an entry only when whole and valid (a writer killed
 * mid-append leaves a last line without its newline: ignored, and closed
 * by the next append; see nsh_ledger_append); PID/START (the creator's
 * start time, /proc/PID/stat field 22)
 * tell a creator that died from a live one without trusting pid reuse.
 *
 * A creation under a budget reserves before the netns is made, so parallel
 * creators never pass the budget together, and commits the inode before
 * the pin is bound, so a creator killed at any point leaves either nothing,
 * a reservation of a dead creator (dropped by the next reader), or an entry
 * of a netns that nothing holds (dropped by the next scan).  A creation
 * without a budget records only the commit.  Readers rewrite the file
 * (temp + rename) when dead lines pile up.
 *
 * An entry counts until its netns is gone; a spare's, from when it is
 * taken (its pin under STATE_DIR/spares/ no longer holds it).  Cheap check: its pin still
 * holds that inode.  Otherwise a /proc scan decides (threads, fds, mounts
 * of every mount namespace); that scan runs only when a creation would be
 * refused, in nshash_reclaim() and in nshash_table_usage(reconcile). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "internal.h"

#define LEDGER_MAX	  (64u << 20) /* refuse to read a larger ledger */

/* ------------------------------------------------------------ parsing */

static bool id_valid(const char *id)
{
	size_t i = 0;
	for (; id[i]; i++)
		if (i >= NSH_LEDGER_ID_LEN || !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return i == NSH_LEDGER_ID_LEN;
}

static bool u64_field(char **p, uint64_t *out)
{
	char *s = *p, *end;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || (*end != ' ' && *end != '\0'))
		return false;
	*out = v;
	*p = *end ? end + 1 : end;
	return true;
}

static bool word_field(char **p, char *out, size_t len)
{
	char *s = *p, *sp = strchr(s, ' ');
	size_t n = sp ? (size_t)(sp - s) : strlen(s);
	if (n == 0 || n >= len)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	*p = sp ? sp + 1 : s + n;
	return true;
}

/* "INO" or "INO@CTIME" (the nsfs inode's ctime in ns, written since the
 * inode number alone is reused: see pinned_at). */
static bool ino_field(char **p, uint64_t *ino, uint64_t *ctime_ns)
{
	char *at = strchr(*p, '@'), *sp = strchr(*p, ' ');
	*ctime_ns = 0;
	if (!at || (sp && sp < at))
		return u64_field(p, ino);
	*at = ' '; /* "INO CTIME": two number fields */
	bool ok = u64_field(p, ino) && u64_field(p, ctime_ns) && *ctime_ns;
	*at = '@';
	return ok;
}

/* "TYPE.HEX" (an nsfs file handle) or "-". */
static bool handle_field(char **p, struct nsh_ledger_entry *r)
{
	char word[2 * sizeof(r->handle) + 16];
	if (!word_field(p, word, sizeof(word)))
		return false;
	if (strcmp(word, "-") == 0)
		return true;
	char *dot = strchr(word, '.'), *end;
	if (!dot || dot == word)
		return false;
	errno = 0;
	long type = strtol(word, &end, 10);
	if (errno || end != dot || type < 0 || type > INT32_MAX)
		return false;
	size_t hex = strlen(dot + 1);
	if (hex == 0 || hex % 2 || hex / 2 > sizeof(r->handle))
		return false;
	for (size_t i = 0; i < hex / 2; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = dot[1 + 2 * i + k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return false;
		}
		r->handle[i] = (unsigned char)v;
	}
	r->handle_type = (int)type;
	r->handle_len = (unsigned)(hex / 2);
	return true;
}

/* One line (NUL-terminated, no newline) → entry; false for a bad line. */
static bool parse_line(char *line, struct nsh_ledger_entry *r)
{
	memset(r, 0, sizeof(*r));
	if ((line[0] != 'R' && line[0] != 'N' && line[0] != 'X') || line[1] != ' ')
		return false;
	r->kind = line[0];
	char *p = line + 2;
	if (!word_field(&p, r->id, sizeof(r->id)) || !id_valid(r->id))
		return false;
	if (r->kind == 'X')
		return *p == '\0';
	uint64_t tcp, udp, a, b = 0, t;
	if (!u64_field(&p, &r->bytes) || !u64_field(&p, &tcp) || !u64_field(&p, &udp) ||
	    !(r->kind == 'N' ? ino_field(&p, &a, &r->ctime_ns) : ino_field(&p, &a, &r->pidns)) ||
	    (r->kind == 'R' && !u64_field(&p, &b)) || (r->kind == 'N' && !handle_field(&p, r)) || !u64_field(&p, &t) ||
	    !*p)
		return false;
	if (tcp > NSHASH_TCP_MAX || udp > NSHASH_UDP_MAX || t > INT64_MAX || a > INT32_MAX * 2ull + 1)
		return false;
	r->sizes = (struct nshash_sizes){(uint32_t)tcp, (uint32_t)udp};
	if (r->bytes != nshash_sizes_bytes(nshash_sizes_effective(r->sizes)))
		return false; /* a hand-edited count is not believed */
	if (r->kind == 'R') {
		if (a == 0 || a > INT32_MAX)
			return false;
		r->pid = (pid_t)a;
		r->start = b;
	} else {
		if (a == 0)
			return false;
		r->ino = a;
	}
	r->time = (int64_t)t;
	r->pin = strcmp(p, "-") == 0 ? "" : p;
	return true;
}

/* "S TIME PASS PID SUB [ID ID ...]": where a cut budget scan stopped. */
static bool parse_scan(char *line, struct nsh_ledger *l)
{
	if (line[0] != 'S' || line[1] != ' ')
		return false;
	char *p = line + 2;
	uint64_t t, pass, pid, sub;
	if (!u64_field(&p, &t) || !u64_field(&p, &pass) || !u64_field(&p, &pid) || !u64_field(&p, &sub) ||
	    t > INT64_MAX || pass > 2 || pid > INT32_MAX || sub > UINT32_MAX)
		return false;
	for (const char *q = p; *q; q += NSH_LEDGER_ID_LEN + 1) {
		for (int k = 0; k < NSH_LEDGER_ID_LEN; k++)
			if (!((q[k] >= '0' && q[k] <= '9') || (q[k] >= 'a' && q[k] <= 'f')))
				return false;
		if (q[NSH_LEDGER_ID_LEN] == '\0')
			break;
		if (q[NSH_LEDGER_ID_LEN] != ' ')
			return false;
	}
	l->scan.time = (int64_t)t;
	l->scan.pos = (struct nsh_scan_pos){(unsigned)pass, (pid_t)pid, (unsigned)sub};
	l->scan.ids = p;
	return true;
}

static int cmp_id_seq(const void *a, const void *b)
{
	const struct nsh_ledger_entry *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_seq(const void *a, const void *b)
{
	const struct nsh_ledger_entry *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

struct ino_slot {
	uint64_t ino;
	size_t seq, idx;
};

static int cmp_ino_seq(const void *a, const void *b)
{
	const struct ino_slot *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Of the N entries of one inode, only the newest counts. */
static int dedupe_inodes(struct nsh_ledger *l)
{
	if (l->n < 2)
		return 0;
	struct ino_slot *s = malloc(l->n * sizeof(*s));
	if (!s) {
		free(l->v);
		l->v = NULL;
		l->n = 0;
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == 'N')
			s[k++] = (struct ino_slot){l->v[i].ino, l->v[i].seq, i};
	qsort(s, k, sizeof(*s), cmp_ino_seq);
	for (size_t i = 0; i + 1 < k; i++)
		if (s[i].ino == s[i + 1].ino)
			l->v[s[i].idx].drop = true;
	free(s);
	return 0;
}

int nsh_ledger_parse(char *text, size_t len, struct nsh_ledger *l)
{
	memset(l, 0, sizeof(*l));
	size_t cap = 0;
	for (size_t i = 0; i < len;) {
		char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		if (!nl)
			break; /* an unfinished last line: a writer died mid-append */
		text[end] = '\0';
		l->lines++;
		struct nsh_ledger_entry r;
		unsigned long long base;
		char tail;
		if (l->lines == 1 && sscanf(text + i, "H %llu%c", &base, &tail) == 1) {
			l->base = base > SIZE_MAX / 4 ? SIZE_MAX / 4 : (size_t)base;
		} else if (strlen(text + i) != end - i || parse_scan(text + i, l)) {
			/* a NUL inside: not a line of ours; or the last cut scan */
		} else if (parse_line(text + i, &r)) {
			if (l->n == cap) {
				cap = cap ? 2 * cap : 64;
				struct nsh_ledger_entry *v = realloc(l->v, cap * sizeof(*v));
				if (!v) {
					free(l->v);
					l->v = NULL;
					return -ENOMEM;
				}
				l->v = v;
			}
			r.seq = l->lines;
			l->v[l->n++] = r;
		}
		i = end + 1;
	}
	/* The last event of each id is its state; X and superseded lines go. */
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_id_seq);
	size_t w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (i + 1 < l->n && strcmp(l->v[i].id, l->v[i + 1].id) == 0)
			continue;
		if (l->v[i].kind != 'X')
			l->v[w++] = l->v[i];
	}
	l->n = w;
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_seq);
	/* One netns is counted once, whoever recorded it (an inode seen twice:
	 * the older entry describes a netns that died and whose inode was
	 * reused, or the same netns recorded twice). */
	return dedupe_inodes(l);
}

void nsh_ledger_free(struct nsh_ledger *l)
{
	free(l->v);
	free(l->text);
	free(l->scan_buf);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------ file */

int nsh_ledger_path(const char *state_dir, const char *name, char *out, size_t len, struct nshash_error *err)
{
	if ((size_t)snprintf(out, len, "%s/%s", state_dir, name) >= len)
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	return 0;
}

/* Under the lock: read and parse the ledger (missing = empty). */
int nsh_ledger_load(const char *state_dir, struct nsh_ledger *l, struct nshash_error *err)
{
	char path[PATH_MAX];
	memset(l, 0, sizeof(*l));
	int r = nsh_ledger_path(state_dir, "ledger", path, sizeof(path), err);
	if (r < 0)
		return r;
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : nsh_error_sys(err, errno, "open ledger %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return nshash_error_set(err, EINVAL, "ledger %s: not a regular file", path);
	if ((uint64_t)st.st_size > LEDGER_MAX)
		return nshash_error_set(err, EFBIG, "ledger %s: larger than %u bytes", path, LEDGER_MAX);
	char what[PATH_MAX + 8];
	snprintf(what, sizeof(what), "ledger %s", path);
	char *text;
	size_t len;
	/* it may grow meanwhile only through our own lock: read to EOF anyway */
	r = nsh_read_fd(fd, what, LEDGER_MAX, &text, &len, err);
	if (r < 0)
		return r;
	r = nsh_ledger_parse(text, len, l);
	l->text = text; /* the entries' pins point into it */
	if (r < 0)
		return nsh_error_sys(err, -r, "read ledger %s", path);
	return 0;
}

/* Under the lock: append one line; *size (optional) = the file's size
 * afterwards.  The file must end with a whole line before and after:
 * - a last line left without its newline (a writer killed inside its
 *   write, or a failed write whose undo failed too) is closed first with a
 *   "\n", so it stays a line of its own (an entry only if what was written
 *   of it is a whole valid entry, see nsh_ledger_parse) and never
 *   swallows this one;
 * - a short write is continued; a write that fails (ENOSPC on a full /run)
 *   is undone: the file is cut back to its size before, and the caller
 *   fails (a creation is cancelled). */
int nsh_ledger_append(const char *state_dir, const char *line, off_t *size, struct nshash_error *err)
{
	char path[PATH_MAX];
	int r = nsh_ledger_path(state_dir, "ledger", path, sizeof(path), err);
	if (r < 0)
		return r;
	cleanup_close int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return nsh_error_sys(err, errno, "open ledger %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return nshash_error_set(err, EINVAL, "ledger %s: not a regular file", path);
	char stack[PATH_MAX + 258], last = '\n';
	size_t len = 0, n = strlen(line);
	/* an entry fits on the stack; an S line lists every unproven id */
	cleanup_free char *heap = n + 1 > sizeof(stack) ? malloc(n + 1) : NULL;
	char *buf = n + 1 > sizeof(stack) ? heap : stack;
	if (!buf)
		return nshash_error_set(err, ENOMEM, "append to ledger %s: out of memory", path);
	if (st.st_size > 0 && (pread(fd, &last, 1, st.st_size - 1) != 1 || last != '\n'))
		buf[len++] = '\n';
	memcpy(buf + len, line, n);
	len += n;
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, buf + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			if (done && ftruncate(fd, st.st_size) < 0) {
				/* left torn: the next append closes the line */
			}
			return nshash_error_set(err, e, "append to ledger %s: %s%s", path, strerror(e),
						done ? " (after a short write, undone)" : "");
		}
		done += (size_t)w;
	}
	if (size)
		*size = fstat(fd, &st) == 0 ? st.st_size : 0;
	return 0;
}

void nsh_ledger_format(const struct nsh_ledger_entry *r, char *buf, size_t len)
{
	const char *pin = r->pin && *r->pin ? r->pin : "-";
	if (r->kind == 'R') {
		char pid[48]; /* "PID@PIDNS", as an N line's "INO@CTIME" */
		if (r->pidns)
			snprintf(pid, sizeof(pid), "%d@%llu", (int)r->pid, (unsigned long long)r->pidns);
		else
			snprintf(pid, sizeof(pid), "%d", (int)r->pid);
		snprintf(buf, len, "R %s %llu %u %u %s %llu %lld %s\n", r->id, (unsigned long long)r->bytes,
			 r->sizes.tcp, r->sizes.udp, pid, (unsigned long long)r->start, (long long)r->time, pin);
	}
	else {
		char fh[2 * sizeof(r->handle) + 16] = "-";
		if (r->handle_len && r->handle_len <= sizeof(r->handle)) {
			int n = snprintf(fh, sizeof(fh), "%d.", r->handle_type);
			for (unsigned i = 0; i < r->handle_len && n > 0 && (size_t)n + 3 <= sizeof(fh); i++)
				n += snprintf(fh + n, sizeof(fh) - (size_t)n, "%02x", r->handle[i]);
		}
		char ino[48];
		if (r->ctime_ns)
			snprintf(ino, sizeof(ino), "%llu@%llu", (unsigned long long)r->ino,
				 (unsigned long long)r->ctime_ns);
		else
			snprintf(ino, sizeof(ino), "%llu", (unsigned long long)r->ino);
		snprintf(buf, len, "N %s %llu %u %u %s %s %lld %s\n", r->id, (unsigned long long)r->bytes,
			 r->sizes.tcp, r->sizes.udp, ino, fh, (long long)r->time, pin);
	}
}

/* Under the lock: replace the ledger by the entries not dropped. */
int nsh_ledger_rewrite(const char *state_dir, struct nsh_ledger *l, struct nshash_error *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int r = nsh_ledger_path(state_dir, "ledger", path, sizeof(path), err);
	if (r == 0)
		r = nsh_ledger_path(state_dir, "ledger.tmp", tmp, sizeof(tmp), err);
	if (r < 0)
		return r;
	cleanup_free char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return nsh_error_sys(err, errno, "write ledger %s", path);
	char line[PATH_MAX + 256];
	size_t kept = 0;
	for (size_t i = 0; i < l->n; i++)
		kept += !l->v[i].drop;
	fprintf(f, "H %zu\n", kept);
	if (l->scan.ids && *l->scan.ids && l->scan.pos.pass < 2) /* a cut scan to go on with */
		fprintf(f, "S %lld %u %d %u %s\n", (long long)l->scan.time, l->scan.pos.pass, (int)l->scan.pos.pid,
			l->scan.pos.sub, l->scan.ids);
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].drop)
			continue;
		nsh_ledger_format(&l->v[i], line, sizeof(line));
		fputs(line, f);
	}
	if (ferror(f) | (fclose(f) != 0))
		return nshash_error_set(err, ENOMEM, "write ledger %s: out of memory", path);
	/* under the lock: a fixed temporary name, a stale one replaced */
	r = nsh_write_replace(path, tmp, text, len, NULL, err);
	if (r < 0)
		return r;
	l->lines = kept + 1;
	l->base = kept;
	return 0;
}
