/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CNI plugin leaves for the CLI to show (docs/cni.md "Metrics"):
 *
 *   STATE_DIR/cni/adds        the ADD counters, one fixed-size text file
 *                             ("sized N\nwarned N\nrefused N\n", each N 20
 *                             digits wide) rewritten in place under an
 *                             flock of its own: a writer killed between
 *                             its read and its write loses its own count,
 *                             never the file
 *   STATE_DIR/cni/pods/ID     one record per attachment (ID: the validated
 *                             CNI_CONTAINERID), written to a temporary file
 *                             and renamed: one line
 *                             "1 INODE OUTCOME NAMESPACE POD NETNS", the
 *                             last three percent-encoded; removed by DEL
 *                             and, once its netns is gone, by `nshash gc`
 *                             and `nshash serve`
 *
 * The namespace and pod name come from CNI_ARGS (K8S_POD_NAMESPACE,
 * K8S_POD_NAME): hostile text, kept exactly (cut at NSH_POD_LABEL_MAX bytes)
 * and escaped where it is shown. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cnistate.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

#define ADDS_FMT       "sized %20llu\nwarned %20llu\nrefused %20llu\n"
#define RECORD_MAX     4096 /* bytes of one pod record file */
#define RECORDS_MAX    1024 /* records read at most (~5 MB; prune reads one at a time) */
#define RECORD_VERSION "1"

static const char *const outcome_names[] = {
    [NSH_CNI_NONE] = "none",	   [NSH_CNI_SIZED] = "sized",	  [NSH_CNI_WARNED] = "warned",
    [NSH_CNI_REFUSED] = "refused", [NSH_CNI_UNSIZED] = "unsized",
};

const char *nsh_cni_outcome_name(enum nsh_cni_outcome o)
{
	return (unsigned)o < sizeof(outcome_names) / sizeof(outcome_names[0]) ? outcome_names[o] : "none";
}

static enum nsh_cni_outcome outcome_parse(const char *s)
{
	for (unsigned i = 1; i < sizeof(outcome_names) / sizeof(outcome_names[0]); i++)
		if (strcmp(s, outcome_names[i]) == 0)
			return (enum nsh_cni_outcome)i;
	return NSH_CNI_NONE;
}

/* A directory of nshash's (this user's, closed to group and others) at
 * dirfd/name (name "" : dirfd itself): an fd, or -errno (-ENOENT: absent). */
static int own_dir_at(int dirfd, const char *name, const char *shown, struct nshash_error *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return nsh_error_sys(err, errno, "%s", shown);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022)) {
		close(fd);
		return nshash_error_set(err, EPERM, "%s: not a directory of nshash's (owner, mode)", shown);
	}
	return fd;
}

/* STATE_DIR/cni: an fd, or -errno (-ENOENT when absent and not `create`).
 * With `create`, what is missing is made the state dir's way
 * (nshash_state_subdir: STATE_DIR checked, cni/pods made 0700) -- on the
 * first ADD only: later ones open it and check it, two syscalls. */
static int cni_open(const char *state_dir, bool create, struct nshash_error *err)
{
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/cni", state_dir) >= sizeof(dir))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	int fd = own_dir_at(AT_FDCWD, dir, dir, err);
	if (fd == -ENOENT && create) {
		char made[PATH_MAX];
		int r = nshash_state_subdir(state_dir, "cni/pods", made, sizeof(made), err);
		fd = r < 0 ? r : own_dir_at(AT_FDCWD, dir, dir, err);
	}
	return fd;
}

/* STATE_DIR/cni/pods under an open cni dir, checked as the reader checks it
 * (nshash's own, not a symlink): an fd, or -errno (-ENOENT: absent and not
 * `create`). */
static int pods_open(int cfd, const char *state_dir, bool create, struct nshash_error *err)
{
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/cni/pods", state_dir);
	int fd = own_dir_at(cfd, "pods", dir, err);
	if (fd == -ENOENT && create && (mkdirat(cfd, "pods", 0700) == 0 || errno == EEXIST))
		fd = own_dir_at(cfd, "pods", dir, err);
	return fd;
}

/* ------------------------------------------------------------ ADD counters */

static void adds_parse(const char *text, uint64_t counts[3])
{
	unsigned long long s, w, r;
	counts[0] = counts[1] = counts[2] = 0;
	if (sscanf(text, "sized %llu warned %llu refused %llu", &s, &w, &r) == 3) {
		counts[0] = s;
		counts[1] = w;
		counts[2] = r;
	}
}

static int adds_count_at(int dfd, const char *state_dir, enum nsh_cni_outcome o, struct nshash_error *err)
{
	int fd = openat(dfd, "adds", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0)
		return nsh_error_sys(err, errno, "count the ADD in %s/cni/adds", state_dir);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return nshash_error_set(err, EINVAL, "count the ADD in %s/cni/adds: not a regular file", state_dir);
	}
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		return nsh_error_sys(err, e, "lock %s/cni/adds", state_dir);
	}
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	uint64_t c[3];
	adds_parse(buf, c);
	c[o - NSH_CNI_SIZED]++;
	int len = snprintf(buf, sizeof(buf), ADDS_FMT, (unsigned long long)c[0], (unsigned long long)c[1],
			   (unsigned long long)c[2]);
	int r = 0;
	if (pwrite(fd, buf, (size_t)len, 0) != len)
		r = nsh_error_sys(err, errno ? errno : EIO, "write %s/cni/adds", state_dir);
	close(fd); /* and the lock */
	return r;
}

int nsh_cni_adds_count(const char *state_dir, enum nsh_cni_outcome o, struct nshash_error *err)
{
	return nsh_cni_state_add(state_dir, o, NULL, err);
}

int nsh_cni_adds_read(const char *state_dir, uint64_t counts[3], struct nshash_error *err)
{
	counts[0] = counts[1] = counts[2] = 0;
	int dfd = cni_open(state_dir, false, err);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	int fd = openat(dfd, "adds", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int e = errno;
	close(dfd);
	if (fd < 0)
		return e == ENOENT ? 0 : nsh_error_sys(err, e, "read %s/cni/adds", state_dir);
	struct stat st;
	char buf[128];
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH) == 0)
		n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n < 0)
		return nshash_error_set(err, EINVAL, "read %s/cni/adds: not a regular file", state_dir);
	buf[n] = '\0';
	adds_parse(buf, counts);
	return 0;
}

/* ------------------------------------------------------------ pod records */

/* Bytes outside '!'..'~', and '%', as %XX. */
static void pct_encode(const char *in, char *out, size_t len)
{
	size_t j = 0;
	if (strcmp(in, "-") == 0) { /* "-" alone means empty */
		snprintf(out, len, "%%2D");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)in; *p && j + 4 <= len; p++) {
		if (*p > ' ' && *p < 0x7f && *p != '%')
			out[j++] = (char)*p;
		else
			j += (size_t)snprintf(out + j, len - j, "%%%02X", *p);
	}
	out[j] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* false on a bad escape, a NUL, or no room */
static bool pct_decode(const char *in, char *out, size_t len)
{
	size_t j = 0;
	if (strcmp(in, "-") == 0) {
		out[0] = '\0';
		return true;
	}
	for (const char *p = in; *p; p++) {
		int c = (unsigned char)*p;
		if (c == '%') {
			int h = hexval(p[1]), l = h < 0 ? -1 : hexval(p[2]);
			if (l < 0 || (h | l) == 0)
				return false;
			c = h * 16 + l;
			p += 2;
		}
		if (j + 1 >= len)
			return false;
		out[j++] = (char)c;
	}
	out[j] = '\0';
	return true;
}

/* A container id as a file name: what CNI_CONTAINERID is after
 * nsh_cni_env_check, short enough. */
static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > NSH_POD_ID_MAX || id[0] == '.')
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.' || *p == '-'))
			return false;
	return true;
}

static int record_write_at(int dfd, const char *state_dir, const struct nsh_cni_pod *rec, struct nshash_error *err)
{
	if (!id_ok(rec->id))
		return nshash_error_set(err, EINVAL, "pod record: container id not usable as a file name");
	char ns[3 * NSH_POD_LABEL_MAX + 4], pod[3 * NSH_POD_LABEL_MAX + 4], netns[3 * PATH_MAX + 4];
	char cut[NSH_POD_LABEL_MAX + 1];
	snprintf(cut, sizeof(cut), "%s", rec->namespace_);
	pct_encode(cut, ns, sizeof(ns));
	snprintf(cut, sizeof(cut), "%s", rec->pod);
	pct_encode(cut, pod, sizeof(pod));
	pct_encode(rec->netns, netns, sizeof(netns));
	char line[RECORD_MAX];
	int n = snprintf(line, sizeof(line), RECORD_VERSION " %llu %s %s %s %s\n", (unsigned long long)rec->inode,
			 nsh_cni_outcome_name(rec->outcome), *ns ? ns : "-", *pod ? pod : "-", *netns ? netns : "-");
	if (n < 0 || (size_t)n >= sizeof(line))
		return nshash_error_set(err, ENAMETOOLONG, "pod record %s: too long", rec->id);
	char tmp[NSH_POD_ID_MAX + 32];
	snprintf(tmp, sizeof(tmp), ".%s.%d", rec->id, (int)getpid());
	int pfd = pods_open(dfd, state_dir, true, err);
	if (pfd < 0)
		return pfd;
	int fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	struct stat tst;
	if (fd >= 0 && (fstat(fd, &tst) < 0 || !S_ISREG(tst.st_mode))) { /* a FIFO there: never hang */
		close(fd);
		fd = -1;
		errno = EINVAL;
	}
	if (fd < 0) {
		int e = errno;
		close(pfd);
		return nsh_error_sys(err, e, "write %s/cni/pods/%s", state_dir, tmp);
	}
	int r = 0;
	if (nsh_write_all(fd, line, (size_t)n) < 0 || close(fd) < 0 || renameat(pfd, tmp, pfd, rec->id) < 0) {
		int e = errno;
		unlinkat(pfd, tmp, 0);
		r = nsh_error_sys(err, e, "write %s/cni/pods/%s", state_dir, rec->id);
	}
	close(pfd);
	return r;
}

int nsh_cni_state_add(const char *state_dir, enum nsh_cni_outcome o, const struct nsh_cni_pod *rec,
		       struct nshash_error *err)
{
	bool count = o == NSH_CNI_SIZED || o == NSH_CNI_WARNED || o == NSH_CNI_REFUSED;
	if (!count && !rec)
		return 0;
	int dfd = cni_open(state_dir, true, err);
	if (dfd < 0)
		return dfd;
	int r = count ? adds_count_at(dfd, state_dir, o, err) : 0;
	if (r == 0 && rec)
		r = record_write_at(dfd, state_dir, rec, err);
	close(dfd);
	return r;
}

int nsh_cni_pod_write(const char *state_dir, const struct nsh_cni_pod *rec, struct nshash_error *err)
{
	return nsh_cni_state_add(state_dir, NSH_CNI_NONE, rec, err);
}

/* STATE_DIR/cni/pods, as it is (not made): its fd, or -ENOENT when
 * either is not there. */
static int pods_dir(const char *state_dir, struct nshash_error *err)
{
	int cfd = cni_open(state_dir, false, err);
	if (cfd < 0)
		return cfd;
	int pfd = pods_open(cfd, state_dir, false, err);
	close(cfd);
	return pfd;
}

int nsh_cni_pod_remove(const char *state_dir, const char *id, struct nshash_error *err)
{
	if (!id_ok(id))
		return 0; /* never written */
	int pfd = pods_dir(state_dir, err);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	int r = unlinkat(pfd, id, 0) < 0 && errno != ENOENT
		    ? nsh_error_sys(err, errno, "remove %s/cni/pods/%s", state_dir, id)
		    : 0;
	close(pfd);
	return r;
}

/* One record file's text → rec; false when it is not one. */
static bool record_parse(char *text, struct nsh_cni_pod *rec)
{
	char *f[7], *save = NULL;
	int n = 0;
	char *nl = strchr(text, '\n');
	if (!nl || nl[1])
		return false;
	*nl = '\0';
	for (char *t = strtok_r(text, " ", &save); t && n < 7; t = strtok_r(NULL, " ", &save))
		f[n++] = t;
	if (n != 6 || strcmp(f[0], RECORD_VERSION) != 0)
		return false;
	char *end;
	errno = 0;
	unsigned long long ino = strtoull(f[1], &end, 10);
	if (errno || *end || f[1][0] < '0' || f[1][0] > '9')
		return false;
	rec->inode = ino;
	rec->outcome = outcome_parse(f[2]);
	return rec->outcome != NSH_CNI_NONE && pct_decode(f[3], rec->namespace_, sizeof(rec->namespace_)) &&
	       pct_decode(f[4], rec->pod, sizeof(rec->pod)) && pct_decode(f[5], rec->netns, sizeof(rec->netns));
}

/* The record named `id` in the pods dir dfd: 1 with *rec, 0 none or not one. */
static int record_read_at(int dfd, const char *id, struct nsh_cni_pod *rec)
{
	int fd = openat(dfd, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	char text[RECORD_MAX + 1];
	struct stat st;
	ssize_t len = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof(text) - 1) : -1;
	close(fd);
	if (len <= 0 || (size_t)len >= sizeof(text) - 1)
		return 0;
	text[len] = '\0';
	memset(rec, 0, sizeof(*rec));
	memcpy(rec->id, id, strlen(id) + 1); /* id_ok: short enough */
	return record_parse(text, rec) ? 1 : 0;
}

int nsh_cni_pod_get(const char *state_dir, const char *id, struct nsh_cni_pod *rec)
{
	if (!id_ok(id))
		return 0;
	struct nshash_error e;
	int dfd = pods_dir(state_dir, &e);
	if (dfd < 0)
		return 0;
	int r = record_read_at(dfd, id, rec);
	close(dfd);
	return r;
}

/* Each record of STATE_DIR/cni/pods in turn, parsed into *rec (its id
 * set), given to `each` with the pods dir's fd; `each` returning false
 * stops.  One record in memory at a time. */
static int records_each(const char *state_dir, struct nsh_cni_pod *rec,
			bool (*each)(int pfd, struct nsh_cni_pod *rec, void *ctx), void *ctx,
			struct nshash_error *err)
{
	int dfd = pods_dir(state_dir, err);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return nsh_error_sys(err, e, "list %s/cni/pods", state_dir);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!id_ok(de->d_name))
			continue; /* ".", "..", temporary files */
		if (record_read_at(dfd, de->d_name, rec) && !each(dfd, rec, ctx))
			break;
	}
	closedir(d);
	return 0;
}

struct records_vec {
	struct nsh_cni_pod *v;
	size_t n, cap;
	bool nomem;
};

static bool record_keep(int pfd, struct nsh_cni_pod *rec, void *ctx)
{
	(void)pfd;
	struct records_vec *w = ctx;
	if (w->n == w->cap) {
		size_t ncap = w->cap ? 2 * w->cap : 16;
		struct nsh_cni_pod *nv = realloc(w->v, ncap * sizeof(*nv));
		if (!nv) {
			w->nomem = true;
			return false;
		}
		w->v = nv;
		w->cap = ncap;
	}
	w->v[w->n++] = *rec;
	return w->n < RECORDS_MAX;
}

int nsh_cni_pods_read(const char *state_dir, struct nsh_cni_pod **out, size_t *count, struct nshash_error *err)
{
	*out = NULL;
	*count = 0;
	struct records_vec w = {0};
	struct nsh_cni_pod *rec = malloc(sizeof(*rec));
	if (!rec)
		return nshash_error_set(err, ENOMEM, "read %s/cni/pods: out of memory", state_dir);
	int r = records_each(state_dir, rec, record_keep, &w, err);
	free(rec);
	if (r == 0 && w.nomem)
		r = nshash_error_set(err, ENOMEM, "read %s/cni/pods: out of memory", state_dir);
	if (r < 0) {
		free(w.v);
		return r;
	}
	*out = w.v;
	*count = w.n;
	return 0;
}

/* Whether the directory holding `path` can be seen here: a view without
 * it (a node container that does not mount the runtime's /run/netns, a
 * mount namespace where it is not shared) cannot tell a gone pin from one
 * it does not see. */
static bool parent_seen(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n == 0 || n >= sizeof(dir))
		return n == 0; /* "/name": the root is always seen */
	memcpy(dir, path, n);
	dir[n] = '\0';
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where its netns should be: 1 an nsfs file with the recorded inode is at
 * the recorded path, 0 not (gone, or another netns there), -1 cannot tell
 * (the path's directory is not in this view, or cannot be looked at, or a
 * plain file is there: the pin's mount may not reach this view, as with a
 * non-recursive bind of the runtime's dir or no mount propagation). */
static int record_at_path(const struct nsh_cni_pod *rec)
{
	struct stat st;
	struct statfs sf;
	if (rec->netns[0] != '/')
		return 0; /* never a netns path: nothing to keep it for */
	if (lstat(rec->netns, &st) < 0)
		return (errno == ENOENT || errno == ENOTDIR) && parent_seen(rec->netns) ? 0 : -1;
	if (statfs(rec->netns, &sf) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (sf.f_type != NSFS_MAGIC)
		return -1;
	return (uint64_t)st.st_ino == rec->inode;
}

const struct nsh_cni_pod *nsh_cni_pod_find(const struct nsh_cni_pod *v, size_t n, uint64_t inode)
{
	/* the inode alone is not enough: a stale record (a DEL that never
	 * came) whose inode the kernel gave to a new netns would label it */
	for (size_t i = 0; inode && i < n; i++)
		if (v[i].inode == inode && record_at_path(&v[i]) == 1)
			return &v[i];
	return NULL;
}

static bool record_prune(int pfd, struct nsh_cni_pod *rec, void *ctx)
{
	size_t *removed = ctx;
	if (record_at_path(rec) == 0 && unlinkat(pfd, rec->id, 0) == 0) /* -1, cannot tell: kept */
		(*removed)++;
	return true;
}

int nsh_cni_pods_prune(const char *state_dir, size_t *removed, struct nshash_error *err)
{
	*removed = 0;
	struct nsh_cni_pod *rec = malloc(sizeof(*rec));
	if (!rec)
		return nshash_error_set(err, ENOMEM, "prune %s/cni/pods: out of memory", state_dir);
	int r = records_each(state_dir, rec, record_prune, removed, err);
	free(rec);
	return r;
}

/* ------------------------------------------------------------ shared tables */

/* A UUID as Go's uuid.New().String() writes it: 8-4-4-4-12 lowercase hex. */
static bool uuid_text(const char *s)
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return s[36] == '\0';
}

bool nsh_pod_netns_path(const char *path)
{
	static const char *const dirs[] = {"/run/netns/", "/var/run/netns/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);
		if (strncmp(path, dirs[i], n) != 0 || strchr(path + n, '/'))
			continue;
		const char *name = path + n;
		/* containerd's CRI: cni-RANDOM; CRI-O (namespaces_dir /var/run,
		 * its default): a bare UUID */
		if ((strncmp(name, "cni-", 4) == 0 && name[4]) || uuid_text(name))
			return true;
	}
	return false;
}

const char *nsh_pod_netns_shared(const struct nshash_stats_netns *e, const struct nsh_cni_pod *rec)
{
	if (e->info.tcp_entries >= 0 && e->info.udp_entries >= 0)
		return NULL; /* own tables (or knobs missing: an old kernel) */
	if (rec)	     /* the plugin saw it, wherever the runtime pinned it */
		return rec->outcome == NSH_CNI_WARNED ? "warned" : NULL;
	/* never seen: only a pin a runtime names as a pod's tells a pod */
	if (!e->pinned || e->kind != NSHASH_ENTRY_NETNS || !nsh_pod_netns_path(e->name))
		return NULL;
	return "unseen"; /* started before nshash was chained, or outside it */
}
