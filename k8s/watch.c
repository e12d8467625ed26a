/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* install: a pass (the binary, then the chain), once or on every change of
 * the CNI dirs (inotify) and every --watch seconds, until SIGTERM.  Logs a
 * line when something was written or the state changed, never the same
 * line every loop; writes the Prometheus status file. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

struct state {
	bool installed, ready;
	unsigned long long writes, refused;
	char last[4800]; /* the state last logged */
	char warned[1200];
};

static void say_once(struct state *s, const char *line)
{
	if (strcmp(s->last, line)) {
		k8s_log("%s", line);
		snprintf(s->last, sizeof(s->last), "%s", line);
	}
}

static void status_write(const struct k8s_opts *o, const struct state *s)
{
	if (!o->status_file)
		return;
	char text[1024];
	snprintf(text, sizeof(text),
		 "# HELP nshash_cni_installed The nshash CNI plugin binary is in the node's CNI bin dir (the image's "
		 "bytes).\n"
		 "# TYPE nshash_cni_installed gauge\n"
		 "nshash_cni_installed %d\n"
		 "# HELP nshash_cni_ready nshash is plugins[0] of the node's active CNI config, with this installer's "
		 "validated entry.\n"
		 "# TYPE nshash_cni_ready gauge\n"
		 "nshash_cni_ready %d\n"
		 "# HELP nshash_cni_chain_writes_total Writes of the node's CNI config by nshash-cni-install.\n"
		 "# TYPE nshash_cni_chain_writes_total counter\n"
		 "nshash_cni_chain_writes_total %llu\n"
		 "# HELP nshash_cni_config_refused_total Times the installer refused to chain (a bad entry or primary "
		 "config), counted when the reason changes.\n"
		 "# TYPE nshash_cni_config_refused_total counter\n"
		 "nshash_cni_config_refused_total %llu\n",
		 s->installed, s->ready, s->writes, s->refused);
	/* the same text is not written again: the status file is in the
	 * watched run dir, and each write is a rename there */
	static char written[sizeof(text)];
	if (!strcmp(written, text))
		return;
	struct nshash_error e;
	if (k8s_write_atomic(o->status_file, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1, &e) < 0) {
		static char said[1100];
		if (strcmp(said, e.msg)) {
			k8s_log("status file: %s", e.msg);
			snprintf(said, sizeof(said), "%s", e.msg);
		}
		return;
	}
	snprintf(written, sizeof(written), "%s", text);
}

static bool uninstalled(const struct k8s_opts *o, char *marker, size_t len)
{
	if (!o->run_dir || !*o->run_dir)
		return false;
	snprintf(marker, len, "%s/%s", o->run_dir, K8S_MARKER);
	return access(marker, F_OK) == 0;
}

static void pass(struct k8s_ctx *c, struct state *s)
{
	const struct k8s_opts *o = c->o;
	char line[4800], marker[4200], dst[4200];
	struct nshash_error e;
	snprintf(dst, sizeof(dst), "%s/nshash", o->bin_dir);
	int lock = k8s_lock(o->net_dir, &e);
	if (lock < 0) {
		s->ready = false;
		s->installed = k8s_same_file(o->plugin, dst);
		say_once(s, e.msg);
		return;
	}
	/* under the lock: an uninstall that wrote the marker first and then
	 * took the lock is never undone by a pass */
	if (uninstalled(o, marker, sizeof(marker))) {
		k8s_unlock(lock);
		s->ready = false;
		s->installed = k8s_same_file(o->plugin, dst);
		snprintf(line, sizeof(line),
			 "%s: `uninstall` was run here: not chaining any more (the pod's replacement, a new install, "
			 "starts without this marker)",
			 marker);
		say_once(s, line);
		return;
	}
	int b = k8s_install_binary(o, &e);
	s->installed = b >= 0;
	if (b < 0) {
		k8s_unlock(lock);
		s->ready = false;
		snprintf(line, sizeof(line), "%s; not chaining without the plugin in place", e.msg);
		say_once(s, line);
		return;
	}
	if (b > 0) {
		k8s_log("installed %s (from %s)", dst, o->plugin);
		s->last[0] = '\0';
	}
	char done[1400], same[4400];
	enum k8s_pass p = k8s_chain(c, done, sizeof(done), &e);
	snprintf(same, sizeof(same), "nshash is first in %s (nothing to write)", c->chained);
	k8s_unlock(lock);
	if (c->warning[0] && strcmp(c->warning, s->warned)) {
		k8s_log("note: %s", c->warning);
		snprintf(s->warned, sizeof(s->warned), "%s", c->warning);
	}
	switch (p) {
	case K8S_WROTE:
		s->writes++;
		s->ready = true;
		k8s_log("%s", done);
		snprintf(s->last, sizeof(s->last), "%s", same); /* the pass our own write wakes */
		break;
	case K8S_UNCHANGED:
		s->ready = true;
		say_once(s, same);
		break;
	case K8S_REFUSED:
	case K8S_FAILED:
		s->ready = false;
		snprintf(line, sizeof(line), "%s%s", p == K8S_REFUSED ? "refused: " : "error: ", e.msg);
		/* not counted: no config yet, a primary writing its file */
		if (strcmp(s->last, line) && p == K8S_REFUSED && e.errnum != ENOENT && e.errnum != EAGAIN)
			s->refused++;
		say_once(s, line);
		break;
	}
}

/* The watch of the run dir: only the uninstall marker's events there wake
 * a pass (the status file lives there too, rewritten after passes). */
static int run_wd = -1;

static int watch_fd(const struct k8s_opts *o)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return -1;
	uint32_t mask = IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_MODIFY;
	if (inotify_add_watch(fd, o->net_dir, mask) < 0 ||
	    inotify_add_watch(fd, o->bin_dir, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		close(fd);
		return -1;
	}
	run_wd = -1;
	if (o->run_dir && *o->run_dir)
		run_wd = inotify_add_watch(fd, o->run_dir, IN_CREATE | IN_MOVED_TO);
	return fd;
}

/* Read every queued event: true when one is worth a pass (any of the CNI
 * dirs', the marker's in the run dir, an overflow). */
static bool drain(int fd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool wake = false;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->wd != run_wd || (ev->mask & IN_Q_OVERFLOW) ||
			    (ev->len && !strcmp(ev->name, K8S_MARKER)))
				wake = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	return wake;
}

int k8s_install(struct k8s_ctx *c)
{
	const struct k8s_opts *o = c->o;
	struct state s = {0};
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	int sfd = -1, ifd = -1;
	if (o->watch) {
		/* signalfd: PID 1 of a container has no default action for
		 * SIGTERM; this one stops within a poll's wake-up */
		sigprocmask(SIG_BLOCK, &set, NULL);
		sfd = signalfd(-1, &set, SFD_CLOEXEC);
		if (sfd < 0) {
			k8s_log("signalfd: %s", strerror(errno));
			return 1;
		}
	}
	/* watched before the first pass: a change during it wakes the next */
	if (o->watch)
		ifd = watch_fd(o);
	pass(c, &s);
	status_write(o, &s);
	if (!o->watch)
		return s.ready ? 0 : 1;
	k8s_log("watching %s and %s (inotify, and every %u s)", o->net_dir, o->bin_dir, o->watch);
	for (;;) {
		if (ifd < 0) /* a dir not there yet: polled, inotify tried again */
			ifd = watch_fd(o);
		struct pollfd p[2] = {{sfd, POLLIN, 0}, {ifd, POLLIN, 0}};
		int n = poll(p, ifd >= 0 ? 2 : 1, (int)(o->watch * 1000u));
		if (n < 0 && errno != EINTR) {
			k8s_log("poll: %s", strerror(errno));
			return 1;
		}
		if (n > 0 && (p[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				k8s_log("signal %u: stopping; nshash stays chained (the next installer takes over; "
					"`uninstall` removes it)",
					si.ssi_signo);
				return 0;
			}
		}
		if (n > 0 && ifd >= 0 && (p[1].revents & POLLIN)) {
			/* a burst of events (a primary writing its file, our own
			 * rename) is one pass: drain, settle 100 ms, drain */
			if (!drain(ifd))
				continue; /* only the run dir's status file */
			struct pollfd q = {sfd, POLLIN, 0};
			if (poll(&q, 1, 100) > 0)
				continue; /* the signal is read above */
			(void)drain(ifd);
		}
		if (ifd >= 0 && (p[1].revents & (POLLERR | POLLHUP))) {
			close(ifd);
			ifd = -1;
		}
		pass(c, &s);
		status_write(o, &s);
	}
}
