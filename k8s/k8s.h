/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-cni-install: puts the CNI plugin on a Kubernetes node and chains
 * it first into the node's active CNI config, watches it, and takes it out
 * again restoring exactly what it changed.  Includes only common.h and
 * nshash.h (docs/design.md). */
#ifndef NSH_K8S_H
#define NSH_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common.h"

struct json_object;

#define K8S_PROG "nshash-cni-install"
/* In the CNI config dir: names libcni never loads (their extension is none
 * of .conf, .conflist, .json). */
#define K8S_CHANGES  ".nshash-cni-install.state" /* what nshash changed there (changes.c) */
#define K8S_ORIG_EXT ".nshash-orig"		 /* FILE + this: FILE's original bytes, mode, owner */
#define K8S_TMP_EXT  ".nshash-tmp"
/* In the run dir (the pod's emptyDir): `uninstall` was run; watchers stop. */
#define K8S_MARKER "uninstalled"
/* In the run dir: the entry the running installer read at its start, which
 * `ready` checks against (a ConfigMap edited since reaches the node only
 * with the next pod). */
#define K8S_ENTRY_COPY "entry.json"
#define K8S_MAX_FILE   (4u << 20)
#define K8S_JSON_OUT   (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

struct k8s_opts {
	const char *bin_dir;	 /* the node's CNI bin dir, as mounted here */
	const char *net_dir;	 /* the node's CNI config dir */
	const char *plugin;	 /* the plugin binary to install (the image's) */
	const char *entry_path;	 /* nshash's conflist entry */
	const char *conf_name;	 /* "" = the file libcni picks */
	const char *run_dir;	 /* the uninstall marker; "" = none */
	const char *status_file; /* Prometheus text file; NULL = none */
	unsigned watch;		 /* seconds; 0 = one pass */
	bool remove_binary;	 /* uninstall: the binary too */
	const char *nshash;	 /* record: the nshash CLI */
	const char *state_dir;	 /* record: the node's state dir */
	unsigned every;		 /* record: seconds between runs' starts */
};

/* What the installer holds for a pass: the entry read once at start, the
 * versions the plugin speaks. */
struct k8s_ctx {
	const struct k8s_opts *o;
	struct json_object *entry; /* NULL when entry_error says why */
	char entry_error[1200];
	char versions[256]; /* " 0.3.0 0.3.1 ... " (VERSION's supportedVersions) */
	char warning[1200]; /* the last pass's note (STATUS could not probe here) */
	char chained[4200]; /* the last pass: the file nshash is first in */
};

/* ---- files.c: the bottom of k8s/ */
void k8s_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write `text` to `path` atomically (a temporary beside it, renamed), with
 * mode and owner; 0 or -errno. */
int k8s_write_atomic(const char *path, const char *text, size_t len, mode_t mode, uid_t uid, gid_t gid,
		     struct nshash_error *err);
/* DIR/NAME into out. */
void k8s_path_in(char *out, size_t len, const char *dir, const char *name);
/* A file of the CNI config dir, read whole. */
struct k8s_file {
	char path[4096];
	char *bytes;
	size_t len;
	struct stat st;
	struct json_object *json; /* NULL: not JSON (why in err) */
};
/* Read DIR/NAME (never through a symbolic link); -ENOENT when it is gone.
 * JSON errors are left in f->json NULL + err. */
int k8s_file_read(const char *dir, const char *name, struct k8s_file *f, struct nshash_error *err);
void k8s_file_free(struct k8s_file *f);
/* The file still holds what was read (a primary rewriting it meanwhile is
 * never overwritten with the merge of its old content): 0, else -EAGAIN. */
int k8s_still_same(const struct k8s_file *f, struct nshash_error *err);
/* The names of dir libcni would read, in its order (bytewise), NULL
 * terminated; `skip` left out and `add` put in (NULL: none). */
char **k8s_conf_files(const char *dir, const char *skip, const char *add, struct nshash_error *err);
void k8s_names_free(char **v);
/* The file libcni loads from net_dir (first by name of *.conf, *.conflist,
 * *.json, or conf_name): its name into `name`; 0, -ENOENT when there is none. */
int k8s_active_conf(const struct k8s_opts *o, char *name, size_t len, struct nshash_error *err);
/* The dir lock (flock on net_dir itself): one writer at a time. */
int k8s_lock(const char *dir, struct nshash_error *err);
void k8s_unlock(int fd);

/* ---- entry.c */
/* The entry, once: an object of type nshash (stamped "chainedBy"), or
 * c->entry_error says why. */
void k8s_entry_load(struct k8s_ctx *c);
/* p is nshash's plugin; j is it or a list naming it. */
bool k8s_is_nshash(struct json_object *p);
bool k8s_names_nshash(struct json_object *j);
/* The list without nshash's entries, entry (a copy) first when not NULL.
 * Returns how many nshash entries there were. */
size_t k8s_plugins_replace(struct json_object *list, struct json_object *entry);
/* As the installer writes JSON, with a newline; malloc'd, NULL: no memory. */
char *k8s_serialized(struct json_object *o);
/* What is wrong with the primary's file as nshash would chain into it
 * (NULL: nothing); the list to merge into (a copy, or a .conf made a list). */
const char *k8s_primary_list(const struct k8s_file *f, bool is_list, struct json_object **list);
/* A config file of net_dir (.conf, .conflist, .json) that still names type
 * nshash: 1 with its path in `name`, else 0. */
int k8s_conf_mentioning_nshash(const struct k8s_opts *o, char *name, size_t len);

/* ---- plugin.c */
/* Run the plugin at `path` with CNI_COMMAND=cmd and `input` on stdin; its
 * stdout (malloc'd, NUL-terminated) and exit status. */
int k8s_plugin_run(const char *path, const char *cmd, const char *input, char **out, int *status,
		   struct nshash_error *err);
/* The plugin at `path` answers VERSION: its supportedVersions into versions. */
int k8s_plugin_versions(const char *path, char *versions, size_t len, struct nshash_error *err);
/* `a` and `b` hold the same bytes (1), differ or one is missing (0). */
int k8s_same_file(const char *a, const char *b);
/* The image's plugin into BIN_DIR/nshash when it is not there already
 * (atomically: a copy beside it renamed over it), checked to answer VERSION.
 * 1 installed now, 0 in place already, -errno. */
int k8s_install_binary(const struct k8s_opts *o, struct nshash_error *err);
/* STATUS of the installed plugin with nshash's entry of `list` as the
 * network config: 0 valid, -errno with the plugin's reason.  A STATUS
 * that fails only because this container may not size netns (code 50)
 * passes, with that reason in `note`. */
int k8s_validate(const struct k8s_ctx *c, struct json_object *list, char *note, size_t nlen, struct nshash_error *err);

/* ---- changes.c: what nshash changed in net_dir (K8S_CHANGES) */
/* The list (an empty one when there is none), or NULL and err. */
struct json_object *k8s_changes_load(const char *dir, struct nshash_error *err);
int k8s_changes_save(const char *dir, struct json_object *changes, struct nshash_error *err);
/* A change's member (""), whether its names are of this dir only, the
 * change whose member `key` is `value` (NULL), whether it wrote these
 * bytes last, a new change of `name` written as `target`. */
const char *k8s_change_str(struct json_object *f, const char *key);
bool k8s_change_valid(struct json_object *f);
struct json_object *k8s_change_find(struct json_object *changes, const char *key, const char *value);
bool k8s_change_written_is(struct json_object *f, const char *bytes, size_t len);
struct json_object *k8s_change_new(struct json_object *changes, const char *name, const char *target);
/* The file as it was before nshash at BACKUP (see changes.c).  1 written,
 * 0 the existing one taken, -errno. */
int k8s_backup_make(const char *dir, const struct k8s_file *f, const char *backup, bool fresh,
		    struct nshash_error *err);

/* ---- chain.c */
enum k8s_pass { K8S_UNCHANGED, K8S_WROTE, K8S_REFUSED, K8S_FAILED /* a write failed */ };
/* One chaining pass (the caller holds the dir lock): nshash's entry made
 * plugins[0] of the active conf, validated, written, what it replaced kept.
 * K8S_WROTE with what it did in `done`, K8S_UNCHANGED, K8S_REFUSED
 * (nothing written) or K8S_FAILED (a write failed: the node's config files
 * as they were) with err saying why. */
enum k8s_pass k8s_chain(struct k8s_ctx *c, char *done, size_t dlen, struct nshash_error *err);
/* nshash first in the active conf with this entry: 0, else -errno why. */
int k8s_chained(const struct k8s_ctx *c, struct nshash_error *err);

/* ---- unchain.c */
/* Restore every file the list of changes names, one log line per file.
 * 0 or -errno. */
int k8s_unchain(const struct k8s_opts *o, struct nshash_error *err);

/* ---- watch.c */
/* install: one pass, or --watch: passes until SIGTERM/SIGINT. Exit status. */
int k8s_install(struct k8s_ctx *c);

/* ---- record.c */
/* record: `nshash --state-dir DIR record` now and every o->every seconds,
 * until SIGTERM/SIGINT (0).  A failed run is logged, never fatal. */
int k8s_record_loop(const struct k8s_opts *o);

#endif
