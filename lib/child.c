/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network namespace work in a forked child, for callers that could not come
 * back from a netns they enter: a process in a user namespace whose own
 * netns belongs to an outer one (rootless podman's hooks, `unshare -Ur`
 * without -n) may create and enter netns owned by its user namespace, but
 * setns back into its own needs privileges over the outer one.  The child
 * does the work and exits; its result, error, netns info and (for a
 * creation) an fd to the new netns come back over a socket pair. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

struct child_reply {
	int r;
	struct nshash_error err;
	struct nshash_netns_info info;
};

int nsh_can_return(int home)
{
	return setns(home, CLONE_NEWNET) < 0 ? -errno : 0;
}

static void child_send(int sock, const struct child_reply *reply, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)reply, .iov_len = sizeof(*reply)};
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
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static int parent_receive(int sock, struct child_reply *reply, int *fd, struct nshash_error *err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = reply, .iov_len = sizeof(*reply)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(*reply))
		return nshash_error_set(err, n < 0 ? errno : EPROTO, "helper process: %s",
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
	return 0;
}

int nsh_in_child(nsh_child_fn fn, const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err)
{
	int sv[2];
	if (fd)
		*fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return nsh_error_sys(err, errno, "helper process: socketpair");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return nsh_error_sys(err, e, "helper process: fork");
	}
	if (pid == 0) {
		struct child_reply reply = {0};
		int child_fd = -1;
		close(sv[0]);
		reply.r = fn(arg, fd ? &child_fd : NULL, &reply.info, &reply.err);
		child_send(sv[1], &reply, reply.r == 0 ? child_fd : -1);
		_exit(0);
	}
	close(sv[1]);
	struct child_reply reply;
	int r = parent_receive(sv[0], &reply, fd, err);
	close(sv[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return r;
	if (reply.r < 0) {
		if (err)
			*err = reply.err;
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return reply.r;
	}
	if (fd && *fd < 0)
		return nshash_error_set(err, EPROTO, "helper process: no network namespace came back");
	if (info)
		*info = reply.info;
	return 0;
}
