/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Carrying a replaced netns's net.* sysctls: what a runtime wrote into the
 * netns it pinned before a plugin replaced it (CRI-O's pinns writes a pod's
 * securityContext sysctls there, and without an infra container nobody
 * writes them again) is read there and written into the replacement.
 *
 * Only netns-wide knobs: per-device ones (ipvN|mpls / conf|neigh / DEV) go
 * with their links, and the replacement's links are not the old one's.
 * Not the table-size knobs nshash sets itself, not read-only or write-only
 * files, and not the limits the kernel derives from the table size where
 * the old netns has them as derived.  The baseline, what a new netns has
 * anyway, is the template's note (template.c; read once per template), or
 * the replacement's own values where there is no template.  Every file is
 * read relative to one directory fd per netns: a path lookup under
 * /proc/sys/net from outside compares a dentry of every live netns
 * (docs/kernel.md), a lookup below the netns's own `net` does not. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "netcfg.h"

#define CARRY_VALUE_MAX 4096

/* Knobs never carried: the child table sizes are nshash's own business
 * (the replacement's are 0 like any netns's, and it was made with the
 * sizes asked). */
static bool never_carried(const char *rel)
{
	return !strcmp(rel, "ipv4/" NSH_TCP_CHILD) || !strcmp(rel, "ipv4/" NSH_UDP_CHILD);
}

/* ipv4|ipv6|mpls / conf|neigh / DEV: a directory of a device's knobs (all
 * and default are the netns's). */
static bool device_dir(const char *rel)
{
	const char *s = strchr(rel, '/');
	if (!s)
		return false;
	const char *d = strchr(s + 1, '/');
	if (!d || strchr(d + 1, '/'))
		return false;
	size_t kind = (size_t)(d - s - 1);
	if (!((kind == 4 && !strncmp(s + 1, "conf", 4)) || (kind == 5 && !strncmp(s + 1, "neigh", 5))))
		return false;
	return strcmp(d + 1, "all") && strcmp(d + 1, "default");
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak" /* the vector is the caller's (netcfg.c says why) */
#endif
/* Every netns-wide knob under the directory `dirfd` (REL below net/). */
static int walk(int dirfd, const char *rel, struct nsh_sysvec *out)
{
	int fd = openat(dirfd, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		char sub[512], value[CARRY_VALUE_MAX];
		struct stat st;
		if (de->d_name[0] == '.' ||
		    (size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= sizeof(sub))
			continue;
		if (de->d_type == DT_DIR) {
			if (!device_dir(sub))
				r = walk(dirfd, sub, out);
			continue;
		}
		if (fstatat(dirfd, sub, &st, 0) < 0 || (st.st_mode & 0600) != 0600 || never_carried(sub))
			continue; /* read-only (*_hash_entries), write-only (flush) */
		if (nsh_sysctl_text(dirfd, sub, value, sizeof(value)) < 0)
			continue; /* unset (stable_secret reads EIO) */
		r = nsh_sysvec_push(out, sub, value);
	}
	closedir(d);
	return r;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak" /* the vector is the caller's */
#endif
/* The values under `dirfd` of the knobs `list` names, from..to. */
static int read_listed(int dirfd, const struct nsh_sysvec *list, size_t from, size_t to, struct nsh_sysvec *out)
{
	int r = 0;
	for (size_t i = from; r == 0 && i < to && i < list->n; i++) {
		char value[CARRY_VALUE_MAX];
		const char *rel = list->v[i].path;
		if (never_carried(rel) || nsh_sysctl_text(dirfd, rel, value, sizeof(value)) < 0)
			continue;
		r = nsh_sysvec_push(out, rel, value);
	}
	return r;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static int enter_dir(int nsfd, const char *what, int *home, int *dirfd, struct nshash_error *err);

/* The second half of a listed read, in a thread of its own (its own
 * setns into the netns): the first read of each knob in a fresh netns
 * costs the kernel ~7 us (~3 ms for the ~430 knobs), the longest step of
 * a CNI ADD, and two cores read it in about half the time. */
struct half {
	int nsfd;
	const struct nsh_sysvec *list;
	size_t from;
	struct nsh_sysvec out;
	int r;
};

static void *read_half(void *arg)
{
	struct half *h = arg;
	cleanup_close int home = -1, dir = -1;
	struct nshash_error e;
	h->r = enter_dir(h->nsfd, "the netns", &home, &dir, &e);
	if (h->r < 0)
		return NULL;
	h->r = read_listed(dir, h->list, h->from, h->list->n, &h->out);
	int back = nsh_netns_return(home, &e);
	if (back < 0)
		h->r = back;
	return NULL;
}

/* Enter the netns behind nsfd (home: where to return) and open its
 * /proc/sys/net.  The thread stays inside while it reads or writes there:
 * below that directory, each of the netns's subdirectories (ipv4, core,
 * ...) is reached through a link the kernel resolves in the netns of the
 * thread that looks. */
static int enter_dir(int nsfd, const char *what, int *home, int *dirfd, struct nshash_error *err)
{
	int r = nsh_netns_open_current(home, err);
	if (r == 0)
		r = nsh_netns_enter(nsfd, what, err);
	if (r < 0)
		return r;
	*dirfd = open("/proc/sys/net", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd >= 0)
		return 0;
	int e = errno;
	r = nsh_netns_return(*home, err);
	return r < 0 ? r : nsh_error_sys(err, e, "open /proc/sys/net in %s", what);
}

long nsh_sysvec_find(const struct nsh_sysvec *v, const char *path, size_t *hint)
{
	for (size_t k = 0; k < v->n; k++) {
		size_t i = (*hint + k) % v->n;
		if (strcmp(v->v[i].path, path) == 0) {
			*hint = i + 1;
			return (long)i;
		}
	}
	return -1;
}

/* The kernel's limits from a table of `tcp_entries` (negative: shared). */
static bool derived(const char *rel, const char *value, long tcp_entries)
{
	long size = tcp_entries < 0 ? -tcp_entries : tcp_entries;
	char v[32];
	if (!strcmp(rel, "ipv4/tcp_max_tw_buckets"))
		snprintf(v, sizeof(v), "%ld", size / 2);
	else if (!strcmp(rel, "ipv4/tcp_max_syn_backlog"))
		snprintf(v, sizeof(v), "%ld", size / 128 > 128 ? size / 128 : 128);
	else
		return false;
	return strcmp(v, value) == 0;
}

int nsh_sysctl_baseline(const struct nshash_create_opts *opts, struct nsh_netcfg *fresh, struct nshash_error *err)
{
	cleanup_close int tfd = -1;
	char stamp[4096];
	struct stat ts;
	memset(fresh, 0, sizeof(*fresh));
	if (nsh_template_fd(opts, &tfd, stamp, sizeof(stamp)) < 0 || fstat(tfd, &ts) < 0)
		return -ENOENT;
	cleanup_free char *text = NULL;
	size_t len;
	int r = nsh_template_note_read(stamp, ts.st_ino, &text, &len);
	for (char *line = text, *next; r == 0 && line && *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if ((line[0] != 'w' && line[0] != 'd') || line[1] != ' ' || !eq)
			r = -EINVAL;
		else
			*eq = '\0', r = nsh_sysvec_push(line[0] == 'w' ? &fresh->wide : &fresh->dev, line + 2, eq + 1);
	}
	if (r == 0)
		return 0;
	/* no note yet (or a damaged one): the template's own, noted for next time */
	nsh_netcfg_free(fresh);
	cleanup_close int home = -1;
	r = nsh_netns_open_current(&home, err);
	if (r == 0)
		r = nsh_netns_enter(tfd, "the template", err);
	if (r < 0)
		return r;
	r = nsh_netcfg_read(NULL, NSH_CFG_SYSCTL, fresh, err);
	int r2 = nsh_netns_return(home, err);
	if (r2 < 0) {
		nsh_netcfg_free(fresh);
		return r2;
	}
	if (r < 0)
		return nshash_error_prefix(err, "read the template's sysctls");
	cleanup_free char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	if (!f)
		return 0;
	for (int k = 0; k < 2; k++) {
		const struct nsh_sysvec *v = k ? &fresh->dev : &fresh->wide;
		for (size_t i = 0; i < v->n; i++)
			if (!strchr(v->v[i].value, '\n'))
				fprintf(f, "%c %s=%s\n", k ? 'd' : 'w', v->v[i].path, v->v[i].value);
	}
	if (fclose(f) == 0) /* a note not saved is made again next time */
		nsh_template_note_write(stamp, ts.st_ino, out, olen);
	return 0;
}

void nshash_sysctls_free(struct nshash_sysctls *s)
{
	for (size_t i = 0; s->v && i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].value);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

int nshash_sysctls_differing(const struct nshash_create_opts *opts, const char *pin_path, int nsfd,
			     struct nshash_sysctls *out, struct nshash_error *err)
{
	memset(out, 0, sizeof(*out));
	cleanup_close int pfd = -1, pdir = -1, sdir = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(pin_path, false, &pfd, &not_netns);
	if (r < 0)
		return nsh_error_sys(err, r, "read the net.* sysctls of %s", pin_path);
	if (not_netns)
		return nshash_error_set(err, EINVAL, "read the net.* sysctls of %s: not a network namespace (%s)",
					pin_path, not_netns);
	/* the baseline: the template's, else (below) the replacement's own */
	struct nsh_sysvec have = {0};
	struct nsh_netcfg fresh = {0};
	int b = nsh_sysctl_baseline(opts, &fresh, err);
	if (b < 0 && b != -ENOENT)
		return nshash_error_prefix(err, "read the net.* sysctls of %s", pin_path);
	if (b == -ENOENT && nsfd < 0)
		return nshash_error_set(err, ENODATA,
					"read the net.* sysctls of %s: no template note to compare with yet", pin_path);
	cleanup_close int home = -1;
	r = enter_dir(pfd, pin_path, &home, &pdir, err);
	if (r < 0) {
		nsh_netcfg_free(&fresh);
		return nshash_error_prefix(err, "read the net.* sysctls of %s", pin_path);
	}
	/* With a baseline, only its knobs (the same kernel's writable ones): no
	 * readdir and no stat per file; the second half in a thread */
	struct half second = {.nsfd = pfd, .list = &fresh.wide, .from = fresh.wide.n / 2};
	pthread_t helper;
	bool split = b == 0 && fresh.wide.n >= 64 && pthread_create(&helper, NULL, read_half, &second) == 0;
	if (b != 0)
		r = walk(pdir, "", &have);
	else
		r = read_listed(pdir, &fresh.wide, 0, split ? second.from : fresh.wide.n, &have);
	if (split) {
		pthread_join(helper, NULL);
		if (r == 0)
			r = second.r;
		for (size_t i = 0; r == 0 && i < second.out.n; i++)
			r = nsh_sysvec_push(&have, second.out.v[i].path, second.out.v[i].value);
		for (size_t i = 0; i < second.out.n; i++)
			free(second.out.v[i].path), free(second.out.v[i].value);
		free(second.out.v);
	}
	long tcp = 0;
	if (r == 0 && nsh_sysctl_read_at(pdir, "ipv4/" NSH_TCP_ENTRIES, &tcp) < 0)
		tcp = 0;
	int back = nsh_netns_return(home, err);
	if (back < 0) {
		for (size_t i = 0; i < have.n; i++)
			free(have.v[i].path), free(have.v[i].value);
		free(have.v);
		nsh_netcfg_free(&fresh);
		return back;
	}
	if (r == 0 && b == -ENOENT) {
		cleanup_close int shome = -1;
		b = enter_dir(nsfd, "the sized netns", &shome, &sdir, err);
		if (b == 0) {
			int w = walk(sdir, "", &fresh.wide);
			b = nsh_netns_return(shome, err);
			if (b == 0 && w < 0)
				b = nsh_error_sys(err, -w, "read the sized netns's sysctls");
		}
	}
	if (r < 0)
		nsh_error_sys(err, r, "read the net.* sysctls of %s", pin_path);
	else if (b < 0 && b != -ENOENT)
		r = nshash_error_prefix(err, "read the net.* sysctls of %s", pin_path);
	size_t hint = 0;
	if (r == 0 && !(out->v = calloc(have.n ? have.n : 1, sizeof(*out->v))))
		r = nshash_error_set(err, ENOMEM, "read the net.* sysctls of %s: out of memory", pin_path);
	for (size_t i = 0; r == 0 && i < have.n; i++) {
		struct nsh_sysent *e = &have.v[i];
		long j = nsh_sysvec_find(&fresh.wide, e->path, &hint);
		if ((j >= 0 && !strcmp(fresh.wide.v[j].value, e->value)) || derived(e->path, e->value, tcp))
			continue;
		out->v[out->n++] = (struct nshash_sysctl){.path = e->path, .value = e->value};
		e->path = e->value = NULL; /* now out's */
	}
	for (size_t i = 0; i < have.n; i++) {
		free(have.v[i].path);
		free(have.v[i].value);
	}
	free(have.v);
	nsh_netcfg_free(&fresh);
	if (r < 0)
		nshash_sysctls_free(out);
	return r;
}

/* "net.ipv4.ping_group_range" for "ipv4/ping_group_range". */
static void dotted(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "net.%s", rel);
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
}

/* A value as the kernel prints it, tabs between fields: shown with spaces,
 * cut at 64 bytes, anything but printable ASCII as '?'. */
static void shown_value(const char *value, char *buf, size_t len)
{
	snprintf(buf, len, "%.64s", value);
	for (char *p = buf; *p; p++)
		if (*p == '\t')
			*p = ' ';
		else if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

int nshash_sysctls_carry(int nsfd, struct nshash_sysctls *s, unsigned *written, struct nshash_error *err)
{
	if (written)
		*written = 0;
	if (!s->n)
		return 0;
	cleanup_close int dir = -1, home = -1;
	int r = enter_dir(nsfd, "the sized netns", &home, &dir, err);
	if (r < 0)
		return nshash_error_prefix(err, "carry net.* sysctls");
	/* Several passes: one knob can allow another (ip_local_port_range
	 * must stay above ip_unprivileged_port_start; conf/all sets the
	 * devices'). */
	for (int pass = 0; pass < 4; pass++) {
		bool wrote = false;
		for (size_t i = 0; i < s->n; i++) {
			struct nshash_sysctl *e = &s->v[i];
			char have[CARRY_VALUE_MAX];
			int g = nsh_sysctl_text(dir, e->path, have, sizeof(have));
			if (g == 0 && !strcmp(have, e->value)) {
				e->errnum = 0;
				continue;
			}
			int w = g == -ENOENT ? g : nsh_sysctl_put(dir, e->path, e->value);
			if (w == 0 && nsh_sysctl_text(dir, e->path, have, sizeof(have)) == 0 && !strcmp(have, e->value)) {
				e->errnum = 0;
				wrote = true;
				if (written)
					(*written)++;
			} else {
				e->errnum = w < 0 ? -w : EIO;
			}
		}
		if (!wrote)
			break;
	}
	r = nsh_netns_return(home, err);
	if (r < 0)
		return r;
	char names[900] = "";
	size_t off = 0, failed = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!s->v[i].errnum)
			continue;
		char name[160], value[72];
		dotted(s->v[i].path, name, sizeof(name));
		shown_value(s->v[i].value, value, sizeof(value));
		int n = snprintf(names + off, sizeof(names) - off, "%s%s=\"%s\" (%s)", failed ? ", " : "", name, value,
				 s->v[i].errnum == EIO ? "reads otherwise after the write" : strerror(s->v[i].errnum));
		if (n > 0 && off + (size_t)n < sizeof(names))
			off += (size_t)n;
		failed++;
	}
	if (failed)
		return nshash_error_set(err, EIO, "carry net.* sysctls: %zu of %zu could not be set in the sized netns: %s",
					failed, s->n, names);
	return 0;
}

void nshash_sysctls_text(const struct nshash_sysctls *s, char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < s->n && off < len; i++) {
		char name[160], value[72];
		dotted(s->v[i].path, name, sizeof(name));
		shown_value(s->v[i].value, value, sizeof(value));
		int n = snprintf(buf + off, len - off, "%s%s=%s", i ? ", " : "", name, value);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
