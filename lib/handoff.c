/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Handing a pinned netns over to a container: wait, without spinning, until
 * the container's first process lives in it, so that the pin can go and the
 * container alone holds the netns.  A runtime joins a netns path by opening
 * it (setns, then close): inotify reports the close on the pin's nsfs inode,
 * and a deletion in the pin's directory (the pin removed by someone else).
 * An inotify instance counts against the user's fs.inotify.
 * max_user_instances (128 for root by default, shared with systemd, kubelet
 * and every other root daemon): at most HANDOFF_SLOTS waiters per pin
 * directory hold one, each under a lock on DIR/.handoff.N; the others look
 * once a second (as every waiter does besides) and take a slot when one is
 * free.
 * The process that counts is a thread group leader in the netns whose mount
 * namespace is not the caller's: a runtime's init unshares its own right
 * after joining, while a tool looking in from the host (`nshash stats`)
 * enters from a thread of a process in the host's. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "internal.h"

#define TICK_MS	      1000 /* check the pin and look again at least this often */
#define BACKOFF_MAX   256  /* after a close: look again at 1, 2, 4 ... ms */
#define HANDOFF_SLOTS 8	   /* waiters per pin directory with an inotify instance */

/* The directory part of the pin's path into dir (its name is h->name). */
static void pin_dir(const char *pin, const struct nshash_handoff *h, char dir[PATH_MAX])
{
	size_t n = strlen(pin) - strlen(h->name) - 1;
	memcpy(dir, pin, n);
	dir[n] = '\0';
}

/* A free slot of DIR: the locked file's fd, -1 when all are taken (or
 * cannot be made: then nobody gets inotify, everyone looks each second). */
static int take_slot(const char *dir)
{
	char path[PATH_MAX + 32];
	for (int i = 0; i < HANDOFF_SLOTS; i++) {
		snprintf(path, sizeof(path), "%s/.handoff.%d", dir, i);
		int fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* With a slot: an inotify instance watching the pin and its directory.
 * Without one (or when inotify fails: EMFILE), fd stays -1: the wait
 * looks each second. */
static int watch(struct nshash_handoff *h, const char *pin, struct nshash_error *err)
{
	char dir[PATH_MAX];
	pin_dir(pin, h, dir);
	h->slot = take_slot(dir);
	if (h->slot < 0)
		return 0;
	h->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (h->fd < 0) {
		close(h->slot);
		h->slot = -1;
		return 0;
	}
	if (inotify_add_watch(h->fd, pin, IN_CLOSE | IN_DONT_FOLLOW) < 0 ||
	    (h->dir_wd = inotify_add_watch(h->fd, dir, IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR)) < 0) {
		int e = errno;
		nshash_handoff_end(h);
		return nsh_error_sys(err, e, "hand over %s: watch it", pin);
	}
	return 0;
}

int nshash_handoff_start(const char *pin, struct nshash_handoff *h, struct nshash_error *err)
{
	char dir[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(pin, '/');

	h->fd = -1;
	h->slot = -1;
	if (!slash || slash == pin || (size_t)(slash - pin) >= sizeof(dir))
		return nshash_error_set(err, EINVAL, "hand over %s: not an absolute path to a pin", pin);
	memcpy(dir, pin, (size_t)(slash - pin));
	dir[slash - pin] = '\0';
	if (strlen(slash + 1) >= sizeof(h->name))
		return nshash_error_set(err, ENAMETOOLONG, "hand over %s: name too long", pin);
	snprintf(h->name, sizeof(h->name), "%s", slash + 1);
	if (stat(pin, &st) < 0)
		return nsh_error_sys(err, errno, "hand over %s", pin);
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	if (stat("/proc/self/ns/mnt", &st) < 0)
		return nsh_error_sys(err, errno, "hand over %s: /proc/self/ns/mnt", pin);
	h->mnt_ino = st.st_ino;
	return watch(h, pin, err);
}

void nshash_handoff_end(struct nshash_handoff *h)
{
	if (h->fd >= 0)
		close(h->fd);
	if (h->slot >= 0)
		close(h->slot); /* the slot is free for the next waiter */
	h->fd = -1;
	h->slot = -1;
}

/* The pin still there, still this netns? */
static bool still_pinned(const struct nshash_handoff *h, const char *pin)
{
	struct stat st;
	return stat(pin, &st) == 0 && st.st_dev == h->dev && st.st_ino == h->ino;
}

/* A thread group leader in the netns, outside the caller's mount
 * namespace: its pid, 0 none, -errno. */
static pid_t joined(const struct nshash_handoff *h)
{
	struct nsh_scan_item it = {.ino = h->ino, .want = NSH_SCAN_LEADERS, .not_mnt = h->mnt_ino};
	int r = nsh_netns_scan(&it, 1, true, 0);
	return r < 0 ? r : it.pid;
}

/* Read what inotify has; true if the pin was closed by someone, or
 * removed (or its directory): a reason to look.  Other pins' removals in
 * the same directory are not (every waiting child would scan /proc). */
static bool drain(const struct nshash_handoff *h)
{
	int fd = h->fd;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool closed = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->wd != h->dir_wd || (ev->mask & (IN_DELETE_SELF | IN_IGNORED)) ||
			    (ev->len && strcmp(ev->name, h->name) == 0))
				closed = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	return closed;
}

pid_t nshash_handoff_wait(struct nshash_handoff *h, const char *pin, unsigned timeout_ms, struct nshash_error *err)
{
	int64_t deadline = nsh_monotonic_ms() + timeout_ms, looked = nsh_monotonic_ms();
	int backoff = 0;

	for (;;) {
		int64_t left = deadline - nsh_monotonic_ms();
		if (left <= 0)
			return 0;
		int wait = backoff ? backoff : TICK_MS;
		struct pollfd p = {.fd = h->fd, .events = POLLIN}; /* fd -1: a plain sleep */
		int n = poll(&p, 1, left < wait ? (int)left : wait);
		if (n < 0 && errno != EINTR)
			return nsh_error_sys(err, errno, "wait for a process in %s: poll", pin);
		bool closed = n > 0 && drain(h);
		if (n > 0 && !closed && nsh_monotonic_ms() - looked < TICK_MS)
			continue; /* another pin's removal */
		looked = nsh_monotonic_ms();
		if (!still_pinned(h, pin))
			return nshash_error_set(err, ENOENT, "%s: removed or replaced meanwhile", pin);
		struct nshash_error ignored;
		if (h->fd < 0) /* a slot may be free by now (else: look each second) */
			watch(h, pin, &ignored);
		pid_t pid = joined(h);
		if (pid < 0)
			return nsh_error_sys(err, -pid, "wait for a process in %s: /proc", pin);
		if (pid > 0)
			return pid;
		/* a runtime's init unshares its mount namespace just after it
		 * joined: look again soon after each close */
		if (closed)
			backoff = 1;
		else if (backoff)
			backoff = backoff >= BACKOFF_MAX ? 0 : backoff * 2;
	}
}
