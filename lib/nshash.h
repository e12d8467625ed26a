/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnshash — give a network namespace its own TCP established-hash and UDP
 * hash tables, race-free, and verify what the kernel really did.
 *
 * Error model: every function that can fail returns 0 on success and a
 * negative errno-style value on failure, and fills the caller's
 * struct nshash_error with the errno and a message that says what was being
 * done, to what, and why it failed.  The library never exits, never prints
 * and never leaves state behind on an error path.
 *
 * Threads: functions that touch another network namespace (create, inspect)
 * switch only the *calling thread* with setns(2)/unshare(2) and switch it
 * back before returning; other threads of the process keep their namespace.
 * Do not call them from a signal handler, and do not let another thread rely
 * on the calling thread's network namespace during the call.  The library
 * never calls setns(CLONE_NEWNS) or setns(CLONE_NEWUSER), which would break
 * a multithreaded caller.  Pinning uses /proc/thread-self, never the thread
 * group leader's /proc/self/ns/net.
 *
 * Privileges: CAP_SYS_ADMIN (setns, unshare, mount) and CAP_NET_ADMIN
 * (writing *_child_* knobs, bringing lo up) in the user namespace that owns
 * the network namespaces involved.
 */
#ifndef NSHASH_H
#define NSHASH_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NSHASH_DEFAULT_STATE_DIR: the state dir when a call is given none
 * (state_dir NULL or "") for root of the initial user namespace; for
 * anyone else (a user, root of a user namespace) it is
 * $XDG_RUNTIME_DIR/nshash, else /run/user/UID/nshash (UID outside any user
 * namespace).  The CLI and the hooks use the same rule. */
#define NSHASH_VERSION		 "0.2.0"
#define NSHASH_TCP_MAX		 16777216u /* largest tcp_child_ehash_entries */
#define NSHASH_UDP_MAX		 65536u	   /* largest udp_child_hash_entries */
#define NSHASH_UDP_MIN		 128u	   /* the kernel rounds UDP tables up to this */
#define NSHASH_DEFAULT_STATE_DIR "/run/nshash"
#define NSHASH_NETNS_RUN_DIR	 "/run/netns"

/* The one error type.  Passed by pointer to every function that can fail
 * (NULL = the caller does not want the message); usable by value (a plain
 * struct).  Its size is part of the ABI: msg stays 1024 bytes in NSHASH_1. */
struct nshash_error {
	int errnum;	/* positive errno, or 0 for none */
	char msg[1024]; /* "what: to what: why", NUL-terminated, cut to fit */
};

/* ---------------------------------------------------------------- sizes */

enum nshash_proto { NSHASH_TCP = 0, NSHASH_UDP = 1 };

/* A request or an effective size pair.  0 = that protocol stays on the
 * shared (global) table. */
struct nshash_sizes {
	uint32_t tcp;
	uint32_t udp;
};

/* "tcp" / "udp". */
const char *nshash_proto_name(enum nshash_proto proto);
/* The largest size the kernel takes: NSHASH_TCP_MAX / NSHASH_UDP_MAX. */
uint32_t nshash_proto_max(enum nshash_proto proto);

/* Parse a decimal size.  Accepts only [0-9]+ in range 0..max; refuses
 * signs, hex, octal-looking input is still decimal ("0100" = 100), white
 * space, trailing garbage, overflow and the empty string.  `key` names the
 * input in the error ("io.nshash.tcp", "--tcp", ...). */
int nshash_size_parse(enum nshash_proto proto, const char *key, const char *text, uint32_t *out,
		      struct nshash_error *err);
/* Range-check a number that arrived already typed (a JSON integer). */
int nshash_size_check(enum nshash_proto proto, const char *key, int64_t value, uint32_t *out, struct nshash_error *err);
/* What the kernel will make of a request: TCP next power of two; UDP next
 * power of two, at least 128; 0 stays 0. */
uint32_t nshash_size_effective(enum nshash_proto proto, uint32_t requested);
struct nshash_sizes nshash_sizes_effective(struct nshash_sizes requested);
/* vmalloc bytes an effective table of that size costs (measured: TCP 8 B per
 * bucket, UDP 64 B per bucket for both of its hashes). */
uint64_t nshash_table_bytes(enum nshash_proto proto, uint32_t effective);
/* Refuse a request above an admin cap (0 cap = no requests allowed for that
 * protocol).  Compares effective sizes. */
int nshash_sizes_cap(struct nshash_sizes requested, struct nshash_sizes cap, const char *source,
		     struct nshash_error *err);

/* ---------------------------------------------------------------- probe */

struct nshash_probe {
	char release[65];      /* uname -r */
	bool has_tcp_knob;     /* net.ipv4.tcp_child_ehash_entries exists (6.1+) */
	bool has_udp_knob;     /* net.ipv4.udp_child_hash_entries exists (6.2+) */
	long global_tcp;       /* |tcp_ehash_entries| of the global table, 0 unknown */
	long global_udp;       /* |udp_hash_entries| of the global table, 0 unknown */
	long caller_tcp_child; /* caller netns's *_child_* (-1 unknown) */
	long caller_udp_child;
	bool cap_sys_admin; /* effective capabilities of the caller */
	bool cap_net_admin;
};

/* What this kernel and this caller can do (fills every field; unknown
 * values as documented above).  0, or -errno when uname fails. */
int nshash_probe(struct nshash_probe *probe, struct nshash_error *err);
/* Fail with "kernel 5.15 has no net.ipv4.tcp_child_ehash_entries (needs
 * Linux 6.1)" when a requested protocol is unsupported, and name the missing
 * capability when the caller lacks one. */
int nshash_probe_require(const struct nshash_probe *probe, struct nshash_sizes requested, struct nshash_error *err);

/* ---------------------------------------------------------------- inspect */

struct nshash_netns_info {
	/* raw *_hash_entries: > 0 own table of that size, < 0 shares the global
	 * table of -value buckets, 0 = unknown (knob missing) */
	long tcp_entries;
	long udp_entries;
	long tcp_child; /* this netns's *_child_* knobs; -1 unknown */
	long udp_child;
	long tcp_max_tw_buckets; /* derived by the kernel; -1 unknown */
	long tcp_max_syn_backlog;
	uint64_t inode; /* nsfs inode number: the netns identity */
};

/* The effective sizes of `info` as a pair (shared or unknown = 0). */
struct nshash_sizes nshash_info_sizes(const struct nshash_netns_info *info);
/* The tables of the netns behind `nsfd` (entered with setns by the calling
 * thread only, and left again).  0 or -errno; EINVAL when nsfd is not a
 * network namespace. */
int nshash_inspect_fd(int nsfd, struct nshash_netns_info *info, struct nshash_error *err);
/* The same for a pin or /proc/PID/ns/net path (opened O_CLOEXEC). */
int nshash_inspect_path(const char *path, struct nshash_netns_info *info, struct nshash_error *err);
/* The same for the netns of process `pid`. */
int nshash_inspect_pid(pid_t pid, struct nshash_netns_info *info, struct nshash_error *err);
/* Compare what a netns has with what was requested (requested, not
 * effective: it normalizes itself).  A protocol requested as 0 must be on
 * the shared table.  The error names `what`, requested and actual sizes, and
 * says "the kernel gave the shared table (allocation failed?)" for the
 * kernel's silent fallback.  Returns -ENOMEM-like -EUCLEAN... see
 * NSHASH_E_* below for the errnum used. */
int nshash_verify(const struct nshash_netns_info *info, struct nshash_sizes requested, const char *what,
		  struct nshash_error *err);
/* errnum of a verification mismatch (a netns exists but has other tables) */
#define NSHASH_E_MISMATCH EUCLEAN
/* errnum when the kernel fell back to the shared table */
#define NSHASH_E_FALLBACK ENOMEM

/* What is at a path that should be a network namespace. */
enum nshash_path_kind {
	NSHASH_PATH_MISSING = 0, /* nothing at the path */
	NSHASH_PATH_NOT_NETNS,	 /* a file, directory, other namespace, ... */
	NSHASH_PATH_PIN,	 /* an nsfs bind mount at this very path */
	NSHASH_PATH_PROC,	 /* /proc/PID/ns/net: a process's netns */
	NSHASH_PATH_LINK,	 /* a symbolic link to a netns elsewhere */
};
/* Classify `path` without following it into anything but a netns; `detail`
 * says what it is ("a directory", the link's target, ...).  Returns 0, or
 * -errno when the path cannot be looked at. */
int nshash_path_classify(const char *path, enum nshash_path_kind *kind, char *detail, size_t detail_len,
			 struct nshash_error *err);
/* Who already uses a netns: interfaces other than lo, processes inside. */
struct nshash_occupancy {
	unsigned links;	      /* interfaces other than lo */
	char link_names[256]; /* "eth0, veth1" (cut when long) */
	pid_t pid;	      /* a process with a thread inside (any thread), 0 none */
	char comm[32];	      /* its /proc/PID/comm */
};
/* Enters the netns at `path` (the calling thread only) to list its
 * interfaces, and scans /proc for a process with any thread inside (an fd
 * on it does not count: a runtime may hold one over the CNI ADD, as
 * podman keeps its netns handle open).  0 or -errno. */
int nshash_netns_occupancy(const char *path, struct nshash_occupancy *occ, struct nshash_error *err);
/* The same without a look at every process on the node: a process inside is
 * looked for only among the threads of the cgroup `cgroup_fd` (an open
 * directory of a cgroup file system, v1 or v2) and its descendants --
 * the cost is that cgroup's threads, not the node's processes.  With
 * cgroup_fd < 0 only the interfaces are looked at (occ->pid stays 0).
 * E2BIG when the cgroup holds more than 65536 threads, 4096 cgroups or 32
 * levels (nothing proven).  The CNI plugin's ADD (docs/cni.md: who can be
 * inside a netns the runtime pinned a moment ago). */
int nshash_netns_occupancy_cgroup(const char *path, int cgroup_fd, struct nshash_occupancy *occ,
				  struct nshash_error *err);
/* The same for a netns that the engine running the caller (its parent:
 * podman running a network plugin) may have made for this start: with a
 * link, no process is looked for; else every process is looked at only
 * when the netns was not made for this start (owned by another user
 * namespace than the initial one, pinned before the caller's parent started
 * or more than 30 s ago) or has a socket in use (the kernel's per-protocol
 * counts of it).  Otherwise occ->pid stays 0 at no cost of the node's
 * processes.  nshash's netavark (docs/networks.md, "Who can be in podman's
 * netns"). */
int nshash_netns_occupancy_engine(const char *path, struct nshash_occupancy *occ, struct nshash_error *err);

/* ---------------------------------------------------------------- create */

enum nshash_strategy {
	NSHASH_STRATEGY_TEMPLATE = 0, /* pinned private parent per size pair */
	NSHASH_STRATEGY_NESTED = 1,   /* throwaway parent per creation */
};
/* "template" / "nested"; anything else is EINVAL naming the text. */
int nshash_strategy_parse(const char *text, enum nshash_strategy *out, struct nshash_error *err);

struct nshash_create_opts {
	struct nshash_sizes sizes; /* requested; validated again here */
	enum nshash_strategy strategy;
	const char *state_dir; /* NULL = the default (NSHASH_DEFAULT_STATE_DIR) */
	bool keep_lo_down;     /* default false: lo is brought up */
	/* Node-wide table memory budget (maxTableBytes), 0 = none: refuse the
	 * creation (NSHASH_E_BUDGET) when the table bytes of every live netns
	 * nshash sized with this state dir, plus this request, would pass it.
	 * Every sized creation is recorded in the state dir's ledger, with or
	 * without a budget (see "table memory budget" below). */
	uint64_t max_table_bytes;
	/* Spares (template strategy, no budget, lo up): keep up to this many
	 * netns of these sizes made ahead of need in STATE_DIR/spares.  A
	 * creation then takes one when there is one, with no unshare on its
	 * path; the caller refills with nshash_spare_fill() off its own path
	 * (after its answer went out).  0 = none (the default). */
	unsigned spares;
	/* Node-wide bounds on the spares of the state dir, whatever asks for
	 * them (checked by the filler at work): their total count over every
	 * size pair (0 = NSHASH_DEFAULT_MAX_SPARES) and their total table bytes
	 * (0 = NSHASH_DEFAULT_MAX_SPARE_BYTES); and the idle expiry: a spare not
	 * taken, and a template not used, within this many seconds is removed
	 * by the next filler (0 = NSHASH_DEFAULT_SPARE_MAX_IDLE). */
	unsigned max_spares;
	uint64_t max_spare_bytes;
	int64_t spare_max_idle;
};
#define NSHASH_DEFAULT_MAX_SPARES      16u
#define NSHASH_DEFAULT_MAX_SPARE_BYTES (32ull << 20)
#define NSHASH_DEFAULT_SPARE_MAX_IDLE  600

/* Create a sized netns and return an O_CLOEXEC fd to it in *nsfd, verified.
 * Nothing is pinned. */
int nshash_netns_new(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		     struct nshash_error *err);
/* nshash_netns_new + pin at `pin_path` (absolute).  The pin is created with
 * O_EXCL and bind-mounted last; on any failure nothing is left. */
int nshash_netns_create(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			struct nshash_error *err);
/* Make spares until opts->spares of opts->sizes are ready (each made and
 * recorded like nshash_netns_create does), after any other filler of the
 * state dir is done.  The number made (0 also when spares do not apply to
 * opts), or -errno.  Spares unused for longer than gc's template idle age go with
 * nshash_gc(). */
int nshash_spare_fill(const struct nshash_create_opts *opts, struct nshash_error *err);
/* Remove the spares of the state dir (NULL = the default) made `max_idle`
 * seconds ago or longer and not taken, and the templates not used for as
 * long (what nshash_spare_fill() does first).  The number removed, or -errno. */
int nshash_spare_expire(const char *state_dir, int64_t max_idle, struct nshash_error *err);
/* Whether spares apply to opts at all (spares > 0, template strategy, no
 * budget, lo up): what nshash_spare_fill() and nshash_spare_take() check,
 * for a caller deciding whether to fork a filler. */
bool nshash_spares_apply(const struct nshash_create_opts *opts);
/* Take a spare of opts->sizes (see above): 1 with an O_CLOEXEC fd to it in
 * *nsfd (no longer pinned; info: the sizes verified when it was made, which
 * its name carries, and its inode), 0 when there is none.
 * Must run in the mount namespace the spares were made in (an unmount in
 * another one would not reach them). */
int nshash_spare_take(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info);
/* Replace the netns pinned at `pin_path` (an nsfs bind mount) with a new
 * sized one at the same path: the new one mounted beneath the old mount,
 * then the old one detached (Linux 6.5+; before, detach then bind, and on
 * failure after the detach the old netns is bound back). */
int nshash_netns_replace(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			 struct nshash_error *err);
/* The second half of nshash_netns_replace: put the netns of `nsfd` (made
 * with nshash_netns_new) where the nsfs bind mount at `pin_path` was. */
int nshash_netns_swap(int nsfd, const char *pin_path, struct nshash_error *err);
/* The netns behind `nsfd`, made with nshash_netns_new(opts, ...), now sits at
 * `pin_path` (nshash_netns_swap put it there): the table ledger names that
 * pin, so that the pin proves it alive (`nshash list`, the budget) instead
 * of a /proc scan.  opts->sizes and state_dir as given to nshash_netns_new;
 * nothing to do for sizes of no bytes or a state dir the caller may not
 * write.  A failure leaves the netns counted as before. */
int nshash_netns_record_pin(const struct nshash_create_opts *opts, int nsfd, const char *pin_path,
			    struct nshash_error *err);

/* The netns-wide net.* sysctls of the netns pinned at `pin_path` that a new
 * netns does not have as it has them: what a runtime wrote there before a
 * plugin replaces it (CRI-O's pinns writes a pod's sysctls into the netns
 * it pins).  Per-device knobs (ipvN / conf|neigh / DEV), read-only and
 * write-only files, the child table sizes and the limits the kernel derives
 * from the table size (where they are as derived) are left out.  Compared
 * with the template of opts's sizes (its note, template.c), or without one
 * with the netns behind `nsfd` (the replacement).  Every file is read
 * relative to one directory fd in each netns.  0 with out filled (n may be
 * 0), or -errno.  nsfd -1: only against the template's note (the read can
 * then run while the replacement is being made), -ENODATA when there is
 * none yet (nothing read: call again with the replacement). */
struct nshash_sysctl {
	char *path;  /* below /proc/sys/net: "ipv4/ping_group_range" */
	char *value; /* as the kernel prints it (fields apart by tabs) */
	int errnum;  /* after nshash_sysctls_carry: 0 set, else why not */
};
struct nshash_sysctls {
	struct nshash_sysctl *v;
	size_t n;
};
int nshash_sysctls_differing(const struct nshash_create_opts *opts, const char *pin_path, int nsfd,
			     struct nshash_sysctls *out, struct nshash_error *err);
/* Write them into the netns behind nsfd (each checked by reading it back):
 * 0, or -EIO naming each one not set ("net.ipv4.X=\"V\" (why)"), errnum set
 * on each entry.  *written (may be NULL): how many were written. */
int nshash_sysctls_carry(int nsfd, struct nshash_sysctls *s, unsigned *written, struct nshash_error *err);
/* "net.ipv4.ping_group_range=0 2147483647, ..." for a log line. */
void nshash_sysctls_text(const struct nshash_sysctls *s, char *buf, size_t len);
void nshash_sysctls_free(struct nshash_sysctls *s);

/* ---------------------------------------------------------------- table memory budget */
/* STATE_DIR/ledger records, under the state lock, every netns with own
 * tables that nshash creates (whatever the front-end), and every creation
 * under a budget while it is under way (a reservation taken before the
 * netns is made, so that parallel creators never pass the budget together).
 * A record counts until the netns is gone: its pin no longer holds it and
 * no thread, open fd or mount anywhere does (a scan of /proc, run when a
 * creation would otherwise be refused and by nshash_reclaim()).  Records of
 * creators that died are dropped by the next reader.  Templates have no
 * tables of their own and are not counted. */
#define NSHASH_E_BUDGET EDQUOT /* errnum: the budget would be passed */

/* Table bytes of an effective size pair (TCP + UDP nshash_table_bytes). */
uint64_t nshash_sizes_bytes(struct nshash_sizes effective);

struct nshash_table_usage {
	uint64_t bytes;		/* table bytes of the sized netns counted */
	size_t netns;		/* how many */
	uint64_t pending_bytes; /* creations under way (reserved, included in bytes) */
	size_t pending;
	size_t unverified; /* counted although neither their pin nor their nsfs
			    * file handle (kernels without one) proves them
			    * alive (0 right after a reconcile) */
};
/* What the ledger counts now.  With `reconcile`, first drop what a /proc
 * scan finds gone (takes the state lock for a moment; the scan itself runs
 * without it); without, what the pins and the file handles tell (a netns
 * gone is dropped, one held away from its pin counts).  A missing state dir
 * or ledger is zero use. */
int nshash_table_usage(const char *state_dir, bool reconcile, struct nshash_table_usage *usage,
		       struct nshash_error *err);

/* ---------------------------------------------------------------- reclaim */
/* Orphan container pins (STATE_DIR/pins/NAME mounted, older than min_age,
 * held by no thread and no open fd of any process: a container whose create
 * failed after the netns was pinned, or a hook killed mid-way), removed
 * without an operator, plus a reconcile of the ledger.  Rate-limited and
 * cheap: with `interval` > 0 a run starts only when no run started within
 * the last `interval` seconds (the mtime of STATE_DIR/reclaim.stamp, claimed
 * with a non-blocking flock, so concurrent callers never scan twice); a
 * skipped call costs one stat(2).  One /proc pass serves all pins. */
/* The floor of every stale age (reclaim's min_age, gc's stale_min_age):
 * below it a value is taken as this.  It covers the longest legitimate gap
 * between a pin's claim and its runtime's open (a precreate hook's pin is
 * opened by `runc create` well under a second later on an idle host,
 * seconds on a loaded one); it equals the hooks' default staleAge. */
#define NSHASH_STALE_AGE_MIN 60
struct nshash_reclaim_opts {
	const char *state_dir;
	/* Seconds; container pins claimed more recently (the mtime of the file
	 * under the mount, never the netns's age) are never orphans.  Below
	 * NSHASH_STALE_AGE_MIN it is NSHASH_STALE_AGE_MIN. */
	int64_t min_age;
	int64_t interval; /* seconds between runs; 0 = run now */
	bool dry_run;
	/* Longest /proc scan, ms (0 = no limit): fds of processes with millions
	 * of them take seconds.  Past it nothing is removed (incomplete). */
	unsigned max_scan_ms;
	/* Called with each container pin removed (or, under dry_run, that
	 * would be), why = "orphaned container pin"; may be NULL. */
	void (*removed)(const char *path, const char *why, void *ctx);
	void *ctx;
};
struct nshash_reclaim_report {
	bool ran;			 /* false: another run is recent or under way */
	size_t pins_seen;		 /* container pins looked at */
	size_t orphans_removed;		 /* (dry run: would be removed) */
	size_t ledger_dropped;		 /* ledger records of netns found gone */
	bool incomplete;		 /* the scan hit max_scan_ms: what it could not
					  * check was kept */
	struct nshash_table_usage usage; /* after the run (when it ran) */
};
#define NSHASH_RECLAIM_MAX_SCAN_MS 2000u /* what the hooks and the plugin use */
#define NSHASH_RECLAIM_INTERVAL	   60	 /* what the hooks and the plugin use */
int nshash_reclaim(const struct nshash_reclaim_opts *opts, struct nshash_reclaim_report *report,
		   struct nshash_error *err);

/* ---------------------------------------------------------------- transplant */

/* Replace the netns pinned at a path (P: made and already configured by
 * someone else, e.g. a container engine) by a new sized netns S that keeps
 * P's network configuration, and bind S at P's path.  Every link but lo
 * moves from P to S (name, ifindex, MAC, MTU survive a move); its IPv4/IPv6
 * addresses (flags, lifetimes), the routes of every table, permanent
 * neighbours, up state, per-device sysctls and the netns-wide net.*
 * sysctls P has and a new netns has not are given back, compared with P,
 * then S replaces P's mount (umount2(MNT_DETACH) + bind) and the sizes are
 * verified through the path.
 *
 * Refused before anything changes (report->refused, errnum EBUSY for a
 * process, EPERM when engine_made and nothing shows the engine made P,
 * EOPNOTSUPP otherwise; the message names what was found) when
 * the result could not be the same: a process lives in P (a thread, or an
 * fd open on it), netfilter tables (nftables, iptables-legacy) in P, a link
 * the kernel will not move (netns-immutable: bridge, bond, vrf, ...), an
 * enslaved link, a qdisc or XDP program on a link, nexthop objects,
 * non-default policy routing rules, routes of another family.  A veth whose
 * peer is a port of a bridge in the caller's netns is made again rather
 * than moved (report->recreated): the container side in S with its name,
 * ifindex, MAC, MTU, queues, the host side with its name and MAC on the
 * same bridge (a new ifindex), the old pair left in P, down and off the
 * bridge, to die with P; only when nothing tells the pairs apart, else it
 * is moved (report->fallback says why).  A failure
 * after the first link moved is undone: links back in P with their
 * configuration, P's mount back (report->undone; if even that fails, the
 * message says "UNDO FAILED").  Order: move the links, bind S at the path,
 * then configure S.  A caller killed while S is being configured leaves S at
 * the path with the links in it, partly configured (the engine's teardown
 * finds them there); killed between the move and the bind (a few syscalls),
 * it leaves P without the moved links (they die with S: a veth with its
 * peer) or an empty file at the path.  Either way the engine must fail the
 * container, which it does when its hook dies. */
struct nshash_transplant_opts {
	struct nshash_create_opts create; /* sizes etc. of S */
	bool dry_run;			  /* inspect and decide only; nothing changes */
	bool engine_made;		  /* P is the netns the engine running the caller (an
					   * ancestor: podman, through any wrapper) made for this
					   * container: the engine must hold it open (podman 4 keeps
					   * it as its handle on the path), or have a thread in it
					   * (podman 5), owning no socket there, or P must have been
					   * pinned after the caller's parent started (podman 5,
					   * which may hold nothing on it).  A socket in use in P
					   * (the kernel's per-protocol counts) refuses.  When P is,
					   * besides, owned by the initial user namespace, pinned
					   * since the engine (the nearest ancestor holding it, else
					   * the parent) started and in the last 30 s, only the
					   * engine's processes are looked at, not every process:
					   * another process in P is left there (docs/design.md) */
};
struct nshash_transplant_report {
	unsigned links;		       /* links moved (lo stays) */
	char link_names[256];	       /* "eth0, eth1" */
	unsigned addresses;	       /* addresses added back */
	unsigned routes;	       /* routes added back (the kernel adds its own) */
	unsigned neighbours;	       /* permanent neighbour entries added back */
	unsigned sysctls;	       /* sysctl writes */
	bool refused;		       /* error: refused before anything changed */
	bool undone;		       /* error: a failure midway was undone */
	unsigned recreated;	       /* of links: veth pairs made again (the container side in S,
					* the host side on the same bridge) rather than moved */
	char recreated_names[256];     /* "eth0" */
	char fallback[256];	       /* why a bridged veth was moved rather than recreated:
					* "eth0: its host side veth1: it has a qdisc configured" */
	struct nshash_netns_info info; /* S as read through the path */
};
int nshash_netns_transplant(const struct nshash_transplant_opts *opts, const char *path,
			    struct nshash_transplant_report *report, struct nshash_error *err);

/* ---------------------------------------------------------------- user namespaces */
/* A container in a user namespace of its own (OCI linux.uidMappings /
 * gidMappings) can mount sysfs and manage its netns only if that netns is
 * owned by its user namespace: one nshash made as root in the initial user
 * namespace is not.  The kernel sizes a netns from the *_child_* knobs of
 * its creator's netns, and a user namespace's root may set them in a netns
 * that user namespace owns: so the user namespace is made first, with
 * exactly the container's mappings, then a throwaway parent netns inside it
 * with the knobs set (templates belong to the caller's user namespace and
 * cannot serve), then the sized netns. */
#define NSHASH_IDMAP_MAX 340 /* lines the kernel takes in a uid_map / gid_map */
struct nshash_idmap {
	uint32_t inside;  /* first id in the new user namespace (OCI containerID) */
	uint32_t outside; /* first id in the caller's (OCI hostID) */
	uint32_t count;	  /* how many (OCI size), > 0 */
};
struct nshash_userns_spec {
	const struct nshash_idmap *uid; /* uid_map lines, 1..NSHASH_IDMAP_MAX */
	size_t nuid;
	const struct nshash_idmap *gid; /* gid_map lines, 1..NSHASH_IDMAP_MAX */
	size_t ngid;
};
/* Make a user namespace with exactly spec's mappings (written by the
 * caller, which needs CAP_SETUID and CAP_SETGID over the outside ids;
 * setgroups stays "allow", as runc and crun leave it for root) and a sized
 * netns it owns, from a helper process that ends before this returns.
 * opts->sizes, max_table_bytes and state_dir apply as for
 * nshash_netns_new() (the netns is recorded in the ledger and counted by
 * the budget); strategy and spares do not (always a throwaway parent).
 * O_CLOEXEC fds on both in *userns_fd and *nsfd; nothing is pinned; on
 * failure nothing is left. */
int nshash_userns_netns_new(const struct nshash_create_opts *opts, const struct nshash_userns_spec *spec,
			    int *userns_fd, int *nsfd, struct nshash_netns_info *info, struct nshash_error *err);
/* The same in an existing user namespace, the one behind `userns_fd` (a
 * container joining it by path): the helper joins it (the caller needs
 * CAP_SYS_ADMIN over it), no mappings are written.  *nsfd as above. */
int nshash_userns_netns_join(const struct nshash_create_opts *opts, int userns_fd, int *nsfd,
			     struct nshash_netns_info *info, struct nshash_error *err);
/* Open the user namespace at `path` (a pin or /proc/PID/ns/user, from a
 * config: nothing but nsfs is opened), O_CLOEXEC in *fd; *callers: it is
 * the caller's own.  0 or -errno (EINVAL: not a user namespace). */
int nshash_userns_open(const char *path, int *fd, bool *callers, struct nshash_error *err);
/* Pin the user namespace behind `userns_fd` at `path` (O_EXCL file, bind
 * mount), as nshash_pin_fd() does a netns: a runtime then joins it by path. */
int nshash_userns_pin(int userns_fd, const char *path, struct nshash_error *err);
/* umount2(MNT_DETACH) + unlink of such a pin; succeeds when already gone;
 * refuses anything mounted there that is not a user namespace. */
int nshash_userns_pin_remove(const char *path, struct nshash_error *err);
/* The precreate hook pins a container's user namespace at
 * STATE_DIR/userns/NAME beside its netns pin STATE_DIR/pins/NAME, and
 * removes both once the container's init holds them.  Remove the user
 * namespace pins whose netns pin is gone and that are older than min_age
 * (at least NSHASH_STALE_AGE_MIN): what a killed hook or a failed create
 * left once the orphan reclaim took the netns pin.  How many, or -errno. */
int nshash_userns_sweep(const char *state_dir, int64_t min_age, struct nshash_error *err);
/* 1 when the netns at `path` (a pin or /proc/PID/ns/net) is owned by a user
 * namespace other than the caller's (a container's own: a replacement the
 * caller made would not be), 0 when by the caller's, or -errno. */
int nshash_netns_foreign_userns(const char *path, struct nshash_error *err);

/* ---------------------------------------------------------------- pins */

/* NAME → /run/netns/NAME (NAME: [A-Za-z0-9._-], 1..NAME_MAX, not "." or
 * ".."); an absolute path is kept if it is clean (no "..", no "//" runs, no
 * NUL, shorter than PATH_MAX). */
int nshash_pin_resolve(const char *arg, char *out, size_t outlen, struct nshash_error *err);
/* Validate a single path component (container id, pin name). */
int nshash_name_check(const char *what, const char *name, struct nshash_error *err);
/* Make `dir` exist and be a shared mount, as iproute2 does for /run/netns. */
int nshash_pin_dir_prepare(const char *dir, struct nshash_error *err);
/* Pin the netns behind `nsfd` at `path`: O_EXCL file, bind mount. */
int nshash_pin_fd(int nsfd, const char *path, struct nshash_error *err);
/* umount2(MNT_DETACH) + unlink; succeeds when already gone. */
int nshash_pin_remove(const char *path, struct nshash_error *err);
/* 1 if `path` is a mounted nsfs network-namespace pin, 0 if not (missing,
 * plain file, other namespace type), < 0 on error. */
int nshash_pin_is_netns(const char *path, struct nshash_error *err);

/* Handing a pin over to a container (the precreate hook): start watching
 * the pin before the runtime can see its path, then wait until a thread
 * group leader outside the caller's mount namespace (a container's init)
 * lives in the netns -- woken by inotify when the pin is closed or removed,
 * never spinning.  Then the pin can go: the container holds the netns.
 * At most 8 waiters per pin directory hold an inotify instance (root has
 * 128 for every daemon); the others look once a second until one is free. */
struct nshash_handoff {
	int fd;	  /* inotify; -1 when not started, or waiting without one */
	int slot; /* the lock on DIR/.handoff.N that lets it hold one; -1 none */
	dev_t dev;
	ino_t ino;	/* the pinned netns */
	ino_t mnt_ino;	/* the caller's mount namespace */
	int dir_wd;	/* the watch on the pin's directory */
	char name[256]; /* the pin's name in it: other names' removals are not ours */
};
int nshash_handoff_start(const char *pin, struct nshash_handoff *h, struct nshash_error *err);
/* The pid of that process, 0 when timeout_ms passed without one, -ENOENT
 * when the pin was removed or replaced meanwhile, other -errno on errors. */
pid_t nshash_handoff_wait(struct nshash_handoff *h, const char *pin, unsigned timeout_ms, struct nshash_error *err);
void nshash_handoff_end(struct nshash_handoff *h);

/* ---------------------------------------------------------------- state */

/* Layout of the state dir:
 *   DIR/lock                  flock(2) serializing template builds and gc
 *   DIR/templates/tcpT-udpU   template pins (effective sizes)
 *   DIR/templates/tcpT-udpU.used   touched on every use (gc age); holds the
 *                                  template's sysctls once a transplant read them
 *   DIR/pins/ID               pins made for containers by the hook/wrapper
 *   DIR/userns/ID             the hook's pin of that container's own user namespace
 *   DIR/spares/tcpT-udpU.TCP.UDP.RAND   spares: sized netns made ahead of
 *                             need, named after the *_hash_entries they have
 */
enum nshash_entry_kind { NSHASH_ENTRY_NETNS, NSHASH_ENTRY_TEMPLATE, NSHASH_ENTRY_CONTAINER, NSHASH_ENTRY_SPARE };

struct nshash_entry {
	char *path;	  /* malloc'd; freed by nshash_list_free() */
	const char *name; /* the last component of path (points into it) */
	enum nshash_entry_kind kind;
	bool pinned;		       /* a mounted nsfs pin (else a stale file) */
	bool damaged;		       /* template whose knobs or pin are wrong */
	int unknown;		       /* errno when it could not be looked at (not ours to
					* judge: EACCES, EPERM as non-root); 0 = known */
	struct nshash_netns_info info; /* valid when pinned and not unknown */
	int64_t last_used;	       /* templates: unix time of last use; spares: when made; else 0 */
};

/* Every pin under /run/netns and the state dir (NULL = the default).  Free
 * *out with nshash_list_free(*out, *count). */
int nshash_list(const char *state_dir, struct nshash_entry **out, size_t *count, struct nshash_error *err);
/* Free what nshash_list() returned (NULL is fine). */
void nshash_list_free(struct nshash_entry *entries, size_t count);

struct nshash_gc_opts {
	const char *state_dir;
	int64_t template_max_idle; /* seconds; templates unused longer, and spares made longer
				    * ago, are removed; <0 never */
	int64_t stale_min_age;	   /* seconds; unmounted pin files, and container pins
				    * no process uses, claimed longer ago than this
				    * go (at least NSHASH_STALE_AGE_MIN); an unmounted
				    * file that is a mount point in another mount
				    * namespace is kept */
	bool dry_run;
	/* Called with each path removed (or, under dry_run, that would be) and
	 * why: "damaged template", "idle template", "idle spare", "stale pin
	 * file", "orphaned container pin".  NULL: not called. */
	void (*removed)(const char *path, const char *why, void *ctx);
	void *ctx;
};
struct nshash_gc_report {
	size_t templates_removed;
	size_t spares_removed;		 /* spares older than template_max_idle */
	size_t stale_removed;		 /* unmounted pin files a creator left */
	size_t orphans_removed;		 /* container pins no process uses (a crashed hook or wrapper) */
	size_t kept;			 /* templates and container pins (the state dir's) left in place */
	size_t ledger_dropped;		 /* table ledger records of netns found gone */
	struct nshash_table_usage usage; /* table memory in use afterwards */
};
int nshash_gc(const struct nshash_gc_opts *opts, struct nshash_gc_report *report, struct nshash_error *err);
/* Does this process see every holder of the state dir's netns (NULL: the
 * default)?  True in the initial PID namespace, or in the one the state
 * dir's creations ran in (STATE/pidns).  Where false, gc and reclaim
 * judge no pin unused and remove no stale pin file, and the ledger keeps
 * what a /proc scan cannot prove gone (docs/design.md). */
bool nshash_state_sees_holders(const char *state_dir);
/* Make STATE_DIR/SUB (SUB "pins", "templates", "run"...; out receives the
 * path) the way nshash keeps its state: STATE_DIR and STATE_DIR/SUB each a
 * directory owned by the caller (root), not a symbolic link, not open to
 * group or others, not a system directory (docs/design.md "The state dir");
 * what is missing is created 0700 (parents too), what exists is refused
 * when it is not so, never chmod'ed (but for an empty 0755 one, kubelet's
 * hostPath DirectoryOrCreate, narrowed to 0700); every existing parent
 * owned by root or the caller, writable by no one else unless sticky. */
int nshash_state_subdir(const char *state_dir, const char *sub, char *out, size_t outlen, struct nshash_error *err);

/* ---------------------------------------------------------------- errors */

/* Fill err (printf-style; err may be NULL) and return -errnum (a negative
 * or zero errnum is taken as its absolute value, 0 as EINVAL).  For
 * callers that build their errors the library's way. */
int nshash_error_set(struct nshash_error *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefix an existing message: "ctx: old message". */
int nshash_error_prefix(struct nshash_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Untrusted text as an error message may show it: in double quotes, bytes
 * outside printable ASCII and '"' '\\' as \xNN, cut with "..." after 40
 * bytes.  `len` >= 16; the one quoting helper of nshash. */
void nshash_quote(const char *text, char *buf, size_t len);
/* Copy `text` with control characters (< 0x20, 0x7f) as \xNN, cut to fit
 * `len`; returns the length.  For log lines and messages: every message
 * nshash_error_set() and nshash_error_prefix() make has passed through it. */
size_t nshash_escape(const char *text, char *buf, size_t len);
/* A file type for messages: "a regular file", "a directory", "a FIFO",
 * "a character device", "a symbolic link", ... (st_mode's S_IFMT). */
const char *nshash_file_kind(mode_t mode);

/* ---------------------------------------------------------------- stats */
/* What lives in each netns's tables, read from per-netns counters (never a
 * dump of its sockets): cheap whatever the number of sockets.
 *
 * TCP: the established hash (ehash, the table nshash sizes) holds every TCP
 * socket that has a 4-tuple: connecting, established, closing and
 * TIME_WAIT, v4 and v6 alike (v6 shares the table).  Listeners live in the
 * listening hash (global, never per netns) and bound-only sockets in the
 * bind hash: neither counts.  From sockstat/sockstat6 inside the netns:
 *   tcp = inuse(TCP) + inuse(TCP6) - listeners + tw
 * where the listeners are counted with an inet_diag dump of LISTEN sockets
 * only (skipped when inuse is 0).  Embryonic SYN_RECV requests (also in the
 * ehash, short-lived) are not counted.
 * UDP: every bound UDP socket, v4 and v6 (one table): inuse(UDP) + inuse(UDP6). */
struct nshash_sockets {
	long tcp;	 /* sockets in the TCP established hash, TIME_WAIT included */
	long tcp_tw;	 /* of which TIME_WAIT */
	long tcp_listen; /* listeners (not in tcp); -1 unknown (then tcp includes them) */
	long udp;	 /* bound UDP sockets */
};
/* Socket counts of the netns behind nsfd / at path (a pin or
 * /proc/PID/ns/net); the calling thread enters it and comes back. */
int nshash_sockets_fd(int nsfd, struct nshash_sockets *sockets, struct nshash_error *err);
int nshash_sockets_path(const char *path, struct nshash_sockets *sockets, struct nshash_error *err);
/* The netns's 64-bit id: unique for the boot, never reused (unlike its
 * nsfs inode number).  NS_GET_ID on nsfd (Linux 6.18), else SO_NETNS_COOKIE
 * of a socket made inside it (5.14; the calling thread enters it and comes
 * back).  -EOPNOTSUPP when the kernel has neither. */
int nshash_netns_id(int nsfd, uint64_t *id, struct nshash_error *err);

/* One network namespace of the host as `nshash stats` shows it. */
struct nshash_stats_netns {
	char name[4096];	       /* its pin path, else "pid:PID" */
	bool pinned;		       /* name is a pin path */
	enum nshash_entry_kind kind;   /* pinned: which directory */
	bool host;		       /* the initial netns (kthreadd's): it owns the global tables */
	pid_t pid;		       /* the lowest pid inside, 0 none */
	char command[32];	       /* that process's comm, non-printables as '?' */
	char container[80];	       /* container id its cgroup names, "" unknown */
	char engine[16];	       /* "podman", "docker", "containerd", "cri-o", "" */
	uint64_t dev, inode;	       /* nsfs identity */
	struct nshash_netns_info info; /* tcp_entries, udp_entries (fast fields only) */
	struct nshash_sockets sockets;
};
struct nshash_stats_opts {
	const char *state_dir;	 /* NULL = the default (NSHASH_DEFAULT_STATE_DIR) */
	const char *const *only; /* NULL: every netns (pins under /run/netns and the state
				  * dir, then each distinct netns of a running process);
				  * else only these pin paths or /proc/PID/ns/net paths */
	size_t nonly;
};
/* Read every netns; *out is malloc'd.  A netns that vanishes during the scan
 * is left out; one that cannot be read is an error. */
int nshash_stats_scan(const struct nshash_stats_opts *opts, struct nshash_stats_netns **out, size_t *count,
		      struct nshash_error *err);
/* True when the netns's table of `proto` is the global one (shared, or the host's). */
bool nshash_stats_global(const struct nshash_stats_netns *ns, enum nshash_proto proto);
/* Recommended size: the next power of two at or above its sockets (TCP: at
 * least twice its TIME_WAIT sockets, as tcp_max_tw_buckets = entries / 2),
 * at least 128 (the kernel's UDP minimum; TCP's TIME_WAIT room), at most the
 * kernel's maximum. */
uint32_t nshash_stats_recommend(enum nshash_proto proto, const struct nshash_sockets *sockets);
#define NSHASH_STATS_TOP 5
/* The global table of one protocol over the scanned netns. */
struct nshash_stats_shared {
	long buckets;		      /* its size (0 unknown: no netns uses it) */
	size_t netns;		      /* netns using it, the host included */
	long sockets;		      /* their sockets */
	double chain;		      /* average chain length: sockets / buckets */
	size_t top[NSHASH_STATS_TOP]; /* indexes of the largest contributors, largest first */
	size_t ntop;
};
void nshash_stats_shared(const struct nshash_stats_netns *v, size_t n, enum nshash_proto proto,
			 struct nshash_stats_shared *out);

#ifdef __cplusplus
}
#endif
#endif
