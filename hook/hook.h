/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-hook's own pieces (not the wrapper's): the OCI state on a hook's
 * stdin and the createRuntime/prestart verification.  Not installed. */
#ifndef NSH_HOOK_H
#define NSH_HOOK_H

#include <sys/types.h>

#include "oci.h"

/* OCI state (stdin of every hook but precreate). */
struct nsh_oci_state {
	char id[256];
	pid_t pid; /* 0 when absent (podman's poststop) */
	char bundle[4096];
	char status[64];
	struct nsh_oci_request request; /* from the state's annotations, else the bundle's config */
	char bundle_pin[256];		/* io.nshash.pin in the bundle's config.json ("" none) */
	char bundle_netns[4096];	/* its network namespace path ("" none) */
};
int nsh_oci_state_parse(const char *json, size_t len, struct nsh_oci_state *state, struct nshash_error *err);
/* The pin of a container: the io.nshash.pin that nshash wrote into its
 * bundle together with the netns path of that pin.  "" when none; an error
 * when a user set io.nshash.pin (in the state or the bundle). */
int nsh_oci_state_pin(const struct nsh_oci_state *state, const struct nsh_policy *policy, char *pin, size_t pin_len,
		      struct nshash_error *err);
/* createRuntime/prestart: check /proc/PID/ns/net has what was requested.
 * Returns 0 (ok, nothing requested, or mismatch downgraded to a warning
 * under onFailure warn, in which case *warned is set) or < 0. */
int nsh_oci_verify(const struct nsh_oci_state *state, const struct nsh_policy *policy, struct nshash_netns_info *info,
		   bool *warned, struct nshash_error *err);

#endif
