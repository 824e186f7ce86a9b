// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's remote serial protocol, the stub's side: framing, packets to requests on the target
 * interface, replies. Written from the gdb manual's "Remote Protocol" appendix (Overview,
 * Packets, Stop Reply Packets, General Query Packets, Target Descriptions).
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbremote/gdbremote.h"

/* The most threads a thread list names. */
#define MAX_THREADS 4096

enum frame_state { FRAME_IDLE, FRAME_DATA, FRAME_SUM1, FRAME_SUM2 };

struct mt_gdb {
	const struct mt_gdb_ops *ops;
	void *ctx;
	const struct mt_gdb_arch *arch;
	bool no_ack;	 /* QStartNoAckMode was agreed */
	bool swbreak_ok; /* gdb understands the swbreak stop reason */
	bool running;
	bool finished;
	pid_t g_tid; /* Hg: the thread of register requests (0 or -1: the stopped one) */
	pid_t c_tid; /* Hc: the thread of legacy step requests */
	struct mt_gdb_stop last;

	/* The packet being received. */
	enum frame_state state;
	char in[MT_GDB_PACKET_MAX + 1];
	size_t in_len;
	bool in_overflow;
	uint8_t in_sum;
	char sum_hex[2];

	/* The reply being built (unframed), and the last packet sent (framed, for a resend). */
	char reply[MT_GDB_PACKET_MAX + 1];
	size_t reply_len;
	char sent[MT_GDB_PACKET_MAX + 8];
	size_t sent_len;
	uint8_t scratch[MT_GDB_PACKET_MAX]; /* registers, memory, documents */
};

/* ---- signals ----------------------------------------------------------------------------- */

/* gdb's numbers for the host's signals 1..31 (gdb's include/gdb/signals.def, by name). */
static const unsigned char gdb_of_host[32] = {
    [SIGHUP] = 1,   [SIGINT] = 2,    [SIGQUIT] = 3,  [SIGILL] = 4,   [SIGTRAP] = 5,
    [SIGABRT] = 6,  [SIGFPE] = 8,    [SIGKILL] = 9,  [SIGBUS] = 10,  [SIGSEGV] = 11,
    [SIGSYS] = 12,  [SIGPIPE] = 13,  [SIGALRM] = 14, [SIGTERM] = 15, [SIGURG] = 16,
    [SIGSTOP] = 17, [SIGTSTP] = 18,  [SIGCONT] = 19, [SIGCHLD] = 20, [SIGTTIN] = 21,
    [SIGTTOU] = 22, [SIGIO] = 23,    [SIGXCPU] = 24, [SIGXFSZ] = 25, [SIGVTALRM] = 26,
    [SIGPROF] = 27, [SIGWINCH] = 28, [SIGUSR1] = 30, [SIGUSR2] = 31, [SIGPWR] = 32,
};

/* gdb's real-time signals: 33..63 are 45..75, 32 is 77, 64 is 78. */
#define GDB_RT33 45
#define GDB_RT32 77
#define GDB_RT64 78

int mt_gdb_signal_from_host(int sig)
{
	if (sig > 0 && sig < 32)
		return gdb_of_host[sig];
	if (sig == 32)
		return GDB_RT32;
	if (sig >= 33 && sig <= 63)
		return GDB_RT33 + sig - 33;
	if (sig == 64)
		return GDB_RT64;
	return 0;
}

int mt_gdb_signal_to_host(int gdb_sig)
{
	if (gdb_sig <= 0)
		return 0;
	for (int sig = 1; sig < 32; sig++)
		if (gdb_of_host[sig] == gdb_sig)
			return sig;
	if (gdb_sig == GDB_RT32)
		return 32;
	if (gdb_sig >= GDB_RT33 && gdb_sig <= GDB_RT33 + 30)
		return 33 + gdb_sig - GDB_RT33;
	if (gdb_sig == GDB_RT64)
		return 64;
	return 0;
}

/* ---- registers --------------------------------------------------------------------------- */

long mt_gdb_reg_offset(const struct mt_gdb_arch *arch, unsigned int regno, size_t *len)
{
	long off = 0;

	if (regno >= arch->n_regs)
		return -1;
	for (unsigned int i = 0; i < regno; i++)
		off += arch->regs[i].bits / 8;
	*len = arch->regs[regno].bits / 8;
	return off;
}

size_t mt_gdb_regs_size(const struct mt_gdb_arch *arch)
{
	size_t n = 0;

	for (size_t i = 0; i < arch->n_regs; i++)
		n += arch->regs[i].bits / 8;
	return n;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static const char hexdigits[] = "0123456789abcdef";

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex digits at *p into *out, advancing *p; false when there were none or too many. */
static bool parse_hex(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;

	while ((d = hexval(**p)) >= 0) {
		if (++n > 16)
			return false;
		v = v << 4 | (unsigned int)d;
		(*p)++;
	}
	*out = v;
	return n > 0;
}

/* A thread id: hex, or -1 (all). */
static bool parse_tid(const char **p, pid_t *tid)
{
	uint64_t v;

	if (**p == '-' && (*p)[1] == '1') {
		*p += 2;
		*tid = -1;
		return true;
	}
	if (!parse_hex(p, &v) || v > INT32_MAX)
		return false;
	*tid = (pid_t)v;
	return true;
}

/* len bytes from hex text; false on a non-hex digit or short text. */
static bool decode_hex(const char *hex, size_t hex_len, uint8_t *out, size_t len)
{
	if (hex_len != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* Binary data of an X packet, '}'-escaped: decoded in place; its length, or -1 when cut. */
static ssize_t unescape(char *data, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (data[i] == '}') {
			if (++i == len)
				return -1;
			data[o++] = (char)(data[i] ^ 0x20);
		} else {
			data[o++] = data[i];
		}
	}
	return (ssize_t)o;
}

/* ---- replies ----------------------------------------------------------------------------- */

static void reply_reset(struct mt_gdb *g)
{
	g->reply_len = 0;
}

static void reply_str(struct mt_gdb *g, const char *s)
{
	size_t n = strlen(s);

	if (n > MT_GDB_PACKET_MAX - g->reply_len)
		n = MT_GDB_PACKET_MAX - g->reply_len;
	memcpy(g->reply + g->reply_len, s, n);
	g->reply_len += n;
}

static void reply_fmt(struct mt_gdb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void reply_fmt(struct mt_gdb *g, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	reply_str(g, buf);
}

static void reply_hex(struct mt_gdb *g, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len && g->reply_len + 2 <= MT_GDB_PACKET_MAX; i++) {
		g->reply[g->reply_len++] = hexdigits[data[i] >> 4];
		g->reply[g->reply_len++] = hexdigits[data[i] & 15];
	}
}

/* Binary data, the characters the framing gives a meaning escaped. */
static void reply_binary(struct mt_gdb *g, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len && g->reply_len + 2 <= MT_GDB_PACKET_MAX; i++) {
		uint8_t c = data[i];

		if (c == '#' || c == '$' || c == '}' || c == '*') {
			g->reply[g->reply_len++] = '}';
			c ^= 0x20;
		}
		g->reply[g->reply_len++] = (char)c;
	}
}

static void reply_error(struct mt_gdb *g, int err)
{
	reply_reset(g);
	reply_fmt(g, "E%02x", (err < 0 ? -err : err) & 0xff);
}

static int send_raw(struct mt_gdb *g, const char *buf, size_t len)
{
	return g->ops->send(g->ctx, buf, len);
}

/* The reply built, framed and sent. */
static int send_reply(struct mt_gdb *g)
{
	uint8_t sum = 0;
	size_t n = 0;

	g->sent[n++] = '$';
	for (size_t i = 0; i < g->reply_len; i++) {
		sum += (uint8_t)g->reply[i];
		g->sent[n++] = g->reply[i];
	}
	g->sent[n++] = '#';
	g->sent[n++] = hexdigits[sum >> 4];
	g->sent[n++] = hexdigits[sum & 15];
	g->sent_len = n;
	return send_raw(g, g->sent, n);
}

static void reply_stop(struct mt_gdb *g, const struct mt_gdb_stop *st)
{
	reply_reset(g);
	switch (st->kind) {
	case MT_GDB_STOP_EXITED:
		reply_fmt(g, "W%02x", st->value & 0xff);
		break;
	case MT_GDB_STOP_KILLED:
		reply_fmt(g, "X%02x", mt_gdb_signal_from_host(st->value));
		break;
	case MT_GDB_STOP_SIGNAL:
		reply_fmt(g, "T%02xthread:%x;", mt_gdb_signal_from_host(st->value),
			  (unsigned int)st->tid);
		if (st->swbreak && g->swbreak_ok)
			reply_str(g, "swbreak:;");
		break;
	}
}

static bool stop_ends(const struct mt_gdb_stop *st)
{
	return st->kind != MT_GDB_STOP_SIGNAL;
}

/* ---- requests ---------------------------------------------------------------------------- */

/* The thread of register requests: Hg's, else the one that stopped. */
static pid_t regs_thread(const struct mt_gdb *g)
{
	return g->g_tid > 0 ? g->g_tid : g->last.tid;
}

static void do_read_regs(struct mt_gdb *g)
{
	size_t size = mt_gdb_regs_size(g->arch);
	int err = g->ops->read_regs(g->ctx, regs_thread(g), g->scratch);

	if (err)
		return reply_error(g, err);
	reply_hex(g, g->scratch, size);
}

static void do_write_regs(struct mt_gdb *g, const char *hex)
{
	size_t size = mt_gdb_regs_size(g->arch);
	int err;

	if (!decode_hex(hex, strlen(hex), g->scratch, size))
		return reply_error(g, EINVAL);
	err = g->ops->write_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return reply_error(g, err);
	reply_str(g, "OK");
}

/* p N, or P N=VALUE (value not NULL). */
static void do_one_reg(struct mt_gdb *g, const char *args, bool write)
{
	uint64_t regno;
	size_t len;
	long off;
	int err;

	if (!parse_hex(&args, &regno) || (write && *args++ != '='))
		return reply_error(g, EINVAL);
	off = mt_gdb_reg_offset(g->arch, (unsigned int)regno, &len);
	if (regno > UINT32_MAX || off < 0)
		return reply_error(g, EINVAL);
	err = g->ops->read_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return reply_error(g, err);
	if (!write)
		return reply_hex(g, g->scratch + off, len);
	if (!decode_hex(args, strlen(args), g->scratch + off, len))
		return reply_error(g, EINVAL);
	err = g->ops->write_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return reply_error(g, err);
	reply_str(g, "OK");
}

/* ADDR,LEN then sep; false when malformed. */
static bool parse_range(const char **p, uint64_t *addr, uint64_t *len, char sep)
{
	if (!parse_hex(p, addr) || *(*p)++ != ',' || !parse_hex(p, len))
		return false;
	if (sep && *(*p)++ != sep)
		return false;
	return true;
}

static void do_read_mem(struct mt_gdb *g, const char *args)
{
	uint64_t addr, len;
	ssize_t n;

	if (!parse_range(&args, &addr, &len, 0) || *args)
		return reply_error(g, EINVAL);
	if (len > (MT_GDB_PACKET_MAX - 4) / 2)
		len = (MT_GDB_PACKET_MAX - 4) / 2;
	n = g->ops->read_mem(g->ctx, addr, g->scratch, len);
	if (n < 0)
		return reply_error(g, (int)n);
	if (n == 0 && len)
		return reply_error(g, EFAULT);
	reply_hex(g, g->scratch, (size_t)n);
}

/* M ADDR,LEN:HEX or X ADDR,LEN:BINARY (args is writable: the packet buffer). */
static void do_write_mem(struct mt_gdb *g, char *args, bool binary)
{
	const char *p = args;
	uint64_t addr, len;
	char *data;
	ssize_t n;
	int err;

	if (!parse_range(&p, &addr, &len, ':') || len > MT_GDB_PACKET_MAX)
		return reply_error(g, EINVAL);
	data = args + (p - args);
	if (binary) {
		n = unescape(data, strlen(data));
		if (n != (ssize_t)len)
			return reply_error(g, EINVAL);
		memcpy(g->scratch, data, len);
	} else if (!decode_hex(data, strlen(data), g->scratch, len)) {
		return reply_error(g, EINVAL);
	}
	err = len ? g->ops->write_mem(g->ctx, addr, g->scratch, len) : 0;
	if (err)
		return reply_error(g, err);
	reply_str(g, "OK");
}

/* Z TYPE,ADDR,KIND or z ...: software breakpoints only; other types are not supported (""). */
static void do_breakpoint(struct mt_gdb *g, const char *args, bool insert)
{
	uint64_t type, addr, kind;
	int err;

	if (!parse_hex(&args, &type) || *args++ != ',' || !parse_range(&args, &addr, &kind, 0))
		return reply_error(g, EINVAL);
	if (type != 0)
		return; /* the empty reply: not supported */
	if (insert)
		err = g->ops->insert_breakpoint(g->ctx, addr, (unsigned int)kind);
	else
		err = g->ops->remove_breakpoint(g->ctx, addr, (unsigned int)kind);
	if (err)
		return reply_error(g, err);
	reply_str(g, "OK");
}

static void start_resume(struct mt_gdb *g, const struct mt_gdb_action *a, size_t n)
{
	int err;

	/* The process ended while gdb had it stopped: this is when gdb hears of it. */
	if (stop_ends(&g->last)) {
		reply_stop(g, &g->last);
		g->finished = true;
		return;
	}
	err = g->ops->resume(g->ctx, a, n);
	if (err)
		return reply_error(g, err);
	g->running = true;
}

/*
 * c, C SIG, s, S SIG (a resume address is not supported). The signal is the Hc thread's (else the
 * stopped one's); c resumes every thread, s steps that one only.
 */
static void do_legacy_resume(struct mt_gdb *g, char cmd, const char *args)
{
	struct mt_gdb_action a[2] = {{.kind = (char)(cmd | 0x20)}, {.kind = 'c', .tid = -1}};
	uint64_t sig = 0;

	if ((cmd == 'C' || cmd == 'S') && !parse_hex(&args, &sig))
		return reply_error(g, EINVAL);
	if (*args)
		return reply_error(g, EINVAL);
	a[0].sig = mt_gdb_signal_to_host((int)sig);
	a[0].tid = g->c_tid > 0 ? g->c_tid : g->last.tid;
	start_resume(g, a, a[0].kind == 's' ? 1 : 2);
}

/* vCont;ACTION[:TID]... */
static void do_vcont(struct mt_gdb *g, const char *p)
{
	struct mt_gdb_action a[64];
	size_t n = 0;
	uint64_t sig;

	while (*p == ';') {
		p++;
		if (n == sizeof(a) / sizeof(a[0]))
			return reply_error(g, E2BIG);
		a[n] = (struct mt_gdb_action){.kind = (char)(*p | 0x20), .tid = -1};
		if (*p != 'c' && *p != 'C' && *p != 's' && *p != 'S')
			return reply_error(g, EINVAL);
		sig = 0;
		if (*p++ == 'C' || p[-1] == 'S') {
			if (!parse_hex(&p, &sig))
				return reply_error(g, EINVAL);
		}
		a[n].sig = mt_gdb_signal_to_host((int)sig);
		if (*p == ':') {
			p++;
			if (!parse_tid(&p, &a[n].tid))
				return reply_error(g, EINVAL);
		}
		n++;
	}
	if (*p || !n)
		return reply_error(g, EINVAL);
	start_resume(g, a, n);
}

static void do_set_thread(struct mt_gdb *g, const char *args)
{
	char which = *args++;
	pid_t tid;

	if ((which != 'g' && which != 'c') || !parse_tid(&args, &tid) || *args)
		return reply_error(g, EINVAL);
	if (which == 'g')
		g->g_tid = tid;
	else
		g->c_tid = tid;
	reply_str(g, "OK");
}

static int list_threads(struct mt_gdb *g, pid_t *tids)
{
	return g->ops->threads(g->ctx, tids, MAX_THREADS);
}

static void do_thread_alive(struct mt_gdb *g, const char *args)
{
	pid_t tids[MAX_THREADS], tid;
	int n;

	if (!parse_tid(&args, &tid) || *args)
		return reply_error(g, EINVAL);
	n = list_threads(g, tids);
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return reply_str(g, "OK");
	reply_error(g, ESRCH);
}

static void do_thread_info(struct mt_gdb *g)
{
	pid_t tids[MAX_THREADS];
	int n = list_threads(g, tids);

	if (n < 0)
		return reply_error(g, n);
	reply_str(g, n ? "m" : "l");
	for (int i = 0; i < n; i++)
		reply_fmt(g, "%s%x", i ? "," : "", (unsigned int)tids[i]);
}

/* ---- qXfer documents --------------------------------------------------------------------- */

static ssize_t doc_threads(struct mt_gdb *g, char *buf, size_t cap)
{
	pid_t tids[MAX_THREADS];
	int n = list_threads(g, tids);
	size_t len = 0;

	if (n < 0)
		return n;
	len += snprintf(buf, cap, "<?xml version=\"1.0\"?>\n<threads>\n");
	for (int i = 0; i < n && len < cap; i++)
		len +=
		    snprintf(buf + len, cap - len, "<thread id=\"%x\"/>\n", (unsigned int)tids[i]);
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
		return reply_error(g, EINVAL);
	*op++ = *annex++ = *range++ = '\0';
	if (strcmp(op, "read") != 0)
		return; /* not supported */
	p = range;
	if (!parse_range(&p, &off, &len, 0) || *p)
		return reply_error(g, EINVAL);
	total = xfer_document(g, object, annex, doc, sizeof(doc));
	if (total == -EOPNOTSUPP)
		return;
	if (total < 0)
		return reply_error(g, (int)total);
	if (off >= (uint64_t)total)
		return reply_str(g, "l");
	/* Escaping may double the bytes: ask for at most what fits twice over. */
	if (len > MT_GDB_PACKET_MAX / 2 - 2)
		len = MT_GDB_PACKET_MAX / 2 - 2;
	if (len > (uint64_t)total - off)
		len = (uint64_t)total - off;
	reply_str(g, off + len < (uint64_t)total ? "m" : "l");
	reply_binary(g, (const uint8_t *)doc + off, len);
}

static void do_supported(struct mt_gdb *g, const char *features)
{
	g->swbreak_ok = strstr(features, "swbreak+") != NULL;
	reply_fmt(g,
		  "PacketSize=%x;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;"
		  "qXfer:exec-file:read+;qXfer:auxv:read+;swbreak+;vContSupported+",
		  MT_GDB_PACKET_MAX);
	if (g->ops->libraries_svr4)
		reply_str(g, ";qXfer:libraries-svr4:read+");
}

/*
 * lldb's qHostInfo and qProcessInfo (lldb's "lldb-gdb-remote" extensions, which gdb never sends):
 * the target's triple (hex), pointer size and byte order, and the process's id. Without them
 * lldb cannot tell where the program is loaded.
 */
static void do_host_info(struct mt_gdb *g, bool process)
{
	pid_t tids[MAX_THREADS];

	if (process) {
		if (list_threads(g, tids) < 1)
			return reply_error(g, ESRCH);
		reply_fmt(g, "pid:%x;", (unsigned int)tids[0]);
	}
	reply_str(g, "triple:");
	reply_hex(g, (const uint8_t *)g->arch->triple, strlen(g->arch->triple));
	reply_fmt(g, ";ptrsize:%u;endian:little;ostype:linux;", g->arch->ptr_bytes);
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
		return reply_error(g, err);
	reply_fmt(g, "%llx", (unsigned long long)addr);
}

static bool starts(const char *s, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

/* q and Q packets; the ones not known get the empty reply. */
static void do_query(struct mt_gdb *g, char *pkt)
{
	const char *rest;

	if (starts(pkt, "qSupported", &rest))
		return do_supported(g, rest);
	if (strcmp(pkt, "QStartNoAckMode") == 0) {
		/* The acknowledgement of this very packet was sent; from its reply on, none. */
		g->no_ack = true;
		return reply_str(g, "OK");
	}
	if (starts(pkt, "qAttached", &rest))
		return reply_str(g, "0"); /* memtrack created the process */
	if (strcmp(pkt, "qC") == 0)
		return reply_fmt(g, "QC%x", (unsigned int)g->last.tid);
	if (strcmp(pkt, "qfThreadInfo") == 0)
		return do_thread_info(g);
	if (strcmp(pkt, "qsThreadInfo") == 0)
		return reply_str(g, "l");
	if (strcmp(pkt, "qSymbol::") == 0)
		return reply_str(g, "OK");
	if (strcmp(pkt, "qHostInfo") == 0 || strcmp(pkt, "qProcessInfo") == 0)
		return do_host_info(g, pkt[1] == 'P');
	if (strcmp(pkt, "qShlibInfoAddr") == 0)
		return do_shlib_info_addr(g);
	if (starts(pkt, "qXfer:", &rest))
		return do_xfer(g, pkt + strlen("qXfer:"));
}

/* v packets. */
static void do_v(struct mt_gdb *g, char *pkt)
{
	const char *rest;
	int err;

	if (strcmp(pkt, "vCont?") == 0)
		return reply_str(g, "vCont;c;C;s;S");
	if (starts(pkt, "vCont", &rest))
		return do_vcont(g, rest);
	if (starts(pkt, "vKill", &rest)) {
		err = g->ops->kill(g->ctx);
		if (err)
			return reply_error(g, err);
		g->finished = true;
		return reply_str(g, "OK");
	}
	/* vMustReplyEmpty and everything else (vFile, vRun, vAttach): the empty reply. */
}

/*
 * One packet. Returns whether it is answered: a resume is answered by the stop, later; a kill
 * (k) by nothing.
 */
static bool handle_packet(struct mt_gdb *g, char *pkt)
{
	char *args = pkt + 1;

	reply_reset(g);
	if (g->running) {
		/* All-stop: gdb waits for the stop. Say so rather than act on a running target. */
		reply_error(g, EBUSY);
		return true;
	}
	switch (pkt[0]) {
	case '?':
		reply_stop(g, &g->last);
		break;
	case 'g':
		do_read_regs(g);
		break;
	case 'G':
		do_write_regs(g, args);
		break;
	case 'p':
	case 'P':
		do_one_reg(g, args, pkt[0] == 'P');
		break;
	case 'm':
		do_read_mem(g, args);
		break;
	case 'M':
	case 'X':
		do_write_mem(g, args, pkt[0] == 'X');
		break;
	case 'Z':
	case 'z':
		do_breakpoint(g, args, pkt[0] == 'Z');
		break;
	case 'c':
	case 'C':
	case 's':
	case 'S':
		do_legacy_resume(g, pkt[0], args);
		return !g->running;
	case 'H':
		do_set_thread(g, args);
		break;
	case 'T':
		do_thread_alive(g, args);
		break;
	case 'k':
		g->ops->kill(g->ctx);
		g->finished = true;
		return false;
	case 'D':
		if (g->ops->detach(g->ctx) < 0) {
			reply_error(g, EIO);
			break;
		}
		g->finished = true;
		reply_str(g, "OK");
		break;
	case 'q':
	case 'Q':
		do_query(g, pkt);
		break;
	case 'v':
		do_v(g, pkt);
		if (g->running)
			return false;
		break;
	default:
		break; /* not supported: the empty reply */
	}
	return true;
}

/* ---- framing ----------------------------------------------------------------------------- */

static int packet_received(struct mt_gdb *g)
{
	uint8_t sum = (uint8_t)(hexval(g->sum_hex[0]) << 4 | hexval(g->sum_hex[1]));
	int err;

	if (!g->no_ack) {
		bool good = !g->in_overflow && hexval(g->sum_hex[0]) >= 0 &&
			    hexval(g->sum_hex[1]) >= 0 && sum == g->in_sum;

		err = send_raw(g, good ? "+" : "-", 1);
		if (err || !good)
			return err;
	}
	if (g->in_overflow) {
		reply_error(g, E2BIG);
		return send_reply(g);
	}
	g->in[g->in_len] = '\0';
	if (!handle_packet(g, g->in))
		return 0;
	return send_reply(g);
}

int mt_gdb_input(struct mt_gdb *g, const char *buf, size_t len)
{
	int err = 0;

	for (size_t i = 0; i < len && !err; i++) {
		char c = buf[i];

		switch (g->state) {
		case FRAME_IDLE:
			if (c == '$') {
				g->state = FRAME_DATA;
				g->in_len = 0;
				g->in_sum = 0;
				g->in_overflow = false;
			} else if (c == '-' && !g->no_ack && g->sent_len) {
				err = send_raw(g, g->sent, g->sent_len);
			} else if (c == 0x03 && g->running) {
				err = g->ops->interrupt(g->ctx);
			}
			/* '+' and anything else between packets: nothing to do. */
			break;
		case FRAME_DATA:
			if (c == '#') {
				g->state = FRAME_SUM1;
				break;
			}
			g->in_sum += (uint8_t)c;
			if (g->in_len < MT_GDB_PACKET_MAX)
				g->in[g->in_len++] = c;
			else
				g->in_overflow = true;
			break;
		case FRAME_SUM1:
			g->sum_hex[0] = c;
			g->state = FRAME_SUM2;
			break;
		case FRAME_SUM2:
			g->sum_hex[1] = c;
			g->state = FRAME_IDLE;
			err = packet_received(g);
			break;
		}
	}
	return err;
}

int mt_gdb_stopped(struct mt_gdb *g, const struct mt_gdb_stop *stop)
{
	g->last = *stop;
	if (!g->running)
		return 0; /* told at the next resume (start_resume()) */
	g->running = false;
	if (stop_ends(stop))
		g->finished = true;
	reply_stop(g, stop);
	return send_reply(g);
}

bool mt_gdb_running(const struct mt_gdb *g)
{
	return g->running;
}

bool mt_gdb_finished(const struct mt_gdb *g)
{
	return g->finished;
}

struct mt_gdb *mt_gdb_new(const struct mt_gdb_ops *ops, void *ctx, const struct mt_gdb_arch *arch,
			  const struct mt_gdb_stop *first)
{
	struct mt_gdb *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->ops = ops;
	g->ctx = ctx;
	g->arch = arch;
	g->last = *first;
	return g;
}

void mt_gdb_free(struct mt_gdb *g)
{
	free(g);
}
