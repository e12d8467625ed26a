/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin as the installer uses it: exec'd for VERSION and STATUS, and
 * copied into the node's CNI bin dir. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "k8s.h"

#define PLUGIN_TIMEOUT_MS 10000

/* fd as target in the child about to exec: dup2 leaves the copy without
 * close-on-exec, but does nothing when fd is target already (its flag then
 * cleared here). */
static int onto(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) < 0 ? -1 : 0;
}

int k8s_plugin_run(const char *path, const char *cmd, const char *input, char **out, int *status,
		   struct nshash_error *err)
{
	int in[2], outp[2];
	*out = NULL;
	if (pipe2(in, O_CLOEXEC) < 0)
		return nsh_error_sys(err, errno, "run %s: pipe", path);
	if (pipe2(outp, O_CLOEXEC) < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		return nsh_error_sys(err, e, "run %s: pipe", path);
	}
	char command[64], policy[1100];
	snprintf(command, sizeof(command), "CNI_COMMAND=%s", cmd);
	const char *pol = nsh_policy_env();
	snprintf(policy, sizeof(policy), NSH_POLICY_ENV "=%s", pol ? pol : "");
	char *envp[] = {command, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", pol ? policy : NULL, NULL};
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
		return nsh_error_sys(err, e, "run %s: fork", path);
	}
	if (pid == 0) {
		/* the plugin as the runtime runs it: not the watcher's blocked
		 * SIGTERM/SIGINT (its signalfd) nor its ignored SIGPIPE */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* the plugin gets stdin, stdout and stderr, nothing else of ours */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (onto(in[0], 0) < 0 || onto(outp[1], 1) < 0 || (null >= 0 && onto(null, 2) < 0))
			_exit(127);
		char *argv[] = {(char *)path, NULL};
		execve(path, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	signal(SIGPIPE, SIG_IGN);
	/* a config is a few hundred bytes: the pipe holds it */
	(void)nsh_write_all(in[1], input, strlen(input));
	close(in[1]);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	long deadline = nsh_monotonic_ms() + PLUGIN_TIMEOUT_MS;
	bool timed_out = false;
	int ws;
	if (!buf) {
		close(outp[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		return nshash_error_set(err, ENOMEM, "run %s: out of memory", path);
	}
	for (;;) {
		struct pollfd p = {outp[0], POLLIN, 0};
		long left = deadline - nsh_monotonic_ms();
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			timed_out = true;
			break;
		}
		if (len + 1024 > cap) {
			char *nb = cap < K8S_MAX_FILE ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				break;
			buf = nb, cap *= 2;
		}
		ssize_t n = read(outp[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(outp[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	if (timed_out) {
		free(buf);
		return nshash_error_set(err, ETIMEDOUT, "run %s (CNI_COMMAND=%s): no answer within %d s", path, cmd,
					PLUGIN_TIMEOUT_MS / 1000);
	}
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 127 && !len) {
		free(buf);
		return nshash_error_set(err, ENOEXEC,
					"run %s: it cannot be executed (missing, not executable or not a "
					"binary for this machine)",
					path);
	}
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	*out = buf;
	return 0;
}

int k8s_plugin_versions(const char *path, char *versions, size_t len, struct nshash_error *err)
{
	char *out = NULL;
	int status = -1;
	json_object *root = NULL, *v;
	if (k8s_plugin_run(path, "VERSION", "{\"cniVersion\":\"1.0.0\"}", &out, &status, err) < 0)
		return -err->errnum;
	struct nsh_json_fault f;
	int r = 0;
	if (status != 0 || nsh_json_decode(out, strlen(out), &root, &f) < 0 ||
	    !json_object_object_get_ex(root, "supportedVersions", &v) || !json_object_is_type(v, json_type_array)) {
		r = nshash_error_set(
		    err, EINVAL,
		    "%s does not answer CNI VERSION with supportedVersions (exit status %d): it is not "
		    "the nshash CNI plugin; not installing it",
		    path, status);
		goto out;
	}
	versions[0] = '\0';
	nsh_append(versions, len, " ");
	for (size_t i = 0; i < json_object_array_length(v); i++)
		nsh_append(versions, len, "%s ", json_object_get_string(json_object_array_get_idx(v, i)));
out:
	json_object_put(root);
	free(out);
	return r;
}

int k8s_same_file(const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t xl, yl;
	struct nshash_error e;
	int same = nsh_read_file(a, 64u << 20, &x, &xl, &e) == 0 && nsh_read_file(b, 64u << 20, &y, &yl, &e) == 0 &&
		   xl == yl && memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	return same;
}

int k8s_install_binary(const struct k8s_opts *o, struct nshash_error *err)
{
	char dst[4096];
	snprintf(dst, sizeof(dst), "%s/nshash", o->bin_dir);
	if (k8s_same_file(o->plugin, dst))
		return 0;
	char versions[256];
	if (k8s_plugin_versions(o->plugin, versions, sizeof(versions), err) < 0)
		return -err->errnum;
	struct stat st;
	if (stat(o->bin_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return nshash_error_set(err, ENOENT,
					"%s: no such directory (mount the node's CNI bin dir there, or name it with "
					"--cni-bin-dir)",
					o->bin_dir);
	char *bytes;
	size_t len;
	if (nsh_read_file(o->plugin, 64u << 20, &bytes, &len, err) < 0)
		return -err->errnum;
	int r = k8s_write_atomic(dst, bytes, len, 0755, (uid_t)-1, (gid_t)-1, err);
	free(bytes);
	if (r < 0)
		return nshash_error_prefix(err, "install the plugin");
	return 1;
}

int k8s_validate(const struct k8s_ctx *c, json_object *list, char *note, size_t nlen, struct nshash_error *err)
{
	json_object *plugins, *name, *ver;
	note[0] = '\0';
	if (!json_object_object_get_ex(list, "cniVersion", &ver) || !json_object_is_type(ver, json_type_string))
		return nshash_error_set(err, EINVAL, "it has no \"cniVersion\" string");
	char want[80];
	snprintf(want, sizeof(want), " %.64s ", json_object_get_string(ver));
	if (!strstr(c->versions, want))
		return nshash_error_set(err, EINVAL, "its cniVersion %.64s is not one the plugin speaks (%s)",
					json_object_get_string(ver), c->versions + 1);
	if (!json_object_object_get_ex(list, "name", &name) || !json_object_is_type(name, json_type_string))
		return nshash_error_set(err, EINVAL, "it has no \"name\" string");
	json_object_object_get_ex(list, "plugins", &plugins);
	/* as libcni hands it to the plugin: the list's name, a version, the
	 * capabilities replaced by runtimeConfig (none here) */
	json_object *conf = NULL;
	if (json_object_deep_copy(json_object_array_get_idx(plugins, 0), &conf, NULL) < 0 || !conf)
		return nshash_error_set(err, ENOMEM, "out of memory");
	json_object_object_del(conf, "capabilities");
	json_object_object_add(conf, "cniVersion", json_object_new_string("1.1.0")); /* STATUS needs 1.1.0 */
	json_object_object_add(conf, "name", json_object_get(name));
	char path[4096], *out = NULL;
	int status = -1;
	snprintf(path, sizeof(path), "%s/nshash", c->o->bin_dir);
	int r = k8s_plugin_run(path, "STATUS", json_object_to_json_string_ext(conf, JSON_C_TO_STRING_PLAIN), &out,
			       &status, err);
	json_object_put(conf);
	if (r < 0 || !out)
		return r < 0 ? r : nshash_error_set(err, EIO, "run %s: no output", path);
	if (status == 0) {
		free(out);
		return 0;
	}
	json_object *res = NULL, *code = NULL, *msg = NULL;
	struct nsh_json_fault f;
	if (nsh_json_decode(out, strlen(out), &res, &f) == 0 && res)
		json_object_object_get_ex(res, "code", &code), json_object_object_get_ex(res, "msg", &msg);
	int codev = code ? json_object_get_int(code) : -1;
	const char *why = msg ? json_object_get_string(msg) : "no error JSON on stdout";
	if (codev == 50) {
		snprintf(note, nlen,
			 "the plugin's STATUS here: %.900s (the config is valid; the node's runtime "
			 "runs the plugin with the capabilities it needs)",
			 why);
		r = 0;
	} else {
		r = nshash_error_set(err, EINVAL, "the plugin says (STATUS, exit %d, code %d): %.900s", status, codev,
				     why);
	}
	json_object_put(res);
	free(out);
	return r;
}
