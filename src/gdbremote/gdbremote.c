// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's remote serial protocol, the stub's side: framing, packets to requests on the target
 * interface (registers, memory, breakpoints, run control here; queries in gdbremote_query.c,
 * host I/O in gdbremote_vfile.c), replies. Written from the gdb manual's "Remote Protocol"
 * appendix (Overview, Packets, Stop Reply Packets, General Query Packets, Host I/O Packets).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdbremote/gdbremote_int.h"

/* ---- requests ---------------------------------------------------------------------------- */

/* Whether a stop ends the session: the end of the last process debugged. */
static bool stop_ends(const struct mt_gdb_stop *st)
{
	return st->kind != MT_GDB_STOP_SIGNAL && !st->others;
}

/* The thread whose process memory and breakpoint requests are of (0: the stopped one's). */
static void select_thread(struct mt_gdb *g, pid_t tid)
{
	if (g->multiprocess && g->ops->select_thread)
		g->ops->select_thread(g->ctx, tid);
}

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
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_hex(g, g->scratch, size);
}

static void do_write_regs(struct mt_gdb *g, const char *hex)
{
	size_t size = mt_gdb_regs_size(g->arch);
	int err;

	if (!mt_gdb_decode_hex(hex, strlen(hex), g->scratch, size))
		return mt_gdb_reply_error(g, EINVAL);
	err = g->ops->write_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_str(g, "OK");
}

/* p N, or P N=VALUE (value not NULL). */
static void do_one_reg(struct mt_gdb *g, const char *args, bool write)
{
	uint64_t regno;
	size_t len;
	long off;
	int err;

	if (!mt_gdb_parse_hex(&args, &regno) || (write && *args++ != '='))
		return mt_gdb_reply_error(g, EINVAL);
	off = mt_gdb_reg_offset(g->arch, (unsigned int)regno, &len);
	if (regno > UINT32_MAX || off < 0)
		return mt_gdb_reply_error(g, EINVAL);
	err = g->ops->read_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return mt_gdb_reply_error(g, err);
	if (!write)
		return mt_gdb_reply_hex(g, g->scratch + off, len);
	if (!mt_gdb_decode_hex(args, strlen(args), g->scratch + off, len))
		return mt_gdb_reply_error(g, EINVAL);
	err = g->ops->write_regs(g->ctx, regs_thread(g), g->scratch);
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_str(g, "OK");
}

static void do_read_mem(struct mt_gdb *g, const char *args)
{
	uint64_t addr, len;
	ssize_t n;

	if (!mt_gdb_parse_range(&args, &addr, &len, 0) || *args)
		return mt_gdb_reply_error(g, EINVAL);
	if (len > (MT_GDB_PACKET_MAX - 4) / 2)
		len = (MT_GDB_PACKET_MAX - 4) / 2;
	n = g->ops->read_mem(g->ctx, addr, g->scratch, len);
	if (n < 0)
		return mt_gdb_reply_error(g, (int)n);
	if (n == 0 && len)
		return mt_gdb_reply_error(g, EFAULT);
	mt_gdb_reply_hex(g, g->scratch, (size_t)n);
}

/*
 * M ADDR,LEN:HEX or X ADDR,LEN:BINARY (args is writable: the packet buffer, end its end). X's data
 * is binary: measured by the packet's length, a zero byte in it included.
 */
static void do_write_mem(struct mt_gdb *g, char *args, const char *end, bool binary)
{
	const char *p = args;
	uint64_t addr, len;
	char *data;
	ssize_t n;
	int err;

	if (!mt_gdb_parse_range(&p, &addr, &len, ':') || len > MT_GDB_PACKET_MAX)
		return mt_gdb_reply_error(g, EINVAL);
	data = args + (p - args);
	if (binary) {
		n = mt_gdb_unescape(data, (size_t)(end - data));
		if (n != (ssize_t)len)
			return mt_gdb_reply_error(g, EINVAL);
		memcpy(g->scratch, data, len);
	} else if (!mt_gdb_decode_hex(data, strlen(data), g->scratch, len)) {
		return mt_gdb_reply_error(g, EINVAL);
	}
	err = len ? g->ops->write_mem(g->ctx, addr, g->scratch, len) : 0;
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_str(g, "OK");
}

/*
 * Z1 to Z4 through the target's debug registers. x86 has no read-only watchpoint: Z3 gets the
 * empty reply, as gdbserver's, and gdb then watches reads with an access watchpoint. Whether
 * the point was inserted (or removed): the reply then is OK.
 */
static bool do_hw_point(struct mt_gdb *g, uint64_t type, uint64_t addr, uint64_t len, bool insert)
{
	int err;

	if (!g->ops->insert_hw_point || type == MT_GDB_HW_READ)
		return false; /* the empty reply: not supported */
	if (insert)
		err = g->ops->insert_hw_point(g->ctx, (enum mt_gdb_hw_kind)type, addr, len);
	else
		err = g->ops->remove_hw_point(g->ctx, (enum mt_gdb_hw_kind)type, addr, len);
	if (err == -EOPNOTSUPP) {
		mt_gdb_reply_message(
		    g,
		    "this kernel refuses hardware breakpoints and watchpoints (debug registers); "
		    "use software ones: set can-use-hw-watchpoints 0");
		return false;
	}
	if (err == -ENOSPC) {
		mt_gdb_reply_message(
		    g, "all 4 debug registers are in use: delete a hardware breakpoint or "
		       "watchpoint, or set can-use-hw-watchpoints 0");
		return false;
	}
	if (err) {
		mt_gdb_reply_error(g, err);
		return false;
	}
	mt_gdb_reply_str(g, "OK");
	return true;
}

/* An error reply for Z's options: E.TEXT for gdb to show, E NN when out of memory. */
static void reply_option_error(struct mt_gdb *g, int err, const char *why)
{
	if (err == -ENOMEM || !why)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_message(g, why);
}

/* The breakpoint inserted (or removed): its conditions and commands kept (or dropped). */
static void point_done(struct mt_gdb *g, int err, uint64_t type, uint64_t addr,
		       struct mt_gdb_point *p)
{
	if (!err && p)
		err = mt_gdb_point_keep(g, type, addr, p);
	else
		mt_gdb_point_discard(p);
	if (!err && !p)
		mt_gdb_point_drop(g, type, addr);
	if (err)
		return mt_gdb_reply_error(g, err);
	mt_gdb_reply_str(g, "OK");
}

/*
 * Z TYPE,ADDR,KIND[;X...][;cmds:...] or z TYPE,ADDR,KIND: software breakpoints (0), hardware
 * points (1 to 4); a breakpoint's conditions and commands (Z0, Z1) are checked first.
 */
static void do_breakpoint(struct mt_gdb *g, const char *args, bool insert)
{
	struct mt_gdb_point *p = NULL;
	const char *why = NULL;
	uint64_t type, addr, kind;
	int err;

	if (!mt_gdb_parse_hex(&args, &type) || *args++ != ',' ||
	    !mt_gdb_parse_range(&args, &addr, &kind, 0) || (*args && *args != ';'))
		return mt_gdb_reply_error(g, EINVAL);
	if (*args && (!insert || type > MT_GDB_HW_EXEC || !g->ops->target_conditions))
		return mt_gdb_reply_error(g, EINVAL);
	if (insert && type <= MT_GDB_HW_EXEC) {
		err = mt_gdb_point_parse(args, &p, &why);
		if (err)
			return reply_option_error(g, err, why);
	}
	if (type >= MT_GDB_HW_EXEC && type <= MT_GDB_HW_ACCESS) {
		if (!do_hw_point(g, type, addr, kind, insert) || type != MT_GDB_HW_EXEC)
			return mt_gdb_point_discard(p);
		mt_gdb_reply_reset(g);
		return point_done(g, 0, type, addr, p);
	}
	if (type != 0)
		return; /* the empty reply: not supported */
	if (insert)
		err = g->ops->insert_breakpoint(g->ctx, addr, (unsigned int)kind);
	else
		err = g->ops->remove_breakpoint(g->ctx, addr, (unsigned int)kind);
	point_done(g, err, type, addr, p);
}

static void start_resume(struct mt_gdb *g, const struct mt_gdb_action *a, size_t n)
{
	int err;

	/* The process ended while gdb had it stopped: this is when gdb hears of it. */
	if (stop_ends(&g->last)) {
		mt_gdb_reply_stop(g, &g->last);
		g->finished = true;
		return;
	}
	err = g->ops->resume(g->ctx, a, n);
	if (err)
		return mt_gdb_reply_error(g, err);
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

	if ((cmd == 'C' || cmd == 'S') && !mt_gdb_parse_hex(&args, &sig))
		return mt_gdb_reply_error(g, EINVAL);
	if (*args)
		return mt_gdb_reply_error(g, EINVAL);
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
			return mt_gdb_reply_error(g, E2BIG);
		a[n] = (struct mt_gdb_action){.kind = (char)(*p | 0x20), .tid = -1};
		if (*p != 'c' && *p != 'C' && *p != 's' && *p != 'S')
			return mt_gdb_reply_error(g, EINVAL);
		sig = 0;
		if (*p++ == 'C' || p[-1] == 'S') {
			if (!mt_gdb_parse_hex(&p, &sig))
				return mt_gdb_reply_error(g, EINVAL);
		}
		a[n].sig = mt_gdb_signal_to_host((int)sig);
		if (*p == ':') {
			p++;
			if (!mt_gdb_parse_ptid(&p, &a[n].pid, &a[n].tid))
				return mt_gdb_reply_error(g, EINVAL);
			/* Every process (p-1), or any thread of one (0): all of them. */
			if (a[n].pid < 0 || a[n].tid == 0)
				a[n].tid = -1;
			if (a[n].pid < 0)
				a[n].pid = 0;
		}
		n++;
	}
	if (*p || !n)
		return mt_gdb_reply_error(g, EINVAL);
	start_resume(g, a, n);
}

static void do_set_thread(struct mt_gdb *g, const char *args)
{
	char which = *args++;
	pid_t pid, tid;

	if ((which != 'g' && which != 'c') || !mt_gdb_parse_ptid(&args, &pid, &tid) || *args)
		return mt_gdb_reply_error(g, EINVAL);
	/* Any thread of process pid: its main thread, whose tid is pid. */
	if (tid <= 0 && pid > 0)
		tid = pid;
	if (which == 'c') {
		g->c_tid = tid;
		return mt_gdb_reply_str(g, "OK");
	}
	g->g_tid = tid;
	select_thread(g, tid > 0 ? tid : 0);
	mt_gdb_reply_str(g, "OK");
}

static void do_thread_alive(struct mt_gdb *g, const char *args)
{
	pid_t tids[MT_GDB_MAX_THREADS], tid, pid;
	int n;

	if (!mt_gdb_parse_ptid(&args, &pid, &tid) || *args)
		return mt_gdb_reply_error(g, EINVAL);
	n = mt_gdb_list_threads(g, tids);
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return mt_gdb_reply_str(g, "OK");
	mt_gdb_reply_error(g, ESRCH);
}

void mt_gdb_final_reply_later(struct mt_gdb *g, char *buf, size_t len)
{
	g->final_buf = buf;
	g->final_cap = len;
}

/* The reply built, the session's last: into final_buf when the caller sends it later. */
static void hold_final(struct mt_gdb *g)
{
	size_t n;

	if (!g->final_buf)
		return;
	n = mt_gdb_frame_reply(g);
	if (n >= g->final_cap)
		return;
	memcpy(g->final_buf, g->sent, n);
	g->final_buf[n] = '\0';
	g->final_held = true;
}

/* vKill or vKill;PID: how many processes are left (0: none), or a negative errno. */
static int kill_process(struct mt_gdb *g, const char *rest)
{
	uint64_t pid;

	if (*rest != ';' || !g->multiprocess || !g->ops->kill_process)
		return g->ops->kill(g->ctx);
	rest++;
	if (!mt_gdb_parse_hex(&rest, &pid) || *rest || !pid || pid > INT32_MAX)
		return -EINVAL;
	return g->ops->kill_process(g->ctx, (pid_t)pid);
}

/* D or D;PID. */
static void do_detach(struct mt_gdb *g, const char *rest)
{
	uint64_t pid;
	int left;

	if (*rest == ';' && g->multiprocess && g->ops->detach_process) {
		rest++;
		if (!mt_gdb_parse_hex(&rest, &pid) || *rest || !pid || pid > INT32_MAX)
			return mt_gdb_reply_error(g, EINVAL);
		left = g->ops->detach_process(g->ctx, (pid_t)pid);
	} else {
		left = g->ops->detach(g->ctx) < 0 ? -EIO : 0;
	}
	if (left < 0)
		return mt_gdb_reply_error(g, left);
	g->finished = left == 0;
	mt_gdb_reply_str(g, "OK");
}

/* v packets. */
static void do_v(struct mt_gdb *g, char *pkt, size_t len)
{
	const char *rest;
	int err;

	if (strcmp(pkt, "vCont?") == 0)
		return mt_gdb_reply_str(g, "vCont;c;C;s;S");
	if (mt_gdb_starts(pkt, "vCont", &rest))
		return do_vcont(g, rest);
	if (mt_gdb_starts(pkt, "vKill", &rest)) {
		err = kill_process(g, rest);
		if (err < 0)
			return mt_gdb_reply_error(g, err);
		mt_gdb_reply_str(g, "OK");
		if (err > 0)
			return; /* other processes are still debugged */
		g->finished = true;
		return hold_final(g);
	}
	if (mt_gdb_starts(pkt, "vFile:", &rest))
		return mt_gdb_do_vfile(g, pkt, len);
	/* vMustReplyEmpty and everything else (vRun, vAttach): the empty reply. */
}

/*
 * One packet. Returns whether it is answered: a resume is answered by the stop, later; a kill
 * (k) by nothing.
 */
static bool handle_packet(struct mt_gdb *g, char *pkt, size_t len)
{
	char *args = pkt + 1;

	mt_gdb_reply_reset(g);
	if (g->running) {
		/* All-stop: gdb waits for the stop. Say so rather than act on a running target. */
		mt_gdb_reply_error(g, EBUSY);
		return true;
	}
	switch (pkt[0]) {
	case '?':
		g->g_tid = 0; /* as at any stop reply: see mt_gdb_stopped() */
		select_thread(g, 0);
		mt_gdb_reply_stop(g, &g->last);
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
		do_write_mem(g, args, pkt + len, pkt[0] == 'X');
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
		do_detach(g, args);
		break;
	case 'q':
	case 'Q':
		mt_gdb_do_query(g, pkt);
		break;
	case 'v':
		do_v(g, pkt, len);
		if (g->running || g->final_held)
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
	int hi = mt_gdb_hexval(g->sum_hex[0]), lo = mt_gdb_hexval(g->sum_hex[1]);
	int err;

	if (!g->no_ack) {
		bool good =
		    !g->in_overflow && hi >= 0 && lo >= 0 && (uint8_t)(hi << 4 | lo) == g->in_sum;

		err = mt_gdb_send_raw(g, good ? "+" : "-", 1);
		if (err || !good)
			return err;
	}
	if (g->in_overflow) {
		mt_gdb_reply_error(g, E2BIG);
		return mt_gdb_send_reply(g);
	}
	g->in[g->in_len] = '\0';
	if (!handle_packet(g, g->in, g->in_len))
		return 0;
	return mt_gdb_send_reply(g);
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
				err = mt_gdb_send_raw(g, g->sent, g->sent_len);
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
	/*
	 * gdb takes the thread of a stop reply for the stub's general thread (Hg) without saying
	 * so: register requests are that thread's from now on, as gdbserver has it. Else gdb reads
	 * the registers of the thread it last named, believing them the stopped one's.
	 */
	g->g_tid = 0;
	select_thread(g, 0);
	mt_gdb_reply_stop(g, stop);
	return mt_gdb_send_reply(g);
}

size_t mt_gdb_stopped_later(struct mt_gdb *g, const struct mt_gdb_stop *stop, char *buf, size_t len)
{
	size_t n;

	if (!g->running || !stop_ends(stop)) {
		mt_gdb_stopped(g, stop);
		return 0;
	}
	g->last = *stop;
	g->running = false;
	g->finished = true;
	mt_gdb_reply_stop(g, stop);
	n = mt_gdb_frame_reply(g);
	if (n >= len)
		return 0;
	memcpy(buf, g->sent, n);
	buf[n] = '\0';
	return n;
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
	if (g)
		mt_gdb_points_free(g);
	free(g);
}
