/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CLI's output helpers, shared by its command files: errors on stderr
 * ("nshash: ..."), a netns's tables as JSON or text. */
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"

int cli_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("nshash: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

int cli_fail_err(int code, const struct nshash_error *err)
{
	return cli_fail(code, "%s", err->msg);
}

/* The host's own netns (init_net) holds the global tables themselves: its
 * *_hash_entries read positive, but the table is not "own".  The kernel
 * gives init_net a fixed nsfs inode number (PROC_NET_INIT_INO); pid 1's
 * netns is the check where that cannot be told. */
#define NET_INIT_INO 0xEFFFFFF9u
static bool is_host_netns(const struct nshash_netns_info *i)
{
	struct stat st;
	if (i->inode == NET_INIT_INO)
		return true;
	return i->inode && stat("/proc/1/ns/net", &st) == 0 && st.st_ino == i->inode;
}

/* "own", "shared", "global" (the host's netns) or "unsupported". */
static const char *table_kind(long entries, bool host)
{
	return entries == 0 ? "unsupported" : entries < 0 ? "shared" : host ? "global" : "own";
}

json_object *cli_info_json(const struct nshash_netns_info *i)
{
	json_object *o = json_object_new_object();
	long ent[2] = {i->tcp_entries, i->udp_entries};
	bool host = is_host_netns(i);
	for (int k = 0; k < 2; k++) {
		json_object *p = json_object_new_object();
		bool own = ent[k] > 0 && !host;
		json_object_object_add(p, "supported", json_object_new_boolean(ent[k] != 0));
		json_object_object_add(p, "own", json_object_new_boolean(own));
		json_object_object_add(p, "table", json_object_new_string(table_kind(ent[k], host)));
		json_object_object_add(p, "entries", json_object_new_int64(ent[k] < 0 ? -ent[k] : ent[k]));
		json_object_object_add(
		    p, "bytes", json_object_new_int64(own ? (int64_t)nshash_table_bytes(k, (uint32_t)ent[k]) : 0));
		json_object_object_add(p, "child", json_object_new_int64(k ? i->udp_child : i->tcp_child));
		json_object_object_add(o, k ? "udp" : "tcp", p);
	}
	json_object_object_add(o, "host", json_object_new_boolean(host));
	json_object_object_add(o, "tcp_max_tw_buckets", json_object_new_int64(i->tcp_max_tw_buckets));
	json_object_object_add(o, "tcp_max_syn_backlog", json_object_new_int64(i->tcp_max_syn_backlog));
	json_object_object_add(o, "inode", json_object_new_int64((int64_t)i->inode));
	return o;
}

void cli_print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

void cli_human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1024 * 1024)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
}

static void table_text(enum nshash_proto proto, long entries, bool host, char *buf, size_t len)
{
	char mem[32];
	if (entries > 0) {
		cli_human_bytes(nshash_table_bytes(proto, (uint32_t)entries), mem, sizeof(mem));
		snprintf(buf, len, "%s, %ld entries (%s)",
			 host ? "the global table itself (the host's netns)" : "own table", entries, mem);
	} else if (entries < 0) {
		snprintf(buf, len, "shared global table (%ld entries)", -entries);
	} else {
		snprintf(buf, len, "not supported by this kernel");
	}
}

void cli_info_text(const char *what, const struct nshash_netns_info *i)
{
	char t[128], u[128];
	bool host = is_host_netns(i);
	table_text(NSHASH_TCP, i->tcp_entries, host, t, sizeof(t));
	table_text(NSHASH_UDP, i->udp_entries, host, u, sizeof(u));
	printf("%s\n  tcp: %s\n  udp: %s\n", what, t, u);
	if (i->tcp_max_tw_buckets >= 0)
		printf("  tcp_max_tw_buckets: %ld\n  tcp_max_syn_backlog: %ld\n", i->tcp_max_tw_buckets,
		       i->tcp_max_syn_backlog);
	if (i->tcp_child >= 0 || i->udp_child >= 0)
		printf("  children get: tcp %ld, udp %ld (0 = shared)\n", i->tcp_child, i->udp_child);
	if (i->tcp_entries > 0 && !host && i->tcp_max_tw_buckets >= 0 && i->tcp_max_tw_buckets < 1024)
		printf("  note: this small table allows only %ld TIME_WAIT sockets\n", i->tcp_max_tw_buckets);
}

/* A refusal for lack of privileges says what to do, not only which
 * syscall failed: run as root, or size a netns of your own without root. */
int cli_fail_priv(int code, const struct nshash_error *err)
{
	struct nshash_probe p;
	if ((err->errnum == EPERM || err->errnum == EACCES) && nshash_probe(&p, NULL) == 0 && !p.cap_sys_admin)
		return cli_fail(EXIT_FAIL,
			    "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run as root, or without root size a "
			    "netns of your own: unshare -Urmn nshash create --strategy nested --tcp N PATH (PATH on "
			    "a mount of that namespace, e.g. a tmpfs)  [what failed: %s]",
			    err->msg);
	return cli_fail_err(code, err);
}

/* A netns's sockets (show, stats --json). */
static const char *const proto_key[2] = {"tcp", "udp"};

/* ------------------------------------------------------------- show's part */

void cli_sockets_json(json_object *o, const struct nshash_sockets *s)
{
	json_object *tcp = NULL, *udp = NULL;
	if (!json_object_object_get_ex(o, "tcp", &tcp) || !json_object_object_get_ex(o, "udp", &udp))
		return;
	json_object_object_add(tcp, "sockets", json_object_new_int64(s->tcp));
	json_object_object_add(tcp, "time_wait", json_object_new_int64(s->tcp_tw));
	json_object_object_add(tcp, "listeners", json_object_new_int64(s->tcp_listen));
	json_object_object_add(udp, "sockets", json_object_new_int64(s->udp));
}

void cli_sockets_text(const struct nshash_sockets *s, const struct nshash_netns_info *info)
{
	long ent[2] = {info->tcp_entries, info->udp_entries};
	long socks[2] = {s->tcp, s->udp};
	for (int k = 0; k < 2; k++) {
		long buckets = ent[k] < 0 ? -ent[k] : ent[k];
		printf("  %s sockets: %ld", proto_key[k], socks[k]);
		if (k == 0)
			printf(" (%ld TIME_WAIT; listeners, not in this table: %ld)", s->tcp_tw, s->tcp_listen);
		if (buckets)
			printf(", %.3f per bucket%s", (double)socks[k] / (double)buckets,
			       ent[k] < 0 ? " of the shared table" : "");
		putchar('\n');
	}
}

void cli_entries_cell(long entries, const char *own, char *buf, size_t len)
{
	if (entries > 0)
		snprintf(buf, len, "%s%ld", own, entries);
	else if (entries < 0)
		snprintf(buf, len, "shared");
	else
		snprintf(buf, len, "n/a");
}
