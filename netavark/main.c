/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash's netavark: podman networks that carry sizes (docs/networks.md).
 * podman runs the first `netavark` of helper_binaries_dir; this one reads
 * the network definitions on stdin at `setup NETNS` (a command line it
 * reads as netavark does; with --file, that file), and when a network of
 * the container has io.nshash.tcp / io.nshash.udp labels, NETNS (a pin
 * under /run/netns) gets those sizes: a fresh one (no link but lo, no
 * process) is replaced by a sized one (nshash_netns_replace, as the CNI
 * plugin's ADD) unless it has them already; one in use keeps its tables:
 * with a link and other tables the setup fails, with only a process (a
 * reload) it goes on.  Labels it does not apply without failing (a
 * command line it does not read, more input than it reads, a reload) are
 * said on stderr.  Then it execs the real netavark with the same argv,
 * the same stdin bytes (streamed when more than it reads), stdout and
 * exit status. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netavark.h"

#define NSH_NETAVARK_MAX_INPUT (4u << 20) /* the network definitions on stdin */
/* podman's own helper directories, after nshash's in helper_binaries_dir */
static const char *const default_dirs = "/usr/local/libexec/podman:/usr/local/lib/podman:/usr/libexec/podman:"
					"/usr/lib/podman";

/* netavark's way of failing: {"error": "..."} on stdout, exit 1. */
static int netavark_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int netavark_error(const char *fmt, ...)
{
	char msg[4200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(o);
	return 1;
}

/* The real netavark: NSHASH_NETAVARK (a path), else the first `netavark`
 * of NSHASH_NETAVARK_DIRS (colon-separated; default podman's own helper
 * directories) that is not this very binary. */
static int find_real(char *out, size_t len)
{
	const char *env = getenv("NSHASH_NETAVARK");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	struct stat self;
	if (stat("/proc/self/exe", &self) < 0)
		memset(&self, 0, sizeof(self));
	const char *dirs = getenv("NSHASH_NETAVARK_DIRS");
	char list[4096];
	snprintf(list, sizeof(list), "%s", dirs && *dirs ? dirs : default_dirs);
	char *save = NULL;
	for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		struct stat st;
		snprintf(out, len, "%s/netavark", d);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    !(st.st_dev == self.st_dev && st.st_ino == self.st_ino) && access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

/* "own table of 4096" / "shared" for one protocol of `info`. */
static const char *tables_of(long entries, char *buf, size_t len)
{
	if (entries > 0)
		snprintf(buf, len, "own table of %ld", entries);
	else
		snprintf(buf, len, "shared");
	return buf;
}

/* Give the netns pinned at `netns` the labels' `sizes`.  A fresh one (no
 * link but lo, no process: podman's pin before the container) is replaced
 * by one of those sizes unless it has them already, whatever it has (the
 * shared tables, or own ones of other sizes: the host's
 * tcp_child_ehash_entries/udp_child_hash_entries); one in use keeps its
 * tables: with a link (`podman network connect` to a running container)
 * it must have the labels' sizes already, else the setup fails; with a
 * process and no link but lo (`podman network reload`: its links were
 * torn down, the container runs on), what was chosen when it was made
 * (its own io.nshash.* annotations win over labels) stays, said on stderr
 * (*loud).  0 (done or nothing to do, *note says which), or 1 (message
 * written). */
static int size_netns(const char *netns, const struct nsh_policy *pol, struct nshash_sizes sizes, const char *net,
		      const char *from, char *note, size_t nlen, bool *loud, char *msg, size_t mlen)
{
	*loud = false;
	struct nshash_error e;
	enum nshash_path_kind kind;
	char detail[600];
	if (!nsh_netavark_under_run_netns(netns)) {
		snprintf(msg, mlen,
			 "network %s asks for own hash tables, but the netns %s is not under " NSHASH_NETNS_RUN_DIR
			 "/ (where rootful podman pins it): nshash sizes no other path",
			 net, netns);
		return 1;
	}
	if (nshash_path_classify(netns, &kind, detail, sizeof(detail), &e) < 0) {
		snprintf(msg, mlen, "network %s: netns %s: %s", net, netns, e.msg);
		return 1;
	}
	if (kind != NSHASH_PATH_PIN) {
		snprintf(msg, mlen, "network %s asks for own hash tables, but %s is not a netns pin (%s)", net, netns,
			 detail);
		return 1;
	}
	struct nshash_netns_info info;
	if (nshash_inspect_path(netns, &info, &e) < 0) {
		snprintf(msg, mlen, "network %s: %s", net, e.msg);
		return 1;
	}
	bool has = nshash_verify(&info, sizes, netns, &e) == 0;
	struct nshash_occupancy occ;
	if (nshash_netns_occupancy_engine(netns, &occ, &e) < 0) {
		snprintf(msg, mlen, "network %s: %s", net, e.msg);
		return 1;
	}
	char user[300];
	snprintf(user, sizeof(user), "%s%s", occ.links ? occ.link_names : "process ", occ.links ? "" : occ.comm);
	if (has) {
		snprintf(note, nlen, "%s%s%s%s has the sizes of network %s already: left alone", netns,
			 occ.links || occ.pid ? " (in use: " : "", occ.links || occ.pid ? user : "",
			 occ.links || occ.pid ? ")" : "", net);
		return 0;
	}
	if (!occ.links && occ.pid) {
		/* a running container's, its links torn down (reload): failing
		 * would leave it without this network */
		char t[64], u[64];
		*loud = true;
		snprintf(note, nlen,
			 "network %s asks for tcp=%u udp=%u (%s), but the netns %s is in use (%s, no "
			 "link but lo: podman network reload) and has tcp %s, udp %s: the tables it was made with "
			 "(a container's own io.nshash.* annotations win over labels) cannot change: left as they are",
			 net, sizes.tcp, sizes.udp, from, netns, user, tables_of(info.tcp_entries, t, sizeof(t)),
			 tables_of(info.udp_entries, u, sizeof(u)));
		return 0;
	}
	if (occ.links) {
		/* a container's: its tables were chosen when it was made (by
		 * its first network's labels, its own io.nshash.* annotations,
		 * or the host's child knobs) and cannot change now */
		char t[64], u[64];
		snprintf(msg, mlen,
			 "network %s asks for tcp=%u udp=%u (%s), but the netns %s is in use (%s) "
			 "and has tcp %s, udp %s: the tables of a netns in use cannot change; attach the container "
			 "only to networks whose labels match its tables (or have no io.nshash.* labels), or "
			 "recreate it with network %s",
			 net, sizes.tcp, sizes.udp, from, netns, user, tables_of(info.tcp_entries, t, sizeof(t)),
			 tables_of(info.udp_entries, u, sizeof(u)), net);
		return 1;
	}
	/* made (verified), recorded in the ledger and mounted at the path in
	 * place of podman's; a failure before it is mounted there cancels the
	 * ledger's record (and the budget's reservation): nothing is left */
	char t[64], u[64];
	snprintf(detail, sizeof(detail), "tcp %s, udp %s", tables_of(info.tcp_entries, t, sizeof(t)),
		 tables_of(info.udp_entries, u, sizeof(u)));
	struct nshash_create_opts opts = nsh_policy_create_opts(pol, sizes);
	struct nshash_netns_info made;
	if (nshash_netns_replace(&opts, netns, &made, &e) < 0) {
		snprintf(msg, mlen, "network %s: cannot size netns %s: %s", net, netns, e.msg);
		return 1;
	}
	/* what netavark will open is the path: look through it */
	if (nshash_inspect_path(netns, &info, &e) < 0 || nshash_verify(&info, sizes, netns, &e) < 0) {
		snprintf(msg, mlen, "network %s: after replacing netns %s: %s", net, netns, e.msg);
		return 1;
	}
	snprintf(note, nlen, "replaced %s (%s) by a netns with tcp %s, udp %s (network %s)", netns, detail,
		 tables_of(info.tcp_entries, t, sizeof(t)), tables_of(info.udp_entries, u, sizeof(u)), net);
	return 0;
}

/* stdin for the real netavark when it was more than nshash reads: a pipe
 * at 0, fed by a detached process with the bytes read, then the rest of
 * the original stdin as it comes (never held whole). */
static int stream_stdin(const char *buf, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* the feeder's parent exits at once: netavark, which this
		 * process becomes, never has a child it did not make */
		pid_t g = fork();
		if (g < 0)
			_exit(1);
		if (g > 0)
			_exit(0);
		close(p[0]);
		/* nothing of netavark's output held open by the feeder */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		signal(SIGPIPE, SIG_DFL);
		if (nsh_write_all(p[1], buf, len) < 0)
			_exit(1);
		char chunk[65536];
		ssize_t n;
		while ((n = read(STDIN_FILENO, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
			if (n > 0 && nsh_write_all(p[1], chunk, (size_t)n) < 0)
				_exit(1);
		_exit(n < 0);
	}
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	close(p[1]);
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) { /* no feeder: netavark would read nothing */
		close(p[0]);
		errno = EAGAIN;
		return -1;
	}
	if (dup2(p[0], STDIN_FILENO) < 0)
		return -1;
	close(p[0]);
	return 0;
}

/* stdin for the real netavark: the exact bytes read, in a memfd at 0. */
static int restore_stdin(const char *buf, size_t len)
{
	int fd = memfd_create("nshash-netavark-stdin", 0);
	if (fd < 0 || nsh_write_all(fd, buf, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	if (fd != STDIN_FILENO && (dup2(fd, STDIN_FILENO) < 0 || close(fd) < 0))
		return -1;
	return 0;
}

/* The network definitions on `fd`: at most NSH_NETAVARK_MAX_INPUT + 1
 * bytes (more is netavark's alone) into *buf (malloc'd), *len.  0 or an
 * errno. */
static int read_input(int fd, char **buf, size_t *len)
{
	char *input = malloc(NSH_NETAVARK_MAX_INPUT + 1);
	*buf = input;
	*len = 0;
	if (!input)
		return ENOMEM;
	while (*len <= NSH_NETAVARK_MAX_INPUT) {
		ssize_t n = read(fd, input + *len, NSH_NETAVARK_MAX_INPUT + 1 - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

/* `setup --file FILE`: the definitions in FILE (a regular file, opened
 * without blocking: a FIFO would hang the start), *buf as read_input's.
 * 0, or a reason in `why`. */
static int read_file_input(const char *path, char **buf, size_t *len, char *why, size_t wlen)
{
	*buf = NULL;
	why[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	int r = fd < 0 || fstat(fd, &st) < 0 ? errno : 0;
	if (!r && !S_ISREG(st.st_mode))
		snprintf(why, wlen, "not a regular file");
	else if (!r && (r = read_input(fd, buf, len)) == 0 && *len > NSH_NETAVARK_MAX_INPUT)
		snprintf(why, wlen, "larger than %u bytes", NSH_NETAVARK_MAX_INPUT);
	if (r)
		snprintf(why, wlen, "%s", strerror(r));
	if (fd >= 0)
		close(fd);
	if (why[0]) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return 0;
}

/* Is `word` one of argv's words? */
static bool has_word(int argc, char **argv, const char *word)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], word))
			return true;
	return false;
}

/* argv[1..] quoted, cut to fit, for a message. */
static void shown_argv(int argc, char **argv, char *out, size_t len)
{
	size_t at = 0;
	out[0] = '\0';
	for (int i = 1; i < argc && at + 1 < len; i++) {
		char q[200];
		nsh_netavark_quote(argv[i], q, sizeof(q));
		int n = snprintf(out + at, len - at, "%s%s", i > 1 ? " " : "", q);
		if (n < 0)
			break;
		at += (size_t)n;
	}
}

/* What the networks' labels in `input` ask for at a `setup`: on a command
 * line nshash reads (cl->understood), the netns sized; on one it does not,
 * nothing sized and, when the labels ask for sizes, said on stderr.  0, or
 * 1 (the setup fails: msg written). */
static int apply_labels(const char *input, size_t len, const struct nsh_netavark_cmdline *cl, int argc, char **argv,
			char *msg, size_t mlen)
{
	json_object *root = NULL;
	struct nsh_json_fault fault;
	if (nsh_json_decode(input, len, &root, &fault) < 0)
		return 0; /* malformed input: netavark's to refuse, in its own words */
	char note[900] = "", first[160] = "";
	struct nshash_sizes sizes = {0, 0};
	bool found = false;
	char from[120];
	/* the labels alone (no defaults, no caps): what they ask for themselves */
	int bad = nsh_netavark_network_sizes(root, &(struct nsh_policy){.max = {UINT_MAX, UINT_MAX}}, &sizes, &found,
					     first, sizeof(first), from, sizeof(from), msg, mlen);
	struct nshash_sizes labelled = sizes;
	if (!cl->understood) {
		if (!bad && found && (sizes.tcp || sizes.udp)) {
			char shown[700];
			shown_argv(argc, argv, shown, sizeof(shown));
			fprintf(stderr,
				"nshash: network %s asks for tcp=%u udp=%u (io.nshash.* labels), but nshash does not "
				"read this command line as netavark's own (%s): the netns is not sized, the command "
				"goes to netavark unchanged\n",
				first, sizes.tcp, sizes.udp, shown);
		}
		msg[0] = '\0';
		json_object_put(root);
		return 0;
	}
	if (bad || !found) {
		json_object_put(root);
		return bad;
	}
	struct nsh_policy pol;
	struct nshash_error e;
	if (nsh_policy_load(nsh_policy_env(), &pol, &e) < 0) {
		snprintf(msg, mlen, "%s", e.msg);
		json_object_put(root);
		return 1;
	}
	/* each network's labels, a protocol they leave from the node's defaults */
	bad =
	    nsh_netavark_network_sizes(root, &pol, &sizes, &found, first, sizeof(first), from, sizeof(from), msg, mlen);
	json_object_put(root);
	bool want = !bad && (sizes.tcp || sizes.udp), loud = false;
	/* rootless: refused only for what the labels themselves ask */
	if (want && cl->rootless && strcmp(cl->rootless, "false") && (labelled.tcp || labelled.udp))
		snprintf(msg, mlen,
			 "network %s asks for own hash tables (io.nshash.* labels): only rootful podman can size a "
			 "netns this way; use a network without these labels",
			 first);
	else if (want && !(cl->rootless && strcmp(cl->rootless, "false")) &&
		 size_netns(cl->netns, &pol, sizes, first, from, note, sizeof(note), &loud, msg, mlen) == 0 &&
		 note[0] && (loud || getenv("NSHASH_NETAVARK_VERBOSE")))
		fprintf(stderr, "nshash: %s\n", note); /* podman shows netavark's stderr */
	return msg[0] != '\0';
}

int main(int argc, char **argv)
{
	char real[PATH_MAX];
	/* What we exec is told it came from here: a "real" netavark that is
	 * nshash's wrapper again (a second copy in the helper dirs, or
	 * NSHASH_NETAVARK naming it) would exec it back forever. */
	if (getenv("NSHASH_NETAVARK_PASSED"))
		return netavark_error(
		    "nshash: the netavark nshash's netavark ran is nshash's netavark again (%s): point "
		    "NSHASH_NETAVARK or NSHASH_NETAVARK_DIRS at podman's own netavark",
		    getenv("NSHASH_NETAVARK_PASSED"));
	if (find_real(real, sizeof(real)) < 0)
		return netavark_error(
		    "nshash: no real netavark found in %s: set NSHASH_NETAVARK_DIRS or install podman's "
		    "netavark",
		    getenv("NSHASH_NETAVARK_DIRS") ? getenv("NSHASH_NETAVARK_DIRS") : default_dirs);
	struct nsh_netavark_cmdline cl;
	nsh_netavark_cmdline_parse(argc, argv, &cl);
	bool setup = cl.understood && !strcmp(cl.cmd, "setup");
	char msg[4096] = "";
	/* teardown, version, dhcp-proxy: netavark's alone */
	if (setup && cl.file) {
		/* the definitions are in a file: read there, stdin untouched */
		char *input, why[300] = "", shown[200];
		size_t len;
		if (read_file_input(cl.file, &input, &len, why, sizeof(why)) < 0) {
			nsh_netavark_quote(cl.file, shown, sizeof(shown));
			fprintf(stderr,
				"nshash: --file %s: %s: not read for io.nshash.* labels, passed to netavark "
				"unchanged\n",
				shown, why);
		} else {
			int bad = apply_labels(input, len, &cl, argc, argv, msg, sizeof(msg));
			free(input);
			if (bad)
				return netavark_error("nshash: %s", msg);
		}
	} else if (setup || (!cl.understood && has_word(argc, argv, "setup"))) {
		/* a setup, or what may be one on a command line nshash does not
		 * read: stdin is read for labels, then handed on exact */
		char *input;
		size_t len;
		int r = read_input(STDIN_FILENO, &input, &len);
		if (r)
			return netavark_error("nshash: read the network definitions on stdin: %s", strerror(r));
		if (len > NSH_NETAVARK_MAX_INPUT) {
			/* too large to read for labels: not sized, passed on */
			fprintf(stderr,
				"nshash: the network definitions on stdin are larger than %u bytes: not read for "
				"io.nshash.* labels, passed to netavark unchanged\n",
				NSH_NETAVARK_MAX_INPUT);
			if (stream_stdin(input, len) < 0)
				return netavark_error("nshash: cannot hand the network definitions to %s: %s", real,
						      strerror(errno));
			free(input);
			goto exec;
		}
		if (apply_labels(input, len, &cl, argc, argv, msg, sizeof(msg)))
			return netavark_error("nshash: %s", msg);
		if (restore_stdin(input, len) < 0)
			return netavark_error("nshash: cannot hand the network definitions to %s: %s", real,
					      strerror(errno));
		free(input);
	}
exec:
	argv[0] = real;
	setenv("NSHASH_NETAVARK_PASSED", real, 1);
	execv(real, argv);
	return netavark_error("nshash: exec %s: %s", real, strerror(errno));
}
