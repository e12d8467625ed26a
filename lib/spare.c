/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Spares: sized netns made ahead of need and pinned in STATE_DIR/spares/
 * (SIZES, the template's name, starts each name), so that a creation of
 * those sizes costs no unshare (and no `lo` up) on its caller's path.  A spare is
 * made like any other sized netns (template, verified, lo up, recorded in
 * the table ledger); a netns's table sizes never change, but a spare is
 * reachable (by root) through copies of its mount in other mount
 * namespaces until it is taken; entering it needs host root, who can enter
 * any container's netns anyway, so a take does not look for anyone inside
 * (a /proc pass over every thread would cost more than making a netns:
 * docs/design.md).  Its name carries what its verification read,
 * SIZES.TCP.UDP.RANDOM (the raw *_hash_entries: negative = the shared
 * table of that many buckets), so a take reads no /proc/sys: each lookup
 * there compares against a dentry of every live netns that looked
 * (docs/kernel.md).  A spare named SIZES.RANDOM (0.2.0) is read back.
 * Takers queue on spares/.take for the few syscalls a take is: an
 * unmount decides nothing between mount namespaces (a taker in a slave one
 * detaches only its own copy), the unlink that ends a take does (the
 * kernel detaches a deleted file's mounts everywhere).
 * Bounded node-wide: at most max_spares spares of max_spare_bytes table
 * bytes in the state dir over every size pair, and those not taken within
 * spare_max_idle seconds go (with the templates unused as long) when the
 * next filler runs.  One filler at a time: the others leave a want marker,
 * spares/.want.tcpT-udpU.N, and go; the filler at work makes what the
 * markers ask for until none is left. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"

#define WANT_PREFIX   ".want."

bool nshash_spares_apply(const struct nshash_create_opts *opts)
{
	/* under a budget a spare would hold bytes nobody asked for */
	return opts->spares && opts->strategy == NSHASH_STRATEGY_TEMPLATE && !opts->max_table_bytes &&
	       !opts->keep_lo_down;
}

static int spare_prefix(const struct nshash_create_opts *opts, char *buf, size_t len)
{
	char name[64];
	nsh_template_name(nshash_sizes_effective(opts->sizes), name, sizeof(name));
	return (size_t)snprintf(buf, len, "%s.", name) >= len ? -ENAMETOOLONG : 0;
}

/* One "-?DIGITS" then `end` at *p; false when it is not there. */
static bool name_number(const char **p, char end, long *out)
{
	const char *q = *p + (**p == '-');
	if (*q < '0' || *q > '9')
		return false;
	char *e;
	errno = 0;
	*out = strtol(*p, &e, 10);
	if (errno || *e != end)
		return false;
	*p = e + 1;
	return true;
}

/* "TCP.UDP.RANDOM" (after SIZES.): the entries its verification read, as
 * a creation reports them (child knobs and derived limits unread).  UDP 0:
 * no udp_hash_entries (Linux 6.1), what a creation reports there too. */
static bool spare_name_info(const char *rest, struct nshash_netns_info *info)
{
	long tcp, udp;
	const char *p = rest;
	if (!name_number(&p, '.', &tcp) || !name_number(&p, '.', &udp) || !tcp || strlen(p) != 16 ||
	    strspn(p, "0123456789abcdef") != 16)
		return false;
	*info = (struct nshash_netns_info){.tcp_entries = tcp,
					   .udp_entries = udp,
					   .tcp_child = -1,
					   .udp_child = -1,
					   .tcp_max_tw_buckets = -1,
					   .tcp_max_syn_backlog = -1};
	return true;
}

struct spare_name {
	const char *dir, *prefix;
	uint64_t rnd;
};

/* A netns made (no budget, no spare taken) and pinned at a path named
 * after what it was verified to have: namer writes it into path (len) from
 * info, or fails with err set.  The verification reads through `proc` (see
 * nsh_sysctl_dir_open_in).  Recorded in the ledger with that pin before it
 * is bound, the record cancelled if the pin fails. */
typedef int (*pin_namer)(const struct nshash_netns_info *info, void *arg, char *path, size_t len,
			 struct nshash_error *err);
/* The new spare's ipv4 and ipv6 directories looked up once through the
 * filler's /proc (the host's, where the runtimes look), off every path:
 * the first such lookup in a netns compares a cached dentry of every live
 * netns that looked there (~1.9 ms at 2000 live netns, 7-25 ms at 10000;
 * docs/kernel.md), and whoever takes the spare would pay it on a
 * container's start (the transplant's restore, the CNI plugin's carry, the
 * runtime's sysctls).  Best effort: an error only when the thread cannot
 * return to its netns. */
static int warm_lookups(int nsfd, struct nshash_error *err)
{
	cleanup_close int home = -1;
	struct nshash_error e;
	if (nsh_netns_open_current(&home, &e) < 0 || nsh_netns_enter(nsfd, "the spare", &e) < 0)
		return 0;
	struct stat st;
	(void)stat("/proc/sys/net/ipv4", &st);
	(void)stat("/proc/sys/net/ipv6", &st);
	return nsh_netns_return(home, err);
}

static int create_named(const struct nshash_create_opts *opts, int proc, pin_namer namer, void *arg, char *path,
			size_t len, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	if (opts->max_table_bytes)
		return nshash_error_set(err, EINVAL, "create netns: a named pin cannot be reserved under a budget");
	int r = nsh_size_request_check(opts->sizes, err);
	if (r < 0)
		return r;
	cleanup_close int nsfd = -1;
	struct nshash_netns_info info;
	r = nsh_netns_make(opts, proc, &nsfd, &info, err);
	if (r == 0)
		r = warm_lookups(nsfd, err); /* before anyone can take it */
	if (r < 0)
		return r;
	r = namer(&info, arg, path, len, err);
	if (r < 0)
		return r;
	/* committed with its pin before the pin exists, as any creation */
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	struct nsh_ticket ticket;
	memset(&ticket, 0, sizeof(ticket));
	r = nsh_ledger_commit(state_dir, &ticket, nshash_sizes_effective(opts->sizes), nsfd, path, false, err);
	if (r == 0)
		r = nshash_pin_fd(nsfd, path, err);
	if (r < 0)
		nsh_ledger_cancel(state_dir, &ticket);
	return r;
}

static int spare_namer(const struct nshash_netns_info *info, void *arg, char *path, size_t len,
		       struct nshash_error *err)
{
	const struct spare_name *n = arg;
	if ((size_t)snprintf(path, len, "%s/%s%ld.%ld.%016llx", n->dir, n->prefix, info->tcp_entries, info->udp_entries,
			     (unsigned long long)n->rnd) >= len)
		return nshash_error_set(err, ENAMETOOLONG, "spares: path too long");
	return 0;
}

static int64_t spare_idle(const struct nshash_create_opts *opts)
{
	return opts->spare_max_idle ? opts->spare_max_idle : NSHASH_DEFAULT_SPARE_MAX_IDLE;
}

int nshash_spare_take(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	char dir[PATH_MAX], prefix[80], path[PATH_MAX];
	*nsfd = -1;
	if (!nshash_spares_apply(opts) || spare_prefix(opts, prefix, sizeof(prefix)) < 0)
		return 0;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/spares", nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf))) >=
	    sizeof(dir))
		return 0;
	char lock[PATH_MAX + 8];
	snprintf(lock, sizeof(lock), "%s/.take", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX) < 0)
		return 0; /* none made yet (no directory), or not ours to take from */
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	size_t plen = strlen(prefix);
	int taken = 0;
	while (!taken && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		int fd = -1;
		const char *not_netns;
		if (nsh_path_open_netns(path, false, &fd, &not_netns) < 0)
			continue;
		if (not_netns || umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 || unlink(path) < 0) {
			close(fd); /* being made, or gone */
			continue;
		}
		/* Verified when it was made, and sizes never change: what its
		 * name says it read (else read back), and the netns opened anew
		 * from inside: fd came through the mount just detached. */
		struct nshash_error ignored;
		struct nshash_netns_info got;
		int clean = -1;
		bool named = spare_name_info(de->d_name + plen, &got);
		int r = nsh_inspect_reopen(fd, &clean, named ? NULL : &got, &ignored);
		close(fd);
		fd = clean;
		struct stat st;
		if (r == 0 && named) {
			r = fstat(fd, &st) < 0 ? -errno : 0;
			got.inode = st.st_ino;
		}
		if (r < 0 || nshash_verify(&got, opts->sizes, "spare", &ignored) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		*info = got;
		*nsfd = fd;
		taken = 1;
	}
	closedir(d);
	return taken;
}

/* "tcpT-udpU." at the start of a spare's name → its effective sizes. */
static bool spare_name_sizes(const char *name, struct nshash_sizes *eff)
{
	unsigned t, u;
	int n = 0;
	if (sscanf(name, "tcp%u-udp%u.%n", &t, &u, &n) != 2 || n == 0)
		return false;
	*eff = (struct nshash_sizes){t, u};
	return true;
}

/* What spares/ holds: mounted spares with this prefix (NULL: none), and
 * of every size pair, with their table bytes. */
struct spare_count {
	unsigned mine, all;
	uint64_t bytes;
};

static struct spare_count spares_ready(const char *dir, const char *prefix)
{
	struct spare_count c = {0};
	DIR *d = opendir(dir);
	if (!d)
		return c;
	char path[PATH_MAX];
	struct dirent *de;
	size_t plen = prefix ? strlen(prefix) : 0;
	struct nshash_sizes eff;
	while ((de = readdir(d))) {
		struct nshash_error ignored;
		if (!spare_name_sizes(de->d_name, &eff) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    nshash_pin_is_netns(path, &ignored) != 1)
			continue;
		c.all++;
		c.bytes += nshash_sizes_bytes(eff);
		c.mine += prefix && strncmp(de->d_name, prefix, plen) == 0;
	}
	closedir(d);
	return c;
}

/* Under spares/.take: spares made max_idle seconds ago or longer (their
 * nsfs inode's times are those of its first open, when it was made). */
static int expire_spares(const char *dir, int64_t max_idle, time_t now, struct nshash_error *err)
{
	char lock[PATH_MAX + 8], path[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s/.take", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX) < 0)
		return 0; /* none made yet */
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	struct nshash_sizes eff;
	while ((de = readdir(d))) {
		struct stat st;
		if (!spare_name_sizes(de->d_name, &eff) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    stat(path, &st) < 0 || now - st.st_mtime < max_idle || nshash_pin_is_netns(path, err) != 1)
			continue;
		if (nshash_pin_remove(path, err) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Under the state lock: templates whose .used stamp is max_idle old. */
static int expire_templates(const char *state_dir, int64_t max_idle, time_t now, struct nshash_error *err)
{
	char dir[PATH_MAX], path[PATH_MAX], stamp[PATH_MAX + 8];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/templates", state_dir) >= sizeof(dir))
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	cleanup_close int lockfd = -1;
	if (nsh_lock_state(state_dir, &lockfd, err) < 0) {
		closedir(d);
		return nshash_error_prefix(err, "expire idle templates");
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "tcp", 3) != 0 || (len > 5 && !strcmp(de->d_name + len - 5, ".used")) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		snprintf(stamp, sizeof(stamp), "%s.used", path);
		/* no stamp: a template being built (or a 0.1 one): its own age */
		if ((stat(stamp, &st) < 0 && stat(path, &st) < 0) || now - st.st_mtime < max_idle)
			continue;
		if (nshash_pin_remove(path, err) == 0) {
			unlink(stamp);
			n++;
		}
	}
	closedir(d);
	return n;
}

int nshash_spare_expire(const char *state_dir, int64_t max_idle, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	char dir[PATH_MAX];
	state_dir = nsh_state_dir(state_dir, sdbuf, sizeof(sdbuf));
	if (max_idle < 0 || (size_t)snprintf(dir, sizeof(dir), "%s/spares", state_dir) >= sizeof(dir))
		return 0;
	time_t now = time(NULL);
	struct nshash_error ignored;
	int n = expire_spares(dir, max_idle, now, &ignored);
	int t = expire_templates(state_dir, max_idle, now, err);
	return t < 0 ? t : n + t;
}

/* Ask for `want` spares of `prefix` (a want marker the filler at work
 * reads), 0 or -errno. */
static int want_mark(const char *dir, const char *prefix, unsigned want, struct nshash_error *err)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/" WANT_PREFIX "%s%u", dir, prefix, want) >= sizeof(path))
		return nshash_error_set(err, ENAMETOOLONG, "spares: path too long");
	/* non-blocking: a FIFO put there must not hang a start (only its name counts) */
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0)
		return nsh_error_sys(err, errno, "spares: create %s", path);
	close(fd);
	return 0;
}

/* Take one want marker: its sizes and count; false when none is left. */
static bool want_next(const char *dir, struct nshash_sizes *eff, unsigned *want)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool got = false;
	struct dirent *de;
	char path[PATH_MAX];
	while (!got && (de = readdir(d))) {
		unsigned t, u, w;
		int n = 0;
		if (strncmp(de->d_name, WANT_PREFIX, strlen(WANT_PREFIX)) != 0 ||
		    sscanf(de->d_name + strlen(WANT_PREFIX), "tcp%u-udp%u.%u%n", &t, &u, &w, &n) != 3 ||
		    de->d_name[strlen(WANT_PREFIX) + (size_t)n] != '\0' ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		/* gone: taken by us, or by a filler before us */
		if (unlink(path) < 0)
			continue;
		*eff = (struct nshash_sizes){t, u};
		*want = w;
		got = true;
	}
	closedir(d);
	return got;
}

static bool wants_left(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	bool any = false;
	while (!any && (de = readdir(d)))
		any = strncmp(de->d_name, WANT_PREFIX, strlen(WANT_PREFIX)) == 0;
	closedir(d);
	return any;
}

/* Make spares of eff until `want` are ready, within the node-wide bounds;
 * the number made or -errno.  *proc: the filler's own proc, made once. */
static int fill_pair(const struct nshash_create_opts *opts, const char *dir, struct nshash_sizes eff, unsigned want,
		     int *proc, struct nshash_error *err)
{
	char prefix[80], path[PATH_MAX];
	struct nshash_create_opts one = *opts;
	one.sizes = eff;
	one.spares = 0;
	if (spare_prefix(&one, prefix, sizeof(prefix)) < 0)
		return nshash_error_set(err, ENAMETOOLONG, "spares: name too long");
	unsigned max = opts->max_spares ? opts->max_spares : NSHASH_DEFAULT_MAX_SPARES;
	uint64_t max_bytes = opts->max_spare_bytes ? opts->max_spare_bytes : NSHASH_DEFAULT_MAX_SPARE_BYTES;
	uint64_t bytes = nshash_sizes_bytes(nshash_sizes_effective(eff));
	int made = 0;
	/* counted again after each one made: takers do not wait for us */
	for (unsigned n = 0; n < want; n++) {
		struct spare_count c = spares_ready(dir, prefix);
		if (c.mine >= want || c.all >= max || c.bytes + bytes > max_bytes)
			break;
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return nsh_error_sys(err, errno, "spares: getrandom");
		/* Each spare is verified in a fresh netns, where the first lookup
		 * under /proc/sys compares against a dentry of every live netns
		 * that looked there (~2 ms at 2000): through a proc of our own it
		 * meets only ours.  Its teardown at close is this background
		 * filler's, off every path; made once there is a spare to make. */
		if (*proc == -2)
			*proc = nsh_proc_private(); /* < 0: the caller's /proc */
		/* made and verified first, then named after what it has */
		struct spare_name name = {dir, prefix, rnd};
		int r = create_named(&one, *proc, spare_namer, &name, path, sizeof(path), err);
		if (r < 0)
			return nshash_error_prefix(err, "spare");
		made++;
	}
	return made;
}

int nshash_spare_fill(const struct nshash_create_opts *opts, struct nshash_error *err)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	char dir[PATH_MAX], prefix[80], lock[PATH_MAX + 8];
	if (!nshash_spares_apply(opts))
		return 0;
	if (spare_prefix(opts, prefix, sizeof(prefix)) < 0)
		return nshash_error_set(err, ENAMETOOLONG, "spares: name too long");
	const char *state_dir = nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf));
	int r = nshash_state_subdir(state_dir, "spares", dir, sizeof(dir), err);
	if (r == 0)
		r = nshash_pin_dir_prepare(dir, err);
	if (r < 0)
		return nshash_error_prefix(err, "spares");
	/* What this call asks for, for whichever filler is at work: the
	 * marker first, then the lock.  Finding the lock taken, we leave: its
	 * holder looks for markers after it lets go, later than ours came. */
	unsigned want = opts->spares > NSHASH_DEFAULT_MAX_SPARES ? NSHASH_DEFAULT_MAX_SPARES : opts->spares;
	r = want_mark(dir, prefix, want, err);
	if (r < 0)
		return r;
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0)
		return nsh_error_sys(err, errno, "spares: open %s", lock);
	if (flock(lockfd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : nsh_error_sys(err, errno, "spares: lock %s", lock);
	int64_t idle = spare_idle(opts);
	cleanup_close int proc = -2;
	int made = 0;
	for (;;) {
		struct nshash_error ignored;
		nshash_spare_expire(state_dir, idle, &ignored);
		struct nshash_sizes eff;
		while (want_next(dir, &eff, &want)) {
			r = fill_pair(opts, dir, eff, want, &proc, err);
			if (r < 0)
				return r;
			made += r;
		}
		/* A marker left after our last look came from a filler that
		 * found us at work: let go, and go on if one is still there (a
		 * filler that took the lock meanwhile makes it, after us). */
		flock(lockfd, LOCK_UN);
		if (!wants_left(dir) || flock(lockfd, LOCK_EX) < 0)
			break;
	}
	return made;
}

/* Does anything mount below dir/ (in this mount namespace)?  mountinfo
 * names mount points by their real path, spaces and the like escaped: dir
 * is compared as realpath(3) gives it, each mount point unescaped. */
static bool mounts_below(const char *dir)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return true; /* cannot tell: keep it */
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return true;
	char *line = NULL, mnt[PATH_MAX];
	size_t cap = 0, len = strlen(real);
	bool any = false;
	while (!any && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		nsh_mountinfo_field(mnt);
		any = strncmp(mnt, real, len) == 0 && mnt[len] == '/';
	}
	free(line);
	fclose(f);
	return any;
}

int nsh_spares_dir_release(const char *state_dir)
{
	char dir[PATH_MAX], lock[PATH_MAX + 8], take[PATH_MAX + 8];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/spares", state_dir) >= sizeof(dir))
		return 0;
	struct statx stx;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0 || !S_ISDIR(stx.stx_mode) ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return 0; /* not bound onto itself (never, or released already) */
	/* no filler at work (it would pin into it) and no taker */
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	snprintf(take, sizeof(take), "%s/.take", dir);
	cleanup_close int lockfd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int takefd = open(take, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if ((lockfd >= 0 && flock(lockfd, LOCK_EX | LOCK_NB) < 0) || (takefd >= 0 && flock(takefd, LOCK_EX) < 0))
		return 0;
	if (mounts_below(dir))
		return 0; /* spares left */
	return umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 ? 1 : -errno;
}
