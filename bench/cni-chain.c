/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cni-chain: run one CNI command of a conflist's plugins the way libcni
 * (containerd, CRI-O, podman) does, and time it -- so that a benchmark of a
 * chain measures the plugins, not a shell's pipes and subshells around each
 * one.  For each plugin in turn: its config with the conflist's name and
 * cniVersion and, from the second on, the previous plugin's result as
 * prevResult; exec'd from CNI_PATH with the caller's environment plus
 * CNI_COMMAND/CONTAINERID/NETNS/IFNAME/PATH, the config on a pipe to its
 * stdin, its stdout read to the end, then waited for.
 *
 *   cni-chain COMMAND NETNS CONTAINERID CONFLIST_FILE
 *
 * Prints the last result on stdout and "chain_us N" (the time from the
 * first fork to the last wait) on stderr; exit 1 when a plugin fails. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Run `path` with `input` on stdin; its stdout, malloc'd, in *out. */
static int run_plugin(const char *path, char **env, const char *input, char **out)
{
	int in[2], o[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, o[1], STDOUT_FILENO);
	char *argv[] = {(char *)path, NULL};
	pid_t pid;
	int r = posix_spawn(&pid, path, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(o[1]);
	if (r != 0) {
		close(in[1]);
		close(o[0]);
		errno = r;
		return -1;
	}
	size_t len = strlen(input);
	for (size_t done = 0; done < len;) {
		ssize_t n = write(in[1], input + done, len - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(in[1]);
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap);
	ssize_t n;
	while (buf && (n = read(o[0], buf + used, cap - used - 1)) > 0) {
		used += (size_t)n;
		if (used + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	close(o[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!buf)
		return -1;
	buf[used] = '\0';
	*out = buf;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: cni-chain COMMAND NETNS CONTAINERID CONFLIST_FILE\n");
		return 2;
	}
	json_object *list = json_object_from_file(argv[4]), *plugins;
	if (!list || !json_object_object_get_ex(list, "plugins", &plugins)) {
		fprintf(stderr, "cni-chain: %s: not a conflist\n", argv[4]);
		return 2;
	}
	const char *cni_path = getenv("CNI_PATH") ? getenv("CNI_PATH") : "/opt/cni/bin";
	/* the caller's environment plus the CNI variables, as libcni passes them */
	size_t n_env = 0;
	while (environ[n_env])
		n_env++;
	char **env = calloc(n_env + 6, sizeof(*env));
	size_t k = 0;
	for (size_t i = 0; i < n_env; i++)
		if (strncmp(environ[i], "CNI_", 4) != 0)
			env[k++] = environ[i];
	char vars[5][PATH_MAX + 32];
	snprintf(vars[0], sizeof(vars[0]), "CNI_COMMAND=%s", argv[1]);
	snprintf(vars[1], sizeof(vars[1]), "CNI_CONTAINERID=%s", argv[3]);
	snprintf(vars[2], sizeof(vars[2]), "CNI_NETNS=%s", argv[2]);
	snprintf(vars[3], sizeof(vars[3]), "CNI_IFNAME=eth0");
	snprintf(vars[4], sizeof(vars[4]), "CNI_PATH=%s", cni_path);
	for (int i = 0; i < 5; i++)
		env[k++] = vars[i];
	env[k] = NULL;

	json_object *name = NULL, *version = NULL;
	json_object_object_get_ex(list, "name", &name);
	json_object_object_get_ex(list, "cniVersion", &version);
	size_t count = json_object_array_length(plugins);
	bool del = strcmp(argv[1], "DEL") == 0;
	char *prev = NULL;
	long long t0 = now_us();
	for (size_t j = 0; j < count; j++) {
		/* DEL runs the list backwards, as libcni does */
		json_object *conf = json_object_array_get_idx(plugins, del ? count - 1 - j : j), *type;
		if (!json_object_object_get_ex(conf, "type", &type))
			return 2;
		json_object_object_add(conf, "name", json_object_get(name));
		json_object_object_add(conf, "cniVersion", json_object_get(version));
		if (prev && !del) {
			json_object *p = json_tokener_parse(prev);
			if (!p) {
				fprintf(stderr, "cni-chain: plugin %zu: result is not JSON: %s\n", j, prev);
				return 1;
			}
			json_object_object_add(conf, "prevResult", p);
		}
		char path[PATH_MAX] = "";
		for (const char *d = cni_path; *d;) { /* the first directory of CNI_PATH that has it */
			size_t dl = strcspn(d, ":");
			snprintf(path, sizeof(path), "%.*s/%s", (int)dl, d, json_object_get_string(type));
			if (access(path, X_OK) == 0)
				break;
			path[0] = '\0';
			d += dl + (d[dl] == ':');
		}
		if (!path[0]) {
			fprintf(stderr, "cni-chain: plugin \"%s\" not in CNI_PATH %s\n", json_object_get_string(type),
				cni_path);
			return 1;
		}
		char *out = NULL;
		int r = run_plugin(path, env, json_object_to_json_string_ext(conf, JSON_C_TO_STRING_PLAIN), &out);
		if (r != 0) {
			fprintf(stderr, "cni-chain: %s %s failed: %s\n", argv[1], path, out ? out : strerror(errno));
			return 1;
		}
		free(prev);
		prev = out;
	}
	long long t1 = now_us();
	if (prev)
		fputs(prev, stdout);
	fprintf(stderr, "chain_us %lld\n", t1 - t0);
	return 0;
}
