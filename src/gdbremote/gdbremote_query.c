// SPDX-License-Identifier: GPL-2.0
/*
 * The stub's q and Q packets (gdb manual, "General Query Packets"): what the stub supports, the
 * thread list, the qXfer documents (target description, threads, the program, the auxiliary
 * vector, the library list), and lldb's own queries (lldb's "lldb-gdb-remote" extensions).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbremote/gdbremote_int.h"

int mt_gdb_list_threads(struct mt_gdb *g, pid_t *tids)
{
	return g->ops->threads(g->ctx, tids, MT_GDB_MAX_THREADS);
}

static void do_thread_info(struct mt_gdb *g)
{
	pid_t tids[MT_GDB_MAX_THREADS];
	int n = mt_gdb_list_threads(g, tids);

	if (n < 0)
		return mt_gdb_reply_error(g, n);
	mt_gdb_reply_str(g, n ? "m" : "l");
	for (int i = 0; i < n; i++) {
		if (i)
			mt_gdb_reply_str(g, ",");
		mt_gdb_reply_thread(g, tids[i]);
	}
}

/* ---- qXfer documents --------------------------------------------------------------------- */

/* A thread's name attribute (name="..."), XML-escaped; nothing when the target has none. */
static size_t thread_name_attr(struct mt_gdb *g, pid_t tid, char *buf, size_t cap)
{
	char name[64];
	size_t len = 0;

	if (!g->ops->thread_name || g->ops->thread_name(g->ctx, tid, name, sizeof(name)) < 0)
		return 0;
	len += snprintf(buf, cap, " name=\"");
	for (const char *c = name; *c && len < cap; c++) {
		const char *esc = *c == '<'   ? "&lt;"
				  : *c == '>' ? "&gt;"
				  : *c == '&' ? "&amp;"
				  : *c == '"' ? "&quot;"
					      : NULL;

		if (esc)
			len += snprintf(buf + len, cap - len, "%s", esc);
		else if ((unsigned char)*c >= 0x20 && *c != 0x7f)
			len += snprintf(buf + len, cap - len, "%c", *c);
	}
	if (len < cap)
		len += snprintf(buf + len, cap - len, "\"");
	return len;
}

static ssize_t doc_threads(struct mt_gdb *g, char *buf, size_t cap)
{
	pid_t tids[MT_GDB_MAX_THREADS];
	int n = mt_gdb_list_threads(g, tids);
	size_t len = 0;

	if (n < 0)
		return n;
	len += snprintf(buf, cap, "<?xml version=\"1.0\"?>\n<threads>\n");
	for (int i = 0; i < n && len < cap; i++) {
		char id[32];

		mt_gdb_format_thread(g, tids[i], id, sizeof(id));
		len += snprintf(buf + len, cap - len, "<thread id=\"%s\"", id);
		if (len < cap)
			len += thread_name_attr(g, tids[i], buf + len, cap - len);
		if (len < cap)
			len += snprintf(buf + len, cap - len, "/>\n");
	}
	if (len < cap)
		len += snprintf(buf + len, cap - len, "</threads>\n");
	return len < cap ? (ssize_t)len : -E2BIG;
}

/* The document an object and annex name, into buf; its length or a negative errno. */
static ssize_t xfer_document(struct mt_gdb *g, const char *object, const char *annex, char *buf,
			     size_t cap)
{
	int err;

	if (strcmp(object, "features") == 0) {
		if (strcmp(annex, "target.xml") != 0)
			return -ENOENT;
		snprintf(buf, cap, "%s", g->arch->target_xml);
		return (ssize_t)strlen(buf);
	}
	if (strcmp(object, "threads") == 0)
		return doc_threads(g, buf, cap);
	if (strcmp(object, "exec-file") == 0) {
		/* The annex names the process (its main thread's tid is its pid); "": current. */
		if (*annex && g->multiprocess && g->ops->select_thread)
			g->ops->select_thread(g->ctx, (pid_t)strtol(annex, NULL, 16));
		err = g->ops->exec_file(g->ctx, buf, cap);
		return err ? err : (ssize_t)strlen(buf);
	}
	if (strcmp(object, "auxv") == 0)
		return g->ops->auxv(g->ctx, (uint8_t *)buf, cap);
	if (strcmp(object, "libraries-svr4") == 0 && g->ops->libraries_svr4)
		return g->ops->libraries_svr4(g->ctx, buf, cap);
	return -EOPNOTSUPP;
}

/* qXfer:OBJECT:read:ANNEX:OFFSET,LENGTH */
static void do_xfer(struct mt_gdb *g, char *args)
{
	static char doc[65536];
	char *object = args, *op, *annex, *range;
	const char *p;
	uint64_t off, len;
	ssize_t total;

	op = strchr(object, ':');
	annex = op ? strchr(op + 1, ':') : NULL;
	range = annex ? strchr(annex + 1, ':') : NULL;
	if (!range)
		return mt_gdb_reply_error(g, EINVAL);
	*op++ = *annex++ = *range++ = '\0';
	if (strcmp(op, "read") != 0)
		return; /* not supported */
	p = range;
	if (!mt_gdb_parse_range(&p, &off, &len, 0) || *p)
		return mt_gdb_reply_error(g, EINVAL);
	total = xfer_document(g, object, annex, doc, sizeof(doc));
	if (total == -EOPNOTSUPP)
		return;
	if (total < 0)
		return mt_gdb_reply_error(g, (int)total);
	if (off >= (uint64_t)total)
		return mt_gdb_reply_str(g, "l");
	/* Escaping may double the bytes: ask for at most what fits twice over. */
	if (len > MT_GDB_PACKET_MAX / 2 - 2)
		len = MT_GDB_PACKET_MAX / 2 - 2;
	if (len > (uint64_t)total - off)
		len = (uint64_t)total - off;
	mt_gdb_reply_str(g, off + len < (uint64_t)total ? "m" : "l");
	mt_gdb_reply_binary(g, (const uint8_t *)doc + off, len);
}

/*
 * The multiprocess extensions and the fork events, when gdb offers them and the target has them:
 * the events gdb asked for are reported from now on.
 */
static void supported_processes(struct mt_gdb *g, const char *features)
{
	bool fork = strstr(features, "fork-events+") != NULL;
	bool vfork = strstr(features, "vfork-events+") != NULL;
	bool exec = strstr(features, "exec-events+") != NULL;

	g->multiprocess = strstr(features, "multiprocess+") && g->ops->process_of;
	if (!g->multiprocess)
		return;
	mt_gdb_reply_str(g, ";multiprocess+");
	if (!g->ops->follow_forks || g->ops->follow_forks(g->ctx, fork, vfork, exec) < 0)
		return;
	if (fork)
		mt_gdb_reply_str(g, ";fork-events+");
	if (vfork)
		mt_gdb_reply_str(g, ";vfork-events+");
	if (exec)
		mt_gdb_reply_str(g, ";exec-events+");
}

static void do_supported(struct mt_gdb *g, const char *features)
{
	g->swbreak_ok = strstr(features, "swbreak+") != NULL;
	g->hwbreak_ok = strstr(features, "hwbreak+") != NULL;
	mt_gdb_reply_fmt(g,
			 "PacketSize=%x;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;"
			 "qXfer:exec-file:read+;qXfer:auxv:read+;swbreak+;vContSupported+",
			 MT_GDB_PACKET_MAX);
	if (g->ops->insert_hw_point)
		mt_gdb_reply_str(g, ";hwbreak+");
	if (g->ops->libraries_svr4)
		mt_gdb_reply_str(g, ";qXfer:libraries-svr4:read+");
	if (g->ops->catch_syscalls)
		mt_gdb_reply_str(g, ";QCatchSyscalls+");
	if (g->ops->target_conditions)
		mt_gdb_reply_str(g, ";ConditionalBreakpoints+;BreakpointCommands+");
	supported_processes(g, features);
}

/* OK, or the error. */
static void reply_done(struct mt_gdb *g, int err)
{
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_str(g, "OK");
}

/* The most syscall numbers one QCatchSyscalls names (gdb's list is far shorter). */
#define MT_GDB_MAX_SYSCALLS 1024

/* QCatchSyscalls:0, or QCatchSyscalls:1 then ;SYSNO (hex) for each one, none for every one. */
static void do_catch_syscalls(struct mt_gdb *g, const char *args)
{
	static int nrs[MT_GDB_MAX_SYSCALLS];
	size_t n = 0;
	uint64_t nr;
	int err;

	if (!g->ops->catch_syscalls)
		return;
	if (strcmp(args, "0") == 0)
		return reply_done(g, g->ops->catch_syscalls(g->ctx, false, NULL, 0));
	if (args[0] != '1')
		return mt_gdb_reply_error(g, EINVAL);
	for (args++; *args == ';'; n++) {
		args++;
		if (n == MT_GDB_MAX_SYSCALLS || !mt_gdb_parse_hex(&args, &nr) || nr > INT32_MAX)
			return mt_gdb_reply_error(g, EINVAL);
		nrs[n] = (int)nr;
	}
	if (*args)
		return mt_gdb_reply_error(g, EINVAL);
	err = g->ops->catch_syscalls(g->ctx, true, nrs, n);
	reply_done(g, err);
}

/*
 * lldb's qHostInfo and qProcessInfo (lldb's "lldb-gdb-remote" extensions, which gdb never sends):
 * the target's triple (hex), pointer size and byte order, and the process's id. Without them
 * lldb cannot tell where the program is loaded.
 */
static void do_host_info(struct mt_gdb *g, bool process)
{
	pid_t tids[MT_GDB_MAX_THREADS];

	if (process) {
		if (mt_gdb_list_threads(g, tids) < 1)
			return mt_gdb_reply_error(g, ESRCH);
		mt_gdb_reply_fmt(g, "pid:%x;", (unsigned int)tids[0]);
	}
	mt_gdb_reply_str(g, "triple:");
	mt_gdb_reply_hex(g, (const uint8_t *)g->arch->triple, strlen(g->arch->triple));
	mt_gdb_reply_fmt(g, ";ptrsize:%u;endian:little;ostype:linux;", g->arch->ptr_bytes);
}

/*
 * lldb's qShlibInfoAddr: without it lldb takes the address of gdb's main-lm (from the library
 * list) for it, reads the program's load address there as r_debug's and never finds the loader.
 */
static void do_shlib_info_addr(struct mt_gdb *g)
{
	uint64_t addr;
	int err;

	if (!g->ops->shlib_info_addr)
		return;
	err = g->ops->shlib_info_addr(g->ctx, &addr);
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_fmt(g, "%llx", (unsigned long long)addr);
}

/* q and Q packets; the ones not known get the empty reply. */
void mt_gdb_do_query(struct mt_gdb *g, char *pkt)
{
	const char *rest;

	if (mt_gdb_starts(pkt, "qSupported", &rest))
		return do_supported(g, rest);
	if (strcmp(pkt, "QStartNoAckMode") == 0) {
		/* The acknowledgement of this very packet was sent; from its reply on, none. */
		g->no_ack = true;
		return mt_gdb_reply_str(g, "OK");
	}
	if (mt_gdb_starts(pkt, "qAttached", &rest))
		return mt_gdb_reply_str(g, "0"); /* memtrack created the process */
	if (strcmp(pkt, "qC") == 0) {
		mt_gdb_reply_str(g, "QC");
		return mt_gdb_reply_thread(g, g->last.tid);
	}
	if (strcmp(pkt, "qfThreadInfo") == 0)
		return do_thread_info(g);
	if (strcmp(pkt, "qsThreadInfo") == 0)
		return mt_gdb_reply_str(g, "l");
	if (strcmp(pkt, "qSymbol::") == 0)
		return mt_gdb_reply_str(g, "OK");
	if (strcmp(pkt, "qHostInfo") == 0 || strcmp(pkt, "qProcessInfo") == 0)
		return do_host_info(g, pkt[1] == 'P');
	if (strcmp(pkt, "qShlibInfoAddr") == 0)
		return do_shlib_info_addr(g);
	if (mt_gdb_starts(pkt, "qXfer:", &rest))
		return do_xfer(g, pkt + strlen("qXfer:"));
	if (mt_gdb_starts(pkt, "QCatchSyscalls:", &rest))
		return do_catch_syscalls(g, rest);
}
