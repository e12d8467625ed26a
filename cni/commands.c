/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ADD, CHECK, STATUS and VERSION. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cni.h"

const struct nsh_cni_ops nsh_cni_system_ops = {
    .classify = nshash_path_classify,
    .inspect = nshash_inspect_path,
    .occupancy = nshash_netns_occupancy_cgroup,
    .probe = nshash_probe,
    .create = nshash_netns_new,
    .swap = nshash_netns_swap,
};

/* Interfaces a previous plugin put into the container (prevResult entries
 * with a "sandbox"): nshash was not placed first. */
static unsigned prev_sandbox_interfaces(struct nsh_cni_call *r, char *names, size_t len)
{
	json_object *prev, *ifs;
	unsigned n = 0;
	names[0] = '\0';
	if (!json_object_object_get_ex(r->cfg.json, "prevResult", &prev) ||
	    !json_object_object_get_ex(prev, "interfaces", &ifs) || !json_object_is_type(ifs, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(ifs); i++) {
		json_object *it = json_object_array_get_idx(ifs, i), *sb, *name = NULL;
		if (!json_object_object_get_ex(it, "sandbox", &sb) || !json_object_is_type(sb, json_type_string) ||
		    !*json_object_get_string(sb))
			continue;
		/* another plugin's output: a name need not be a string (json-c's
		 * null is a NULL object, never printed as such) */
		char shown[64] = "an interface without a name";
		bool named = json_object_object_get_ex(it, "name", &name);
		if (named && json_object_is_type(name, json_type_string))
			snprintf(shown, sizeof(shown), "%s", json_object_get_string(name));
		else if (named)
			snprintf(shown, sizeof(shown), "an interface with name %.32s",
				 json_object_to_json_string_ext(name, JSON_OUT_FLAGS));
		nsh_append(names, len, "%s%s", n ? ", " : "", shown);
		n++;
	}
	return n;
}

static void sizes_text(struct nshash_sizes s, char *buf, size_t len)
{
	char t[32], u[32];
	snprintf(t, sizeof(t), s.tcp ? "%u" : "shared", s.tcp);
	snprintf(u, sizeof(u), s.udp ? "%u" : "shared", s.udp);
	snprintf(buf, len, "tcp %s, udp %s", t, u);
}

/* A failure that onFailure may turn into a warning. */
/* What to inspect for CNI_NETNS: the path, or for a symbolic link (whose
 * target classify found to be a netns) the file it points at; inspecting
 * follows no link. */
static const char *inspected_path(const char *netns, enum nshash_path_kind kind, char resolved[PATH_MAX])
{
	return kind == NSHASH_PATH_LINK && realpath(netns, resolved) ? resolved : netns;
}

static int soft_failure(struct nsh_cni_call *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int soft_failure(struct nsh_cni_call *r, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->cfg.on_failure == NSH_ON_FAILURE_WARN) {
		nsh_cni_log(r, "warning (onFailure warn, code %d): %s; continuing on the shared tables", code, msg);
		r->out->outcome = NSH_CNI_WARNED;
		return 1;
	}
	return nsh_cni_fail(&r->err, code, NULL, "%s", msg);
}

static int netns_kind_checked(struct nsh_cni_call *r, enum nshash_path_kind *kind, char *detail, size_t dlen)
{
	struct nshash_error e;
	const char *netns = r->env->netns;
	if (r->ops->classify(netns, kind, detail, dlen, &e) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_ENV, NULL, "CNI_NETNS=%s: %s", netns, e.msg);
	if (*kind == NSHASH_PATH_MISSING || *kind == NSHASH_PATH_NOT_NETNS)
		return nsh_cni_fail(&r->err, NSH_CNI_E_ENV, NULL, "CNI_NETNS=%s is not a network namespace: %s", netns,
				    detail);
	return 0;
}

/* The request of ADD / CHECK, and what CNI_NETNS is when something is
 * requested.  Returns 1 when nothing is requested, 0, or -errno (r->err). */
static int request_and_netns(struct nsh_cni_call *r, struct nshash_sizes *req, bool *from_ann, enum nshash_path_kind *kind,
			     char *detail, size_t dlen)
{
	if (nsh_cni_request(&r->cfg, req, from_ann, &r->err) < 0)
		return -r->err.err.errnum;
	if (nsh_cni_auto(r, req, from_ann) < 0)
		return -r->err.err.errnum;
	if (req->tcp == 0 && req->udp == 0)
		return 1;
	return netns_kind_checked(r, kind, detail, dlen);
}

/* What lives in the netns (its interfaces; a thread of the pod's own
 * cgroup, when the runtime names it: docs/cni.md, "who can be inside"), and
 * (`inspect`, inspect_only() in a thread of its own) whether it has the
 * requested sizes already.  Runs in a thread of its own while the sized
 * netns is made or taken: it touches only its job, never the run's output
 * or error. */
struct occupancy_job {
	const struct nsh_cni_ops *ops;
	const char *netns;
	int cgroup_fd; /* the pod's cgroup, -1 none */
	struct nshash_sizes req;
	bool inspect; /* in: look at the sizes first */
	bool already; /* out: it has them: nothing to replace */
	int ir;	      /* the inspection: 0 or -errno (ie) */
	struct nshash_error ie;
	struct nshash_occupancy occ;
	int r; /* 0 or -errno (e) */
	struct nshash_error e;
	/* then, with `opts` (a copy), the sysctls the runtime wrote there
	 * (carry_sysctls), compared with the template's note: 0 or -errno
	 * (ce); -ENODATA no note yet (read again once the netns is made) */
	const struct nshash_create_opts *opts;
	int carry_read;
	struct nshash_sysctls carry;
	struct nshash_error ce;
};

/* The inspection half of the job (its own thread, beside the look inside). */
static void *inspect_only(void *arg)
{
	struct occupancy_job *j = arg;
	struct nshash_netns_info info;
	struct nshash_error ignored;
	j->ir = j->ops->inspect(j->netns, &info, &j->ie);
	j->already = j->ir == 0 && nshash_verify(&info, j->req, j->netns, &ignored) == 0;
	return NULL;
}

static void *occupancy_look(void *arg)
{
	struct occupancy_job *j = arg;
	j->r = j->ops->occupancy(j->netns, j->cgroup_fd, &j->occ, &j->e);
	j->carry_read = -ENODATA;
	if (j->opts && j->r == 0 && !j->occ.pid && !j->occ.links)
		j->carry_read = nshash_sysctls_differing(j->opts, j->netns, -1, &j->carry, &j->ce);
	return NULL;
}

/* ADD, decide from what CNI_NETNS is and from prevResult: can it be
 * replaced?  0 yes; 1 no, but onFailure warn lets the chain go on; -errno
 * no. */
static int add_refusal(struct nsh_cni_call *r, const char *want, enum nshash_path_kind kind, const char *detail)
{
	const char *netns = r->env->netns;
	char names[256];

	if (kind == NSHASH_PATH_PROC)
		return soft_failure(
		    r, NSH_CNI_E_NOT_RESIZABLE,
		    "cannot size the netns %s (%s): it is a process's netns, created by the runtime "
		    "with the container already inside, and table sizes are fixed when a netns is created; "
		    "nshash works only with runtimes that pin the netns before ADD (containerd CRI, CRI-O, "
		    "podman); here use the nshash OCI hook or runtime wrapper instead",
		    netns, want);
	if (kind == NSHASH_PATH_LINK)
		return soft_failure(r, NSH_CNI_E_NOT_RESIZABLE,
				    "cannot size the netns %s (%s): it is a symbolic link (to %s), not the runtime's "
				    "pin; nshash replaces only a netns bind-mounted at CNI_NETNS itself",
				    netns, want, detail);
	if (prev_sandbox_interfaces(r, names, sizeof(names)))
		return soft_failure(r, NSH_CNI_E_NOT_RESIZABLE,
				    "cannot size the netns %s (%s): prevResult already has container interfaces (%s), "
				    "so nshash is not the first plugin; place nshash first in the conflist's plugins "
				    "list",
				    netns, want, names);
	return 0;
}

/* ADD, decide from what lives in CNI_NETNS (the occupancy job): 0 it can
 * be replaced; 1 no, but onFailure warn; -errno no. */
static int add_occupied(struct nsh_cni_call *r, const char *want, const struct occupancy_job *j)
{
	const char *netns = r->env->netns;

	if (j->r < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "cannot size the netns %s: %s", netns, j->e.msg);
	if (j->occ.links)
		return soft_failure(r, NSH_CNI_E_NOT_RESIZABLE,
				    "cannot size the netns %s (%s): it already has interfaces besides lo (%s); place "
				    "nshash first in the conflist's plugins list so it runs before any interface "
				    "exists",
				    netns, want, j->occ.link_names);
	if (j->occ.pid)
		return soft_failure(
		    r, NSH_CNI_E_NOT_RESIZABLE,
		    "cannot size the netns %s (%s): process %d (%s) of the pod's cgroup already lives in it; a "
		    "netns can be replaced only before anything joins it (the runtime started the pod's sandbox "
		    "before ADD)",
		    netns, want, (int)j->occ.pid, j->occ.comm);
	return 0;
}

/* A failed creation: the probe says why when it is the host (old kernel,
 * missing privileges), else the creation's own error. */
static int create_failed(struct nsh_cni_call *r, struct nshash_sizes req, const char *want, const struct nshash_error *ce)
{
	struct nshash_probe probe;
	struct nshash_error e;

	if (r->ops->probe(&probe, &e) < 0 || nshash_probe_require(&probe, req, &e) < 0)
		return soft_failure(r, NSH_CNI_E_CREATE, "cannot size the netns %s (%s): %s", r->env->netns, want,
				    e.msg);
	int code = ce->errnum == NSHASH_E_FALLBACK ? NSH_CNI_E_FALLBACK
		   : ce->errnum == NSHASH_E_BUDGET ? NSH_CNI_E_BUDGET
						   : NSH_CNI_E_CREATE;
	return soft_failure(r, code, "replace netns %s: %s", r->env->netns, ce->msg);
}

/* The netns at CNI_NETNS after the swap: the one made (the same nsfs
 * inode; its sizes were read when it was made and never change), as the
 * next plugins and the runtime will open it -- by the path. */
static int shows_made(const char *netns, const struct nshash_netns_info *made, struct nshash_error *e)
{
	struct stat st, nsfs;
	if (stat(netns, &st) < 0 || stat("/proc/thread-self/ns/net", &nsfs) < 0)
		return nshash_error_set(e, errno, "stat: %s", strerror(errno));
	if (st.st_dev != nsfs.st_dev)
		return nshash_error_set(e, EIO, "it is no network namespace any more (replaced meanwhile?)");
	if ((uint64_t)st.st_ino != made->inode)
		return nshash_error_set(e, EIO, "it shows netns inode %llu, not %llu (replaced meanwhile?)",
					(unsigned long long)st.st_ino, (unsigned long long)made->inode);
	return 0;
}

/* ADD: give the sized netns the net.* sysctls the runtime wrote into
 * CNI_NETNS before ADD (CRI-O's pinns: the pod's securityContext sysctls,
 * never written again where the pod has no infra container).  `read`: what
 * reading them gave.  0, 1 (not carried, onFailure warn: the pod keeps its
 * netns, unsized), or -errno. */
static int carry_sysctls(struct nsh_cni_call *r, const char *want, int nsfd, int read, struct nshash_sysctls *c,
			 struct nshash_error *ce)
{
	const char *netns = r->env->netns;
	if (read < 0)
		return soft_failure(r, NSH_CNI_E_CREATE, "cannot size the netns %s (%s): %s", netns, want, ce->msg);
	if (!c->n)
		return 0;
	char text[512];
	nshash_sysctls_text(c, text, sizeof(text));
	if (nshash_sysctls_carry(nsfd, c, NULL, ce) < 0)
		return soft_failure(r, NSH_CNI_E_NOT_RESIZABLE,
				    "cannot size the netns %s (%s): the runtime set net.* sysctls there (%s) that a "
				    "sized netns would lose: %s; drop those from the pod's sysctls, or let this pod "
				    "run unsized",
				    netns, want, text, ce->msg);
	nsh_cni_log(r, "carried %zu net.* sysctl(s) the runtime set in %s into the sized netns: %s", c->n, netns,
		    text);
	return 0;
}

/* ADD, apply: make (or take a spare of) the sized netns while the
 * occupancy job looks inside CNI_NETNS, then, if nothing lives there,
 * swap it in and check it through the path.  0, 1 (refused or failed under
 * onFailure warn), 2 (with `inspect`: CNI_NETNS has the sizes already), or
 * -errno. */
static int add_replace(struct nsh_cni_call *r, const struct nsh_cni_podcg *pc, struct nshash_sizes req, const char *want,
		       bool inspect, struct nshash_netns_info *seen)
{
	const char *netns = r->env->netns;
	struct occupancy_job job = {.ops = r->ops, .netns = netns, .cgroup_fd = pc->fd, .req = req, .inspect = inspect};
	struct nshash_netns_info info;
	struct nshash_create_opts carry_opts;
	struct nshash_error e;
	pthread_t thread;
	int nsfd = -1, s;
	struct nshash_create_opts opts = {
	    .sizes = req,
	    .strategy = r->cfg.strategy,
	    .state_dir = r->cfg.state_dir,
	    /* lo up: some runtimes raise it before ADD and never again */
	    .keep_lo_down = false,
	    .max_table_bytes = r->cfg.max_table_bytes,
	    .max_spares = r->cfg.max_spares,
	    .max_spare_bytes = r->cfg.max_spare_bytes,
	    .spare_max_idle = r->cfg.spare_max_idle,
	};
	pthread_t inspector;
	/* the sysctls the runtime wrote (real systems only: not with replaced
	 * operations) are read in the same thread, while the netns is made */
	carry_opts = opts;
	if (r->ops == &nsh_cni_system_ops)
		job.opts = &carry_opts;
	bool threaded = pthread_create(&thread, NULL, occupancy_look, &job) == 0;
	bool inspecting = inspect && pthread_create(&inspector, NULL, inspect_only, &job) == 0;
	/* The pod pays for its tables where the runtime says which cgroup is
	 * the pod's (not with replaced system operations: unit tests); a
	 * spare, made by an earlier call, only where it does not. */
	struct nsh_cni_charge charge = {0};
	if (r->ops == &nsh_cni_system_ops)
		nsh_cni_charge_enter(r, pc, &charge);
	if (!charge.entered)
		opts.spares = r->cfg.spares;
	int created = r->ops->create(&opts, &nsfd, &info, &e);
	if (inspecting)
		pthread_join(inspector, NULL);
	else if (inspect)
		inspect_only(&job);
	if (threaded)
		pthread_join(thread, NULL);
	else
		occupancy_look(&job);
	/* no template note to compare with yet (its first netns): the new
	 * netns's own values are the baseline */
	if (job.opts && job.carry_read == -ENODATA && created >= 0 && !job.occ.pid && !job.occ.links)
		job.carry_read = nshash_sysctls_differing(&opts, netns, nsfd, &job.carry, &job.ce);
	else if (!job.opts)
		job.carry_read = 0;
	nsh_cni_charge_leave(r, &charge);
	if (job.inspect && job.ir < 0)
		s = nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "%s", job.ie.msg);
	else if (job.already)
		s = 2; /* the netns made is dropped unused */
	else
		s = add_occupied(r, want, &job);
	if (s == 0 && created < 0)
		s = create_failed(r, req, want, &e);
	if (s == 0 && nshash_verify(&info, req, netns, &e) < 0)
		s = soft_failure(r, e.errnum == NSHASH_E_FALLBACK ? NSH_CNI_E_FALLBACK : NSH_CNI_E_CREATE, "%s", e.msg);
	if (s == 0)
		s = carry_sysctls(r, want, nsfd, job.carry_read, &job.carry, &job.ce);
	nshash_sysctls_free(&job.carry);
	if (s == 0 && r->ops->swap(nsfd, netns, &e) < 0)
		s = soft_failure(r, NSH_CNI_E_CREATE, "%s", e.msg);
	/* the ledger names the runtime's pin, not "none" or the spare's old
	 * one (a failure leaves the record counted as it was) */
	if (s == 0 && r->ops == &nsh_cni_system_ops)
		(void)nshash_netns_record_pin(&opts, nsfd, netns, NULL);
	if (nsfd >= 0)
		close(nsfd);
	if (s != 0)
		return s;
	/* What the next plugins and the runtime will open is the path, not
	 * the netns the library made: look again through the path (with the
	 * system operations, by identity: the same netns is the same sizes). */
	int looked = r->ops == &nsh_cni_system_ops && info.inode ? shows_made(netns, &info, &e)
								 : r->ops->inspect(netns, seen, &e);
	if (looked == 0 && r->ops == &nsh_cni_system_ops && info.inode)
		*seen = info;
	if (looked < 0 || nshash_verify(seen, req, netns, &e) < 0) {
		return soft_failure(r, NSH_CNI_E_CREATE, "after replacing the netns, %s does not show it: %s", netns,
				    e.msg);
	}
	/* The pod has its netns: the next ADD of these sizes takes a spare
	 * (never after an ADD refused, failed or warned: it used none). */
	if (r->ops == &nsh_cni_system_ops) {
		r->out->refill = opts; /* (its state dir is the node's policy's: it outlives the run) */
		r->out->refill_due = true;
	}
	return 0;
}

/* Kubernetes hostUsers: false: the netns is owned by the pod's own user
 * namespace (containerd 1.7 pins the one runc made with the sandbox inside;
 * CRI-O's pinns makes it there with nothing inside).  A replacement made
 * here would be the host user namespace's, empty or not.  Decided first,
 * alone (no wait for a process to leave): 0 not such a netns; 1 a pod that
 * asked for no sizes (the network's or the node's apply to it only where
 * they can) passes through on the shared tables, an info line says so; a
 * pod annotation is refused (soft_failure), saying what was seen. */
static int add_foreign_userns(struct nsh_cni_call *r, const struct nsh_cni_podcg *pc, const char *want, bool from_ann)
{
	const char *netns = r->env->netns;
	struct nshash_error ue;
	if (r->ops != &nsh_cni_system_ops || nshash_netns_foreign_userns(netns, &ue) != 1)
		return 0;
	if (!from_ann) {
		nsh_cni_log(r,
			    "%s is owned by the pod's own user namespace (Kubernetes hostUsers: false): left on the "
			    "shared tables; the pod asked for no sizes, and the network's %s apply only where nshash "
			    "can make the netns (size such pods with nshash-runtime as the runtime handler)",
			    netns, want);
		return 1;
	}
	struct nshash_occupancy occ;
	struct nshash_error oe;
	char seen[160] = " (seen: not looked inside)";
	if (pc->fd < 0)
		snprintf(seen, sizeof(seen), " (no pod cgroup to look in for a process inside)");
	else if (r->ops->occupancy(netns, pc->fd, &occ, &oe) == 0)
		snprintf(seen, sizeof(seen),
			 occ.pid ? " (process %d, %s, already inside: the OCI runtime made it with the sandbox)"
				 : " (no process of the pod inside: the runtime made it there before ADD, as CRI-O's "
				   "pinns does)",
			 (int)occ.pid, occ.comm);
	return soft_failure(
	    r, NSH_CNI_E_NOT_RESIZABLE,
	    "cannot size the netns %s (%s): it is owned by the pod's own user namespace (Kubernetes hostUsers: "
	    "false%s); a replacement made here would be the host user namespace's, where the pod could not mount "
	    "sysfs. Instead: size such pods with nshash-runtime as the runtime handler (its size classes, or the "
	    "pod annotations listed in pod_annotations), which makes the netns in the pod's user namespace",
	    netns, want, seen);
}

int nsh_cni_cmd_add(struct nsh_cni_call *r)
{
	struct nshash_sizes req;
	bool from_ann;
	char want[96], detail[600];
	enum nshash_path_kind kind;
	int s = request_and_netns(r, &req, &from_ann, &kind, detail, sizeof(detail));
	if (s != 0) {
		if (s > 0)
			r->out->outcome = NSH_CNI_UNSIZED;
		return s < 0 ? s : nsh_cni_add_result(r);
	}

	const char *netns = r->env->netns;
	sizes_text(req, want, sizeof(want));
	struct nshash_error e;
	struct nshash_netns_info info;
	char resolved[PATH_MAX], names[256];
	/* The common case, the runtime's own pin with nothing before nshash:
	 * whether it has the sizes already is looked at while the new netns is
	 * made.  Anything else is looked at first, then refused or kept. */
	bool common = kind == NSHASH_PATH_PIN && !prev_sandbox_interfaces(r, names, sizeof(names));
	if (!common) {
		if (r->ops->inspect(inspected_path(netns, kind, resolved), &info, &e) < 0)
			return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "%s", e.msg);
		if (nshash_verify(&info, req, netns, &e) == 0) {
			r->out->outcome = NSH_CNI_SIZED;
			nsh_cni_log(r, "%s already has %s", netns, want);
			return nsh_cni_add_result(r);
		}
	}

	struct nshash_netns_info seen;
	struct nsh_cni_podcg pc = {.fd = -1};
	s = add_refusal(r, want, kind, detail);
	if (s == 0 && r->ops == &nsh_cni_system_ops)
		nsh_cni_podcg_find(r, &pc);
	if (s == 0 && kind == NSHASH_PATH_PIN && (s = add_foreign_userns(r, &pc, want, from_ann)) == 1) {
		nsh_cni_podcg_close(&pc);
		r->out->outcome = NSH_CNI_UNSIZED;
		return nsh_cni_add_result(r);
	}
	if (s == 0)
		s = add_replace(r, &pc, req, want, common, &seen);
	nsh_cni_podcg_close(&pc);
	if (s == 2) {
		r->out->outcome = NSH_CNI_SIZED;
		nsh_cni_log(r, "%s already has %s", netns, want);
		return nsh_cni_add_result(r);
	}
	if (s != 0)
		return s < 0 ? s : nsh_cni_add_result(r);
	char have[96];
	sizes_text(nshash_info_sizes(&seen), have, sizeof(have));
	r->out->outcome = NSH_CNI_SIZED;
	nsh_cni_log(r, "replaced %s by a netns with %s%s", netns, have, from_ann ? " (pod annotations)" : "");
	return nsh_cni_add_result(r);
}

int nsh_cni_cmd_check(struct nsh_cni_call *r)
{
	struct nshash_sizes req;
	bool from_ann;
	enum nshash_path_kind kind;
	char detail[600];
	int s = request_and_netns(r, &req, &from_ann, &kind, detail, sizeof(detail));
	if (s != 0)
		return s < 0 ? s : 0;
	struct nshash_error e;
	struct nshash_netns_info info;
	char resolved[PATH_MAX];
	if (r->ops->inspect(inspected_path(r->env->netns, kind, resolved), &info, &e) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "%s", e.msg);
	if (nshash_verify(&info, req, r->env->netns, &e) < 0) {
		/* What ADD passed through stays passed: a pod that asked for no
		 * sizes in a netns its own user namespace owns (CRI-O runs CHECK
		 * for every pod's status) */
		struct nshash_error ue;
		if (!from_ann && r->ops == &nsh_cni_system_ops &&
		    nshash_netns_foreign_userns(r->env->netns, &ue) == 1)
			return 0;
		/* Not "allocation failed?": at CHECK a shared table may as well
		 * mean the netns was never sized. */
		char want[96], have[96];
		sizes_text(nshash_sizes_effective(req), want, sizeof(want));
		snprintf(have, sizeof(have), "tcp %s%ld, udp %s%ld", info.tcp_entries < 0 ? "shared " : "",
			 labs(info.tcp_entries), info.udp_entries < 0 ? "shared " : "", labs(info.udp_entries));
		s = soft_failure(r, NSH_CNI_E_MISMATCH, "CHECK %s: requested %s, the netns has %s", r->env->netns, want,
				 have);
		return s < 0 ? s : 0;
	}
	return 0;
}

int nsh_cni_cmd_status(struct nsh_cni_call *r)
{
	/* Ready means: the knobs for whatever this network may ask (defaults
	 * or caps) exist and the plugin holds the capabilities it needs. */
	struct nshash_sizes may = {r->cfg.max.tcp ? r->cfg.max.tcp : r->cfg.sizes.tcp,
				   r->cfg.max.udp ? r->cfg.max.udp : r->cfg.sizes.udp};
	struct nshash_probe probe;
	struct nshash_error e;
	if (r->ops->probe(&probe, &e) < 0 || nshash_probe_require(&probe, may, &e) < 0)
		return nsh_cni_fail(&r->err, NSH_CNI_E_NOT_READY, NULL, "nshash cannot size netns here: %s", e.msg);
	return 0;
}
