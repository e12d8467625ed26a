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

#define NSHASH_VERSION "0.1.0"
#define NSHASH_TCP_MAX 16777216u /* largest tcp_child_ehash_entries */
#define NSHASH_UDP_MAX 65536u    /* largest udp_child_hash_entries */
#define NSHASH_UDP_MIN 128u      /* the kernel rounds UDP tables up to this */
#define NSHASH_DEFAULT_STATE_DIR "/run/nshash"
#define NSHASH_NETNS_RUN_DIR "/run/netns"
#define NSHASH_ANNOTATION_PREFIX "io.nshash."
#define NSHASH_ANNOTATION_TCP "io.nshash.tcp"
#define NSHASH_ANNOTATION_UDP "io.nshash.udp"

struct nshash_error {
	int errnum;     /* positive errno, or 0 for none */
	char msg[1024]; /* "what: to what: why" */
};

/* ---------------------------------------------------------------- sizes */

enum nshash_proto { NSHASH_TCP = 0, NSHASH_UDP = 1 };

/* A request or an effective size pair.  0 = that protocol stays on the
 * shared (global) table. */
struct nshash_sizes {
	uint32_t tcp;
	uint32_t udp;
};

const char *nshash_proto_name(enum nshash_proto proto); /* "tcp" / "udp" */
uint32_t nshash_proto_max(enum nshash_proto proto);

/* Parse a decimal size.  Accepts only [0-9]+ in range 0..max; refuses
 * signs, hex, octal-looking input is still decimal ("0100" = 100), white
 * space, trailing garbage, overflow and the empty string.  `key` names the
 * input in the error ("io.nshash.tcp", "--tcp", ...). */
int nshash_size_parse(enum nshash_proto proto, const char *key, const char *text,
		      uint32_t *out, struct nshash_error *err);
/* Range-check a number that arrived already typed (a JSON integer). */
int nshash_size_check(enum nshash_proto proto, const char *key, int64_t value,
		      uint32_t *out, struct nshash_error *err);
/* What the kernel will make of a request: TCP next power of two; UDP next
 * power of two, at least 128; 0 stays 0. */
uint32_t nshash_size_effective(enum nshash_proto proto, uint32_t requested);
struct nshash_sizes nshash_sizes_effective(struct nshash_sizes requested);
/* vmalloc bytes an effective table of that size costs (measured: TCP 8 B per
 * bucket, UDP 64 B per bucket for both of its hashes). */
uint64_t nshash_table_bytes(enum nshash_proto proto, uint32_t effective);
/* Refuse a request above an admin cap (0 cap = no requests allowed for that
 * protocol).  Compares effective sizes. */
int nshash_sizes_cap(struct nshash_sizes requested, struct nshash_sizes cap,
		     const char *source, struct nshash_error *err);

/* ---------------------------------------------------------------- probe */

struct nshash_probe {
	char release[65];    /* uname -r */
	bool has_tcp_knob;   /* net.ipv4.tcp_child_ehash_entries exists (6.1+) */
	bool has_udp_knob;   /* net.ipv4.udp_child_hash_entries exists (6.2+) */
	long global_tcp;     /* |tcp_ehash_entries| of the global table, 0 unknown */
	long global_udp;     /* |udp_hash_entries| of the global table, 0 unknown */
	long caller_tcp_child; /* caller netns's *_child_* (-1 unknown) */
	long caller_udp_child;
	bool cap_sys_admin;  /* effective capabilities of the caller */
	bool cap_net_admin;
};

int nshash_probe(struct nshash_probe *probe, struct nshash_error *err);
/* Fail with "kernel 5.15 has no net.ipv4.tcp_child_ehash_entries (needs
 * Linux 6.1)" when a requested protocol is unsupported, and name the missing
 * capability when the caller lacks one. */
int nshash_probe_require(const struct nshash_probe *probe, struct nshash_sizes requested,
			 struct nshash_error *err);

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
int nshash_inspect_fd(int nsfd, struct nshash_netns_info *info, struct nshash_error *err);
int nshash_inspect_path(const char *path, struct nshash_netns_info *info,
			struct nshash_error *err);
int nshash_inspect_pid(pid_t pid, struct nshash_netns_info *info, struct nshash_error *err);
/* Compare what a netns has with what was requested (requested, not
 * effective: it normalizes itself).  A protocol requested as 0 must be on
 * the shared table.  The error names `what`, requested and actual sizes, and
 * says "the kernel gave the shared table (allocation failed?)" for the
 * kernel's silent fallback.  Returns -ENOMEM-like -EUCLEAN... see
 * NSHASH_E_* below for the errnum used. */
int nshash_verify(const struct nshash_netns_info *info, struct nshash_sizes requested,
		  const char *what, struct nshash_error *err);
/* errnum of a verification mismatch (a netns exists but has other tables) */
#define NSHASH_E_MISMATCH EUCLEAN
/* errnum when the kernel fell back to the shared table */
#define NSHASH_E_FALLBACK ENOMEM

/* ---------------------------------------------------------------- create */

enum nshash_strategy {
	NSHASH_STRATEGY_TEMPLATE = 0, /* pinned private parent per size pair */
	NSHASH_STRATEGY_NESTED = 1,   /* throwaway parent per creation */
};
int nshash_strategy_parse(const char *text, enum nshash_strategy *out, struct nshash_error *err);

struct nshash_create_opts {
	struct nshash_sizes sizes;   /* requested; validated again here */
	enum nshash_strategy strategy;
	const char *state_dir;       /* NULL = NSHASH_DEFAULT_STATE_DIR */
	bool keep_lo_down;           /* default false: lo is brought up */
};

/* Create a sized netns and return an O_CLOEXEC fd to it in *nsfd, verified.
 * Nothing is pinned. */
int nshash_netns_new(const struct nshash_create_opts *opts, int *nsfd,
		     struct nshash_netns_info *info, struct nshash_error *err);
/* nshash_netns_new + pin at `pin_path` (absolute).  The pin is created with
 * O_EXCL and bind-mounted last; on any failure nothing is left. */
int nshash_netns_create(const struct nshash_create_opts *opts, const char *pin_path,
			struct nshash_netns_info *info, struct nshash_error *err);
/* Replace the netns pinned at `pin_path` (an nsfs bind mount) with a new
 * sized one at the same path: detach the old mount, bind the new one.  On
 * failure after the detach, the old netns is bound back. */
int nshash_netns_replace(const struct nshash_create_opts *opts, const char *pin_path,
			 struct nshash_netns_info *info, struct nshash_error *err);

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
 * process, EOPNOTSUPP otherwise; the message names what was found) when
 * the result could not be the same: a process lives in P (a thread, or an
 * fd open on it), netfilter tables (nftables, iptables-legacy) in P, a link
 * the kernel will not move (netns-immutable: bridge, bond, vrf, ...), an
 * enslaved link, a qdisc or XDP program on a link, nexthop objects,
 * non-default policy routing rules, routes of another family.  A failure
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
	bool dry_run;                     /* inspect and decide only; nothing changes */
	bool engine_fds_ok;               /* fds on P held by the caller's ancestors (the engine
					   * running it, through any wrapper) are tolerated, not
					   * threads inside: podman keeps P open as its handle */
};
struct nshash_transplant_report {
	unsigned links;          /* links moved (lo stays) */
	char link_names[256];    /* "eth0, eth1" */
	unsigned addresses;      /* addresses added back */
	unsigned routes;         /* routes added back (the kernel adds its own) */
	unsigned neighbours;     /* permanent neighbour entries added back */
	unsigned sysctls;        /* sysctl writes */
	bool refused;            /* error: refused before anything changed */
	bool undone;             /* error: a failure midway was undone */
	struct nshash_netns_info info; /* S as read through the path */
};
int nshash_netns_transplant(const struct nshash_transplant_opts *opts, const char *path,
			    struct nshash_transplant_report *report, struct nshash_error *err);

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
	char path[4096];
	char name[256];
	enum nshash_entry_kind kind;
	bool pinned;      /* a mounted nsfs pin (else a stale file) */
	bool damaged;     /* template whose knobs or pin are wrong */
	struct nshash_netns_info info; /* valid when pinned */
	int64_t last_used; /* templates: unix time of last use, else 0 */
};

/* Every pin under /run/netns and the state dir.  *out is malloc'd. */
int nshash_list(const char *state_dir, struct nshash_entry **out, size_t *count,
		struct nshash_error *err);

struct nshash_gc_opts {
	const char *state_dir;
	int64_t template_max_idle; /* seconds; templates unused longer are removed; <0 never */
	int64_t stale_min_age;     /* seconds; unmounted pin files, and container pins
				    * no process uses, older than this go */
	bool dry_run;
};
struct nshash_gc_report {
	size_t templates_removed;
	size_t stale_removed;   /* unmounted pin files a creator left */
	size_t orphans_removed; /* container pins no process uses (a crashed hook or wrapper) */
	size_t kept;
};
int nshash_gc(const struct nshash_gc_opts *opts, struct nshash_gc_report *report,
	      struct nshash_error *err);

/* ---------------------------------------------------------------- OCI (hook, wrapper, policy) */
/* Policy file (nshash.json(5)): what an admin allows annotations to ask for.
 * A missing file means the defaults below; a malformed one is an error that
 * names the line or the key. */
#define NSHASH_DEFAULT_POLICY_PATH "/etc/nshash/nshash.json"
#define NSHASH_POLICY_DEFAULT_MAX_TCP 262144u /* 2 MiB of buckets */
#define NSHASH_POLICY_DEFAULT_MAX_UDP 16384u  /* 1 MiB of buckets */
/* Annotation nshash writes into a transformed config: the pin's name under
 * STATE_DIR/pins.  Refused when a user supplies it. */
#define NSHASH_ANNOTATION_PIN "io.nshash.pin"

enum nshash_on_failure { NSHASH_ON_FAILURE_FAIL = 0, NSHASH_ON_FAILURE_WARN = 1 };

struct nshash_policy {
	struct nshash_sizes max;           /* maxTcp, maxUdp: caps on requests */
	enum nshash_on_failure on_failure; /* onFailure */
	enum nshash_strategy strategy;     /* strategy */
	char state_dir[1024];              /* stateDir */
	char runtime[1024];                /* runtime: "" = first of runc, crun */
	char hook_path[1024];              /* hookPath: "" = nshash-hook next to the wrapper */
	char log_file[1024];               /* logFile: "" = none */
	bool syslog;                       /* syslog */
	char source[1024];                 /* file it was read from, or "defaults" */
};

void nshash_policy_defaults(struct nshash_policy *policy);
/* Parse policy JSON text; `source` names it in errors.  Unknown keys,
 * wrong types and out-of-range values are errors naming the key. */
int nshash_policy_parse(const char *text, size_t len, const char *source,
			struct nshash_policy *policy, struct nshash_error *err);
/* Load `path` (NULL = NSHASH_DEFAULT_POLICY_PATH).  ENOENT = defaults. */
int nshash_policy_load(const char *path, struct nshash_policy *policy, struct nshash_error *err);
const char *nshash_on_failure_name(enum nshash_on_failure on_failure);

/* Logging for the OCI front-ends: one line per action on stderr
 * ("nshash-hook[stage]: id ID: message"), and to the policy's logFile and
 * syslog when configured.  Never fails the caller. */
enum nshash_log_level { NSHASH_LOG_ERROR = 0, NSHASH_LOG_WARN = 1, NSHASH_LOG_INFO = 2 };
void nshash_log_setup(const char *program, const struct nshash_policy *policy);
void nshash_log(enum nshash_log_level level, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What a config's io.nshash.* annotations ask for. */
struct nshash_oci_request {
	bool present;              /* io.nshash.tcp or io.nshash.udp given */
	struct nshash_sizes sizes; /* requested (0 for a protocol not given) */
	char pin[256];             /* io.nshash.pin, "" if absent */
};
/* Parse the annotations object of an OCI config or state (JSON text of the
 * whole document).  Unknown io.nshash.* keys, non-string values and bad
 * sizes are errors naming the key and value. */
int nshash_oci_request_parse(const char *json, size_t len, struct nshash_oci_request *req,
			     struct nshash_error *err);

enum nshash_oci_mode {
	NSHASH_OCI_PRECREATE = 0, /* podman's precreate: config on stdin */
	NSHASH_OCI_WRAPPER = 1,   /* nshash-runtime: add verify + cleanup hooks */
};
struct nshash_oci_opts {
	enum nshash_oci_mode mode;
	const struct nshash_policy *policy;
	const char *pin_name;    /* NULL = a random unique name */
	const char *hook_path;   /* wrapper: absolute path of nshash-hook */
	const char *policy_path; /* wrapper: passed to the added hooks; NULL = none */
};
enum nshash_oci_action {
	NSHASH_OCI_UNTOUCHED = 0, /* no nshash annotations: output = input */
	NSHASH_OCI_SIZED,         /* sized netns created, pinned, path rewritten */
	NSHASH_OCI_ALREADY,       /* its netns is our pin, or already has the sizes: unchanged */
	NSHASH_OCI_WARNED,        /* could not size; policy warn: config unchanged */
	NSHASH_OCI_TRANSPLANTED,  /* precreate: the engine's configured netns replaced at its path */
};
struct nshash_oci_result {
	enum nshash_oci_action action;
	struct nshash_oci_request request;
	struct nshash_netns_info info; /* SIZED: what the new netns has */
	char pin_path[4096];           /* SIZED/ALREADY */
	char warning[1024];            /* WARNED: why */
	char hostname[256];            /* the config's hostname (podman: the short id), for logs */
	char moved[256];               /* TRANSPLANTED: the links moved, "eth0, eth1" */
};
/* The one config transform shared by the hook and the wrapper.  On success
 * *out is a malloc'd config (a copy of the input when nothing changed) and,
 * for SIZED, a pin exists that the caller must remove if it cannot hand the
 * config on (nshash_pin_remove(result->pin_path)).  On error nothing is left. */
int nshash_oci_transform(const char *config, size_t len, const struct nshash_oci_opts *opts,
			 char **out, size_t *out_len, struct nshash_oci_result *result,
			 struct nshash_error *err);
/* One log line for what a transform did (nothing for UNTOUCHED): requested
 * and effective sizes, the pin or the warning. */
void nshash_oci_log_result(const char *who, const struct nshash_oci_result *result);
/* The same on BUNDLE/config.json, rewritten atomically (temp file + rename,
 * same mode) only when changed. */
int nshash_oci_bundle_transform(const char *bundle, const struct nshash_oci_opts *opts,
				struct nshash_oci_result *result, struct nshash_error *err);

/* OCI state (stdin of every hook but precreate). */
struct nshash_oci_state {
	char id[256];
	pid_t pid; /* 0 when absent (podman's poststop) */
	char bundle[4096];
	char status[64];
	struct nshash_oci_request request; /* from the state's annotations, else the bundle's config */
};
int nshash_oci_state_parse(const char *json, size_t len, struct nshash_oci_state *state,
			   struct nshash_error *err);
/* createRuntime/prestart: check /proc/PID/ns/net has what was requested.
 * Returns 0 (ok, nothing requested, or mismatch downgraded to a warning
 * under onFailure warn, in which case *warned is set) or < 0. */
int nshash_oci_verify(const struct nshash_oci_state *state, const struct nshash_policy *policy,
		      struct nshash_netns_info *info, bool *warned, struct nshash_error *err);
/* poststop / wrapper delete: remove STATE_DIR/pins/NAME; succeeds when gone. */
int nshash_oci_pin_path(const struct nshash_policy *policy, const char *name, char *out,
			size_t outlen, struct nshash_error *err);
int nshash_oci_cleanup(const struct nshash_policy *policy, const char *pin_name,
		       struct nshash_error *err);
/* The wrapper's pin name for container ID under runtime root ROOT (ids
 * repeat across containerd namespaces): "ID-HASH8". */
int nshash_oci_wrapper_pin_name(const char *id, const char *root, char *out, size_t outlen,
				struct nshash_error *err);

/* Container pins (STATE_DIR/pins/NAME) still mounted but whose netns no
 * process uses any more, older than min_age seconds: what a hook or wrapper
 * killed between pinning and handing over the config leaves.  Removed
 * unless dry_run; *removed counts them. */
int nshash_oci_gc_orphans(const char *state_dir, int64_t min_age, bool dry_run, size_t *removed,
			  struct nshash_error *err);
/* Read all of fd (at most max bytes) into a NUL-terminated malloc'd buffer. */
int nshash_read_fd(int fd, const char *what, size_t max, char **out, size_t *out_len,
		   struct nshash_error *err);
/* Append an error to a runtime log (--log FILE [--log-format json|text]) the
 * way runc does, so containerd shows it in "OCI runtime create failed". */
void nshash_runtime_log_error(const char *log_path, const char *log_format, const char *msg);
/* For the wrapper: on create, the runtime's stderr is the container's
 * stderr, so only messages up to `max` go there; all of them also go to the
 * runtime log (NULL = none) in runc's format. */
void nshash_log_wrapper_mode(enum nshash_log_level max, const char *log_path,
			     const char *log_format);

/* Runtime wrapper argv (runc conventions). */
struct nshash_runtime_args {
	int subcommand_index;   /* argv index of the subcommand, -1 = none */
	const char *subcommand; /* "create", "run", "delete", ... or NULL */
	const char *root;       /* --root value or NULL */
	const char *bundle;     /* --bundle/-b value or NULL (= cwd) */
	const char *id;         /* container id or NULL */
	bool force;             /* delete --force / -f */
	bool detach;            /* run --detach / -d */
};
int nshash_runtime_args_parse(int argc, char *const argv[], struct nshash_runtime_args *args,
			      struct nshash_error *err);
/* Find the real runtime: the policy's `runtime` (absolute, or a name
 * searched in PATH and the usual sbin/bin dirs), else runc, else crun;
 * never `self` (realpath). */
int nshash_runtime_find(const struct nshash_policy *policy, const char *self, char *out,
			size_t outlen, struct nshash_error *err);

/* ---------------------------------------------------------------- CNI */
/* The CNI 1.1 chained plugin (docs/cni.md).  Placed first in a conflist, it
 * replaces the still-empty netns pinned at CNI_NETNS by a sized one before
 * the next plugins configure it.  Nothing here writes to stdout: the
 * front-end prints nshash_cni_run()'s output. */

/* Error codes: 1-99 are the CNI spec's, 100+ nshash's own. */
enum nshash_cni_code {
	NSHASH_CNI_E_VERSION = 1,          /* incompatible cniVersion / command */
	NSHASH_CNI_E_ENV = 4,              /* missing or invalid CNI_* variable */
	NSHASH_CNI_E_IO = 5,               /* reading stdin failed */
	NSHASH_CNI_E_DECODE = 6,           /* stdin is not one JSON object */
	NSHASH_CNI_E_CONFIG = 7,           /* invalid network config key/value */
	NSHASH_CNI_E_NOT_READY = 50,       /* STATUS: cannot size anything here */
	NSHASH_CNI_E_NOT_RESIZABLE = 100,  /* CNI_NETNS cannot be replaced */
	NSHASH_CNI_E_FALLBACK = 101,       /* kernel gave the shared table */
	NSHASH_CNI_E_REFUSED = 102,        /* pod annotation invalid or over the cap */
	NSHASH_CNI_E_CREATE = 103,         /* creating the sized netns failed */
	NSHASH_CNI_E_MISMATCH = 104,       /* CHECK: netns has other sizes */
};

/* "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL */
extern const char *const nshash_cni_versions[];
/* Exact membership in nshash_cni_versions. */
bool nshash_cni_version_supported(const char *version);
/* Compare two "MAJOR.MINOR.PATCH" strings; unparsable sorts lowest. */
int nshash_cni_version_cmp(const char *a, const char *b);

struct nshash_cni_error {
	int code;           /* enum nshash_cni_code; 0 = none */
	char msg[1024];
	char details[1024];
};
/* Fill `err` and return -1. */
int nshash_cni_error_set(struct nshash_cni_error *err, int code, const char *details,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The spec's error object as malloc'd JSON text (NULL on ENOMEM). */
char *nshash_cni_error_json(const char *cni_version, const struct nshash_cni_error *err);

enum nshash_cni_command {
	NSHASH_CNI_ADD, NSHASH_CNI_DEL, NSHASH_CNI_CHECK,
	NSHASH_CNI_STATUS, NSHASH_CNI_GC, NSHASH_CNI_VERSION,
};
struct nshash_cni_env {
	const char *command;     /* CNI_COMMAND */
	const char *containerid; /* CNI_CONTAINERID */
	const char *netns;       /* CNI_NETNS */
	const char *ifname;      /* CNI_IFNAME */
	const char *args;        /* CNI_ARGS (ignored: no key is nshash's) */
	const char *path;        /* CNI_PATH (unused: nshash calls no plugin) */
};
void nshash_cni_env_from_environ(struct nshash_cni_env *env);
/* Check the variables `command` needs; code 4 naming every bad one. */
int nshash_cni_env_check(const struct nshash_cni_env *env, enum nshash_cni_command *command,
			 struct nshash_cni_error *err);

/* The plugin's entry of the network config, as nshash reads it. */
struct nshash_cni_config {
	char cni_version[32];
	char name[256];
	bool has_tcp, has_udp;      /* "tcp" / "udp" given */
	struct nshash_sizes sizes;  /* network defaults (0 = not given) */
	struct nshash_sizes max;    /* maxTcp / maxUdp (absent = the default) */
	enum nshash_on_failure on_failure;
	enum nshash_strategy strategy; /* "strategy", default nested */
	char state_dir[1024];          /* "stateDir", "" = library default */
	void *json;                    /* the whole document (json_object *) */
};
/* Decode and validate stdin: code 6 when it is not exactly one JSON object,
 * 1 for a missing/unsupported cniVersion, 7 naming a bad key and value.
 * Free with nshash_cni_config_free() whatever it returns. */
int nshash_cni_config_parse(const char *text, size_t len, struct nshash_cni_config *cfg,
			    struct nshash_cni_error *err);
void nshash_cni_config_free(struct nshash_cni_config *cfg);
/* The sizes this attachment asks for: the network defaults overridden per
 * protocol by the pod annotations io.nshash.tcp / io.nshash.udp from
 * runtimeConfig["io.kubernetes.cri.pod-annotations"], refused (code 102)
 * when invalid or above maxTcp / maxUdp.  *from_annotation tells which. */
int nshash_cni_request(const struct nshash_cni_config *cfg, struct nshash_sizes *req,
		       bool *from_annotation, struct nshash_cni_error *err);

/* What CNI_NETNS is. */
enum nshash_cni_netns_kind {
	NSHASH_CNI_NETNS_MISSING = 0, /* nothing at the path */
	NSHASH_CNI_NETNS_NOT_NETNS,   /* a file, directory, other namespace, ... */
	NSHASH_CNI_NETNS_PIN,         /* an nsfs bind mount at this very path */
	NSHASH_CNI_NETNS_PROC,        /* /proc/PID/ns/net: a process's netns */
	NSHASH_CNI_NETNS_LINK,        /* a symbolic link to a netns elsewhere */
};
/* Who already uses a netns: interfaces other than lo, processes inside. */
struct nshash_cni_occupancy {
	unsigned links;       /* interfaces other than lo */
	char link_names[256]; /* "eth0, veth1" */
	pid_t pid;            /* a process inside, 0 none */
	char comm[32];
};
/* The system operations the decisions rest on.  nshash_cni_run() uses the
 * real ones when `ops` is NULL; unit tests replace them. */
struct nshash_cni_ops {
	int (*classify)(const char *path, enum nshash_cni_netns_kind *kind, char *detail,
			size_t detail_len, struct nshash_error *err);
	int (*inspect)(const char *path, struct nshash_netns_info *info, struct nshash_error *err);
	int (*occupancy)(const char *path, struct nshash_cni_occupancy *occ, struct nshash_error *err);
	int (*probe)(struct nshash_probe *probe, struct nshash_error *err);
	int (*replace)(const struct nshash_create_opts *opts, const char *pin_path,
		       struct nshash_netns_info *info, struct nshash_error *err);
	/* How long ADD waits for a process found in the netns to leave before
	 * refusing: containerd's CRI runs the loopback network's plugin in
	 * parallel with the pod network, and it enters the netns for a few ms. */
	unsigned process_grace_ms;
};
extern const struct nshash_cni_ops nshash_cni_system_ops;
int nshash_cni_classify(const char *path, enum nshash_cni_netns_kind *kind, char *detail,
			size_t detail_len, struct nshash_error *err);
int nshash_cni_occupancy(const char *path, struct nshash_cni_occupancy *occ,
			 struct nshash_error *err);

struct nshash_cni_output {
	int status;    /* exit status: 0 or 1 */
	char *stdout_text; /* malloc'd: result, version info or error JSON; NULL = nothing */
	char log[2048];    /* what goes to stderr ("" = nothing) */
};
/* Run one invocation: env + stdin → output.  Never exits or prints. */
void nshash_cni_run(const struct nshash_cni_env *env, const char *input, size_t len,
		    const struct nshash_cni_ops *ops, struct nshash_cni_output *out);
void nshash_cni_output_free(struct nshash_cni_output *out);

/* ---------------------------------------------------------------- errors */

/* Fill err (printf-style) and return -errnum.  Exposed for front-ends. */
int nshash_error_set(struct nshash_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix an existing message: "ctx: old message". */
int nshash_error_prefix(struct nshash_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
