/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The front-ends' logger: one line per action on stderr, and to the
 * policy's logFile, syslog and an extra sink (the wrapper's runtime log). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static struct {
	char program[320]; /* the CNI plugin puts command and container id here */
	char log_file[1024];
	bool syslog;
	enum nshash_log_level stderr_max;
	nsh_log_sink sink;
	void *sink_ctx;
} log_cfg = {.program = "nshash", .stderr_max = NSHASH_LOG_INFO};

void nsh_log_redirect(enum nshash_log_level stderr_max, nsh_log_sink sink, void *ctx)
{
	log_cfg.stderr_max = stderr_max;
	log_cfg.sink = sink;
	log_cfg.sink_ctx = ctx;
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
	va_list ap;

	va_start(ap, fmt);
	nshash_vlog(level, id, fmt, ap);
	va_end(ap);
}

void nshash_vlog(enum nshash_log_level level, const char *id, const char *fmt, va_list ap)
{
	static const char *const names[] = {"error", "warning", "info"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO};
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level < NSHASH_LOG_ERROR)
		level = NSHASH_LOG_ERROR;
	if (level > NSHASH_LOG_INFO)
		level = NSHASH_LOG_INFO;
	/* stderr: podman and runc keep it; stdout is protocol */
	if (level <= log_cfg.stderr_max)
		fprintf(stderr, "%s: %s: %s%s%s\n", log_cfg.program, names[level], id ? id : "", id ? ": " : "", msg);
	if (log_cfg.sink) {
		char line[2400];
		snprintf(line, sizeof(line), "%s: %s%s%s", log_cfg.program, id ? id : "", id ? ": " : "", msg);
		log_cfg.sink(log_cfg.sink_ctx, names[level], line);
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
