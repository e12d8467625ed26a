/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-runtime's own pieces (not the hook's): its runc-style argv and own
 * options, finding the real runtime, runc's log format, running the real
 * runtime as a child with a sized config it reads in place of the user's
 * file, signal forwarding, exit-status passing, the sibling bundle, and
 * healing what an older wrapper left in a bundle.  Not installed. */
#ifndef NSH_RUNTIME_H
#define NSH_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "oci.h"

struct stat;

/* Runtime wrapper argv (runc conventions). */
struct nsh_runtime_args {
	int subcommand_index;	/* argv index of the subcommand, -1 = none */
	const char *subcommand; /* "create", "run", "delete", ... or NULL */
	const char *root;	/* --root value or NULL */
	const char *bundle;	/* --bundle/-b value or NULL (= cwd) */
	const char *config;	/* create/run --config/-f value (crun) or NULL */
	int bundle_argi;	/* argv index holding the bundle (--bundle=V: that word), 0 = none */
	int config_argi;	/* the same for --config */
	bool bundle_inline;	/* given as --bundle=V / -b=V */
	bool config_inline;
	const char *pid_file; /* create/run --pid-file value or NULL */
	const char *id;	      /* container id or NULL */
	bool force;	      /* delete --force / -f */
	bool detach;	      /* run --detach / -d */
};
int nsh_runtime_args_parse(int argc, char *const argv[], struct nsh_runtime_args *args, struct nshash_error *err);
/* The wrapper's own options among the global ones before the command:
 * --nshash-tcp=N, --nshash-udp=N (or "--nshash-tcp N").  They are removed
 * from argv (*argc updated, argv[*argc] = NULL) and never reach the runtime;
 * on error argv is left as it was.  Sizes follow the annotations' rules; a
 * protocol not given is 0.  Unknown --nshash-* options, single-dash forms, a
 * repeated option, a bad value and (for create/run) one after the command
 * are errors naming the option. */
struct nsh_runtime_defaults {
	bool present; /* --nshash-tcp or --nshash-udp given */
	struct nshash_sizes sizes;
	bool auto_tcp, auto_udp; /* given as auto */
	struct nsh_said said;	 /* the same as a sizing source (docs/sizing.md) */
};
int nsh_runtime_own_options(int *argc, char **argv, struct nsh_runtime_defaults *defaults, struct nshash_error *err);
/* Find the real runtime: the policy's `runtime` (absolute, or a name
 * searched in PATH and the usual sbin/bin dirs), else runc, else crun;
 * never `self` (realpath). */
int nsh_runtime_find(const struct nsh_policy *policy, const char *self, char *out, size_t outlen,
		     struct nshash_error *err);

/* Append an error to a runtime log (--log FILE [--log-format json|text]) the
 * way runc does, so containerd shows it in "OCI runtime create failed". */
void nsh_runtime_log_error(const char *log_path, const char *log_format, const char *msg);
/* For the wrapper: on create, the runtime's stderr is the container's
 * stderr, so only messages up to `max` go there; all of them also go to the
 * runtime log (NULL = none) in runc's format. */
void nsh_log_wrapper_mode(enum nsh_log_level max, const char *log_path, const char *log_format);

/* The real runtime started as a child (delete of a container whose pin is
 * left): signals passed on, its wait status kept. */
struct nsh_runtime_child {
	const char *runtime; /* path to exec */
	char **argv;	     /* argv[0] = runtime, as the wrapper got it otherwise */
};

/* Catch the signals the wrapper passes on (INT TERM HUP QUIT USR1 USR2
 * WINCH) from now on.  Before a child exists they are only noted. */
void nsh_signals_catch(void);
/* The signal noted before the child existed, 0 = none. */
int nsh_signal_noted(void);
/* Start the child and wait for it: 0 and its wait status, or -errno. */
int nsh_runtime_run(const struct nsh_runtime_child *child, int *status, struct nshash_error *err);
/* Leave the way the runtime did: its exit code, or the same signal. */
__attribute__((noreturn)) void nsh_exit_as(int status);
/* Become the runtime (exec); a signal noted before ends the wrapper the
 * same way first.  Returns only on failure. */
int nsh_runtime_exec(const char *runtime, char **argv, struct nshash_error *err);

/* The wrapper's private mount namespace (a slave of the host's: the host's
 * mounts and unmounts still reach it, nothing made in it reaches the host)
 * with a tmpfs on `run_dir` (made by the caller, nshash_state_subdir): where the sized netns is pinned and the sized
 * config written, seen by the runtime the wrapper then becomes and by no
 * other process; all of it goes when the last process in it does.
 * nsh_private_enter keeps fds on the host's mount namespace and the current
 * directory in *saved (nsh_private_leave goes back, for a config that turns
 * out not to be sized). */
struct nsh_mnt_saved {
	int mnt, cwd;
};
int nsh_private_enter(const char *run_dir, struct nsh_mnt_saved *saved, struct nshash_error *err);
int nsh_private_leave(struct nsh_mnt_saved *saved, struct nshash_error *err);
/* Write `config` to RUN_DIR/config.json and bind it over `target` (the file
 * the runtime reads), opened without following a symbolic link and refused
 * unless it is the regular file `read` (dev, inode) the config was read
 * from.  Only inside the private mount namespace. */
int nsh_private_config(const char *run_dir, const char *config, size_t len, const char *target,
		       const struct stat *read, struct nshash_error *err);

/* The sibling bundle (sibling.c), for a sized container asking for shared
 * mount propagation, created in the host's mount namespace. */
/* STATE_DIR/bundles/PIN. */
int nsh_sibling_path(const char *state_dir, const char *pin, char *out, size_t len, struct nshash_error *err);
/* Make STATE_DIR/bundles/PIN (0700; one left there is replaced) holding
 * config.json = `config` with root.path and relative bind mount sources
 * made absolute against the real path of `bundle`; its path in `dir`.
 * Nothing is left on failure. */
int nsh_sibling_write(const char *state_dir, const char *pin, const char *bundle, const char *config, size_t len,
		      char *dir, size_t dir_len, struct nshash_error *err);
/* Remove a sibling bundle (its config.json, then the directory; gone
 * already is fine). */
int nsh_sibling_remove(const char *dir, struct nshash_error *err);
/* Remove the sibling bundles whose pin (STATE_DIR/pins/PIN) is gone and
 * that are older than stale_age seconds: what a container that ended
 * without delete left, once the orphan reclaim took its pin.  How many. */
int nsh_sibling_sweep(const char *state_dir, int64_t stale_age);

/* Healing (heal.c).  A config an older nshash-runtime rewrote carries an
 * io.nshash.pin and/or a network namespace path under STATE_DIR/pins/ whose
 * pin is no longer mounted, and its nshash-hook createRuntime/poststop
 * entries.  Returns 1 with *out (malloc'd) = the config without them and
 * `what` saying what went, 0 when there is nothing to heal (a live pin is
 * never touched), or -errno. */
int nsh_oci_heal(const char *config, size_t len, const struct nsh_policy *policy, char **out, size_t *out_len,
		 char *what, size_t what_len, struct nshash_error *err);

#endif
