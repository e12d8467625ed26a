// SPDX-License-Identifier: LGPL-2.1-or-later
/* The CNI chained plugin's logic: env and config validation, version
 * handling, the size request (network defaults + pod annotations within the
 * caps), and the ADD / CHECK / DEL / STATUS / GC / VERSION answers.  The
 * binary (cni/nshash-cni.c) only reads stdin and prints what this returns. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "nshash.h"

#define POD_ANNOTATIONS "io.kubernetes.cri.pod-annotations"
#define JSON_OUT_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

const char *const nshash_cni_versions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL};
#define CNI_LATEST "1.1.0"

bool nshash_cni_version_supported(const char *version)
{
	for (int i = 0; version && nshash_cni_versions[i]; i++)
		if (strcmp(version, nshash_cni_versions[i]) == 0)
			return true;
	return false;
}

static bool version_split(const char *v, long part[3])
{
	for (int i = 0; i < 3; i++) {
		if (!v || !isdigit((unsigned char)*v))
			return false;
		char *end;
		part[i] = strtol(v, &end, 10);
		if (i < 2 && *end != '.')
			return false;
		if (i == 2 && *end != '\0')
			return false;
		v = end + 1;
	}
	return true;
}

int nshash_cni_version_cmp(const char *a, const char *b)
{
	long pa[3], pb[3];
	bool oka = version_split(a, pa), okb = version_split(b, pb);
	if (!oka || !okb)
		return (int)oka - (int)okb;
	for (int i = 0; i < 3; i++)
		if (pa[i] != pb[i])
			return pa[i] < pb[i] ? -1 : 1;
	return 0;
}

int nshash_cni_error_set(struct nshash_cni_error *err, int code, const char *details, const char *fmt, ...)
{
	va_list ap;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	snprintf(err->details, sizeof(err->details), "%s", details ? details : "");
	return -1;
}

char *nshash_cni_error_json(const char *cni_version, const struct nshash_cni_error *err)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "cniVersion", json_object_new_string(cni_version ? cni_version : CNI_LATEST));
	json_object_object_add(o, "code", json_object_new_int(err->code));
	json_object_object_add(o, "msg", json_object_new_string(err->msg));
	if (err->details[0])
		json_object_object_add(o, "details", json_object_new_string(err->details));
	char *s = strdup(json_object_to_json_string_ext(o, JSON_OUT_FLAGS));
	json_object_put(o);
	return s;
}

/* ------------------------------------------------------------------ env */

void nshash_cni_env_from_environ(struct nshash_cni_env *env)
{
	env->command = getenv("CNI_COMMAND");
	env->containerid = getenv("CNI_CONTAINERID");
	env->netns = getenv("CNI_NETNS");
	env->ifname = getenv("CNI_IFNAME");
	env->args = getenv("CNI_ARGS");
	env->path = getenv("CNI_PATH");
}

static const struct {
	const char *name;
	enum nshash_cni_command command;
} commands[] = {
    {"ADD", NSHASH_CNI_ADD},	   {"DEL", NSHASH_CNI_DEL}, {"CHECK", NSHASH_CNI_CHECK},
    {"STATUS", NSHASH_CNI_STATUS}, {"GC", NSHASH_CNI_GC},   {"VERSION", NSHASH_CNI_VERSION},
};

static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

int nshash_cni_env_check(const struct nshash_cni_env *env, enum nshash_cni_command *command,
			 struct nshash_cni_error *err)
{
	if (!env->command || !*env->command)
		return nshash_cni_error_set(err, NSHASH_CNI_E_ENV, NULL,
					    "required environment variable CNI_COMMAND is missing or empty");
	size_t i;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(env->command, commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return nshash_cni_error_set(
		    err, NSHASH_CNI_E_ENV, NULL,
		    "CNI_COMMAND=\"%.64s\" is not a CNI command (ADD, DEL, CHECK, STATUS, GC, VERSION)", env->command);
	*command = commands[i].command;

	/* The spec: ADD and CHECK need the container, netns and interface;
	 * DEL does not need the netns; STATUS, GC and VERSION only the command. */
	bool need_id = *command == NSHASH_CNI_ADD || *command == NSHASH_CNI_CHECK || *command == NSHASH_CNI_DEL;
	bool need_netns = *command == NSHASH_CNI_ADD || *command == NSHASH_CNI_CHECK;
	char missing[256] = "";
	if (need_id && (!env->containerid || !*env->containerid))
		append(missing, sizeof(missing), "%sCNI_CONTAINERID", *missing ? ", " : "");
	if (need_netns && (!env->netns || !*env->netns))
		append(missing, sizeof(missing), "%sCNI_NETNS", *missing ? ", " : "");
	if (need_id && (!env->ifname || !*env->ifname))
		append(missing, sizeof(missing), "%sCNI_IFNAME", *missing ? ", " : "");
	if (*missing)
		return nshash_cni_error_set(err, NSHASH_CNI_E_ENV, NULL,
					    "required environment variable%s missing or empty for %s: %s",
					    strchr(missing, ',') ? "s" : "", env->command, missing);
	if (need_netns && env->netns[0] != '/')
		return nshash_cni_error_set(err, NSHASH_CNI_E_ENV, NULL, "CNI_NETNS=\"%.256s\" is not an absolute path",
					    env->netns);
	return 0;
}

/* --------------------------------------------------------------- config */

static const char *json_type_word(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
		return "a fractional number";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "?";
}

/* The value as the user wrote it, for messages (shortened). */
static void json_shown(json_object *v, char *buf, size_t len)
{
	const char *s = json_object_to_json_string_ext(v, JSON_OUT_FLAGS);
	if (strlen(s) + 1 > len && len > 4)
		snprintf(buf, len, "%.*s...", (int)(len - 4), s);
	else
		snprintf(buf, len, "%s", s);
}

static int config_size(json_object *root, const char *key, enum nshash_proto proto, bool *given, uint32_t *out,
		       struct nshash_cni_error *err)
{
	json_object *v;
	*given = false;
	*out = 0;
	if (!json_object_object_get_ex(root, key, &v))
		return 0;
	char shown[96];
	json_shown(v, shown, sizeof(shown));
	if (!json_object_is_type(v, json_type_int))
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"%s\": %s is %s; expected a JSON integer "
					    "0..%u (write %s: 4096, not \"4096\")",
					    key, shown, json_type_word(v), nshash_proto_max(proto), key);
	/* json-c saturates integers beyond int64 (and keeps uint64 ones as
	 * such): anything that large is out of range anyway. */
	int64_t n = json_object_get_int64(v);
	struct nshash_error e;
	if (n == INT64_MAX || nshash_size_check(proto, key, n, out, &e) < 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"%s\": %s is out of range (%s sizes are 0..%u, "
					    "0 = shared table)",
					    key, shown, nshash_proto_name(proto), nshash_proto_max(proto));
	*given = true;
	return 0;
}

/* A string member of `obj`; *out NULL when absent.  `what` and `code` say
 * whose value it is in the error ("network config key", 7). */
static int string_member(json_object *obj, const char *key, const char *what, int code, const char **out,
			 struct nshash_cni_error *err)
{
	json_object *v;
	*out = NULL;
	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		char shown[96];
		json_shown(v, shown, sizeof(shown));
		return nshash_cni_error_set(err, code, NULL, "%s \"%s\": %s is %s; expected a string", what, key, shown,
					    json_type_word(v));
	}
	*out = json_object_get_string(v);
	return 0;
}

static int config_string(json_object *root, const char *key, const char **out, struct nshash_cni_error *err)
{
	return string_member(root, key, "network config key", NSHASH_CNI_E_CONFIG, out, err);
}

void nshash_cni_config_free(struct nshash_cni_config *cfg)
{
	if (cfg->json)
		json_object_put(cfg->json);
	cfg->json = NULL;
}

static int decode(const char *text, size_t len, json_object **out, struct nshash_cni_error *err)
{
	*out = NULL;
	if (len == 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL,
					    "no network config on stdin (expected a JSON object)");
	if (memchr(text, '\0', len))
		return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL,
					    "network config on stdin contains a NUL byte");
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return nshash_cni_error_set(err, NSHASH_CNI_E_IO, NULL, "decode network config: out of memory");
	json_object *root = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!root || jerr != json_tokener_success) {
		if (root)
			json_object_put(root);
		if (jerr == json_tokener_continue)
			return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL,
						    "decode network config: unexpected end of input after %zu bytes "
						    "(truncated JSON)",
						    len);
		return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL, "decode network config: %s at byte %zu",
					    json_tokener_error_desc(jerr), end);
	}
	while (end < len && isspace((unsigned char)text[end]))
		end++;
	if (end < len) {
		json_object_put(root);
		return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL,
					    "decode network config: unexpected data after the JSON object at byte %zu",
					    end);
	}
	if (!json_object_is_type(root, json_type_object)) {
		const char *w = json_type_word(root);
		json_object_put(root);
		return nshash_cni_error_set(err, NSHASH_CNI_E_DECODE, NULL,
					    "decode network config: stdin holds %s, expected a JSON object", w);
	}
	*out = root;
	return 0;
}

static void version_list(char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; nshash_cni_versions[i]; i++)
		append(buf, len, "%s%s", i ? ", " : "", nshash_cni_versions[i]);
}

int nshash_cni_config_parse(const char *text, size_t len, struct nshash_cni_config *cfg, struct nshash_cni_error *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->on_failure = NSHASH_ON_FAILURE_FAIL;
	cfg->strategy = NSHASH_STRATEGY_NESTED;
	json_object *root;
	if (decode(text, len, &root, err) < 0)
		return -1;
	cfg->json = root;

	char supported[64];
	version_list(supported, sizeof(supported));
	json_object *v;
	if (!json_object_object_get_ex(root, "cniVersion", &v))
		return nshash_cni_error_set(err, NSHASH_CNI_E_VERSION, supported,
					    "network config has no cniVersion; nshash supports %s", supported);
	if (!json_object_is_type(v, json_type_string)) {
		char shown[64];
		json_shown(v, shown, sizeof(shown));
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"cniVersion\": %s is %s; expected a string", shown,
					    json_type_word(v));
	}
	snprintf(cfg->cni_version, sizeof(cfg->cni_version), "%s", json_object_get_string(v));
	if (!nshash_cni_version_supported(json_object_get_string(v)))
		return nshash_cni_error_set(err, NSHASH_CNI_E_VERSION, supported,
					    "cniVersion \"%.64s\" is not supported; nshash supports %s",
					    json_object_get_string(v), supported);

	const char *s;
	if (config_string(root, "name", &s, err) < 0)
		return -1;
	snprintf(cfg->name, sizeof(cfg->name), "%s", s ? s : "");

	bool given;
	if (config_size(root, "tcp", NSHASH_TCP, &cfg->has_tcp, &cfg->sizes.tcp, err) < 0 ||
	    config_size(root, "udp", NSHASH_UDP, &cfg->has_udp, &cfg->sizes.udp, err) < 0 ||
	    config_size(root, "maxTcp", NSHASH_TCP, &given, &cfg->max.tcp, err) < 0)
		return -1;
	if (!given) /* pods may ask up to the network default, as rounded by the kernel */
		cfg->max.tcp = nshash_size_effective(NSHASH_TCP, cfg->sizes.tcp);
	if (config_size(root, "maxUdp", NSHASH_UDP, &given, &cfg->max.udp, err) < 0)
		return -1;
	if (!given)
		cfg->max.udp = nshash_size_effective(NSHASH_UDP, cfg->sizes.udp);
	struct nshash_error e;
	if (nshash_sizes_cap(cfg->sizes, cfg->max, "network config", &e) < 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "%s: the network default must not exceed the cap", e.msg);

	if (config_string(root, "onFailure", &s, err) < 0)
		return -1;
	if (s && strcmp(s, "warn") == 0)
		cfg->on_failure = NSHASH_ON_FAILURE_WARN;
	else if (s && strcmp(s, "fail") != 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"onFailure\": \"%.64s\" is not fail or warn", s);

	if (config_string(root, "strategy", &s, err) < 0)
		return -1;
	if (s && nshash_strategy_parse(s, &cfg->strategy, &e) < 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"strategy\": \"%.64s\" is not template or nested", s);

	if (config_string(root, "stateDir", &s, err) < 0)
		return -1;
	/* the library's path rules (no "..", no "//", bounded); a bare name
	 * would mean /run/netns/NAME there, so insist on the leading '/' */
	if (s && (s[0] != '/' || nshash_pin_resolve(s, cfg->state_dir, sizeof(cfg->state_dir), &e) < 0))
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"stateDir\": \"%.256s\" is not a clean absolute path",
					    s);

	if (json_object_object_get_ex(root, "prevResult", &v) && !json_object_is_type(v, json_type_object))
		return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
					    "network config key \"prevResult\" is %s; expected an object",
					    json_type_word(v));
	json_object *rc;
	if (json_object_object_get_ex(root, "runtimeConfig", &rc)) {
		if (!json_object_is_type(rc, json_type_object))
			return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
						    "network config key \"runtimeConfig\" is %s; expected an object",
						    json_type_word(rc));
		if (json_object_object_get_ex(rc, POD_ANNOTATIONS, &v) && !json_object_is_type(v, json_type_object) &&
		    !json_object_is_type(v, json_type_null))
			return nshash_cni_error_set(err, NSHASH_CNI_E_CONFIG, NULL,
						    "network config key \"runtimeConfig\": \"" POD_ANNOTATIONS
						    "\" is %s; expected an object of strings",
						    json_type_word(v));
	}
	return 0;
}

/* -------------------------------------------------------------- request */

static int annotation_size(json_object *ann, const char *key, enum nshash_proto proto, bool *given, uint32_t *out,
			   struct nshash_cni_error *err)
{
	const char *text;
	*given = false;
	if (string_member(ann, key, "pod annotation", NSHASH_CNI_E_REFUSED, &text, err) < 0)
		return -1;
	if (!text)
		return 0;
	struct nshash_error e;
	if (nshash_size_parse(proto, key, text, out, &e) < 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_REFUSED, NULL, "pod annotation %s", e.msg);
	*given = true;
	return 0;
}

int nshash_cni_request(const struct nshash_cni_config *cfg, struct nshash_sizes *req, bool *from_annotation,
		       struct nshash_cni_error *err)
{
	*req = cfg->sizes;
	*from_annotation = false;
	json_object *rc, *ann = NULL;
	if (cfg->json && json_object_object_get_ex(cfg->json, "runtimeConfig", &rc) &&
	    json_object_object_get_ex(rc, POD_ANNOTATIONS, &ann) && !json_object_is_type(ann, json_type_object))
		ann = NULL;
	bool tcp_given, udp_given;
	struct nshash_sizes asked = {0, 0};
	if (annotation_size(ann, NSHASH_ANNOTATION_TCP, NSHASH_TCP, &tcp_given, &asked.tcp, err) < 0 ||
	    annotation_size(ann, NSHASH_ANNOTATION_UDP, NSHASH_UDP, &udp_given, &asked.udp, err) < 0)
		return -1;
	if (tcp_given)
		req->tcp = asked.tcp;
	if (udp_given)
		req->udp = asked.udp;
	*from_annotation = tcp_given || udp_given;
	struct nshash_error e;
	if (*from_annotation && nshash_sizes_cap(*req, cfg->max, "pod annotations", &e) < 0)
		return nshash_cni_error_set(err, NSHASH_CNI_E_REFUSED, NULL,
					    "%s in network \"%s\" (raise maxTcp/maxUdp in the conflist to allow it)",
					    e.msg, cfg->name);
	return 0;
}

/* ------------------------------------------------------------ the netns */

/* Skip "DIGITS/" at *p; false when it is not there. */
static bool skip_number_dir(const char **p)
{
	const char *q = *p;
	if (!isdigit((unsigned char)*q))
		return false;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q != '/')
		return false;
	*p = q + 1;
	return true;
}

static bool is_proc_netns_link(const char *path)
{
	/* /proc/PID/ns/net, /proc/self/..., /proc/PID/task/TID/ns/net */
	if (strncmp(path, "/proc/", 6) != 0)
		return false;
	const char *p = path + 6;
	if (strncmp(p, "self/", 5) == 0)
		p += 5;
	else if (strncmp(p, "thread-self/", 12) == 0)
		p += 12;
	else if (!skip_number_dir(&p))
		return false;
	else if (strncmp(p, "task/", 5) == 0) {
		p += 5;
		if (!skip_number_dir(&p))
			return false;
	}
	return strcmp(p, "ns/net") == 0;
}

int nshash_cni_classify(const char *path, enum nshash_cni_netns_kind *kind, char *detail, size_t detail_len,
			struct nshash_error *err)
{
	struct stat st;
	detail[0] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			*kind = NSHASH_CNI_NETNS_MISSING;
			snprintf(detail, detail_len, "no such file");
			return 0;
		}
		return nshash_error_set(err, errno, "%s: %s", path, strerror(errno));
	}
	if (S_ISLNK(st.st_mode)) {
		char target[512];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		cleanup_close int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || !nsh_fd_is_netns(fd)) {
			*kind = fd < 0 && errno == ENOENT ? NSHASH_CNI_NETNS_MISSING : NSHASH_CNI_NETNS_NOT_NETNS;
			snprintf(detail, detail_len, "a symbolic link to %s, which is not a network namespace", target);
			return 0;
		}
		*kind = is_proc_netns_link(path) ? NSHASH_CNI_NETNS_PROC : NSHASH_CNI_NETNS_LINK;
		snprintf(detail, detail_len, "%s", target);
		return 0;
	}
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && nsh_fd_is_netns(fd)) {
		*kind = NSHASH_CNI_NETNS_PIN;
		return 0;
	}
	*kind = NSHASH_CNI_NETNS_NOT_NETNS;
	if (S_ISDIR(st.st_mode))
		snprintf(detail, detail_len, "a directory");
	else if (S_ISREG(st.st_mode))
		snprintf(detail, detail_len, "a regular file with nothing mounted on it (a stale pin?)");
	else if (fd >= 0 && ioctl(fd, NS_GET_NSTYPE) >= 0)
		snprintf(detail, detail_len, "a namespace of another type");
	else
		snprintf(detail, detail_len, "a special file (mode %o)", (unsigned)(st.st_mode & S_IFMT));
	return 0;
}

int nshash_cni_occupancy(const char *path, struct nshash_cni_occupancy *occ, struct nshash_error *err)
{
	memset(occ, 0, sizeof(*occ));
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nshash_error_set(err, errno, "open %s: %s", path, strerror(errno));
	struct stat ns;
	if (fstat(fd, &ns) < 0)
		return nshash_error_set(err, errno, "stat %s: %s", path, strerror(errno));

	cleanup_close int home = -1;
	if (nsh_netns_open_current(&home, err) < 0 || nsh_netns_enter(fd, path, err) < 0)
		return -1;
	struct if_nameindex *ifs = if_nameindex();
	int saved = errno;
	if (nsh_netns_return(home, err) < 0) {
		if (ifs)
			if_freenameindex(ifs);
		return -1;
	}
	if (!ifs)
		return nshash_error_set(err, saved, "list the interfaces of %s: %s", path, strerror(saved));
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		if (strcmp(i->if_name, "lo") == 0)
			continue;
		append(occ->link_names, sizeof(occ->link_names), "%s%s", occ->links ? ", " : "", i->if_name);
		occ->links++;
	}
	if_freenameindex(ifs);

	pid_t pid = nsh_netns_user(ns.st_dev, ns.st_ino);
	if (pid < 0)
		return nshash_error_set(err, -pid, "look for processes in %s: /proc: %s", path, strerror(-pid));
	if (pid > 0) {
		occ->pid = pid;
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
		FILE *f = fopen(p, "re");
		if (f) {
			if (fgets(occ->comm, sizeof(occ->comm), f))
				occ->comm[strcspn(occ->comm, "\n")] = '\0';
			fclose(f);
		}
	}
	return 0;
}

const struct nshash_cni_ops nshash_cni_system_ops = {
    .classify = nshash_cni_classify,
    .inspect = nshash_inspect_path,
    .occupancy = nshash_cni_occupancy,
    .probe = nshash_probe,
    .replace = nshash_netns_replace,
    .process_grace_ms = 3000,
};

/* ------------------------------------------------------------- commands */

struct run {
	const struct nshash_cni_env *env;
	enum nshash_cni_command command;
	const struct nshash_cni_ops *ops;
	struct nshash_cni_config cfg;
	struct nshash_cni_output *out;
	struct nshash_cni_error err;
};

static void logf_(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct run *r, const char *fmt, ...)
{
	char line[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	append(r->out->log, sizeof(r->out->log), "nshash[%s %s]: %s\n",
	       r->env->command && *r->env->command ? r->env->command : "-",
	       r->env->containerid && *r->env->containerid ? r->env->containerid : "-", line);
}

/* Result of ADD: prevResult (unchanged) or the minimal result, stamped
 * with the config's cniVersion. */
static int add_result(struct run *r)
{
	json_object *prev = NULL, *res;
	if (json_object_object_get_ex(r->cfg.json, "prevResult", &prev) &&
	    json_object_is_type(prev, json_type_object)) {
		res = json_object_get(prev);
	} else {
		res = json_object_new_object();
		if (!res)
			return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "out of memory");
	}
	json_object *ver = json_object_new_string(r->cfg.cni_version);
	json_object_object_add(res, "cniVersion", ver);
	r->out->stdout_text = strdup(json_object_to_json_string_ext(res, JSON_OUT_FLAGS));
	json_object_put(res);
	if (!r->out->stdout_text)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "out of memory");
	return 0;
}

/* Interfaces a previous plugin put into the container (prevResult entries
 * with a "sandbox"): nshash was not placed first. */
static unsigned prev_sandbox_interfaces(struct run *r, char *names, size_t len)
{
	json_object *prev, *ifs;
	unsigned n = 0;
	names[0] = '\0';
	if (!json_object_object_get_ex(r->cfg.json, "prevResult", &prev) ||
	    !json_object_object_get_ex(prev, "interfaces", &ifs) || !json_object_is_type(ifs, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(ifs); i++) {
		json_object *it = json_object_array_get_idx(ifs, i), *sb, *name;
		if (!json_object_object_get_ex(it, "sandbox", &sb) || !json_object_is_type(sb, json_type_string) ||
		    !*json_object_get_string(sb))
			continue;
		append(names, len, "%s%s", n ? ", " : "",
		       json_object_object_get_ex(it, "name", &name) ? json_object_get_string(name) : "?");
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
static int soft_failure(struct run *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int soft_failure(struct run *r, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->cfg.on_failure == NSHASH_ON_FAILURE_WARN) {
		logf_(r, "warning (onFailure warn, code %d): %s; continuing on the shared tables", code, msg);
		return 1;
	}
	return nshash_cni_error_set(&r->err, code, NULL, "%s", msg);
}

static int netns_kind_checked(struct run *r, enum nshash_cni_netns_kind *kind, char *detail, size_t dlen)
{
	struct nshash_error e;
	const char *netns = r->env->netns;
	if (r->ops->classify(netns, kind, detail, dlen, &e) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_ENV, NULL, "CNI_NETNS=%s: %s", netns, e.msg);
	if (*kind == NSHASH_CNI_NETNS_MISSING || *kind == NSHASH_CNI_NETNS_NOT_NETNS)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_ENV, NULL,
					    "CNI_NETNS=%s is not a network namespace: %s", netns, detail);
	return 0;
}

/* The request of ADD / CHECK, and what CNI_NETNS is when something is
 * requested.  Returns 1 when nothing is requested, 0, or -1 (r->err). */
static int request_and_netns(struct run *r, struct nshash_sizes *req, bool *from_ann, enum nshash_cni_netns_kind *kind,
			     char *detail, size_t dlen)
{
	if (nshash_cni_request(&r->cfg, req, from_ann, &r->err) < 0)
		return -1;
	if (req->tcp == 0 && req->udp == 0)
		return 1;
	return netns_kind_checked(r, kind, detail, dlen);
}

/* Occupancy of the netns, giving a process found inside up to
 * ops->process_grace_ms to leave (a plugin of a parallel network). */
static int occupancy_settled(struct run *r, const char *netns, struct nshash_cni_occupancy *occ, struct nshash_error *e)
{
	const unsigned step_ms = 10;
	unsigned waited = 0;
	for (;;) {
		if (r->ops->occupancy(netns, occ, e) < 0)
			return -1;
		if (!occ->pid || occ->links || waited >= r->ops->process_grace_ms)
			break;
		struct timespec ts = {0, step_ms * 1000000L};
		nanosleep(&ts, NULL);
		waited += step_ms;
	}
	if (waited && !occ->pid)
		logf_(r, "waited %u ms for a process to leave %s", waited, netns);
	return 0;
}

static int cmd_add(struct run *r)
{
	struct nshash_sizes req;
	bool from_ann;
	char want[96], detail[600];
	enum nshash_cni_netns_kind kind;
	int s = request_and_netns(r, &req, &from_ann, &kind, detail, sizeof(detail));
	if (s != 0)
		return s < 0 ? -1 : add_result(r);

	const char *netns = r->env->netns;
	sizes_text(req, want, sizeof(want));
	struct nshash_error e;
	struct nshash_netns_info info;
	if (r->ops->inspect(netns, &info, &e) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "%s", e.msg);
	if (nshash_verify(&info, req, netns, &e) == 0) {
		logf_(r, "%s already has %s", netns, want);
		return add_result(r);
	}

	char names[256];
	struct nshash_cni_occupancy occ;
	if (kind == NSHASH_CNI_NETNS_PROC)
		s = soft_failure(
		    r, NSHASH_CNI_E_NOT_RESIZABLE,
		    "cannot size the netns %s (%s): it is a process's netns, created by the runtime "
		    "with the container already inside, and table sizes are fixed when a netns is created; "
		    "nshash works only with runtimes that pin the netns before ADD (containerd CRI, CRI-O, "
		    "podman); here use the nshash OCI hook or runtime wrapper instead",
		    netns, want);
	else if (kind == NSHASH_CNI_NETNS_LINK)
		s = soft_failure(r, NSHASH_CNI_E_NOT_RESIZABLE,
				 "cannot size the netns %s (%s): it is a symbolic link (to %s), not the runtime's pin; "
				 "nshash replaces only a netns bind-mounted at CNI_NETNS itself",
				 netns, want, detail);
	else if (prev_sandbox_interfaces(r, names, sizeof(names)))
		s = soft_failure(r, NSHASH_CNI_E_NOT_RESIZABLE,
				 "cannot size the netns %s (%s): prevResult already has container interfaces (%s), "
				 "so nshash is not the first plugin; place nshash first in the conflist's plugins list",
				 netns, want, names);
	else if (occupancy_settled(r, netns, &occ, &e) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "cannot size the netns %s: %s", netns,
					    e.msg);
	else if (occ.links)
		s = soft_failure(r, NSHASH_CNI_E_NOT_RESIZABLE,
				 "cannot size the netns %s (%s): it already has interfaces besides lo (%s); place "
				 "nshash first in the conflist's plugins list so it runs before any interface exists",
				 netns, want, occ.link_names);
	else if (occ.pid)
		s = soft_failure(
		    r, NSHASH_CNI_E_NOT_RESIZABLE,
		    "cannot size the netns %s (%s): process %d (%s) already lives in it (still after %u ms); "
		    "a netns can be replaced only before anything joins it",
		    netns, want, (int)occ.pid, occ.comm, r->ops->process_grace_ms);
	if (s != 0)
		return s < 0 ? -1 : add_result(r);

	struct nshash_probe probe;
	if (r->ops->probe(&probe, &e) < 0 || nshash_probe_require(&probe, req, &e) < 0) {
		s = soft_failure(r, NSHASH_CNI_E_CREATE, "cannot size the netns %s (%s): %s", netns, want, e.msg);
		return s < 0 ? -1 : add_result(r);
	}

	struct nshash_create_opts opts = {
	    .sizes = req,
	    .strategy = r->cfg.strategy,
	    .state_dir = r->cfg.state_dir[0] ? r->cfg.state_dir : NULL,
	    /* lo up: some runtimes raise it before ADD and never again */
	    .keep_lo_down = false,
	};
	if (r->ops->replace(&opts, netns, &info, &e) < 0) {
		int code = e.errnum == NSHASH_E_FALLBACK ? NSHASH_CNI_E_FALLBACK : NSHASH_CNI_E_CREATE;
		s = soft_failure(r, code, "%s", e.msg);
		return s < 0 ? -1 : add_result(r);
	}
	if (nshash_verify(&info, req, netns, &e) < 0) {
		s = soft_failure(r, e.errnum == NSHASH_E_FALLBACK ? NSHASH_CNI_E_FALLBACK : NSHASH_CNI_E_CREATE, "%s",
				 e.msg);
		return s < 0 ? -1 : add_result(r);
	}
	/* What the next plugins and the runtime will open is the path, not
	 * the netns the library made: look again through the path. */
	struct nshash_netns_info seen;
	if (r->ops->inspect(netns, &seen, &e) < 0 || nshash_verify(&seen, req, netns, &e) < 0) {
		s = soft_failure(r, NSHASH_CNI_E_CREATE, "after replacing the netns, %s does not show it: %s", netns,
				 e.msg);
		return s < 0 ? -1 : add_result(r);
	}
	char have[96];
	sizes_text(nshash_info_sizes(&seen), have, sizeof(have));
	logf_(r, "replaced %s by a netns with %s%s", netns, have, from_ann ? " (pod annotations)" : "");
	return add_result(r);
}

static int cmd_check(struct run *r)
{
	struct nshash_sizes req;
	bool from_ann;
	enum nshash_cni_netns_kind kind;
	char detail[600];
	int s = request_and_netns(r, &req, &from_ann, &kind, detail, sizeof(detail));
	if (s != 0)
		return s < 0 ? -1 : 0;
	struct nshash_error e;
	struct nshash_netns_info info;
	if (r->ops->inspect(r->env->netns, &info, &e) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "%s", e.msg);
	if (nshash_verify(&info, req, r->env->netns, &e) < 0) {
		/* Not "allocation failed?": at CHECK a shared table may as well
		 * mean the netns was never sized. */
		char want[96], have[96];
		sizes_text(nshash_sizes_effective(req), want, sizeof(want));
		snprintf(have, sizeof(have), "tcp %s%ld, udp %s%ld", info.tcp_entries < 0 ? "shared " : "",
			 labs(info.tcp_entries), info.udp_entries < 0 ? "shared " : "", labs(info.udp_entries));
		return soft_failure(r, NSHASH_CNI_E_MISMATCH, "CHECK %s: requested %s, the netns has %s", r->env->netns,
				    want, have) < 0
			   ? -1
			   : 0;
	}
	return 0;
}

static int cmd_status(struct run *r)
{
	/* Ready means: the knobs for whatever this network may ask (defaults
	 * or caps) exist and the plugin holds the capabilities it needs. */
	struct nshash_sizes may = {r->cfg.max.tcp ? r->cfg.max.tcp : r->cfg.sizes.tcp,
				   r->cfg.max.udp ? r->cfg.max.udp : r->cfg.sizes.udp};
	struct nshash_probe probe;
	struct nshash_error e;
	if (r->ops->probe(&probe, &e) < 0 || nshash_probe_require(&probe, may, &e) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_NOT_READY, NULL, "nshash cannot size netns here: %s",
					    e.msg);
	return 0;
}

static int cmd_version(struct run *r, const char *input, size_t len)
{
	/* Any cniVersion may ask which versions we speak; the answer is in
	 * the newest format. */
	(void)input;
	(void)len;
	json_object *o = json_object_new_object(), *list = json_object_new_array();
	if (!o || !list)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_IO, NULL, "out of memory");
	for (int i = 0; nshash_cni_versions[i]; i++)
		json_object_array_add(list, json_object_new_string(nshash_cni_versions[i]));
	json_object_object_add(o, "cniVersion", json_object_new_string(CNI_LATEST));
	json_object_object_add(o, "supportedVersions", list);
	r->out->stdout_text = strdup(json_object_to_json_string_ext(o, JSON_OUT_FLAGS));
	json_object_put(o);
	return 0;
}

static int version_allows(struct run *r)
{
	const char *need = NULL;
	if (r->command == NSHASH_CNI_CHECK)
		need = "0.4.0";
	else if (r->command == NSHASH_CNI_STATUS || r->command == NSHASH_CNI_GC)
		need = "1.1.0";
	if (need && nshash_cni_version_cmp(r->cfg.cni_version, need) < 0)
		return nshash_cni_error_set(&r->err, NSHASH_CNI_E_VERSION, NULL,
					    "%s needs cniVersion %s or later; the network config says %s",
					    r->env->command, need, r->cfg.cni_version);
	return 0;
}

/* For an error found before the config was read (env): answer in the
 * config's cniVersion when stdin has a supported one. */
static void peek_version(const char *input, size_t len, char *out, size_t outlen)
{
	json_object *root, *v;
	struct nshash_cni_error ignored;
	if (decode(input, len, &root, &ignored) < 0)
		return;
	if (json_object_object_get_ex(root, "cniVersion", &v) && json_object_is_type(v, json_type_string) &&
	    nshash_cni_version_supported(json_object_get_string(v)))
		snprintf(out, outlen, "%s", json_object_get_string(v));
	json_object_put(root);
}

void nshash_cni_run(const struct nshash_cni_env *env, const char *input, size_t len, const struct nshash_cni_ops *ops,
		    struct nshash_cni_output *out)
{
	memset(out, 0, sizeof(*out));
	struct run r = {.env = env, .ops = ops ? ops : &nshash_cni_system_ops, .out = out};
	int rc = nshash_cni_env_check(env, &r.command, &r.err);
	if (rc == 0 && r.command == NSHASH_CNI_VERSION) {
		rc = cmd_version(&r, input, len);
		goto done;
	}
	if (rc == 0)
		rc = nshash_cni_config_parse(input, len, &r.cfg, &r.err);
	if (rc == 0)
		rc = version_allows(&r);
	if (rc == 0) {
		switch (r.command) {
		case NSHASH_CNI_ADD:
			rc = cmd_add(&r);
			break;
		case NSHASH_CNI_CHECK:
			rc = cmd_check(&r);
			break;
		case NSHASH_CNI_STATUS:
			rc = cmd_status(&r);
			break;
		/* DEL: the netns belongs to the runtime, and nshash keeps no
		 * per-attachment state: nothing to release.  GC likewise. */
		case NSHASH_CNI_DEL:
		case NSHASH_CNI_GC:
		case NSHASH_CNI_VERSION:
			break;
		}
	}
done:
	if (rc < 0) {
		out->status = 1;
		free(out->stdout_text);
		if (!r.cfg.cni_version[0])
			peek_version(input, len, r.cfg.cni_version, sizeof(r.cfg.cni_version));
		out->stdout_text = nshash_cni_error_json(r.cfg.cni_version[0] ? r.cfg.cni_version : CNI_LATEST, &r.err);
		logf_(&r, "error %d: %s", r.err.code, r.err.msg);
	}
	nshash_cni_config_free(&r.cfg);
}

void nshash_cni_output_free(struct nshash_cni_output *out)
{
	free(out->stdout_text);
	out->stdout_text = NULL;
}
