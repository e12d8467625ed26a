/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the front-ends (cmd/, hook/ and runtime/ through oci/, cni/,
 * netavark/, k8s/) share: the policy file, the logger, the JSON decoder,
 * file reading, quoting and path checks.  Built into
 * build/libnshash-common.a; neither installed nor exported. */
#ifndef NSH_COMMON_H
#define NSH_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "nshash.h"
#include "shared.h" /* lib's file and /proc helpers, shared with the front-ends */

struct json_object;
struct stat;

/* ------------------------------------------------------------ annotations */
#define NSH_ANNOTATION_PREFIX "io.nshash."
#define NSH_ANNOTATION_TCP    "io.nshash.tcp"
#define NSH_ANNOTATION_UDP    "io.nshash.udp"
#define NSH_ANNOTATION_WORKLOAD "io.nshash.workload" /* `auto`: the workload key (auto.h) */

/* ------------------------------------------------------------ policy */
/* Policy file (nshash.json(5)): what an admin allows annotations to ask for.
 * A missing file means the defaults below; a malformed one is an error that
 * names the line or the key. */
#define NSH_DEFAULT_POLICY_PATH	     "/etc/nshash/nshash.json"
#define NSH_POLICY_ENV		     "NSHASH_POLICY" /* names another policy file */
/* The Kubernetes installer, as it stamps the entry it chains ("chainedBy"):
 * the plugin's over-cap message then names the ConfigMap, not the conflist. */
#define NSH_K8S_INSTALLER "nshash-cni-install"
#define NSH_POLICY_DEFAULT_MAX_TCP   262144u /* 2 MiB of buckets */
#define NSH_POLICY_DEFAULT_MAX_UDP   16384u  /* 1 MiB of buckets */
#define NSH_POLICY_DEFAULT_STALE_AGE 60	     /* staleAge: as nshash gc --stale-age */
#define NSH_DEFAULT_SPARES	     1	     /* spares: netns made ahead per size pair */
#define NSH_MAX_SPARES		     16
/* Annotation nshash writes into a transformed config: the pin's name under
 * STATE_DIR/pins.  Refused when a user supplies it. */
#define NSH_ANNOTATION_PIN "io.nshash.pin"

enum nsh_on_failure { NSH_ON_FAILURE_FAIL = 0, NSH_ON_FAILURE_WARN = 1 };

struct nsh_policy {
	struct nshash_sizes max;	/* maxTcp, maxUdp: caps on requests */
	struct nshash_sizes defaults;	/* defaultTcp, defaultUdp: for a container asking nothing (0 = shared) */
	enum nsh_on_failure on_failure; /* onFailure */
	enum nshash_strategy strategy;	/* strategy */
	char state_dir[1024];		/* stateDir */
	char runtime[1024];		/* runtime: "" = first of runc, crun */
	char hook_path[1024];		/* hookPath: "" = nshash-hook next to the wrapper */
	char log_file[1024];		/* logFile: "" = none */
	bool syslog;			/* syslog */
	char source[1024];		/* file it was read from, or "defaults" */
	uint64_t max_table_bytes;	/* maxTableBytes: node-wide budget, 0 = none */
	int64_t stale_age;		/* staleAge: unused container pins older than this are reclaimed */
	int64_t reclaim_interval;	/* reclaimInterval: seconds between reclaim runs (0 = every run) */
	unsigned spares;		/* spares: sized netns made ahead per size pair (0 = none) */
	unsigned max_spares;		/* maxSpares: spares in the state dir, all size pairs */
	uint64_t max_spare_bytes;	/* maxSpareBytes: their table bytes */
	int64_t spare_max_idle;		/* spareMaxIdle: seconds before an untaken spare goes */
	struct nshash_sizes auto_initial; /* autoInitialTcp, autoInitialUdp: `auto` without history (0 = shared) */
	struct {
		bool tcp, udp;
	} defaults_auto; /* defaultTcp/defaultUdp "auto" (defaults then 0) */
};

/* ------------------------------------------- one sizing request (sizing.c)
 * docs/sizing.md.  The sources, in the one order: a container's or pod's
 * io.nshash.* annotations, nshash-runtime's --nshash-tcp/--nshash-udp, the
 * network (a CNI config's tcp/udp, the node's defaults for a network naming
 * none), the policy's defaultTcp/defaultUdp.  Per protocol: the first
 * source that names it decides it ([0] tcp, [1] udp). */
enum nsh_src {
	NSH_SRC_NONE = 0, /* nobody named it: the shared table */
	NSH_SRC_ANNOTATION,
	NSH_SRC_RUNTIME,
	NSH_SRC_NETWORK,
	NSH_SRC_DEFAULT,
	NSH_SRC_COUNT
};
/* What one source says. */
struct nsh_said {
	bool said[2];	  /* names the protocol (even as 0: shared) */
	bool is_auto[2];  /* as `auto` */
	uint32_t size[2]; /* else as this size */
};
/* What was decided, and by whom: every later stage reads this. */
struct nsh_decision {
	struct nshash_sizes sizes; /* decided (0: shared; `auto`: 0 until resolved) */
	bool is_auto[2];
	enum nsh_src src[2];
};
/* by[s]: what source s says, NULL nothing (by[NSH_SRC_NONE] unused). */
void nsh_decide(const struct nsh_said *const by[NSH_SRC_COUNT], struct nsh_decision *d);
/* Some source named some protocol. */
bool nsh_decision_decided(const struct nsh_decision *d);
bool nsh_decision_any_from(const struct nsh_decision *d, enum nsh_src src);
/* Every protocol that asks something (a size, `auto`) was decided by src,
 * and one does: e.g. a container that asked nothing but gets the node's
 * defaults (never refused for them). */
bool nsh_decision_asks_only_from(const struct nsh_decision *d, enum nsh_src src);
/* The policy's defaultTcp/defaultUdp as a source (a default 0 names nothing). */
void nsh_said_policy_defaults(const struct nsh_policy *policy, struct nsh_said *s);
/* Each protocol's size within cap, the error naming the source that
 * decided it (names[src]). */
int nsh_decision_cap(const struct nsh_decision *d, struct nshash_sizes cap, const char *const names[NSH_SRC_COUNT],
		     struct nshash_error *err);
/* "annotations", or "tcp: annotations, udp: defaultTcp/defaultUdp" when the
 * two protocols were decided by different sources. */
const char *nsh_decision_text(const struct nsh_decision *d, const char *const names[NSH_SRC_COUNT], char *buf,
			      size_t len);

void nsh_policy_defaults(struct nsh_policy *policy);
/* Parse policy JSON text; `source` names it in errors.  Unknown keys,
 * wrong types and out-of-range values are errors naming the key. */
int nsh_policy_parse(const char *text, size_t len, const char *source, struct nsh_policy *policy,
		     struct nshash_error *err);
/* The policy file the environment names ($NSHASH_POLICY), NULL (the
 * default) when it names none. */
const char *nsh_policy_env(void);
/* Load `path` (NULL or "" = NSH_DEFAULT_POLICY_PATH).  ENOENT = defaults. */
int nsh_policy_load(const char *path, struct nsh_policy *policy, struct nshash_error *err);
const char *nsh_on_failure_name(enum nsh_on_failure on_failure);
/* Does the policy size containers that ask nothing (defaultTcp or defaultUdp
 * not 0)? */
bool nsh_policy_has_defaults(const struct nsh_policy *policy);
/* How the policy has netns of `sizes` made: strategy, state dir, budget,
 * spares. */
struct nshash_create_opts nsh_policy_create_opts(const struct nsh_policy *policy, struct nshash_sizes sizes);

/* ------------------------------------------------------------ logger */
/* The one logger of the front-ends: one line per action on stderr
 * ("PROGRAM: level: ID: message"), and to the policy's logFile and syslog
 * when configured, and to a sink a front-end adds.  Never fails the caller.
 * Its state lives here, in the front-end, never in libnshash. */
enum nsh_log_level {
	NSH_LOG_QUIET = -1, /* as nsh_log_redirect's stderr_max: nothing on stderr */
	NSH_LOG_ERROR = 0,
	NSH_LOG_WARN = 1,
	NSH_LOG_INFO = 2,
};
void nsh_log_setup(const char *program, const struct nsh_policy *policy);
void nsh_log(enum nsh_log_level level, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nsh_vlog(enum nsh_log_level level, const char *id, const char *fmt, va_list ap);

typedef void (*nsh_log_sink)(void *ctx, const char *level, const char *line);
/* Messages above `stderr_max` skip stderr; every message also goes to
 * `sink` (NULL = none) as "PROGRAM: ID: message". */
void nsh_log_redirect(enum nsh_log_level stderr_max, nsh_log_sink sink, void *ctx);

/* ------------------------------------------------------------ reclaim */
/* nshash_reclaim() with a scan limit, for the end of a hook,
 * wrapper or plugin run.  1 with a message for the log (pins removed, or
 * an error: never fatal), else 0. */
int nsh_reclaim_orphans(const char *state_dir, int64_t stale_age, int64_t interval, char *msg, size_t len);

/* ------------------------------------------------------------ spares (spares.c) */
/* Fork a detached child that runs nshash_spare_fill(opts) (logging a
 * failure) and exits.  Its pid, 0 when opts asks for no spares, -1 when the
 * fork failed (no spare this time). */
pid_t nsh_spares_refill(const struct nshash_create_opts *opts);
/* The same, forked now but at work only once nsh_spares_refill_go() is
 * called with the fd returned (O_CLOEXEC; -1: no child): a caller that
 * must fork from where it is now and knows only later whether its netns
 * was used.  Closing the fd unused (an exec, an exit) ends the child. */
int nsh_spares_refill_gated(const struct nshash_create_opts *opts);
void nsh_spares_refill_go(int go);
/* What the child does, for a caller that is such a child already: make
 * the spares (nshash_spare_fill) or, where they do not apply, drop those
 * idle for the idle time (nshash_spare_expire), logging failures. */
void nsh_spares_work(const struct nshash_create_opts *opts);

/* ------------------------------------------------------------ detaching (detach.c) */
/* Stdin, stdout and stderr to /dev/null, every other fd but the `n` of
 * `keep` (at most 8; -1 entries: none) closed, a session of its own, cwd /:
 * for a child that outlives its caller.  A kept fd that was one of stdio
 * is moved above them: `keep` is updated. */
void nsh_detach(int *keep, size_t n);
/* Lower the calling process's CPU priority (nice 10): work made off a
 * container's start path. */
void nsh_background(void);

/* ------------------------------------------------------------ JSON */
/* The one JSON decoder for untrusted text: one document, nothing but JSON
 * white space after it, no NUL byte, no \u0000; never reads text[len];
 * *out is NULL for the document null.  0, or -errno and *fault says what
 * went wrong where; each front-end words its own message from it. */
enum nsh_json_fault_kind {
	NSH_JSON_TOO_LARGE = 1, /* more than INT_MAX bytes */
	NSH_JSON_NUL,		/* a NUL byte */
	NSH_JSON_NOMEM,		/* no memory for the parser */
	NSH_JSON_EMPTY,		/* nothing but white space (or nothing) */
	NSH_JSON_TRUNCATED,	/* ends inside the document */
	NSH_JSON_SYNTAX,	/* not JSON at offset: why */
	NSH_JSON_TRAILING,	/* something after the document (offset: its end) */
	NSH_JSON_NUL_ESCAPE,	/* \u0000 in a string or key (offset: its '\\') */
};
struct nsh_json_fault {
	enum nsh_json_fault_kind kind;
	size_t offset;	 /* byte where it went wrong */
	const char *why; /* SYNTAX: json-c's description */
};
int nsh_json_decode(const char *text, size_t len, struct json_object **out, struct nsh_json_fault *fault);
/* nsh_json_decode with the message: decode one JSON document of untrusted text: nothing but white space after
 * it, no NUL byte.  On failure *out is NULL and the error says where:
 * "SOURCE: malformed JSON at line L column C: why". */
int nsh_json_parse_text(const char *text, size_t len, const char *source, struct json_object **out,
			struct nshash_error *err);
/* A configured file as one JSON document: read (nsh_read_file: a regular
 * file of at most max bytes), then decoded (errors name the path).  On
 * failure *out is NULL and *unreadable (may be NULL) says whether reading
 * it failed, not decoding it. */
int nsh_json_read_file(const char *path, size_t max, struct json_object **out, bool *unreadable,
		       struct nshash_error *err);
/* 1-based line and column of byte `offset` in `text`. */
void nsh_text_position(const char *text, size_t len, size_t offset, unsigned *line, unsigned *col);

/* ------------------------------------------------------------ files */
/* (nsh_read_fd, nsh_write_all, nsh_write_replace: lib/shared.h) */
int nsh_read_file(const char *path, size_t max, char **out, size_t *out_len, struct nshash_error *err);
/* Both read only a regular file (a FIFO, a device or a directory is refused,
 * never opened); exactly `max` bytes are allowed.  *st (may be NULL): the
 * file read, for owner and mode checks. */
int nsh_read_file_stat(const char *path, size_t max, char **out, size_t *out_len, struct stat *st,
		       struct nshash_error *err);
/* The same, `oflags` added to the O_PATH open (O_NOFOLLOW: a symbolic link
 * is refused as not a regular file). */
int nsh_read_file_flags(const char *path, int oflags, size_t max, char **out, size_t *out_len, struct stat *st,
			struct nshash_error *err);
/* Remove dir's NAME.tmp.* older than `age` seconds (or dated in the
 * future): what writers killed before their rename left. */
void nsh_sweep_tmp(const char *dir, const char *name, int64_t age);

/* ------------------------------------------------------------ text */
/* Append printf-style to the NUL-terminated `buf` of size `len`; cut when
 * full. */
void nsh_append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------ capabilities */
/* Reduce the permitted and effective sets to those of `keep` (CAP_*
 * numbers) held now, and empty the inheritable and ambient sets, for the
 * rest of the process's life. */
int nsh_caps_keep(const int *keep, size_t n, struct nshash_error *err);

/* ------------------------------------------------------------ paths */
/* (nsh_path_unclean, nsh_default_state_dir: lib/shared.h) */

/* ------------------------------------------------------------ Prometheus */
/* Write `s` as a label value of the Prometheus text format into buf
 * (NUL-terminated, cut on a character boundary when full): backslash,
 * double quote and newline escaped as \\, \" and \n; other control
 * characters and bytes that are not UTF-8 as U+FFFD.  Returns the length. */
size_t nsh_prom_label(const char *s, char *buf, size_t len);

#endif
