/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What is at a netns path, and who already uses a netns (interfaces,
 * processes): what a caller must know before replacing one. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "internal.h"

/* Skip "DIGITS/" at *p; false when it is not there. */
static bool skip_number_dir(const char **p)
{
	const char *q = *p;
	if (!isdigit((unsigned char)*q))
		return false;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q != '/')
		return false;
	*p = q + 1;
	return true;
}

static bool is_proc_netns_link(const char *path)
{
	/* /proc/PID/ns/net, /proc/self/..., /proc/PID/task/TID/ns/net */
	if (strncmp(path, "/proc/", 6) != 0)
		return false;
	const char *p = path + 6;
	if (strncmp(p, "self/", 5) == 0)
		p += 5;
	else if (strncmp(p, "thread-self/", 12) == 0)
		p += 12;
	else if (!skip_number_dir(&p))
		return false;
	else if (strncmp(p, "task/", 5) == 0) {
		p += 5;
		if (!skip_number_dir(&p))
			return false;
	}
	return strcmp(p, "ns/net") == 0;
}

int nshash_path_classify(const char *path, enum nshash_path_kind *kind, char *detail, size_t detail_len,
			 struct nshash_error *err)
{
	struct stat st;
	detail[0] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			*kind = NSHASH_PATH_MISSING;
			snprintf(detail, detail_len, "no such file");
			return 0;
		}
		return nshash_error_set(err, errno, "%s: %s", path, strerror(errno));
	}
	if (S_ISLNK(st.st_mode)) {
		char target[512];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		cleanup_close int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || !nsh_fd_is_netns(fd)) {
			*kind = fd < 0 && errno == ENOENT ? NSHASH_PATH_MISSING : NSHASH_PATH_NOT_NETNS;
			snprintf(detail, detail_len, "a symbolic link to %s, which is not a network namespace", target);
			return 0;
		}
		*kind = is_proc_netns_link(path) ? NSHASH_PATH_PROC : NSHASH_PATH_LINK;
		snprintf(detail, detail_len, "%s", target);
		return 0;
	}
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && nsh_fd_is_netns(fd)) {
		*kind = NSHASH_PATH_PIN;
		return 0;
	}
	*kind = NSHASH_PATH_NOT_NETNS;
	if (S_ISDIR(st.st_mode))
		snprintf(detail, detail_len, "a directory");
	else if (S_ISREG(st.st_mode))
		snprintf(detail, detail_len, "a regular file with nothing mounted on it (a stale pin?)");
	else if (fd >= 0 && ioctl(fd, NS_GET_NSTYPE) >= 0)
		snprintf(detail, detail_len, "a namespace of another type");
	else
		snprintf(detail, detail_len, "a special file (mode %o)", (unsigned)(st.st_mode & S_IFMT));
	return 0;
}

int nshash_netns_occupancy(const char *path, struct nshash_occupancy *occ, struct nshash_error *err)
{
	memset(occ, 0, sizeof(*occ));
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "open %s: %s", path, strerror(errno));
	struct stat ns;
	if (fstat(fd, &ns) < 0)
		return nshash_error_set(err, errno, "stat %s: %s", path, strerror(errno));

	cleanup_close int home = -1;
	int r = nsh_netns_open_current(&home, err);
	if (r == 0)
		r = nsh_netns_enter(fd, path, err);
	if (r < 0)
		return r;
	struct if_nameindex *ifs = if_nameindex();
	int saved = errno;
	r = nsh_netns_return(home, err);
	if (r < 0) {
		if (ifs)
			if_freenameindex(ifs);
		return r;
	}
	if (!ifs)
		return nshash_error_set(err, saved, "list the interfaces of %s: %s", path, strerror(saved));
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		if (strcmp(i->if_name, "lo") == 0)
			continue;
		size_t used = strlen(occ->link_names);
		if (used + 1 < sizeof(occ->link_names))
			snprintf(occ->link_names + used, sizeof(occ->link_names) - used, "%s%s", occ->links ? ", " : "",
				 i->if_name);
		occ->links++;
	}
	if_freenameindex(ifs);

	pid_t pid = nsh_netns_user(ns.st_dev, ns.st_ino);
	if (pid < 0)
		return nshash_error_set(err, -pid, "look for processes in %s: /proc: %s", path, strerror(-pid));
	if (pid > 0) {
		occ->pid = pid;
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
		FILE *f = fopen(p, "re");
		if (f) {
			if (fgets(occ->comm, sizeof(occ->comm), f))
				occ->comm[strcspn(occ->comm, "\n")] = '\0';
			fclose(f);
		}
	}
	return 0;
}
