// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack as gdb's remote target (--gdb, docs/GDB.md). One process of the tree (the command at
 * its exec, or the one a stop point selects) is served to gdb over the remote protocol
 * (src/gdbremote/gdbremote.c), from the supervisor's own ptrace loop: memtrack stays the tracer of
 * every thread, so its own stops (watcher, back-pressure, forks, execs) are handled as in any run
 * and never shown to gdb, and every allocation is recorded while gdb has the process.
 *
 * All-stop: when a thread of the process stops for gdb (a breakpoint, a step, a signal, gdb's
 * interrupt), every other thread of it is interrupted (PTRACE_INTERRUPT) and parked at its next
 * stop, whatever that stop is (memtrack handles it first); once all are parked, gdb hears of the
 * stop. A parked thread stays in its ptrace stop until gdb resumes it. The rest of the tree runs
 * on meanwhile, handled by the same loop, which also reads gdb's packets (sup_gdb_tick()).
 *
 * Breakpoints are int3 bytes memtrack writes itself; memory reads show the original bytes under
 * them and under memtrack's own uprobes (the kernel writes an int3 there too), so that gdb
 * disassembles and unwinds what the program really holds.
 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "gdbremote/gdbremote.h"
#include "base/printable.h"
#include "tracker/procmaps.h"
#include "supervisor/supervisor_int.h"

#define INT3 0xcc

/*
 * One of gdb's breakpoints: an int3 of memtrack's. At one of memtrack's uprobes the kernel's int3
 * is there already, and the kernel takes its trap without the thread ever reporting it: there the
 * breakpoint is an int1 (ICEBP) instead, which traps to the tracer as SIGTRAP (TRAP_BRKPT). gdb
 * steps over a breakpoint with it removed, the kernel's int3 back: the uprobe fires then, once.
 */
struct gdb_break {
	uint64_t addr;
	uint8_t orig;  /* the byte under the int3 (the file's, at a uprobe) */
	bool at_probe; /* an int1 over the kernel's int3 */
};

#define INT1 0xf1

/* A byte under one of memtrack's uprobes. */
struct probe_byte {
	uint64_t addr;
	uint8_t orig;
};

enum gdb_state {
	GDB_WAITING,  /* for gdb's connection, the process parked */
	GDB_STOPPED,  /* every thread parked, gdb told */
	GDB_RUNNING,  /* resumed by gdb */
	GDB_STOPPING, /* a thread stopped for gdb, the others being interrupted */
};

struct sup_gdb {
	struct mt_gdb *conn;
	int listen_fd; /* TCP, until gdb connects (-1: none) */
	int in_fd, out_fd;
	bool stdio;
	char addr[128]; /* where gdb connects, as printed */
	pid_t pid;	/* the process served (0: none yet) */
	int proc;
	enum gdb_state state;
	bool over; /* the session ended: the process runs on as in any run */
	struct mt_gdb_stop stop;
	struct gdb_break *breaks;
	size_t n_breaks;
	struct probe_byte *probes;
	size_t n_probes;
	bool probes_known;
	size_t probes_files; /* tracker files when they were looked up */
	char exe[4096];
};

/* ---- which threads ----------------------------------------------------------------------- */

static struct sup_gdb *active(const struct sup *s)
{
	struct sup_gdb *g = s->gdb;

	return g && g->pid && !g->over ? g : NULL;
}

bool sup_gdb_owns(const struct sup *s, const struct tracee *t)
{
	const struct sup_gdb *g = active(s);

	if (!g)
		return false;
	if (t->proc >= 0)
		return t->proc == g->proc;
	return t->tgid == g->pid;
}

/* The parked thread tid of the process (0 or -1: the thread that stopped). */
static struct tracee *parked(struct sup *s, pid_t tid)
{
	struct tracee *t;

	if (tid <= 0)
		tid = s->gdb->stop.tid;
	t = sup_find_tracee(s, tid);
	return t && sup_gdb_owns(s, t) && t->gdb_parked ? t : NULL;
}

/* ---- memory ------------------------------------------------------------------------------ */

struct probe_scan {
	struct sup *s;
	struct sup_gdb *g;
	int err;
};

static int add_probe_byte(struct sup_gdb *g, uint64_t addr, uint8_t orig)
{
	struct probe_byte *grown = realloc(g->probes, (g->n_probes + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	g->probes = grown;
	g->probes[g->n_probes++] = (struct probe_byte){addr, orig};
	return 0;
}

/* The probes of the file mapped at e that fall in it: their addresses and original bytes. */
static int scan_mapping(const struct mt_map_entry *e, void *arg)
{
	struct probe_scan *ps = arg;
	size_t n = mt_tracker_file_count(ps->s->tracker);

	for (size_t i = 0; i < n; i++) {
		const struct mt_tracked_file *f = mt_tracker_file(ps->s->tracker, i);
		int fd;

		if (!f->n_points || !mt_inode_same_number(&f->key, &e->key))
			continue;
		fd = f->fd > 0 ? f->fd : open(f->path, O_RDONLY | O_CLOEXEC);
		for (size_t k = 0; k < f->n_points && fd >= 0; k++) {
			uint64_t off = f->points[k].probe_offset;
			uint8_t orig;

			if (off < e->offset || off - e->offset >= e->end - e->start)
				continue;
			if (pread(fd, &orig, 1, (off_t)off) != 1)
				continue;
			ps->err = add_probe_byte(ps->g, e->start + off - e->offset, orig);
			if (ps->err)
				break;
		}
		if (fd >= 0 && fd != f->fd)
			close(fd);
	}
	return ps->err ? 1 : 0;
}

/* Where memtrack's uprobes are in the process, looked up again when the tracker knows more. */
static void know_probes(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	struct probe_scan ps = {s, g, 0};
	size_t files = s->tracker ? mt_tracker_file_count(s->tracker) : 0;

	if (g->probes_known && files == g->probes_files)
		return;
	g->n_probes = 0;
	g->probes_files = files;
	g->probes_known = true;
	if (files)
		mt_procmaps_for_each_exec(g->pid, scan_mapping, &ps);
}

static struct gdb_break *find_break(struct sup_gdb *g, uint64_t addr)
{
	for (size_t i = 0; i < g->n_breaks; i++)
		if (g->breaks[i].addr == addr)
			return &g->breaks[i];
	return NULL;
}

static const struct probe_byte *find_probe(struct sup_gdb *g, uint64_t addr)
{
	for (size_t i = 0; i < g->n_probes; i++)
		if (g->probes[i].addr == addr)
			return &g->probes[i];
	return NULL;
}

static int open_mem(pid_t pid, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	return open(path, flags | O_CLOEXEC);
}

/* The process's bytes as they are, int3s and all; how many could be read. */
static ssize_t read_raw(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	int fd = open_mem(pid, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		n = errno == EIO || errno == EFAULT ? 0 : -errno;
	close(fd);
	return n;
}

static int write_raw(pid_t pid, uint64_t addr, const uint8_t *buf, size_t len)
{
	int fd = open_mem(pid, O_RDWR);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The bytes the program holds: the original ones under gdb's breakpoints and memtrack's probes. */
static void unmask(struct sup *s, uint64_t addr, uint8_t *buf, size_t len)
{
	struct sup_gdb *g = s->gdb;

	know_probes(s);
	for (size_t i = 0; i < g->n_breaks; i++)
		if (g->breaks[i].addr - addr < len)
			buf[g->breaks[i].addr - addr] = g->breaks[i].orig;
	for (size_t i = 0; i < g->n_probes; i++)
		if (g->probes[i].addr - addr < len)
			buf[g->probes[i].addr - addr] = g->probes[i].orig;
}

static ssize_t op_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	struct sup *s = ctx;
	ssize_t n = read_raw(s->gdb->pid, addr, buf, len);

	if (n > 0)
		unmask(s, addr, buf, (size_t)n);
	return n;
}

/*
 * gdb writes the program's bytes: under a breakpoint the write becomes the byte restored at its
 * removal, and the int3 stays; under a probe of memtrack's the kernel's int3 stays.
 */
static int op_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;
	uint8_t *copy = malloc(len);
	int err;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	know_probes(s);
	for (size_t i = 0; i < g->n_breaks; i++) {
		struct gdb_break *b = &g->breaks[i];

		if (b->addr - addr >= len)
			continue;
		if (!b->at_probe)
			b->orig = copy[b->addr - addr];
		copy[b->addr - addr] = b->at_probe ? INT1 : INT3;
	}
	for (size_t i = 0; i < g->n_probes; i++)
		if (g->probes[i].addr - addr < len)
			copy[g->probes[i].addr - addr] = INT3;
	err = write_raw(g->pid, addr, copy, len);
	free(copy);
	return err;
}

/* ---- breakpoints ------------------------------------------------------------------------- */

static int op_insert_breakpoint(void *ctx, uint64_t addr, unsigned int kind)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;
	struct gdb_break b = {.addr = addr};
	const struct probe_byte *p;
	struct gdb_break *grown;
	uint8_t int3 = INT3, int1 = INT1;
	ssize_t n;
	int err;

	(void)kind;
	if (find_break(g, addr))
		return 0;
	grown = realloc(g->breaks, (g->n_breaks + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	g->breaks = grown;
	know_probes(s);
	p = find_probe(g, addr);
	if (p) {
		b.orig = p->orig;
		b.at_probe = true;
		err = write_raw(g->pid, addr, &int1, 1);
	} else {
		n = read_raw(g->pid, addr, &b.orig, 1);
		err = n == 1 ? write_raw(g->pid, addr, &int3, 1) : n < 0 ? (int)n : -EFAULT;
	}
	if (err)
		return err;
	g->breaks[g->n_breaks++] = b;
	return 0;
}

/* The byte a breakpoint covers, as it is without gdb: the original one, or the kernel's int3. */
static uint8_t under(const struct gdb_break *b)
{
	return b->at_probe ? INT3 : b->orig;
}

static int remove_break(struct sup *s, struct gdb_break *b)
{
	struct sup_gdb *g = s->gdb;
	uint8_t byte = under(b);
	int err = write_raw(g->pid, b->addr, &byte, 1);

	*b = g->breaks[--g->n_breaks];
	return err;
}

static int op_remove_breakpoint(void *ctx, uint64_t addr, unsigned int kind)
{
	struct sup *s = ctx;
	struct gdb_break *b = find_break(s->gdb, addr);

	(void)kind;
	return b ? remove_break(s, b) : 0;
}

/* ---- registers --------------------------------------------------------------------------- */

/* Both register sets of a parked thread of the served process; -ESRCH when tid is not one. */
static int get_regs(struct sup *s, pid_t tid, struct tracee **t, struct user_regs_struct *r,
		    struct user_fpregs_struct *fp)
{
	*t = parked(s, tid);
	if (!*t)
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, (*t)->tid, 0, r) < 0 ||
	    ptrace(PTRACE_GETFPREGS, (*t)->tid, 0, fp) < 0)
		return -errno;
	return 0;
}

static int op_read_regs(void *ctx, pid_t tid, uint8_t *buf)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	struct tracee *t;
	int err = get_regs(ctx, tid, &t, &r, &fp);

	if (err)
		return err;
	mt_gdb_amd64_from_user(&r, &fp, buf);
	return 0;
}

static int op_write_regs(void *ctx, pid_t tid, const uint8_t *buf)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	struct tracee *t;
	int err = get_regs(ctx, tid, &t, &r, &fp);

	if (err)
		return err;
	mt_gdb_amd64_to_user(buf, &r, &fp);
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SETFPREGS, t->tid, 0, &fp) < 0)
		return -errno;
	return 0;
}

/* ---- stopping and resuming --------------------------------------------------------------- */

static void park(struct tracee *t, int sig)
{
	t->gdb_parked = true;
	t->gdb_interrupted = false;
	t->gdb_step = false;
	t->gdb_sig = sig;
}

/*
 * All-stop: interrupt every thread of the process that is not parked yet; when all are, the stop
 * is gdb's. Threads created meanwhile are caught here too, at the next look.
 */
static int collect(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	bool all = true;

	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!sup_gdb_owns(s, t) || t->gdb_parked)
			continue;
		all = false;
		if (t->gdb_interrupted)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		t->gdb_interrupted = true;
	}
	if (!all || g->state != GDB_STOPPING)
		return 0;
	g->state = GDB_STOPPED;
	g->probes_known = false; /* files may have been mapped while it ran */
	return g->conn ? mt_gdb_stopped(g->conn, &g->stop) : 0;
}

/* A thread stopped for gdb: the process stops whole, then gdb hears of it. */
static int stop_for_gdb(struct sup *s, struct tracee *t, int sig, bool swbreak)
{
	struct sup_gdb *g = s->gdb;

	park(t, 0);
	g->stop = (struct mt_gdb_stop){
	    .kind = MT_GDB_STOP_SIGNAL, .value = sig, .tid = t->tid, .swbreak = swbreak};
	g->state = GDB_STOPPING;
	return collect(s);
}

/*
 * Whether a thread's SIGTRAP is one of gdb's breakpoints, its pc then put back on it: an int3
 * traps as SI_KERNEL, an int1 as TRAP_BRKPT, both with the pc after them.
 */
static bool back_on_break(struct sup_gdb *g, struct tracee *t, const siginfo_t *si)
{
	struct user_regs_struct r;
	struct gdb_break *b;

	if (si->si_signo != SIGTRAP || (si->si_code != SI_KERNEL && si->si_code != TRAP_BRKPT))
		return false;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return false;
	b = find_break(g, r.rip - 1);
	if (!b || b->at_probe != (si->si_code == TRAP_BRKPT))
		return false;
	r.rip--;
	return ptrace(PTRACE_SETREGS, t->tid, 0, &r) == 0;
}

/*
 * A signal-delivery-stop of a thread of the process (not one of memtrack's own SIGSTOPs). While
 * the process runs, it is gdb's stop. While it is being stopped, a thread that hit a breakpoint
 * will hit it again (its pc goes back), and another signal is kept for its resume.
 */
int sup_gdb_signal(struct sup *s, struct tracee *t, int sig, const siginfo_t *si)
{
	struct sup_gdb *g = s->gdb;
	bool on_break = back_on_break(g, t, si);
	int err;

	if (g->state == GDB_RUNNING) {
		err = stop_for_gdb(s, t, sig, on_break);
	} else {
		park(t, on_break ? 0 : sig);
		err = collect(s);
	}
	return err ? err : SUP_LEAVE;
}

/*
 * What the stop handler decided for a thread of the process (next, a SUP_RESUME): while gdb has
 * the process stopped, the thread is parked instead (with the signal it was to get); while gdb
 * has it stepping, it steps on.
 */
int sup_gdb_carry(struct sup *s, struct tracee *t, int next)
{
	struct sup_gdb *g = s->gdb;
	int err;

	if (next <= SUP_LEAVE)
		return next;
	if (g->state != GDB_RUNNING) {
		park(t, next - 1);
		err = collect(s);
		return err ? err : SUP_LEAVE;
	}
	t->gdb_interrupted = false;
	if (!t->gdb_step)
		return next;
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, (void *)(long)(next - 1)) < 0 && errno != ESRCH)
		return -errno;
	return SUP_LEAVE;
}

static const struct mt_gdb_action *action_for(const struct mt_gdb_action *a, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == tid)
			return &a[i];
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == -1)
			return &a[i];
	return NULL;
}

static int op_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;

	g->state = GDB_RUNNING;
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];
		const struct mt_gdb_action *act;
		int sig;

		if (!sup_gdb_owns(s, t) || !t->gdb_parked)
			continue;
		act = action_for(a, n, t->tid);
		if (!act)
			continue; /* not named: it stays stopped */
		sig = act->sig ? act->sig : t->gdb_sig;
		t->gdb_parked = false;
		t->gdb_step = act->kind == 's';
		if (ptrace(t->gdb_step ? PTRACE_SINGLESTEP : PTRACE_CONT, t->tid, 0,
			   (void *)(long)sig) < 0 &&
		    errno != ESRCH)
			return -errno;
	}
	return 0;
}

static int op_interrupt(void *ctx)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;

	if (g->state != GDB_RUNNING)
		return 0;
	g->stop = (struct mt_gdb_stop){.kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = g->pid};
	g->state = GDB_STOPPING;
	return collect(s);
}

/* ---- threads, the program, the end ------------------------------------------------------- */

static int op_threads(void *ctx, pid_t *tids, size_t max)
{
	struct sup *s = ctx;
	size_t n = 0;

	if (max && sup_find_tracee(s, s->gdb->pid))
		tids[n++] = s->gdb->pid;
	for (size_t i = 0; i < s->live.n && n < max; i++) {
		struct tracee *t = s->live.v[i];

		if (sup_gdb_owns(s, t) && t->tid != s->gdb->pid)
			tids[n++] = t->tid;
	}
	return (int)n;
}

static int op_exec_file(void *ctx, char *buf, size_t len)
{
	struct sup *s = ctx;
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", s->gdb->pid);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static ssize_t op_auxv(void *ctx, uint8_t *buf, size_t len)
{
	struct sup *s = ctx;
	char path[64];
	ssize_t n = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", s->gdb->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)n < len && (r = read(fd, buf + n, len - (size_t)n)) > 0)
		n += r;
	close(fd);
	return n;
}

static ssize_t op_libraries(void *ctx, char *buf, size_t len)
{
	struct sup *s = ctx;

	return sup_gdb_libraries(s->gdb->pid, buf, len);
}

static int op_shlib_info_addr(void *ctx, uint64_t *addr)
{
	struct sup *s = ctx;

	return sup_gdb_debug_slot(s->gdb->pid, addr);
}

/* Leave the process to memtrack alone: breakpoints out, every parked thread resumed. */
static int let_run(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	int err = 0;

	while (g->n_breaks)
		remove_break(s, &g->breaks[g->n_breaks - 1]);
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!sup_gdb_owns(s, t))
			continue;
		t->gdb_interrupted = false;
		t->gdb_step = false;
		if (!t->gdb_parked)
			continue;
		t->gdb_parked = false;
		if (!err)
			err = sup_resume(t->tid, t->gdb_sig);
	}
	g->over = true;
	return err;
}

static int op_detach(void *ctx)
{
	return let_run(ctx);
}

static int op_kill(void *ctx)
{
	struct sup *s = ctx;
	pid_t pid = s->gdb->pid;

	/* SIGKILL ends even a thread in a ptrace stop; the loop sees its end as in any run. */
	kill(pid, SIGKILL);
	return let_run(s);
}

static int op_send(void *ctx, const void *buf, size_t len)
{
	struct sup *s = ctx;
	const char *p = buf;

	while (len) {
		ssize_t n = write(s->gdb->out_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = s->gdb->out_fd, .events = POLLOUT};

			poll(&pfd, 1, -1);
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const struct mt_gdb_ops stub_ops = {
    .send = op_send,
    .read_regs = op_read_regs,
    .write_regs = op_write_regs,
    .read_mem = op_read_mem,
    .write_mem = op_write_mem,
    .insert_breakpoint = op_insert_breakpoint,
    .remove_breakpoint = op_remove_breakpoint,
    .resume = op_resume,
    .interrupt = op_interrupt,
    .threads = op_threads,
    .kill = op_kill,
    .detach = op_detach,
    .exec_file = op_exec_file,
    .auxv = op_auxv,
    .libraries_svr4 = op_libraries,
    .shlib_info_addr = op_shlib_info_addr,
};

/* ---- the connection ---------------------------------------------------------------------- */

/* HOST:PORT into a listening socket; the address as it is reachable in g->addr. */
static int listen_on(struct sup_gdb *g, const char *spec)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char host[128], port[16], shown[NI_MAXHOST];
	struct sockaddr_storage sa;
	socklen_t sa_len = sizeof(sa);
	const char *colon = strrchr(spec, ':');
	int fd = -1, one = 1, rc;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) ||
	    strlen(colon + 1) >= sizeof(port))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	snprintf(port, sizeof(port), "%s", colon + 1);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return rc == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sa_len) < 0 ||
	    getnameinfo((struct sockaddr *)&sa, sa_len, shown, sizeof(shown), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return rc ? rc : -EINVAL;
	}
	freeaddrinfo(res);
	snprintf(g->addr, sizeof(g->addr), strchr(shown, ':') ? "[%s]:%s" : "%s:%s", shown, port);
	g->listen_fd = fd;
	return 0;
}

int sup_gdb_open(struct sup *s)
{
	const char *spec = s->cfg->gdb;
	char text[MT_PRINTABLE_MAX];
	struct sup_gdb *g;
	int err;

	if (!spec)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	s->gdb = g;
	g->listen_fd = g->in_fd = g->out_fd = -1;
	if (strcmp(spec, "-") == 0) {
		g->stdio = true;
		return 0;
	}
	err = listen_on(g, spec);
	if (err)
		fprintf(stderr, "memtrack: cannot serve gdb on %s: %s\n",
			mt_printable(text, sizeof(text), spec), strerror(-err));
	return err;
}

static int connect_gdb(struct sup *s, int in_fd, int out_fd)
{
	struct sup_gdb *g = s->gdb;

	g->in_fd = in_fd;
	g->out_fd = out_fd;
	g->conn = mt_gdb_new(&stub_ops, s, &mt_gdb_amd64, &g->stop);
	if (!g->conn)
		return -ENOMEM;
	g->state = GDB_STOPPED;
	return 0;
}

/* The process reached the stop point (the command's exec, or --stop-at's): it is gdb's now. */
int sup_gdb_start(struct sup *s, struct tracee *t, const char *where)
{
	struct sup_gdb *g = s->gdb;
	const struct proc *p = &s->procs[t->proc];
	int err;

	g->pid = p->pid;
	g->proc = t->proc;
	park(t, 0);
	g->stop = (struct mt_gdb_stop){.kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = t->tid};
	g->state = GDB_WAITING;
	op_exec_file(s, g->exe, sizeof(g->exe));
	s->res->stopped_pid = p->pid;
	if (g->stdio) {
		fprintf(stderr,
			"memtrack: process %d (%s) is stopped %s; gdb drives it over stdin\n",
			p->pid, p->pos, where);
		err = connect_gdb(s, STDIN_FILENO, STDOUT_FILENO);
	} else {
		fprintf(stderr,
			"memtrack: process %d (%s) is stopped %s; memtrack waits for gdb on %s. "
			"Connect with: gdb -ex 'target remote %s' %s\n",
			p->pid, p->pos, where, g->addr, g->addr, g->exe);
		err = 0;
	}
	/* The other threads of a process stopped at a map: parked as they report. */
	if (!err)
		err = collect(s);
	return err ? err : SUP_LEAVE;
}

static void end_session(struct sup *s)
{
	struct sup_gdb *g = s->gdb;

	if (!g->over)
		let_run(s);
	if (g->conn) {
		mt_gdb_free(g->conn);
		g->conn = NULL;
		if (!g->stdio)
			close(g->in_fd);
		else
			close(STDOUT_FILENO); /* gdb's end of the pipe sees EOF */
	}
	g->in_fd = g->out_fd = -1;
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/* gdb's bytes that came, handled; its end (EOF, an error) ends the session as a detach does. */
static int read_gdb(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	char buf[4096];
	ssize_t n;
	int err;

	while (g->conn && !g->over && readable(g->in_fd)) {
		n = read(g->in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (s->cfg->verbose)
				fprintf(stderr, "memtrack: gdb went away: process %d runs on\n",
					g->pid);
			end_session(s);
			return 0;
		}
		err = mt_gdb_input(g->conn, buf, (size_t)n);
		if (err == -EPIPE || err == -ECONNRESET) {
			end_session(s);
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}

int sup_gdb_tick(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	int fd, err;

	if (!g || !g->pid)
		return 0;
	if (g->over) {
		if (g->conn)
			end_session(s);
		return 0;
	}
	if (g->listen_fd >= 0 && readable(g->listen_fd)) {
		fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			close(g->listen_fd);
			g->listen_fd = -1;
			err = connect_gdb(s, fd, fd);
			if (err)
				return err;
		}
	}
	err = read_gdb(s);
	if (!err && !g->over && g->state != GDB_RUNNING)
		err = collect(s);
	if (!err && g->conn && mt_gdb_finished(g->conn))
		end_session(s);
	return err;
}

int sup_gdb_fd(const struct sup *s)
{
	const struct sup_gdb *g = active(s);

	if (!g)
		return -1;
	return g->listen_fd >= 0 ? g->listen_fd : g->in_fd;
}

/* A fork of the process: the child is not gdb's, gdb's breakpoints are taken out of its copy. */
void sup_gdb_new_child(struct sup *s, struct tracee *t, int event)
{
	struct sup_gdb *g = s->gdb;
	unsigned long child = 0;

	if (!sup_gdb_owns(s, t) || event != PTRACE_EVENT_FORK ||
	    ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &child) < 0)
		return;
	for (size_t i = 0; i < g->n_breaks; i++) {
		uint8_t byte = under(&g->breaks[i]);

		write_raw((pid_t)child, g->breaks[i].addr, &byte, 1);
	}
}

/* The process ran execve: a new address space, none of gdb's breakpoints in it. */
void sup_gdb_exec(struct sup *s, struct tracee *t)
{
	struct sup_gdb *g = s->gdb;

	if (!sup_gdb_owns(s, t))
		return;
	g->n_breaks = 0;
	g->probes_known = false;
}

/* A thread of the process ended; the end of its leader is the process's, gdb's last stop. */
void sup_gdb_gone(struct sup *s, struct tracee *t, int status)
{
	struct sup_gdb *g = s->gdb;
	struct mt_gdb_stop end = {0};

	if (!sup_gdb_owns(s, t) || t->tid != g->pid)
		return;
	end.kind = WIFSIGNALED(status) ? MT_GDB_STOP_KILLED : MT_GDB_STOP_EXITED;
	end.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	g->n_breaks = 0; /* nothing to take out of a process that is gone */
	if (g->conn)
		mt_gdb_stopped(g->conn, &end);
	g->over = true;
}

/* Never reached: gdb never connected, or the stop point was never reached. */
void sup_gdb_report(struct sup *s)
{
	struct sup_gdb *g = s->gdb;

	if (g && g->pid && g->listen_fd >= 0)
		fprintf(stderr, "memtrack: gdb never connected to %s\n", g->addr);
}

void sup_gdb_free(struct sup *s)
{
	struct sup_gdb *g = s->gdb;

	if (!g)
		return;
	if (g->conn)
		mt_gdb_free(g->conn);
	if (g->listen_fd >= 0)
		close(g->listen_fd);
	if (g->in_fd >= 0 && !g->stdio)
		close(g->in_fd);
	free(g->breaks);
	free(g->probes);
	free(g);
	s->gdb = NULL;
}
