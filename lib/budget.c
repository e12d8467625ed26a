/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table ledger's accounting (the file itself: ledger.c): the budget
 * (maxTableBytes) a creation reserves against and commits to, its cancel,
 * which entries still count (a creator alive, a pin holding its inode, a
 * netns handle that opens, else a /proc scan), the reconcile that drops
 * the rest, and the usage (nshash_table_usage). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "internal.h"

#define LEDGER_SLACK	  64	      /* dead lines tolerated before a rewrite */
#define LEDGER_SCAN_MS	  1000	      /* a creator waits at most this for a /proc scan */
#define LEDGER_LINE_GUESS 256	      /* bytes per line, for the append path's size check */
#define LEDGER_RESUME_S	  60	      /* a cut scan is gone on with within this */
#define RESERVATION_MAX_S 600 /* s: no creation is under way longer (a reservation judged from another PID namespace) */

/* ------------------------------------------------------------ liveness */

/* Start time (clock ticks since boot) of a process; 0 if it is gone. */
static uint64_t proc_start(pid_t pid)
{
	struct nsh_proc_stat st;
	return nsh_proc_stat(pid, &st) == 0 ? st.start : 0;
}

/* This process's start time, read once per thread (per process after a
 * fork: the pid tells). */
static uint64_t own_start(pid_t pid)
{
	static __thread pid_t cached_pid;
	static __thread uint64_t cached_start;
	if (cached_pid != pid || !cached_start) {
		cached_start = proc_start(pid);
		cached_pid = pid;
	}
	return cached_start;
}

/* Its pin still holds its netns (the cheap proof of life, one syscall).
 * The inode number alone proves nothing: nsfs inode numbers are reused
 * (lowest free id), and a new netns pinned at the same path often gets the
 * number of a dead one.  With a file handle (a 64-bit namespace id, never
 * reused) the pin's handle must be the recorded one.  Without one (older
 * kernels) the pin's inode must also have the recorded ctime: the nsfs
 * inode is made (ctime = now) when the netns is first opened and lives as
 * long as an fd or a mount holds it, so from the creator's fd to its pin
 * the ctime stays, and a new netns has a new inode with a new ctime.  No
 * match is no proof either way: the handle or a /proc scan decides. */
static bool pinned_at(const struct nsh_ledger_entry *r)
{
	if (!r->pin || r->pin[0] != '/')
		return false;
	if (r->handle_len) {
		struct {
			struct file_handle fh;
			unsigned char bytes[sizeof(r->handle)];
		} h = {.fh.handle_bytes = sizeof(r->handle)};
		int mount_id;
		if (name_to_handle_at(AT_FDCWD, r->pin, &h.fh, &mount_id, 0) == 0)
			return h.fh.handle_type == r->handle_type && h.fh.handle_bytes == r->handle_len &&
			       memcmp(h.fh.f_handle, r->handle, r->handle_len) == 0;
		/* No handle made here (a caller outside the initial PID
		 * namespace: EOPNOTSUPP for some nsfs inodes on 6.18): the
		 * inode and its ctime, as without handles. */
	}
	struct stat st;
	return r->ctime_ns && stat(r->pin, &st) == 0 && (uint64_t)st.st_ino == r->ino && major(st.st_dev) == 0 &&
	       (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec == r->ctime_ns;
}

/* Can a failed decode of an nsfs file handle here mean "gone"?  Only for
 * a caller in the initial PID and user namespaces with CAP_SYS_ADMIN:
 * anyone else the kernel refuses a handle of any netns but its own (6.18:
 * ESTALE, as for a dead one; later kernels: EPERM), so a live pod's netns
 * would look gone to a gc in a container with a PID namespace of its own
 * or to rootless podman's hooks.  The initial namespaces' nsfs inode
 * numbers are fixed (PROC_PID_INIT_INO, PROC_USER_INIT_INO). */
static bool handles_decide(void)
{
	struct stat user;
	if (!nsh_in_initial_pidns() || stat("/proc/thread-self/ns/user", &user) < 0 ||
	    user.st_ino != NSH_PROC_USER_INIT_INO)
		return false;
	return nsh_cap_in_effect(CAP_SYS_ADMIN);
}

/* Does the netns of an N entry still exist?  Its nsfs file handle says
 * exactly (a 64-bit namespace id: no reuse) in one syscall: 1 alive, 0
 * gone, -1 cannot tell (no handle, an older kernel, no CAP_DAC_READ_SEARCH):
 * then only a /proc scan can. */
static int handle_alive(const struct nsh_ledger_entry *r)
{
	if (!r->handle_len || !handles_decide())
		return -1;
	struct {
		struct file_handle fh;
		unsigned char bytes[sizeof(r->handle)];
	} h;
	h.fh.handle_bytes = r->handle_len;
	h.fh.handle_type = r->handle_type;
	memcpy(h.fh.f_handle, r->handle, r->handle_len);
	/* Any nsfs fd names the filesystem the handle belongs to. */
	cleanup_close int mount_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (mount_fd < 0)
		return -1;
	int fd = open_by_handle_at(mount_fd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == ESTALE ? 0 : -1;
}

/* Drop reservations of creators that are gone; say whether any was.  A
 * creator's pid means something only in its own PID namespace: from
 * another (a node container without hostPID, an operator's unshare, the
 * host judging a creation made in one) /proc/PID is someone else, and a
 * live creation's reservation would be dropped (the budget then passed by
 * it).  There a reservation goes only once older than any creation takes. */
static bool drop_dead_creators(struct nsh_ledger *l)
{
	bool changed = false, known = false;
	uint64_t mine = 0;
	time_t now = time(NULL);
	for (size_t i = 0; i < l->n; i++) {
		struct nsh_ledger_entry *r = &l->v[i];
		if (r->kind != 'R' || r->drop)
			continue;
		if (r->pidns && !known)
			mine = nsh_own_pidns(), known = true;
		bool gone = r->pidns && r->pidns != mine ? now - r->time > RESERVATION_MAX_S
							 : proc_start(r->pid) != r->start;
		if (gone)
			r->drop = changed = true;
	}
	return changed;
}

/* A spare not taken yet (still pinned under STATE_DIR/spares/): it counts
 * only once taken, as the netns of the container that took it. */
static bool idle_spare(const char *state_dir, const struct nsh_ledger_entry *r)
{
	size_t n = strlen(state_dir);
	return r->kind == 'N' && r->pin && strncmp(r->pin, state_dir, n) == 0 && !strncmp(r->pin + n, "/spares/", 8) &&
	       pinned_at(r);
}

/* Sum what counts.  With `verify`, also count the entries not proven
 * alive by their pin (a stat each: only where it matters). */
static void usage_of(const char *state_dir, const struct nsh_ledger *l, bool verify, struct nshash_table_usage *u)
{
	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < l->n; i++) {
		const struct nsh_ledger_entry *r = &l->v[i];
		if (r->drop || idle_spare(state_dir, r))
			continue;
		u->bytes += r->bytes;
		u->netns++;
		if (r->kind == 'R') {
			u->pending_bytes += r->bytes;
			u->pending++;
		} else if (verify && !r->checked && !pinned_at(r)) {
			u->unverified++;
		}
	}
}

/* The namespace id an nsfs file handle carries (its uapi layout, struct
 * nsfs_file_handle: a 64-bit id, the type, the inode number); 0 none.
 * The scan then tells this netns from a newer one with its inode number. */
static uint64_t handle_ns_id(const struct nsh_ledger_entry *r)
{
	uint64_t id = 0;
	if (r->handle_type == 0xf1 /* FILEID_NSFS */ && r->handle_len >= 16)
		memcpy(&id, r->handle, sizeof(id));
	return id;
}

/* Records whose pin no longer holds them and whose file handle cannot
 * tell: candidates for a scan.  Those the handle shows gone are dropped
 * (counted in *dropped).  Returns how many; *items is malloc'd. */
static int collect_unverified(struct nsh_ledger *l, struct nsh_scan_item **items, size_t **index, size_t *dropped)
{
	size_t n = 0;
	*items = NULL;
	*index = NULL;
	for (size_t i = 0; i < l->n; i++) {
		struct nsh_ledger_entry *r = &l->v[i];
		r->checked = false;
		if (r->drop || r->kind != 'N')
			continue;
		int alive = pinned_at(r) ? 1 : handle_alive(r);
		if (alive >= 0) {
			r->checked = true;
			r->drop = alive == 0;
			*dropped += alive == 0;
			continue;
		}
		n++;
	}
	if (!n)
		return 0;
	*items = calloc(n, sizeof(**items));
	*index = calloc(n, sizeof(**index));
	if (!*items || !*index) {
		free(*items);
		free(*index);
		*items = NULL;
		*index = NULL;
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		struct nsh_ledger_entry *r = &l->v[i];
		if (r->drop || r->kind != 'N' || r->checked)
			continue;
		(*items)[k] = (struct nsh_scan_item){
		    .ino = r->ino, .id = handle_ns_id(r), .want = NSH_SCAN_THREADS | NSH_SCAN_FDS | NSH_SCAN_MOUNTS};
		(*index)[k++] = i;
	}
	return (int)n;
}

static int64_t boot_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/* Is id one of "ID ID ..." (validated by the parser, or made here)? */
static bool id_listed(const char *ids, const char *id)
{
	for (const char *p = ids; p && *p; p += NSH_LEDGER_ID_LEN + (p[NSH_LEDGER_ID_LEN] == ' '))
		if (strncmp(p, id, NSH_LEDGER_ID_LEN) == 0)
			return true;
	return false;
}

/* What was known of an N entry before the lock was let go. */
struct verdict {
	char id[NSH_LEDGER_ID_LEN + 1];
	uint64_t ino;
	bool drop, checked;
	int item; /* its scan item, -1 none */
};

static int cmp_verdict(const void *a, const void *b)
{
	return strcmp(((const struct verdict *)a)->id, ((const struct verdict *)b)->id);
}

/* Under the lock: record where a cut scan stopped (and for which entries),
 * or that none is to be gone on with (ids ""). */
static int note_scan(const char *state_dir, struct nsh_ledger *l, struct nsh_scan_pos pos, const char *ids,
		     struct nshash_error *err)
{
	size_t len = strlen(ids) + 64;
	char *line = malloc(len);
	if (!line)
		return nshash_error_set(err, ENOMEM, "reconcile the table ledger: out of memory");
	int n = snprintf(line, len, "S %lld %u %d %u %s\n", (long long)boot_seconds(), pos.pass, (int)pos.pid,
			 pos.sub, ids);
	int r = nsh_ledger_append(state_dir, line, NULL, err);
	line[n - 1] = '\0';
	free(l->scan_buf);
	l->scan_buf = line;
	l->scan.time = boot_seconds();
	l->scan.pos = pos;
	l->scan.ids = line + n - 1 - strlen(ids);
	return r;
}

/* Under the lock (*lockfd), on a loaded ledger *l: drop the N entries
 * whose netns is gone.  The pin or the file handle tell in a syscall each;
 * what they cannot tell (no handle: kernels before nsfs file handles) only
 * a /proc scan can, and the scan runs with the lock let go, so creators go
 * on meanwhile.  Then the lock is taken again, *l read again, and what was
 * found applies to the entries still there (same id, same inode); entries
 * added meanwhile are not judged.  An entry the scan found held by nothing
 * is dropped if its pin does not hold it now either (a creator binds its
 * pin before it closes its fd: a netns that moved from the fd to the pin
 * while the scan ran shows here).
 *
 * A scan longer than max_ms (0 = no limit) is cut: what it did not find
 * keeps counting (-ETIMEDOUT), and where it got to is recorded with the
 * ids of those entries (an "S" line).  The next reconcile within
 * LEDGER_RESUME_S goes on from there for them, so a scan that cannot end
 * within max_ms still ends, in parts, and their entries go without a gc.
 * (A netns handed, between two parts, from a process not yet looked at to
 * one already looked at, the first then gone, is missed: as it would be
 * within one scan, only with the pause in between.) */
static int reconcile(const char *state_dir, int *lockfd, struct nsh_ledger *l, unsigned max_ms, bool dry,
		     size_t *dropped, struct nshash_error *err)
{
	cleanup_free struct nsh_scan_item *items = NULL;
	cleanup_free size_t *index = NULL;
	int n = collect_unverified(l, &items, &index, dropped);
	if (n <= 0)
		return n < 0 ? nsh_error_sys(err, -n, "reconcile the table ledger") : 0;
	if (!nsh_state_sees_holders(state_dir))
		return 0; /* a scan here could not prove one gone: they keep counting */
	/* Go on with a cut scan (its entries first), else start one. */
	struct nsh_scan_pos pos = {0, 0, 0};
	int64_t age = boot_seconds() - l->scan.time;
	size_t m = 0;
	if (l->scan.ids && *l->scan.ids && l->scan.pos.pass < 2 && age >= 0 && age <= LEDGER_RESUME_S)
		for (int i = 0; i < n; i++)
			if (id_listed(l->scan.ids, l->v[index[i]].id)) {
				struct nsh_scan_item it = items[m];
				size_t x = index[m];
				items[m] = items[i], index[m] = index[i];
				items[i] = it, index[i] = x;
				m++;
			}
	if (m)
		pos = l->scan.pos;
	else
		m = (size_t)n;
	bool had_scan = l->scan.ids && *l->scan.ids;
	cleanup_free struct verdict *v = calloc(l->n, sizeof(*v));
	cleanup_free int *item_of = calloc(l->n ? l->n : 1, sizeof(*item_of)); /* entry -> scan item */
	if (!v || !item_of)
		return nshash_error_set(err, ENOMEM, "reconcile the table ledger: out of memory");
	for (size_t i = 0; i < l->n; i++)
		item_of[i] = -1;
	for (size_t k = 0; k < m; k++)
		if (index[k] < l->n)
			item_of[index[k]] = (int)k;
	size_t nv = 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct nsh_ledger_entry *r = &l->v[i];
		if (r->kind != 'N')
			continue;
		v[nv] = (struct verdict){.ino = r->ino, .drop = r->drop, .checked = r->checked, .item = item_of[i]};
		memcpy(v[nv++].id, r->id, sizeof(r->id));
	}
	qsort(v, nv, sizeof(*v), cmp_verdict);
	nsh_ledger_free(l);
	close(*lockfd);
	*lockfd = -1;
	int sr = nsh_netns_scan_from(items, m, false, max_ms, &pos);
	int r = nsh_lock_state(state_dir, lockfd, err);
	if (r == 0)
		r = nsh_ledger_load(state_dir, l, err);
	if (r < 0)
		return r;
	/* what the scan did not find is gone only if it could see them all */
	bool complete = sr >= 0 && nsh_state_sees_holders(state_dir);
	size_t idlen = 0;
	cleanup_free char *ids = calloc(m, NSH_LEDGER_ID_LEN + 1);
	for (size_t i = 0; i < l->n; i++) {
		struct nsh_ledger_entry *rec = &l->v[i];
		struct verdict key = {.item = -1};
		memcpy(key.id, rec->id, sizeof(key.id));
		struct verdict *f = rec->kind == 'N' ? bsearch(&key, v, nv, sizeof(*v), cmp_verdict) : NULL;
		if (!f || f->ino != rec->ino)
			continue;
		rec->drop |= f->drop;
		rec->checked |= f->checked;
		if (f->item < 0 || rec->drop)
			continue;
		if (items[f->item].held) {
			rec->checked = true;
		} else if (complete) {
			rec->checked = true;
			if (!pinned_at(rec)) {
				rec->drop = true;
				(*dropped)++;
			}
		} else if (sr == -ETIMEDOUT && ids) {
			if (idlen)
				ids[idlen++] = ' ';
			memcpy(ids + idlen, rec->id, NSH_LEDGER_ID_LEN);
			idlen += NSH_LEDGER_ID_LEN;
		}
	}
	if (dry) /* a dry run writes nothing, not even where it got to */
		r = 0;
	else if (sr == -ETIMEDOUT && idlen)
		r = note_scan(state_dir, l, pos, ids, err);
	else if (had_scan)
		r = note_scan(state_dir, l, (struct nsh_scan_pos){2, 0, 0}, "", err); /* ended */
	if (r < 0)
		return r;
	if (sr == -ETIMEDOUT)
		return nshash_error_set(err, ETIMEDOUT,
					"reconcile the table ledger: the /proc scan took longer than %u ms", max_ms);
	if (sr == -EACCES) /* what could not be seen keeps counting */
		return nshash_error_set(err, EACCES,
					"reconcile the table ledger: some processes' /proc could not be read "
					"(needs CAP_SYS_PTRACE)");
	if (sr < 0)
		return nsh_error_sys(err, -sr, "reconcile the table ledger: read /proc");
	return 0;
}

static bool worth_rewrite(const struct nsh_ledger *l)
{
	size_t live = 0;
	for (size_t i = 0; i < l->n; i++)
		live += !l->v[i].drop;
	/* Amortized: a rename on /run costs milliseconds when mounts abound,
	 * so dropped entries stay in the file (dropped again by each reader)
	 * until dead lines outnumber live ones. */
	return l->lines > 2 * live + LEDGER_SLACK;
}

/* Entries doubled since the last rewrite: entries of pins removed since
 * (they count until checked) may pile up; check them.  Amortized, one stat
 * per entry and at most one /proc scan per doubling. */
static bool grown(const struct nsh_ledger *l)
{
	return l->n > 2 * l->base + LEDGER_SLACK;
}

/* Under the lock, on a loaded ledger: reconcile and rewrite. */
static int compact(const char *state_dir, int *lockfd, struct nsh_ledger *l, struct nshash_error *err)
{
	size_t dropped = 0;
	int r = reconcile(state_dir, lockfd, l, LEDGER_SCAN_MS, false, &dropped, err);
	drop_dead_creators(l);
	return r < 0 && !NSH_SCAN_INCOMPLETE(r) ? r : nsh_ledger_rewrite(state_dir, l, err);
}

/* ------------------------------------------------------------ the API */

static void new_id(char id[NSH_LEDGER_ID_LEN + 1])
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
		    (uint64_t)gettid();
	}
	snprintf(id, NSH_LEDGER_ID_LEN + 1, "%016llx", (unsigned long long)v);
}

static const char *pin_field(const char *pin)
{
	/* The pin is the rest of a line: none that would break one. */
	if (!pin || pin[0] != '/' || strlen(pin) >= PATH_MAX)
		return "";
	for (const char *p = pin; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "";
	return pin;
}

static void budget_message(struct nshash_error *err, uint64_t max, const struct nshash_table_usage *u,
			   struct nshash_sizes eff, uint64_t bytes)
{
	char pending[64] = "";
	if (u->pending)
		snprintf(pending, sizeof(pending), " (%zu of them being created)", u->pending);
	nshash_error_set(err, NSHASH_E_BUDGET,
			 "table memory budget: maxTableBytes %llu would be passed: %llu bytes in use by %zu network "
			 "namespace(s)%s, this request (tcp %u, udp %u) needs %llu bytes; free some or raise "
			 "maxTableBytes",
			 (unsigned long long)max, (unsigned long long)u->bytes, u->netns, pending, eff.tcp, eff.udp,
			 (unsigned long long)bytes);
}

int nsh_ledger_reserve(const char *state_dir, struct nshash_sizes eff, uint64_t max, const char *pin,
		       struct nsh_ticket *t, struct nshash_error *err)
{
	memset(t, 0, sizeof(*t));
	t->bytes = nshash_sizes_bytes(eff);
	if (t->bytes == 0)
		return 0;
	cleanup_close int lockfd = -1;
	int r = nsh_lock_state(state_dir, &lockfd, err);
	if (r < 0)
		return nshash_error_prefix(err, "table memory budget");
	struct nsh_ledger l;
	r = nsh_ledger_load(state_dir, &l, err);
	if (r < 0) {
		nsh_ledger_free(&l);
		return nshash_error_prefix(err, "table memory budget");
	}
	drop_dead_creators(&l);
	struct nshash_table_usage u;
	usage_of(state_dir, &l, false, &u);
	/* A grown ledger is checked and rewritten (its new base resets the
	 * doubling), else the next creator would check it all again. */
	bool rewrite = grown(&l);
	if (u.bytes + t->bytes > max || rewrite) {
		/* Only now is it worth a look: entries whose pins are gone may
		 * still count (a process holds the netns) or not. */
		size_t dropped = 0;
		r = reconcile(state_dir, &lockfd, &l, LEDGER_SCAN_MS, false, &dropped, err);
		if (NSH_SCAN_INCOMPLETE(r))
			r = 0; /* what could not be checked keeps counting */
		if (r < 0) {
			nsh_ledger_free(&l);
			return nshash_error_prefix(err, "table memory budget");
		}
		drop_dead_creators(&l); /* read again */
		usage_of(state_dir, &l, true, &u);
	}
	bool over = u.bytes + t->bytes > max || t->bytes > max;
	struct nsh_ledger_entry rec = {.kind = 'R',
				 .bytes = t->bytes,
				 .sizes = eff,
				 .pid = getpid(),
				 .pidns = nsh_own_pidns(),
				 .time = time(NULL),
				 .pin = (char *)pin_field(pin)};
	rec.start = own_start(rec.pid);
	new_id(rec.id);
	char line[PATH_MAX + 256];
	nsh_ledger_format(&rec, line, sizeof(line));
	if (rewrite || worth_rewrite(&l))
		r = nsh_ledger_rewrite(state_dir, &l, err);
	if (r == 0 && !over)
		r = nsh_ledger_append(state_dir, line, NULL, err);
	if (over)
		budget_message(err, max, &u, eff, t->bytes);
	nsh_ledger_free(&l);
	if (over)
		return -NSHASH_E_BUDGET;
	if (r < 0)
		return nshash_error_prefix(err, "table memory budget");
	memcpy(t->id, rec.id, sizeof(t->id));
	t->reserved = true;
	return 0;
}

/* The file's size against the entry count its header gave. */
static bool ledger_looks_grown(const char *state_dir, off_t size)
{
	char path[PATH_MAX], head[48];
	if (size <= (off_t)LEDGER_SLACK * LEDGER_LINE_GUESS ||
	    nsh_ledger_path(state_dir, "ledger", path, sizeof(path), NULL) < 0)
		return false;
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	unsigned long long base = 0;
	head[n > 0 ? n : 0] = '\0';
	if (sscanf(head, "H %llu", &base) != 1)
		base = 0;
	return (unsigned long long)size > (2 * base + LEDGER_SLACK) * LEDGER_LINE_GUESS;
}

/* The nsfs inode and file handle of the netns behind nsfd. */
static void entry_identity(int nsfd, struct nsh_ledger_entry *rec)
{
	struct stat st;
	if (fstat(nsfd, &st) == 0) {
		rec->ino = st.st_ino;
		rec->ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
	}
	struct {
		struct file_handle fh;
		unsigned char bytes[sizeof(rec->handle)];
	} h = {.fh.handle_bytes = sizeof(rec->handle)};
	int mount_id;
	if (name_to_handle_at(nsfd, "", &h.fh, &mount_id, AT_EMPTY_PATH) == 0 &&
	    h.fh.handle_bytes <= sizeof(rec->handle)) {
		rec->handle_type = h.fh.handle_type;
		rec->handle_len = h.fh.handle_bytes;
		memcpy(rec->handle, h.fh.f_handle, h.fh.handle_bytes);
	}
}

int nsh_ledger_commit(const char *state_dir, struct nsh_ticket *t, struct nshash_sizes eff, int nsfd, const char *pin,
		      bool required, struct nshash_error *err)
{
	if (nshash_sizes_bytes(eff) == 0)
		return 0;
	cleanup_close int lockfd = -1;
	int r = nsh_lock_state(state_dir, &lockfd, err);
	if (r < 0) {
		/* Without a budget, a caller that cannot keep state (nested
		 * strategy in a user namespace) creates unrecorded. */
		if (!required && (r == -EACCES || r == -EPERM || r == -EROFS))
			return 0;
		return nshash_error_prefix(err, "record in the table ledger");
	}
	/* first where a scan may judge the record (statedir.c) */
	if ((r = nsh_state_note_pidns(state_dir, err)) < 0)
		return nshash_error_prefix(err, "record in the table ledger");
	struct nsh_ledger_entry rec = {.kind = 'N',
				 .bytes = nshash_sizes_bytes(eff),
				 .sizes = eff,
				 .time = time(NULL),
				 .pin = (char *)pin_field(pin)};
	entry_identity(nsfd, &rec);
	if (t->reserved)
		memcpy(rec.id, t->id, sizeof(rec.id));
	else
		new_id(rec.id);
	char line[PATH_MAX + 256];
	nsh_ledger_format(&rec, line, sizeof(line));
	off_t size = 0;
	r = nsh_ledger_append(state_dir, line, &size, err);
	if (r < 0)
		return nshash_error_prefix(err, "record in the table ledger");
	memcpy(t->id, rec.id, sizeof(t->id));
	t->reserved = true;
	/* Without a budget nobody reads the ledger on the way: keep it from
	 * growing without end (a cheap look at its size and first line). */
	if (ledger_looks_grown(state_dir, size)) {
		struct nsh_ledger l;
		if (nsh_ledger_load(state_dir, &l, NULL) == 0)
			compact(state_dir, &lockfd, &l, NULL);
		nsh_ledger_free(&l);
	}
	return 0;
}

void nsh_ledger_cancel(const char *state_dir, struct nsh_ticket *t)
{
	if (!t->reserved)
		return;
	cleanup_close int lockfd = -1;
	if (nsh_lock_state(state_dir, &lockfd, NULL) < 0)
		return; /* the entry goes at the next reconcile */
	char line[NSH_LEDGER_ID_LEN + 8];
	snprintf(line, sizeof(line), "X %s\n", t->id);
	nsh_ledger_append(state_dir, line, NULL, NULL);
	t->reserved = false;
}

/* Without a scan: what the pins and the file handles tell alone (one
 * syscall a record): a record whose netns is gone is dropped, one whose
 * netns lives away from its pin (a process holds it) is known alive; only
 * a record neither tells of (no handle: older kernels) stays unverified. */
static void judge_by_handle(struct nsh_ledger *l, size_t *dropped)
{
	for (size_t i = 0; i < l->n; i++) {
		struct nsh_ledger_entry *r = &l->v[i];
		if (r->drop || r->kind != 'N' || pinned_at(r))
			continue;
		int alive = handle_alive(r);
		r->checked = alive >= 0;
		if (alive == 0) {
			r->drop = true;
			(*dropped)++;
		}
	}
}

/* Usage, after dropping what is gone: reservations of dead creators,
 * netns in `gone` (inodes whose last pin the caller removed while nothing
 * held them) and, with `scan`, what a /proc scan finds unheld.  `dry`:
 * the same judgement, nothing written (`gone`: the pins the real run would
 * remove, still there). */
static int ledger_account(const char *state_dir, const uint64_t *gone, size_t ngone, bool scan, bool dry,
			  unsigned max_ms, size_t *dropped, struct nshash_table_usage *usage, struct nshash_error *err)
{
	*dropped = 0;
	memset(usage, 0, sizeof(*usage));
	char path[PATH_MAX];
	struct stat st;
	int r = nsh_ledger_path(state_dir, "ledger", path, sizeof(path), err);
	if (r < 0)
		return r;
	if (stat(path, &st) < 0)
		return 0; /* nothing recorded: no lock (and no lock file) needed */
	cleanup_close int lockfd = -1;
	r = nsh_lock_state(state_dir, &lockfd, err);
	if (r < 0)
		return r;
	struct nsh_ledger l;
	r = nsh_ledger_load(state_dir, &l, err);
	if (r == 0) {
		bool rewrite = drop_dead_creators(&l);
		for (size_t i = 0; i < l.n; i++)
			for (size_t k = 0; k < ngone && l.v[i].kind == 'N' && !l.v[i].drop; k++)
				if (l.v[i].ino == gone[k] && (dry || !pinned_at(&l.v[i]))) {
					l.v[i].drop = rewrite = true;
					(*dropped)++;
				}
		size_t before = *dropped;
		int timed_out = 0;
		if (scan)
			r = reconcile(state_dir, &lockfd, &l, max_ms, dry, dropped, err);
		else
			judge_by_handle(&l, dropped);
		if (NSH_SCAN_INCOMPLETE(r))
			timed_out = -ETIMEDOUT, r = 0;
		rewrite |= drop_dead_creators(&l); /* read again after a scan */
		rewrite |= *dropped > before;
		if (r == 0 && !dry && (rewrite || worth_rewrite(&l)))
			r = nsh_ledger_rewrite(state_dir, &l, err);
		usage_of(state_dir, &l, true, usage);
		if (r == 0)
			r = timed_out;
	}
	nsh_ledger_free(&l);
	return r;
}

int nsh_ledger_reconcile(const char *state_dir, const uint64_t *gone, size_t ngone, unsigned max_ms, bool dry,
			 size_t *dropped, struct nshash_table_usage *usage, struct nshash_error *err)
{
	int r = ledger_account(state_dir, gone, ngone, true, dry, max_ms, dropped, usage, err);
	return r < 0 ? nshash_error_prefix(err, "reconcile the table ledger") : 0;
}

int nshash_table_usage(const char *state_dir, bool reconcile, struct nshash_table_usage *usage,
		       struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	size_t dropped;
	int r =
	    ledger_account(nsh_state_dir(state_dir, sdbuf, sizeof(sdbuf)), NULL, 0, reconcile, false, 0, &dropped, usage, err);
	return r < 0 ? nshash_error_prefix(err, "table memory in use") : 0;
}
