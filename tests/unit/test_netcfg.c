/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* netcfg.c's comparison of two network configurations, without root: over
 * rtnetlink dumps captured once from a real netns (tests/unit/data, made by
 * its capture-netcfg: a veth, IPv4 and IPv6 addresses, routes, permanent
 * neighbours; dump a right after configuring, b 3 s later).  What differs
 * only in state (DAD's tentative flag, ticking lifetimes, cache info, the
 * kernel's routes that wait for DAD) compares equal; a real difference is
 * reported, the first one, in the words a refused transplant prints.
 * With root: the /proc/sys/net walk (each file looked up relative to its
 * directory) against a walk by whole paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include <cmocka.h>

#include "netcfg.h"

#ifndef NSH_TEST_DATA
#define NSH_TEST_DATA "tests/unit/data"
#endif

struct blob {
	unsigned char *d;
	size_t n;
};

static struct blob load(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", NSH_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	struct blob b = {malloc(1 << 16), 0};
	assert_non_null(b.d);
	b.n = fread(b.d, 1, 1 << 16, f);
	fclose(f);
	assert_true(b.n > 0 && b.n < (1 << 16));
	return b;
}

static void cfg_of(const struct blob *b, struct nsh_netcfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	assert_int_equal(nsh_netcfg_add(cfg, b->d, b->n), 0);
}

/* Each whole message of b (the kernel's dump: whole, aligned messages). */
#define FOR_EACH_MSG(h, b)                                                                                             \
	for (size_t off_ = 0;                                                                                          \
	     off_ + sizeof(struct nlmsghdr) <= (b)->n &&                                                               \
	     ((h) = (void *)((b)->d + off_))->nlmsg_len >= sizeof(struct nlmsghdr) && (h)->nlmsg_len <= (b)->n - off_; \
	     off_ += NLMSG_ALIGN((h)->nlmsg_len))

/* A copy of b without the messages `drop` accepts; how many went. */
static struct blob without(const struct blob *b, bool (*drop)(const struct nlmsghdr *h), int *dropped)
{
	struct blob o = {malloc(b->n), 0};
	assert_non_null(o.d);
	*dropped = 0;
	struct nlmsghdr *h;
	FOR_EACH_MSG(h, b)
	{
		if (drop(h)) {
			(*dropped)++;
			continue;
		}
		memcpy(o.d + o.n, h, NLMSG_ALIGN(h->nlmsg_len));
		o.n += NLMSG_ALIGN(h->nlmsg_len);
	}
	return o;
}

static struct rtattr *find_rta(struct nlmsghdr *h, size_t hdrlen, int type)
{
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(hdrlen);
	for (struct rtattr *a = (void *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdrlen)); RTA_OK(a, len);
	     a = RTA_NEXT(a, len))
		if (a->rta_type == type)
			return a;
	return NULL;
}

/* The message of type `type` for which `is` holds (the first), in place. */
static struct nlmsghdr *find_msg(struct blob *b, int type, bool (*is)(struct nlmsghdr *h))
{
	struct nlmsghdr *h;
	FOR_EACH_MSG(h, b)
	if (h->nlmsg_type == type && is(h))
		return h;
	return NULL;
}

static bool is_v4(const struct rtattr *a, const char *ip)
{
	struct in_addr want;
	inet_pton(AF_INET, ip, &want);
	return a && RTA_PAYLOAD(a) == 4 && memcmp(RTA_DATA(a), &want, 4) == 0;
}

static bool is_hv0_link(struct nlmsghdr *h)
{
	struct rtattr *n = find_rta(h, sizeof(struct ifinfomsg), IFLA_IFNAME);
	return n && strcmp(RTA_DATA(n), "hv0") == 0;
}
static bool is_addr_10_77_1_2(struct nlmsghdr *h)
{
	return is_v4(find_rta(h, sizeof(struct ifaddrmsg), IFA_LOCAL), "10.77.1.2");
}
static bool drop_addr_10_77_1_2(const struct nlmsghdr *h)
{
	return h->nlmsg_type == RTM_NEWADDR && is_addr_10_77_1_2((struct nlmsghdr *)h);
}
static bool drop_route_10_99(const struct nlmsghdr *h)
{
	return h->nlmsg_type == RTM_NEWROUTE &&
	       is_v4(find_rta((struct nlmsghdr *)h, sizeof(struct rtmsg), RTA_DST), "10.99.0.0");
}
static bool drop_neigh_10_77_0_1(const struct nlmsghdr *h)
{
	return h->nlmsg_type == RTM_NEWNEIGH &&
	       is_v4(find_rta((struct nlmsghdr *)h, sizeof(struct ndmsg), NDA_DST), "10.77.0.1");
}
static bool drop_hv0(const struct nlmsghdr *h)
{
	return h->nlmsg_type == RTM_NEWLINK && is_hv0_link((struct nlmsghdr *)h);
}

/* diff(want, have): its return and message. */
static int diff(const struct blob *want, const struct blob *have, struct nshash_error *err)
{
	struct nsh_netcfg w, h;
	cfg_of(want, &w);
	cfg_of(have, &h);
	memset(err, 0, sizeof(*err));
	int r = nsh_netcfg_diff(&w, &h, err);
	nsh_netcfg_free(&w);
	nsh_netcfg_free(&h);
	return r;
}

static void test_parsed(void **state)
{
	(void)state;
	struct blob a = load("netcfg-a.bin");
	struct nsh_netcfg cfg;
	cfg_of(&a, &cfg);
	/* lo, hv0, hv1; the addresses, routes, neighbours as configured */
	assert_int_equal(cfg.nlinks, 3);
	const struct nsh_link *l = nsh_netcfg_link(&cfg, "hv0");
	assert_non_null(l);
	assert_string_equal(l->kind, "veth");
	assert_int_equal(l->mtu, 1500);
	assert_int_equal(l->maclen, 6);
	assert_memory_equal(l->mac, "\x02\x00\x00\x00\x77\x02", 6);
	assert_non_null(nsh_netcfg_link(&cfg, "lo"));
	assert_true(cfg.addrs.n >= 4); /* 127.0.0.1, ::1, two IPv4 and an IPv6 on hv0, link-locals */
	assert_true(cfg.routes.n >= 3);
	assert_true(cfg.neighs.n >= 2);
	nsh_netcfg_free(&cfg);
	free(a.d);
}

static void test_same_dump_equal(void **state)
{
	(void)state;
	struct blob a = load("netcfg-a.bin");
	struct nshash_error err;
	assert_int_equal(diff(&a, &a, &err), 0);
	free(a.d);
}

/* 3 s later: DAD done (the IPv6 address no longer tentative, its local
 * route made), the finite lifetimes ticked down: the same configuration. */
static void test_state_changes_equal(void **state)
{
	(void)state;
	struct blob a = load("netcfg-a.bin"), b = load("netcfg-b.bin");
	assert_true(a.n != b.n || memcmp(a.d, b.d, a.n) != 0);
	struct nshash_error err;
	assert_int_equal(diff(&a, &b, &err), 0);
	free(a.d);
	free(b.d);
}

/* Flags that are state (tentative, dadfailed) do not count; one a user
 * sets (nodad) does. */
static void test_addr_flags(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin"), c = load("netcfg-b.bin");
	struct nlmsghdr *h = find_msg(&c, RTM_NEWADDR, is_addr_10_77_1_2);
	assert_non_null(h);
	struct rtattr *f = find_rta(h, sizeof(struct ifaddrmsg), IFA_FLAGS);
	assert_non_null(f);
	uint32_t was = *(uint32_t *)RTA_DATA(f);
	*(uint32_t *)RTA_DATA(f) = was | IFA_F_TENTATIVE | IFA_F_DADFAILED;
	struct nshash_error err;
	assert_int_equal(diff(&b, &c, &err), 0);
	*(uint32_t *)RTA_DATA(f) = was | IFA_F_NODAD;
	assert_int_equal(diff(&b, &c, &err), -EIO);
	assert_string_equal(err.msg, "address 10.77.1.2/24 on hv0 is missing");
	free(b.d);
	free(c.d);
}

static void test_addr_missing_appeared(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin");
	int n;
	struct blob c = without(&b, drop_addr_10_77_1_2, &n);
	assert_int_equal(n, 1);
	struct nshash_error err;
	assert_int_equal(diff(&b, &c, &err), -EIO);
	assert_string_equal(err.msg, "address 10.77.1.2/24 on hv0 is missing");
	assert_int_equal(diff(&c, &b, &err), -EIO);
	assert_string_equal(err.msg, "address 10.77.1.2/24 on hv0 appeared");
	free(b.d);
	free(c.d);
}

static void test_route_missing_appeared(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin");
	int n;
	struct blob c = without(&b, drop_route_10_99, &n);
	assert_int_equal(n, 1);
	struct nshash_error err;
	assert_int_equal(diff(&b, &c, &err), -EIO);
	assert_string_equal(err.msg, "route 10.99.0.0/16 via 10.77.0.1 dev hv0 table 254 metric 50 proto 3 is missing");
	assert_int_equal(diff(&c, &b, &err), -EIO);
	assert_string_equal(err.msg, "route 10.99.0.0/16 via 10.77.0.1 dev hv0 table 254 metric 50 proto 3 appeared");
	free(b.d);
	free(c.d);
}

static void test_neigh_missing(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin");
	int n;
	struct blob c = without(&b, drop_neigh_10_77_0_1, &n);
	assert_int_equal(n, 1);
	struct nshash_error err;
	assert_int_equal(diff(&b, &c, &err), -EIO);
	assert_string_equal(err.msg, "permanent neighbour 10.77.0.1 on hv0 is missing");
	free(b.d);
	free(c.d);
}

/* Links come first: an MTU changed, a link gone. */
static void test_links(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin"), c = load("netcfg-b.bin");
	struct nlmsghdr *h = find_msg(&c, RTM_NEWLINK, is_hv0_link);
	assert_non_null(h);
	struct rtattr *mtu = find_rta(h, sizeof(struct ifinfomsg), IFLA_MTU);
	assert_non_null(mtu);
	*(uint32_t *)RTA_DATA(mtu) = 1400;
	struct nshash_error err;
	assert_int_equal(diff(&b, &c, &err), -EIO);
	assert_string_equal(err.msg, "link hv0 has MTU 1400, had 1500");
	int n;
	struct blob d = without(&b, drop_hv0, &n);
	assert_int_equal(n, 1);
	assert_int_equal(diff(&b, &d, &err), -ENODEV);
	assert_string_equal(err.msg, "link hv0 is missing");
	free(b.d);
	free(c.d);
	free(d.d);
}

static void test_cut_message_refused(void **state)
{
	(void)state;
	struct blob b = load("netcfg-b.bin");
	struct nsh_netcfg cfg = {0};
	const struct nlmsghdr *h = (const void *)b.d;
	/* the first message without its last byte */
	assert_int_equal(nsh_netcfg_add(&cfg, b.d, h->nlmsg_len - 1), -EINVAL);
	nsh_netcfg_free(&cfg);
	free(b.d);
}

/* The reference: every readable and writable file under /proc/sys/net/REL
 * by its whole path, as "REL=VALUE" lines in buf. */
static int walk_by_path(const char *rel, char *buf, size_t len, size_t *used)
{
	char path[512];
	snprintf(path, sizeof(path), "/proc/sys/net/%s", rel);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		char sub[256], value[4096];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s%s%.100s", rel, *rel ? "/" : "", de->d_name);
		snprintf(path, sizeof(path), "/proc/sys/net/%s", sub);
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int k = walk_by_path(sub, buf, len, used);
			n += k > 0 ? k : 0;
			continue;
		}
		int fd = (st.st_mode & 0600) == 0600 ? open(path, O_RDONLY) : -1;
		ssize_t r = fd >= 0 ? read(fd, value, sizeof(value) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (r < 0)
			continue;
		while (r > 0 && value[r - 1] == '\n')
			r--;
		value[r] = '\0';
		if (*used < len)
			*used += (size_t)snprintf(buf + *used, len - *used, "%s=%s\n", sub, value);
		n++;
	}
	closedir(d);
	return n;
}

/* cfg's knobs as "\nPATH=VALUE" lines in buf (which starts with a newline). */
static void cfg_text(const struct nsh_netcfg *cfg, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "\n");
	const struct nsh_sysvec *vs[] = {&cfg->wide, &cfg->dev};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < vs[k]->n && used < len; i++)
			used += (size_t)snprintf(buf + used, len - used, "%s=%s\n", vs[k]->v[i].path, vs[k]->v[i].value);
}

/* 1 when each of the two texts of nref / ncfg lines has every line of the other. */
static int same_lines(const char *ref, int nref, const char *got, size_t ncfg)
{
	if ((size_t)nref != ncfg)
		return 0;
	const char *texts[2][2] = {{ref, got}, {got, ref}};
	for (int k = 0; k < 2; k++)
		for (const char *l = texts[k][0]; (l = strchr(l, '\n')) && l[1]; l++) {
			char line[8192];
			size_t n = strcspn(l + 1, "\n");
			snprintf(line, sizeof(line), "\n%.*s\n", (int)n, l + 1);
			if (!strstr(texts[k][1], line))
				return 0;
		}
	return 1;
}

static int walk_child(void)
{
	static char ref[1 << 20] = "\n", got[1 << 20];
	size_t used = 1;
	if (unshare(CLONE_NEWNET) < 0)
		return errno == EPERM ? 77 : 10;
	/* a value of its own to find under its name */
	int fd = open("/proc/sys/net/ipv4/conf/lo/arp_ignore", O_WRONLY);
	if (fd < 0 || write(fd, "2", 1) != 1)
		return 11;
	close(fd);
	int nref = walk_by_path("", ref, sizeof(ref), &used);
	struct nsh_netcfg cfg = {0};
	if (nref < 300 || nsh_netsys_walk(-1, "", &cfg) < 0)
		return 12;
	cfg_text(&cfg, got, sizeof(got));
	if (!same_lines(ref, nref, got, cfg.wide.n + cfg.dev.n))
		return 13;
	nsh_netcfg_free(&cfg);
	/* from a directory's fd: the names below the REL given, the fd closed */
	used = 1;
	nref = walk_by_path("ipv4/conf/lo", ref, sizeof(ref), &used);
	fd = open("/proc/sys/net/ipv4/conf/lo", O_RDONLY | O_DIRECTORY);
	if (nref < 10 || fd < 0 || nsh_netsys_walk(fd, "ipv4/conf/lo", &cfg) < 0)
		return 14;
	cfg_text(&cfg, got, sizeof(got));
	if (!same_lines(ref, nref, got, cfg.wide.n + cfg.dev.n) || !strstr(got, "\nipv4/conf/lo/arp_ignore=2\n"))
		return 15;
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		return 16;
	nsh_netcfg_free(&cfg);
	return 0;
}

static void test_sysctl_walk(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* a netns of its own needs root */
	pid_t p = fork();
	if (p == 0)
		_exit(walk_child());
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip(); /* no CAP_SYS_ADMIN for a netns of its own */
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parsed),
	    cmocka_unit_test(test_same_dump_equal),
	    cmocka_unit_test(test_state_changes_equal),
	    cmocka_unit_test(test_addr_flags),
	    cmocka_unit_test(test_addr_missing_appeared),
	    cmocka_unit_test(test_route_missing_appeared),
	    cmocka_unit_test(test_neigh_missing),
	    cmocka_unit_test(test_links),
	    cmocka_unit_test(test_cut_message_refused),
	    cmocka_unit_test(test_sysctl_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
