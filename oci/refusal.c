/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Why a config's network namespace cannot be sized, said truthfully and in
 * the terms of the engine that wrote the config, when that can be told:
 * the requested sizes, what the namespace is (the host's, another
 * process's, an existing one), what it has, or why it could not be
 * inspected, and what to do instead. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oci.h"

/* Which engine wrote a config, as far as it can be told: advice in a
 * refusal uses that engine's terms. */
enum oci_engine { ENGINE_OTHER, ENGINE_PODMAN, ENGINE_DOCKER, ENGINE_CRI };

static const char *str_member(struct json_object *o, const char *key)
{
	struct json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : NULL;
}

static bool docker_hostname_mount(struct json_object *doc)
{
	struct json_object *mounts;
	if (!json_object_object_get_ex(doc, "mounts", &mounts) || !json_object_is_type(mounts, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(mounts); i++) {
		struct json_object *m = json_object_array_get_idx(mounts, i);
		const char *dst = str_member(m, "destination"), *src = str_member(m, "source"), *id;
		size_t n;
		if (!dst || !src || strcmp(dst, "/etc/hostname") || (n = strlen(src)) < 64 + 20 ||
		    strcmp(src + n - 9, "/hostname"))
			continue;
		id = src + n - 9 - 64;
		if (strncmp(id - 12, "/containers/", 12) == 0 && strspn(id, "0123456789abcdef") == 64)
			return true;
	}
	return false;
}

static enum oci_engine engine_of(struct json_object *doc)
{
	struct json_object *ann, *v, *hooks, *pre;

	if (json_object_object_get_ex(doc, "annotations", &ann) && json_object_is_type(ann, json_type_object)) {
		if (json_object_object_get_ex(ann, "io.container.manager", &v) &&
		    json_object_is_type(v, json_type_string)) {
			if (!strcmp(json_object_get_string(v), "libpod"))
				return ENGINE_PODMAN; /* podman also sets io.kubernetes.cri-o.* keys */
			if (!strcmp(json_object_get_string(v), "cri-o"))
				return ENGINE_CRI;
		}
		json_object_object_foreach(ann, key, val)
		{
			(void)val;
			if (!strncmp(key, "io.kubernetes.cri.", 18)) /* containerd's CRI */
				return ENGINE_CRI;
		}
	}
	/* dockerd configures the netns from a prestart hook of its own */
	if (json_object_object_get_ex(doc, "hooks", &hooks) && json_object_is_type(hooks, json_type_object) &&
	    json_object_object_get_ex(hooks, "prestart", &pre) && json_object_is_type(pre, json_type_array))
		for (size_t i = 0; i < json_object_array_length(pre); i++) {
			struct json_object *h = json_object_array_get_idx(pre, i), *args, *a0;
			if (json_object_is_type(h, json_type_object) && json_object_object_get_ex(h, "args", &args) &&
			    json_object_is_type(args, json_type_array) && (a0 = json_object_array_get_idx(args, 0)) &&
			    json_object_is_type(a0, json_type_string) &&
			    !strcmp(json_object_get_string(a0), "libnetwork-setkey"))
				return ENGINE_DOCKER;
		}
	/* without that hook (--network host, container:X): its /etc/hostname
	 * comes from DATA_ROOT/containers/ID/hostname */
	return docker_hostname_mount(doc) ? ENGINE_DOCKER : ENGINE_OTHER;
}

static const char *const host_advice[] = {
    [ENGINE_OTHER] = "give the container a network namespace of its own",
    [ENGINE_PODMAN] = "with podman, drop --network host: use --network none, or a network whose plugin chain starts "
		      "with the nshash CNI plugin",
    [ENGINE_DOCKER] = "with Docker, a sized runtime needs the container's own network: use the default bridge or a "
		      "user network, not --network host",
    [ENGINE_CRI] = "under Kubernetes, a hostNetwork pod cannot be sized",
};
static const char *const joined_advice[] = {
    [ENGINE_OTHER] = "give the container whose network namespace this one joins the same sizes, or give this "
		     "one its own",
    [ENGINE_PODMAN] = "with podman --network container:NAME, give NAME the same io.nshash.* annotations, or ask "
		      "for nothing here (then this container joins it unsized by nshash)",
    [ENGINE_DOCKER] = "with Docker, run the container named in --network container:NAME with the same sized "
		      "runtime, or give this one a network of its own",
    [ENGINE_CRI] = "under Kubernetes, size the pod with the nshash CNI plugin placed first in the network's plugin "
		   "chain: every container of the pod shares its network namespace",
};
static const char *const existing_advice[] = {
    [ENGINE_OTHER] = "leave the network namespace entry without a path so that nshash makes it, or create a sized "
		     "one first (`nshash create NAME --tcp T --udp U`) and name that",
    [ENGINE_PODMAN] = "use --network none (and set up the network yourself), or the nshash CNI plugin placed first "
		      "in the network's plugin chain, or create a sized netns with `nshash create NAME --tcp T --udp "
		      "U` and run with --network ns:/run/netns/NAME",
    [ENGINE_DOCKER] = "with Docker, use a bridge, user or none network: nshash-runtime sizes those",
    [ENGINE_CRI] = "under Kubernetes the pod's network namespace is made before any runtime or hook runs: size "
		   "pods with the nshash CNI plugin placed first in the network's plugin chain",
};

/* "tcp=8192 udp=1024", or the shared tables named as such. */
static void netns_sizes_text(const struct nshash_netns_info *info, char *out, size_t n)
{
	if (info->tcp_entries < 0 && info->udp_entries < 0) {
		snprintf(out, n, "uses the shared global tables (tcp=%ld udp=%ld)", -info->tcp_entries,
			 -info->udp_entries);
		return;
	}
	snprintf(out, n, "has tcp=%ld%s udp=%ld%s", labs(info->tcp_entries), info->tcp_entries < 0 ? " (shared)" : "",
		 labs(info->udp_entries), info->udp_entries < 0 ? " (shared)" : "");
}

/* The config's path as a message may show it: as it is when it is plain
 * printable text, else quoted (a hostile config must not forge log lines). */
static const char *shown_path(const char *path, char *buf, size_t len)
{
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
			nshash_quote(path, buf, len);
			return buf;
		}
	snprintf(buf, len, "%s", path);
	return buf;
}

/* podman marks a pod's members (not its infra container) with the infra
 * container's id: the pod they join.  NULL = not a pod member. */
static const char *podman_sandbox(struct json_object *doc)
{
	struct json_object *ann;
	const char *id;

	if (!json_object_object_get_ex(doc, "annotations", &ann) || !json_object_is_type(ann, json_type_object))
		return NULL;
	id = str_member(ann, "io.kubernetes.cri-o.SandboxID");
	return id && *id && strspn(id, "0123456789abcdef") == strlen(id) ? id : NULL;
}

/* The path is the host's netns: init's, or (when /proc/1 is hidden from
 * us) our own, which is the engine's. */
static bool is_host_netns(const char *path)
{
	static const char *const hosts[] = {"/proc/1/ns/net", "/proc/self/ns/net"};
	struct stat st, host;
	if (stat(path, &st) < 0)
		return false;
	for (size_t i = 0; i < 2; i++)
		if (stat(hosts[i], &host) == 0 && st.st_dev == host.st_dev && st.st_ino == host.st_ino)
			return true;
	return false;
}

/* Why the netns the config names cannot be used, and what to do instead:
 * what it is (the host's, another process's, an existing one), what it
 * has, advice for the engine.  `info` NULL = inspecting it failed (`ierr`). */
void nsh_oci_explain_existing(struct json_object *doc, const char *path, const struct nshash_netns_info *info,
			      const struct nshash_error *ierr, char *out, size_t n)
{
	enum oci_engine engine = engine_of(doc);
	char what[400], sizes[160], shown[301];
	int pid = 0, end = 0;

	shown_path(path, shown, sizeof(shown));

	if (!info) {
		snprintf(out, n, "cannot inspect the network namespace the config names (%s): %.600s", shown,
			 ierr->msg);
		/* the library's message repeats the path as given */
		for (char *p = out; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
				*p = '?';
		return;
	}
	netns_sizes_text(info, sizes, sizeof(sizes));
	const char *advice = existing_advice[engine];
	if (is_host_netns(path)) {
		snprintf(what, sizeof(what), "the container would share the host's network namespace (%s)", shown);
		snprintf(sizes, sizeof(sizes), "has the host's own tables (tcp=%ld udp=%ld)", labs(info->tcp_entries),
			 labs(info->udp_entries));
		advice = host_advice[engine];
	} else if (sscanf(path, "/proc/%d/ns/net%n", &pid, &end) == 1 && end > 0 && !path[end]) {
		snprintf(what, sizeof(what),
			 "the container would join the network namespace of process %d (another container's or a "
			 "pod's)",
			 pid);
		advice = joined_advice[engine];
		const char *sandbox = podman_sandbox(doc);
		if (engine == ENGINE_PODMAN && sandbox) {
			snprintf(what, sizeof(what),
				 "the container would join the network namespace of process %d, its podman pod's "
				 "(infra container %.12s)",
				 pid, sandbox);
			snprintf(out, n,
				 "%s; the pod's network namespace %s, and a network namespace's tables cannot be "
				 "resized after creation. Instead: give this container the pod's sizes or no "
				 "io.nshash.* annotations (it then joins the pod), or give the pod other sizes: podman "
				 "passes no annotations to a pod's infra container (pod create has none, kube play "
				 "gives them to the members only), so the infra container gets the node's "
				 "defaultTcp/defaultUdp (nshash.json, with the hooks file that runs nshash for every "
				 "container) or the sizes of a podman network labelled io.nshash.tcp/io.nshash.udp",
				 what, sizes);
			return;
		}
	} else {
		snprintf(what, sizeof(what), "network namespace %s already exists%s", shown,
			 engine == ENGINE_PODMAN ? " (podman made, and maybe configured, it before nshash runs)"
			 : engine == ENGINE_CRI	 ? " (the pod's, made by the CRI runtime)"
						 : "");
	}
	snprintf(out, n, "%s; it %s, and a network namespace's tables cannot be resized after creation. Instead: %s",
		 what, sizes, advice);
}

/* The refusal when the config has no network namespace entry. */
int nsh_oci_refuse_no_entry(struct json_object *doc, struct nshash_sizes req, struct nshash_error *err)
{
	return nshash_error_set(err, EINVAL,
				"cannot size tcp=%u udp=%u: the config has no network namespace entry, so the "
				"container shares the host's network namespace (host network), whose tables cannot be "
				"resized. Instead: %s",
				req.tcp, req.udp, host_advice[engine_of(doc)]);
}

int nsh_oci_refuse_userns_shared(struct nshash_sizes req, struct nshash_error *err)
{
	return nshash_error_set(
	    err, EOPNOTSUPP,
	    "cannot size tcp=%u udp=%u: the container has a user namespace of its own and asks for "
	    "shared mount propagation: nshash-runtime makes a container's user namespace only in its "
	    "private mount namespace. Instead: drop the shared propagation (rshared, Bidirectional) "
	    "or the user namespace",
	    req.tcp, req.udp);
}
