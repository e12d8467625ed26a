/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pins: bind mounts of a netns on a file, compatible with `ip netns`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"

int nshash_name_check(const char *what, const char *name, struct nshash_error *err)
{
	if (!name || !*name)
		return nshash_error_set(err, EINVAL, "%s: empty name", what);
	size_t len = strnlen(name, NAME_MAX + 1);
	if (len > NAME_MAX)
		return nshash_error_set(err, ENAMETOOLONG, "%s \"%.32s...\": longer than %d characters", what, name,
					NAME_MAX);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return nshash_error_set(err, EINVAL, "%s \"%s\": not a valid name", what, name);
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return nshash_error_set(err, EINVAL,
						"%s \"%.64s\": character %s0x%02x not allowed (use A-Z a-z 0-9 . _ -)",
						what, name, c == '/' ? "'/' " : "", c);
	}
	return 0;
}

static int path_check(const char *path, struct nshash_error *err)
{
	size_t len = strnlen(path, PATH_MAX);
	if (len >= PATH_MAX)
		return nshash_error_set(err, ENAMETOOLONG, "path \"%.32s...\": longer than %d bytes", path,
					PATH_MAX - 1);
	if (path[0] != '/')
		return nshash_error_set(err, EINVAL, "path \"%s\": not absolute", path);
	if (len > 1 && path[len - 1] == '/')
		return nshash_error_set(err, EINVAL, "path \"%s\": ends with '/' (a pin is a file)", path);
	for (const char *p = path; *p; p++) {
		if (p[0] == '/' && p[1] == '/')
			return nshash_error_set(err, EINVAL, "path \"%s\": contains \"//\"", path);
		if (p[0] == '/' && p[1] == '.' &&
		    (p[2] == '/' || p[2] == '\0' || (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
			return nshash_error_set(err, EINVAL, "path \"%s\": contains a \".\" or \"..\" component", path);
		if ((unsigned char)*p < 0x20)
			return nshash_error_set(err, EINVAL, "path \"%s\": contains a control character", path);
	}
	if (len == 1)
		return nshash_error_set(err, EINVAL, "path \"/\": not a pin file");
	return 0;
}

int nshash_pin_resolve(const char *arg, char *out, size_t outlen, struct nshash_error *err)
{
	int r;
	if (!arg || !*arg)
		return nshash_error_set(err, EINVAL, "netns name or path: empty");
	if (arg[0] == '/') {
		r = path_check(arg, err);
		if (r < 0)
			return r;
		if (strlen(arg) >= outlen)
			return nshash_error_set(err, ENAMETOOLONG, "path \"%s\": too long", arg);
		strcpy(out, arg);
		return 0;
	}
	r = nshash_name_check("netns name", arg, err);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, NSHASH_NETNS_RUN_DIR "/%s", arg) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "netns name \"%s\": too long", arg);
	return 0;
}

int nshash_pin_dir_prepare(const char *dir, struct nshash_error *err)
{
	/* Made before (a mount point of its own, which only this function
	 * makes it): nothing to do.  Re-asserting the propagation on every
	 * container start would take the mount namespace's lock each time. */
	struct statx stx;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) == 0 && S_ISDIR(stx.stx_mode) &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return 0;
	int r = nsh_mkdir_p(dir, 0755, err);
	if (r < 0)
		return r;
	/* Already a mount point: just (re)assert shared propagation. */
	if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) == 0)
		return 0;
	if (errno != EINVAL)
		return nshash_error_set(err, errno, "make %s a shared mount: %s%s", dir, strerror(errno),
					nsh_mount_hint(errno));
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return nsh_error_sys(err, errno, "open %s", dir);
	if (flock(dfd, LOCK_EX) < 0)
		return nsh_error_sys(err, errno, "lock %s", dir);
	/* Someone may have done it while we waited. */
	if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) == 0)
		return 0;
	if (mount(dir, dir, "none", MS_BIND | MS_REC, NULL) < 0)
		return nshash_error_set(err, errno, "bind %s onto itself: %s%s", dir, strerror(errno),
					nsh_mount_hint(errno));
	if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) < 0)
		return nshash_error_set(err, errno, "make %s a shared mount: %s%s", dir, strerror(errno),
					nsh_mount_hint(errno));
	return 0;
}

const char *nsh_mount_hint(int e)
{
	if (e == EPERM)
		return " (pins are bind mounts and need CAP_SYS_ADMIN over the mount namespace: run as root, or inside "
		       "a user namespace give it a mount namespace of its own, e.g. unshare -Urmn, not unshare -Urn)";
	if (e == EACCES)
		return " (the directory belongs to someone else: give a path in a directory you own, e.g. under "
		       "$XDG_RUNTIME_DIR, or run as root)";
	return "";
}

int nsh_bind_fd(int nsfd, int targetfd)
{
	/* Both ends through /proc/self/fd: the target is the very file that
	 * was claimed, never what its path names now (a symlink swapped in
	 * meanwhile is not followed; a replaced file makes this ENOENT). */
	char src[64], dst[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", nsfd);
	snprintf(dst, sizeof(dst), "/proc/self/fd/%d", targetfd);
	return mount(src, dst, "none", MS_BIND, NULL) < 0 ? -errno : 0;
}

int nsh_mount_clone(int fd)
{
	int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return -errno;
	struct mount_attr priv = {.propagation = MS_PRIVATE}; /* the pin belongs to no peer group */
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &priv, sizeof(priv)) < 0) {
		int e = errno;
		close(tree);
		return -e;
	}
	return tree;
}

int nsh_mount_at(int tree, int nsfd, int target)
{
	if (tree < 0)
		return nsh_bind_fd(nsfd, target);
	return move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ? -errno : 0;
}

int nsh_pin_claim(const char *path, const char *what, int *fd, struct nshash_error *err)
{
	*fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
	if (*fd < 0) {
		if (errno == EEXIST)
			return nshash_error_set(err, EEXIST, "%s %s: already exists", what, path);
		return nshash_error_set(err, errno, "%s %s: %s%s", what, path, strerror(errno), nsh_mount_hint(errno));
	}
	return 0;
}

void nsh_pin_unclaim(const char *path, int fd)
{
	/* Remove the claimed file only if the path still names it. */
	struct stat a, b;
	if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		unlink(path);
}

int nsh_pin_ns_fd(int nsfd, const char *path, const char *claim, const char *kind, struct nshash_error *err)
{
	cleanup_close int fd = -1;
	int r = nsh_pin_claim(path, claim, &fd, err);
	if (r < 0)
		return r;
	r = nsh_bind_fd(nsfd, fd);
	if (r < 0) {
		nsh_pin_unclaim(path, fd);
		return nshash_error_set(err, r, "bind %s onto %s: %s%s", kind, path, strerror(-r), nsh_mount_hint(-r));
	}
	return 0;
}

int nshash_pin_fd(int nsfd, const char *path, struct nshash_error *err)
{
	return nsh_pin_ns_fd(nsfd, path, "create pin", "network namespace", err);
}

int nshash_pin_is_netns(const char *path, struct nshash_error *err)
{
	cleanup_close int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(path, false, &fd, &not_netns);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		return nsh_error_sys(err, r, "open %s", path);
	return fd >= 0 ? 1 : 0;
}

int nshash_pin_remove(const char *path, struct nshash_error *err)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return nsh_error_sys(err, errno, "remove pin %s", path);
	}
	if (!S_ISREG(st.st_mode))
		return nshash_error_set(err, EINVAL, "remove pin %s: not a pin (a %s)", path,
					S_ISDIR(st.st_mode)   ? "directory"
					: S_ISLNK(st.st_mode) ? "symlink"
							      : "special file");
	/* A regular file on its own is a stale pin (its mount is gone); anything
	 * mounted on it must be a netns, never some other bind mount. */
	int is_ns = nshash_pin_is_netns(path, err);
	if (is_ns < 0)
		return nshash_error_prefix(err, "remove pin %s", path);
	if (!is_ns && st.st_size != 0) /* claimed pins are empty */
		return nshash_error_set(err, EINVAL, "remove pin %s: not a pin (a file with data)", path);
	if (is_ns) {
		/* MNT_DETACH: a runtime holding the pin open would make a plain
		 * umount fail with EBUSY.  Stacked pins are all removed.  Never
		 * through a symlink swapped in since the look above. */
		while (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			;
		if (errno != EINVAL && errno != ENOENT)
			return nshash_error_set(err, errno, "unmount pin %s: %s%s", path, strerror(errno),
						nsh_mount_hint(errno));
	} else {
		struct stat parent;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (stat(dir, &parent) == 0 && parent.st_dev != st.st_dev)
			return nshash_error_set(
			    err, EINVAL, "remove pin %s: something other than a network namespace is mounted there",
			    path);
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return nsh_error_sys(err, errno, "remove pin %s", path);
	return 0;
}

int nsh_sweep_unpinned(const char *state_dir, const char *sub, int64_t min_age, nsh_unpinned_fn remove, void *ctx,
		       struct nshash_error *err)
{
	char dir[PATH_MAX], pin[PATH_MAX + NAME_MAX + 8], path[PATH_MAX + NAME_MAX + 2];
	struct stat st;
	struct dirent *de;
	int removed = 0;
	time_t now = time(NULL);

	snprintf(dir, sizeof(dir), "%s/%s", state_dir, sub);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : nsh_error_sys(err, errno, "open %s", dir);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(pin, sizeof(pin), "%s/pins/%s", state_dir, de->d_name);
		/* made beside its netns pin, gone with it: no pin, and older than
		 * any create takes, is left by a container gone */
		if (lstat(pin, &st) == 0 || errno != ENOENT)
			continue;
		if (lstat(path, &st) < 0 || now < st.st_mtime || now - st.st_mtime < min_age)
			continue;
		if (remove(path, &st, ctx) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
