/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A forked helper process and its answers: the one way lib/ runs work in
 * another process.  The helper gets one end of a socket pair and answers
 * with struct nsh_helper_reply (its result, error and netns info), with an
 * fd when it made a netns; the caller reads the answers, with a timeout
 * when it asked for one, and ends and reaps it.
 *
 * Used for network namespace work by callers that could not come back
 * from a netns they enter (nsh_in_child): a process in a user namespace
 * whose own netns belongs to an outer one (rootless podman's hooks,
 * `unshare -Ur` without -n) may create and enter netns owned by its user
 * namespace, but setns back into its own needs privileges over the outer
 * one; and by userns.c, whose helper unshares a user namespace. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

int nsh_can_return(int home)
{
	return setns(home, CLONE_NEWNET) < 0 ? -errno : 0;
}

int nsh_helper_start(struct nsh_helper *h, const char *what, unsigned timeout_s, nsh_helper_fn fn, const void *arg,
		     struct nshash_error *err)
{
	int sv[2];
	h->what = what;
	h->timeout_s = timeout_s;
	h->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return nsh_error_sys(err, errno, "%s: socketpair", what);
	pid_t parent = getpid();
	h->pid = fork();
	if (h->pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return nsh_error_sys(err, e, "%s: fork", what);
	}
	if (h->pid == 0) {
		close(sv[0]);
		/* a caller killed while it waits takes its helper along */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		fn(sv[1], parent, arg);
		_exit(0);
	}
	close(sv[1]);
	h->sock = sv[0];
	return 0;
}

/* Until the helper's answer (or its end) can be read: 0, or -ETIMEDOUT
 * once h->timeout_s have passed (0: no limit) -- counted from the call, so
 * signals arriving all along do not start the wait again. */
static int wait_answer(const struct nsh_helper *h)
{
	int64_t end = nsh_monotonic_ms() + (int64_t)h->timeout_s * 1000;
	for (;;) {
		int64_t left = end - nsh_monotonic_ms();
		if (h->timeout_s && left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = h->sock, .events = POLLIN};
		int n = poll(&p, 1, !h->timeout_s ? -1 : left > INT_MAX ? INT_MAX : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int nsh_helper_send(int sock, const struct nsh_helper_reply *rep, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)rep, .iov_len = sizeof(*rep)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof(*rep) ? 0 : -1;
}

int nsh_helper_recv(const struct nsh_helper *h, const char *stage, struct nsh_helper_reply *rep, int *fd,
		    struct nshash_error *err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = rep, .iov_len = sizeof(*rep)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	char who[96];
	ssize_t n;
	if (stage)
		snprintf(who, sizeof(who), "%s (%s)", h->what, stage);
	else
		snprintf(who, sizeof(who), "%s", h->what);
	int w = wait_answer(h);
	if (w == -ETIMEDOUT)
		return nshash_error_set(err, ETIMEDOUT, "%s: no answer in %u s", who, h->timeout_s);
	if (w < 0)
		return nsh_error_sys(err, -w, "%s: wait for its answer", who);
	while ((n = recvmsg(h->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(*rep))
		return nshash_error_set(err, n < 0 ? errno : EPROTO, "%s: %s", who,
					n < 0 ? strerror(errno) : "died without an answer");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof(int));
			if (fd && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	if (rep->r < 0) {
		if (err)
			*err = rep->err;
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return rep->r;
	}
	return 0;
}

void nsh_helper_end(struct nsh_helper *h, bool kill_it)
{
	if (h->sock >= 0)
		close(h->sock); /* the helper ends */
	h->sock = -1;
	if (kill_it)
		kill(h->pid, SIGKILL);
	while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Is pid running, or waiting in the kernel (uninterruptibly)? */
static bool in_kernel(pid_t pid)
{
	struct nsh_proc_stat st;
	return nsh_proc_stat(pid, &st) == 0 && (st.state == 'R' || st.state == 'D');
}

/* nsh_in_child's helper: the work, then its answer (with the netns made). */
struct in_child {
	nsh_child_fn fn;
	const void *arg;
	bool want_fd;
};

static void in_child_work(int sock, pid_t parent, const void *arg)
{
	const struct in_child *w = arg;
	struct nsh_helper_reply reply = {0};
	int child_fd = -1;
	(void)parent;
	reply.r = w->fn(w->arg, w->want_fd ? &child_fd : NULL, &reply.info, &reply.err);
	nsh_helper_send(sock, &reply, reply.r == 0 ? child_fd : -1);
}

int nsh_in_child(nsh_child_fn fn, const void *arg, unsigned timeout_s, int *fd, struct nshash_netns_info *info,
		 struct nshash_error *err)
{
	struct in_child w = {.fn = fn, .arg = arg, .want_fd = fd != NULL};
	struct nsh_helper h;
	struct nsh_helper_reply reply;
	if (fd)
		*fd = -1;
	int r = nsh_helper_start(&h, "helper process", timeout_s, in_child_work, &w, err);
	if (r < 0)
		return r;
	/* No answer in time: a helper stopped, or asleep in user space (a lock
	 * a thread of the caller held at the fork), never ends; one running or
	 * waiting in the kernel (rtnl_lock under a burst of netns teardown:
	 * SIGKILL would not end it sooner) is slow, and waited for. */
	while ((r = nsh_helper_recv(&h, NULL, &reply, fd, err)) == -ETIMEDOUT && in_kernel(h.pid))
		;
	nsh_helper_end(&h, r < 0); /* (after an answer it only exits) */
	if (r < 0)
		return r;
	if (fd && *fd < 0)
		return nshash_error_set(err, EPROTO, "helper process: no network namespace came back");
	if (info)
		*info = reply.info;
	return 0;
}
