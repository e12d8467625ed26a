/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the plugin prints: results, version info, error objects; and its
 * log lines for stderr. */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cni.h"

/* The errno that goes with a CNI code. */
static int code_errno(int code)
{
	switch (code) {
	case NSH_CNI_E_IO:
		return EIO;
	case NSH_CNI_E_NOT_READY:
		return EOPNOTSUPP;
	case NSH_CNI_E_NOT_RESIZABLE:
		return EBUSY;
	case NSH_CNI_E_FALLBACK:
		return NSHASH_E_FALLBACK;
	case NSH_CNI_E_MISMATCH:
		return NSHASH_E_MISMATCH;
	default:
		return EINVAL;
	}
}

int nsh_cni_fail(struct nsh_cni_failure *fail, int code, const char *details, const char *fmt, ...)
{
	char raw[sizeof(fail->err.msg)];
	va_list ap;
	fail->code = code;
	fail->err.errnum = code_errno(code);
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* ids, names and paths come from the runtime and the pod, and runtimes
	 * log msg as it is: no control character in it */
	nshash_escape(raw, fail->err.msg, sizeof(fail->err.msg));
	nshash_escape(details ? details : "", fail->details, sizeof(fail->details));
	return -fail->err.errnum;
}

char *nsh_cni_error_json(const char *cni_version, const struct nsh_cni_failure *fail)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "cniVersion", json_object_new_string(cni_version ? cni_version : CNI_LATEST));
	json_object_object_add(o, "code", json_object_new_int(fail->code));
	json_object_object_add(o, "msg", json_object_new_string(fail->err.msg));
	if (fail->details[0])
		json_object_object_add(o, "details", json_object_new_string(fail->details));
	char *s = strdup(json_object_to_json_string_ext(o, JSON_OUT_FLAGS));
	json_object_put(o);
	return s;
}

static void log_sink(void *ctx, const char *level, const char *line)
{
	struct nsh_cni_call *r = ctx;
	(void)level;
	nsh_append(r->out->log, sizeof(r->out->log), "%s\n", line);
}

void nsh_cni_log_setup(struct nsh_cni_call *r)
{
	char program[320];
	snprintf(program, sizeof(program), "nshash[%s %s]", r->env->command && *r->env->command ? r->env->command : "-",
		 r->env->containerid && *r->env->containerid ? r->env->containerid : "-");
	nsh_log_setup(program, NULL);
	nsh_log_redirect(NSH_LOG_QUIET, log_sink, r);
}

void nsh_cni_log(struct nsh_cni_call *r, const char *fmt, ...)
{
	va_list ap;
	(void)r;
	va_start(ap, fmt);
	nsh_vlog(NSH_LOG_INFO, NULL, fmt, ap);
	va_end(ap);
}

/* Result of ADD: prevResult (unchanged) or the minimal result, stamped
 * with the config's cniVersion. */
/* The JSON text of `doc` (whose reference this takes) as the output.
 * gcc 12's -fanalyzer loses the string once it is stored through r->out
 * (which the caller frees with nsh_cni_output_free) and reports a leak. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
static int set_stdout(struct nsh_cni_call *r, json_object *doc)
{
	char *text = strdup(json_object_to_json_string_ext(doc, JSON_OUT_FLAGS));
	json_object_put(doc);
	if (!text)
		return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "out of memory");
	free(r->out->stdout_text);
	r->out->stdout_text = text;
	return 0;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

int nsh_cni_add_result(struct nsh_cni_call *r)
{
	json_object *prev = NULL, *res;
	if (json_object_object_get_ex(r->cfg.json, "prevResult", &prev) &&
	    json_object_is_type(prev, json_type_object)) {
		res = json_object_get(prev);
	} else {
		res = json_object_new_object();
		if (!res)
			return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "out of memory");
	}
	json_object *ver = json_object_new_string(r->cfg.cni_version);
	json_object_object_add(res, "cniVersion", ver);
	return set_stdout(r, res);
}

int nsh_cni_cmd_version(struct nsh_cni_call *r, const char *input, size_t len)
{
	/* Any cniVersion may ask which versions we speak; the answer is in
	 * the newest format. */
	(void)input;
	(void)len;
	json_object *o = json_object_new_object(), *list = json_object_new_array();
	if (!o || !list) {
		json_object_put(o);
		json_object_put(list);
		return nsh_cni_fail(&r->err, NSH_CNI_E_IO, NULL, "out of memory");
	}
	for (int i = 0; nsh_cni_versions[i]; i++)
		json_object_array_add(list, json_object_new_string(nsh_cni_versions[i]));
	json_object_object_add(o, "cniVersion", json_object_new_string(CNI_LATEST));
	json_object_object_add(o, "supportedVersions", list);
	return set_stdout(r, o);
}
