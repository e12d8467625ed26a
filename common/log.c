/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The front-ends' logger: one line per action on stderr, and to the
 * policy's logFile, syslog (warnings and errors always) and an extra sink
 * (the wrapper's runtime log). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static struct {
	char program[320]; /* the CNI plugin puts command and container id here */
	char ident[64];	   /* syslog identifier: program up to '[' ("nshash-hook") */
	char tag[64];	   /* what was in brackets ("precreate"), leads each syslog line */
	char log_file[1024];
	bool syslog;
	enum nsh_log_level stderr_max;
	nsh_log_sink sink;
	void *sink_ctx;
} log_cfg = {.program = "nshash", .stderr_max = NSH_LOG_INFO};

void nsh_log_redirect(enum nsh_log_level stderr_max, nsh_log_sink sink, void *ctx)
{
	log_cfg.stderr_max = stderr_max;
	log_cfg.sink = sink;
	log_cfg.sink_ctx = ctx;
}

void nsh_log_setup(const char *program, const struct nsh_policy *policy)
{
	/* the CNI plugin's carries the container id: escaped like the rest */
	nshash_escape(program ? program : "nshash", log_cfg.program, sizeof(log_cfg.program));
	/* "nshash-hook[precreate]": identifier nshash-hook (journalctl -t
	 * nshash-hook), lines "precreate: ..." */
	size_t n = strcspn(log_cfg.program, "[");
	snprintf(log_cfg.ident, sizeof(log_cfg.ident), "%.*s", (int)n, log_cfg.program);
	snprintf(log_cfg.tag, sizeof(log_cfg.tag), "%s", log_cfg.program[n] ? log_cfg.program + n + 1 : "");
	log_cfg.tag[strcspn(log_cfg.tag, "]")] = '\0';
	log_cfg.log_file[0] = '\0';
	if (log_cfg.syslog)
		closelog();
	log_cfg.syslog = false;
	if (policy) {
		snprintf(log_cfg.log_file, sizeof(log_cfg.log_file), "%s", policy->log_file);
		log_cfg.syslog = policy->syslog;
		if (log_cfg.syslog)
			openlog(log_cfg.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	}
}

/* The log file for one line: a regular file only, opened without waiting
 * (a FIFO with no reader fails at once, one with a reader is refused after
 * the open: never a hang) and without following a symbolic link.  What is
 * refused is said once, as a warning to the other sinks, and the file is
 * not tried again in this process.  -1: no log file now. */
static int log_file_open(void)
{
	if (!log_cfg.log_file[0])
		return -1;
	struct stat st;
	const char *why = NULL;
	int fd = -1, e = 0;
	if (lstat(log_cfg.log_file, &st) == 0 && !S_ISREG(st.st_mode))
		why = nshash_file_kind(st.st_mode);
	else if ((fd = open(log_cfg.log_file,
			    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0640)) < 0)
		e = errno;
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		why = nshash_file_kind(st.st_mode);
	if (!why && !e)
		return fd;
	if (fd >= 0)
		close(fd);
	char file[sizeof(log_cfg.log_file)];
	snprintf(file, sizeof(file), "%s", log_cfg.log_file);
	log_cfg.log_file[0] = '\0'; /* once; and the warning below does not come back here */
	if (why)
		nsh_log(NSH_LOG_WARN, NULL,
			"logFile %s: not a regular file (%s): nothing is logged there; name a regular file (or "
			"a path that does not exist yet) in the policy",
			file, why);
	else
		nsh_log(NSH_LOG_WARN, NULL, "logFile %s: cannot open: %s: nothing is logged there", file,
			e == ELOOP ? "a symbolic link" : strerror(e));
	return -1;
}

void nsh_log(enum nsh_log_level level, const char *id, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nsh_vlog(level, id, fmt, ap);
	va_end(ap);
}

void nsh_vlog(enum nsh_log_level level, const char *id, const char *fmt, va_list ap)
{
	static const char *const names[] = {"error", "warning", "info"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO};
	char raw[2048], msg[2048], idq[512];

	/* hostnames, ids, keys and values come from containers: no control
	 * character reaches a log (a newline would forge a line) */
	vsnprintf(raw, sizeof(raw), fmt, ap);
	nshash_escape(raw, msg, sizeof(msg));
	if (id) {
		nshash_escape(id, idq, sizeof(idq));
		id = idq;
	}
	if (level < NSH_LOG_ERROR)
		level = NSH_LOG_ERROR;
	if (level > NSH_LOG_INFO)
		level = NSH_LOG_INFO;
	/* stderr: podman and runc keep it; stdout is protocol */
	if (level <= log_cfg.stderr_max)
		fprintf(stderr, "%s: %s: %s%s%s\n", log_cfg.program, names[level], id ? id : "", id ? ": " : "", msg);
	if (log_cfg.sink) {
		char line[3072];
		snprintf(line, sizeof(line), "%s: %s%s%s", log_cfg.program, id ? id : "", id ? ": " : "", msg);
		log_cfg.sink(log_cfg.sink_ctx, names[level], line);
	}
	int fd = log_file_open();
	if (fd >= 0) {
		char line[3072], ts[64];
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
		int n = snprintf(line, sizeof(line), "%s %s[%d] %s: %s%s%s\n", ts, log_cfg.program, (int)getpid(),
				 names[level], id ? id : "", id ? ": " : "", msg);
		if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
			/* logging never fails the caller */
		}
		close(fd);
	}
	/* on by default: a warning (onFailure warn: the container runs on the
	 * shared tables) must reach a log people read even without a log file */
	if (log_cfg.syslog)
		syslog(prio[level], "%s%s%s%s%s", log_cfg.tag, log_cfg.tag[0] ? ": " : "", id ? id : "", id ? ": " : "",
		       msg);
}
