/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI 1.1 chained plugin (docs/cni.md).  Placed first in a conflist, it
 * replaces the still-empty netns pinned at CNI_NETNS by a sized one before
 * the next plugins configure it.  Nothing here writes to stdout: main.c
 * prints nsh_cni_run()'s output.  Not installed. */
#ifndef NSH_CNI_H
#define NSH_CNI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "auto.h"
#include "cnistate.h"
#include "common.h"

struct json_object;

/* The CNI 1.1 chained plugin (docs/cni.md).  Placed first in a conflist, it
 * replaces the still-empty netns pinned at CNI_NETNS by a sized one before
 * the next plugins configure it.  Nothing here writes to stdout: main.c
 * prints nsh_cni_run()'s output. */

/* Error codes: 1-99 are the CNI spec's, 100+ nshash's own. */
enum nsh_cni_code {
	NSH_CNI_E_VERSION = 1,	       /* incompatible cniVersion / command */
	NSH_CNI_E_ENV = 4,	       /* missing or invalid CNI_* variable */
	NSH_CNI_E_IO = 5,	       /* reading stdin failed */
	NSH_CNI_E_DECODE = 6,	       /* stdin is not one JSON object */
	NSH_CNI_E_CONFIG = 7,	       /* invalid network config key/value */
	NSH_CNI_E_NOT_READY = 50,      /* STATUS: cannot size anything here */
	NSH_CNI_E_NOT_RESIZABLE = 100, /* CNI_NETNS cannot be replaced */
	NSH_CNI_E_FALLBACK = 101,      /* kernel gave the shared table */
	NSH_CNI_E_REFUSED = 102,       /* pod annotation invalid or over the cap */
	NSH_CNI_E_CREATE = 103,	       /* creating the sized netns failed */
	NSH_CNI_E_MISMATCH = 104,      /* CHECK: netns has other sizes */
	NSH_CNI_E_BUDGET = 105,	       /* maxTableBytes would be passed */
};

/* "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL */
extern const char *const nsh_cni_versions[];
/* Exact membership in nsh_cni_versions. */
bool nsh_cni_version_supported(const char *version);
/* Compare two "MAJOR.MINOR.PATCH" strings; unparsable sorts lowest. */
int nsh_cni_version_cmp(const char *a, const char *b);

/* A CNI failure: the spec's code next to the engine's error type, whose
 * message is the error object's "msg" and errnum what functions return
 * (0 / -errno, as everywhere in nshash). */
struct nsh_cni_failure {
	int code;	   /* enum nsh_cni_code; 0 = none */
	char details[128]; /* the error object's "details", "" = none */
	struct nshash_error err;
};
/* Fill `fail` and return -errno (the errno that goes with `code`). */
int nsh_cni_fail(struct nsh_cni_failure *fail, int code, const char *details, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The spec's error object as malloc'd JSON text (NULL on ENOMEM). */
char *nsh_cni_error_json(const char *cni_version, const struct nsh_cni_failure *fail);

enum nsh_cni_command {
	NSH_CNI_ADD,
	NSH_CNI_DEL,
	NSH_CNI_CHECK,
	NSH_CNI_STATUS,
	NSH_CNI_GC,
	NSH_CNI_VERSION,
};
struct nsh_cni_env {
	const char *command;	 /* CNI_COMMAND */
	const char *containerid; /* CNI_CONTAINERID */
	const char *netns;	 /* CNI_NETNS */
	const char *ifname;	 /* CNI_IFNAME */
	const char *args;	 /* CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME: for the record) */
	const char *path;	 /* CNI_PATH (unused: nshash calls no plugin) */
};
void nsh_cni_env_from_environ(struct nsh_cni_env *env);
/* The value of KEY in CNI_ARGS ("K1=V1;K2=V2", libcni's form) into out
 * (cut to fit): true when the key is there. */
bool nsh_cni_args_get(const char *args, const char *key, char *out, size_t len);
/* Check the variables `command` needs; code 4 naming every bad one. */
int nsh_cni_env_check(const struct nsh_cni_env *env, enum nsh_cni_command *command, struct nsh_cni_failure *err);

/* The plugin's entry of the network config, as nshash reads it. */
struct nsh_cni_config {
	char cni_version[32];
	char name[256];
	bool has_tcp, has_udp; /* "tcp" / "udp" given */
	bool has_max_tcp, has_max_udp, has_spares, has_on_failure;
	struct nshash_sizes sizes; /* network defaults (0 = not given) */
	struct nshash_sizes max;   /* maxTcp / maxUdp (absent = the default) */
	enum nsh_on_failure on_failure;
	enum nshash_strategy strategy; /* "strategy", default template */
	char state_dir_asked[1024];    /* "stateDir" ("" = absent): only compared with the node's */
	const char *state_dir;	       /* the node's (its policy's), after _node() */
	uint64_t max_table_bytes;      /* "maxTableBytes": node-wide budget, 0 = none */
	unsigned spares;	       /* "spares": sized netns kept ready per size pair */
	/* the node's bounds on every size pair's spares (nshash.json(5)) */
	unsigned max_spares;
	uint64_t max_spare_bytes;
	int64_t spare_max_idle;
	struct json_object *json;	  /* the whole document */
	bool auto_tcp, auto_udp;	  /* "tcp"/"udp": "auto" (or the node's defaults "auto") */
	struct nshash_sizes auto_initial; /* the node's autoInitialTcp/autoInitialUdp */
	/* "chainedBy": the installer that wrote this entry ("" none) */
	char chained_by[64];
	/* where each protocol's cap is set, for the over-cap message (code
	 * 102): [0] tcp, [1] udp, after nsh_cni_config_node */
	char cap_hint[2][1280];
};
/* Decode and validate stdin: code 6 when it is not exactly one JSON object,
 * 1 for a missing/unsupported cniVersion, 7 naming a bad key and value.
 * Free with nsh_cni_config_free() whatever it returns. */
int nsh_cni_config_parse(const char *text, size_t len, struct nsh_cni_config *cfg, struct nsh_cni_failure *err);
void nsh_cni_config_free(struct nsh_cni_config *cfg);
/* Apply the node's policy (nshash.json(5)) to a parsed config: the state
 * dir is the node's (a different "stateDir" is code 7); a network with
 * neither "tcp" nor "udp" takes the node's defaultTcp / defaultUdp as its
 * defaults (and, without maxTcp / maxUdp, as its caps); maxTcp, maxUdp,
 * maxTableBytes and spares are the lower of the network's and the node's (a
 * network value above the node's is lowered, with a line in `warn`); the
 * network default above the resulting cap is code 7; strategy is nested when
 * either says so; onFailure is the network's, else the node's. */
int nsh_cni_config_node(struct nsh_cni_config *cfg, const struct nsh_policy *node, char *warn, size_t wlen,
			struct nsh_cni_failure *err);
/* The sizes this attachment asks for: the network defaults overridden per
 * protocol by the pod annotations io.nshash.tcp / io.nshash.udp from
 * runtimeConfig["io.kubernetes.cri.pod-annotations"], refused (code 102)
 * when invalid or above maxTcp / maxUdp.  *from_annotation tells which. */
int nsh_cni_request(const struct nsh_cni_config *cfg, struct nshash_sizes *req, bool *from_annotation,
		    struct nsh_cni_failure *err);

/* The system operations the decisions rest on.  nsh_cni_run() uses the
 * real ones when `ops` is NULL; unit tests replace them. */
struct nsh_cni_ops {
	int (*classify)(const char *path, enum nshash_path_kind *kind, char *detail, size_t detail_len,
			struct nshash_error *err);
	int (*inspect)(const char *path, struct nshash_netns_info *info, struct nshash_error *err);
	/* the interfaces inside, and a process inside among the threads of the
	 * pod's cgroup (cgroup_fd, -1: none looked for) */
	int (*occupancy)(const char *path, int cgroup_fd, struct nshash_occupancy *occ, struct nshash_error *err);
	int (*probe)(struct nshash_probe *probe, struct nshash_error *err);
	/* ADD makes the sized netns while it looks inside CNI_NETNS
	 * (occupancy, in a thread), then swaps it in. */
	int (*create)(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		      struct nshash_error *err);
	int (*swap)(int nsfd, const char *pin_path, struct nshash_error *err);
};
extern const struct nsh_cni_ops nsh_cni_system_ops;

struct nsh_cni_output {
	int status;				 /* exit status: 0 or 1 */
	char workload_key[NSH_WORKLOAD_KEY_MAX]; /* ADD with `auto`: the pod's workload ("" none) */
	char *stdout_text;			 /* malloc'd: result, version info or error JSON; NULL = nothing */
	char log[2048];				 /* what goes to stderr ("" = nothing) */
	bool have_config;			 /* the network config was valid (the reclaim after the run) */
	int64_t stale_age, reclaim_interval; /* the node's, for that reclaim */
	/* ADD gave the pod a sized netns (refill_due): spares of these sizes
	 * to refill (refill.spares 0 = none: idle ones may still be dropped),
	 * once the answer is out */
	struct nshash_create_opts refill;
	bool refill_due;
	/* ADD: how it ended, for STATE_DIR/cni (common/cnistate.c) */
	enum nsh_cni_outcome outcome;
};
/* The node's side: the policy file the hook and the wrapper read
 * ($NSHASH_POLICY, else /etc/nshash/nshash.json; absent = the defaults). */
struct nsh_cni_node {
	struct nsh_policy policy;
	bool failed; /* it could not be read: `error` says why */
	struct nshash_error error;
};
/* Load it (main.c). */
void nsh_cni_node_load(struct nsh_cni_node *node);
/* Run one invocation: env + stdin → output, with the node's policy (NULL =
 * the defaults).  Never exits or prints. */
void nsh_cni_run(const struct nsh_cni_env *env, const char *input, size_t len, const struct nsh_cni_ops *ops,
		 const struct nsh_cni_node *node, struct nsh_cni_output *out);
void nsh_cni_output_free(struct nsh_cni_output *out);
/* After the answer is out: ADD counted by outcome in STATE_DIR/cni/adds and,
 * when its pod runs (sized, warned, unsized), recorded with the pod's
 * namespace and name from CNI_ARGS; DEL removes that record. */
int nsh_cni_state_update(const struct nsh_cni_env *env, const struct nsh_cni_output *out, const char *state_dir,
		   struct nshash_error *err);

/* ------------------------------------------------- between the plugin's files */
#define POD_ANNOTATIONS "io.kubernetes.cri.pod-annotations"
#define JSON_OUT_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define CNI_LATEST	"1.1.0" /* the newest of nsh_cni_versions (version.c) */

/* One invocation in progress. */
/* auto.c: `auto` in the network config or the pod annotations replaced by
 * the sizes the history gives the pod's workload (docs/auto.md); the key
 * goes to r->out->workload_key.  Refused (code 102): a bad io.nshash.workload. */
struct nsh_cni_call;
int nsh_cni_auto(struct nsh_cni_call *r, struct nshash_sizes *req, bool *from_ann);
/* After a sized ADD: mark the pod's netns with its workload. */
void nsh_cni_auto_mark(const struct nsh_cni_env *env, const struct nsh_cni_output *out, const char *state_dir);
/* DEL: the pod netns's mark, if it matches, sampled once into the history and
 * removed; errors logged, never the DEL's failure. */
void nsh_cni_auto_teardown(const struct nsh_cni_env *env, const char *state_dir);

struct nsh_cni_call {
	const struct nsh_cni_env *env;
	enum nsh_cni_command command;
	const struct nsh_cni_ops *ops;
	struct nsh_cni_config cfg;
	struct nsh_cni_output *out;
	struct nsh_cni_failure err;
};

/* charge.c: for the creation, move into a transient leaf under the pod's
 * memory cgroup (runtimeConfig.cgroupPath) so that the tables are charged
 * to the pod; back afterwards.  Problems are logged warnings. */
struct nsh_cni_charge {
	bool entered;
	char leaf[4096];
	char back[4096 + 16];
};
/* charge.c: the pod's own cgroup, as runtimeConfig.cgroupPath names it and
 * only when it is the cgroup kubelet made for the pod being added (below),
 * opened beneath the memory hierarchy's root.  It pays for the tables
 * (nsh_cni_charge_enter) and holds the pod's processes: ADD looks there,
 * and only there, for a process inside CNI_NETNS (docs/cni.md). */
struct nsh_cni_podcg {
	bool given;	  /* runtimeConfig has a cgroupPath */
	int fd;		  /* O_PATH of the pod's cgroup, -1 none */
	int e;		  /* 0, or why not: -errno */
	char why[512];	  /* ... in words ("" = strerror) */
	char shown[320];  /* the cgroupPath, escaped */
	const char *root; /* the memory hierarchy's root */
	char rel[4096];	  /* the cgroup beneath it */
};
void nsh_cni_podcg_find(struct nsh_cni_call *r, struct nsh_cni_podcg *pc);
void nsh_cni_podcg_close(struct nsh_cni_podcg *pc);
void nsh_cni_charge_enter(struct nsh_cni_call *r, const struct nsh_cni_podcg *pc, struct nsh_cni_charge *c);
/* charge.c: runtimeConfig.cgroupPath cg checked against the pod being
 * added (pod_uid: K8S_POD_UID, NULL or "" when none): 0 with rel the path
 * under the memory root to open; else -errno with why saying what is wrong
 * (-EINVAL not a clean cgroupfs or systemd path, -EPERM not that pod's). */
int nsh_cni_pod_cgroup(const char *cg, const char *pod_uid, char *rel, size_t len, char *why, size_t wlen);
void nsh_cni_charge_leave(struct nsh_cni_call *r, struct nsh_cni_charge *c);

/* config.c: stdin as one JSON object (code 6 otherwise). */
int nsh_cni_decode(const char *text, size_t len, struct json_object **out, struct nsh_cni_failure *err);
/* result.c: point the one logger (common/log.c) at r->out->log, nothing
 * on stderr, as "nshash[COMMAND ID]: message". */
void nsh_cni_log_setup(struct nsh_cni_call *r);
/* result.c: a line for out->log through the logger. */
void nsh_cni_log(struct nsh_cni_call *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* result.c: ADD's result (prevResult, or the minimal one) on stdout. */
int nsh_cni_add_result(struct nsh_cni_call *r);
/* The commands: 0, or -errno with r->err set. */
int nsh_cni_cmd_add(struct nsh_cni_call *r);
int nsh_cni_cmd_check(struct nsh_cni_call *r);
int nsh_cni_cmd_status(struct nsh_cni_call *r);
int nsh_cni_cmd_version(struct nsh_cni_call *r, const char *input, size_t len);

#endif
