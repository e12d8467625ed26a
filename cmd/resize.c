/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash resize: replace a pinned netns that is already configured by a
 * sized one that keeps its network configuration (libnshash's transplant). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int exit_code(const struct nshash_error *err, const struct nshash_transplant_report *rep)
{
	if (rep->refused || err->errnum == ENOENT || err->errnum == EINVAL)
		return EXIT_USAGE;
	return EXIT_FAIL;
}

int cli_resize_run(const struct nshash_create_opts *create, bool json, bool dry_run, const char *arg)
{
	char path[4096];
	struct nshash_error err = {0};
	if (nshash_pin_resolve(arg, path, sizeof(path), &err) < 0)
		return cli_fail_err(EXIT_USAGE, &err);
	struct nshash_transplant_opts opts = {.create = *create, .dry_run = dry_run};
	struct nshash_transplant_report rep;
	if (nshash_netns_transplant(&opts, path, &rep, &err) < 0)
		return cli_fail_err(exit_code(&err, &rep), &err);
	if (!dry_run && nshash_inspect_path(path, &rep.info, &err) < 0)
		return cli_fail_err(EXIT_FAIL, &err);
	if (json) {
		json_object *o = dry_run ? json_object_new_object() : cli_info_json(&rep.info);
		json_object *links = json_object_new_array();
		char names[sizeof(rep.link_names)];
		snprintf(names, sizeof(names), "%s", rep.link_names);
		for (char *save = NULL, *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
			json_object_array_add(links, json_object_new_string(n));
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
		json_object_object_add(o, "links", links);
		json_object *rec = json_object_new_array();
		snprintf(names, sizeof(names), "%s", rep.recreated_names);
		for (char *save = NULL, *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
			json_object_array_add(rec, json_object_new_string(n));
		json_object_object_add(o, "recreated", rec);
		json_object_object_add(o, "fallback", json_object_new_string(rep.fallback));
		json_object_object_add(o, "addresses", json_object_new_int64(rep.addresses));
		json_object_object_add(o, "routes", json_object_new_int64(rep.routes));
		json_object_object_add(o, "neighbours", json_object_new_int64(rep.neighbours));
		json_object_object_add(o, "sysctls", json_object_new_int64(rep.sysctls));
		json_object_object_add(o, "requested_tcp", json_object_new_int64(create->sizes.tcp));
		json_object_object_add(o, "requested_udp", json_object_new_int64(create->sizes.udp));
		cli_print_json(o);
		return EXIT_OK;
	}
	if (dry_run) {
		printf("%s can be resized: would move %s\n", path, rep.links ? rep.link_names : "no links");
		return EXIT_OK;
	}
	char what[4096 + 1024];
	snprintf(what, sizeof(what),
		 "resized %s: %s %s%s%s%s; restored %u address(es), %u route(s), %u neighbour(s), %u sysctl write(s)",
		 path, rep.recreated ? "carried" : "moved", rep.links ? rep.link_names : "no links",
		 rep.recreated ? " (veth recreated: " : "", rep.recreated_names, rep.recreated ? ")" : "", rep.addresses,
		 rep.routes, rep.neighbours, rep.sysctls);
	cli_info_text(what, &rep.info);
	return EXIT_OK;
}

static const char resize_usage[] =
    "Usage: nshash resize [--tcp N] [--udp N] [--strategy template|nested] [--dry-run] [-j] NAME|PATH\n"
    "\n"
    "Replace a pinned netns someone already configured (an engine's) by a sized one with\n"
    "the same links, addresses, routes, neighbours and sysctls, bound at the same path.\n"
    "Refuses, changing nothing, what it cannot carry over (a process inside, firewall\n"
    "tables, links that cannot move, ...); undoes everything if a step fails midway.\n"
    "--dry-run only checks.\n";

static int cmd_resize(struct cli *c, int argc, char **argv)
{
	if (argc != 1)
		return cli_fail(EXIT_USAGE, "resize: expected one NAME or PATH (see --help)");
	c->create.state_dir = c->state_dir;
	return cli_resize_run(&c->create, c->json, c->dry_run, argv[0]);
}

const struct command cli_cmd_resize = {"resize", cmd_resize,
				   BIT(OPT_TCP) | BIT(OPT_UDP) | BIT(OPT_STRATEGY) | BIT(OPT_DRY_RUN) | BIT(OPT_JSON),
				   resize_usage};
