/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer harness: one whole CNI plugin invocation, nsh_cni_run(),
 * with the system operations replaced (nothing touches the host): the
 * environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME,
 * CNI_ARGS) and stdin (network config, prevResult, runtimeConfig with pod
 * annotations) all come from the input, NUL-separated in that order.  The
 * output must be a status 0/1, at most one JSON document on stdout, and a
 * log of whole lines, each the plugin's own, without control characters
 * but tabs. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"
#include "fuzz.h"

static int classify(const char *path, enum nshash_path_kind *kind, char *detail, size_t detail_len,
		    struct nshash_error *err)
{
	(void)err;
	*kind = path[0] == '/' && path[1] == 'p' ? NSHASH_PATH_PROC : NSHASH_PATH_PIN;
	snprintf(detail, detail_len, "fuzz");
	return 0;
}

static int inspect(const char *path, struct nshash_netns_info *info, struct nshash_error *err)
{
	(void)path;
	(void)err;
	*info = (struct nshash_netns_info){.tcp_entries = 4096, .udp_entries = -16384, .tcp_child = 0, .udp_child = 0};
	return 0;
}

static int occupancy(const char *path, int cgroup_fd, struct nshash_occupancy *occ, struct nshash_error *err)
{
	(void)path;
	(void)cgroup_fd;
	(void)err;
	memset(occ, 0, sizeof(*occ));
	return 0;
}

static int probe(struct nshash_probe *p, struct nshash_error *err)
{
	(void)err;
	*p = (struct nshash_probe){
	    .release = "6.2", .has_tcp_knob = true, .has_udp_knob = true, .cap_sys_admin = true, .cap_net_admin = true};
	return 0;
}

static int create(const struct nshash_create_opts *opts, int *nsfd, struct nshash_netns_info *info,
		  struct nshash_error *err)
{
	(void)err;
	struct nshash_sizes eff = nshash_sizes_effective(opts->sizes);
	*nsfd = -1;
	*info = (struct nshash_netns_info){.tcp_entries = eff.tcp ? (long)eff.tcp : -262144,
					   .udp_entries = eff.udp ? (long)eff.udp : -16384};
	return 0;
}

static int swap(int nsfd, const char *pin_path, struct nshash_error *err)
{
	(void)nsfd;
	(void)pin_path;
	(void)err;
	return 0;
}

static const struct nsh_cni_ops ops = {
    .classify = classify, .inspect = inspect, .occupancy = occupancy, .probe = probe, .create = create, .swap = swap};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *field[5] = {NULL, NULL, NULL, NULL, NULL};
	size_t at = 0;
	for (int i = 0; i < 5 && at < size; i++) {
		field[i] = buf + at;
		at += strlen(buf + at) + 1;
	}
	if (at > size)
		at = size;
	struct nsh_cni_env env = {.command = field[0],
				     .containerid = field[1],
				     .netns = field[2],
				     .ifname = field[3],
				     .args = field[4],
				     .path = "/usr/lib/cni"};
	struct nsh_cni_output out;
	nsh_cni_run(&env, buf + at, size - at, &ops, NULL, &out); /* the node's defaults */
	CHECK(out.status == 0 || out.status == 1);
	CHECK(memchr(out.log, '\0', sizeof(out.log)));
	/* one or more whole lines, each the plugin's own (no input starts one) */
	CHECK(!out.log[0] || strncmp(out.log, "nshash[", 7) == 0);
	for (const char *p = out.log; *p; p++)
		CHECK((unsigned char)*p >= 0x20 || *p == '\t' ||
		      (*p == '\n' && (p[1] == '\0' || strncmp(p + 1, "nshash[", 7) == 0)));
	if (out.stdout_text) {
		json_object *j = json_tokener_parse(out.stdout_text);
		CHECK(j); /* whatever is printed is JSON */
		json_object_put(j);
	}
	nsh_cni_output_free(&out);
	free(buf);
	return 0;
}
