/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto` sizes for the hook and the wrapper: the container's workload key
 * and the sizes its recorded peaks give (docs/auto.md). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auto.h"
#include "oci.h"

static const char *ann_string(struct json_object *ann, const char *key)
{
	struct json_object *v;
	if (!ann || !json_object_is_type(ann, json_type_object) || !json_object_object_get_ex(ann, key, &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return NULL;
	return json_object_get_string(v);
}

/* The key, in this order (the first that is there):
 *   io.nshash.workload=KEY         NAME "w=KEY"
 *   CRI's image (containerd: io.kubernetes.cri.image-name, CRI-O:
 *   io.kubernetes.cri-o.ImageName)  NAME "image=IMAGE", SCOPE the pod's
 *                                   namespace (io.kubernetes.cri.sandbox-namespace,
 *                                   io.kubernetes.pod.namespace)
 *   org.opencontainers.image.ref.name / .base.name   NAME "image=IMAGE"
 *   the wrapper: the container id  NAME "id=ID"
 *   the hook: the config's hostname (podman: the container's name when
 *   given with --hostname, else its short id)   NAME "host=HOSTNAME"
 * FRONTEND "podman" (the precreate hook) or "runtime" (nshash-runtime). */
static int workload_key(struct json_object *doc, const struct nsh_oci_opts *opts, const struct nsh_oci_request *req,
			char *key, size_t len, struct nshash_error *err)
{
	struct json_object *ann = NULL, *h;
	json_object_object_get_ex(doc, "annotations", &ann);
	const char *fe = opts->mode == NSH_OCI_PRECREATE ? "podman" : "runtime";
	/* The namespace from the engine's own key only: CRI-O copies a pod's
	 * annotations into the spec, so there a tenant could write containerd's
	 * key (and the other way round where pod_annotations lets it through);
	 * two that disagree give no key at all. */
	const char *crio_ns = ann_string(ann, "io.kubernetes.pod.namespace");
	const char *ctrd_ns = ann_string(ann, "io.kubernetes.cri.sandbox-namespace");
	if (crio_ns && ctrd_ns && strcmp(crio_ns, ctrd_ns) != 0)
		return nshash_error_set(err, EINVAL,
					"workload key: io.kubernetes.pod.namespace and "
					"io.kubernetes.cri.sandbox-namespace disagree");
	const char *scope = ann_string(ann, "io.kubernetes.cri-o.ContainerID") ? crio_ns : ctrd_ns;
	if (!scope)
		scope = crio_ns;
	if (scope && (strchr(scope, ':') || strlen(scope) > 253))
		return nshash_error_set(err, EINVAL,
					"workload key: the pod namespace annotation is not a namespace name");
	char name[NSH_WORKLOAD_NAME_MAX + 16];
	const char *v;
	if (req->workload[0])
		snprintf(name, sizeof(name), "w=%s", req->workload);
	else if ((v = ann_string(ann, "io.kubernetes.cri.image-name")) ||
		 (v = ann_string(ann, "io.kubernetes.cri-o.ImageName")) ||
		 (v = ann_string(ann, "org.opencontainers.image.ref.name")) ||
		 (v = ann_string(ann, "org.opencontainers.image.base.name")))
		snprintf(name, sizeof(name), "image=%.*s", (int)NSH_WORKLOAD_NAME_MAX, v);
	else if (opts->container_id && *opts->container_id)
		snprintf(name, sizeof(name), "id=%.*s", (int)NSH_WORKLOAD_NAME_MAX, opts->container_id);
	else if (json_object_object_get_ex(doc, "hostname", &h) && json_object_is_type(h, json_type_string) &&
		 json_object_get_string_len(h) > 0)
		snprintf(name, sizeof(name), "host=%.*s", (int)NSH_WORKLOAD_NAME_MAX, json_object_get_string(h));
	else
		return nshash_error_set(err, ENOENT, "workload key: none (set io.nshash.workload)");
	return nsh_workload_key(fe, scope, name, key, len, err);
}

int nsh_oci_auto_resolve(struct json_object *doc, const struct nsh_oci_opts *opts, struct nsh_oci_request *req,
			 char *key, size_t keylen, struct nshash_error *err)
{
	key[0] = '\0';
	if (!req->auto_tcp && !req->auto_udp)
		return 0;
	const struct nsh_policy *policy = opts->policy;
	struct nshash_error kerr = {0};
	if (workload_key(doc, opts, req, key, keylen, &kerr) < 0) {
		/* derived names only: io.nshash.workload was checked when parsed */
		nsh_log(NSH_LOG_WARN, NULL, "%s: auto gives the initial sizes (autoInitialTcp/autoInitialUdp)",
			kerr.msg);
		key[0] = '\0';
	}
	return nsh_auto_sizes(policy->state_dir, key, policy, req->auto_tcp, req->auto_udp, &req->sizes, NULL, err);
}

void nsh_oci_auto_mark(const struct nsh_policy *policy, const struct nsh_oci_result *res)
{
	if (!res->workload_key[0] ||
	    (res->action != NSH_OCI_SIZED && res->action != NSH_OCI_TRANSPLANTED && !res->adopted))
		return;
	int fd = res->pin_path[0] ? open(res->pin_path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		nsh_log(NSH_LOG_WARN, NULL, "auto: %s: %s: not recorded", res->pin_path, strerror(errno));
		return;
	}
	nsh_auto_mark(policy->state_dir, fd, res->workload_key, NULL);
	close(fd);
}

void nsh_oci_auto_teardown(const struct nsh_policy *policy, const char *pin_path, const char *id)
{
	int fd = open(pin_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	nsh_auto_teardown(policy->state_dir, fd, id, "teardown");
	close(fd);
}
