// SPDX-License-Identifier: LGPL-2.1-or-later
/* The OCI side of nshash, shared by nshash-hook and nshash-runtime: the
 * io.nshash.* annotations, the one config transform (create a sized netns,
 * pin it, point the config's network namespace entry at it), OCI state
 * parsing, verification, cleanup, runc-style argv parsing and logging. */
#include "nshash.h"
#include "internal.h"
#include "oci-internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (16 * 1024 * 1024) /* config.json / state on stdin */

/* ------------------------------------------------------------ logging */

static struct {
	char program[64];
	char log_file[1024];
	bool syslog;
	enum nshash_log_level stderr_max;
	const char *runtime_log, *runtime_log_format;
} log_cfg = {.program = "nshash", .stderr_max = NSHASH_LOG_INFO};

static void runtime_log(const char *path, const char *format, const char *level, const char *msg);

void nshash_log_wrapper_mode(enum nshash_log_level max, const char *log_path, const char *log_format)
{
	log_cfg.stderr_max = max;
	log_cfg.runtime_log = log_path;
	log_cfg.runtime_log_format = log_format;
}

void nshash_log_setup(const char *program, const struct nshash_policy *policy)
{
	snprintf(log_cfg.program, sizeof(log_cfg.program), "%s", program ? program : "nshash");
	log_cfg.log_file[0] = '\0';
	log_cfg.syslog = false;
	if (policy) {
		snprintf(log_cfg.log_file, sizeof(log_cfg.log_file), "%s", policy->log_file);
		log_cfg.syslog = policy->syslog;
		if (log_cfg.syslog)
			openlog(log_cfg.program, LOG_PID, LOG_DAEMON);
	}
}

void nshash_log(enum nshash_log_level level, const char *id, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO};
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level > NSHASH_LOG_INFO)
		level = NSHASH_LOG_INFO;
	/* stderr: podman and runc keep it; stdout is protocol */
	if (level <= log_cfg.stderr_max)
		fprintf(stderr, "%s: %s: %s%s%s\n", log_cfg.program, names[level], id ? id : "", id ? ": " : "", msg);
	if (log_cfg.runtime_log) {
		char line[2400];
		snprintf(line, sizeof(line), "%s: %s%s%s", log_cfg.program, id ? id : "", id ? ": " : "", msg);
		runtime_log(log_cfg.runtime_log, log_cfg.runtime_log_format, names[level], line);
	}
	if (log_cfg.log_file[0]) {
		int fd = open(log_cfg.log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (fd >= 0) {
			char line[2400], ts[64];
			time_t now = time(NULL);
			struct tm tm;
			gmtime_r(&now, &tm);
			strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
			int n = snprintf(line, sizeof(line), "%s %s[%d] %s: %s%s%s\n", ts, log_cfg.program,
					 (int)getpid(), names[level], id ? id : "", id ? ": " : "", msg);
			if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
				/* logging never fails the caller */
			}
			close(fd);
		}
	}
	if (log_cfg.syslog)
		syslog(prio[level], "%s%s%s", id ? id : "", id ? ": " : "", msg);
}

/* ------------------------------------------------------------ annotations */

static int request_from_annotations(struct json_object *ann, struct nshash_oci_request *req, struct nshash_error *err)
{
	memset(req, 0, sizeof(*req));
	if (!ann || json_object_is_type(ann, json_type_null))
		return 0;
	if (!json_object_is_type(ann, json_type_object))
		return nshash_error_set(err, EINVAL, "annotations: expected an object, got %s",
					json_type_to_name(json_object_get_type(ann)));
	json_object_object_foreach(ann, key, val)
	{
		const char *s;
		int r;

		if (strncmp(key, NSHASH_ANNOTATION_PREFIX, strlen(NSHASH_ANNOTATION_PREFIX)) != 0)
			continue;
		if (strcmp(key, NSHASH_ANNOTATION_TCP) && strcmp(key, NSHASH_ANNOTATION_UDP) &&
		    strcmp(key, NSHASH_ANNOTATION_PIN))
			return nshash_error_set(err, EINVAL, "unknown annotation \"%.200s\" (known: %s, %s)", key,
						NSHASH_ANNOTATION_TCP, NSHASH_ANNOTATION_UDP);
		if (!json_object_is_type(val, json_type_string))
			return nshash_error_set(err, EINVAL, "annotation %s: expected a string, got %s", key,
						json_type_to_name(json_object_get_type(val)));
		s = json_object_get_string(val);
		if ((size_t)json_object_get_string_len(val) != strlen(s))
			return nshash_error_set(err, EINVAL, "annotation %s: value contains a NUL byte", key);
		if (!strcmp(key, NSHASH_ANNOTATION_PIN)) {
			r = nshash_name_check(NSHASH_ANNOTATION_PIN, s, err);
			if (r < 0)
				return r;
			snprintf(req->pin, sizeof(req->pin), "%s", s);
			continue;
		}
		enum nshash_proto proto = strcmp(key, NSHASH_ANNOTATION_TCP) ? NSHASH_UDP : NSHASH_TCP;
		r = nshash_size_parse(proto, key, s, proto == NSHASH_TCP ? &req->sizes.tcp : &req->sizes.udp, err);
		if (r < 0)
			return r;
		req->present = true;
	}
	return 0;
}

int nshash_oci_request_parse(const char *json, size_t len, struct nshash_oci_request *req, struct nshash_error *err)
{
	struct json_object *doc, *ann = NULL;
	int r = nsh_json_parse_text(json, len, "config", &doc, err);

	if (r < 0)
		return r;
	if (!json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return nshash_error_set(err, EINVAL, "config: expected a JSON object");
	}
	json_object_object_get_ex(doc, "annotations", &ann);
	r = request_from_annotations(ann, req, err);
	json_object_put(doc);
	return r;
}

/* ------------------------------------------------------------ pins */

int nshash_oci_pin_path(const struct nshash_policy *policy, const char *name, char *out, size_t outlen,
			struct nshash_error *err)
{
	int r = nshash_name_check("pin name", name, err);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, "%s/pins/%s", policy->state_dir, name) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "pin %s/pins/%s: path too long", policy->state_dir, name);
	return 0;
}

int nshash_oci_cleanup(const struct nshash_policy *policy, const char *pin_name, struct nshash_error *err)
{
	char path[4096];
	int r = nshash_oci_pin_path(policy, pin_name, path, sizeof(path), err);
	if (r < 0)
		return r;
	return nshash_pin_remove(path, err);
}

int nshash_oci_wrapper_pin_name(const char *id, const char *root, char *out, size_t outlen, struct nshash_error *err)
{
	uint32_t h = 2166136261u; /* FNV-1a: a short stable tag for the runtime root */
	int r = nshash_name_check("container id", id ? id : "", err);

	if (r < 0)
		return r;
	for (const char *p = root ? root : ""; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	if (strlen(id) > 200)
		return nshash_error_set(err, ENAMETOOLONG, "container id \"%.40s...\": longer than 200 bytes", id);
	if ((size_t)snprintf(out, outlen, "%s-%08x", id, h) >= outlen)
		return nshash_error_set(err, ENAMETOOLONG, "container id %s: pin name too long", id);
	return 0;
}

static int random_pin_name(char *out, size_t outlen, struct nshash_error *err)
{
	uint8_t b[8];
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return nshash_error_set(err, errno ? errno : EIO, "pin name: getrandom: %s",
					strerror(errno ? errno : EIO));
	snprintf(out, outlen, "oci-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
	return 0;
}

/* ------------------------------------------------------------ transform */

static struct json_object *network_entry(struct json_object *doc)
{
	struct json_object *linux_, *nss;

	if (!json_object_object_get_ex(doc, "linux", &linux_) || !json_object_is_type(linux_, json_type_object) ||
	    !json_object_object_get_ex(linux_, "namespaces", &nss) || !json_object_is_type(nss, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(nss); i++) {
		struct json_object *e = json_object_array_get_idx(nss, i), *type;
		if (json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "type", &type) &&
		    json_object_is_type(type, json_type_string) && !strcmp(json_object_get_string(type), "network"))
			return e;
	}
	return NULL;
}

static int add_hook(struct json_object *doc, const char *stage, const struct nshash_oci_opts *opts,
		    struct nshash_error *err)
{
	struct json_object *hooks, *list, *hook, *args;

	if (!json_object_object_get_ex(doc, "hooks", &hooks)) {
		hooks = json_object_new_object();
		json_object_object_add(doc, "hooks", hooks);
	}
	if (!json_object_is_type(hooks, json_type_object))
		return nshash_error_set(err, EINVAL, "config: \"hooks\" is not an object");
	if (!json_object_object_get_ex(hooks, stage, &list)) {
		list = json_object_new_array();
		json_object_object_add(hooks, stage, list);
	}
	if (!json_object_is_type(list, json_type_array))
		return nshash_error_set(err, EINVAL, "config: \"hooks.%s\" is not an array", stage);
	/* drop what an earlier transform of this bundle added */
	for (size_t i = json_object_array_length(list); i-- > 0;) {
		struct json_object *p, *e = json_object_array_get_idx(list, i);
		if (json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "path", &p) &&
		    json_object_is_type(p, json_type_string) && !strcmp(json_object_get_string(p), opts->hook_path))
			json_object_array_del_idx(list, i, 1);
	}
	hook = json_object_new_object();
	args = json_object_new_array();
	json_object_array_add(args, json_object_new_string(opts->hook_path));
	json_object_array_add(args, json_object_new_string(stage));
	if (opts->policy_path) {
		json_object_array_add(args, json_object_new_string("--policy"));
		json_object_array_add(args, json_object_new_string(opts->policy_path));
	}
	json_object_object_add(hook, "path", json_object_new_string(opts->hook_path));
	json_object_object_add(hook, "args", args);
	json_object_array_add(list, hook);
	return 0;
}

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

#define PATH_EXISTS_HINT                                                                                               \
	"it was created (and maybe configured) by the engine before nshash runs, and a netns's "                       \
	"tables cannot be resized after creation. Instead: use --network none (and set up the "                        \
	"network yourself), or the nshash CNI plugin placed first in the network's plugin chain, "                     \
	"or create a sized netns with `nshash create NAME --tcp T --udp U` and run with "                              \
	"--network ns:/run/netns/NAME"

/* The netns podman makes for a container's network (/run/netns/netns-UUID),
 * as opposed to one a user names with --network ns:PATH, which nshash
 * does not replace behind the user's back. */
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

/* podman's precreate with the engine's netns already configured (its
 * bridge network): replace it at the same path by a sized netns with the
 * same links and configuration.  The config stays as it is. */
static int transplant(const char *path, struct nshash_oci_result *res, const struct nshash_policy *policy,
		      char **out, size_t *out_len, const char *config, size_t len, struct nshash_error *err)
{
	struct nshash_transplant_opts topts = {
	    .create = {.sizes = res->request.sizes, .strategy = policy->strategy, .state_dir = policy->state_dir},
	    .engine_fds_ok = true, /* podman, which runs the hook, holds the netns open (its handle on the path) */
	};
	struct nshash_transplant_report rep;
	int r = nshash_netns_transplant(&topts, path, &rep, err);
	if (r == 0) {
		res->info = rep.info;
		snprintf(res->pin_path, sizeof(res->pin_path), "%s", path);
		snprintf(res->moved, sizeof(res->moved), "%s", rep.links ? rep.link_names : "no links");
		res->action = NSHASH_OCI_TRANSPLANTED;
		return dup_out(config, len, out, out_len, err);
	}
	if (policy->on_failure == NSHASH_ON_FAILURE_WARN) {
		snprintf(res->warning, sizeof(res->warning), "%s", err->msg);
		res->action = NSHASH_OCI_WARNED;
		return dup_out(config, len, out, out_len, err);
	}
	return nshash_error_prefix(err, "cannot size %s=%u %s=%u", NSHASH_ANNOTATION_TCP, res->request.sizes.tcp,
				   NSHASH_ANNOTATION_UDP, res->request.sizes.udp);
}

#define PROCESS_NETNS_HINT                                                                                             \
	"it is the netns of a running process: a pod's infra container (the pod's containers share it) or "            \
	"--network container:. A netns a process lives in cannot be resized, and podman pod create takes no "          \
	"annotations: run the container outside the pod, or size the pod's network with the nshash CNI plugin "      \
	"placed first in the network's plugin chain"

int nshash_oci_transform(const char *config, size_t len, const struct nshash_oci_opts *opts, char **out,
			 size_t *out_len, struct nshash_oci_result *res, struct nshash_error *err)
{
	const struct nshash_policy *policy = opts->policy;
	struct json_object *doc = NULL, *ann = NULL, *entry, *path_obj;
	const char *path = NULL;
	char name[256];
	bool pinned = false;
	int r;

	memset(res, 0, sizeof(*res));
	*out = NULL;
	*out_len = 0;
	r = nsh_json_parse_text(config, len, "config", &doc, err);
	if (r < 0)
		return r;
	if (!json_object_is_type(doc, json_type_object)) {
		r = nshash_error_set(err, EINVAL, "config: expected a JSON object, got %s",
				     json_type_to_name(json_object_get_type(doc)));
		goto out;
	}
	{
		struct json_object *h;
		if (json_object_object_get_ex(doc, "hostname", &h) && json_object_is_type(h, json_type_string))
			snprintf(res->hostname, sizeof(res->hostname), "%s", json_object_get_string(h));
	}
	json_object_object_get_ex(doc, "annotations", &ann);
	r = request_from_annotations(ann, &res->request, err);
	if (r < 0)
		goto out;
	if (!res->request.present || (res->request.sizes.tcp == 0 && res->request.sizes.udp == 0)) {
		if (res->request.pin[0]) {
			r = nshash_error_set(err, EINVAL,
					     "annotation %s is set by nshash itself and cannot be given without %s/%s",
					     NSHASH_ANNOTATION_PIN, NSHASH_ANNOTATION_TCP, NSHASH_ANNOTATION_UDP);
			goto out;
		}
		res->action = NSHASH_OCI_UNTOUCHED;
		r = dup_out(config, len, out, out_len, err);
		goto out;
	}
	r = nshash_sizes_cap(res->request.sizes, policy->max, "annotations", err);
	if (r < 0) {
		nshash_error_prefix(err, "policy %s", policy->source);
		goto out;
	}
	entry = network_entry(doc);
	if (!entry) {
		r = nshash_error_set(err, EINVAL,
				     "config has no network namespace entry (host network?): %s/%s need the container "
				     "to have its own network namespace",
				     NSHASH_ANNOTATION_TCP, NSHASH_ANNOTATION_UDP);
		goto out;
	}
	if (json_object_object_get_ex(entry, "path", &path_obj) && json_object_is_type(path_obj, json_type_string) &&
	    json_object_get_string_len(path_obj) > 0)
		path = json_object_get_string(path_obj);

	if (res->request.pin[0]) {
		/* Already transformed (podman's hook, then nshash-runtime as its
		 * runtime, or a retried create): accept only our own pin.  podman
		 * hands precreate the spec from its database, which never holds
		 * our pin: there it can only come from the user. */
		r = nshash_oci_pin_path(policy, res->request.pin, res->pin_path, sizeof(res->pin_path), err);
		if (r < 0)
			goto out;
		if (opts->mode == NSHASH_OCI_PRECREATE || !path || strcmp(path, res->pin_path) != 0) {
			r = nshash_error_set(err, EINVAL,
					     "annotation %s=%s is set by nshash itself and cannot be given",
					     NSHASH_ANNOTATION_PIN, res->request.pin);
			goto out;
		}
		/* A pin of the precreate hook ("oci-*", podman with nshash-runtime
		 * as its runtime) or of this very container is used as is; the
		 * pin of another container (a bundle reused under a new id) is
		 * not shared: size afresh. */
		bool mine = !opts->pin_name || !strcmp(res->request.pin, opts->pin_name) ||
			    !strncmp(res->request.pin, "oci-", 4);
		if (mine && nshash_pin_is_netns(res->pin_path, err) == 1) {
			struct nshash_error ierr;
			if (nshash_inspect_path(res->pin_path, &res->info, &ierr) < 0)
				memset(&res->info, 0, sizeof(res->info));
			res->action = NSHASH_OCI_ALREADY;
			r = dup_out(config, len, out, out_len, err);
			goto out;
		}
		/* Our own earlier transform whose pin is gone (a bundle run
		 * again) or another container's: size it afresh. */
		path = NULL;
		res->pin_path[0] = '\0';
	}
	if (path) {
		/* Sized before us (`nshash create` + --network ns:, the nshash
		 * CNI plugin first in the chain): nothing to do if it has what
		 * was asked for. */
		struct nshash_error ierr;
		struct nshash_netns_info info;
		if (nshash_inspect_path(path, &info, &ierr) == 0 &&
		    nshash_verify(&info, res->request.sizes, path, &ierr) == 0) {
			res->info = info;
			snprintf(res->pin_path, sizeof(res->pin_path), "%s", path);
			res->action = NSHASH_OCI_ALREADY;
			r = dup_out(config, len, out, out_len, err);
			goto out;
		}
		if (opts->mode == NSHASH_OCI_PRECREATE && engine_netns(path)) {
			r = transplant(path, res, policy, out, out_len, config, len, err);
			goto out;
		}
		snprintf(res->warning, sizeof(res->warning), "network namespace %.300s already exists: %s", path,
			 strncmp(path, "/proc/", 6) ? PATH_EXISTS_HINT : PROCESS_NETNS_HINT);
		if (policy->on_failure == NSHASH_ON_FAILURE_WARN) {
			res->action = NSHASH_OCI_WARNED;
			r = dup_out(config, len, out, out_len, err);
		} else {
			r = nshash_error_set(err, EEXIST, "cannot size %s=%u %s=%u: %s", NSHASH_ANNOTATION_TCP,
					     res->request.sizes.tcp, NSHASH_ANNOTATION_UDP, res->request.sizes.udp,
					     res->warning);
		}
		goto out;
	}
	if (opts->mode == NSHASH_OCI_WRAPPER && (!opts->hook_path || access(opts->hook_path, X_OK))) {
		r = nshash_error_set(err, ENOENT,
				     "verify hook %s: not an executable (install nshash-hook next to nshash-runtime or "
				     "set hookPath in the policy)",
				     opts->hook_path ? opts->hook_path : "(none)");
		goto out;
	}

	if (opts->pin_name)
		snprintf(name, sizeof(name), "%s", opts->pin_name);
	else if ((r = random_pin_name(name, sizeof(name), err)) < 0)
		goto out;
	r = nshash_oci_pin_path(policy, name, res->pin_path, sizeof(res->pin_path), err);
	if (r < 0)
		goto out;
	{
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/pins", policy->state_dir);
		r = nshash_pin_dir_prepare(dir, err);
	}
	if (r == 0) {
		struct nshash_create_opts copts = {
		    .sizes = res->request.sizes,
		    .strategy = policy->strategy,
		    .state_dir = policy->state_dir,
		};
		r = nshash_netns_create(&copts, res->pin_path, &res->info, err);
	}
	if (r < 0) {
		if (policy->on_failure == NSHASH_ON_FAILURE_WARN) {
			snprintf(res->warning, sizeof(res->warning), "%s", err->msg);
			res->pin_path[0] = '\0';
			res->action = NSHASH_OCI_WARNED;
			r = dup_out(config, len, out, out_len, err);
		}
		goto out;
	}
	pinned = true;
	json_object_object_add(entry, "path", json_object_new_string(res->pin_path));
	if (!ann || !json_object_is_type(ann, json_type_object)) {
		ann = json_object_new_object();
		json_object_object_add(doc, "annotations", ann);
	}
	json_object_object_add(ann, NSHASH_ANNOTATION_PIN, json_object_new_string(name));
	if (opts->mode == NSHASH_OCI_WRAPPER) {
		r = add_hook(doc, "createRuntime", opts, err);
		if (r == 0)
			r = add_hook(doc, "poststop", opts, err);
		if (r < 0)
			goto out;
	}
	{
		size_t n;
		const char *s =
		    json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
		if (!s) {
			r = nshash_error_set(err, ENOMEM, "config: cannot serialize");
			goto out;
		}
		r = dup_out(s, n, out, out_len, err);
	}
	if (r == 0)
		res->action = NSHASH_OCI_SIZED;
out:
	if (r < 0 && pinned) {
		struct nshash_error e2;
		nshash_pin_remove(res->pin_path, &e2);
	}
	if (r < 0) {
		free(*out);
		*out = NULL;
	}
	json_object_put(doc);
	return r;
}

void nshash_oci_log_result(const char *who, const struct nshash_oci_result *res)
{
	const struct nshash_sizes *rq = &res->request.sizes;

	switch (res->action) {
	case NSHASH_OCI_SIZED:
		nshash_log(NSHASH_LOG_INFO, who,
			   "sized netns pinned at %s: requested tcp=%u udp=%u, effective tcp=%ld udp=%ld",
			   res->pin_path, rq->tcp, rq->udp, res->info.tcp_entries, res->info.udp_entries);
		break;
	case NSHASH_OCI_ALREADY:
		nshash_log(NSHASH_LOG_INFO, who,
			   "netns %s is already sized: requested tcp=%u udp=%u, effective tcp=%ld udp=%ld",
			   res->pin_path, rq->tcp, rq->udp, res->info.tcp_entries, res->info.udp_entries);
		break;
	case NSHASH_OCI_TRANSPLANTED:
		nshash_log(NSHASH_LOG_INFO, who,
			   "engine's netns %s replaced by a sized one with its configuration (moved %s): requested "
			   "tcp=%u udp=%u, effective tcp=%ld udp=%ld",
			   res->pin_path, res->moved, rq->tcp, rq->udp, res->info.tcp_entries, res->info.udp_entries);
		break;
	case NSHASH_OCI_WARNED:
		nshash_log(NSHASH_LOG_WARN, who,
			   "requested tcp=%u udp=%u, effective: shared global tables (onFailure warn): %s", rq->tcp,
			   rq->udp, res->warning);
		break;
	case NSHASH_OCI_UNTOUCHED:
		break;
	}
}

static int write_atomic(const char *path, const char *data, size_t len, mode_t mode, struct nshash_error *err)
{
	char tmp[4096];
	int fd, e;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.nshash-XXXXXX", path) >= sizeof(tmp))
		return nshash_error_set(err, ENAMETOOLONG, "write %s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "write %s: create temporary file: %s", path, strerror(errno));
	if (fchmod(fd, mode & 07777) < 0)
		goto fail;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		off += (size_t)n;
	}
	if (fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto fail;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return nshash_error_set(err, e, "write %s: %s", path, strerror(e));
}

int nshash_oci_bundle_transform(const char *bundle, const struct nshash_oci_opts *opts, struct nshash_oci_result *res,
				struct nshash_error *err)
{
	char path[4096], *text = NULL, *out = NULL;
	size_t len, out_len;
	struct stat st;
	int r;

	memset(res, 0, sizeof(*res));
	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", bundle) >= sizeof(path))
		return nshash_error_set(err, ENAMETOOLONG, "bundle %.100s...: path too long", bundle);
	if (stat(bundle, &st) < 0)
		return nshash_error_set(err, errno, "bundle %s: %s", bundle, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return nshash_error_set(err, ENOTDIR, "bundle %s: not a directory", bundle);
	r = nsh_read_file(path, CONFIG_MAX_BYTES, &text, &len, err);
	if (r < 0)
		return nshash_error_prefix(err, "bundle %s", bundle), r;
	if (fstatat(AT_FDCWD, path, &st, 0) < 0) {
		r = nshash_error_set(err, errno, "stat %s: %s", path, strerror(errno));
		goto out;
	}
	r = nshash_oci_transform(text, len, opts, &out, &out_len, res, err);
	if (r < 0) {
		nshash_error_prefix(err, "%s", path);
		goto out;
	}
	if (res->action == NSHASH_OCI_SIZED) {
		r = write_atomic(path, out, out_len, st.st_mode, err);
		if (r < 0) {
			struct nshash_error e2;
			nshash_pin_remove(res->pin_path, &e2);
		}
	}
out:
	free(text);
	free(out);
	return r;
}

/* ------------------------------------------------------------ state */

/* The request in BUNDLE/config.json's annotations. */
static int bundle_request(const char *bundle, struct nshash_oci_request *req, struct nshash_error *err)
{
	char path[4200], *text;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	r = nsh_read_file(path, CONFIG_MAX_BYTES, &text, &len, err);
	if (r < 0)
		return r;
	r = nshash_oci_request_parse(text, len, req, err);
	free(text);
	return r;
}

int nshash_oci_state_parse(const char *json, size_t len, struct nshash_oci_state *state, struct nshash_error *err)
{
	struct json_object *doc, *v, *ann = NULL;
	int r;

	memset(state, 0, sizeof(*state));
	r = nsh_json_parse_text(json, len, "state", &doc, err);
	if (r < 0)
		return r;
	r = -EINVAL;
	if (!json_object_is_type(doc, json_type_object)) {
		nshash_error_set(err, EINVAL, "state: expected a JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(doc, "id", &v) || !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) == 0) {
		nshash_error_set(err, EINVAL, "state: no container \"id\"");
		goto out;
	}
	if ((size_t)json_object_get_string_len(v) >= sizeof(state->id) ||
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
		nshash_error_set(err, EINVAL, "state: container id is longer than %zu bytes or has a NUL",
				 sizeof(state->id) - 1);
		goto out;
	}
	snprintf(state->id, sizeof(state->id), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(doc, "pid", &v) && !json_object_is_type(v, json_type_null)) {
		int64_t pid = json_object_get_int64(v);
		if (!json_object_is_type(v, json_type_int) || pid < 0 || pid > INT32_MAX) {
			nshash_error_set(err, EINVAL, "state of %s: \"pid\" is not a process id: %s", state->id,
					 json_object_to_json_string(v));
			goto out;
		}
		state->pid = (pid_t)pid;
	}
	if (json_object_object_get_ex(doc, "status", &v) && json_object_is_type(v, json_type_string))
		snprintf(state->status, sizeof(state->status), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(doc, "bundle", &v) && json_object_is_type(v, json_type_string))
		snprintf(state->bundle, sizeof(state->bundle), "%s", json_object_get_string(v));
	json_object_object_get_ex(doc, "annotations", &ann);
	if (ann && !json_object_is_type(ann, json_type_null)) {
		r = request_from_annotations(ann, &state->request, err);
		if (r < 0)
			nshash_error_prefix(err, "state of %s", state->id);
	} else if (state->bundle[0]) {
		/* older runtimes leave annotations out of the state */
		r = bundle_request(state->bundle, &state->request, err);
		if (r < 0)
			nshash_error_prefix(err, "state of %s: bundle", state->id);
	} else {
		r = 0;
	}
	if (r == 0 && !state->request.pin[0] && state->bundle[0]) {
		/* podman hands hooks its own copy of the annotations, not the
		 * config the precreate hook returned: the pin is in the bundle. */
		struct nshash_oci_request breq;
		struct nshash_error ignored;
		if (bundle_request(state->bundle, &breq, &ignored) == 0)
			memcpy(state->request.pin, breq.pin, sizeof(breq.pin));
	}
out:
	json_object_put(doc);
	return r;
}

int nshash_oci_verify(const struct nshash_oci_state *state, const struct nshash_policy *policy,
		      struct nshash_netns_info *info, bool *warned, struct nshash_error *err)
{
	char what[300];
	int r;

	*warned = false;
	memset(info, 0, sizeof(*info));
	if (!state->request.present)
		return 0;
	if (state->pid <= 0)
		return nshash_error_set(err, EINVAL,
					"state of %s has no pid: cannot verify its network namespace (is this hook "
					"installed for createRuntime/prestart?)",
					state->id);
	r = nshash_inspect_pid(state->pid, info, err);
	if (r < 0) {
		nshash_error_prefix(err, "verify container %s", state->id);
		return r;
	}
	snprintf(what, sizeof(what), "container %s", state->id);
	r = nshash_verify(info, state->request.sizes, what, err);
	if (r == -NSHASH_E_FALLBACK && nshash_info_sizes(info).tcp == 0 && nshash_info_sizes(info).udp == 0) {
		char tmp[sizeof(err->msg)];
		snprintf(tmp, sizeof(tmp), "%.800s; or nothing sized it (no nshash precreate hook or nshash-runtime?)",
			 err->msg);
		memcpy(err->msg, tmp, sizeof(tmp));
	}
	if (r < 0 && policy->on_failure == NSHASH_ON_FAILURE_WARN &&
	    (r == -NSHASH_E_MISMATCH || r == -NSHASH_E_FALLBACK)) {
		*warned = true;
		return 0;
	}
	return r;
}

/* ------------------------------------------------------------ wrapper argv */

static bool opt_is(const char *arg, const char *name, const char **inline_val)
{
	/* accepts -name, --name, -name=V, --name=V (Go's flag syntax) */
	size_t n = strlen(name);
	if (arg[0] != '-')
		return false;
	arg += arg[1] == '-' ? 2 : 1;
	if (strncmp(arg, name, n) != 0)
		return false;
	if (arg[n] == '\0') {
		*inline_val = NULL;
		return true;
	}
	if (arg[n] == '=') {
		*inline_val = arg + n + 1;
		return true;
	}
	return false;
}

static bool opt_in(const char *arg, const char *const *names, const char **inline_val)
{
	for (; *names; names++)
		if (opt_is(arg, *names, inline_val))
			return true;
	return false;
}

int nshash_runtime_args_parse(int argc, char *const argv[], struct nshash_runtime_args *a, struct nshash_error *err)
{
	static const char *const global_val[] = {"root",	   "log", "log-format", "criu", "rootless",
						 "cgroup-manager", NULL};
	static const char *const create_val[] = {
	    "bundle", "b", "console-socket", "pid-file", "preserve-fds", "pidfd-socket", "config", "f", NULL};
	const char *v;
	int i;

	memset(a, 0, sizeof(*a));
	a->subcommand_index = -1;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (arg[0] != '-' || !strcmp(arg, "-"))
			break;
		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (opt_in(arg, global_val, &v)) {
			if (!v) {
				if (i + 1 >= argc)
					return nshash_error_set(err, EINVAL, "option %s needs a value", arg);
				v = argv[++i];
			}
			if (opt_is(arg, "root", &(const char *){NULL}))
				a->root = v;
		}
	}
	if (i >= argc)
		return 0;
	a->subcommand_index = i;
	a->subcommand = argv[i];
	bool create = !strcmp(a->subcommand, "create") || !strcmp(a->subcommand, "run");
	bool options = true;
	for (i++; i < argc; i++) {
		const char *arg = argv[i];
		if (options && !strcmp(arg, "--")) {
			options = false;
			continue;
		}
		if (options && arg[0] == '-' && arg[1]) {
			if (create && opt_in(arg, create_val, &v)) {
				if (!v) {
					if (i + 1 >= argc)
						return nshash_error_set(err, EINVAL, "%s: option %s needs a value",
									a->subcommand, arg);
					v = argv[++i];
				}
				const char *dummy;
				if (opt_is(arg, "bundle", &dummy) || opt_is(arg, "b", &dummy))
					a->bundle = v;
			} else if (!strcmp(arg, "-f") || !strcmp(arg, "--force") || !strcmp(arg, "-force")) {
				a->force = true;
			} else if (!strcmp(arg, "-d") || !strcmp(arg, "--detach") || !strcmp(arg, "-detach")) {
				a->detach = true;
			}
			continue;
		}
		if (!a->id)
			a->id = arg;
	}
	if (create && a->bundle && !a->bundle[0])
		return nshash_error_set(err, EINVAL, "%s: empty --bundle", a->subcommand);
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

static bool find_in_path(const char *name, const char *self, char *out, size_t outlen)
{
	static const char fallback[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	const char *paths[2] = {getenv("PATH"), fallback};

	for (int k = 0; k < 2; k++) {
		const char *p = paths[k];
		while (p && *p) {
			const char *end = strchrnul(p, ':');
			if (end > p && (size_t)snprintf(out, outlen, "%.*s/%s", (int)(end - p), p, name) < outlen &&
			    access(out, X_OK) == 0 && !same_file(out, self))
				return true;
			p = *end ? end + 1 : end;
		}
	}
	return false;
}

int nshash_runtime_find(const struct nshash_policy *policy, const char *self, char *out, size_t outlen,
			struct nshash_error *err)
{
	const char *want = policy->runtime;

	if (want[0] == '/') {
		if (access(want, X_OK) < 0)
			return nshash_error_set(err, errno, "runtime %s (policy %s): %s", want, policy->source,
						strerror(errno));
		if (same_file(want, self))
			return nshash_error_set(err, ELOOP, "runtime %s (policy %s) is nshash-runtime itself", want,
						policy->source);
		snprintf(out, outlen, "%s", want);
		return 0;
	}
	if (want[0]) {
		if (find_in_path(want, self, out, outlen))
			return 0;
		return nshash_error_set(err, ENOENT, "runtime \"%s\" (policy %s): not found in PATH", want,
					policy->source);
	}
	if (find_in_path("runc", self, out, outlen) || find_in_path("crun", self, out, outlen))
		return 0;
	return nshash_error_set(
	    err, ENOENT, "no OCI runtime found: neither runc nor crun is in PATH; set \"runtime\" in the policy (%s)",
	    policy->source);
}

void nshash_runtime_log_error(const char *log_path, const char *log_format, const char *msg)
{
	runtime_log(log_path, log_format, "error", msg);
}

static void runtime_log(const char *log_path, const char *log_format, const char *level, const char *msg)
{
	char ts[64];
	time_t now = time(NULL);
	struct tm tm;
	int fd;

	if (!log_path || !*log_path)
		return;
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (log_format && !strcmp(log_format, "json")) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "level", json_object_new_string(level));
		json_object_object_add(o, "msg", json_object_new_string(msg));
		json_object_object_add(o, "time", json_object_new_string(ts));
		dprintf(fd, "%s\n",
			json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		dprintf(fd, "time=\"%s\" level=%s msg=\"%s\"\n", ts, level, msg);
	}
	close(fd);
}

/* ------------------------------------------------------------ orphans */

#include <ctype.h>
#include <dirent.h>

int nshash_oci_gc_orphans(const char *state_dir, int64_t min_age, bool dry_run, size_t *removed,
			  struct nshash_error *err)
{
	char dir[4096];
	DIR *d;
	struct dirent *de;
	time_t now = time(NULL);
	int r = 0;

	*removed = 0;
	snprintf(dir, sizeof(dir), "%s/pins", state_dir ? state_dir : NSHASH_DEFAULT_STATE_DIR);
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return nshash_error_set(err, errno, "gc %s: %s", dir, strerror(errno));
	}
	while ((de = readdir(d))) {
		char path[4400];
		struct stat st, lst;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* lstat sees the pin file's own mtime only when nothing is mounted;
		 * the bind mount shows the nsfs inode, whose identity we need. */
		if (nshash_pin_is_netns(path, err) != 1 || stat(path, &st) < 0 || lstat(path, &lst) < 0)
			continue;
		if (min_age > 0 && now - st.st_ctime < min_age)
			continue;
		if (nsh_netns_user(st.st_dev, st.st_ino) != 0)
			continue; /* used, or cannot tell: keep */
		if (!dry_run) {
			r = nshash_pin_remove(path, err);
			if (r < 0)
				break;
		}
		(*removed)++;
	}
	closedir(d);
	return r;
}
