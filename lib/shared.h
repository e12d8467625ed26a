/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The library's helpers for files and for one process's /proc entries,
 * used inside lib/ and also by common/ (and through common.h by the
 * front-ends, which link libnshash.a): one copy of each.  Not installed,
 * not exported from libnshash.so (nsh_ = internal).  No state, no
 * printing. */
#ifndef NSH_SHARED_H
#define NSH_SHARED_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "nshash.h"

/* CLOCK_MONOTONIC in milliseconds: deadlines and waits. */
static inline int64_t nsh_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct stat;

/* Cleanup attributes: a variable so declared is freed (cleanup_free) or
 * closed (cleanup_close, when >= 0, errno kept) when it goes out of scope,
 * on every path. */
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

/* error.c: nshash_error_set with ": " and strerror(errnum) appended (the
 * sign of errnum does not matter): "what: to what: why". */
__attribute__((format(printf, 3, 4))) int nsh_error_sys(struct nshash_error *err, int errnum, const char *fmt, ...);

/* fs.c: read all of fd (at most max bytes; exactly max is fine) into a
 * NUL-terminated malloc'd buffer.  Errors: "read WHAT: why". */
int nsh_read_fd(int fd, const char *what, size_t max, char **out, size_t *out_len, struct nshash_error *err);
/* fs.c: write all of p (retrying short writes and EINTR): 0, or -1 with errno. */
int nsh_write_all(int fd, const char *p, size_t len);
/* fs.c: replace `path` by a file holding data[len], atomically: written
 * to a temporary file in the same directory, synced, then renamed over
 * it.  The temporary file is `tmp` when given (a fixed name: the caller
 * holds a lock; a stale one is removed first), else PATH.nshash-XXXXXX.
 * It gets the owner and mode of `like` (a file being rewritten) when
 * given, else the caller's and 0600.  On failure nothing but `path` as it
 * was is left.  Errors: "write PATH: why". */
int nsh_write_replace(const char *path, const char *tmp, const char *data, size_t len, const struct stat *like,
		      struct nshash_error *err);

/* fs.c: NULL when `path` is a clean absolute path (no "..", "." or empty
 * component, no control character, shorter than PATH_MAX), else why not
 * ("is not an absolute path", "contains \"..\"", ...).  The one check of
 * paths that come from configuration (the policy's stateDir, hookPath,
 * logFile; the CNI config's stateDir; $XDG_RUNTIME_DIR). */
const char *nsh_path_unclean(const char *path);

/* statedir.c: the state dir when none is given (a NULL or "" state_dir in
 * the API, no --state-dir, stateDir or NSHASH_STATE_DIR): the one rule, so
 * that a library caller and every front-end get the same directory.
 * NSHASH_DEFAULT_STATE_DIR (/run/nshash) for root of the initial user
 * namespace; otherwise (a user, or root of a user namespace such as
 * rootless podman's hooks) $XDG_RUNTIME_DIR/nshash, else
 * /run/user/UID/nshash with UID the caller's uid outside any user
 * namespace. */
void nsh_default_state_dir(char *out, size_t len);
/* statedir.c: `dir`, or when it is NULL or "" the default written into buf. */
const char *nsh_state_dir(const char *dir, char *buf, size_t len);

/* proc.c: /proc/PID/comm without its newline, every byte that is not
 * printable ASCII as '?' (safe to print); "" when unreadable.  Its length. */
size_t nsh_proc_comm(pid_t pid, char *buf, size_t len);
/* proc.c: the fields of /proc/PID/stat nshash uses. */
struct nsh_proc_stat {
	char state;	/* field 3: R, S, D, Z, ... */
	pid_t ppid;	/* field 4 */
	uint64_t start; /* field 22: start time, clock ticks (USER_HZ) since boot */
};
/* 0, -errno (-ENOENT: gone), or -EINVAL when it cannot be parsed. */
int nsh_proc_stat(pid_t pid, struct nsh_proc_stat *st);
/* proc.c: the process (thread group) of thread `tid`; -errno. */
pid_t nsh_proc_tgid(pid_t tid);

/* ns.c: open a netns path from anywhere (a container's config, CNI_NETNS, the
 * command line) without ever opening anything but nsfs: O_PATH first (no
 * device open, no FIFO block, no tty), the final symlink not followed
 * unless `follow` or it is /proc's own ns link, then nsfs and the netns
 * type checked before the real open.  0 with *fd; 0 with *fd = -1 and
 * *not_netns saying what is there instead; -errno when it cannot be opened. */
int nsh_path_open_netns(const char *path, bool follow, int *fd, const char **not_netns);

/* pin.c: what a container left beside its netns pin: STATE_DIR/SUB/NAME
 * whose STATE_DIR/pins/NAME is gone and that is older than min_age
 * seconds (its mtime), each handed to `remove` (0: removed).  How many
 * were removed; -errno when SUB cannot be read (absent: 0). */
struct stat;
typedef int (*nsh_unpinned_fn)(const char *path, const struct stat *st, void *ctx);
int nsh_sweep_unpinned(const char *state_dir, const char *sub, int64_t min_age, nsh_unpinned_fn remove, void *ctx,
		       struct nshash_error *err);

#endif
