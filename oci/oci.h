/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the OCI hook (hook/, nshash-hook) and the runtime wrapper
 * (runtime/, nshash-runtime) share: the io.nshash.* annotations, the
 * config document, the one config transform, `auto`, pins, refusals.
 * Not installed. */
#ifndef NSH_OCI_H
#define NSH_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "auto.h"
#include "common.h"

struct json_object;

#define NSH_OCI_CONFIG_MAX_BYTES (16 * 1024 * 1024) /* config.json / state on stdin */

/* What a config's io.nshash.* annotations ask for. */
struct nsh_oci_request {
	bool present;		   /* io.nshash.tcp or io.nshash.udp given (after the transform's
				      decision: some source named a protocol) */
	bool said[2];		   /* io.nshash.tcp / io.nshash.udp given, each */
	struct nshash_sizes sizes; /* requested (0 for a protocol not given) */
	char pin[256];		   /* io.nshash.pin, "" if absent */
	bool auto_tcp, auto_udp;   /* io.nshash.tcp/udp=auto: sizes from the history (docs/auto.md) */
	char workload[NSH_WORKLOAD_NAME_MAX + 1]; /* io.nshash.workload, "" if absent */
};
/* Parse the annotations object of an OCI config or state (JSON text of the
 * whole document).  Unknown io.nshash.* keys, non-string values and bad
 * sizes are errors naming the key and value. */
int nsh_oci_request_parse(const char *json, size_t len, struct nsh_oci_request *req, struct nshash_error *err);

enum nsh_oci_mode {
	NSH_OCI_PRECREATE = 0, /* podman's precreate: config on stdin */
	NSH_OCI_WRAPPER = 1,   /* nshash-runtime: the path only (no io.nshash.pin) */
};
/* wrapper: a spare netns taken in the host's mount namespace before the
 * private one was entered (nshash_spare_take: an unmount there would not
 * reach the host's spares) */
struct nsh_oci_spare {
	int fd; /* -1 none */
	struct nshash_sizes sizes;
	struct nshash_netns_info info;
	bool used; /* out: pinned for this container */
};
struct nsh_oci_opts {
	enum nsh_oci_mode mode;
	const struct nsh_policy *policy;
	const char *pin_name; /* NULL = a random unique name */
	const char *pin_path; /* wrapper: pin exactly there (its private tmpfs), not under STATE_DIR/pins */
	/* wrapper: where a container's own user namespace is pinned (its
	 * private tmpfs); NULL: precreate pins it at STATE_DIR/userns/NAME,
	 * the wrapper refuses (its shared-propagation path) */
	const char *userns_pin_path;
	const char *hook_path;	 /* wrapper: absolute path of nshash-hook */
	const char *policy_path; /* wrapper: passed to the added hooks; NULL = none */
	/* wrapper: what --nshash-tcp/--nshash-udp say (each decides its
	 * protocol where the config's annotations do not; =0: shared); NULL =
	 * none.  Then the policy's defaultTcp/defaultUdp (docs/sizing.md). */
	const struct nsh_said *runtime;
	struct nsh_oci_spare *spare; /* wrapper: NULL = none */
	const char *container_id;    /* wrapper: the container's id, the workload key's last resort */
};
enum nsh_oci_action {
	NSH_OCI_UNTOUCHED = 0, /* no nshash annotations: output = input */
	NSH_OCI_SIZED,	       /* sized netns created, pinned, path rewritten */
	NSH_OCI_ALREADY,       /* its netns is our pin, or already has the sizes: unchanged */
	NSH_OCI_WARNED,	       /* could not size; policy warn: config unchanged */
	NSH_OCI_TRANSPLANTED,  /* precreate: podman's configured netns replaced at its path */
	/* asked nothing, the node's defaults would apply, but it joins a netns
	 * it cannot size (the host's, another container's): config unchanged */
	NSH_OCI_DEFAULTS_SKIPPED,
};
struct nsh_oci_result {
	enum nsh_oci_action action;
	struct nsh_oci_request request;
	struct nshash_netns_info info; /* SIZED: what the new netns has */
	char pin_path[4096];	       /* SIZED/ALREADY */
	char userns_pin_path[4096];    /* SIZED in a new user namespace: its pin ("" none) */
	char warning[1024];	       /* WARNED: why */
	char hostname[256];	       /* the config's hostname (podman: the short id), for logs */
	struct nsh_decision decision;  /* per protocol: the sizes decided and by whom */
	bool from_defaults;	       /* some protocol was decided by the wrapper's options */
	bool from_policy;	       /* what it asks comes only from the policy's defaultTcp/defaultUdp */
	char moved[800];	       /* TRANSPLANTED: "recreated eth0, moved eth1 (not recreated: why)" */
	char workload_key[NSH_WORKLOAD_KEY_MAX]; /* `auto`: the workload the netns is marked with, "" none */
	bool adopted; /* ALREADY: podman's own netns, as `auto` wanted it, marked for its workload */
};
/* auto.c: `auto` in the request (annotations, the wrapper's
 * options, the policy's defaults) replaced by the sizes the history gives
 * the container's workload (docs/auto.md); the key goes to `key`.  A
 * damaged history is a warning in the log, never an error. */
int nsh_oci_auto_resolve(struct json_object *doc, const struct nsh_oci_opts *opts, struct nsh_oci_request *req,
			 char *key, size_t keylen, struct nshash_error *err);
/* Mark the netns the transform sized (or adopted) with its workload (no-op without one). */
void nsh_oci_auto_mark(const struct nsh_policy *policy, const struct nsh_oci_result *res);
/* The netns at pin_path goes: its workload mark, if it matches, sampled once
 * into the history and removed (errors logged, never returned). */
void nsh_oci_auto_teardown(const struct nsh_policy *policy, const char *pin_path, const char *id);
/* The one config transform shared by the hook and the wrapper.  On success
 * *out is a malloc'd config (a copy of the input when nothing changed) and,
 * for SIZED, a pin exists that the caller must remove if it cannot hand the
 * config on (nshash_pin_remove(result->pin_path)).  On error nothing is left. */
int nsh_oci_transform(const char *config, size_t len, const struct nsh_oci_opts *opts, char **out, size_t *out_len,
		      struct nsh_oci_result *result, struct nshash_error *err);
/* One log line for what a transform did (nothing for UNTOUCHED): requested
 * and effective sizes, the pin or the warning. */
void nsh_oci_log_result(const char *who, const struct nsh_oci_result *result);
/* poststop / wrapper delete: remove STATE_DIR/pins/NAME; succeeds when gone.
 * Returns 1 (err says why) and keeps the pin while a process uses it. */
int nsh_oci_pin_path(const struct nsh_policy *policy, const char *name, char *out, size_t outlen,
		     struct nshash_error *err);
int nsh_oci_cleanup(const struct nsh_policy *policy, const char *pin_name, struct nshash_error *err);
/* The wrapper's pin name for container ID under runtime root ROOT (ids
 * repeat across containerd namespaces): "ID-HASH8". */
int nsh_oci_wrapper_pin_name(const char *id, const char *root, char *out, size_t outlen, struct nshash_error *err);

/* The transform's decision for a config's request (its annotations),
 * the wrapper's options (NULL none) and the policy's defaults: req's
 * sizes and auto flags become the decided ones (docs/sizing.md). */
void nsh_oci_decide(const struct nsh_policy *policy, const struct nsh_said *runtime, struct nsh_oci_request *req,
		    struct nsh_decision *d);
/* What the decision's sources are called in messages. */
extern const char *const nsh_oci_src_names[NSH_SRC_COUNT];

/* annotations.c: the request in an annotations object (NULL or JSON null =
 * none). */
int nsh_oci_request_from_annotations(struct json_object *ann, struct nsh_oci_request *req, struct nshash_error *err);
/* config.c: what an OCI config document is.  Its linux.namespaces entry
 * of that type ("user", "network"), or NULL. */
struct json_object *nsh_oci_namespace_entry(struct json_object *doc, const char *type);
/* ... of type network, or NULL. */
struct json_object *nsh_oci_network_entry(struct json_object *doc);
/* config.c: the path of the entry of that type ("" or no path: NULL). */
const char *nsh_oci_namespace_path(struct json_object *doc, const char *type);
/* config.c: does the config ask for a new user namespace (a user entry
 * without a path)? */
bool nsh_oci_wants_new_userns(struct json_object *doc);
/* config.c: do mounts the container makes have to reach the host
 * (linux.rootfsPropagation or a mount option shared/rshared: Kubernetes
 * "Bidirectional", Docker bind-propagation=rshared)? */
bool nsh_oci_doc_wants_shared(struct json_object *doc);
/* userns.c: the container's user namespace with exactly its config's
 * linux.uidMappings/gidMappings and a netns of copts->sizes it owns,
 * pinned at userns_pin and pin_path; on failure nothing is left. */
int nsh_oci_userns_create(struct json_object *doc, const struct nshash_create_opts *copts, const char *pin_path,
			  const char *userns_pin, struct nshash_netns_info *info, struct nshash_error *err);
/* userns.c: for a container joining the user namespace at `path`: when
 * that is not the caller's own, make the sized netns in it and pin it at
 * pin_path (1), else 0 (make it as usual); < 0 on errors, nothing left. */
int nsh_oci_userns_join_create(const char *path, const struct nsh_policy *policy, struct nshash_sizes sizes,
			       const char *pin_path, struct nshash_netns_info *info, struct nshash_error *err);
/* refusal.c: the error for a new user namespace on the wrapper's
 * shared-propagation path (sibling.c), where nshash cannot make it. */
int nsh_oci_refuse_userns_shared(struct nshash_sizes req, struct nshash_error *err);
/* refusal.c: why the netns at `path` cannot be used (what it is, what it
 * has, or, `info` NULL, why inspecting it failed: `ierr`) and what to do,
 * in the terms of the engine that wrote `doc`, into out. */
void nsh_oci_explain_existing(struct json_object *doc, const char *path, const struct nshash_netns_info *info,
			      const struct nshash_error *ierr, char *out, size_t n);
/* refusal.c: the error for a config without a network namespace entry. */
int nsh_oci_refuse_no_entry(struct json_object *doc, struct nshash_sizes req, struct nshash_error *err);
/* pins.c: "oci-" + 16 random hex digits, for the precreate hook. */
int nsh_oci_random_pin_name(char *out, size_t outlen, struct nshash_error *err);

#endif
