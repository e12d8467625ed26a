/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `auto` for the CNI plugin: the pod's workload key and the sizes its
 * recorded peaks give (docs/auto.md). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cni.h"

static const char *pod_annotation(const struct nsh_cni_config *cfg, const char *key)
{
	json_object *rc, *ann, *v;
	if (!cfg->json || !json_object_object_get_ex(cfg->json, "runtimeConfig", &rc) ||
	    !json_object_is_type(rc, json_type_object) || !json_object_object_get_ex(rc, POD_ANNOTATIONS, &ann) ||
	    !json_object_is_type(ann, json_type_object) || !json_object_object_get_ex(ann, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The key: "cni:NAMESPACE:w=KEY" (io.nshash.workload), else
 * "cni:NAMESPACE:pod=OWNER" (K8S_POD_NAME without its generated suffix),
 * else "cni:NETWORK:id=CNI_CONTAINERID". */
static int workload_key(struct nsh_cni_call *r, char *key, size_t len, struct nshash_error *e)
{
	char ns[256] = "", pod[256] = "", owner[256], name[NSH_WORKLOAD_NAME_MAX + 16];
	const char *w = pod_annotation(&r->cfg, NSH_ANNOTATION_WORKLOAD);
	nsh_cni_args_get(r->env->args, "K8S_POD_NAMESPACE", ns, sizeof(ns));
	nsh_cni_args_get(r->env->args, "K8S_POD_NAME", pod, sizeof(pod));
	if (strchr(ns, ':'))
		return nshash_error_set(e, EINVAL, "K8S_POD_NAMESPACE is not a namespace name");
	const char *scope = ns;
	if (w) {
		int r = nsh_workload_check(w, e);
		if (r < 0)
			return r;
		snprintf(name, sizeof(name), "w=%s", w);
	} else if (pod[0]) {
		nsh_pod_owner(pod, owner, sizeof(owner));
		snprintf(name, sizeof(name), "pod=%.200s", owner);
	} else if (r->env->containerid) {
		snprintf(name, sizeof(name), "id=%.200s", r->env->containerid);
		scope = strchr(r->cfg.name, ':') ? "" : r->cfg.name;
	} else {
		return nshash_error_set(e, ENOENT, "workload key: none (set the pod annotation io.nshash.workload)");
	}
	return nsh_workload_key("cni", scope, name, key, len, e);
}

int nsh_cni_auto(struct nsh_cni_call *r, struct nshash_sizes *req, bool *from_ann)
{
	const char *ta = pod_annotation(&r->cfg, NSH_ANNOTATION_TCP), *ua = pod_annotation(&r->cfg, NSH_ANNOTATION_UDP);
	/* a pod's annotation wins per protocol, as for numbers */
	bool at = ta ? !strcmp(ta, "auto") : r->cfg.auto_tcp;
	bool au = ua ? !strcmp(ua, "auto") : r->cfg.auto_udp;
	r->out->workload_key[0] = '\0';
	if (!at && !au)
		return 0;
	if (ta && at)
		*from_ann = true;
	if (ua && au)
		*from_ann = true;
	struct nshash_error e = {0};
	char key[NSH_WORKLOAD_KEY_MAX] = "";
	const char *w = pod_annotation(&r->cfg, NSH_ANNOTATION_WORKLOAD);
	if (workload_key(r, key, sizeof(key), &e) < 0) {
		if (w)
			return nsh_cni_fail(&r->err, NSH_CNI_E_REFUSED, NULL, "pod annotation %s: %s",
					    NSH_ANNOTATION_WORKLOAD, e.msg);
		nsh_log(NSH_LOG_WARN, r->env->containerid, "%s: auto gives the initial sizes", e.msg);
		key[0] = '\0';
	}
	struct nsh_policy caps;
	memset(&caps, 0, sizeof(caps));
	caps.max = r->cfg.max;
	caps.auto_initial = r->cfg.auto_initial;
	if (nsh_auto_sizes(r->cfg.state_dir, key, &caps, at, au, req, r->env->containerid, &e) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_REFUSED, NULL, "%s", e.msg);
	struct nshash_error ce;
	if (nshash_sizes_cap(*req, r->cfg.max, "auto", &ce) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_REFUSED, NULL,
				    "%s in network \"%s\" (autoInitialTcp/autoInitialUdp above the caps)", ce.msg,
				    r->cfg.name);
	snprintf(r->out->workload_key, sizeof(r->out->workload_key), "%s", key);
	return 0;
}

/* CNI_NETNS (hostile: the runtime's, but never trusted): nsfs or nothing,
 * never a device, a FIFO or a symlink opened as root; -1 when not a netns. */
static int open_netns(const char *path)
{
	int fd = -1;
	const char *not_netns;
	if (!path || !*path || nsh_path_open_netns(path, false, &fd, &not_netns) < 0)
		return -1;
	return fd;
}

void nsh_cni_auto_mark(const struct nsh_cni_env *env, const struct nsh_cni_output *out, const char *state_dir)
{
	if (!out->workload_key[0] || !env->netns || out->outcome == NSH_CNI_REFUSED)
		return;
	int fd = open_netns(env->netns);
	if (fd < 0)
		return;
	nsh_auto_mark(state_dir, fd, out->workload_key, env->containerid);
	close(fd);
}

void nsh_cni_auto_teardown(const struct nsh_cni_env *env, const char *state_dir)
{
	/* no netns at DEL: it is gone already; record reaps its mark */
	int fd = open_netns(env->netns);
	if (fd < 0)
		return;
	/* the netns this pod's ADD recorded, when it recorded one: a DEL
	 * naming another pod's netns does not end that one's mark */
	struct nsh_cni_pod rec;
	struct stat st;
	if (env->containerid && nsh_cni_pod_get(state_dir, env->containerid, &rec) == 1 &&
	    (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != rec.inode)) {
		nsh_log(NSH_LOG_WARN, env->containerid, "auto: CNI_NETNS is not the netns this pod's ADD recorded: not sampled");
		close(fd);
		return;
	}
	nsh_auto_teardown(state_dir, fd, env->containerid, "DEL");
	close(fd);
}
