/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash's netavark: the command line it reads as netavark's (anything it
 * does not understand is left to netavark, never sized) and the network
 * labels it takes sizes from (caps, conflicts, hostile names quoted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "netavark.h"

static struct nsh_netavark_cmdline parse(const char *const *args)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = (char *)"netavark";
	for (; *args && argc < 15; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	struct nsh_netavark_cmdline c;
	nsh_netavark_cmdline_parse(argc, argv, &c);
	return c;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_cmdline_understood(void **state)
{
	(void)state;
	struct nsh_netavark_cmdline c = parse(ARGS("setup", "/run/netns/netns-1"));
	assert_true(c.understood);
	assert_string_equal(c.cmd, "setup");
	assert_string_equal(c.netns, "/run/netns/netns-1");
	assert_null(c.file);
	assert_null(c.rootless);
	/* podman's own form: global options first, in every form clap takes */
	c = parse(ARGS("--config", "/run/containers/networks", "--rootless=false", "-a", "/usr/libexec/aardvark",
		       "--firewall-driver", "nftables", "setup", "/run/netns/n2"));
	assert_true(c.understood);
	assert_string_equal(c.netns, "/run/netns/n2");
	assert_string_equal(c.rootless, "false");
	c = parse(ARGS("-f/tmp/in.json", "-rtrue", "teardown", "/run/netns/n3"));
	assert_true(c.understood);
	assert_string_equal(c.cmd, "teardown");
	assert_string_equal(c.file, "/tmp/in.json");
	assert_string_equal(c.rootless, "true");
	c = parse(ARGS("-f=/tmp/x", "setup", "/run/netns/n4"));
	assert_true(c.understood);
	assert_string_equal(c.file, "/tmp/x");
	/* "--" ends the options: a netns path that starts with '-' */
	c = parse(ARGS("setup", "--", "-odd"));
	assert_true(c.understood);
	assert_string_equal(c.netns, "-odd");
	/* other subcommands: understood, no operand needed */
	c = parse(ARGS("version"));
	assert_true(c.understood);
	assert_null(c.netns);
}

static void test_cmdline_not_understood(void **state)
{
	(void)state;
	/* each of these is netavark's to judge: nshash sizes nothing */
	assert_false(parse(ARGS("--bogus", "setup", "/run/netns/n")).understood);
	assert_false(parse(ARGS("-z", "setup", "/run/netns/n")).understood);
	assert_false(parse(ARGS("--help=yes", "setup", "/run/netns/n")).understood); /* no value */
	assert_false(parse(ARGS("-hx", "setup", "/run/netns/n")).understood);
	assert_false(parse(ARGS("setup", "-h")).understood);			       /* an option of the subcommand */
	assert_false(parse(ARGS("setup", "/run/netns/a", "/run/netns/b")).understood); /* two operands */
	assert_false(parse(ARGS("setup")).understood);				       /* none */
	assert_false(parse(ARGS("--config")).understood);			       /* value missing */
	assert_false(parse(ARGS("-c")).understood);
	assert_false(parse(ARGS("a", "b", "c", "d")).understood); /* a third operand */
	const char *const none[] = {NULL};
	assert_false(parse(none).understood);
}

static void test_under_run_netns(void **state)
{
	(void)state;
	assert_true(nsh_netavark_under_run_netns("/run/netns/netns-abc"));
	assert_false(nsh_netavark_under_run_netns("/run/netns/"));
	assert_false(nsh_netavark_under_run_netns("/run/netns/a/b"));
	assert_false(nsh_netavark_under_run_netns("/run/netns/.."));
	assert_false(nsh_netavark_under_run_netns("/run/netns/."));
	assert_false(nsh_netavark_under_run_netns("/run/netnsX/a"));
	assert_false(nsh_netavark_under_run_netns("/proc/1/ns/net"));
	assert_false(nsh_netavark_under_run_netns("run/netns/a"));
}

static unsigned def_tcp, def_udp; /* the policy's defaults for sizes_of */
static char last_from[120];

static int sizes_of(const char *input, struct nshash_sizes *s, bool *found, char *msg, size_t mlen)
{
	struct nsh_policy pol;
	nsh_policy_defaults(&pol);
	pol.max.tcp = 65536;
	pol.max.udp = 8192;
	pol.defaults.tcp = def_tcp;
	pol.defaults.udp = def_udp;
	json_object *root = json_tokener_parse(input);
	char first[200] = "";
	msg[0] = '\0';
	int r = nsh_netavark_network_sizes(root, &pol, s, found, first, sizeof(first), last_from, sizeof(last_from),
					   msg, mlen);
	json_object_put(root);
	return r;
}

static void test_labels(void **state)
{
	(void)state;
	struct nshash_sizes s = {0, 0};
	bool found;
	char msg[600];
	/* the first labelled network decides; an unlabelled one is no conflict */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {}}, \"b\": {\"labels\": "
				  "{\"io.nshash.tcp\": \"4096\", \"io.nshash.udp\": \"1024\"}}}}",
				  &s, &found, msg, sizeof(msg)),
			 0);
	assert_true(found);
	assert_int_equal(s.tcp, 4096);
	assert_int_equal(s.udp, 1024);
	/* one protocol only: the other 0 */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.udp\": \"512\"}}}}", &s, &found,
				  msg, sizeof(msg)),
			 0);
	assert_true(found);
	assert_int_equal(s.tcp, 0);
	assert_int_equal(s.udp, 512);
	assert_string_equal(last_from, "io.nshash.* labels");
	/* no labels, or no network_info: nothing found, nothing said */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {}}}", &s, &found, msg, sizeof(msg)), 0);
	assert_false(found);
	assert_int_equal(sizes_of("[1]", &s, &found, msg, sizeof(msg)), 0);
	assert_false(found);
	assert_string_equal(msg, "");
	/* two labelled networks that agree: fine; that differ: refused, both named */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"4096\"}}, "
				  "\"b\": {\"labels\": {\"io.nshash.tcp\": \"4096\"}}}}",
				  &s, &found, msg, sizeof(msg)),
			 0);
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"4096\"}}, "
				  "\"b\": {\"labels\": {\"io.nshash.tcp\": \"8192\"}}}}",
				  &s, &found, msg, sizeof(msg)),
			 1);
	assert_string_equal(msg, "networks \"a\" (io.nshash.tcp=4096 io.nshash.udp=0) and \"b\" (io.nshash.tcp=8192 "
				 "io.nshash.udp=0) ask for other sizes: a netns has one pair of tables; attach the "
				 "container to networks whose labels agree");
}

static void test_labels_bad(void **state)
{
	(void)state;
	struct nshash_sizes s;
	bool found;
	char msg[600];
	assert_int_equal(sizes_of("{\"network_info\": {\"n\": {\"labels\": {\"io.nshash.tcp\": \"0x10\"}}}}", &s,
				  &found, msg, sizeof(msg)),
			 1);
	assert_string_equal(msg, "network \"n\": label io.nshash.tcp=\"0x10\" is not a decimal number of hash buckets: "
				 "recreate the network with e.g. --label io.nshash.tcp=4096");
	assert_int_equal(sizes_of("{\"network_info\": {\"n\": {\"labels\": {\"io.nshash.udp\": 512}}}}", &s, &found,
				  msg, sizeof(msg)),
			 1);
	assert_string_equal(msg, "network \"n\": label io.nshash.udp is not a string");
	/* above the cap: the effective size named (the kernel rounds up) */
	assert_int_equal(sizes_of("{\"network_info\": {\"n\": {\"labels\": {\"io.nshash.udp\": \"9000\"}}}}", &s,
				  &found, msg, sizeof(msg)),
			 1);
	assert_string_equal(msg, "network \"n\": label io.nshash.udp=9000 (effective 16384) is above the policy's cap "
				 "8192: lower it or raise the cap");
	/* 11 digits: no number parse reaches it */
	assert_int_equal(sizes_of("{\"network_info\": {\"n\": {\"labels\": {\"io.nshash.tcp\": \"12345678901\"}}}}", &s,
				  &found, msg, sizeof(msg)),
			 1);
	assert_non_null(strstr(msg, "is not a decimal number of hash buckets"));
	/* a hostile network name is quoted: no line forged in a log */
	assert_int_equal(
	    sizes_of("{\"network_info\": {\"x\\nerror: forged\": {\"labels\": {\"io.nshash.tcp\": \"-1\"}}}}", &s,
		     &found, msg, sizeof(msg)),
	    1);
	assert_null(strchr(msg, '\n'));
	assert_non_null(strstr(msg, "network \"x\\nerror: forged\": label io.nshash.tcp=\"-1\""));
}

/* Per protocol: a protocol the labels leave gets the node's default; two
 * networks are compared on what they resolve to, in either order. */
static void test_labels_defaults(void **state)
{
	(void)state;
	struct nshash_sizes s;
	bool found;
	char msg[600];
	def_tcp = 1024;
	def_udp = 512;
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"2048\"}}}}", &s,
				  &found, msg, sizeof(msg)),
			 0);
	assert_int_equal(s.tcp, 2048);
	assert_int_equal(s.udp, 512);
	assert_string_equal(last_from, "tcp: io.nshash.* labels, udp: the node's defaultTcp/defaultUdp");
	/* an explicit 0 is decided: shared, whatever the default */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"2048\", "
				  "\"io.nshash.udp\": \"0\"}}}}",
				  &s, &found, msg, sizeof(msg)),
			 0);
	assert_int_equal(s.udp, 0);
	/* {tcp} and {tcp, udp=0} differ once resolved, in either order */
	const char *ab = "{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"2048\"}}, \"b\": {\"labels\": "
			 "{\"io.nshash.tcp\": \"2048\", \"io.nshash.udp\": \"0\"}}}}";
	assert_int_equal(sizes_of(ab, &s, &found, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "networks \"a\" (io.nshash.tcp=2048 defaultUdp 512) and \"b\" (io.nshash.tcp=2048 "
				 "io.nshash.udp=0) ask for other sizes: a netns has one pair of tables; attach the "
				 "container to networks whose labels agree");
	const char *ba = "{\"network_info\": {\"b\": {\"labels\": {\"io.nshash.tcp\": \"2048\", \"io.nshash.udp\": "
			 "\"0\"}}, \"a\": {\"labels\": {\"io.nshash.tcp\": \"2048\"}}}}";
	assert_int_equal(sizes_of(ba, &s, &found, msg, sizeof(msg)), 1);
	/* {tcp} and {tcp, udp=512}: the same once resolved */
	assert_int_equal(sizes_of("{\"network_info\": {\"a\": {\"labels\": {\"io.nshash.tcp\": \"2048\"}}, \"b\": "
				  "{\"labels\": {\"io.nshash.tcp\": \"2048\", \"io.nshash.udp\": \"512\"}}}}",
				  &s, &found, msg, sizeof(msg)),
			 0);
	assert_int_equal(s.udp, 512);
	/* an auto default is the hook's: shared here */
	struct nsh_policy pol;
	nsh_policy_defaults(&pol);
	pol.defaults_auto.udp = true;
	struct nsh_decision d;
	char from[120];
	nsh_netavark_resolve(&pol, (struct nshash_sizes){2048, 0}, (const bool[2]){true, false}, &d, from,
			     sizeof(from));
	assert_int_equal(d.sizes.tcp, 2048);
	assert_int_equal(d.sizes.udp, 0);
	assert_string_equal(from, "io.nshash.* labels");
	def_tcp = def_udp = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cmdline_understood), cmocka_unit_test(test_cmdline_not_understood),
	    cmocka_unit_test(test_under_run_netns),    cmocka_unit_test(test_labels),
	    cmocka_unit_test(test_labels_bad),	       cmocka_unit_test(test_labels_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
