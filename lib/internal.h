/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the library's files; not installed. */
#ifndef NSHASH_INTERNAL_H
#define NSHASH_INTERNAL_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "nshash.h"

static inline void nsh_freep(void *p)
{
	free(*(void **)p);
}
static inline void nsh_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define cleanup_free  __attribute__((cleanup(nsh_freep)))
#define cleanup_close __attribute__((cleanup(nsh_closep)))

#define NSH_SYSCTL_DIR	"/proc/sys/net/ipv4/"
#define NSH_TCP_ENTRIES "tcp_ehash_entries"
#define NSH_UDP_ENTRIES "udp_hash_entries"
#define NSH_TCP_CHILD	"tcp_child_ehash_entries"
#define NSH_UDP_CHILD	"udp_child_hash_entries"

/* sysctl.c: read/write a net.ipv4 value in the calling thread's netns.
 * Return 0, -ENOENT when the knob does not exist, or -errno. */
int nsh_sysctl_read(const char *name, long *value);
int nsh_sysctl_write(const char *name, long value);

/* ns.c: the calling thread's netns. */
int nsh_netns_open_current(int *fd, struct nshash_error *err);
/* setns into nsfd; on failure err says what. */
int nsh_netns_enter(int nsfd, const char *what, struct nshash_error *err);
/* Return to `home`.  If that fails the thread is stranded in another netns:
 * the error says so loudly. */
int nsh_netns_return(int home, struct nshash_error *err);
/* Read the tables of the calling thread's netns. `full` adds child knobs and
 * derived limits (slower in a fresh netns). */
int nsh_read_info_here(struct nshash_netns_info *info, bool full, struct nshash_error *err);
int nsh_fd_is_netns(int fd);
/* A process (not this one) whose netns is the nsfs inode dev:ino; 0 if none,
 * -errno if /proc cannot be read. */
pid_t nsh_netns_user(dev_t dev, ino_t ino);

/* pin.c: create PATH empty with O_EXCL ("WHAT PATH: already exists"). */
int nsh_pin_claim(const char *path, const char *what, struct nshash_error *err);
/* pin.c: bind-mount the netns behind nsfd onto an existing file; -errno. */
int nsh_bind_fd(int nsfd, const char *path);

/* probe.c: "kernel R has no net.ipv4.X (needs Linux V)", EOPNOTSUPP. */
int nsh_knob_missing(enum nshash_proto proto, const char *release, struct nshash_error *err);

/* link.c */
int nsh_loopback_up(struct nshash_error *err);

/* fs.c: mkdir -p, then check it is a directory. */
int nsh_mkdir_p(const char *path, mode_t mode, struct nshash_error *err);

/* state.c */
const char *nsh_state_dir(const char *dir);
int nsh_lock_state(const char *state_dir, int *lockfd, struct nshash_error *err);
void nsh_template_name(struct nshash_sizes eff, char *buf, size_t len);

#endif
