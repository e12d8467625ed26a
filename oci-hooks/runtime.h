/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nshash-runtime's own pieces (not the hook's): running the real runtime as
 * a child with a sized config it reads in place of the user's file, signal
 * forwarding, exit-status passing, and healing what an older wrapper left in
 * a bundle.  Not installed. */
#ifndef NSHASH_RUNTIME_H
#define NSHASH_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "oci.h"

/* The real runtime to start. */
struct nsh_runtime_child {
	const char *runtime; /* path to exec */
	char **argv;	     /* argv[0] = runtime, as the wrapper got it otherwise */
	/* Optional: a config the runtime must read in place of `target` (the
	 * bundle's config.json or crun's --config file).  The child enters a
	 * private mount namespace (slave of the host's), mounts a tmpfs on
	 * `run_dir`, writes the config there and binds it over `target`; the
	 * host's file is never written. */
	const char *config;
	size_t config_len;
	const char *target;
	const char *run_dir;
};

/* Catch the signals the wrapper passes on (INT TERM HUP QUIT USR1 USR2
 * WINCH) from now on.  Before a child exists they are only noted. */
void nsh_signals_catch(void);
/* The signal noted before the child existed, 0 = none. */
int nsh_signal_noted(void);
/* Start the child and wait for it: 0 and its wait status, or -errno when
 * it could not be started (fork, the private mount namespace, exec), with
 * nothing left behind. */
int nsh_runtime_run(const struct nsh_runtime_child *child, int *status, struct nshash_error *err);
/* Leave the way the runtime did: its exit code, or the same signal. */
__attribute__((noreturn)) void nsh_exit_as(int status);
/* Exec the runtime (no child): the signals caught are handed on pending. */
int nsh_runtime_exec(const char *runtime, char **argv, struct nshash_error *err);

/* Healing (heal.c).  A config an older nshash-runtime rewrote carries an
 * io.nshash.pin and/or a network namespace path under STATE_DIR/pins/ whose
 * pin is no longer mounted, and its nshash-hook createRuntime/poststop
 * entries.  Returns 1 with *out (malloc'd) = the config without them and
 * `what` saying what went, 0 when there is nothing to heal (a live pin is
 * never touched), or -errno. */
int nsh_oci_heal(const char *config, size_t len, const struct nshash_policy *policy, char **out, size_t *out_len,
		 char *what, size_t what_len, struct nshash_error *err);
/* Rewrite PATH with DATA: temp file in the same directory + rename, same
 * mode and owner. */
int nsh_write_replacing(const char *path, const char *data, size_t len, struct nshash_error *err);

#endif
