/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-runtime: an OCI runtime wrapper called exactly like runc.  On
 * create/run it sizes the container's netns from its io.nshash.*
 * annotations (the transform of the precreate hook) in a private mount
 * namespace of its own, where the netns is pinned and the sized config bound
 * over the file the runtime reads, and then becomes the real runtime (exec,
 * argv untouched).  The user's bundle is never written, no hook runs, and
 * the pin exists only where the runtime sees it: it goes with the runtime
 * process, however that ends.  A container asking for shared mount
 * propagation is created in the host's mount namespace instead, from a
 * sibling bundle with the sized config and a pin on the host (sibling.c).
 * On delete a pin left on the host (an older version's, or a shared one's)
 * is removed once no process uses it.  The runtime's exit status is always
 * the wrapper's.
 * Policy file: $NSHASH_POLICY, else /etc/nshash/nshash.json. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

static const char *log_path, *log_format;

__attribute__((noreturn)) static void die(const char *id, const char *msg)
{
	nsh_log(NSH_LOG_ERROR, id, "%s", msg);
	exit(1);
}

/* --log / --log-format from the global options, for runc-style error logs. */
static void find_log(int argc, char **argv, int stop)
{
	for (int i = 1; i < stop && i < argc; i++) {
		const char *a = argv[i] + (argv[i][0] == '-' && argv[i][1] == '-');
		if (!strcmp(a, "-log") && i + 1 < stop)
			log_path = argv[i + 1];
		else if (!strncmp(a, "-log=", 5))
			log_path = a + 5;
		else if (!strcmp(a, "-log-format") && i + 1 < stop)
			log_format = argv[i + 1];
		else if (!strncmp(a, "-log-format=", 12))
			log_format = a + 12;
	}
}

static void drop_pin(const char *id, const char *pin_path)
{
	struct nshash_error err;

	if (nshash_pin_remove(pin_path, &err) < 0)
		nsh_log(NSH_LOG_WARN, id, "%s", err.msg);
}

/* The file the runtime will read: crun's --config/-f (relative to the
 * current directory, as crun takes it), else BUNDLE/config.json. */
static void config_target(const struct nsh_runtime_args *args, char *out, size_t len)
{
	const char *bundle = args->bundle ? args->bundle : ".";
	struct nshash_error err = {0};
	struct stat st;

	if (args->config) {
		snprintf(out, len, "%s", args->config);
		return;
	}
	if (stat(bundle, &st) < 0)
		nsh_error_sys(&err, errno, "bundle %s", bundle);
	else if (!S_ISDIR(st.st_mode))
		nshash_error_set(&err, ENOTDIR, "bundle %s: not a directory", bundle);
	else if ((size_t)snprintf(out, len, "%s/config.json", bundle) >= len)
		nshash_error_set(&err, ENAMETOOLONG, "bundle %.100s...: path too long", bundle);
	if (err.msg[0])
		die(args->id, err.msg);
}

/* Read the config (the file itself, never through a symbolic link: *st is
 * the file the sized config is later bound over); heal what an older
 * wrapper left in it (rewriting the file once).  The text to transform,
 * malloc'd. */
static char *read_config(const char *id, const char *bundle, const char *target, const struct nsh_policy *policy,
			 size_t *len, struct stat *st)
{
	struct nshash_error err = {0};
	char *text, *healed, what[600];
	size_t healed_len;
	int r = nsh_read_file_flags(target, O_NOFOLLOW, NSH_OCI_CONFIG_MAX_BYTES, &text, len, st, &err);

	if (r < 0) {
		if (bundle)
			nshash_error_prefix(&err, "bundle %s", bundle);
		if (S_ISLNK(st->st_mode)) {
			char why[sizeof(err.msg)];
			snprintf(why, sizeof(why), "%s", err.msg);
			nshash_error_set(
			    &err, ELOOP,
			    "%s: nshash-runtime binds the sized config over the file the runtime reads and "
			    "follows no symbolic link to it; make it a regular file",
			    why);
		}
		die(id, err.msg);
	}
	/* cheap test first: a leftover names a pin */
	if (!memmem(text, *len, "/pins/", 6) && !memmem(text, *len, NSH_ANNOTATION_PIN, strlen(NSH_ANNOTATION_PIN)))
		return text;
	r = nsh_oci_heal(text, *len, policy, &healed, &healed_len, what, sizeof(what), &err);
	if (r <= 0) {
		if (r < 0)
			die(id, err.msg);
		return text;
	}
	char shown[PATH_MAX];
	if (!realpath(target, shown))
		snprintf(shown, sizeof(shown), "%s", target);
	struct stat was;
	if (stat(target, &was) < 0)
		nsh_log(NSH_LOG_WARN, id, "rewrite %s: %s (left as it was)", target, strerror(errno));
	else if (nsh_write_replace(target, NULL, healed, healed_len, &was, &err) < 0) /* same owner and mode */
		nsh_log(NSH_LOG_WARN, id, "%s (left as it was)", err.msg);
	else if (lstat(target, st) < 0 || !S_ISREG(st->st_mode)) /* the new inode is what is bound over */
		die(id, "the healed config is no longer a regular file (replaced meanwhile): try again");
	else
		nsh_log(NSH_LOG_INFO, id, "healed %s: removed what an older nshash-runtime left there (%s)", shown,
			what);
	free(text);
	*len = healed_len;
	return healed;
}

/* What the wrapper must know of a config before the transform, from one
 * parse (the transform parses it again, and says what is wrong with it). */
struct look {
	int asks;	  /* sizes asked (annotations, else --nshash-tcp/--nshash-udp, else the
			     policy's defaultTcp/defaultUdp): 1 yes, 0 no, -1 a bad request */
	bool named;	  /* the config names io.nshash.* */
	struct nshash_sizes sizes;
	bool is_auto;
	bool own_netns;	  /* a network entry without a path: a netns of its own, the one the
			     policy's defaults can size (the host's network and a joined netns run
			     unsized: no spare is taken for them) */
	bool new_userns;  /* a user namespace of its own */
	bool shared;	  /* mounts that must reach the host */
};

/* The request of a parsed config's annotations: 0, or -1 when the config
 * or its annotations are bad (the transform says why). */
static int look_request(int parsed, struct json_object *doc, struct nsh_oci_request *req)
{
	struct json_object *ann = NULL;
	struct nshash_error err;
	if (parsed < 0 || !json_object_is_type(doc, json_type_object))
		return -1;
	json_object_object_get_ex(doc, "annotations", &ann);
	return nsh_oci_request_from_annotations(ann, req, &err) < 0 ? -1 : 0;
}

/* Cheap where it can be: a config that names no nshash, on a node
 * without defaults and without --nshash-tcp/--nshash-udp, is not parsed. */
static void config_look(const char *text, size_t len, const struct nsh_runtime_defaults *d,
			const struct nsh_policy *policy, struct look *lk)
{
	struct nsh_oci_request req = {0};
	struct nshash_error err;
	struct nsh_decision dec;
	struct json_object *doc = NULL;

	memset(lk, 0, sizeof(*lk));
	lk->named = memmem(text, len, NSH_ANNOTATION_PREFIX, strlen(NSH_ANNOTATION_PREFIX)) != NULL;
	/* parsed: 0 (doc), -1 not JSON, 1 not parsed yet */
	int parsed = lk->named ? nsh_json_parse_text(text, len, "config", &doc, &err) : 1;
	if (lk->named && look_request(parsed, doc, &req) < 0) {
		lk->asks = -1;
		goto out;
	}
	/* the transform's decision, per protocol (docs/sizing.md) */
	nsh_oci_decide(policy, d->present ? &d->said : NULL, &req, &dec);
	lk->sizes = req.sizes;
	lk->is_auto = req.auto_tcp || req.auto_udp;
	lk->asks = lk->sizes.tcp || lk->sizes.udp || lk->is_auto;
	if (!lk->asks)
		goto out;
	if (parsed > 0)
		parsed = nsh_json_parse_text(text, len, "config", &doc, &err);
	lk->own_netns = parsed < 0; /* a bad config: the transform reports it */
	if (parsed == 0 && json_object_is_type(doc, json_type_object)) {
		lk->own_netns = nsh_oci_network_entry(doc) && !nsh_oci_namespace_path(doc, "network");
		lk->new_userns = nsh_oci_wants_new_userns(doc);
		lk->shared = nsh_oci_doc_wants_shared(doc);
	}
out:
	json_object_put(doc);
}

/* In the host's mount namespace, before the private one: take a spare of
 * the requested sizes (the transform pins it if it sizes the container
 * with them) and fork the child that makes the next one once the container
 * is sized (*go; a refused start refills nothing). */
static void spare_get(const struct nsh_policy *policy, struct nshash_sizes sizes, struct nsh_oci_spare *spare, int *go)
{
	struct nshash_create_opts copts = nsh_policy_create_opts(policy, sizes);
	struct nshash_error ignored;
	spare->fd = -1;
	*go = -1;
	/* only sizes the policy allows: a refused request must not leave a
	 * spare (nor a template) of its sizes behind */
	if (nshash_sizes_cap(sizes, policy->max, "policy", &ignored) < 0)
		return;
	if (policy->spares && nshash_spare_take(&copts, &spare->fd, &spare->info) == 1)
		spare->sizes = sizes;
	*go = nsh_spares_refill_gated(&copts);
}

/* The argv the runtime gets for a sibling bundle DIR: runc's --bundle
 * value replaced, or --bundle DIR added after the command; crun (by_config)
 * keeps its bundle and gets --config DIR/config.json the same way.
 * malloc'd (the wrapper execs right after). */
static char **argv_for_sibling(int argc, char **argv, const struct nsh_runtime_args *args, const char *dir,
			       bool by_config)
{
	char **out = calloc((size_t)argc + 3, sizeof(*out)), *cfg;
	const char *name = by_config ? "--config" : "--bundle", *value = dir;
	int at = by_config ? args->config_argi : args->bundle_argi, o = 0;
	bool inline_ = by_config ? args->config_inline : args->bundle_inline;

	if (!out || asprintf(&cfg, "%s/config.json", dir) < 0)
		die(args->id, "out of memory");
	if (by_config)
		value = cfg;
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (i == at && i > 0 && asprintf(&a, "%s%s%s", inline_ ? name : "", inline_ ? "=" : "", value) < 0)
			die(args->id, "out of memory");
		out[o++] = a;
		if (i == args->subcommand_index && at == 0) {
			out[o++] = (char *)name;
			out[o++] = (char *)value;
		}
	}
	out[o] = NULL;
	return out;
}

/* Does the runtime take the config's path (crun's --config)?  runc reads
 * BUNDLE/config.json only. */
static bool takes_config(const char *runtime)
{
	const char *base = strrchr(runtime, '/');
	return !strcmp(base ? base + 1 : runtime, "crun");
}

/* create / run of a sized container asking for shared mount propagation:
 * in the host's mount namespace, where the container's mounts reach the
 * host.  The netns is pinned on the host (STATE_DIR/pins/PIN: delete or the
 * orphan reclaim removes it) and the runtime is given the sibling bundle
 * STATE_DIR/bundles/PIN; the user's bundle stays untouched.  The argv to
 * exec, or NULL when the transform did not size (exec as it was). */
static char **wrap_create_shared(int argc, char **argv, const struct nsh_runtime_args *args, char *text, size_t len,
				 const char *target, struct nsh_oci_opts *opts, int refill, bool by_config)
{
	struct nshash_error err = {0};
	struct nsh_oci_result res;
	struct nshash_occupancy occ;
	char *sized, dir[PATH_MAX], pin_path[PATH_MAX];
	size_t sized_len;

	opts->pin_path = NULL; /* under STATE_DIR/pins */
	/* one a killed create of this id left, if nothing uses it */
	if (nsh_oci_pin_path(opts->policy, opts->pin_name, pin_path, sizeof(pin_path), &err) == 0 &&
	    nshash_pin_is_netns(pin_path, &err) == 1 && nshash_netns_occupancy(pin_path, &occ, &err) == 0 &&
	    occ.pid == 0)
		drop_pin(args->id, pin_path);
	if (nsh_oci_transform(text, len, opts, &sized, &sized_len, &res, &err) < 0) {
		nshash_error_prefix(&err, "%s", target);
		die(args->id, err.msg);
	}
	free(text);
	if (opts->spare && opts->spare->fd >= 0)
		close(opts->spare->fd);
	nsh_oci_log_result(args->id, &res);
	if (res.action != NSH_OCI_SIZED) {
		free(sized);
		return NULL;
	}
	if (nsh_sibling_write(opts->policy->state_dir, opts->pin_name, args->bundle ? args->bundle : ".", sized,
			      sized_len, dir, sizeof(dir), &err) < 0) {
		drop_pin(args->id, res.pin_path);
		die(args->id, err.msg);
	}
	free(sized);
	nsh_log(NSH_LOG_INFO, args->id,
		"shared mount propagation asked: created in the host's mount namespace from the sized config in %s "
		"(%s untouched)",
		dir, target);
	nsh_spares_refill_go(refill);
	return argv_for_sibling(argc, argv, args, dir, by_config);
}

/* create / run: size in the private mount namespace, become the runtime.
 * The argv to exec: argv, or the one for a sibling bundle. */
static char **wrap_create(int argc, char **argv, const struct nsh_policy *policy, const struct nsh_runtime_args *args,
			  const struct nsh_runtime_defaults *defaults, bool by_config)
{
	struct nshash_error err = {0};
	struct nsh_oci_result res;
	struct nsh_mnt_saved saved = {-1, -1};
	char pin[300], pin_path[1200], userns_pin[1200], target[PATH_MAX], run_dir[1100], *text, *sized;
	size_t len, sized_len;
	struct nsh_oci_opts opts = {
	    .mode = NSH_OCI_WRAPPER,
	    .policy = policy,
	    .pin_name = pin,
	    .pin_path = pin_path,
	    .runtime = defaults->present ? &defaults->said : NULL,
	    .container_id = args->id,
	};

	if (!args->id)
		die(NULL, "create: no container id in the arguments");
	if (nsh_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0)
		die(NULL, err.msg); /* names the bad id */
	config_target(args, target, sizeof(target));
	struct stat config_st = {0};
	text = read_config(args->id,
			   args->config	  ? NULL
			   : args->bundle ? args->bundle
					  : ".",
			   target, policy, &len, &config_st);
	struct look lk;
	config_look(text, len, defaults, policy, &lk);
	int asks = lk.asks;
	if (asks == 0) {
		free(text);
		return argv; /* exec */
	}
	/* STATE/run, and STATE itself on the first start after a boot: made
	 * (0700) or checked here, on the host, before the private namespace
	 * (and before a refused state dir could have a spare made) */
	if (asks > 0 && nshash_state_subdir(policy->state_dir, "run", run_dir, sizeof(run_dir), &err) < 0)
		die(args->id, err.msg);
	struct nsh_oci_spare spare = {.fd = -1};
	int refill = -1;
	/* the policy's defaults for a container that joins a netns: the
	 * transform only logs that it runs unsized */
	if (asks > 0 && !defaults->present && !lk.named && !lk.own_netns)
		asks = -1;
	/* a container with a user namespace of its own gets a netns that
	 * user namespace owns, whatever the source of its sizes: never a
	 * spare (the host's) */
	if (asks > 0 && !lk.new_userns && !lk.is_auto) { /* auto: the sizes are known in the transform */
		spare_get(policy, lk.sizes, &spare, &refill);
		opts.spare = &spare;
	}
	if (asks > 0 && lk.shared) {
		char **shared = wrap_create_shared(argc, argv, args, text, len, target, &opts, refill, by_config);
		return shared ? shared : argv;
	}
	snprintf(run_dir, sizeof(run_dir), "%s/run", policy->state_dir);
	snprintf(pin_path, sizeof(pin_path), "%s/netns", run_dir);
	snprintf(userns_pin, sizeof(userns_pin), "%s/userns", run_dir);
	opts.userns_pin_path = userns_pin; /* the same life as the netns pin: the private tmpfs's */
	if (asks > 0 && nsh_private_enter(run_dir, &saved, &err) < 0)
		die(args->id, err.msg);
	if (nsh_oci_transform(text, len, &opts, &sized, &sized_len, &res, &err) < 0) {
		nshash_error_prefix(&err, "%s", target);
		die(args->id, err.msg);
	}
	free(text);
	if (spare.fd >= 0)
		close(spare.fd); /* pinned now, or not wanted after all */
	nsh_oci_log_result(args->id, &res);
	if (res.action != NSH_OCI_SIZED) {
		/* the runtime joins the netns the config names, from the host's
		 * mount namespace as it would without nshash */
		free(sized);
		if (saved.mnt >= 0 && nsh_private_leave(&saved, &err) < 0)
			die(args->id, err.msg);
		return argv;
	}
	if (saved.mnt < 0) { /* sized although the request looked bad: never pin on the host */
		drop_pin(args->id, res.pin_path);
		die(args->id, "internal error: sized outside the private mount namespace");
	}
	if (nsh_private_config(run_dir, sized, sized_len, target, &config_st, &err) < 0)
		die(args->id, err.msg);
	free(sized);
	nsh_spares_refill_go(refill); /* sized: the next one of its sizes is made meanwhile */
	close(saved.mnt);
	close(saved.cwd);
	return argv;
}

/* delete: nothing to do unless a pin is left for this container (by an
 * older version, or for a container with shared mount propagation, with
 * its sibling bundle): then delete, and remove the pin once no process
 * uses its netns, and the sibling bundle with it.  Never asks `state`. */
static int wrap_delete(char **argv, const char *runtime, const struct nsh_policy *policy,
		       const struct nsh_runtime_args *args)
{
	struct nshash_error err = {0};
	struct nshash_occupancy occ;
	char pin[300], pin_path[4096], sib[PATH_MAX];
	struct stat st;
	int status;

	if (nsh_oci_wrapper_pin_name(args->id, args->root, pin, sizeof(pin), &err) < 0 ||
	    nsh_oci_pin_path(policy, pin, pin_path, sizeof(pin_path), &err) < 0 ||
	    nsh_sibling_path(policy->state_dir, pin, sib, sizeof(sib), &err) < 0)
		return -1;
	bool has_pin = lstat(pin_path, &st) == 0 || errno != ENOENT;
	bool has_sib = lstat(sib, &st) == 0;
	if (!has_pin && !has_sib)
		return -1;
	struct nsh_runtime_child child = {.runtime = runtime, .argv = argv};
	if (nsh_runtime_run(&child, &status, &err) < 0)
		die(args->id, err.msg);
	bool gone = !has_pin;
	if (has_pin && nshash_pin_is_netns(pin_path, &err) != 1)
		drop_pin(args->id, pin_path), gone = true; /* a stale pin file */
	else if (has_pin && nshash_netns_occupancy(pin_path, &occ, &err) < 0)
		nsh_log(NSH_LOG_WARN, args->id, "keeping pin %s: %s", pin_path, err.msg);
	else if (has_pin && occ.pid == 0)
		nsh_oci_auto_teardown(policy, pin_path, args->id), drop_pin(args->id, pin_path), gone = true;
	/* the sibling goes with the pin (a poststop hook of this delete read it) */
	if (has_sib && gone && nsh_sibling_remove(sib, &err) < 0)
		nsh_log(NSH_LOG_WARN, args->id, "%s", err.msg);
	nsh_exit_as(status);
}

/* `nshash-runtime --version` (or -v, --help, -h) before any command: say
 * who we are first, then the real runtime answers.  Engines that parse the
 * runtime's version (docker's "runc version X" line) still find theirs. */
static void say_who(int argc, char **argv, const struct nsh_runtime_args *args, const char *runtime)
{
	int end = args->subcommand_index < 0 ? argc : args->subcommand_index;
	for (int i = 1; i < end; i++) {
		bool version = !strcmp(argv[i], "--version") || !strcmp(argv[i], "-v");
		bool help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
		if (version)
			printf("nshash-runtime version %s (nshash's wrapper, sizes network namespaces; runtime: %s)\n",
			       NSHASH_VERSION, runtime);
		else if (help)
			printf("nshash-runtime %s: called like runc; sizes the network namespace of containers with "
			       "io.nshash.tcp/io.nshash.udp annotations (else --nshash-tcp/--nshash-udp, else the "
			       "policy's defaultTcp/defaultUdp), then runs %s "
			       "(man nshash-runtime).  %s's own help follows.\n\n",
			       NSHASH_VERSION, runtime, runtime);
		if (version || help) {
			fflush(stdout);
			return;
		}
	}
}

int main(int argc, char **argv)
{
	const char *policy_path = nsh_policy_env();
	struct nsh_policy policy;
	struct nsh_runtime_args args;
	struct nsh_runtime_defaults defaults;
	struct nshash_error err = {0};
	char self[PATH_MAX], runtime[PATH_MAX];
	ssize_t n;

	nsh_signals_catch();
	nsh_policy_defaults(&policy); /* syslog too, before the policy is read */
	nsh_log_setup("nshash-runtime", &policy);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die(NULL, "readlink /proc/self/exe failed");
	self[n] = '\0';
	int own = nsh_runtime_own_options(&argc, argv, &defaults, &err);
	if (own == 0 && nsh_runtime_args_parse(argc, argv, &args, &err) < 0)
		own = -1;
	if (own < 0) {
		/* still tell the engine why, through the runtime log it reads */
		struct nshash_error ignored = {0};
		nsh_runtime_args_parse(argc, argv, &args, &ignored);
		find_log(argc, argv, args.subcommand_index < 0 ? argc : args.subcommand_index);
		nsh_log_wrapper_mode(NSH_LOG_ERROR, log_path, log_format);
		die(NULL, err.msg);
	}
	find_log(argc, argv, args.subcommand_index < 0 ? argc : args.subcommand_index);
	nsh_log_wrapper_mode(NSH_LOG_ERROR, log_path, log_format);
	if (nsh_policy_load(policy_path, &policy, &err) < 0)
		die(args.id, err.msg);
	nsh_log_setup("nshash-runtime", &policy);
	if (nsh_runtime_find(&policy, self, runtime, sizeof(runtime), &err) < 0)
		die(args.id, err.msg);
	argv[0] = runtime;
	say_who(argc, argv, &args, runtime);

	/* Orphans of containers whose create failed after the hook pinned them
	 * (one stat, but for one call per reclaimInterval).  Before anything
	 * of this run is made: no run ever reclaims its own pin. */
	char msg[1400];
	if (nsh_reclaim_orphans(policy.state_dir, policy.stale_age, policy.reclaim_interval, msg, sizeof(msg)))
		nsh_log(NSH_LOG_INFO, args.id, "%s", msg);
	int swept = nsh_sibling_sweep(policy.state_dir, policy.stale_age);
	if (swept > 0)
		nsh_log(NSH_LOG_INFO, args.id, "removed %d sibling bundle(s) under %s/bundles whose pin is gone", swept,
			policy.state_dir);

	/* everything but delete with a leftover pin ends in this exec */
	char **exec_argv = argv;
	if (args.subcommand && (!strcmp(args.subcommand, "create") || !strcmp(args.subcommand, "run")))
		exec_argv = wrap_create(argc, argv, &policy, &args, &defaults, takes_config(runtime));
	else if (args.subcommand && !strcmp(args.subcommand, "delete") && args.id)
		wrap_delete(argv, runtime, &policy, &args);
	if (nsh_runtime_exec(runtime, exec_argv, &err) < 0)
		die(args.id, err.msg);
	return 1;
}
