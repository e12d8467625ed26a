/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Charging the pod's memory cgroup for its tables.  The kernel charges a
 * netns's tables to the memory cgroup of the task that creates it; the
 * plugin runs in the runtime's.  containerd's CRI passes the pod's cgroup
 * as runtimeConfig.cgroupPath (capability "cgroupPath"): the plugin moves
 * itself into a transient leaf under it for the creation (cgroup v2 allows
 * no process in a cgroup whose controllers are delegated to children), then
 * back, and removes the leaf; the kernel reparents the leaf's charges to
 * the pod's cgroup.  Anything that does not work out is a warning, never a
 * failed ADD: the tables are then the runtime's, as without the capability. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cni.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

/* The memory controller's hierarchy: v1 (a "memory" mount) or v2. */
static const char *memory_root(void)
{
	static const char *const v1 = CGROUP_ROOT "/memory";
	struct stat st;
	if (stat(v1, &st) == 0 && S_ISDIR(st.st_mode))
		return v1;
	char buf[512] = "";
	int fd = open(CGROUP_ROOT "/cgroup.controllers", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return strstr(buf, "memory") ? CGROUP_ROOT : NULL;
}

/* runtimeConfig.cgroupPath → a path under the memory root: "/a/b" as is,
 * systemd's "a-b-c.slice" as "a.slice/a-b.slice/a-b-c.slice". */
static int pod_cgroup_dir(const char *cg, const char *root, char *out, size_t len)
{
	char rel[PATH_MAX] = "";
	size_t n = strlen(cg);
	if (n == 0 || n >= 1024 || strstr(cg, "..") || strstr(cg, "//"))
		return -EINVAL;
	for (const char *p = cg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return -EINVAL;
	if (cg[0] == '/') {
		snprintf(rel, sizeof(rel), "%s", cg + 1);
	} else if (n > 6 && !strcmp(cg + n - 6, ".slice") && !strchr(cg, '/')) {
		size_t at = 0;
		for (const char *dash = cg; (dash = strchr(dash, '-')); dash++)
			at += (size_t)snprintf(rel + at, sizeof(rel) - at, "%.*s.slice/", (int)(dash - cg), cg);
		snprintf(rel + at, sizeof(rel) - at, "%s", cg);
	} else {
		return -EINVAL;
	}
	if ((size_t)snprintf(out, len, "%s/%s", root, rel) >= len)
		return -ENAMETOOLONG;
	struct stat st;
	return stat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

/* This process's cgroup in the memory hierarchy (its cgroup.procs). */
static int own_cgroup_procs(const char *root, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	char line[PATH_MAX + 64];
	bool v1 = strcmp(root, CGROUP_ROOT) != 0;
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctrl++;
		bool match =
		    v1 ? (strcmp(ctrl, "memory") == 0 || strstr(ctrl, "memory,") == ctrl || strstr(ctrl, ",memory"))
		       : (line[0] == '0' && ctrl[0] == '\0');
		if (match) {
			r = (size_t)snprintf(out, len, "%s%s/cgroup.procs", root, strcmp(path, "/") ? path : "") >= len
				? -ENAMETOOLONG
				: 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int write_self(const char *procs)
{
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return r;
}

void nsh_cni_charge_enter(struct run *r, struct nsh_cni_charge *c)
{
	memset(c, 0, sizeof(*c));
	json_object *rc, *v;
	if (!r->cfg.json || !json_object_object_get_ex(r->cfg.json, "runtimeConfig", &rc) ||
	    !json_object_is_type(rc, json_type_object) || !json_object_object_get_ex(rc, "cgroupPath", &v))
		return;
	const char *cg = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	const char *root = memory_root();
	char dir[PATH_MAX], shown[128];
	nshash_quote(cg ? cg : "", shown, sizeof(shown));
	int e = cg ? (root ? pod_cgroup_dir(cg, root, dir, sizeof(dir)) : -EOPNOTSUPP) : -EINVAL;
	if (e == 0)
		e = own_cgroup_procs(root, c->back, sizeof(c->back));
	/* The leaf is named by the container id: one path component only. */
	if (e == 0 && nshash_name_check("CNI_CONTAINERID", r->env->containerid, NULL) < 0)
		e = -EINVAL;
	if (e == 0 &&
	    (size_t)snprintf(c->leaf, sizeof(c->leaf), "%s/nshash-%s", dir, r->env->containerid) >= sizeof(c->leaf))
		e = -ENAMETOOLONG;
	if (e == 0 && mkdir(c->leaf, 0755) < 0 && errno != EEXIST)
		e = -errno;
	char procs[PATH_MAX + 16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", c->leaf);
	if (e == 0 && (e = write_self(procs)) < 0)
		rmdir(c->leaf);
	if (e < 0) {
		nsh_cni_log(r,
			    "warning: tables charged to the runtime's memory cgroup, not the pod's: "
			    "runtimeConfig.cgroupPath %s: %s",
			    shown, strerror(-e));
		c->leaf[0] = '\0';
		return;
	}
	c->entered = true;
}

void nsh_cni_charge_leave(struct run *r, struct nsh_cni_charge *c)
{
	if (!c->entered)
		return;
	int e = write_self(c->back);
	if (e < 0)
		nsh_cni_log(r, "warning: could not move back to %s: %s", c->back, strerror(-e));
	else if (rmdir(c->leaf) < 0)
		nsh_cni_log(r, "warning: could not remove the transient cgroup %s: %s", c->leaf, strerror(errno));
	else
		nsh_cni_log(r, "tables charged to the pod's memory cgroup (%s)", c->leaf);
	c->entered = false;
}
