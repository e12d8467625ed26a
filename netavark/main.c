/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash's netavark: podman networks that carry sizes (docs/networks.md).
 * podman runs the first `netavark` of helper_binaries_dir; this one reads
 * the network definitions on stdin at `setup NETNS`, and when a network of
 * the container has io.nshash.tcp / io.nshash.udp labels and NETNS is
 * fresh (no link but lo, no process), replaces the netns pinned at NETNS by
 * a sized one (nshash_netns_new + nshash_netns_swap, as the CNI plugin's
 * ADD).  Then, always, it execs the real netavark with the same argv, the
 * same stdin bytes, stdout and exit status. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define NSH_NETAVARK_MAX_INPUT (4u << 20) /* the network definitions on stdin */
#define MAX_LABEL_LEN	       10	  /* decimal digits of a size label */
/* podman's own helper directories, after nshash's in helper_binaries_dir */
static const char *const default_dirs = "/usr/local/libexec/podman:/usr/local/lib/podman:/usr/libexec/podman:"
					"/usr/lib/podman";

/* netavark's way of failing: {"error": "..."} on stdout, exit 1. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
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

/* netavark's subcommand and its first operand (the netns of setup and
 * teardown), past the global options (those taking a value as a separate
 * word skip it). */
static void subcommand(int argc, char **argv, const char **cmd, const char **netns)
{
	static const char *const valued[] = {
	    "--config", "-c", "--file", "-f", "--aardvark-binary", "-a", "--rootless", "-r", "--firewall-driver", NULL};
	*cmd = *netns = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] == '-') {
			if (*cmd)
				continue;
			for (int k = 0; valued[k]; k++)
				if (!strcmp(a, valued[k]) && i + 1 < argc) {
					i++;
					break;
				}
			continue;
		}
		if (!*cmd)
			*cmd = a;
		else if (!*netns) {
			*netns = a;
			return;
		}
	}
}

static bool has_option(int argc, char **argv, const char *lng, const char *shrt)
{
	size_t n = strlen(lng);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], lng) || !strcmp(argv[i], shrt) || (!strncmp(argv[i], lng, n) && argv[i][n] == '='))
			return true;
	return false;
}

/* `s` as a JSON string (json-c escapes it), cut to fit: hostile text
 * shown in a message. */
static void quote(const char *s, char *buf, size_t len)
{
	json_object *o = json_object_new_string(s);
	snprintf(buf, len, "%s", o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "\"?\"");
	json_object_put(o);
}

/* --rootless=true: podman's rootless netavark, in its user namespace */
static bool rootless(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--rootless=true") ||
		    ((!strcmp(argv[i], "--rootless") || !strcmp(argv[i], "-r")) && i + 1 < argc &&
		     !strcmp(argv[i + 1], "true")))
			return true;
	return false;
}

/* One size label of network `net`: absent (0, *set false), or decimal
 * digits within `cap`.  0 or 1 (message written). */
static int label_size(json_object *labels, const char *net, const char *key, unsigned cap, unsigned *out, bool *set,
		      char *msg, size_t mlen)
{
	json_object *v;
	*out = 0;
	*set = false;
	if (!json_object_object_get_ex(labels, key, &v))
		return 0;
	*set = true;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, mlen, "network %s: label %s is not a string", net, key);
		return 1;
	}
	const char *s = json_object_get_string(v);
	size_t n = strlen(s);
	bool digits = n > 0 && n <= MAX_LABEL_LEN;
	for (size_t i = 0; digits && i < n; i++)
		digits = s[i] >= '0' && s[i] <= '9';
	char shown[40];
	quote(s, shown, sizeof(shown));
	if (!digits) {
		snprintf(msg, mlen,
			 "network %s: label %s=%s is not a decimal number of hash buckets: "
			 "recreate the network with e.g. --label %s=4096",
			 net, key, shown, key);
		return 1;
	}
	enum nshash_proto proto = strcmp(key, NSH_ANNOTATION_TCP) ? NSHASH_UDP : NSHASH_TCP;
	struct nshash_error e;
	uint32_t x;
	if (nshash_size_parse(proto, key, s, &x, &e) < 0) {
		snprintf(msg, mlen, "network %s: label %s", net, e.msg);
		return 1;
	}
	/* the policy's caps compare what the kernel makes of it */
	uint32_t eff = nshash_size_effective(proto, x);
	if (eff > cap) {
		snprintf(
		    msg, mlen,
		    "network %s: label %s=%s (effective %u) is above the policy's cap %u: lower it or raise the cap",
		    net, key, s, eff, cap);
		return 1;
	}
	*out = (unsigned)x;
	return 0;
}

/* The sizes the container's networks ask for: those of the first network
 * (in podman's order) with io.nshash.* labels; another network with other
 * labelled sizes is refused.  0 (*found), or 1 (message written). */
static int network_sizes(json_object *root, const struct nsh_policy *pol, struct nshash_sizes *sizes, bool *found,
			 char *first, size_t flen, char *msg, size_t mlen)
{
	json_object *info;
	*found = false;
	if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "network_info", &info) ||
	    !json_object_is_type(info, json_type_object))
		return 0; /* not ours to judge: netavark says what is wrong */
	json_object_object_foreach(info, name, net)
	{
		json_object *labels;
		if (!json_object_is_type(net, json_type_object) || !json_object_object_get_ex(net, "labels", &labels) ||
		    !json_object_is_type(labels, json_type_object))
			continue;
		char quoted[160];
		quote(name, quoted, sizeof(quoted));
		struct nshash_sizes s;
		bool ts, us;
		if (label_size(labels, quoted, NSH_ANNOTATION_TCP, pol->max.tcp, &s.tcp, &ts, msg, mlen) ||
		    label_size(labels, quoted, NSH_ANNOTATION_UDP, pol->max.udp, &s.udp, &us, msg, mlen))
			return 1;
		if (!ts && !us)
			continue;
		if (!*found) {
			*found = true;
			*sizes = s;
			snprintf(first, flen, "%s", quoted);
		} else if (s.tcp != sizes->tcp || s.udp != sizes->udp) {
			snprintf(msg, mlen,
				 "networks %s (io.nshash.tcp=%u io.nshash.udp=%u) and %s (io.nshash.tcp=%u "
				 "io.nshash.udp=%u) ask for other sizes: a netns has one pair of tables; attach "
				 "the container to networks whose labels agree",
				 first, sizes->tcp, sizes->udp, quoted, s.tcp, s.udp);
			return 1;
		}
	}
	return 0;
}

/* Replace the fresh netns pinned at `netns` by one of `sizes`.  0 (done
 * or left alone, *note says why), or 1 (message written). */
static int size_netns(const char *netns, const struct nsh_policy *pol, struct nshash_sizes sizes, const char *net,
		      char *note, size_t nlen, char *msg, size_t mlen)
{
	struct nshash_error e;
	enum nshash_path_kind kind;
	char detail[600];
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
	if (info.tcp_entries > 0 || info.udp_entries > 0) {
		snprintf(note, nlen, "%s has own tables already: left alone", netns);
		return 0;
	}
	struct nshash_occupancy occ;
	if (nshash_netns_occupancy(netns, &occ, &e) < 0) {
		snprintf(msg, mlen, "network %s: %s", net, e.msg);
		return 1;
	}
	if (occ.links || occ.pid) {
		/* not fresh: a container joined it or its annotations size it */
		snprintf(note, nlen, "%s is in use (%s%s): left alone", netns, occ.links ? occ.link_names : "process ",
			 occ.links ? "" : occ.comm);
		return 0;
	}
	struct nshash_create_opts opts = nsh_policy_create_opts(pol, sizes);
	int nsfd = -1;
	struct nshash_netns_info made;
	if (nshash_netns_new(&opts, &nsfd, &made, &e) < 0 || nshash_verify(&made, sizes, netns, &e) < 0 ||
	    nshash_netns_swap(nsfd, netns, &e) < 0) {
		if (nsfd >= 0)
			close(nsfd);
		snprintf(msg, mlen, "network %s: cannot size netns %s: %s", net, netns, e.msg);
		return 1;
	}
	close(nsfd);
	/* what netavark will open is the path: look through it */
	if (nshash_inspect_path(netns, &info, &e) < 0 || nshash_verify(&info, sizes, netns, &e) < 0) {
		snprintf(msg, mlen, "network %s: after replacing netns %s: %s", net, netns, e.msg);
		return 1;
	}
	snprintf(note, nlen, "replaced %s by a netns with tcp %ld udp %ld (network %s)", netns, info.tcp_entries,
		 info.udp_entries, net);
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

int main(int argc, char **argv)
{
	char real[PATH_MAX];
	const char *cmd, *netns;
	/* What we exec is told it came from here: a "real" netavark that is
	 * nshash's wrapper again (a second copy in the helper dirs, or
	 * NSHASH_NETAVARK naming it) would exec it back forever. */
	if (getenv("NSHASH_NETAVARK_PASSED"))
		return fail("nshash: the netavark nshash's netavark ran is nshash's netavark again (%s): point "
			    "NSHASH_NETAVARK or NSHASH_NETAVARK_DIRS at podman's own netavark",
			    getenv("NSHASH_NETAVARK_PASSED"));
	if (find_real(real, sizeof(real)) < 0)
		return fail("nshash: no real netavark found in %s: set NSHASH_NETAVARK_DIRS or install podman's "
			    "netavark",
			    getenv("NSHASH_NETAVARK_DIRS") ? getenv("NSHASH_NETAVARK_DIRS") : default_dirs);
	subcommand(argc, argv, &cmd, &netns);
	/* teardown, version, dhcp-proxy, --file input: netavark's alone */
	if (cmd && !strcmp(cmd, "setup") && netns && !has_option(argc, argv, "--file", "-f")) {
		char *input = NULL;
		size_t len = 0;
		struct nshash_error e;
		if (nsh_read_fd(STDIN_FILENO, "the network definitions on stdin", NSH_NETAVARK_MAX_INPUT, &input, &len,
				&e) < 0)
			return fail("nshash: %s", e.msg);
		json_object *root = NULL;
		struct nsh_json_fault fault;
		char msg[4096] = "", note[600] = "", first[160] = "";
		struct nshash_sizes sizes = {0, 0};
		bool found = false;
		if (nsh_json_decode(input, len, &root, &fault) == 0) {
			struct nsh_policy pol;
			const char *pp = getenv("NSHASH_POLICY");
			if (network_sizes(root, &(struct nsh_policy){.max = {UINT_MAX, UINT_MAX}}, &sizes, &found,
					  first, sizeof(first), msg, sizeof(msg)) == 0 &&
			    found) {
				if (nsh_policy_load(pp && *pp ? pp : NULL, &pol, &e) < 0)
					return fail("nshash: %s", e.msg);
				int bad =
				    network_sizes(root, &pol, &sizes, &found, first, sizeof(first), msg, sizeof(msg));
				bool want = !bad && (sizes.tcp || sizes.udp);
				if (want && rootless(argc, argv))
					snprintf(
					    msg, sizeof(msg),
					    "network %s asks for own hash tables (io.nshash.* labels): only rootful "
					    "podman can size a netns this way; use a network without these labels",
					    first);
				else if (want &&
					 size_netns(netns, &pol, sizes, first, note, sizeof(note), msg, sizeof(msg)) ==
					     0 &&
					 note[0] && getenv("NSHASH_NETAVARK_VERBOSE"))
					fprintf(stderr, "nshash: %s\n", note); /* podman shows netavark's stderr */
			}
			json_object_put(root);
		} /* malformed input: netavark's to refuse, in its own words */
		if (msg[0])
			return fail("nshash: %s", msg);
		if (restore_stdin(input, len) < 0)
			return fail("nshash: cannot hand the network definitions to %s: %s", real, strerror(errno));
		free(input);
	}
	argv[0] = real;
	setenv("NSHASH_NETAVARK_PASSED", real, 1);
	execv(real, argv);
	return fail("nshash: exec %s: %s", real, strerror(errno));
}
