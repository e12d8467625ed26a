/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runc's log format (--log FILE --log-format json|text), so containerd
 * shows the wrapper's errors in "OCI runtime create failed". */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

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
		/* logfmt, as runc writes it: one line, the value quoted with '"'
		 * and '\\' escaped (control characters are \xNN already) */
		char e[2048], q[4096];
		size_t o = 0;
		nshash_escape(msg, e, sizeof(e));
		for (const char *p = e; *p && o + 2 < sizeof(q); p++) {
			if (*p == '"' || *p == '\\')
				q[o++] = '\\';
			q[o++] = *p;
		}
		q[o] = '\0';
		dprintf(fd, "time=\"%s\" level=%s msg=\"%s\"\n", ts, level, q);
	}
	close(fd);
}

void nsh_runtime_log_error(const char *log_path, const char *log_format, const char *msg)
{
	runtime_log(log_path, log_format, "error", msg);
}

/* The wrapper's runtime log, where the logger's sink writes. */
static struct {
	const char *path, *format;
} wrapper_log;

static void wrapper_log_sink(void *ctx, const char *level, const char *line)
{
	(void)ctx;
	runtime_log(wrapper_log.path, wrapper_log.format, level, line);
}

void nsh_log_wrapper_mode(enum nsh_log_level max, const char *log_path, const char *log_format)
{
	wrapper_log.path = log_path;
	wrapper_log.format = log_format;
	nsh_log_redirect(max, log_path ? wrapper_log_sink : NULL, NULL);
}
