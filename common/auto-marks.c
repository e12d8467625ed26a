/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto`'s marks: STATE_DIR/workloads/DEV-INO says which workload a netns
 * nshash sized belongs to (its key and the netns's id); a teardown
 * samples the marked netns into the history; reaped when their netns is
 * gone.  See docs/auto.md. */
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
