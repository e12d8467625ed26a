/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto` sizes (docs/auto.md), for the front-ends that size (hook/ and
 * runtime/ through oci/, cni/) and the CLI's history, record, stats and
 * gc: common/auto*.c.  Not installed. */
#ifndef NSH_AUTO_H
#define NSH_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common.h"

/* `auto` (docs/auto.md).  A workload's key is
 * "FRONTEND:SCOPE:NAME"; its peaks live in HISTORY/history (nsh_history_dir). */
#define NSH_AUTO_MIN	 128u /* smallest auto size: the kernel's UDP minimum */
#define NSH_HISTORY_FILE "history"
/* Where the history lives: NSH_HISTORY_DIR beside the default state dir
 * (which is /run, a tmpfs: the history must survive a reboot), else the
 * state dir itself (a private or rootless state dir keeps its own). */
#define NSH_HISTORY_DIR "/var/lib/nshash"
void nsh_history_dir(const char *state_dir, char *buf, size_t len);
#define NSH_HISTORY_MAGIC	"nshash-history 1"
#define NSH_HISTORY_MAX		2048u /* workloads kept; least recently seen go first */
#define NSH_HISTORY_MAX_BYTES	(2u << 20)
#define NSH_HISTORY_DECAY	0.98 /* a peak's weight after one day unbeaten */
#define NSH_WORKLOAD_NAME_MAX	200u
#define NSH_WORKLOAD_PREFIX_MAX 8u /* "image=", "host=", "pod=", "id=", "w=" */
#define NSH_WORKLOAD_KEY_MAX	512u
#define NSH_WORKLOAD_DIR	"workloads"
struct nsh_history_entry {
	char key[NSH_WORKLOAD_KEY_MAX];
	long tcp_peak, udp_peak;
	int64_t tcp_at, udp_at; /* when each peak was seen */
	int64_t last_seen;
};
struct nsh_history {
	struct nsh_history_entry *v;
	size_t n, cap;
};
/* The power of two >= peak x 2, at least NSH_AUTO_MIN, at most the largest
 * power of two within `cap` (0 = the kernel's maximum); 0 (the shared tables)
 * when the cap holds none of at least NSH_AUTO_MIN. */
uint32_t nsh_auto_size(enum nshash_proto proto, long peak, uint32_t cap);
/* peak x NSH_HISTORY_DECAY ^ (days since it was seen), rounded to nearest. */
long nsh_history_peak_now(const struct nsh_history_entry *e, enum nshash_proto proto, int64_t now);
/* A value given for a workload key (io.nshash.workload): at most
 * NSH_WORKLOAD_NAME_MAX bytes, no control character.  0 or -errno. */
int nsh_workload_check(const char *value, struct nshash_error *err);
int nsh_workload_key(const char *frontend, const char *scope, const char *name, char *out, size_t len,
		     struct nshash_error *err);
/* A key for printing: '%XX' for bytes outside printable ASCII, space, '%', '\\'. */
size_t nsh_workload_show(const char *key, char *buf, size_t len);
/* Back from that form: 0, or -1 (not one, or longer than len). */
int nsh_workload_unescape(const char *in, char *out, size_t len);
/* K8S_POD_NAME without its controller's generated suffix (docs/auto.md). */
void nsh_pod_owner(const char *pod, char *out, size_t len);
int nsh_history_parse(const char *text, size_t len, struct nsh_history *h, size_t *dropped, struct nshash_error *err);
/* Missing file: empty.  Damaged: what parses, and `warn` says so; never an error but ENOMEM. */
int nsh_history_load(const char *state_dir, struct nsh_history *h, char *warn, size_t wlen, struct nshash_error *err);
int nsh_history_save(const char *state_dir, struct nsh_history *h, struct nshash_error *err);
struct nsh_history_entry *nsh_history_find(struct nsh_history *h, const char *key);
int nsh_history_sample(struct nsh_history *h, const char *key, long tcp, long udp, int64_t now,
		       struct nshash_error *err);
/* Keep the `max` most recently seen; returns how many went. */
size_t nsh_history_evict(struct nsh_history *h, size_t max);
void nsh_history_free(struct nsh_history *h);
struct nshash_sizes nsh_auto_resolve(const struct nsh_history *h, const char *key, const struct nsh_policy *policy,
				     bool tcp_auto, bool udp_auto, struct nshash_sizes asked, int64_t now, bool *known);
/* auto-index.c: HISTORY/history.idx, the start path's lookup.  Written
 * by nsh_history_save into the history's dir from the history file it
 * wrote (`hist`: its stat; buckets 0: as many as the workloads, a power
 * of two; tests pass 1 to make every key collide). */
#define NSH_HISTORY_INDEX_FILE "history.idx"
#define NSH_HISTORY_TMP_AGE    600 /* seconds: a writer's temporary file older than this was left */
struct stat;
int nsh_history_index_write(const char *dir, const struct nsh_history *h, const struct stat *hist, unsigned buckets,
			    struct nshash_error *err);
/* The key's entry from dir's index made from the history file `hist`:
 * 1 found, 0 not there, -1 the index does not answer (missing, made from
 * another history, damaged: why in `why`). */
int nsh_history_index_lookup(const char *dir, const struct stat *hist, const char *key, struct nsh_history_entry *out,
			     char *why, size_t wlen);
/* nsh_history_load for one key: `h` gets that key's entry or none, from
 * the index; when the index does not answer (missing, made from another
 * history, damaged) from the whole history, and `warn` says so.  Never an
 * error but ENOMEM. */
int nsh_history_load_key(const char *state_dir, const char *key, struct nsh_history *h, char *warn, size_t wlen,
			 struct nshash_error *err);
/* Fold samples into HISTORY/history under HISTORY/history.lock:
 * load, sample, save.  `warn` as nsh_history_load's. */
struct nsh_history_sample {
	const char *key;
	long tcp, udp;
};
int nsh_history_add(const char *state_dir, const struct nsh_history_sample *v, size_t n, char *warn, size_t wlen,
		    size_t *workloads, struct nshash_error *err);
struct nshash_stats_netns;
/* Marks: STATE_DIR/workloads/DEV-INO, the key and the netns's id
 * (nshash_netns_id; 0: the kernel has none). */
#define NSH_WORKLOAD_MARKS_MAX 16384u
extern size_t nsh_workload_marks_max; /* NSH_WORKLOAD_MARKS_MAX; tests lower it */
int nsh_workload_mark(const char *state_dir, uint64_t dev, uint64_t ino, uint64_t id, const char *key,
		      struct nshash_error *err);
/* Mark the netns behind nsfd; beyond nsh_workload_marks_max marks, those
 * of netns gone are reaped (a scan, at most once a minute). */
int nsh_workload_mark_fd(const char *state_dir, int nsfd, const char *key, struct nshash_error *err);
/* The key of dev-ino's mark, unverified (for display). */
int nsh_workload_read(const char *state_dir, uint64_t dev, uint64_t ino, char *key, size_t len);
/* 1 and the key when nsfd's netns has a mark with its id; 0 when none or
 * stale (another netns with the same inode made it: then removed). */
int nsh_workload_match(const char *state_dir, int nsfd, char *key, size_t len, struct nshash_error *err);
/* The same for a netns of a scan (its pin, or its process's netns, checked
 * to be that dev-ino still); drop false leaves a stale mark in place. */
int nsh_workload_of(const char *state_dir, const struct nshash_stats_netns *ns, char *key, size_t len, bool drop,
		    struct nshash_error *err);
/* At a teardown: nsfd's mark, if it matches, is sampled once into the
 * history and removed.  1 sampled, 0 no mark, -errno (the mark is gone). */
int nsh_workload_teardown(const char *state_dir, int nsfd, char *key, size_t len, struct nshash_error *err);
/* Remove marks made before `began` of netns not in v (a scan), or whose id
 * is not that netns's; temporary files a minute old.  Returns the marks removed. */
size_t nsh_workload_reap(const char *state_dir, const struct nshash_stats_netns *v, size_t n, struct timespec began);
/* Whether STATE_DIR/workloads holds any mark (gc scans only then). */
bool nsh_workload_marks_any(const char *state_dir);

/* auto-sizes.c: the steps every front-end takes (`who`: the container or pod id
 * its log lines name, NULL none).  At a start: the sizes `auto` gives the
 * workload `key` ("" none: the initial sizes) for the protocols asked as
 * auto (tcp, udp), from its history entry (the index, else the whole
 * history, warned) within policy->max, else policy->auto_initial; one log
 * line.  Other protocols keep their size.  0, or -errno (memory only). */
int nsh_auto_sizes(const char *state_dir, const char *key, const struct nsh_policy *policy, bool tcp, bool udp,
		   struct nshash_sizes *sizes, const char *who, struct nshash_error *err);
/* The netns behind nsfd sized (or adopted) for `key`: marked; a failure is
 * a warning, never fatal. */
void nsh_auto_mark(const char *state_dir, int nsfd, const char *key, const char *who);
/* The netns behind nsfd goes (`when`: "teardown", "DEL"): its mark, if it
 * matches, sampled once into the history and removed; logged. */
void nsh_auto_teardown(const char *state_dir, int nsfd, const char *who, const char *when);

#endif
