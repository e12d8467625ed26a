/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one config transform shared by the hook and the wrapper: create a
 * sized netns, pin it, point the config's network namespace entry at it. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

static int dup_out(const char *text, size_t len, char **out, size_t *out_len, struct nshash_error *err)
{
	*out = malloc(len + 1);
	if (!*out)
		return nshash_error_set(err, ENOMEM, "config: out of memory");
	memcpy(*out, text, len);
	(*out)[len] = '\0';
	*out_len = len;
	return 0;
}

/* One transform in progress: what parse finds, decide and apply use. */
struct transform {
	const struct nsh_oci_opts *opts;
	struct nsh_oci_result *res;
	struct json_object *doc;   /* the config */
	struct json_object *ann;   /* its annotations, NULL = none */
	struct json_object *entry; /* its network namespace entry */
	const char *path;	   /* that entry's path, NULL = none */
	char name[256];		   /* the new pin's name */
	bool pinned;		   /* a pin exists that a failure must remove */
	bool new_userns;	   /* linux.namespaces has a user entry without a path */
	const char *userns_path;   /* ... or with this path, NULL = none */
	bool learn0;		   /* `auto` gave the shared tables: only to learn, never refuse */
};

/* What decide and apply conclude. */
enum { KEEP_CONFIG = 0, SIZE_NETNS = 1, CONFIG_CHANGED = 2, TRANSPLANT_NETNS = 3 };

/* The container keeps what it has when it cannot be sized: it asked
 * nothing (the node's defaults) or `auto` gave 0/0 (a first run, to
 * learn from; a host-network or joined netns simply is not learned). */
static bool never_refuse(const struct transform *t)
{
	return t->res->from_policy || t->learn0;
}

static int learn_skipped(struct transform *t)
{
	t->res->action = NSH_OCI_UNTOUCHED;
	return KEEP_CONFIG;
}

/* Parse: the document, its hostname (for logs) and the request. */
static int transform_parse(struct transform *t, const char *config, size_t len, struct nshash_error *err)
{
	struct json_object *h;
	int r = nsh_json_parse_text(config, len, "config", &t->doc, err);

	if (r < 0)
		return r;
	if (!json_object_is_type(t->doc, json_type_object))
		return nshash_error_set(err, EINVAL, "config: expected a JSON object, got %s",
					json_type_to_name(json_object_get_type(t->doc)));
	if (json_object_object_get_ex(t->doc, "hostname", &h) && json_object_is_type(h, json_type_string))
		snprintf(t->res->hostname, sizeof(t->res->hostname), "%s", json_object_get_string(h));
	json_object_object_get_ex(t->doc, "annotations", &t->ann);
	t->new_userns = nsh_oci_wants_new_userns(t->doc);
	t->userns_path = nsh_oci_namespace_path(t->doc, "user");
	r = nsh_oci_request_from_annotations(t->ann, &t->res->request, err);
	/* per protocol (docs/sizing.md): the annotation, else the wrapper's
	 * --nshash-tcp/--nshash-udp (even 0: shared), else the node's
	 * defaultTcp/defaultUdp; `auto` resolved after */
	if (r == 0) {
		nsh_oci_decide(t->opts->policy, t->opts->runtime, &t->res->request, &t->res->decision);
		t->res->from_defaults = nsh_decision_any_from(&t->res->decision, NSH_SRC_RUNTIME);
		t->res->from_policy = nsh_decision_asks_only_from(&t->res->decision, NSH_SRC_DEFAULT);
	}
	if (r == 0)
		r = nsh_oci_auto_resolve(t->doc, t->opts, &t->res->request, t->res->workload_key,
					 sizeof(t->res->workload_key), err);
	return r;
}

/* Decide, for a config carrying io.nshash.pin: already transformed
 * (podman's hook, then nshash-runtime as its runtime, or a retried
 * create): accept only our own pin.  podman hands precreate the spec from
 * its database, which never holds our pin: there it can only come from
 * the user.  KEEP_CONFIG when the pin is ours and still there. */
static int decide_given_pin(struct transform *t, struct nshash_error *err)
{
	struct nsh_oci_result *res = t->res;
	const struct nsh_oci_opts *opts = t->opts;
	int r = nsh_oci_pin_path(opts->policy, res->request.pin, res->pin_path, sizeof(res->pin_path), err);

	if (r < 0)
		return r;
	if (opts->mode == NSH_OCI_PRECREATE || !t->path || strcmp(t->path, res->pin_path) != 0)
		return nshash_error_set(err, EINVAL, "annotation %s=%s is set by nshash itself and cannot be given",
					NSH_ANNOTATION_PIN, res->request.pin);
	/* A pin of the precreate hook ("oci-*", podman with nshash-runtime
	 * as its runtime) or of this very container is used as is; the
	 * pin of another container (a bundle reused under a new id) is
	 * not shared: size afresh. */
	bool mine =
	    !opts->pin_name || !strcmp(res->request.pin, opts->pin_name) || !strncmp(res->request.pin, "oci-", 4);
	if (mine && nshash_pin_is_netns(res->pin_path, err) == 1) {
		/* Verified when it was made, and sizes never change: not entered
		 * again.  Entering it here would also look, to the hook's
		 * hand-over child, like the container's init arriving (a process
		 * from another mount namespace: nshash-runtime works in a private
		 * one), and the pin would be removed before the runtime opens it. */
		memset(&res->info, 0, sizeof(res->info));
		res->action = NSH_OCI_ALREADY;
		return KEEP_CONFIG;
	}
	/* Our own earlier transform whose pin is gone (a bundle run
	 * again) or another container's: size it afresh. */
	t->path = NULL;
	res->pin_path[0] = '\0';
	return SIZE_NETNS;
}

/* The netns podman makes for a container's network (/run/netns/netns-UUID),
 * as opposed to one a user names with --network ns:PATH, which nshash does
 * not replace behind the user's back. */
static bool engine_netns(const char *path)
{
	const char *prefix = NSHASH_NETNS_RUN_DIR "/netns-";
	size_t n = strlen(prefix), i;

	if (strncmp(path, prefix, n) != 0)
		return false;
	for (i = n; path[i]; i++)
		if (!isxdigit((unsigned char)path[i]) && path[i] != '-')
			return false;
	return i - n == 36;
}

/* A container that asked nothing but gets the node's defaults, joining a
 * netns it cannot size (the host's: no path; another container's, a
 * pod's; `info` NULL when it could not be inspected): runs unsized, never
 * refused, and the log says why. */
static int skip_defaults(struct transform *t, const struct nshash_netns_info *info)
{
	struct nsh_oci_result *res = t->res;
	char shown[300] = "";

	/* a hostile path must not forge log lines */
	for (size_t i = 0; t->path && i < sizeof(shown) - 1 && (shown[i] = t->path[i]); i++)
		if ((unsigned char)shown[i] < 0x20 || (unsigned char)shown[i] >= 0x7f)
			shown[i] = '?';
	shown[sizeof(shown) - 1] = '\0';
	if (!t->path)
		snprintf(res->warning, sizeof(res->warning),
			 "it shares the host's network namespace (no network namespace entry)");
	else if (!info)
		snprintf(res->warning, sizeof(res->warning), "it joins the network namespace %s (not inspected)",
			 shown);
	else
		snprintf(res->warning, sizeof(res->warning), "it joins the network namespace %s (tcp=%ld udp=%ld)",
			 shown, info->tcp_entries, info->udp_entries);
	res->action = NSH_OCI_DEFAULTS_SKIPPED;
	return KEEP_CONFIG;
}

/* Decide, for a config whose netns path exists already: sized before us
 * (`nshash create` + --network ns:, the nshash CNI plugin first in the
 * chain, Docker's --network container:X of a container sized alike) is
 * fine if it has what was asked for; podman's own netns, which its network
 * backend configured already, is transplanted (precreate); anything else
 * cannot be resized: an error, or a warning under onFailure warn, saying
 * what is true (refusal.c). */
static int decide_given_path(struct transform *t, struct nshash_error *err)
{
	struct nsh_oci_result *res = t->res;
	struct nshash_error ierr = {0};
	struct nshash_netns_info info;
	bool inspected = nshash_inspect_path(t->path, &info, &ierr) == 0;

	if (inspected && nshash_verify(&info, res->request.sizes, t->path, &ierr) == 0) {
		res->info = info;
		snprintf(res->pin_path, sizeof(res->pin_path), "%s", t->path);
		res->action = NSH_OCI_ALREADY;
		/* podman's own netns of this container, on the shared tables that
		 * `auto` gave: adopted as it is (marked for its workload) */
		if (t->opts->mode == NSH_OCI_PRECREATE && engine_netns(t->path) && res->workload_key[0])
			res->adopted = true;
		return KEEP_CONFIG;
	}
	if (t->opts->mode == NSH_OCI_PRECREATE && engine_netns(t->path)) {
		/* the node's defaults never replace tables chosen for this
		 * netns: a podman network's io.nshash.* labels (nshash's
		 * netavark sized it before the hook runs, docs/networks.md) */
		if (never_refuse(t) && inspected && (info.tcp_entries > 0 || info.udp_entries > 0)) {
			res->info = info;
			snprintf(res->pin_path, sizeof(res->pin_path), "%s", t->path);
			res->action = NSH_OCI_ALREADY;
			return KEEP_CONFIG;
		}
		return TRANSPLANT_NETNS;
	}
	if (t->learn0) /* joins a netns that is not its own: nothing to learn */
		return learn_skipped(t);
	if (res->from_policy) /* joins a netns that is not its own: the defaults do not apply */
		return skip_defaults(t, inspected ? &info : NULL);
	nsh_oci_explain_existing(t->doc, t->path, inspected ? &info : NULL, &ierr, res->warning, sizeof(res->warning));
	if (t->opts->policy->on_failure == NSH_ON_FAILURE_WARN) {
		res->action = NSH_OCI_WARNED;
		return KEEP_CONFIG;
	}
	return nshash_error_set(err, inspected ? EEXIST : ierr.errnum, "cannot size tcp=%u udp=%u: %s",
				res->request.sizes.tcp, res->request.sizes.udp, res->warning);
}

/* Decide: KEEP_CONFIG (res->action says why), SIZE_NETNS, or an error. */
static int transform_decide(struct transform *t, struct nshash_error *err)
{
	struct nsh_oci_result *res = t->res;
	const struct nsh_oci_opts *opts = t->opts;
	int r;

	/* `auto` that gives the shared tables (no history, autoInitial* 0) for a
	 * known workload: nshash still makes the netns (shared tables) and
	 * marks it, or (podman's bridge) marks podman's own, so that `nshash
	 * record` samples the first run and the next start is sized. */
	bool learn = res->workload_key[0] && (res->request.auto_tcp || res->request.auto_udp);
	t->learn0 = learn && res->request.sizes.tcp == 0 && res->request.sizes.udp == 0;
	if (!res->request.present || (res->request.sizes.tcp == 0 && res->request.sizes.udp == 0 && !learn)) {
		if (res->request.pin[0])
			return nshash_error_set(
			    err, EINVAL, "annotation %s is set by nshash itself and cannot be given without %s/%s",
			    NSH_ANNOTATION_PIN, NSH_ANNOTATION_TCP, NSH_ANNOTATION_UDP);
		res->action = NSH_OCI_UNTOUCHED;
		return KEEP_CONFIG;
	}
	/* each protocol within its cap, the error naming the source that decided it */
	struct nsh_decision capped = res->decision;
	capped.sizes = res->request.sizes; /* `auto` resolved */
	r = nsh_decision_cap(&capped, opts->policy->max, nsh_oci_src_names, err);
	if (r < 0)
		return nshash_error_prefix(err, "policy %s", opts->policy->source), r;
	t->entry = nsh_oci_network_entry(t->doc);
	if (!t->entry && t->learn0)
		return learn_skipped(t);
	if (!t->entry && res->from_policy)
		return skip_defaults(t, NULL);
	if (!t->entry)
		return nsh_oci_refuse_no_entry(t->doc, res->request.sizes, err);
	t->path = nsh_oci_namespace_path(t->doc, "network");
	if (res->request.pin[0] && (r = decide_given_pin(t, err)) != SIZE_NETNS)
		return r;
	if (t->path)
		return decide_given_path(t, err);
	if (t->new_userns && opts->mode == NSH_OCI_WRAPPER && !opts->userns_pin_path) {
		/* asked nothing: the node's defaults never refuse a container */
		if (t->learn0)
			return learn_skipped(t);
		if (!res->from_policy)
			return nsh_oci_refuse_userns_shared(res->request.sizes, err);
		snprintf(res->warning, sizeof(res->warning),
			 "it has a user namespace of its own and asks for shared mount propagation, "
			 "which nshash-runtime cannot size together");
		res->action = NSH_OCI_DEFAULTS_SKIPPED;
		return KEEP_CONFIG;
	}
	return SIZE_NETNS;
}

/* Apply, first half: create the sized netns and pin it under
 * STATE_DIR/pins.  KEEP_CONFIG when that failed under onFailure warn. */
static int create_pinned(struct transform *t, struct nshash_error *err)
{
	const struct nsh_policy *policy = t->opts->policy;
	struct nsh_oci_result *res = t->res;
	char dir[4096];
	int r = 0;

	if (t->opts->pin_name)
		snprintf(t->name, sizeof(t->name), "%s", t->opts->pin_name);
	else
		r = nsh_oci_random_pin_name(t->name, sizeof(t->name), err);
	if (r == 0 && t->opts->pin_path)
		snprintf(res->pin_path, sizeof(res->pin_path), "%s", t->opts->pin_path);
	else if (r == 0)
		r = nsh_oci_pin_path(policy, t->name, res->pin_path, sizeof(res->pin_path), err);
	if (r < 0)
		return r;
	if (!t->opts->pin_path) {
		r = nshash_state_subdir(policy->state_dir, "pins", dir, sizeof(dir), err);
		if (r == 0)
			r = nshash_pin_dir_prepare(dir, err);
	}
	struct nsh_oci_spare *spare = t->opts->spare;
	struct nshash_sizes want = nshash_sizes_effective(res->request.sizes), have = {0};
	if (spare && spare->fd >= 0)
		have = nshash_sizes_effective(spare->sizes);
	if (r == 0 && t->new_userns && !t->opts->userns_pin_path) {
		/* precreate: STATE_DIR/userns/NAME beside STATE_DIR/pins/NAME */
		r = nshash_state_subdir(policy->state_dir, "userns", dir, sizeof(dir), err);
		if (r == 0)
			r = nshash_pin_dir_prepare(dir, err);
		if (r == 0 && (size_t)snprintf(res->userns_pin_path, sizeof(res->userns_pin_path), "%s/%s", dir,
					       t->name) >= sizeof(res->userns_pin_path))
			r = nshash_error_set(err, ENAMETOOLONG, "%s/%s: path too long", dir, t->name);
	} else if (r == 0 && t->new_userns) {
		snprintf(res->userns_pin_path, sizeof(res->userns_pin_path), "%s", t->opts->userns_pin_path);
	}
	if (r == 0 && t->new_userns) {
		/* spares and templates are the host user namespace's: never one */
		struct nshash_create_opts copts = nsh_policy_create_opts(policy, res->request.sizes);
		r = nsh_oci_userns_create(t->doc, &copts, res->pin_path, res->userns_pin_path, &res->info, err);
		if (r < 0)
			res->userns_pin_path[0] = '\0';
	} else if (r == 0 && t->userns_path &&
		   (r = nsh_oci_userns_join_create(t->userns_path, policy, res->request.sizes, res->pin_path,
						   &res->info, err)) != 0) {
		/* the container joins a user namespace not ours: its netns was made
		 * there (1), or that failed (< 0) */
		if (r > 0)
			r = 0;
	} else if (r == 0 && spare && spare->fd >= 0 && have.tcp == want.tcp && have.udp == want.udp) {
		r = nshash_pin_fd(spare->fd, res->pin_path, err);
		if (r == 0) {
			res->info = spare->info;
			spare->used = true;
		}
	} else if (r == 0) {
		struct nshash_create_opts copts = nsh_policy_create_opts(policy, res->request.sizes);
		/* the wrapper takes its spare before entering its private
		 * mount namespace, never in it */
		if (t->opts->mode == NSH_OCI_WRAPPER)
			copts.spares = 0;
		r = nshash_netns_create(&copts, res->pin_path, &res->info, err);
	}
	if (r < 0 && policy->on_failure == NSH_ON_FAILURE_WARN) {
		snprintf(res->warning, sizeof(res->warning), "%s", err->msg);
		res->pin_path[0] = '\0';
		res->action = NSH_OCI_WARNED;
		return KEEP_CONFIG;
	}
	if (r < 0)
		return r;
	t->pinned = true;
	return SIZE_NETNS;
}

static bool name_listed(const char *list, const char *name)
{
	char copy[256], *save = NULL;
	snprintf(copy, sizeof(copy), "%s", list);
	for (char *n = strtok_r(copy, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
		if (strcmp(n, name) == 0)
			return true;
	return false;
}

/* What the transplant did with the links, for the log: "recreated eth0",
 * "moved eth0 (not recreated: eth0: its host side ...)". */
static void links_done(const struct nshash_transplant_report *rep, char *out, size_t len)
{
	char names[256], moved[256] = "", *save = NULL;
	snprintf(names, sizeof(names), "%s", rep->link_names);
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
		if (!name_listed(rep->recreated_names, n))
			snprintf(moved + strlen(moved), sizeof(moved) - strlen(moved), "%s%s", moved[0] ? ", " : "", n);
	if (!rep->links)
		snprintf(out, len, "no links");
	else
		snprintf(out, len, "%s%s%s%s%s%s%s%s", rep->recreated ? "recreated " : "", rep->recreated_names,
			 rep->recreated && moved[0] ? ", " : "", moved[0] ? "moved " : "", moved,
			 rep->fallback[0] ? " (not recreated: " : "", rep->fallback, rep->fallback[0] ? ")" : "");
}

/* Apply, for podman's configured netns: replace it at the same path by a
 * sized netns with the same links and configuration; the config stays as
 * it is.  KEEP_CONFIG (transplanted, or warned) or an error. */
static int transform_transplant(struct transform *t, struct nshash_error *err)
{
	const struct nsh_policy *policy = t->opts->policy;
	struct nsh_oci_result *res = t->res;
	struct nshash_transplant_opts topts = {
	    /* the policy's budget and spares, as for any creation */
	    .create = nsh_policy_create_opts(policy, res->request.sizes),
	    .engine_made = true, /* podman, which runs the hook, made it and holds it open (its handle on the path) */
	};
	struct nshash_transplant_report rep;
	int r = nshash_netns_transplant(&topts, t->path, &rep, err);

	if (r == 0) {
		res->info = rep.info;
		snprintf(res->pin_path, sizeof(res->pin_path), "%s", t->path);
		links_done(&rep, res->moved, sizeof(res->moved));
		res->action = NSH_OCI_TRANSPLANTED;
		return KEEP_CONFIG;
	}
	if (policy->on_failure == NSH_ON_FAILURE_WARN) {
		snprintf(res->warning, sizeof(res->warning), "%s", err->msg);
		res->action = NSH_OCI_WARNED;
		return KEEP_CONFIG;
	}
	return nshash_error_prefix(err, "cannot size %s=%u %s=%u", NSH_ANNOTATION_TCP, res->request.sizes.tcp,
				   NSH_ANNOTATION_UDP, res->request.sizes.udp);
}

/* The sizes a container got, as io.nshash.tcp/io.nshash.udp of `ann`. */
static void annotate_sizes(struct json_object *ann, struct nshash_sizes sizes)
{
	char v[16];
	snprintf(v, sizeof(v), "%u", sizes.tcp);
	json_object_object_add(ann, NSH_ANNOTATION_TCP, json_object_new_string(v));
	snprintf(v, sizeof(v), "%u", sizes.udp);
	json_object_object_add(ann, NSH_ANNOTATION_UDP, json_object_new_string(v));
}

/* Apply: create and pin, point the network entry at the pin and (hook)
 * name it in the annotations, where the hook's later stages find it.  The
 * wrapper adds nothing else: it checks and drops the pin itself.
 * CONFIG_CHANGED, KEEP_CONFIG (warned) or an error. */
static int transform_apply(struct transform *t, struct nshash_error *err)
{
	int r = create_pinned(t, err);

	if (r != SIZE_NETNS)
		return r;
	json_object_object_add(t->entry, "path", json_object_new_string(t->res->pin_path));
	if (t->res->userns_pin_path[0]) /* the mappings stay: runc and crun read them */
		json_object_object_add(nsh_oci_namespace_entry(t->doc, "user"), "path",
				       json_object_new_string(t->res->userns_pin_path));
	if (t->opts->mode == NSH_OCI_WRAPPER)
		return CONFIG_CHANGED;
	if (!t->ann || !json_object_is_type(t->ann, json_type_object)) {
		t->ann = json_object_new_object();
		json_object_object_add(t->doc, "annotations", t->ann);
	}
	json_object_object_add(t->ann, NSH_ANNOTATION_PIN, json_object_new_string(t->name));
	/* the sizes it got, where the runtime (nshash-runtime) and the state
	 * hooks look: the pin is not one without them, and a protocol the
	 * annotations did not name got the node's default */
	if (nsh_decision_any_from(&t->res->decision, NSH_SRC_DEFAULT))
		annotate_sizes(t->ann, t->res->request.sizes);
	return CONFIG_CHANGED;
}

/* `auto` in the container's annotations is resolved once, here: the config
 * handed on says what was decided, where every later stage reads it (the
 * createRuntime verification reads the bundle's config, nshash-runtime
 * after the hook reads the hook's output) instead of deciding again.  A
 * container given its sizes (a netns made, transplanted, or found with
 * them) gets them as numbers in io.nshash.tcp/io.nshash.udp; one that was
 * not sized (it joins a netns not its own, onFailure warn) asks nothing
 * any more.  True when the config changed. */
static bool annotate_decided(struct transform *t)
{
	struct nsh_oci_result *res = t->res;
	const struct nsh_oci_request *rq = &res->request;
	const struct nsh_decision *d = &res->decision;
	bool ann_auto = (d->is_auto[0] && d->src[0] == NSH_SRC_ANNOTATION) ||
			(d->is_auto[1] && d->src[1] == NSH_SRC_ANNOTATION);
	/* annotations naming one protocol, the node's default the other */
	bool mixed = nsh_decision_any_from(d, NSH_SRC_ANNOTATION) && nsh_decision_any_from(d, NSH_SRC_DEFAULT);
	if ((!ann_auto && !mixed) || !t->ann || !json_object_is_type(t->ann, json_type_object))
		return false; /* the annotations say all that was decided */
	bool sized = res->action == NSH_OCI_SIZED || res->action == NSH_OCI_TRANSPLANTED || res->action == NSH_OCI_ALREADY;
	if (sized) {
		annotate_sizes(t->ann, rq->sizes);
	} else if (ann_auto) {
		json_object_object_del(t->ann, NSH_ANNOTATION_TCP);
		json_object_object_del(t->ann, NSH_ANNOTATION_UDP);
	}
	return sized || ann_auto;
}

static int serialize(struct json_object *doc, char **out, size_t *out_len, struct nshash_error *err)
{
	size_t n;
	const char *s =
	    json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);

	if (!s)
		return nshash_error_set(err, ENOMEM, "config: cannot serialize");
	return dup_out(s, n, out, out_len, err);
}

int nsh_oci_transform(const char *config, size_t len, const struct nsh_oci_opts *opts, char **out, size_t *out_len,
		      struct nsh_oci_result *res, struct nshash_error *err)
{
	struct transform t = {.opts = opts, .res = res};
	int r;

	memset(res, 0, sizeof(*res));
	*out = NULL;
	*out_len = 0;
	r = transform_parse(&t, config, len, err);
	if (r == 0)
		r = transform_decide(&t, err);
	if (r == SIZE_NETNS)
		r = transform_apply(&t, err);
	else if (r == TRANSPLANT_NETNS)
		r = transform_transplant(&t, err);
	if (r == KEEP_CONFIG || r == CONFIG_CHANGED) {
		bool changed = r == CONFIG_CHANGED;
		if (changed)
			res->action = NSH_OCI_SIZED;
		changed |= annotate_decided(&t);
		r = changed ? serialize(t.doc, out, out_len, err) : dup_out(config, len, out, out_len, err);
	}
	if (r < 0 && t.pinned) {
		struct nshash_error e2;
		nshash_pin_remove(res->pin_path, &e2);
		if (res->userns_pin_path[0])
			nshash_userns_pin_remove(res->userns_pin_path, &e2);
	}
	if (r < 0) {
		free(*out);
		*out = NULL;
	}
	if (r == 0)
		nsh_oci_auto_mark(opts->policy, res);
	json_object_put(t.doc);
	return r;
}

void nsh_oci_log_result(const char *who, const struct nsh_oci_result *res)
{
	const struct nshash_sizes *rq = &res->request.sizes;
	char srcbuf[160], by[120] = "";
	const char *src = "";
	if (res->from_policy)
		src = " (the node's defaultTcp/defaultUdp)";
	else if (res->decision.src[0] != res->decision.src[1] && res->decision.src[0] && res->decision.src[1]) {
		snprintf(srcbuf, sizeof(srcbuf), " (%s)",
			 nsh_decision_text(&res->decision, nsh_oci_src_names, by, sizeof(by)));
		src = srcbuf;
	}

	switch (res->action) {
	case NSH_OCI_SIZED:
		nsh_log(NSH_LOG_INFO, who,
			"sized netns pinned at %s: requested tcp=%u udp=%u%s, effective tcp=%ld udp=%ld%s%s%s",
			res->pin_path, rq->tcp, rq->udp, src, res->info.tcp_entries, res->info.udp_entries,
			res->userns_pin_path[0] ? " (owned by the container's user namespace, pinned at " : "",
			res->userns_pin_path, res->userns_pin_path[0] ? ")" : "");
		break;
	case NSH_OCI_ALREADY:
		if (res->adopted) {
			nsh_log(NSH_LOG_INFO, who,
				"engine's netns %s kept on the shared tables (auto: tcp=%u udp=%u), marked for its "
				"workload: effective tcp=%ld udp=%ld",
				res->pin_path, rq->tcp, rq->udp, res->info.tcp_entries, res->info.udp_entries);
			break;
		}
		if (!res->info.tcp_entries && !res->info.udp_entries) { /* nshash's own pin, not entered */
			nsh_log(NSH_LOG_INFO, who, "netns %s was sized by nshash: requested tcp=%u udp=%u",
				res->pin_path, rq->tcp, rq->udp);
			break;
		}
		nsh_log(NSH_LOG_INFO, who,
			"netns %s is already sized: requested tcp=%u udp=%u%s, effective tcp=%ld udp=%ld",
			res->pin_path, rq->tcp, rq->udp, src, res->info.tcp_entries, res->info.udp_entries);
		break;
	case NSH_OCI_TRANSPLANTED:
		nsh_log(NSH_LOG_INFO, who,
			"engine's netns %s replaced by a sized one with its configuration (%s): requested "
			"tcp=%u udp=%u%s, effective tcp=%ld udp=%ld",
			res->pin_path, res->moved, rq->tcp, rq->udp, src, res->info.tcp_entries, res->info.udp_entries);
		break;
	case NSH_OCI_WARNED:
		nsh_log(NSH_LOG_WARN, who,
			"requested tcp=%u udp=%u%s, effective: shared global tables (onFailure warn): %s", rq->tcp,
			rq->udp, src, res->warning);
		break;
	case NSH_OCI_DEFAULTS_SKIPPED:
		nsh_log(NSH_LOG_INFO, who,
			"asked for no sizes: the node's defaults tcp=%u udp=%u do not apply, it runs unsized: %s",
			rq->tcp, rq->udp, res->warning);
		break;
	case NSH_OCI_UNTOUCHED:
		break;
	}
}
