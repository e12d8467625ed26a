/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash create, show, delete: one netns at a path or name, its pin. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "auto.h"
#include "common.h"

static const char *prog = "nshash";

static const char create_usage[] =
    "Usage: nshash create [--tcp N] [--udp N] [--strategy template|nested] [--keep-lo-down] [-j] NAME|PATH\n"
    "\n"
    "Create a network namespace with its own tables, read the sizes back from it, bring lo\n"
    "up and pin it at /run/netns/NAME (`ip netns exec NAME` works) or at PATH.\n"
    "\n"
    "  --tcp N        TCP established-hash entries, 1..16777216 (next power of two)\n"
    "  --udp N        UDP hash entries, 1..65536 (next power of two, at least 128)\n"
    "                 0 or absent: that protocol stays on the shared table\n"
    "  --strategy S   template (default): a pinned private parent per size pair, in the\n"
    "                 state dir; nested: a throwaway parent, no state (works without root\n"
    "                 in `unshare -Urmn`, with PATH on a mount of your own)\n"
    "  --keep-lo-down leave the loopback interface down\n"
    "  --max-table-bytes BYTES  node-wide table memory budget (maxTableBytes): refuse\n"
    "                 a creation that would take the table bytes (TCP 8, UDP 64 per\n"
    "                 entry) of all live netns nshash sized past BYTES\n"
    "\n"
    "Exit status: 0 created, 1 failure (also: NAME already exists, as `ip netns add`),\n"
    "2 bad input.\n";

static const char show_usage[] =
    "Usage: nshash show [-j] NAME|PATH\n"
    "       nshash show [-j] --pid PID\n"
    "\n"
    "The table sizes of a pinned netns or of a process's netns: own table (with its memory),\n"
    "the shared global table, or (the host's own netns) the global table itself; the\n"
    "limits the kernel derives; what children of the netns get.\n";

static const char delete_usage[] =
    "Usage: nshash delete NAME|PATH...\n"
    "\n"
    "Unmount and remove pins; succeeds when a pin is already gone.  Warns when a process\n"
    "still uses the netns: the netns then lives on until that process exits.\n";

static int cmd_create(struct cli *c, int argc, char **argv)
{
	if (argc != 1)
		return cli_fail(EXIT_USAGE, "create: expected one NAME or PATH (see nshash help create)");
	char path[4096];
	struct nshash_error err = {0};
	if (nshash_pin_resolve(argv[0], path, sizeof(path), &err) < 0)
		return cli_fail_err(EXIT_USAGE, &err);
	c->create.state_dir = c->state_dir;
	struct nshash_netns_info info;
	/* "already exists" is a failure (1), as `ip netns add` has it. */
	if (nshash_netns_create(&c->create, path, &info, &err) < 0)
		return cli_fail_priv(EXIT_FAIL, &err);
	/* Read everything back from the pin itself: the user sees what is there. */
	if (nshash_inspect_path(path, &info, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *o = cli_info_json(&info);
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "requested_tcp", json_object_new_int64(c->create.sizes.tcp));
		json_object_object_add(o, "requested_udp", json_object_new_int64(c->create.sizes.udp));
		cli_print_json(o);
	} else {
		char what[4200];
		snprintf(what, sizeof(what), "created %s", path);
		cli_info_text(what, &info);
	}
	return EXIT_OK;
}

static int cmd_show(struct cli *c, int argc, char **argv)
{
	struct nshash_error err = {0};
	struct nshash_netns_info info;
	char path[4096] = "";
	if (c->pid) {
		if (argc != 0)
			return cli_fail(EXIT_USAGE, "show: give either --pid PID or a NAME|PATH");
		if (nshash_inspect_pid(c->pid, &info, &err) < 0)
			return cli_fail_err(err.errnum == ENOENT || err.errnum == ESRCH ? EXIT_USAGE : EXIT_FAIL, &err);
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c->pid);
	} else {
		if (argc != 1)
			return cli_fail(EXIT_USAGE, "show: expected one NAME or PATH, or --pid PID");
		if (nshash_pin_resolve(argv[0], path, sizeof(path), &err) < 0)
			return cli_fail_err(EXIT_USAGE, &err);
		if (nshash_inspect_path(path, &info, &err) < 0)
			return cli_fail_err(err.errnum == ENOENT || err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	}
	struct nshash_sockets socks;
	if (nshash_sockets_path(path, &socks, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (c->json) {
		json_object *o = cli_info_json(&info);
		json_object_object_add(o, "path", json_object_new_string(path));
		cli_sockets_json(o, &socks);
		cli_print_json(o);
	} else {
		cli_info_text(path, &info);
		cli_sockets_text(&socks, &info);
	}
	return EXIT_OK;
}

/* A netns outlives its pin while a process is in it: say so. */
/* The pid using the pin's netns, 0 none, -1 not a pin or unknown. */
static pid_t warn_if_used(const char *path)
{
	struct nshash_occupancy occ;
	struct nshash_error err = {0};
	enum nshash_path_kind kind;
	char detail[256];
	if (nshash_path_classify(path, &kind, detail, sizeof(detail), &err) < 0 || kind != NSHASH_PATH_PIN)
		return -1;
	if (nshash_netns_occupancy(path, &occ, &err) < 0)
		return -1;
	if (occ.pid > 0)
		fprintf(stderr,
			"%s: warning: %s: process %d (%s) still uses this netns: removing the pin does not end it; "
			"it lives on until that process exits\n",
			prog, path, (int)occ.pid, occ.comm);
	return occ.pid;
}

/* An unmounted file is a pin (one a creator claimed and never bound) only
 * in the netns run dir or the state dir: elsewhere it belongs to someone. */
static bool in_pin_dir(const char *path, const char *state_dir)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	const char *sd = state_dir;
	const char *subs[] = {"", "/pins", "/templates", "/spares"};
	if (n == strlen(NSHASH_NETNS_RUN_DIR) && !strncmp(path, NSHASH_NETNS_RUN_DIR, n))
		return true;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s%s", sd, subs[i]);
		if (n == strlen(dir) && !strncmp(path, dir, n))
			return true;
	}
	return false;
}

static int cmd_delete(struct cli *c, int argc, char **argv)
{
	if (argc < 1)
		return cli_fail(EXIT_USAGE, "delete: expected at least one NAME or PATH");
	int rc = EXIT_OK;
	for (int i = 0; i < argc; i++) {
		char path[4096];
		struct nshash_error err = {0};
		if (nshash_pin_resolve(argv[i], path, sizeof(path), &err) < 0) {
			rc = cli_fail_err(EXIT_USAGE, &err);
			continue;
		}
		struct stat st;
		if (nshash_pin_is_netns(path, &err) == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size == 0 && !in_pin_dir(path, c->state_dir)) {
			rc = cli_fail(EXIT_USAGE,
				  "remove pin %s: not a pin (an unmounted file outside %s and the state dir)", path,
				  NSHASH_NETNS_RUN_DIR);
			continue;
		}
		/* its netns goes with the pin (no process in it): `auto`'s last
		 * sample of it, and its mark */
		if (warn_if_used(path) == 0) {
			char key[NSH_WORKLOAD_KEY_MAX];
			struct nshash_error werr = {0};
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && nsh_workload_teardown(c->state_dir, fd, key, sizeof(key), &werr) < 0)
				fprintf(stderr, "nshash: warning: delete %s: %s\n", path, werr.msg);
			if (fd >= 0)
				close(fd);
		}
		if (nshash_pin_remove(path, &err) < 0)
			rc = cli_fail_priv(err.errnum == EINVAL ? EXIT_USAGE : EXIT_FAIL, &err);
	}
	return rc;
}

const struct command cli_cmd_create = {"create", cmd_create,
				   BIT(OPT_TCP) | BIT(OPT_UDP) | BIT(OPT_STRATEGY) | BIT(OPT_KEEP_LO_DOWN) |
				       BIT(OPT_JSON) | BIT(OPT_MAX_TABLE_BYTES),
				   create_usage};
const struct command cli_cmd_show = {"show", cmd_show, BIT(OPT_PID) | BIT(OPT_JSON), show_usage};
const struct command cli_cmd_delete = {"delete", cmd_delete, 0, delete_usage};
