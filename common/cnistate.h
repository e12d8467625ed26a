/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CNI plugin's state (common/cnistate.c): written by the plugin
 * (cni/), read by the CLI (cmd/: stats, serve, gc).  It lives in common/
 * because two binaries share its format; no other front-end includes it.
 * Not installed. */
#ifndef NSH_CNISTATE_H
#define NSH_CNISTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

/* What the CNI plugin keeps in STATE_DIR/cni for the CLI (`nshash stats`,
 * `nshash serve`, gc): the ADD counters and, per attachment, the pod
 * (struct nsh_cni_pod: its netns's inode, the ADD's outcome, the pod's
 * namespace and name from CNI_ARGS). */
enum nsh_cni_outcome {
	NSH_CNI_NONE = 0,
	NSH_CNI_SIZED,	 /* the pod's netns has the requested tables */
	NSH_CNI_WARNED,	 /* it runs on the shared tables: onFailure warn */
	NSH_CNI_REFUSED, /* the ADD failed */
	NSH_CNI_UNSIZED, /* nothing requested: shared tables by the config */
};
#define NSH_POD_LABEL_MAX 256 /* bytes of a namespace or pod name kept */
#define NSH_POD_ID_MAX	  128 /* a longer container id is not recorded */
struct nsh_cni_pod {
	char id[NSH_POD_ID_MAX + 1];		/* CNI_CONTAINERID */
	uint64_t inode;				/* the netns's nsfs inode after the ADD */
	enum nsh_cni_outcome outcome;		/* sized, warned or unsized */
	char namespace_[NSH_POD_LABEL_MAX + 1]; /* K8S_POD_NAMESPACE, "" unknown */
	char pod[NSH_POD_LABEL_MAX + 1];	/* K8S_POD_NAME, "" unknown */
	char netns[4096];			/* CNI_NETNS */
};
/* "sized", "warned", "refused", "unsized", "none". */
const char *nsh_cni_outcome_name(enum nsh_cni_outcome o);
/* Count one ADD of outcome sized, warned or refused (others: nothing). */
int nsh_cni_adds_count(const char *state_dir, enum nsh_cni_outcome o, struct nshash_error *err);
/* counts[0..2]: sized, warned, refused (0 when nothing was counted). */
int nsh_cni_adds_read(const char *state_dir, uint64_t counts[3], struct nshash_error *err);
int nsh_cni_pod_write(const char *state_dir, const struct nsh_cni_pod *rec, struct nshash_error *err);
/* Both at once (one open of STATE_DIR/cni): count outcome `o` and write `rec`
 * (NULL: none); what the plugin does after an ADD. */
int nsh_cni_state_add(const char *state_dir, enum nsh_cni_outcome o, const struct nsh_cni_pod *rec,
		       struct nshash_error *err);
/* Remove the pod of container `id` (none: 0). */
int nsh_cni_pod_remove(const char *state_dir, const char *id, struct nshash_error *err);
/* The pod of one CNI_CONTAINERID: 1 with *rec, 0 none (or not one). */
int nsh_cni_pod_get(const char *state_dir, const char *id, struct nsh_cni_pod *rec);
/* Every pod (malloc'd; none: NULL, 0). */
int nsh_cni_pods_read(const char *state_dir, struct nsh_cni_pod **out, size_t *count, struct nshash_error *err);
/* The pod of the netns with that inode, or NULL. */
const struct nsh_cni_pod *nsh_cni_pod_find(const struct nsh_cni_pod *v, size_t n, uint64_t inode);
/* Remove the pods whose netns is no longer at their path. */
int nsh_cni_pods_prune(const char *state_dir, size_t *removed, struct nshash_error *err);
/* A CRI runtime's pod netns pin: /run/netns/cni-* or /var/run/netns/cni-*
 * (containerd), /run/netns/UUID or /var/run/netns/UUID (CRI-O with its
 * default namespaces_dir). */
bool nsh_pod_netns_path(const char *path);
/* Why a scanned netns is a pod's on the shared tables although nshash is
 * chained: "unseen" (a pod netns pin, nsh_pod_netns_path, with a shared
 * table and no record: it started before nshash was chained, or its network
 * has no nshash), "warned" (a record says the ADD ran on under onFailure
 * warn, wherever the netns is); NULL: not such a pod. */
const char *nsh_pod_netns_shared(const struct nshash_stats_netns *e, const struct nsh_cni_pod *rec);

#endif
