/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Kubernetes installer's chain and unchain over a CNI config dir of
 * its own (a temporary dir), with the shipped entry and the plugin built
 * here (its VERSION and STATUS): nshash first in the active conflist, the
 * original kept byte for byte (also across a hand edit of the chained
 * file), nothing done twice, a primary it cannot chain into left as it
 * was, and uninstall restoring every byte and leaving nothing of its own. */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "k8s.h"

#ifndef NSH_TEST_ROOT
#error "NSH_TEST_ROOT: the source tree (the Makefile defines it)"
#endif
#ifndef NSH_TEST_BUILD
#error "NSH_TEST_BUILD: the build dir with cni/nshash (the Makefile defines it)"
#endif

static const char bridge_list[] = "{\n  \"cniVersion\": \"1.0.0\",\n  \"name\": \"k8s-pod-network\",\n"
				  "  \"plugins\": [ {\"type\": \"bridge\", \"bridge\": \"cni0\"} ]\n}\n";

struct fixture {
	char dir[64];
	struct k8s_opts o;
	struct k8s_ctx c;
};

static void put(const char *dir, const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static char *get(const char *dir, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The names in dir, sorted, space separated. */
static const char *names(const char *dir)
{
	static char out[1024];
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);
	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "", v[i]->d_name);
		free(v[i]);
	}
	free(v);
	return out;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/nshash-unit-k8s-XXXXXX");
	if (!fx || !mkdtemp(fx->dir))
		return -1;
	fx->o = (struct k8s_opts){.bin_dir = NSH_TEST_BUILD "/cni",
				  .net_dir = fx->dir,
				  .plugin = NSH_TEST_BUILD "/cni/nshash",
				  .entry_path = NSH_TEST_ROOT "/packaging/kubernetes/nshash-entry.json",
				  .conf_name = "",
				  .run_dir = ""};
	fx->c.o = &fx->o;
	k8s_entry_load(&fx->c);
	struct nshash_error e = {0};
	if (!fx->c.entry || k8s_plugin_versions(fx->o.plugin, fx->c.versions, sizeof(fx->c.versions), &e) < 0) {
		fprintf(stderr, "# set-up: %s%s\n", fx->c.entry_error, e.msg);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	DIR *d = opendir(fx->dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(fx->dir);
	json_object_put(fx->c.entry);
	free(fx);
	return 0;
}

static enum k8s_pass chain(struct fixture *fx, struct nshash_error *e)
{
	char done[4200];
	int lock = k8s_lock(fx->dir, e);
	assert_true(lock >= 0);
	enum k8s_pass p = k8s_chain(&fx->c, done, sizeof(done), e);
	k8s_unlock(lock);
	return p;
}

/* plugins[i].type of DIR/NAME */
static const char *type_at(const char *dir, const char *name, size_t i)
{
	static char out[64];
	json_object *j = json_tokener_parse(get(dir, name)), *pl;
	out[0] = '\0';
	if (j && json_object_object_get_ex(j, "plugins", &pl) && i < json_object_array_length(pl)) {
		json_object *t;
		if (json_object_object_get_ex(json_object_array_get_idx(pl, i), "type", &t))
			snprintf(out, sizeof(out), "%s", json_object_get_string(t));
	}
	json_object_put(j);
	return out;
}

static void test_chain_unchain(void **state)
{
	struct fixture *fx = *state;
	struct nshash_error e = {0};
	put(fx->dir, "10-bridge.conflist", bridge_list);
	put(fx->dir, "99-loopback.conf", "{\"cniVersion\": \"1.0.0\", \"name\": \"lo\", \"type\": \"loopback\"}\n");

	assert_int_equal(chain(fx, &e), K8S_WROTE);
	assert_string_equal(type_at(fx->dir, "10-bridge.conflist", 0), "nshash");
	assert_string_equal(type_at(fx->dir, "10-bridge.conflist", 1), "bridge");
	assert_non_null(strstr(get(fx->dir, "10-bridge.conflist"), "\"chainedBy\""));
	assert_string_equal(get(fx->dir, "10-bridge.conflist" K8S_ORIG_EXT), bridge_list);
	assert_int_equal(k8s_chained(&fx->c, &e), 0);
	/* the file libcni does not load is left alone */
	assert_string_equal(type_at(fx->dir, "99-loopback.conf", 0), "");
	/* nothing twice */
	assert_int_equal(chain(fx, &e), K8S_UNCHANGED);

	/* a hand edit of nshash's entry in the chained file (the ConfigMap is
	 * where it lives): reverted, and the saved original keeps the
	 * original's own bytes, never a reformatted copy (issue 30) */
	char *chained = strdup(get(fx->dir, "10-bridge.conflist"));
	char *at = strstr(chained, "65536");
	assert_non_null(at);
	memcpy(at, "99999", 5);
	put(fx->dir, "10-bridge.conflist", chained);
	assert_int_equal(chain(fx, &e), K8S_WROTE);
	assert_null(strstr(get(fx->dir, "10-bridge.conflist"), "99999"));
	assert_string_equal(get(fx->dir, "10-bridge.conflist" K8S_ORIG_EXT), bridge_list);
	free(chained);
	assert_int_equal(k8s_unchain(&fx->o, &e), 0);
	assert_string_equal(get(fx->dir, "10-bridge.conflist"), bridge_list);
	assert_string_equal(names(fx->dir), "10-bridge.conflist 99-loopback.conf");

	/* the primary rewrites its file (nshash gone, its own change): that
	 * is the original now, and uninstall puts back the primary's bytes */
	assert_int_equal(chain(fx, &e), K8S_WROTE);
	const char *rewritten = "{\"cniVersion\": \"1.0.0\", \"name\": \"k8s-pod-network\", "
				"\"plugins\": [{\"type\": \"bridge\", \"bridge\": \"cni0\", \"mtu\": 1400}]}";
	put(fx->dir, "10-bridge.conflist", rewritten);
	assert_int_equal(chain(fx, &e), K8S_WROTE);
	assert_string_equal(type_at(fx->dir, "10-bridge.conflist", 0), "nshash");
	assert_string_equal(get(fx->dir, "10-bridge.conflist" K8S_ORIG_EXT), rewritten);
	assert_int_equal(k8s_unchain(&fx->o, &e), 0);
	assert_string_equal(get(fx->dir, "10-bridge.conflist"), rewritten);
	assert_string_equal(names(fx->dir), "10-bridge.conflist 99-loopback.conf");
	/* and again: nothing to restore, nothing changed */
	assert_int_equal(k8s_unchain(&fx->o, &e), 0);
	assert_string_equal(names(fx->dir), "10-bridge.conflist 99-loopback.conf");
}

static void test_chain_refused(void **state)
{
	struct fixture *fx = *state;
	struct nshash_error e = {0};
	/* a cniVersion the plugin does not speak: refused, nothing written */
	const char *odd = "{\"cniVersion\": \"9.9.9\", \"name\": \"n\", \"plugins\": [{\"type\": \"bridge\"}]}\n";
	put(fx->dir, "10-odd.conflist", odd);
	assert_int_equal(chain(fx, &e), K8S_REFUSED);
	assert_non_null(strstr(e.msg, "9.9.9"));
	assert_string_equal(get(fx->dir, "10-odd.conflist"), odd);
	assert_string_equal(names(fx->dir), "10-odd.conflist");
	/* not JSON: refused, left as it was */
	put(fx->dir, "10-odd.conflist", "{");
	assert_int_equal(chain(fx, &e), K8S_REFUSED);
	assert_string_equal(get(fx->dir, "10-odd.conflist"), "{");
	assert_string_equal(names(fx->dir), "10-odd.conflist");
	assert_true(k8s_chained(&fx->c, &e) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_chain_unchain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
