/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the library's files; not installed. */
#ifndef NSH_INTERNAL_H
#define NSH_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nshash.h"
#include "shared.h"

#define NSH_SYSCTL_DIR	"/proc/sys/net/ipv4/"
#define NSH_TCP_ENTRIES "tcp_ehash_entries"
#define NSH_UDP_ENTRIES "udp_hash_entries"
#define NSH_TCP_CHILD	"tcp_child_ehash_entries"
#define NSH_UDP_CHILD	"udp_child_hash_entries"

/* sysctl.c: read/write a net.ipv4 value in the calling thread's netns.
 * Return 0, -ENOENT when the knob does not exist, or -errno. */
int nsh_sysctl_read(const char *name, long *value);
/* The same relative to an fd of NSH_SYSCTL_DIR opened in the netns
 * (nsh_sysctl_dir_open: fd or -errno).  With many netns, every path lookup
 * under /proc/sys/net walks one dentry per live netns that looked there
 * (~0.5 ms at 2000, ~2 ms in a fresh netns; docs/kernel.md): open the
 * directory once per netns and read its files relative to it. */
int nsh_sysctl_dir_open(void);
/* The same through `proc` (a root fd from nsh_proc_private), or the
 * caller's /proc when proc < 0. */
int nsh_sysctl_dir_open_in(int proc);
/* A proc instance of our own (fsopen + fsmount, attached nowhere): lookups
 * through it compare only against the dentries made through it, never the
 * host's.  Its root fd, or -errno (no new mount API, seccomp, a user
 * namespace without a visible /proc...: use the caller's /proc then).  It
 * costs ~50 us to make and ~250 us of CPU when its last fd closes (the
 * unmount waits for an RCU grace period): for background work that looks
 * into many fresh netns and for scans of many netns (stats.c renews one
 * every 32), not for a caller's own path. */
int nsh_proc_private(void);
/* Private proc instances for a scan of many netns, a new one every
 * NSH_PROC_ROUND netns (stats.c, gc.c).  Each netns's /proc/sys lookup
 * compares one dentry per netns looked at through the same instance
 * (docs/design.md "Cost"): through the host's /proc that is every netns on
 * the node, so a scan grew with the square of their number.  Through an
 * instance renewed every NSH_PROC_ROUND netns a lookup compares fewer than
 * that, and the dentries made go with the instance, never into the host's
 * cache.  32 balances the compares (~0.6 us each at the fresh lookup)
 * against an instance's teardown (150-750 us).  Caller-owned state:
 * NSH_PROC_ROUND_INIT, then nsh_proc_round_next() before each netns (the
 * proc root to read it through, or -1: the caller's /proc when no private
 * instance can be made), nsh_proc_round_end() when done. */
#define NSH_PROC_ROUND 32
struct nsh_proc_round {
	int proc; /* the current private proc root, -1 none yet */
	unsigned used;
	bool failed; /* no private proc here: the caller's /proc */
};
#define NSH_PROC_ROUND_INIT                                                                                            \
	{                                                                                                              \
		.proc = -1, .used = 0, .failed = false                                                                 \
	}
int nsh_proc_round_next(struct nsh_proc_round *r);
void nsh_proc_round_end(struct nsh_proc_round *r);
int nsh_sysctl_read_at(int dirfd, const char *name, long *value);
int nsh_sysctl_write(const char *name, long value);
/* Any sysctl file's text (relative to dirfd, or absolute with AT_FDCWD),
 * its trailing newlines removed; and a write of `value` as it is.  0 or
 * -errno (-EIO for a short write). */
int nsh_sysctl_text(int dirfd, const char *path, char *buf, size_t len);
int nsh_sysctl_put(int dirfd, const char *path, const char *value);

/* spare.c: STATE/spares bound onto itself (nshash_pin_dir_prepare) with no
 * spare left in it, no filler and no taker at work: unmount it, so that
 * nothing of nshash stays mounted (rm -rf STATE works).  1 done, 0 nothing
 * to do (not bound, spares left, busy), or -errno. */
int nsh_spares_dir_release(const char *state_dir);

/* ns.c: the calling thread's netns. */
int nsh_netns_open_current(int *fd, struct nshash_error *err);
/* unshare(CLONE_NEWNET) ("unshare a network namespace (WHAT): why"). */
int nsh_unshare_net(const char *what, struct nshash_error *err);
/* setns into nsfd; on failure err says what. */
int nsh_netns_enter(int nsfd, const char *what, struct nshash_error *err);
/* Return to `home`.  If that fails the thread is stranded in another netns:
 * the error says so loudly. */
int nsh_netns_return(int home, struct nshash_error *err);
/* A field of /proc/PID/mountinfo (a path) in place: cut at its end (the
 * next space) and unescaped (the kernel writes space, tab, newline and
 * backslash as \ooo).  Returns s. */
char *nsh_mountinfo_field(char *s);
/* Is capability `cap` (CAP_*) in this thread's effective set? */
bool nsh_cap_in_effect(int cap);
/* NS_GET_ID of a namespace fd (Linux 6.18): its 64-bit id, never reused;
 * 0 when the kernel has no such ioctl. */
uint64_t nsh_ns_get_id(int nsfd);
/* nshash_netns_id's fallback before Linux 6.18: SO_NETNS_COOKIE of a socket
 * made inside nsfd's netns (the thread enters it and comes back). */
int nsh_netns_cookie(int nsfd, uint64_t *cookie, struct nshash_error *err);
/* Read the tables of the calling thread's netns (through `proc`, see
 * nsh_sysctl_dir_open_in). `full` adds child knobs and derived limits
 * (slower in a fresh netns). */
int nsh_read_info_here(int proc, struct nshash_netns_info *info, bool full, struct nshash_error *err);
/* ns.c: nshash_inspect_fd, and *fd a new fd on the same netns opened from
 * inside it (through nsfs's own mount).  A bind mount or open_tree clone
 * made from an fd opened through a mount that was since detached (a taken
 * spare's) makes, in a shared directory, copies in the peers that an
 * unmount does not reach (Linux 6.18): their netns would outlive the pin.
 * info NULL: only the reopen, no /proc/sys lookup (each one compares
 * against a dentry of every live netns that looked there: docs/kernel.md). */
int nsh_inspect_reopen(int nsfd, int *fd, struct nshash_netns_info *info, struct nshash_error *err);
/* nshash_inspect_path reading the sysctls through `proc` (a private proc
 * root, nsh_proc_round_next; -1: the caller's /proc). */
int nsh_inspect_path_in(const char *path, int proc, struct nshash_netns_info *info, struct nshash_error *err);
/* The same for a netns fd (nsh_path_open_netns's): a caller that has the
 * pin open already looks it up once (gc.c: a path walk through a directory
 * of thousands of mount points costs more as they grow). */
int nsh_inspect_fd_in(int nsfd, int proc, struct nshash_netns_info *info, struct nshash_error *err);
int nsh_fd_is_netns(int fd);
/* scan.c: a process (not this one) whose thread group leader is in the
 * netns with nsfs inode dev:ino; 0 if none, -errno if /proc cannot be read. */
pid_t nsh_netns_user(dev_t dev, ino_t ino);
/* scan.c: a thread (not of this process) of the cgroup at `cgfd` or of
 * one of its descendants (cgroup v2 cgroup.threads, v1 tasks) that is in
 * the netns with nsfs inode `ino`: its tid, 0 none, -E2BIG when the
 * subtree holds more than NSH_CGROUP_MAX_THREADS threads, directories or
 * levels than the bounds below (nothing is proven), -errno.  The cost is
 * the cgroup's threads, not the node's processes. */
#define NSH_CGROUP_MAX_THREADS 65536
#define NSH_CGROUP_MAX_DIRS    4096
#define NSH_CGROUP_MAX_DEPTH   32
pid_t nsh_cgroup_netns_user(int cgfd, uint64_t ino);
/* Call fn for each process with the stat of its /proc/PID/ns/net, in pid
 * order, until fn returns non-zero (returned); -errno if /proc cannot be read. */
struct stat;
int nsh_proc_netns_each(int (*fn)(pid_t pid, const struct stat *ns, void *arg), void *arg);

/* scan.c: what holds a netns alive.  Each item names the sources that count
 * for it; the scan sets `held` to the first source found and `pid` to the
 * process (0 for none). */
enum nsh_scan_source {
	NSH_SCAN_LEADERS = 1, /* /proc/PID/ns/net of a thread group leader */
	NSH_SCAN_THREADS = 2, /* /proc/PID/task/TID/ns/net of any thread */
	NSH_SCAN_FDS = 4,     /* an open fd of any process: /proc/PID/fd/N -> net:[INO] */
	NSH_SCAN_MOUNTS = 8,  /* an nsfs bind mount in any process's mount namespace */
	NSH_SCAN_SKIP_SELF = 16,
};
struct nsh_scan_item {
	uint64_t ino;
	uint64_t id;	  /* its 64-bit id (NS_GET_ID), 0 unknown: only a netns with it holds it */
	unsigned want;	  /* enum nsh_scan_source bits */
	uint64_t not_mnt; /* a leader in this mount namespace does not count (0: any does) */
	unsigned held;	  /* out: the source that holds it, 0 = nothing found */
	pid_t pid;	  /* out */
};
/* One pass over /proc for all items (cheap sources first, stops when every
 * item is resolved).  Returns how many are held, -ETIMEDOUT when it took
 * longer than max_ms (0 = no limit; what was found so far is marked),
 * -EACCES when some process's sources could not be read and items are
 * left, or -errno when /proc cannot be read. */
int nsh_netns_scan(struct nsh_scan_item *items, size_t n, bool skip_self, unsigned max_ms);
/* The same scan for one netns (nsfs inode `ino`), telling fn of each
 * process that holds it through a source in `want` (NSH_SCAN_LEADERS,
 * _THREADS, _FDS, _MOUNTS; NSH_SCAN_SKIP_SELF leaves this process out):
 * fn(pid, source, entry, arg), `entry` the thread's tid or the fd number
 * (NULL for a leader or a mount).  Once per process and source: leaders
 * and threads of every process first, then fds and mounts, each pass in
 * pid order (a process may be told of twice, once per pass).  Stops at the
 * first non-zero fn returns, and returns that; else 0, -EACCES when some
 * process's sources could not be read, or -errno. */
typedef int (*nsh_holder_fn)(pid_t pid, unsigned source, const char *entry, void *arg);
int nsh_netns_holders(uint64_t ino, unsigned want, nsh_holder_fn fn, void *arg);
/* The same among the processes pids[] only (in that order): a cost of
 * theirs, not of the node's.  pids NULL: every process. */
int nsh_netns_holders_among(uint64_t ino, unsigned want, const pid_t *pids, size_t npids, nsh_holder_fn fn,
			    void *arg);
/* stats.c: a socket in use in the calling thread's netns, by the kernel's
 * per-protocol counts (/proc/net/protocols): every unix, netlink, packet
 * and raw socket, UDP once bound or connected, TCP once listening or
 * connected (not one only bound), wherever its owner lives now.  `kind`
 * gets the first protocol with one ("UDP", "UNIX", "NETLINK"...), "" for
 * none.  0 or -errno. */
int nsh_sockets_in_use_here(char *kind, size_t len);
/* occupancy.c: was the netns whose nsfs inode is `ns` pinned (its ctime)
 * over a clock tick after the engine -- process `engine`, 0 for the
 * caller's parent -- started?  Then that engine made it. */
bool nsh_pinned_after_start(pid_t engine, const struct stat *ns);
/* Was the netns nsfd (nsfs inode `ns`) made for this start by the engine
 * running the caller (`engine`, 0 for the caller's parent): owned by the
 * initial user namespace (only host root can enter it), pinned since that
 * engine started and within the last NSH_ENGINE_FRESH_S seconds (a start's
 * netns is pinned moments before its network plugin and hooks run; another
 * container's was pinned when that container started)?  docs/design.md,
 * "Who can be in the engine's netns". */
#define NSH_ENGINE_FRESH_S 30
bool nsh_engine_fresh_netns(int nsfd, const struct stat *ns, pid_t engine);
/* Its clock part: pinned (ctime) at most NSH_ENGINE_FRESH_S seconds before
 * `now`, and not after it (a second of slack). */
bool nsh_pin_recent(time_t now, const struct stat *ns);
/* A scan is two passes over /proc in pid order (threads, then fds and
 * mounts); a position in it: */
struct nsh_scan_pos {
	unsigned pass; /* 0 threads, 1 fds and mounts, 2 done */
	pid_t pid;     /* the first process of that pass not fully seen */
	unsigned sub;  /* of its threads, fds and mount lines, those seen */
};
/* The same scan from *pos on (NULL: from the start); *pos becomes where a
 * scan cut by max_ms stopped (-ETIMEDOUT), {2, 0} when it got to the end.
 * An item not found by scans that together cover the whole sequence was
 * held by nothing the moment each part looked (see ledger.c). */
int nsh_netns_scan_from(struct nsh_scan_item *items, size_t n, bool skip_self, unsigned max_ms,
			struct nsh_scan_pos *pos);
/* The scan could not see everything (time limit, or -EACCES: a process's
 * /proc could not be read, e.g. without CAP_SYS_PTRACE): whatever it did
 * not find may still be held. */
#define NSH_SCAN_INCOMPLETE(r) ((r) == -ETIMEDOUT || (r) == -EACCES)
/* Which of paths[] (absolute) are mount points in a mount namespace other
 * than the caller's (any mount on them, read from the mount table of one
 * process per mount namespace and root): mounted[i].  0, -EACCES when some
 * process's table could not be read (what is unmarked may be mounted
 * there), or -errno. */
int nsh_mounted_elsewhere(const char *const *paths, size_t n, bool *mounted);

/* ledger.c: the table ledger (STATE_DIR/ledger), one entry per line.  An
 * entry's pin points into nsh_ledger.text. */
#define NSH_LEDGER_ID_LEN 16
struct nsh_ledger_entry {
	char kind; /* 'R' reserved, 'N' netns, 'X' gone */
	char id[NSH_LEDGER_ID_LEN + 1];
	uint64_t bytes;
	struct nshash_sizes sizes; /* effective */
	uint64_t ino;		   /* N */
	uint64_t ctime_ns;	   /* N: its nsfs inode's ctime at commit, 0 = unknown */
	int handle_type;	   /* N: nsfs file handle (name_to_handle_at), */
	unsigned handle_len;	   /* 0 = none: opening it tells whether the */
	unsigned char handle[32];  /* netns still exists (ESTALE when gone) */
	pid_t pid;		   /* R: the creator and its start time, */
	uint64_t start;
	uint64_t pidns; /* R: in this PID namespace (nsfs inode; 0 = unknown, an older line) */
	int64_t time;
	const char *pin; /* "" = none */
	size_t seq;	 /* line number */
	bool drop;	 /* scratch: gone */
	bool checked;	 /* scratch: proven alive or scanned */
};
struct nsh_ledger {
	struct nsh_ledger_entry *v;
	size_t n;
	size_t lines; /* lines in the file, live or not */
	size_t base;  /* entries at the last rewrite (its "H COUNT" line) */
	char *text;
	/* The last "S TIME PASS PID SUB ID..." line: a budget scan cut by its time
	 * limit at that position (CLOCK_BOOTTIME seconds TIME), with the ids
	 * of the records it had not found held yet (ids: "ID ID ...", "" none). */
	struct {
		int64_t time;
		struct nsh_scan_pos pos;
		const char *ids;
	} scan;
	char *scan_buf; /* owns scan.ids when made here, not parsed */
};
/* Parse ledger text in place (lines are NUL-terminated); the last event
 * of each id wins.  -ENOMEM or 0; free with nsh_ledger_free. */
int nsh_ledger_parse(char *text, size_t len, struct nsh_ledger *l);
void nsh_ledger_free(struct nsh_ledger *l);
/* The file (ledger.c): STATE_DIR/NAME's path; the ledger loaded (none:
 * empty); one line appended (its new size in *size), the file's old last
 * line closed first when a killed writer left it open; an entry as its
 * line; the file replaced (temp + rename) by the entries not dropped.
 * The caller holds the state lock for all but the path. */
int nsh_ledger_path(const char *state_dir, const char *name, char *out, size_t len, struct nshash_error *err);
int nsh_ledger_load(const char *state_dir, struct nsh_ledger *l, struct nshash_error *err);
int nsh_ledger_append(const char *state_dir, const char *line, off_t *size, struct nshash_error *err);
void nsh_ledger_format(const struct nsh_ledger_entry *r, char *buf, size_t len);
int nsh_ledger_rewrite(const char *state_dir, struct nsh_ledger *l, struct nshash_error *err);
/* The accounting (budget.c): */
struct nsh_ticket {
	char id[NSH_LEDGER_ID_LEN + 1];
	uint64_t bytes;
	bool reserved; /* a line with this id is in the ledger */
};
/* Under a budget: reserve the request's bytes, or refuse (NSHASH_E_BUDGET). */
int nsh_ledger_reserve(const char *state_dir, struct nshash_sizes eff, uint64_t max, const char *pin,
		       struct nsh_ticket *t, struct nshash_error *err);
/* The netns behind nsfd exists and will be pinned at `pin` ("" none).
 * Without `required`, a state dir the caller may not write is skipped. */
int nsh_ledger_commit(const char *state_dir, struct nsh_ticket *t, struct nshash_sizes eff, int nsfd, const char *pin,
		      bool required, struct nshash_error *err);
void nsh_ledger_cancel(const char *state_dir, struct nsh_ticket *t);
/* Drop what is gone (`gone`: inodes whose last pin the caller removed);
 * usage afterwards.  `dry`: judge the same (`gone`: the pins the caller
 * would remove, still there), write nothing.  -ETIMEDOUT (usage still filled) when the scan took
 * longer than max_ms (0 = no limit). */
int nsh_ledger_reconcile(const char *state_dir, const uint64_t *gone, size_t ngone, unsigned max_ms, bool dry,
			 size_t *dropped, struct nshash_table_usage *usage, struct nshash_error *err);
/* /proc/PID/ns/net, /proc/self/ns/net, /proc/PID/task/TID/ns/net */
bool nsh_is_proc_netns_link(const char *path);
/* Open an O_PATH fd (or one from O_PATH) again for real, through
 * /proc/self/fd: the same inode, whatever the path now names. */
int nsh_reopen(int pathfd, int flags);

/* pin.c: create PATH empty with O_EXCL ("WHAT PATH: already exists");
 * *fd holds the claimed file (for nsh_bind_fd and nsh_pin_unclaim). */
int nsh_pin_claim(const char *path, const char *what, int *fd, struct nshash_error *err);
/* pin.c: unlink PATH if it is still the file claimed as `fd`. */
void nsh_pin_unclaim(const char *path, int fd);
/* pin.c: bind-mount the netns behind nsfd onto the file open as targetfd
 * (never re-resolving a path); -errno. */
int nsh_bind_fd(int nsfd, int targetfd);
/* Pin the namespace nsfd at path: claim the file (`claim` names the step
 * in the error), bind onto it, take the claim back on failure (`kind`:
 * "network namespace", "user namespace"). */
int nsh_pin_ns_fd(int nsfd, const char *path, const char *claim, const char *kind, struct nshash_error *err);
/* pin.c: a detached copy (open_tree) of the mount fd was opened through
 * (or of nsfs's own), made private: what a pin is mounted from; -errno.
 * Make it while that mount is attached: a copy of a detached mount, mounted
 * in a shared directory, leaves copies in the peers that an unmount does not
 * reach (Linux 6.18; see nsh_inspect_reopen). */
int nsh_mount_clone(int fd);
/* pin.c: attach that copy `tree` at the file open as `target` (O_PATH), or
 * where there is none (tree < 0: -errno of nsh_mount_clone) bind nsfd
 * there; -errno. */
int nsh_mount_at(int tree, int nsfd, int target);
/* pin.c: what to do about a failed mount (errno e), "" when nothing to say:
 * a bind mount needs CAP_SYS_ADMIN over the mount namespace (a user
 * namespace needs a mount namespace of its own), a root-owned directory
 * needs root. */
const char *nsh_mount_hint(int e);

/* probe.c: "kernel R has no net.ipv4.X (needs Linux V)", EOPNOTSUPP. */
int nsh_knob_missing(enum nshash_proto proto, const char *release, struct nshash_error *err);

/* helper.c: a forked helper process and its answers (over a socket pair:
 * a reply, with an fd when it made a netns).  `what` names it in errors
 * ("WHAT: ...", "WHAT (STAGE): ..."); timeout_s: how long each answer may
 * take (0: no limit).  fn runs in the helper (sock: its end, parent: the
 * caller's pid) and the helper exits when it returns. */
struct nsh_helper_reply {
	int r;
	struct nshash_error err;
	struct nshash_netns_info info;
};
struct nsh_helper {
	pid_t pid;
	int sock; /* the caller's end */
	const char *what;
	unsigned timeout_s;
};
typedef void (*nsh_helper_fn)(int sock, pid_t parent, const void *arg);
int nsh_helper_start(struct nsh_helper *h, const char *what, unsigned timeout_s, nsh_helper_fn fn, const void *arg,
		     struct nshash_error *err);
/* In the helper: one answer (fd >= 0: sent along).  0, or -1. */
int nsh_helper_send(int sock, const struct nsh_helper_reply *rep, int fd);
/* The helper's next answer, and (fd not NULL) the fd it sent: 0; its own
 * error (rep->r, *err its message); or an error of the exchange (no
 * answer in time, it died). */
int nsh_helper_recv(const struct nsh_helper *h, const char *stage, struct nsh_helper_reply *rep, int *fd,
		    struct nshash_error *err);
/* The caller's end closed (the helper sees it), the helper killed first
 * when kill_it, then reaped. */
void nsh_helper_end(struct nsh_helper *h, bool kill_it);
/* helper.c: 0 when the calling thread may setns back into `home` (it is
 * there already: the call changes nothing), else -errno. */
int nsh_can_return(int home);
/* Run fn in a forked helper and hand back its result, error, info and
 * (when `fd` is not NULL) the netns fd it produced.  For callers that
 * cannot come back from a netns they would enter (nsh_can_return fails).
 * A helper with no answer in timeout_s that is stopped or asleep in user
 * space (stuck on a lock a thread of the caller held at the fork) is
 * killed and reaped: ETIMEDOUT; one running or waiting in the kernel is
 * waited for.  It dies with its caller (PR_SET_PDEATHSIG).
 * NSH_CHILD_TIMEOUT_S: what lib's callers give it (a netns creation takes
 * milliseconds; seconds under a burst of netns teardown). */
#define NSH_CHILD_TIMEOUT_S 30
typedef int (*nsh_child_fn)(const void *arg, int *fd, struct nshash_netns_info *info, struct nshash_error *err);
int nsh_in_child(nsh_child_fn fn, const void *arg, unsigned timeout_s, int *fd, struct nshash_netns_info *info,
		 struct nshash_error *err);

/* link.c */
int nsh_loopback_up(struct nshash_error *err);

/* fs.c: mkdir -p, then check it is a directory. */
int nsh_mkdir_p(const char *path, mode_t mode, struct nshash_error *err);

/* statedir.c: flock STATE/lock (made, with the dir, when missing). */
int nsh_lock_state(const char *state_dir, int *lockfd, struct nshash_error *err);
/* What a /proc scan from here can prove of the state dir's netns.  Every
 * recorded creation notes its PID namespace in STATE/pidns, under the
 * state lock, before its record; a scan sees every process that may hold
 * one of them only from the initial PID namespace or from the one all
 * creations ran in (a node in a container: kind); from another, a netns
 * held by a process out of sight would look unused. */
#define NSH_PROC_PID_INIT_INO 0xEFFFFFFCu  /* the initial PID namespace's nsfs inode */
#define NSH_PROC_USER_INIT_INO 0xEFFFFFFDu /* the initial user namespace's */
/* This thread's PID namespace (nsfs inode), 0 when this /proc does not show
 * it; is it the initial one (its fixed inode)? */
uint64_t nsh_own_pidns(void);
bool nsh_in_initial_pidns(void);
int nsh_state_note_pidns(const char *state_dir, struct nshash_error *err);
bool nsh_state_sees_holders(const char *state_dir);
/* A state dir (or its pins/, templates/): not a system directory (by its
 * resolved name, checked before anything is made), a directory, not a
 * symlink, owned by the caller's euid (root), no mode bit for group or
 * others, under parents only root or the caller may change: refused
 * otherwise, never chmod'ed (but with `create`, an empty 0755 one, as
 * kubelet's hostPath DirectoryOrCreate makes it, is narrowed to 0700).
 * `create` makes it (0700,
 * missing parents too) when missing; without it a missing dir passes. */
int nsh_state_dir_check(const char *dir, bool create, struct nshash_error *err);

/* template.c: a private parent's child knobs: set (and read back) those of
 * the calling thread's fresh netns; 1 when it has exactly these. */
int nsh_parent_knobs_set(struct nshash_sizes eff, struct nshash_error *err);
int nsh_parent_knobs_are(struct nshash_sizes eff);
/* template.c: "tcpT-udpU", the name of a size pair (templates, spares);
 * parse: false for anything that is not such a name exactly. */
void nsh_template_name(struct nshash_sizes eff, char *buf, size_t len);
bool nsh_template_name_parse(const char *name, struct nshash_sizes *eff);
/* template.c: the template of a size pair and its use stamp. */
#define NSH_TEMPLATE_STAMP ".used" /* the stamp: the pin's path and this */
struct nsh_template {
	char path[PATH_MAX];  /* STATE/templates/tcpT-udpU */
	char stamp[PATH_MAX]; /* its use stamp */
};
int nsh_template_paths(const char *state_dir, struct nshash_sizes eff, struct nsh_template *t,
		       struct nshash_error *err);
/* Of the template pinned at `pin` (a listed one): its last use (unix
 * time, 0 unknown); forgetting it (its stamp removed with the template). */
int64_t nsh_template_last_used(const char *pin);
void nsh_template_forget(const char *pin);
/* An fd on the pinned template if it is a netns, else -1. */
int nsh_template_open(const struct nsh_template *t);
/* Mark it used now (gc's idle age), creating the stamp if needed. */
void nsh_template_touch(const struct nsh_template *t);
/* An fd on a template known (now) to be a netns, built under the state
 * lock when missing; force_rebuild rebuilds one whose knobs were found
 * damaged (unless another creator did while we waited for the lock). */
int nsh_template_get(const char *state_dir, const struct nsh_template *t, struct nshash_sizes eff, int home,
		     bool force_rebuild, int *tfd, struct nshash_error *err);
/* An fd on the template that nshash_netns_new() uses for `opts` (template
 * strategy, template built) and the path of its use stamp; -ENOENT
 * otherwise. */
int nsh_template_fd(const struct nshash_create_opts *opts, int *fd, char *stamp, size_t len);
/* The note kept in a stamp for the template of inode `ino` (malloc'd
 * text, the caller's format): -ENOENT when there is none for that inode
 * (a rebuilt template has a new one).  Saving replaces the stamp's
 * content atomically (its time is set anew, as by a use); a failure is
 * not reported: the note is made again next time. */
int nsh_template_note_read(const char *stamp, ino_t ino, char **text, size_t *len);
void nsh_template_note_write(const char *stamp, ino_t ino, const char *text, size_t len);

/* make.c: a request's sizes valid (nshash_size_check of both). */
int nsh_size_request_check(struct nshash_sizes s, struct nshash_error *err);
/* make.c: the netns itself: parent (template, throwaway or none), child,
 * verification (its sysctls read through `proc`, a proc instance of the
 * caller's, or the caller's /proc when -1), lo up; *nsfd on it.  Neither
 * recorded nor pinned. */
int nsh_netns_make(const struct nshash_create_opts *opts, int proc, int *nsfd, struct nshash_netns_info *info,
		   struct nshash_error *err);
/* make.c: in a process that need not come back to its netns (it ends
 * after): a throwaway parent with the knobs of opts->sizes set, then the
 * sized child, verified, lo up; the thread is left in it, *nsfd on it.
 * An nsh_child_fn (arg: the create opts); also lib/userns.c's helper. */
int nsh_netns_nested_here(const void *arg, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err);

#endif
