/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state dir itself: the one default (nsh_default_state_dir), its
 * checks (nsh_state_dir_check, nshash_state_subdir) and its lock.  What is
 * in it is listed and collected by gc.c. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"

/* ------------------------------------------------------------ pidns */

/* STATE/pidns is a symbolic link, never followed, only read: its target
 * names the creations' PID namespace as /proc shows one ("pid:[INODE]"),
 * or PIDNS_MIXED once they ran in more than one (or in one this thread's
 * /proc could not name).  Only removing it resets "mixed". */
#define PIDNS_MIXED "mixed"

/* This thread's PID namespace as /proc shows it; "" when this /proc is not
 * of its PID namespace or one above it (the thread is not in it). */
static void own_pidns(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/thread-self/ns/pid", buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static void noted_pidns(const char *state_dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/pidns", state_dir) < sizeof(path))
		n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

int nsh_state_note_pidns(const char *state_dir, struct nshash_error *err)
{
	char own[64], noted[64], path[PATH_MAX], tmp[PATH_MAX];
	own_pidns(own, sizeof(own));
	noted_pidns(state_dir, noted, sizeof(noted));
	if (strcmp(noted, PIDNS_MIXED) == 0 || (own[0] && strcmp(noted, own) == 0))
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/pidns", state_dir) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/pidns.new", state_dir) >= sizeof(tmp))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	/* the first creation's namespace, else mixed for good (under the
	 * state lock: one writer, a fixed temporary name; a rename, so the
	 * link is never missing) */
	const char *name = !noted[0] && own[0] ? own : PIDNS_MIXED;
	if (unlink(tmp) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "note the PID namespace in %s", path);
	if (symlink(name, tmp) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return nsh_error_sys(err, e, "note the PID namespace in %s", path);
	}
	return 0;
}

uint64_t nsh_own_pidns(void)
{
	/* a /proc of another PID namespace (unshare --pid without a /proc of
	 * its own) shows someone else at our pid: then nothing is known */
	char self[32], want[32];
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	snprintf(want, sizeof(want), "%d", (int)getpid());
	if (n <= 0 || (self[n] = '\0', strcmp(self, want) != 0))
		return 0;
	struct stat st;
	return stat("/proc/thread-self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

bool nsh_in_initial_pidns(void)
{
	return nsh_own_pidns() == NSH_PROC_PID_INIT_INO;
}

bool nsh_state_sees_holders(const char *state_dir)
{
	char own[64], noted[64];
	if (nsh_in_initial_pidns())
		return true;
	own_pidns(own, sizeof(own));
	noted_pidns(state_dir, noted, sizeof(noted));
	return own[0] && strcmp(noted, own) == 0;
}

bool nshash_state_sees_holders(const char *state_dir)
{
	char buf[PATH_MAX];
	return nsh_state_sees_holders(nsh_state_dir(state_dir, buf, sizeof(buf)));
}

/* ------------------------------------------------------------ checks */

/* The uid that `uid` maps to outside the user namespace (itself in the
 * initial one); *initial says whether this is the initial namespace. */
static uid_t outer_uid(uid_t uid, bool *initial)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;
	uid_t found = uid;

	*initial = true;
	if (!f)
		return uid;
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
		if (!(inside == 0 && outside == 0 && count == 4294967295UL))
			*initial = false;
		if (uid >= inside && uid - inside < count)
			found = (uid_t)(outside + (uid - inside));
	}
	fclose(f);
	return found;
}

void nsh_default_state_dir(char *out, size_t len)
{
	bool initial;
	uid_t uid = outer_uid(geteuid(), &initial);
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (initial && geteuid() == 0)
		snprintf(out, len, "%s", NSHASH_DEFAULT_STATE_DIR);
	else if (xdg && xdg[0] == '/' && !nsh_path_unclean(xdg))
		snprintf(out, len, "%s/nshash", xdg);
	else
		snprintf(out, len, "/run/user/%u/nshash", (unsigned)uid);
}

const char *nsh_state_dir(const char *dir, char *buf, size_t len)
{
	if (dir && *dir)
		return dir;
	nsh_default_state_dir(buf, len);
	return buf;
}

/* What to do about an existing directory nshash will not use: it never
 * changes the mode of a directory it did not make, but for an empty one
 * of mode 0755 (kubelet's hostPath DirectoryOrCreate), narrowed. */
#define STATE_DIR_HINT                                                                                                 \
	"nshash never changes the mode of a directory it did not create (but for an empty one of mode 0755, as "       \
	"kubelet makes a hostPath, which it narrows to 0700): give a directory only its owner can open (mode 0700), "  \
	"or one that does not exist yet (nshash creates it 0700)"

/* `dir` made absolute and free of symlinks for the name rule: its nearest
 * existing ancestor resolved, the missing rest appended as given (no "." or
 * ".." in it: what mkdir would make of those is not what the name says). */
static int state_dir_canonical(const char *dir, char *out, size_t len, struct nshash_error *err)
{
	char head[PATH_MAX], real[PATH_MAX];
	size_t n = strlen(dir);
	if (n >= sizeof(head))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %.100s...: path too long", dir);
	memcpy(head, dir, n + 1);
	while (!realpath(n ? head : ".", real)) {
		if (errno != ENOENT || n == 0)
			return nsh_error_sys(err, errno, "state dir %s", dir);
		while (n > 0 && head[n - 1] == '/')
			n--;
		while (n > 0 && head[n - 1] != '/')
			n--;
		head[n] = '\0';
	}
	/* the missing rest, one component at a time, single slashes */
	size_t o = (size_t)snprintf(out, len, "%s", strcmp(real, "/") ? real : "");
	for (const char *p = dir + n; *p;) {
		size_t c = strcspn(p, "/");
		if ((c == 1 && p[0] == '.') || (c == 2 && p[0] == '.' && p[1] == '.'))
			return nshash_error_set(err, EINVAL, "state dir %s: contains \"%.*s\" (give a plain path)", dir,
						(int)c, p);
		if (c && (o + 1 + c >= len || (size_t)snprintf(out + o, len - o, "/%.*s", (int)c, p) != c + 1))
			return nshash_error_set(err, ENAMETOOLONG, "state dir %.100s...: path too long", dir);
		o += c ? c + 1 : 0;
		p += c + strspn(p + c, "/");
	}
	if (o == 0)
		snprintf(out, len, "/");
	return 0;
}

/* Why the canonical path `c` is a system directory (into why), or false.
 * The rule (docs/design.md "The state dir"): `/` and every directory
 * directly under it; everything under /usr, /etc, /boot, /proc, /sys and
 * /dev; every directory directly under /var and /run/user; /run/netns. */
static bool system_dir(const char *c, char *why, size_t len)
{
	static const char *const trees[] = {"/usr", "/etc", "/boot", "/proc", "/sys", "/dev"};
	static const char *const parents[] = {"/var", "/run/user"};
	if (!strcmp(c, "/"))
		return snprintf(why, len, "the root directory"), true;
	if (!strchr(c + 1, '/'))
		return snprintf(why, len, "a directory directly under /"), true;
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		size_t l = strlen(trees[i]);
		if (!strncmp(c, trees[i], l) && c[l] == '/')
			return snprintf(why, len, "a directory under %s", trees[i]), true;
	}
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		size_t l = strlen(parents[i]);
		if (!strncmp(c, parents[i], l) && c[l] == '/' && !strchr(c + l + 1, '/'))
			return snprintf(why, len, "a directory directly under %s", parents[i]), true;
	}
	if (!strcmp(c, "/run/netns"))
		return snprintf(why, len, "ip-netns(8)'s directory"), true;
	return false;
}

/* The uid files of owners outside this user namespace show as
 * (/proc/sys/kernel/overflowuid), or -1 in the initial namespace. */
static long outside_owner(void)
{
	bool initial;
	outer_uid(geteuid(), &initial);
	if (initial)
		return -1;
	long v = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 65534;
		fclose(f);
	}
	return v;
}

/* Every existing ancestor of the path `c` (the canonical one, then the
 * one given, whose symbolic links the canonical one hides): a directory
 * owned by root or the caller (in a user namespace also by an owner
 * outside it, the host's root as it shows there), writable by no one else
 * unless sticky; a symbolic link owned by root or the caller (only its
 * owner can put another in its place, even in a sticky directory).
 * Otherwise someone else could rename the state dir away and put their
 * own in its place between the check and its use. */
static int state_dir_ancestors_check(const char *dir, const char *c, struct nshash_error *err)
{
	char p[PATH_MAX];
	size_t n = strlen(c);
	if (n >= sizeof(p))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %.100s...: path too long", dir);
	long outside = -2; /* not read yet */
	for (size_t i = 0; i < n; i++) {
		if (c[i] != '/')
			continue;
		memcpy(p, c, i ? i : 1);
		p[i ? i : 1] = '\0';
		struct stat st;
		if (lstat(p, &st) < 0) {
			if (errno == ENOENT)
				return 0; /* the rest is made 0700 */
			return nsh_error_sys(err, errno, "state dir %s: look at its parent %s", dir, p);
		}
		bool link = S_ISLNK(st.st_mode);
		if (!S_ISDIR(st.st_mode) && !link)
			return nshash_error_set(err, ENOTDIR, "state dir %s: its parent %s is not a directory", dir, p);
		bool owner_ok = st.st_uid == 0 || st.st_uid == geteuid();
		if (!owner_ok) {
			if (outside == -2)
				outside = outside_owner();
			owner_ok = outside >= 0 && (long)st.st_uid == outside;
		}
		if (!owner_ok)
			return nshash_error_set(err, EPERM,
						"state dir %s: its parent %s is %sowned by uid %u, neither root nor the "
						"caller (its owner could put another directory in the state dir's "
						"place): give a state dir under directories only root can change, "
						"e.g. /run/nshash",
						dir, p, link ? "a symbolic link " : "", (unsigned)st.st_uid);
		if (!link && (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return nshash_error_set(err, EPERM,
						"state dir %s: its parent %s is writable by group or others without "
						"the sticky bit (mode %04o: anyone could put another directory in the "
						"state dir's place): give a state dir under directories only root can "
						"change, e.g. /run/nshash",
						dir, p, (unsigned)(st.st_mode & 07777));
	}
	return 0;
}

/* The name rule and the ancestors, before anything is made. */
static int state_dir_name_check(const char *dir, struct nshash_error *err)
{
	char canon[PATH_MAX], why[64];
	int r = state_dir_canonical(dir, canon, sizeof(canon), err);
	if (r == 0 && !system_dir(canon, why, sizeof(why))) {
		r = state_dir_ancestors_check(dir, canon, err);
		if (r == 0 && dir[0] == '/' && strcmp(dir, canon))
			r = state_dir_ancestors_check(dir, dir, err);
	}
	if (r < 0 || !system_dir(canon, why, sizeof(why)))
		return r;
	char shown[PATH_MAX + 8] = "";
	if (strcmp(canon, dir))
		snprintf(shown, sizeof(shown), " (%s)", canon);
	return nshash_error_set(
	    err, EPERM,
	    "state dir %s%s: %s, never a state dir (refused: /, every directory directly under /, "
	    "/var or /run/user, everything under /usr, /etc, /boot, /proc, /sys or /dev, and "
	    "/run/netns): give a directory of nshash's own, e.g. /run/nshash, which it creates 0700 "
	    "on first use",
	    dir, shown, why);
}

/* The open directory fd (stat st, the caller's) is as kubelet's hostPath
 * DirectoryOrCreate makes it: mode exactly 0755, the caller's, empty. */
static bool kubelet_made(int fd, const struct stat *st)
{
	if ((st->st_mode & 07777) != 0755 || st->st_uid != geteuid())
		return false;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	bool empty = true;
	struct dirent *de;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

int nsh_state_dir_check(const char *dir, bool create, struct nshash_error *err)
{
	struct stat st;
	int r = state_dir_name_check(dir, err);
	if (r < 0)
		return r;
	/* what it makes is 0700 (parents too); what exists is only checked */
	bool exists = lstat(dir, &st) == 0;
	if (!exists && errno == ENOENT && create) {
		r = nsh_mkdir_p(dir, 0700, err);
		if (r < 0 && r != -ENOTDIR)
			return r;
		/* what was missing and made now may have been made by someone
		 * else in between: the ancestors again */
		if ((r = state_dir_name_check(dir, err)) < 0)
			return r;
		exists = lstat(dir, &st) == 0;
	}
	if (!exists) {
		if (errno == ENOENT && !create)
			return 0;
		return nsh_error_sys(err, errno, "state dir %s", dir);
	}
	if (S_ISLNK(st.st_mode))
		return nshash_error_set(err, ELOOP, "state dir %s: a symbolic link (give the real path)", dir);
	/* without `create` (a creation's lock-free path) the lstat is the check;
	 * with it, the dir is held open and checked as opened */
	cleanup_close int fd = -1;
	if (create && ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0))
		return nsh_error_sys(err, errno, "state dir %s", dir);
	if (!S_ISDIR(st.st_mode))
		return nshash_error_set(err, ENOTDIR, "state dir %s: not a directory", dir);
	/* It holds pins that are bind-mounted and unmounted as root and names
	 * of containers: only its owner may write or list it. */
	if (st.st_uid != geteuid()) {
		char who[32] = "root";
		if (geteuid() != 0)
			snprintf(who, sizeof(who), "uid %u", (unsigned)geteuid());
		return nshash_error_set(err, EPERM,
					"state dir %s: owned by uid %u, not %s (the template strategy keeps state "
					"there: use --state-dir with a directory you own, or --strategy nested, which "
					"keeps none)",
					dir, (unsigned)st.st_uid, who);
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return nshash_error_set(err, EPERM,
					"state dir %s: writable by group or others (mode %04o): " STATE_DIR_HINT, dir,
					(unsigned)(st.st_mode & 07777));
	if ((st.st_mode & 077) && fd >= 0 && kubelet_made(fd, &st)) {
		/* kubelet's hostPath DirectoryOrCreate makes it 0755 before the
		 * DaemonSet's init container narrows it: empty, nothing to hide
		 * yet, and no one else could write into it: narrowed here (a pod
		 * ADD that comes first would otherwise be refused) */
		if (fchmod(fd, 0700) < 0 || fstat(fd, &st) < 0)
			return nsh_error_sys(err, errno, "state dir %s: narrow mode 0755 to 0700", dir);
	}
	/* the lock-free check holds no fd to narrow through: kubelet's empty
	 * 0755 is looked at again as the checked open does (the first ADD on
	 * a fresh node, with no budget to take the lock first) */
	if ((st.st_mode & 077) && !create && (st.st_mode & 07777) == 0755)
		return nsh_state_dir_check(dir, true, err);
	if (st.st_mode & 077)
		return nshash_error_set(err, EPERM,
					"state dir %s: open to group or others (mode %04o): " STATE_DIR_HINT, dir,
					(unsigned)(st.st_mode & 07777));
	return 0;
}

int nshash_state_subdir(const char *state_dir, const char *sub, char *out, size_t outlen, struct nshash_error *err)
{
	int r = nsh_state_dir_check(state_dir, true, err);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, "%s/%s", state_dir, sub) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	return nsh_state_dir_check(out, true, err);
}

int nsh_lock_state(const char *state_dir, int *lockfd, struct nshash_error *err)
{
	char path[PATH_MAX];
	int r = nsh_state_dir_check(state_dir, true, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/lock", state_dir);
	*lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*lockfd < 0)
		return nshash_error_set(err, errno, "open lock %s: %s%s", path, strerror(errno),
					errno == EACCES
					    ? " (the template strategy keeps state there: use --state-dir "
					      "with a directory you own, or --strategy nested, which keeps none)"
					    : "");
	if (flock(*lockfd, LOCK_EX) < 0) {
		int e = errno;
		close(*lockfd);
		*lockfd = -1;
		return nsh_error_sys(err, e, "lock %s", path);
	}
	return 0;
}
