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

#define NSHASH_VERSION		 "0.1.0"
#define NSHASH_TCP_MAX		 16777216u /* largest tcp_child_ehash_entries */
#define NSHASH_UDP_MAX		 65536u	   /* largest udp_child_hash_entries */
#define NSHASH_UDP_MIN		 128u	   /* the kernel rounds UDP tables up to this */
#define NSHASH_DEFAULT_STATE_DIR "/run/nshash"
#define NSHASH_NETNS_RUN_DIR	 "/run/netns"

/* The one error type.  Passed by pointer to every function that can fail
 * (NULL = the caller does not want the message); usable by value (a plain
 * struct).  Its size is part of the ABI: msg stays 1024 bytes in NSHASH_0. */
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
	pid_t pid;	      /* a process inside, 0 none */
	char comm[32];	      /* its /proc/PID/comm */
};
/* Enters the netns at `path` (the calling thread only) to list its
 * interfaces, and scans /proc for a process inside.  0 or -errno. */
int nshash_netns_occupancy(const char *path, struct nshash_occupancy *occ, struct nshash_error *err);

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
	const char *state_dir; /* NULL = NSHASH_DEFAULT_STATE_DIR */
	bool keep_lo_down;     /* default false: lo is brought up */
};

/* Create a sized netns and return an O_CLOEXEC fd to it in *nsfd, verified.
 * Nothing is pinned. */
int nshash_netns_new(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		     struct nshash_error *err);
/* nshash_netns_new + pin at `pin_path` (absolute).  The pin is created with
 * O_EXCL and bind-mounted last; on any failure nothing is left. */
int nshash_netns_create(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			struct nshash_error *err);
/* Replace the netns pinned at `pin_path` (an nsfs bind mount) with a new
 * sized one at the same path: detach the old mount, bind the new one.  On
 * failure after the detach, the old netns is bound back. */
int nshash_netns_replace(const struct nshash_create_opts *opts, const char *pin_path, struct nshash_netns_info *info,
			 struct nshash_error *err);
/* The second half of nshash_netns_replace: put the netns of `nsfd` (made
 * with nshash_netns_new) where the nsfs bind mount at `pin_path` was. */
int nshash_netns_swap(int nsfd, const char *pin_path, struct nshash_error *err);

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

/* ---------------------------------------------------------------- state */

/* Layout of the state dir:
 *   DIR/lock                  flock(2) serializing template builds and gc
 *   DIR/templates/tcpT-udpU   template pins (effective sizes)
 *   DIR/templates/tcpT-udpU.used   touched on every use (gc age)
 *   DIR/pins/ID               pins made for containers by the hook/wrapper
 */
enum nshash_entry_kind { NSHASH_ENTRY_NETNS, NSHASH_ENTRY_TEMPLATE, NSHASH_ENTRY_CONTAINER };

struct nshash_entry {
	char *path;	  /* malloc'd; freed by nshash_list_free() */
	const char *name; /* the last component of path (points into it) */
	enum nshash_entry_kind kind;
	bool pinned;		       /* a mounted nsfs pin (else a stale file) */
	bool damaged;		       /* template whose knobs or pin are wrong */
	struct nshash_netns_info info; /* valid when pinned */
	int64_t last_used;	       /* templates: unix time of last use, else 0 */
};

/* Every pin under /run/netns and the state dir (NULL = the default).  Free
 * *out with nshash_list_free(*out, *count). */
int nshash_list(const char *state_dir, struct nshash_entry **out, size_t *count, struct nshash_error *err);
/* Free what nshash_list() returned (NULL is fine). */
void nshash_list_free(struct nshash_entry *entries, size_t count);

struct nshash_gc_opts {
	const char *state_dir;
	int64_t template_max_idle; /* seconds; templates unused longer are removed; <0 never */
	int64_t stale_min_age;	   /* seconds; unmounted pin files, and container pins
				    * no process uses, older than this go */
	bool dry_run;
};
struct nshash_gc_report {
	size_t templates_removed;
	size_t stale_removed;	/* unmounted pin files a creator left */
	size_t orphans_removed; /* container pins no process uses (a crashed hook or wrapper) */
	size_t kept;
};
int nshash_gc(const struct nshash_gc_opts *opts, struct nshash_gc_report *report, struct nshash_error *err);

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

#ifdef __cplusplus
}
#endif
#endif
