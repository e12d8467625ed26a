/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The installer's I/O: its log lines, atomic writes, the files of the
 * node's CNI config dir (read whole, JSON or not; which one libcni loads)
 * and the dir's lock.  The bottom of k8s/: it calls no other k8s/ file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

void k8s_log(const char *fmt, ...)
{
	char buf[2048], line[4 * sizeof(buf)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* file names from readdir, the plugin's messages: a control character
	 * (a newline) never makes a line of its own */
	nshash_escape(buf, line, sizeof(line));
	fprintf(stderr, K8S_PROG ": %s\n", line);
}

int k8s_write_atomic(const char *path, const char *text, size_t len, mode_t mode, uid_t uid, gid_t gid,
		     struct nshash_error *err)
{
	/* a fixed temporary name libcni never loads (it only reads *.conf,
	 * *.conflist, *.json): .NAME.nshash-tmp beside the file */
	char tmp[4200];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	snprintf(tmp, sizeof(tmp), "%.*s.%s%s", (int)(base - path), path, base, K8S_TMP_EXT);
	/* uid -1: fchown leaves the owner as it is (the caller's) */
	struct stat like = {.st_mode = mode, .st_uid = uid, .st_gid = gid};
	return nsh_write_replace(path, tmp, text, len, &like, err);
}

/* ---- the record */

void k8s_path_in(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* ---- files */

void k8s_file_free(struct k8s_file *f)
{
	free(f->bytes);
	json_object_put(f->json);
	f->bytes = NULL;
	f->json = NULL;
}

/* Read DIR/NAME; -ENOENT when it is gone. JSON errors are left in f->json NULL + err. */
int k8s_file_read(const char *dir, const char *name, struct k8s_file *f, struct nshash_error *err)
{
	memset(f, 0, sizeof(*f));
	k8s_path_in(f->path, sizeof(f->path), dir, name);
	struct stat lst;
	if (lstat(f->path, &lst) == 0 && S_ISLNK(lst.st_mode))
		return nshash_error_set(
		    err, ELOOP, "%s is a symbolic link: nshash chains only a regular file (not touching it)", f->path);
	int r = nsh_read_file_stat(f->path, K8S_MAX_FILE, &f->bytes, &f->len, &f->st, err);
	if (r < 0)
		return r;
	if (nsh_json_parse_text(f->bytes, f->len, f->path, &f->json, err) < 0)
		f->json = NULL;
	return 0;
}

/* The file still holds what was read (a primary rewriting it meanwhile is
 * never overwritten with the merge of its old content): 0, else -EAGAIN. */
int k8s_still_same(const struct k8s_file *f, struct nshash_error *err)
{
	char *now = NULL;
	size_t len = 0;
	struct nshash_error e;
	int r = nsh_read_file(f->path, K8S_MAX_FILE, &now, &len, &e);
	bool same = r == 0 && len == f->len && memcmp(now, f->bytes, len) == 0;
	free(now);
	if (same)
		return 0;
	return nshash_error_set(err, EAGAIN,
				"%s changed while nshash was chaining it (the primary CNI writing it?); retried at its "
				"next change",
				f->path);
}

static bool conf_ext(const char *n)
{
	const char *dot = strrchr(n, '.');
	return dot && (!strcmp(dot, ".conf") || !strcmp(dot, ".conflist") || !strcmp(dot, ".json"));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of net_dir libcni would read, in its order (bytewise), NULL
 * terminated; `skip` left out and `add` put in (NULL: none). */
char **k8s_conf_files(const char *dir, const char *skip, const char *add, struct nshash_error *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		nshash_error_set(err, errno,
				 "%s: %s (mount the node's CNI config dir there, or name it with "
				 "--cni-net-dir)",
				 dir, strerror(errno));
		return NULL;
	}
	size_t n = 0, cap = 16;
	char **v = calloc(cap, sizeof(*v));
	if (!v) {
		closedir(d);
		nshash_error_set(err, ENOMEM, "%s: out of memory", dir);
		return NULL;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!conf_ext(de->d_name) || (skip && !strcmp(de->d_name, skip)) || (add && !strcmp(de->d_name, add)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || S_ISDIR(st.st_mode))
			continue;
		if (n + 3 > cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)))
			n++;
	}
	closedir(d);
	if (add && (v[n] = strdup(add)))
		n++;
	v[n] = NULL;
	qsort(v, n, sizeof(*v), by_name);
	return v;
}

void k8s_names_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int k8s_active_conf(const struct k8s_opts *o, char *name, size_t len, struct nshash_error *err)
{
	if (o->conf_name && *o->conf_name) {
		char p[4096];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", o->net_dir, o->conf_name);
		if (stat(p, &st) < 0)
			return nshash_error_set(err, ENOENT, "%s: not there yet (CNI_CONF_NAME names it)", p);
		snprintf(name, len, "%s", o->conf_name);
		return 0;
	}
	char **v = k8s_conf_files(o->net_dir, NULL, NULL, err);
	if (!v)
		return -err->errnum;
	int r = 0;
	if (v[0])
		snprintf(name, len, "%s", v[0]);
	else
		r = nshash_error_set(err, ENOENT,
				     "no CNI config in %s yet (no *.conf, *.conflist or *.json: the primary CNI has "
				     "not written one); nothing to chain",
				     o->net_dir);
	k8s_names_free(v);
	return r;
}

int k8s_lock(const char *dir, struct nshash_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno,
					"%s: %s (mount the node's CNI config dir there, or name it with "
					"--cni-net-dir)",
					dir, strerror(errno));
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return nsh_error_sys(err, e, "lock %s", dir);
		}
	}
	return fd;
}

void k8s_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}
