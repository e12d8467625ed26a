/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private parents and templates.  A private parent is a netns whose
 * *_child_* knobs nshash sets (the host's are never written); a template is
 * one such parent kept pinned per effective size pair at
 * STATE/templates/tcpT-udpU, built once under the state lock and used
 * without a lock afterwards, with its use stamp STATE/templates/tcpT-udpU.used.
 * This file owns the stamp: its time (the last use: gc's idle age) and its
 * content (a note kept for the template: transplant.c's sysctls of a new
 * netns, keyed by the template's inode).  Creating a child from a parent is
 * create.c's. */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* Set the child knobs of the calling thread's (fresh) netns.  A new netns
 * starts with both at 0, so only non-zero sizes are written. */
int nsh_parent_knobs_set(struct nshash_sizes eff, struct nshash_error *err)
{
	const char *knob[2] = {NSH_TCP_CHILD, NSH_UDP_CHILD};
	uint32_t val[2] = {eff.tcp, eff.udp};
	for (int i = 0; i < 2; i++) {
		if (!val[i])
			continue;
		int r = nsh_sysctl_write(knob[i], val[i]);
		if (r == -ENOENT) {
			struct nshash_probe p;
			nshash_probe(&p, NULL);
			return nsh_knob_missing(i ? NSHASH_UDP : NSHASH_TCP, p.release, err);
		}
		if (r < 0)
			return nsh_error_sys(err, r, "set net.ipv4.%s=%u in the private parent", knob[i], val[i]);
		long back;
		r = nsh_sysctl_read(knob[i], &back);
		if (r < 0 || back != (long)val[i])
			return nshash_error_set(err, EIO,
						"net.ipv4.%s in the private parent reads %ld after writing %u", knob[i],
						r < 0 ? -1L : back, val[i]);
	}
	return 0;
}

/* 1 when the calling thread's netns has exactly these child knobs. */
int nsh_parent_knobs_are(struct nshash_sizes eff)
{
	long t = 0, u = 0;
	int rt = nsh_sysctl_read(NSH_TCP_CHILD, &t), ru = nsh_sysctl_read(NSH_UDP_CHILD, &u);
	if (rt < 0 && !(rt == -ENOENT && eff.tcp == 0))
		return 0;
	if (ru < 0 && !(ru == -ENOENT && eff.udp == 0))
		return 0;
	return (rt < 0 || t == (long)eff.tcp) && (ru < 0 || u == (long)eff.udp);
}

void nsh_template_name(struct nshash_sizes eff, char *buf, size_t len)
{
	snprintf(buf, len, "tcp%u-udp%u", eff.tcp, eff.udp);
}

/* "tcpT-udpU" → sizes; false for anything else. */
bool nsh_template_name_parse(const char *name, struct nshash_sizes *eff)
{
	unsigned t, u;
	int n = 0;
	if (sscanf(name, "tcp%u-udp%u%n", &t, &u, &n) != 2 || name[n] != '\0')
		return false;
	char canon[64];
	*eff = (struct nshash_sizes){t, u};
	nsh_template_name(*eff, canon, sizeof(canon));
	return strcmp(canon, name) == 0;
}

int nsh_template_paths(const char *state_dir, struct nshash_sizes eff, struct nsh_template *t, struct nshash_error *err)
{
	char name[64];
	nsh_template_name(eff, name, sizeof(name));
	/* cppcheck reads snprintf's output buffer as an input (ctuuninitvar) */
	// cppcheck-suppress ctuuninitvar
	if ((size_t)snprintf(t->path, sizeof(t->path), "%s/templates/%s", state_dir, name) >= sizeof(t->path) ||
	    (size_t)snprintf(t->stamp, sizeof(t->stamp), "%s/templates/%s" NSH_TEMPLATE_STAMP, state_dir, name) >=
		sizeof(t->stamp))
		return nshash_error_set(err, ENAMETOOLONG, "state dir %s: path too long", state_dir);
	return 0;
}

int nsh_template_open(const struct nsh_template *t)
{
	/* In the checked state dir (root's, 0700, no symlink): opened directly,
	 * never following a link, never blocking; anything but a netns is
	 * rebuilt.  (Untrusted paths go through nsh_path_open_netns.) */
	int fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && !nsh_fd_is_netns(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Mark a template used now (gc's idle age), creating the stamp if needed. */
void nsh_template_touch(const struct nsh_template *t)
{
	if (utimensat(AT_FDCWD, t->stamp, NULL, 0) == 0 || errno != ENOENT)
		return;
	int sfd = open(t->stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (sfd >= 0)
		close(sfd);
}

/* Under the state lock: (re)build the template for `eff` and pin it.  The
 * knobs are set and read back before the pin exists, so a pin that exists
 * always has them (a crash leaves at most an empty file, replaced here).
 * The stamp is fresh before the pin exists: a template with no stamp, or
 * with a stamp left from an earlier one, looks idle for ages to gc. */
static int template_build(const char *state_dir, const struct nsh_template *t, struct nshash_sizes eff, int home,
			  struct nshash_error *err)
{
	char dir[PATH_MAX];
	int r = nshash_state_subdir(state_dir, "templates", dir, sizeof(dir), err);
	if (r < 0)
		return r;
	r = nshash_pin_remove(t->path, err);
	if (r < 0)
		return nshash_error_prefix(err, "replace damaged template");
	r = nsh_unshare_net("template parent", err);
	if (r < 0)
		return r;
	cleanup_close int tfd = -1;
	r = nsh_parent_knobs_set(eff, err);
	if (r == 0)
		r = nsh_netns_open_current(&tfd, err);
	int r2 = nsh_netns_return(home, err);
	if (r2 < 0)
		return r2;
	if (r < 0)
		return r;
	nsh_template_touch(t);
	r = nshash_pin_fd(tfd, t->path, err);
	if (r < 0)
		return nshash_error_prefix(err, "pin template");
	return 0;
}

/* Returns an fd on a template known (now) to be a netns; force_rebuild
 * asks for a rebuild even if the pin looks fine (its knobs were found
 * damaged), unless another creator rebuilt it while we waited for the lock. */
int nsh_template_get(const char *state_dir, const struct nsh_template *t, struct nshash_sizes eff, int home,
		     bool force_rebuild, int *tfd, struct nshash_error *err)
{
	if (!force_rebuild) {
		*tfd = nsh_template_open(t);
		if (*tfd >= 0)
			return 0;
	}
	cleanup_close int lockfd = -1;
	int r = nsh_lock_state(state_dir, &lockfd, err);
	if (r < 0)
		return r;
	/* Someone else may have built it while we waited for the lock. */
	*tfd = nsh_template_open(t);
	if (*tfd >= 0 && force_rebuild) {
		bool ok = nsh_netns_enter(*tfd, t->path, err) == 0 && nsh_parent_knobs_are(eff);
		r = nsh_netns_return(home, err);
		if (r < 0) {
			close(*tfd);
			*tfd = -1;
			return r;
		}
		if (ok)
			return 0;
		close(*tfd);
		*tfd = -1;
	}
	if (*tfd >= 0)
		return 0;
	r = template_build(state_dir, t, eff, home, err);
	if (r < 0)
		return r;
	*tfd = nsh_template_open(t);
	if (*tfd < 0)
		return nshash_error_set(err, EIO, "template %s vanished right after it was built", t->path);
	return 0;
}

int nsh_template_fd(const struct nshash_create_opts *opts, int *fd, char *stamp, size_t len)
{
	char sdbuf[PATH_MAX]; /* the default state dir, when none is given */
	struct nsh_template t;
	*fd = -1;
	if (opts->strategy != NSHASH_STRATEGY_TEMPLATE ||
	    nsh_template_paths(nsh_state_dir(opts->state_dir, sdbuf, sizeof(sdbuf)),
			       nshash_sizes_effective(opts->sizes), &t, NULL) < 0)
		return -ENOENT;
	snprintf(stamp, len, "%s", t.stamp);
	*fd = nsh_template_open(&t);
	return *fd >= 0 ? 0 : -ENOENT;
}

int64_t nsh_template_last_used(const char *pin)
{
	char stamp[PATH_MAX + 8];
	struct stat st;
	snprintf(stamp, sizeof(stamp), "%s" NSH_TEMPLATE_STAMP, pin);
	return stat(stamp, &st) == 0 ? (int64_t)st.st_mtime : 0;
}

void nsh_template_forget(const char *pin)
{
	char stamp[PATH_MAX + 8];
	snprintf(stamp, sizeof(stamp), "%s" NSH_TEMPLATE_STAMP, pin);
	unlink(stamp);
}

/* The note's first line, then the caller's text. */
#define NOTE_HEADER "nshash-template-sysctls %llu\n"

int nsh_template_note_read(const char *stamp, ino_t ino, char **text, size_t *len)
{
	char head[64];
	int n = snprintf(head, sizeof(head), NOTE_HEADER, (unsigned long long)ino);
	cleanup_close int fd = open(stamp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *all = NULL;
	size_t all_len = 0;
	if (fd < 0 || nsh_read_fd(fd, stamp, 1u << 20, &all, &all_len, NULL) < 0)
		return -ENOENT;
	if (all_len < (size_t)n || memcmp(all, head, (size_t)n) != 0) {
		free(all);
		return -ENOENT;
	}
	memmove(all, all + n, all_len - (size_t)n + 1);
	*text = all;
	*len = all_len - (size_t)n;
	return 0;
}

void nsh_template_note_write(const char *stamp, ino_t ino, const char *text, size_t len)
{
	char *all = NULL;
	int n = asprintf(&all, NOTE_HEADER "%.*s", (unsigned long long)ino, (int)len, text);
	struct nshash_error ignored;
	if (n >= 0)
		nsh_write_replace(stamp, NULL, all, (size_t)n, NULL, &ignored);
	free(all);
}
