/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Charging the pod's memory cgroup for its tables.  The kernel charges a
 * netns's tables to the memory cgroup of the task that creates it; the
 * plugin runs in the runtime's.  containerd's CRI passes the pod's cgroup
 * as runtimeConfig.cgroupPath (capability "cgroupPath"): the plugin moves
 * itself into a transient leaf under it for the creation (cgroup v2 allows
 * no process in a cgroup whose controllers are delegated to children), then
 * back, and removes the leaf; the kernel reparents the leaf's charges to
 * the pod's cgroup.  Anything that does not work out is a warning, never a
 * failed ADD: the tables are then the runtime's, as without the capability.
 *
 * runtimeConfig comes from the network config as much as from the runtime:
 * libcni injects it only for the capabilities a config declares, and keeps
 * a config's own runtimeConfig when the runtime has none of their values,
 * so a tenant's NetworkAttachmentDefinition can carry any cgroupPath.  The
 * plugin cannot tell who wrote it, so it checks what it names: the cgroup
 * kubelet makes for THIS pod (K8S_POD_UID of CNI_ARGS, which only the
 * runtime sets), found beneath the memory root without a symbolic link or
 * another mount on the way.  Anything else is not charged, and said. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
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

/* A pod uid as kubelet names cgroups by it: a UUID (letters, digits, '-'). */
static bool pod_uid_ok(const char *uid)
{
	size_t n = strlen(uid);
	if (n == 0 || n > 64)
		return false;
	for (const char *p = uid; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-'))
			return false;
	return true;
}

int nsh_cni_pod_cgroup(const char *cg, const char *pod_uid, char *rel, size_t len, char *why, size_t wlen)
{
	size_t n = strlen(cg);
	rel[0] = why[0] = '\0';
	if (n == 0 || n >= 1024 || strstr(cg, "..") || strstr(cg, "//")) {
		snprintf(why, wlen, "%s", strerror(EINVAL));
		return -EINVAL;
	}
	for (const char *p = cg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(why, wlen, "%s", strerror(EINVAL));
			return -EINVAL;
		}
	bool systemd = cg[0] != '/';
	if (systemd && !(n > 6 && !strcmp(cg + n - 6, ".slice") && !strchr(cg, '/'))) {
		snprintf(why, wlen, "%s", strerror(EINVAL));
		return -EINVAL;
	}
	/* the pod's own cgroup, as kubelet names it: the last component is
	 * pod<uid> (cgroupfs: /kubepods/burstable/pod<uid>) or ends in
	 * -pod<uid with '_' for '-'>.slice (systemd:
	 * kubepods-burstable-pod<uid>.slice) */
	if (!pod_uid || !*pod_uid) {
		snprintf(why, wlen,
			 "CNI_ARGS has no K8S_POD_UID to check it against (only the cgroup kubelet made for the pod "
			 "being added is charged)");
		return -EPERM;
	}
	if (!pod_uid_ok(pod_uid)) {
		snprintf(why, wlen, "K8S_POD_UID=\"%.64s\" is not a pod uid (letters, digits, '-')", pod_uid);
		return -EPERM;
	}
	const char *last = strrchr(cg, '/');
	last = last ? last + 1 : cg;
	char want[96];
	bool mine;
	if (systemd) {
		size_t w = (size_t)snprintf(want, sizeof(want), "-pod%s.slice", pod_uid), l = strlen(last);
		for (char *p = want + 4; *p; p++)
			if (*p == '-')
				*p = '_';
		mine = l > w && !strcmp(last + l - w, want);
	} else {
		snprintf(want, sizeof(want), "pod%s", pod_uid);
		mine = !strcmp(last, want);
	}
	if (!mine) {
		char shown[80];
		nshash_quote(pod_uid, shown, sizeof(shown));
		snprintf(why, wlen,
			 "not the cgroup of the pod being added (K8S_POD_UID %s: its last component must %s %s); "
			 "a network config cannot choose the cgroup that pays",
			 shown, systemd ? "end in" : "be", want);
		return -EPERM;
	}
	/* relative to the memory root: "a/b" as is, systemd's "a-b-c.slice"
	 * as "a.slice/a-b.slice/a-b-c.slice" */
	size_t at = 0;
	if (!systemd) {
		at = (size_t)snprintf(rel, len, "%s", cg + 1);
	} else {
		for (const char *dash = cg; (dash = strchr(dash, '-')) && at < len; dash++)
			at += (size_t)snprintf(rel + at, len - at, "%.*s.slice/", (int)(dash - cg), cg);
		if (at < len)
			at += (size_t)snprintf(rel + at, len - at, "%s", cg);
	}
	if (at >= len) {
		rel[0] = '\0';
		snprintf(why, wlen, "%s", strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	return 0;
}

/* rel beneath the memory root, every component a directory of the cgroup
 * file system: no symbolic link, no ".." (nsh_cni_pod_cgroup refused it
 * already), no other mount on the way.  An O_PATH fd, or -errno. */
static int open_beneath(const char *root, const char *rel)
{
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, rfd, rel, &how, sizeof(how));
	int e = fd < 0 ? -errno : 0;
	close(rfd);
	if (fd < 0)
		return e;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		return -EXDEV;
	}
	return fd;
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

static int write_self_at(int dfd, const char *procs)
{
	int fd = openat(dfd, procs, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return r;
}

void nsh_cni_podcg_find(struct nsh_cni_call *r, struct nsh_cni_podcg *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->fd = -1;
	json_object *rc, *v;
	if (!r->cfg.json || !json_object_object_get_ex(r->cfg.json, "runtimeConfig", &rc) ||
	    !json_object_is_type(rc, json_type_object) || !json_object_object_get_ex(rc, "cgroupPath", &v))
		return;
	pc->given = true;
	const char *cg = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	pc->root = memory_root();
	char uid[128];
	nshash_escape(cg ? cg : "", pc->shown,
		      sizeof(pc->shown)); /* whole: kubelet's paths are longer than nshash_quote's 40 bytes */
	nsh_cni_args_get(r->env->args, "K8S_POD_UID", uid, sizeof(uid));
	int e = !cg ? -EINVAL : nsh_cni_pod_cgroup(cg, uid, pc->rel, sizeof(pc->rel), pc->why, sizeof(pc->why));
	if (e == 0 && !pc->root)
		e = -EOPNOTSUPP;
	if (e == 0 && (pc->fd = open_beneath(pc->root, pc->rel)) < 0) {
		e = pc->fd;
		pc->fd = -1;
		if (e == -EXDEV || e == -ELOOP)
			snprintf(pc->why, sizeof(pc->why),
				 "%s/%.300s is not a cgroup of the memory hierarchy (a symbolic link or "
				 "another file system on the way)",
				 pc->root, pc->rel);
	}
	pc->e = e;
}

void nsh_cni_podcg_close(struct nsh_cni_podcg *pc)
{
	if (pc->fd >= 0)
		close(pc->fd);
	pc->fd = -1;
}

void nsh_cni_charge_enter(struct nsh_cni_call *r, const struct nsh_cni_podcg *pc, struct nsh_cni_charge *c)
{
	memset(c, 0, sizeof(*c));
	if (!pc->given)
		return;
	int e = pc->e;
	if (e == 0)
		e = own_cgroup_procs(pc->root, c->back, sizeof(c->back));
	/* The leaf is named by the container id: one path component only. */
	char name[300];
	if (e == 0 && (nshash_name_check("CNI_CONTAINERID", r->env->containerid, NULL) < 0 ||
		       (size_t)snprintf(name, sizeof(name), "nshash-%s", r->env->containerid) >= sizeof(name)))
		e = -EINVAL;
	if (e == 0 &&
	    (size_t)snprintf(c->leaf, sizeof(c->leaf), "%s/%s/%s", pc->root, pc->rel, name) >= sizeof(c->leaf))
		e = -ENAMETOOLONG;
	if (e == 0 && mkdirat(pc->fd, name, 0755) < 0 && errno != EEXIST)
		e = -errno;
	char procs[sizeof(name) + 16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", name);
	if (e == 0 && (e = write_self_at(pc->fd, procs)) < 0)
		unlinkat(pc->fd, name, AT_REMOVEDIR);
	if (e < 0) {
		nsh_cni_log(r,
			    "warning: tables charged to the runtime's memory cgroup, not the pod's: "
			    "runtimeConfig.cgroupPath \"%s\": %s",
			    pc->shown, pc->e < 0 && *pc->why ? pc->why : strerror(-e));
		c->leaf[0] = '\0';
		return;
	}
	c->entered = true;
}

void nsh_cni_charge_leave(struct nsh_cni_call *r, struct nsh_cni_charge *c)
{
	if (!c->entered)
		return;
	int e = write_self_at(AT_FDCWD, c->back);
	if (e < 0)
		nsh_cni_log(r, "warning: could not move back to %s: %s", c->back, strerror(-e));
	else if (rmdir(c->leaf) < 0)
		nsh_cni_log(r, "warning: could not remove the transient cgroup %s: %s", c->leaf, strerror(errno));
	else
		nsh_cni_log(r, "tables charged to the pod's memory cgroup (%s)", c->leaf);
	c->entered = false;
}
