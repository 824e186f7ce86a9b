// SPDX-License-Identifier: GPL-2.0
/*
 * The encoding of gdb's remote protocol (gdb manual, "Remote Protocol", Overview): signal
 * numbers, register offsets, hex and '}'-escaped binary data, and the replies built from them,
 * framed as $data#checksum.
 */

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gdbremote/gdbremote_int.h"

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

/* ---- parsing ----------------------------------------------------------------------------- */

static const char hexdigits[] = "0123456789abcdef";

int mt_gdb_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool mt_gdb_parse_hex(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;

	while ((d = mt_gdb_hexval(**p)) >= 0) {
		if (++n > 16)
			return false;
		v = v << 4 | (unsigned int)d;
		(*p)++;
	}
	*out = v;
	return n > 0;
}

bool mt_gdb_parse_tid(const char **p, pid_t *tid)
{
	uint64_t v;

	if (**p == '-' && (*p)[1] == '1') {
		*p += 2;
		*tid = -1;
		return true;
	}
	if (!mt_gdb_parse_hex(p, &v) || v > INT32_MAX)
		return false;
	*tid = (pid_t)v;
	return true;
}

bool mt_gdb_parse_ptid(const char **p, pid_t *pid, pid_t *tid)
{
	*pid = 0;
	if (**p != 'p')
		return mt_gdb_parse_tid(p, tid);
	(*p)++;
	if (!mt_gdb_parse_tid(p, pid))
		return false;
	*tid = -1;
	if (**p != '.')
		return true;
	(*p)++;
	return mt_gdb_parse_tid(p, tid);
}

void mt_gdb_format_thread(struct mt_gdb *g, pid_t tid, char *buf, size_t len)
{
	pid_t pid = g->multiprocess ? g->ops->process_of(g->ctx, tid) : -1;

	if (!g->multiprocess)
		snprintf(buf, len, "%x", (unsigned int)tid);
	else
		snprintf(buf, len, "p%x.%x", (unsigned int)(pid > 0 ? pid : tid),
			 (unsigned int)tid);
}

void mt_gdb_reply_thread(struct mt_gdb *g, pid_t tid)
{
	char id[32];

	mt_gdb_format_thread(g, tid, id, sizeof(id));
	mt_gdb_reply_str(g, id);
}

bool mt_gdb_parse_range(const char **p, uint64_t *addr, uint64_t *len, char sep)
{
	if (!mt_gdb_parse_hex(p, addr) || *(*p)++ != ',' || !mt_gdb_parse_hex(p, len))
		return false;
	if (sep && *(*p)++ != sep)
		return false;
	return true;
}

bool mt_gdb_decode_hex(const char *hex, size_t hex_len, uint8_t *out, size_t len)
{
	if (hex_len != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++) {
		int hi = mt_gdb_hexval(hex[2 * i]), lo = mt_gdb_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

ssize_t mt_gdb_unescape(char *data, size_t len)
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

bool mt_gdb_starts(const char *s, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

/* ---- replies ----------------------------------------------------------------------------- */

void mt_gdb_reply_reset(struct mt_gdb *g)
{
	g->reply_len = 0;
}

void mt_gdb_reply_str(struct mt_gdb *g, const char *s)
{
	size_t n = strlen(s);

	if (n > MT_GDB_PACKET_MAX - g->reply_len)
		n = MT_GDB_PACKET_MAX - g->reply_len;
	memcpy(g->reply + g->reply_len, s, n);
	g->reply_len += n;
}

void mt_gdb_reply_fmt(struct mt_gdb *g, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	mt_gdb_reply_str(g, buf);
}

void mt_gdb_reply_hex(struct mt_gdb *g, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len && g->reply_len + 2 <= MT_GDB_PACKET_MAX; i++) {
		g->reply[g->reply_len++] = hexdigits[data[i] >> 4];
		g->reply[g->reply_len++] = hexdigits[data[i] & 15];
	}
}

size_t mt_gdb_reply_binary(struct mt_gdb *g, const uint8_t *data, size_t len)
{
	size_t i;

	for (i = 0; i < len && g->reply_len + 2 <= MT_GDB_PACKET_MAX; i++) {
		uint8_t c = data[i];

		if (c == '#' || c == '$' || c == '}' || c == '*') {
			g->reply[g->reply_len++] = '}';
			c ^= 0x20;
		}
		g->reply[g->reply_len++] = (char)c;
	}
	return i;
}

void mt_gdb_reply_error(struct mt_gdb *g, int err)
{
	mt_gdb_reply_reset(g);
	mt_gdb_reply_fmt(g, "E%02x", (err < 0 ? -err : err) & 0xff);
}

void mt_gdb_reply_message(struct mt_gdb *g, const char *text)
{
	mt_gdb_reply_reset(g);
	mt_gdb_reply_str(g, "E.");
	mt_gdb_reply_str(g, text);
}

int mt_gdb_send_raw(struct mt_gdb *g, const char *buf, size_t len)
{
	return g->ops->send(g->ctx, buf, len);
}

size_t mt_gdb_frame_reply(struct mt_gdb *g)
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
	return n;
}

int mt_gdb_send_reply(struct mt_gdb *g)
{
	size_t n = mt_gdb_frame_reply(g);

	return mt_gdb_send_raw(g, g->sent, n);
}

/* The stop reason of a T reply: which breakpoint or watchpoint, when gdb understands it. */
static void reply_reason(struct mt_gdb *g, const struct mt_gdb_stop *st)
{
	static const char *const watch[128] = {['w'] = "watch", ['r'] = "rwatch", ['a'] = "awatch"};

	if (st->event == MT_GDB_EV_FORK || st->event == MT_GDB_EV_VFORK) {
		mt_gdb_reply_fmt(g, "%s:p%x.%x;", st->event == MT_GDB_EV_FORK ? "fork" : "vfork",
				 (unsigned int)st->child, (unsigned int)st->child);
	} else if (st->event == MT_GDB_EV_VFORK_DONE) {
		mt_gdb_reply_str(g, "vforkdone:;");
	} else if (st->event == MT_GDB_EV_EXEC) {
		mt_gdb_reply_str(g, "exec:");
		mt_gdb_reply_hex(g, (const uint8_t *)st->path, strnlen(st->path, sizeof(st->path)));
		mt_gdb_reply_str(g, ";");
	} else if (st->syscall)
		mt_gdb_reply_fmt(g, "%s:%x;",
				 st->syscall == 'e' ? "syscall_entry" : "syscall_return",
				 (unsigned int)st->sysno);
	else if (st->swbreak && g->swbreak_ok)
		mt_gdb_reply_str(g, "swbreak:;");
	else if (st->hw == 'h' && g->hwbreak_ok)
		mt_gdb_reply_str(g, "hwbreak:;");
	else if (st->hw > 0 && watch[(unsigned char)st->hw])
		mt_gdb_reply_fmt(g, "%s:%llx;", watch[(unsigned char)st->hw],
				 (unsigned long long)st->data_addr);
}

/* The stopped thread's expedited registers, NN:VALUE; each; none when they cannot be read. */
static void reply_expedited(struct mt_gdb *g, pid_t tid)
{
	size_t len;
	long off;

	if (!g->arch->expedite || g->ops->read_regs(g->ctx, tid, g->scratch))
		return;
	for (const int *r = g->arch->expedite; *r >= 0; r++) {
		off = mt_gdb_reg_offset(g->arch, (unsigned int)*r, &len);
		if (off < 0)
			continue;
		mt_gdb_reply_fmt(g, "%02x:", (unsigned int)*r);
		mt_gdb_reply_hex(g, g->scratch + off, len);
		mt_gdb_reply_str(g, ";");
	}
}

void mt_gdb_reply_stop(struct mt_gdb *g, const struct mt_gdb_stop *st)
{
	mt_gdb_reply_reset(g);
	switch (st->kind) {
	case MT_GDB_STOP_EXITED:
		mt_gdb_reply_fmt(g, "W%02x", st->value & 0xff);
		if (g->multiprocess && st->pid > 0)
			mt_gdb_reply_fmt(g, ";process:%x", (unsigned int)st->pid);
		break;
	case MT_GDB_STOP_KILLED:
		mt_gdb_reply_fmt(g, "X%02x", mt_gdb_signal_from_host(st->value));
		if (g->multiprocess && st->pid > 0)
			mt_gdb_reply_fmt(g, ";process:%x", (unsigned int)st->pid);
		break;
	case MT_GDB_STOP_SIGNAL:
		mt_gdb_reply_fmt(g, "T%02xthread:", mt_gdb_signal_from_host(st->value));
		mt_gdb_reply_thread(g, st->tid);
		mt_gdb_reply_str(g, ";");
		reply_reason(g, st);
		reply_expedited(g, st->tid);
		break;
	}
}
