/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one /proc scanner: which network namespaces (by nsfs inode) does
 * something on this host still hold?  A netns lives as long as any of:
 * a thread in it (any thread, not only a thread group leader), an open fd
 * on it (a runtime's or a daemon's, e.g. after `ip netns` was given
 * /proc/PID/ns/net), or a bind mount of it in any mount namespace.
 *
 * Each item says which of these count for it: the CNI occupancy check asks
 * only "is a thread inside" (any thread: a Go plugin's LockOSThread + setns
 * is not its process's leader); orphan reclaim asks "does anyone use it"
 * (threads and fds, not the pin's own mount); the table ledger asks "is it
 * alive at all" (mounts too).  One pass over /proc answers all items, the
 * cheap sources first: leaders and threads in a first pass, fds and the
 * mount tables of other mount namespaces only for what is still unresolved.
 * The scan stops as soon as every item is resolved. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "internal.h"

struct slot {
	uint64_t ino;
	size_t idx;
};

struct scan {
	struct nsh_scan_item *items;
	size_t n, left;
	struct slot *order; /* the items' inodes, sorted */
	int procfd;
	unsigned flags; /* union of the items' wants */
	pid_t self;
	dev_t nsfs_dev;	  /* the device of every namespace inode */
	uint64_t own_mnt; /* the scanner's mount namespace (inode), 0 unknown */
	uint64_t *mntns;  /* mount namespaces whose mount table was read */
	int64_t deadline; /* nsh_monotonic_ms(); 0 = none */
	pid_t from, at;	  /* the first pid the pass looks at; the one it is at */
	unsigned skip;	  /* entries of `from` seen by an earlier part: not again */
	unsigned seen;	  /* entries (threads, fds, mount lines) of `at` looked at */
	unsigned looked;  /* entries looked at (not skipped): a part ends only after some */
	unsigned ticks;
	bool expired;
	bool can_ptrace; /* CAP_SYS_PTRACE: every process's /proc is ours to read */
	bool can_fds;	 /* and CAP_DAC_READ_SEARCH (or _OVERRIDE): its fd dir, 0500 of its uid, too */
	bool denied;	 /* a source could not be read: what is unresolved may be held */
	size_t nmntns, capmntns;
	const pid_t *only; /* look at these processes only (NULL: every process in /proc) */
	size_t nonly;
	nsh_holder_fn fn; /* per holder (nsh_netns_holders): items are never resolved */
	void *arg;
	int stop; /* what fn returned to stop the scan */
};

/* A look at /proc failed: a process that is gone (ENOENT, ESRCH) holds
 * nothing.  Without CAP_SYS_PTRACE (a caller that dropped it) other
 * processes' fds and namespaces are hidden: the scan cannot conclude.  With
 * it, a process still refused (an LSM, a supervisor above our user
 * namespace) is one nshash could not have handed a pin to. */
static void failed_look(struct scan *s)
{
	if (errno != ENOENT && errno != ESRCH && !s->can_ptrace)
		s->denied = true;
}

/* Something left to find, and time left (the clock is read every 256
 * steps: a process with a million fds must not hold a hook up; and not
 * before 256 looks, so that a scan going on where one stopped gets on). */
static bool go_on(struct scan *s)
{
	if (!s->left || s->expired)
		return false;
	if (s->deadline > 0 && s->looked >= 256 && (++s->ticks & 255) == 0 && nsh_monotonic_ms() > s->deadline)
		s->expired = true;
	return !s->expired;
}

/* An entry of the process a cut scan stopped in, seen by that part: skip
 * it; else count it as seen (where the next part goes on). */
static bool skipped(struct scan *s)
{
	if (s->skip) {
		s->skip--;
		return true;
	}
	s->seen++;
	s->looked++;
	return false;
}

static int cmp_slot(const void *a, const void *b)
{
	uint64_t x = ((const struct slot *)a)->ino, y = ((const struct slot *)b)->ino;
	return x < y ? -1 : x > y;
}

/* "net:[4026532123]" (or "mnt:[...]" with `type` "mnt") → inode; 0 if not. */
static uint64_t ns_link_ino(const char *link, const char *type)
{
	size_t t = strlen(type);
	if (strncmp(link, type, t) != 0 || strncmp(link + t, ":[", 2) != 0)
		return 0;
	char *end;
	unsigned long long v = strtoull(link + t + 2, &end, 10);
	return *end == ']' ? (uint64_t)v : 0;
}

/* The mount namespace of PID (its inode), 0 unknown. */
static uint64_t mnt_of(struct scan *s, pid_t pid)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "%d/ns/mnt", (int)pid);
	ssize_t len = readlinkat(s->procfd, path, link, sizeof(link) - 1);
	if (len <= 0)
		return 0;
	link[len] = '\0';
	return ns_link_ino(link, "mnt");
}

/* Where a holder's netns can be opened to read its id: a link relative
 * to a /proc directory (a thread's or leader's ns/net, an fd), or a mount
 * point of PID's mount namespace (its mountinfo's path, under its root). */
struct place {
	int dirfd;
	const char *rel;
	bool mount;
};

/* The 64-bit id of the netns with inode `ino` at a place; 0 when it cannot
 * be told (then the inode number alone decides, as before ids).  What the
 * path reaches is looked at through O_PATH first and opened for real only
 * if it is that very nsfs inode: a FIFO, a device or another netns put
 * there since is never opened.  A mount point is looked at only in the
 * scanner's own mount namespace (another's, a container's, may be slow to
 * resolve, e.g. on FUSE, and is its own), from "/" without following any
 * symlink; a mount stacked over it shows another inode: no answer then,
 * the lower mount may be the netns asked about. */
static uint64_t id_at(struct scan *s, const struct place *w, pid_t pid, uint64_t ino)
{
	int pfd;
	if (w->mount) {
		if (!s->own_mnt || mnt_of(s, pid) != s->own_mnt)
			return 0;
		struct open_how how = {.flags = O_PATH | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		const char *rel = w->rel;
		while (*rel == '/')
			rel++;
		cleanup_close int rfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		pfd = rfd < 0 ? -1 : (int)syscall(SYS_openat2, rfd, *rel ? rel : ".", &how, sizeof(how));
	} else {
		pfd = openat(w->dirfd, w->rel, O_PATH | O_CLOEXEC);
	}
	if (pfd < 0)
		return 0;
	struct stat st;
	struct statfs sfs;
	uint64_t id = 0;
	if (fstat(pfd, &st) == 0 && fstatfs(pfd, &sfs) == 0 && sfs.f_type == NSFS_MAGIC && (uint64_t)st.st_ino == ino) {
		int nfd = nsh_reopen(pfd, O_RDONLY | O_NONBLOCK);
		if (nfd >= 0) {
			id = nsh_fd_is_netns(nfd) ? nsh_ns_get_id(nfd) : 0;
			close(nfd);
		}
	}
	close(pfd);
	return id;
}

/* Mark every unresolved item with inode `ino` that wants `source`, or
 * with a holder callback, tell it (`entry`: the thread's tid or the fd,
 * NULL for a leader).  An item that knows its netns's id (`id`) is held
 * only by a netns with that id: nsfs inode numbers are reused, and a new
 * netns can have the number of a dead one the caller asks about.  True
 * when the callback was told: the process's other entries of that source
 * need no look. */
static bool hit(struct scan *s, uint64_t ino, unsigned source, pid_t pid, const char *entry, const struct place *w)
{
	uint64_t id = 0;
	bool id_read = false;
	size_t lo = 0, hi = s->n;
	while (lo < hi) { /* first item with inode >= ino */
		size_t mid = (lo + hi) / 2;
		if (s->order[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->n && s->order[lo].ino == ino; lo++) {
		struct nsh_scan_item *it = &s->items[s->order[lo].idx];
		if (it->held || !(it->want & source))
			continue;
		if (it->id && w) {
			if (!id_read)
				id = id_at(s, w, pid, ino), id_read = true;
			if (id && id != it->id)
				continue;
		}
		if (s->fn) {
			int r = s->fn(pid, source, entry, s->arg);
			if (r) {
				s->stop = r;
				s->left = 0;
			}
			return true;
		}
		if (source == NSH_SCAN_LEADERS && it->not_mnt) {
			uint64_t mnt = mnt_of(s, pid);
			if (!mnt || mnt == it->not_mnt)
				continue;
		}
		it->held = source;
		it->pid = pid;
		s->left--;
	}
	return false;
}

static bool check_link(struct scan *s, int dirfd, const char *rel, unsigned source, pid_t pid, const char *entry)
{
	char link[64];
	ssize_t len = readlinkat(dirfd, rel, link, sizeof(link) - 1);
	if (len <= 0) {
		failed_look(s);
		return false;
	}
	link[len] = '\0';
	uint64_t ino = ns_link_ino(link, "net");
	struct place w = {dirfd, rel, false};
	return ino && hit(s, ino, source, pid, entry, &w);
}

/* The links under /proc/PID/task (threads other than the leader:
 * TID/ns/net) or /proc/PID/fd (every open fd). */
static void scan_links(struct scan *s, pid_t pid, unsigned source)
{
	char path[64];
	snprintf(path, sizeof(path), "%d/%s", (int)pid, source == NSH_SCAN_THREADS ? "task" : "fd");
	if (source == NSH_SCAN_THREADS) {
		/* procfs counts a process's threads in its task dir's link
		 * count (2 + threads): one stat skips the single-threaded */
		struct stat st;
		if (fstatat(s->procfd, path, &st, 0) == 0 && st.st_nlink <= 3)
			return;
	}
	int dfd = openat(s->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		/* /proc/PID/fd is the process's uid's, mode 0500: CAP_SYS_PTRACE
		 * alone does not open it (a caller that kept only that, as the
		 * CNI plugin once did, would call another uid's fds none) */
		if (source == NSH_SCAN_FDS && (errno == EACCES || errno == EPERM) && !s->can_fds)
			s->denied = true;
		else
			failed_look(s);
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *de;
	while (go_on(s) && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]) || skipped(s))
			continue;
		if (source == NSH_SCAN_FDS) {
			/* An fd opened through a pin reads as the pin's path, not
			 * "net:[INO]": stat what it points to. */
			struct stat st;
			if (fstatat(dfd, de->d_name, &st, 0) < 0)
				failed_look(s); /* (a closed fd is ENOENT) */
			else if (st.st_dev == s->nsfs_dev &&
				 hit(s, st.st_ino, source, pid, de->d_name, &(struct place){dfd, de->d_name, false}))
				break;
			continue;
		}
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid == pid)
			continue;
		snprintf(path, sizeof(path), "%d/ns/net", (int)tid);
		if (check_link(s, dfd, path, source, pid, de->d_name))
			break;
	}
	closedir(d);
}

/* The nsfs mounts of PID's mount namespace, once per mount namespace.
 * Lines look like "... - nsfs nsfs rw" with the root field "net:[INO]". */
static void scan_mounts(struct scan *s, pid_t pid)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "%d/ns/mnt", (int)pid);
	ssize_t len = readlinkat(s->procfd, path, link, sizeof(link) - 1);
	if (len <= 0) {
		failed_look(s);
		return;
	}
	link[len] = '\0';
	uint64_t mnt = ns_link_ino(link, "mnt");
	for (size_t i = 0; i < s->nmntns; i++)
		if (s->mntns[i] == mnt)
			return;
	if (s->nmntns == s->capmntns) {
		size_t cap = s->capmntns ? 2 * s->capmntns : 16;
		uint64_t *v = realloc(s->mntns, cap * sizeof(*v));
		if (!v)
			return;
		s->mntns = v;
		s->capmntns = cap;
	}
	s->mntns[s->nmntns++] = mnt;
	snprintf(path, sizeof(path), "%d/mountinfo", (int)pid);
	int fd = openat(s->procfd, path, O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		failed_look(s);
		if (fd >= 0)
			close(fd);
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	while (go_on(s) && getline(&line, &cap, f) > 0) {
		if (skipped(s))
			continue;
		/* Fields: id parent major:minor root mountpoint ... */
		char *root = line;
		for (int i = 0; i < 3 && root; i++) {
			root = strchr(root, ' ');
			if (root)
				root++;
		}
		if (!root || !strstr(root, " - nsfs "))
			continue;
		char *sp = strchr(root, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		char *point = sp + 1;
		uint64_t ino = ns_link_ino(root, "net");
		if (ino) {
			nsh_mountinfo_field(point);
			hit(s, ino, NSH_SCAN_MOUNTS, pid, NULL, &(struct place){s->procfd, point, true});
		}
	}
	free(line);
	fclose(f);
}

/* One process's sources of a pass. */
static void scan_process(struct scan *s, pid_t pid, unsigned sources)
{
	if (pid < s->from || (pid == s->self && (s->flags & NSH_SCAN_SKIP_SELF)))
		return;
	s->at = pid; /* /proc lists processes in pid order (an `only` list is
		      * taken as given: never resumed, `from` is 0 there) */
	s->looked++;
	s->seen = pid == s->from ? s->skip : 0;
	s->skip = pid == s->from ? s->skip : 0;
	char path[64];
	bool told = false; /* a holder callback told of this process */
	if (sources & NSH_SCAN_LEADERS) {
		snprintf(path, sizeof(path), "%d/ns/net", (int)pid);
		told = check_link(s, s->procfd, path, NSH_SCAN_LEADERS, pid, NULL);
	}
	if (s->left && !told && (sources & NSH_SCAN_THREADS))
		scan_links(s, pid, NSH_SCAN_THREADS);
	if (s->left && (sources & NSH_SCAN_FDS))
		scan_links(s, pid, NSH_SCAN_FDS);
	if (s->left && (sources & NSH_SCAN_MOUNTS))
		scan_mounts(s, pid);
}

static int scan_pass(struct scan *s, unsigned sources)
{
	if (s->only) {
		for (size_t i = 0; i < s->nonly && go_on(s); i++)
			scan_process(s, s->only[i], sources);
		return 0;
	}
	int dfd = dup(s->procfd);
	DIR *proc = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!proc) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return -e;
	}
	rewinddir(proc);
	struct dirent *de;
	while (go_on(s) && (de = readdir(proc)))
		if (isdigit((unsigned char)de->d_name[0]))
			scan_process(s, (pid_t)atoi(de->d_name), sources);
	closedir(proc);
	return 0;
}

/* CAP_SYS_PTRACE in effect: every process's /proc is ours to read. */
static bool can_ptrace(void)
{
	return nsh_cap_in_effect(CAP_SYS_PTRACE);
}

/* CAP_DAC_READ_SEARCH (or _OVERRIDE): another uid's /proc/PID/fd (0500) opens. */
static bool can_read_fd_dirs(void)
{
	return nsh_cap_in_effect(CAP_DAC_READ_SEARCH) || nsh_cap_in_effect(CAP_DAC_OVERRIDE);
}

int nsh_netns_scan(struct nsh_scan_item *items, size_t n, bool skip_self, unsigned max_ms)
{
	return nsh_netns_scan_from(items, n, skip_self, max_ms, NULL);
}

static int scan_run(struct scan *s, unsigned max_ms, struct nsh_scan_pos *pos);

int nsh_netns_scan_from(struct nsh_scan_item *items, size_t n, bool skip_self, unsigned max_ms,
			struct nsh_scan_pos *pos)
{
	struct scan s = {
	    .items = items, .n = n, .left = n, .self = getpid(), .flags = skip_self ? NSH_SCAN_SKIP_SELF : 0};
	return scan_run(&s, max_ms, pos);
}

int nsh_netns_holders(uint64_t ino, unsigned want, nsh_holder_fn fn, void *arg)
{
	return nsh_netns_holders_among(ino, want, NULL, 0, fn, arg);
}

int nsh_netns_holders_among(uint64_t ino, unsigned want, const pid_t *pids, size_t npids, nsh_holder_fn fn,
			    void *arg)
{
	struct nsh_scan_item it = {.ino = ino, .want = want & ~NSH_SCAN_SKIP_SELF};
	struct scan s = {.items = &it,
			 .n = 1,
			 .left = 1,
			 .self = getpid(),
			 .flags = want & NSH_SCAN_SKIP_SELF,
			 .only = pids,
			 .nonly = pids ? npids : 0,
			 .fn = fn,
			 .arg = arg};
	int r = scan_run(&s, 0, NULL);
	return s.stop ? s.stop : r < 0 ? r : 0;
}

static int scan_run(struct scan *sp, unsigned max_ms, struct nsh_scan_pos *pos)
{
	static const unsigned cheap = NSH_SCAN_LEADERS | NSH_SCAN_THREADS, dear = NSH_SCAN_FDS | NSH_SCAN_MOUNTS;
	struct scan s = *sp;
	struct nsh_scan_item *items = s.items;
	size_t n = s.n;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		items[i].held = 0;
		items[i].pid = 0;
		/* Any thread includes the leader. */
		if (items[i].want & NSH_SCAN_THREADS)
			items[i].want |= NSH_SCAN_LEADERS;
		s.flags |= items[i].want;
	}
	if (n == 0)
		return 0;
	cleanup_free struct slot *order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = (struct slot){items[i].ino, i};
	qsort(order, n, sizeof(*order), cmp_slot);
	s.order = order;
	if (max_ms)
		s.deadline = nsh_monotonic_ms() + max_ms;
	s.can_ptrace = can_ptrace();
	s.can_fds = s.can_ptrace && can_read_fd_dirs();
	struct stat st;
	if (stat("/proc/thread-self/ns/net", &st) < 0)
		return -errno;
	s.nsfs_dev = st.st_dev;
	if (stat("/proc/thread-self/ns/mnt", &st) == 0)
		s.own_mnt = st.st_ino;
	s.procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.procfd < 0)
		return -errno;
	unsigned pass = pos ? pos->pass : 0;
	s.from = s.at = pos && pos->pass < 2 ? pos->pid : 0;
	s.skip = pos && pos->pass < 2 ? pos->sub : 0;
	if (pass == 0 && (s.flags & cheap))
		r = scan_pass(&s, s.flags & cheap);
	if (pass == 0 && !s.expired)
		pass = 1, s.from = s.at = 0, s.skip = s.seen = 0;
	if (r == 0 && s.left && (s.flags & dear))
		r = scan_pass(&s, s.flags & dear);
	close(s.procfd);
	free(s.mntns);
	size_t found = n - s.left;
	if (pos) /* where to go on: the process it was at is looked at again */
		*pos = s.expired ? (struct nsh_scan_pos){pass, s.at, s.seen} : (struct nsh_scan_pos){2, 0, 0};
	if (r == 0 && s.expired)
		r = -ETIMEDOUT;
	else if (r == 0 && s.denied && s.left)
		r = -EACCES; /* not all sources could be seen: nothing is proven unheld */
	sp->stop = s.stop;
	return r < 0 ? r : (int)(found > (size_t)INT32_MAX ? INT32_MAX : found);
}

pid_t nsh_netns_user(dev_t dev, ino_t ino)
{
	(void)dev; /* every namespace inode lives on the one nsfs */
	/* any thread: a Go plugin's LockOSThread + setns is not the leader */
	struct nsh_scan_item it = {.ino = ino, .want = NSH_SCAN_THREADS};
	int r = nsh_netns_scan(&it, 1, true, 0);
	return r < 0 ? r : it.pid;
}

int nsh_proc_netns_each(int (*fn)(pid_t pid, const struct stat *ns, void *arg), void *arg)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return -errno;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(proc))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		char path[64];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		if (stat(path, &st) == 0) /* else gone, or not ours to see */
			r = fn(pid, &st, arg);
	}
	closedir(proc);
	return r;
}

/* One mount of a mount table (a mountinfo line, cut and unescaped in place):
 * "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER";
 * the fields from OPTS on are not needed. */
struct mnt {
	int id, parent;
	dev_t dev;
	const char *root, *point;
};

static bool mnt_parse(char *line, struct mnt *m)
{
	char *sep = strstr(line, " - ");
	if (!sep)
		return false;
	*sep = '\0';
	unsigned maj, min;
	int off = 0;
	if (sscanf(line, "%d %d %u:%u %n", &m->id, &m->parent, &maj, &min, &off) != 4 || !off)
		return false;
	m->dev = makedev(maj, min);
	char *root = line + off, *point = strchr(root, ' ');
	if (!point)
		return false;
	point++;
	m->root = nsh_mountinfo_field(root);
	m->point = nsh_mountinfo_field(point);
	return *m->point == '/'; /* (an nsfs mount's root is "net:[INO]") */
}

/* A mount table read whole: its text (cut in place) and its mounts. */
struct mnt_table {
	char *text;
	struct mnt *v;
	size_t n;
};

static void mnt_table_free(struct mnt_table *t)
{
	free(t->text);
	free(t->v);
	*t = (struct mnt_table){0};
}

static int mnt_cmp(const void *a, const void *b)
{
	const struct mnt *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The mount with that id in a table read by mnt_table_read (sorted by id). */
static const struct mnt *mnt_find(const struct mnt_table *t, int id)
{
	struct mnt key = {.id = id};
	return t->n ? bsearch(&key, t->v, t->n, sizeof(*t->v), mnt_cmp) : NULL;
}

/* A mount table larger than this is not read (EFBIG: whoever asked keeps
 * what it might show); a container writes its own table, and 16 MiB is
 * about 100 000 mounts of long paths. */
#define NSH_MOUNT_TABLE_MAX (16u << 20)

static int mnt_table_read(int dirfd, const char *rel, struct mnt_table *t)
{
	*t = (struct mnt_table){0};
	cleanup_close int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	int r = nsh_read_fd(fd, rel, NSH_MOUNT_TABLE_MAX, &t->text, &len, NULL);
	if (r < 0)
		return r;
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += t->text[i] == '\n';
	t->v = calloc(lines + 1, sizeof(*t->v));
	if (!t->v) {
		mnt_table_free(t);
		return -ENOMEM;
	}
	for (char *line = t->text, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (mnt_parse(line, &t->v[t->n]))
			t->n++;
	}
	qsort(t->v, t->n, sizeof(*t->v), mnt_cmp);
	return 0;
}

/* Where a path under mount m lies in m's file system: ROOT + REST, REST the
 * path past m's mount point ("" when it is the mount point); false when the
 * path is not under m. */
static bool mnt_rest(const struct mnt *m, const char *path, const char **rest)
{
	size_t lp = strlen(m->point);
	if (strcmp(m->point, "/") == 0)
		lp = 0;
	else if (strncmp(path, m->point, lp) != 0 || (path[lp] != '/' && path[lp] != '\0'))
		return false;
	*rest = path + lp;
	return true;
}

/* A file looked for in other mount tables: its path here, and where it lies
 * in its file system (device, path from that file system's root), since
 * another mount namespace may reach it by another path (its directory bound
 * elsewhere there).  fs_path NULL: where it lies is not known here, and a
 * mount of its name in another table may be it. */
struct wanted {
	const char *path;
	dev_t dev;
	char *fs_path;
};

/* The mount w's directory is on, in this process's table: by the mount id
 * statx reports (exact, stacked mounts included), else the longest mount
 * point above it whose device is the directory's. */
static const struct mnt *own_mount(const struct mnt_table *own, const char *dir, const char **rest)
{
	struct statx sx;
	if (statx(AT_FDCWD, dir, 0, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) {
		const struct mnt *m = mnt_find(own, (int)sx.stx_mnt_id);
		return m && mnt_rest(m, dir, rest) ? m : NULL;
	}
	struct stat st;
	if (stat(dir, &st) < 0)
		return NULL;
	const struct mnt *best = NULL;
	for (size_t i = 0; i < own->n; i++) {
		const char *r;
		if (own->v[i].dev == st.st_dev && mnt_rest(&own->v[i], dir, &r) &&
		    (!best || strlen(own->v[i].point) >= strlen(best->point)))
			best = &own->v[i], *rest = r;
	}
	return best;
}

static void wanted_locate(const struct mnt_table *own, struct wanted *w)
{
	const char *slash = strrchr(w->path, '/');
	if (!slash)
		return;
	cleanup_free char *d = strndup(w->path, (size_t)(slash - w->path) + (slash == w->path));
	cleanup_free char *real = d ? realpath(d, NULL) : NULL; /* (/var/run is a link to /run) */
	const char *rest = NULL;
	const struct mnt *m = real ? own_mount(own, real, &rest) : NULL;
	if (!m)
		return;
	if (strcmp(rest, "/") == 0) /* (the directory is "/") */
		rest = "";
	w->dev = m->dev;
	if (asprintf(&w->fs_path, "%s%s%s", strcmp(m->root, "/") == 0 ? "" : m->root, rest, slash) < 0)
		w->fs_path = NULL;
}

static void wanted_free(struct wanted *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(w[i].fs_path);
}

/* Is m, in table t, mounted on w: by its path, or by where its mount point
 * lies in the parent mount's file system; a mount of w's name when where w
 * lies is not known here. */
static bool mnt_on(const struct mnt_table *t, const struct mnt *m, const struct wanted *w)
{
	if (strcmp(m->point, w->path) == 0)
		return true;
	if (strcmp(strrchr(m->point, '/'), strrchr(w->path, '/')) != 0)
		return false;
	if (!w->fs_path)
		return true;
	const struct mnt *p = mnt_find(t, m->parent);
	const char *rest;
	if (!p || p->dev != w->dev || !mnt_rest(p, m->point, &rest))
		return false;
	size_t lr = strcmp(p->root, "/") == 0 ? 0 : strlen(p->root);
	return strncmp(w->fs_path, p->root, lr) == 0 && strcmp(w->fs_path + lr, rest) == 0;
}

/* Mark each of want[] that a mount in PID's mount table is on. */
static int mounted_in(int procfd, pid_t pid, const struct wanted *want, size_t n, bool *mounted)
{
	char path[64];
	snprintf(path, sizeof(path), "%d/mountinfo", (int)pid);
	struct mnt_table t;
	int r = mnt_table_read(procfd, path, &t);
	if (r < 0)
		return r;
	for (size_t j = 0; j < t.n; j++)
		for (size_t i = 0; i < n; i++)
			if (!mounted[i] && mnt_on(&t, &t.v[j], &want[i]))
				mounted[i] = true;
	mnt_table_free(&t);
	return 0;
}

int nsh_mounted_elsewhere(const char *const *paths, size_t n, bool *mounted)
{
	for (size_t i = 0; i < n; i++)
		mounted[i] = false;
	if (n == 0)
		return 0;
	struct stat self;
	if (stat("/proc/self/ns/mnt", &self) < 0)
		return -errno;
	cleanup_free struct wanted *want = calloc(n, sizeof(*want));
	if (!want)
		return -ENOMEM;
	struct mnt_table own;
	int ro = mnt_table_read(AT_FDCWD, "/proc/self/mountinfo", &own);
	for (size_t i = 0; i < n; i++) {
		want[i].path = paths[i];
		if (ro == 0)
			wanted_locate(&own, &want[i]);
	}
	if (ro == 0)
		mnt_table_free(&own);
	DIR *proc = opendir("/proc");
	if (!proc) {
		int e = errno;
		wanted_free(want, n);
		return -e;
	}
	int procfd = dirfd(proc);
	/* one mount table per (mount namespace, root): a chrooted process's
	 * table leaves out what lies outside its root */
	struct seen {
		uint64_t mnt;
		dev_t dev;
		ino_t ino;
	} *seen = NULL;
	size_t nseen = 0, capseen = 0;
	/* as in the scan above: with CAP_SYS_PTRACE, a process still refused
	 * (an LSM, a supervisor above our user namespace) is not one nshash
	 * could have pinned for; without it, nothing unmarked is proven */
	bool denied = false, ptrace = can_ptrace();
	int r = 0;
	struct dirent *de;
	while ((de = readdir(proc))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		char path[64];
		struct stat mnt, root;
		snprintf(path, sizeof(path), "%d/ns/mnt", (int)pid);
		if (fstatat(procfd, path, &mnt, 0) < 0) {
			denied |= errno != ENOENT && errno != ESRCH && !ptrace;
			continue;
		}
		if (mnt.st_ino == self.st_ino && mnt.st_dev == self.st_dev)
			continue; /* our own view, which the caller looked at */
		snprintf(path, sizeof(path), "%d/root", (int)pid);
		if (fstatat(procfd, path, &root, 0) < 0) {
			denied |= errno != ENOENT && errno != ESRCH && !ptrace;
			continue;
		}
		size_t i = 0;
		while (i < nseen &&
		       !(seen[i].mnt == mnt.st_ino && seen[i].dev == root.st_dev && seen[i].ino == root.st_ino))
			i++;
		if (i < nseen)
			continue;
		if (nseen == capseen) {
			size_t cap = capseen ? 2 * capseen : 16;
			struct seen *v = realloc(seen, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			seen = v;
			capseen = cap;
		}
		seen[nseen++] = (struct seen){mnt.st_ino, root.st_dev, root.st_ino};
		int m = mounted_in(procfd, pid, want, n, mounted);
		/* gone: nothing to see; refused despite CAP_SYS_PTRACE: see
		 * above; any other failure (a table too large): unread */
		if (m < 0 && m != -ENOENT && m != -ESRCH && (!ptrace || (m != -EACCES && m != -EPERM)))
			denied = true;
	}
	free(seen);
	closedir(proc);
	wanted_free(want, n);
	if (r == 0 && denied)
		r = -EACCES;
	return r;
}

/* ------------------------------------------------ one cgroup's threads */

struct cg_look {
	int procfd, selffd; /* /proc, /proc/self/task */
	uint64_t ino;
	unsigned threads, dirs;
	pid_t found;
};

/* The tids in a cgroup's thread list (v2 cgroup.threads, v1 tasks: one
 * decimal per line) at dirfd: the first one in the netns, not ours. */
static int cg_threads(struct cg_look *c, int dirfd)
{
	int fd = openat(dirfd, "cgroup.threads", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, "tasks", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* not a cgroup (a file system without them) */
	char buf[4096];
	size_t have = 0;
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0) {
			r = -errno;
			break;
		}
		size_t end = have + (size_t)n, start = 0;
		for (size_t i = 0; i < end && !c->found; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = '\0';
			char *tail;
			long tid = strtol(buf + start, &tail, 10);
			start = i + 1;
			if (*tail || tid <= 0 || tid > INT32_MAX)
				continue;
			if (++c->threads > NSH_CGROUP_MAX_THREADS) {
				r = -E2BIG;
				break;
			}
			char path[32], link[64];
			snprintf(path, sizeof(path), "%ld", tid);
			if (faccessat(c->selffd, path, F_OK, 0) == 0)
				continue; /* a thread of this process */
			snprintf(path, sizeof(path), "%ld/ns/net", tid);
			ssize_t len = readlinkat(c->procfd, path, link, sizeof(link) - 1);
			if (len <= 0)
				continue; /* gone meanwhile */
			link[len] = '\0';
			if (ns_link_ino(link, "net") == c->ino)
				c->found = (pid_t)tid;
		}
		if (r < 0 || c->found || n == 0)
			break;
		/* keep the line not yet ended; a line longer than the buffer
		 * is no tid */
		have = end - start;
		if (have == sizeof(buf))
			have = 0;
		memmove(buf, buf + start, have);
	}
	close(fd);
	return r;
}

static int cg_walk(struct cg_look *c, int dirfd, unsigned depth)
{
	int r = cg_threads(c, dirfd);
	if (r < 0 || c->found)
		return r;
	int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		r = -errno;
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	struct dirent *de;
	while (r == 0 && !c->found && (de = readdir(d))) {
		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++c->dirs > NSH_CGROUP_MAX_DIRS || depth + 1 > NSH_CGROUP_MAX_DEPTH) {
			r = -E2BIG;
			break;
		}
		int sub = openat(dirfd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue; /* removed meanwhile */
		r = cg_walk(c, sub, depth + 1);
		close(sub);
	}
	closedir(d);
	return r;
}

pid_t nsh_cgroup_netns_user(int cgfd, uint64_t ino)
{
	struct cg_look c = {.ino = ino};
	c.procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	c.selffd = open("/proc/self/task", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = c.procfd < 0 || c.selffd < 0 ? -errno : cg_walk(&c, cgfd, 0);
	if (c.procfd >= 0)
		close(c.procfd);
	if (c.selffd >= 0)
		close(c.selffd);
	return r < 0 ? r : c.found;
}
