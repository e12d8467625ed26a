/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-cni-install: options, the subcommands (install, uninstall, ready,
 * state-dir, record).  man nshash-cni-install(8). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

static const char usage[] =
    "Usage: " K8S_PROG " [OPTION...] COMMAND\n"
    "Puts the nshash CNI plugin on a Kubernetes node and chains it first into the node's\n"
    "active CNI config (man nshash-cni-install).\n"
    "\n"
    "Commands:\n"
    "  install [--watch SECONDS] [--status-file PATH]\n"
    "              copy the plugin into the CNI bin dir (atomically, checked to answer\n"
    "              CNI VERSION), then make nshash's entry plugins[0] of the active config,\n"
    "              validated by the plugin (STATUS) first; keep what it replaces for\n"
    "              uninstall.  --watch: again on every change of the CNI dirs and every\n"
    "              SECONDS, until SIGTERM, which stops it leaving nshash chained.\n"
    "  uninstall [--remove-binary]\n"
    "              stop every watcher of this run dir from chaining again (a marker), then\n"
    "              restore each file nshash changed; the binary stays (pods still being\n"
    "              stopped may call it for DEL) unless --remove-binary and no config names\n"
    "              nshash any more\n"
    "  ready       exit 0 when the binary is the image's, nshash's entry is plugins[0] of\n"
    "              the active config and the plugin accepts it; else 1 with the reason\n"
    "  state-dir PATH\n"
    "              make PATH a directory 0700 root:root (narrowing one that exists; a\n"
    "              symbolic link is refused): nshash's state dir on the node\n"
    "  record [--every SECONDS] [--state-dir DIR] [--nshash PATH]\n"
    "              run `nshash --state-dir DIR record` (the `auto` sizes' samples) now and\n"
    "              every SECONDS (60) until SIGTERM; a run that fails is logged, the loop\n"
    "              goes on\n"
    "\n"
    "Options (and their environment variables):\n"
    "  --cni-bin-dir DIR   CNI_BIN_DIR   the node's CNI bin dir   (/host/opt/cni/bin)\n"
    "  --cni-net-dir DIR   CNI_NET_DIR   the node's CNI config dir (/host/etc/cni/net.d)\n"
    "  --plugin PATH       NSHASH_PLUGIN the plugin to install     (/opt/nshash/nshash)\n"
    "  --entry PATH        NSHASH_ENTRY  nshash's conflist entry, read once at start\n"
    "                                    (/etc/nshash-cni/nshash-entry.json)\n"
    "  --conf-name NAME    CNI_CONF_NAME the config file to chain into (default: the one\n"
    "                                    libcni loads: first by name of *.conf, *.conflist, *.json)\n"
    "  --run-dir DIR       NSHASH_CNI_RUN_DIR where uninstall leaves its marker for the\n"
    "                                    watcher (/run/nshash-cni, the pod's emptyDir; \"\" none)\n"
    "  --watch SECONDS     install: keep watching, polling every SECONDS too\n"
    "  --status-file PATH  install: write the Prometheus status (nshash_cni_installed,\n"
    "                      nshash_cni_ready, ..._chain_writes_total, ..._config_refused_total)\n"
    "  --remove-binary     uninstall: remove CNI_BIN_DIR/nshash too\n"
    "  --every SECONDS     record: seconds from one run's start to the next (60)\n"
    "  --state-dir DIR     record: the node's nshash state dir (/run/nshash)\n"
    "  --nshash PATH       record: the nshash CLI (/usr/bin/nshash)\n"
    "  -h, --help          this text\n"
    "  -V, --version       the version\n";

static const char *env_or(const char *var, const char *def)
{
	const char *v = getenv(var);
	return v && *v ? v : def;
}

static int cmd_state_dir(const char *path)
{
	const char *why = nsh_path_unclean(path);
	if (why) {
		k8s_log("state-dir %s: %s; give an absolute path", path, why);
		return 1;
	}
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		k8s_log("%s is a symbolic link: remove it (nshash's state dir is a directory of its own)", path);
		return 1;
	}
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		k8s_log("mkdir %s: %s (its parent must exist: mount the node's /run)", path, strerror(errno));
		return 1;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		k8s_log("%s: %s (it must be a directory: move what is there away)", path, strerror(errno));
		return 1;
	}
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0700) < 0) {
		k8s_log("%s: make it 0700 root:root: %s (needs CAP_CHOWN and CAP_FOWNER)", path, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	k8s_log("%s: a directory 0700 root:root", path);
	return 0;
}

static int cmd_uninstall(const struct k8s_opts *o)
{
	struct nshash_error e;
	/* first the marker: a watcher that takes the lock after us sees it */
	if (o->run_dir && *o->run_dir) {
		char marker[4200];
		snprintf(marker, sizeof(marker), "%s/%s", o->run_dir, K8S_MARKER);
		if (k8s_write_atomic(marker, "uninstall\n", 10, 0644, (uid_t)-1, (gid_t)-1, &e) < 0) {
			k8s_log("%s; the marker that stops the watcher goes there (the watcher's --run-dir; "
				"--run-dir \"\" when no watcher runs)",
				e.msg);
			return 1;
		}
	}
	int lock = k8s_lock(o->net_dir, &e);
	if (lock < 0) {
		k8s_log("%s", e.msg);
		return 1;
	}
	int r = k8s_unchain(o, &e);
	k8s_unlock(lock);
	if (r < 0) {
		k8s_log("%s", e.msg);
		return 1;
	}
	char bin[4200], which[4200];
	snprintf(bin, sizeof(bin), "%s/nshash", o->bin_dir);
	if (!o->remove_binary) {
		if (access(bin, F_OK) == 0)
			k8s_log("kept %s: pods started while nshash was chained may still call it for DEL until the "
				"runtime has reloaded the config (--remove-binary removes it)",
				bin);
		return 0;
	}
	if (k8s_conf_mentioning_nshash(o, which, sizeof(which))) {
		k8s_log("kept %s: %s still names type nshash (a config nshash did not write); remove the entry "
			"there first",
			bin, which);
		return 1;
	}
	if (unlink(bin) < 0 && errno != ENOENT) {
		k8s_log("remove %s: %s", bin, strerror(errno));
		return 1;
	}
	k8s_log("removed %s", bin);
	return 0;
}

static int cmd_ready(struct k8s_ctx *c)
{
	const struct k8s_opts *o = c->o;
	struct nshash_error e;
	char bin[4200], marker[4200];
	snprintf(bin, sizeof(bin), "%s/nshash", o->bin_dir);
	snprintf(marker, sizeof(marker), "%s/%s", o->run_dir, K8S_MARKER);
	if (o->run_dir && *o->run_dir && access(marker, F_OK) == 0) {
		printf("not ready: uninstalled (%s)\n", marker);
		return 1;
	}
	if (!k8s_same_file(o->plugin, bin)) {
		printf("not ready: %s is %s\n", bin, access(bin, F_OK) ? "missing" : "not the image's plugin");
		return 1;
	}
	if (k8s_plugin_versions(o->plugin, c->versions, sizeof(c->versions), &e) < 0 || k8s_chained(c, &e) < 0) {
		printf("not ready: %s\n", e.msg);
		return 1;
	}
	printf("ready: nshash is first in the active CNI config; %s is in place\n", bin);
	return 0;
}

/* What the command line gave beyond the options themselves. */
struct given {
	bool watch, record;
};

/* The options into o: -1 to go on, else the exit status (help, version,
 * a bad option). */
static int parse_options(int argc, char **argv, struct k8s_opts *o, struct given *g)
{
	static const struct option longs[] = {
	    {"cni-bin-dir", required_argument, NULL, 'b'},
	    {"cni-net-dir", required_argument, NULL, 'n'},
	    {"plugin", required_argument, NULL, 'p'},
	    {"entry", required_argument, NULL, 'e'},
	    {"conf-name", required_argument, NULL, 'c'},
	    {"run-dir", required_argument, NULL, 'r'},
	    {"watch", required_argument, NULL, 'w'},
	    {"status-file", required_argument, NULL, 's'},
	    {"remove-binary", no_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"every", required_argument, NULL, 'E'},
	    {"state-dir", required_argument, NULL, 'S'},
	    {"nshash", required_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "hV", longs, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'b':
			o->bin_dir = optarg;
			break;
		case 'n':
			o->net_dir = optarg;
			break;
		case 'p':
			o->plugin = optarg;
			break;
		case 'e':
			o->entry_path = optarg;
			break;
		case 'c':
			o->conf_name = optarg;
			break;
		case 'r':
			o->run_dir = optarg;
			break;
		case 's':
			o->status_file = optarg;
			break;
		case 'R':
			o->remove_binary = true;
			break;
		case 'S':
			o->state_dir = optarg;
			g->record = true;
			break;
		case 'N':
			o->nshash = optarg;
			g->record = true;
			break;
		case 'w':
		case 'E':
			errno = 0;
			unsigned long w = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || w < 1 || w > 86400 || optarg[0] == '-') {
				k8s_log("--%s %s: give whole seconds from 1 to 86400", opt == 'w' ? "watch" : "every",
					optarg);
				return 2;
			}
			if (opt == 'w') {
				o->watch = (unsigned)w;
				g->watch = true;
			} else {
				o->every = (unsigned)w;
				g->record = true;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf(K8S_PROG " %s\n", NSHASH_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try '" K8S_PROG " --help'.\n");
			return 2;
		}
	}
	return -1;
}

/* Options given with a command they do not go with: the exit status 2,
 * else -1. */
static int misplaced(const char *cmd, const struct k8s_opts *o, const struct given *g)
{
	if ((g->watch || o->status_file) && strcmp(cmd, "install")) {
		k8s_log("--watch and --status-file go with install, not %s", cmd);
		return 2;
	}
	if (g->record && strcmp(cmd, "record")) {
		k8s_log("--every, --state-dir and --nshash go with record, not %s", cmd);
		return 2;
	}
	if (o->remove_binary && strcmp(cmd, "uninstall")) {
		k8s_log("--remove-binary goes with uninstall, not %s", cmd);
		return 2;
	}
	return -1;
}

static int cmd_record(const struct k8s_opts *o)
{
	const char *why = nsh_path_unclean(o->state_dir);
	if (why || !*o->nshash) {
		k8s_log("record: --state-dir %s: %s; give an absolute path", o->state_dir, why ? why : "bad --nshash");
		return 2;
	}
	return k8s_record_loop(o);
}

/* install: the entry read once and copied where `ready` reads it, the
 * plugin's versions, then the passes. */
static int cmd_install(struct k8s_ctx *c, const char *copy)
{
	k8s_entry_load(c);
	if (copy[0]) {
		struct nshash_error we;
		const char *t = c->entry ? json_object_to_json_string_ext(c->entry, K8S_JSON_OUT) : NULL;
		if (!t)
			unlink(copy);
		else if (k8s_write_atomic(copy, t, strlen(t), 0644, (uid_t)-1, (gid_t)-1, &we) < 0)
			k8s_log("%s (ready then reads %s)", we.msg, c->o->entry_path);
	}
	struct nshash_error e;
	if (k8s_plugin_versions(c->o->plugin, c->versions, sizeof(c->versions), &e) < 0) {
		k8s_log("%s", e.msg);
		return 1;
	}
	if (!c->entry)
		k8s_log("%s", c->entry_error);
	return k8s_install(c);
}

int main(int argc, char **argv)
{
	struct k8s_opts o = {
	    .bin_dir = env_or("CNI_BIN_DIR", "/host/opt/cni/bin"),
	    .net_dir = env_or("CNI_NET_DIR", "/host/etc/cni/net.d"),
	    .plugin = env_or("NSHASH_PLUGIN", "/opt/nshash/nshash"),
	    .entry_path = env_or("NSHASH_ENTRY", "/etc/nshash-cni/nshash-entry.json"),
	    .conf_name = env_or("CNI_CONF_NAME", ""),
	    .run_dir = getenv("NSHASH_CNI_RUN_DIR") ? getenv("NSHASH_CNI_RUN_DIR") : "/run/nshash-cni",
	    .nshash = "/usr/bin/nshash",
	    .state_dir = "/run/nshash",
	    .every = 60,
	};
	struct given g = {0};
	int rc = parse_options(argc, argv, &o, &g);
	if (rc >= 0)
		return rc;
	if (optind >= argc) {
		fprintf(stderr,
			K8S_PROG ": no command (install, uninstall, ready, state-dir PATH, record); see --help\n");
		return 2;
	}
	const char *cmd = argv[optind];
	int extra = argc - optind - 1;
	if ((rc = misplaced(cmd, &o, &g)) >= 0)
		return rc;
	if (!strcmp(cmd, "state-dir")) {
		if (extra == 1)
			return cmd_state_dir(argv[optind + 1]);
		k8s_log("state-dir takes one PATH (e.g. state-dir /host/run/nshash)");
		return 2;
	}
	if (extra) {
		k8s_log("%s takes no argument (%s): options go before or after it", cmd, argv[optind + 1]);
		return 2;
	}
	if (!strcmp(cmd, "uninstall"))
		return cmd_uninstall(&o);
	if (!strcmp(cmd, "record"))
		return cmd_record(&o);
	if (strcmp(cmd, "install") && strcmp(cmd, "ready")) {
		k8s_log("%s: no such command (install, uninstall, ready, state-dir PATH, record); see --help", cmd);
		return 2;
	}
	struct k8s_ctx c = {.o = &o};
	char copy[4200] = "";
	if (o.run_dir && *o.run_dir)
		snprintf(copy, sizeof(copy), "%s/%s", o.run_dir, K8S_ENTRY_COPY);
	if (!strcmp(cmd, "ready")) {
		/* the running installer's entry, not the ConfigMap's newer one */
		if (copy[0] && access(copy, F_OK) == 0)
			o.entry_path = copy;
		k8s_entry_load(&c);
		return cmd_ready(&c);
	}
	rc = cmd_install(&c, copy);
	json_object_put(c.entry);
	return rc;
}
