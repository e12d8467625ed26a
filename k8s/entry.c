/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash's entry and the configs it goes into: the entry read once (the
 * ConfigMap's), whether a config names nshash, a plugin list with
 * nshash's entry first or taken out, the primary's file as a list to
 * merge into. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s.h"

/* The entry, once: an object of type nshash, or entry_error says why. */
void k8s_entry_load(struct k8s_ctx *c)
{
	struct nshash_error e;
	json_object *t;
	bool unreadable;
	if (nsh_json_read_file(c->o->entry_path, 1u << 20, &c->entry, &unreadable, &e) < 0) {
		snprintf(c->entry_error, sizeof(c->entry_error),
			 unreadable ? "nshash's entry: %s (mount the ConfigMap there, or name it with --entry)"
				    : "nshash's entry: %s (fix the ConfigMap)",
			 e.msg);
		return;
	}
	if (!json_object_is_type(c->entry, json_type_object) || !json_object_object_get_ex(c->entry, "type", &t) ||
	    !json_object_is_type(t, json_type_string) || strcmp(json_object_get_string(t), "nshash")) {
		snprintf(c->entry_error, sizeof(c->entry_error),
			 "nshash's entry %s: not a JSON object with \"type\": \"nshash\" (fix the ConfigMap)",
			 c->o->entry_path);
		json_object_put(c->entry);
		c->entry = NULL;
		return;
	}
	/* stamped: the plugin tells a pod over the cap to change the
	 * ConfigMap, not this node's conflist (which the watcher reverts) */
	json_object_object_add(c->entry, "chainedBy", json_object_new_string(NSH_K8S_INSTALLER));
}

bool k8s_is_nshash(json_object *p)
{
	json_object *t;
	return json_object_is_type(p, json_type_object) && json_object_object_get_ex(p, "type", &t) &&
	       json_object_is_type(t, json_type_string) && !strcmp(json_object_get_string(t), "nshash");
}

/* The JSON is nshash's plugin or a list naming it. */
bool k8s_names_nshash(json_object *j)
{
	json_object *plugins;
	if (k8s_is_nshash(j))
		return true;
	if (!json_object_object_get_ex(j, "plugins", &plugins) || !json_object_is_type(plugins, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(plugins); i++)
		if (k8s_is_nshash(json_object_array_get_idx(plugins, i)))
			return true;
	return false;
}

/* The list without nshash's entries, entry (a copy) first when not NULL.
 * Returns how many nshash entries there were. */
size_t k8s_plugins_replace(json_object *list, json_object *entry)
{
	json_object *plugins, *out = json_object_new_array();
	size_t had = 0;
	json_object_object_get_ex(list, "plugins", &plugins);
	if (entry) {
		json_object *copy = NULL;
		json_object_deep_copy(entry, &copy, NULL);
		json_object_array_add(out, copy);
	}
	for (size_t i = 0; i < json_object_array_length(plugins); i++) {
		json_object *p = json_object_array_get_idx(plugins, i);
		if (k8s_is_nshash(p))
			had++;
		else
			json_object_array_add(out, json_object_get(p));
	}
	json_object_object_add(list, "plugins", out);
	return had;
}

char *k8s_serialized(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, K8S_JSON_OUT);
	char *t = malloc(strlen(s) + 2);
	if (t)
		sprintf(t, "%s\n", s);
	return t;
}

/* What is wrong with the primary's file as nshash would chain into it
 * (NULL: nothing); the list to merge into (a copy, or a .conf made a list). */
const char *k8s_primary_list(const struct k8s_file *f, bool is_list, json_object **list)
{
	json_object *plugins, *t;
	*list = NULL;
	if (!json_object_is_type(f->json, json_type_object))
		return "it is not a JSON object";
	if (is_list) {
		if (!json_object_object_get_ex(f->json, "plugins", &plugins) ||
		    !json_object_is_type(plugins, json_type_array))
			return "it has no \"plugins\" list";
		if (json_object_array_length(plugins) == 0)
			return "its \"plugins\" list is empty (nshash never becomes a network of its own)";
		for (size_t i = 0; i < json_object_array_length(plugins); i++) {
			json_object *p = json_object_array_get_idx(plugins, i);
			if (!json_object_is_type(p, json_type_object) || !json_object_object_get_ex(p, "type", &t) ||
			    !json_object_is_type(t, json_type_string) || !*json_object_get_string(t))
				return "a plugin of its \"plugins\" list has no \"type\" string";
		}
		json_object_deep_copy(f->json, list, NULL);
		return NULL;
	}
	if (!json_object_object_get_ex(f->json, "type", &t) || !json_object_is_type(t, json_type_string) ||
	    !*json_object_get_string(t))
		return "a single-plugin config without a \"type\" string (libcni would refuse it too)";
	json_object *one = NULL, *v;
	json_object_deep_copy(f->json, &one, NULL);
	*list = json_object_new_object();
	if (json_object_object_get_ex(one, "cniVersion", &v))
		json_object_object_add(*list, "cniVersion", json_object_get(v));
	if (json_object_object_get_ex(one, "name", &v))
		json_object_object_add(*list, "name", json_object_get(v));
	json_object_object_del(one, "cniVersion");
	json_object_object_del(one, "name");
	plugins = json_object_new_array();
	json_object_array_add(plugins, one);
	json_object_object_add(*list, "plugins", plugins);
	return NULL;
}

int k8s_conf_mentioning_nshash(const struct k8s_opts *o, char *name, size_t len)
{
	struct nshash_error e;
	char **v = k8s_conf_files(o->net_dir, NULL, NULL, &e);
	int found = 0;
	for (size_t i = 0; v && v[i] && !found; i++) {
		struct k8s_file f;
		json_object *plugins = NULL;
		if (k8s_file_read(o->net_dir, v[i], &f, &e) < 0)
			continue;
		if (f.json && (k8s_is_nshash(f.json) || (json_object_object_get_ex(f.json, "plugins", &plugins) &&
							 json_object_is_type(plugins, json_type_array)))) {
			for (size_t j = 0; !found && plugins && j < json_object_array_length(plugins); j++)
				found = k8s_is_nshash(json_object_array_get_idx(plugins, j));
			found = found || k8s_is_nshash(f.json);
			if (found)
				snprintf(name, len, "%s/%s", o->net_dir, v[i]);
		}
		k8s_file_free(&f);
	}
	k8s_names_free(v);
	return found;
}
