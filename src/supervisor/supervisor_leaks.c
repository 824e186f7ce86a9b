// SPDX-License-Identifier: GPL-2.0
/*
 * --leaks (docs/LEAKS.md): a leak scan of each process at its last thread's exit stop, while its
 * memory is still there. The events tap keeps every process's live blocks (livetable.h); at the
 * exit stop the ring is drained to now, so that the blocks are those of the stream up to the
 * process's end, and the scan's record follows them in the artifact.
 *
 * At a group exit (exit_group, a fatal signal) every thread comes to its exit stop: each is held
 * there until the last one's, so that every thread's registers and stack are roots, as they are
 * for memcheck. A thread that ends alone (the exit system call: pthread_exit) is not held (a
 * pthread_join waits for it to be gone), nor one killed by SIGKILL (an exec's other threads: the
 * exec waits for them): its registers are not roots; its stack, if still mapped, is scanned as
 * any other anonymous memory. Should a thread of the process end without an exit stop, its end
 * is the last thread's: the scan runs then, on the threads held.
 *
 * The hold is bounded (EXIT_HOLD_NS): a thread that ends alone in a way not told from a group
 * exit (seccomp's SECCOMP_RET_KILL_THREAD) would otherwise wait for threads that run on, and so
 * would whoever joins it. Past the bound, when no other thread of the process is on its way out
 * (mt_proc_task_exiting), the held threads are let go unscanned; the process's last thread scans
 * it, their registers no longer roots. The bound is checked when no stop is waiting to be read:
 * memtrack's own delay does not let them go.
 */

#include <errno.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "base/family.h"
#include "writer/artifact.h"
#include "writer/events.h"
#include "inspect/leakscan.h"
#include "inspect/livetable.h"
#include "inspect/procstatus.h"
#include "supervisor/supervisor_int.h"

/*
 * How long threads wait at their exit stops for the rest of their process. A group exit brings
 * every thread there at once (each has the kernel's SIGKILL): milliseconds, even on a loaded
 * machine; the bound is for the thread that ended alone.
 */
#define EXIT_HOLD_NS (5 * 1000000000ull)

static void tap(void *arg, const struct mt_event *ev, size_t n)
{
	mt_livetable_events(arg, ev, n);
}

int sup_leaks_start(struct sup *s)
{
	if (!s->cfg->leaks || !s->events)
		return 0;
	s->live_blocks = mt_livetable_new();
	if (!s->live_blocks)
		return -ENOMEM;
	mt_events_tap(s->events, tap, s->live_blocks);
	return 0;
}

void sup_leaks_free(struct sup *s)
{
	mt_livetable_free(s->live_blocks);
	s->live_blocks = NULL;
	for (size_t i = 0; i < s->n_procs; i++)
		free(s->procs[i].exit_held);
}

/* i386's exit (int $0x80, which a 64-bit program may use too), and x32's system calls' bit. */
#define I386_EXIT 1
#define X32_BIT	  0x40000000ull

/* Whether the system call a thread is in at its exit stop is exit: amd64's, x32's or i386's. */
static bool in_exit_call(pid_t tid, const struct user_regs_struct *regs)
{
	struct __ptrace_syscall_info info;

	if ((regs->orig_rax & ~X32_BIT) == SYS_exit)
		return true;
	/* 1 is amd64's write: i386's exit only when the call was an i386 one. */
	return regs->orig_rax == I386_EXIT &&
	       ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(info), &info) > 0 &&
	       info.arch == AUDIT_ARCH_I386;
}

/* Whether t's exit, of raw status, ends its whole process with every thread at an exit stop. */
static bool group_exit(const struct tracee *t, int status)
{
	struct user_regs_struct regs;

	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return false;
	return ptrace(PTRACE_GETREGS, t->tid, 0, &regs) == 0 && !in_exit_call(t->tid, &regs);
}

/* The process's live blocks, with the consumer held once the ring is drained to now. */
struct snapshot {
	struct mt_livetable *lt;
	pid_t pid;
	struct mt_live_block *b, *freed;
	long n, n_freed;
	long n_files; /* -E2BIG: more than MT_LIVE_FILES */
	uint16_t files[MT_LIVE_FILES];
	uint32_t flags;
};

static int take_snapshot(void *arg, struct mt_artifact_writer *w)
{
	struct snapshot *x = arg;

	(void)w;
	x->flags = mt_livetable_inexact(x->lt) ? MT_LEAKS_INEXACT : 0;
	if (mt_livetable_shared(x->lt, (uint32_t)x->pid)) {
		x->flags |= MT_LEAKS_SHARED;
		return 0;
	}
	x->n = mt_livetable_blocks(x->lt, (uint32_t)x->pid, &x->b);
	if (x->n < 0)
		return (int)x->n;
	x->n_freed = mt_livetable_freed(x->lt, (uint32_t)x->pid, &x->freed);
	x->n_files = mt_livetable_files(x->lt, (uint32_t)x->pid, x->files);
	return x->n_freed < 0 ? (int)x->n_freed : 0;
}

/*
 * Whether an allocator of the process's blocks keeps its books among them (leakscan.h): any but
 * glibc's and musl's, whose books hold no stale pointer to a live block (glibc's are in libc's
 * data and in chunk headers; musl's in meta areas of their own), and operator new's, which
 * calls one of them. An allocator not known is taken to keep them there.
 */
static bool books_apart(const struct sup *s, const struct snapshot *x)
{
	if (x->n_files < 0)
		return true;
	for (long i = 0; i < x->n_files; i++) {
		const struct mt_tracked_file *f =
		    s->tracker ? mt_tracker_file(s->tracker, x->files[i]) : NULL;

		if (!f || (f->family != MT_FAM_GLIBC && f->family != MT_FAM_MUSL &&
			   f->family != MT_FAM_CXX))
			return true;
	}
	return false;
}

/* The registers of the threads tids (those that can be read), in regs; their count. */
static size_t read_regs(const pid_t *tids, size_t n, struct user_regs_struct *regs)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += ptrace(PTRACE_GETREGS, tids[i], 0, &regs[k]) == 0;
	return k;
}

/* The CPU time of the calling thread, ns. */
static int write_record(struct sup *s, const struct snapshot *x, const uint8_t *cls,
			const struct mt_leak_stats *st, uint64_t ns, uint64_t cpu_ns)
{
	struct mt_artifact_leak_block *v = calloc(x->n ? x->n : 1, sizeof(*v));
	struct mt_artifact_leaks rec = {
	    .pid = (uint32_t)x->pid,
	    .flags = x->flags,
	    .threads = st->threads,
	    .regions = st->regions,
	    .unreadable_regions = st->unreadable_regions,
	    .unreadable_bytes = st->unreadable_bytes,
	    .scanned_bytes = st->scanned_bytes,
	    .scan_ns = ns,
	    .scan_cpu_ns = cpu_ns,
	    .n = (uint32_t)x->n,
	    .blocks = v,
	};
	int err;

	if (!v)
		return -ENOMEM;
	for (long i = 0; i < x->n; i++)
		v[i] = (struct mt_artifact_leak_block){.addr = x->b[i].addr,
						       .size = x->b[i].size,
						       .stack = x->b[i].stack,
						       .cls = cls[i]};
	/* A write error is the writer's to report: the run goes on. */
	err = mt_artifact_write_leaks(s->artifact, &rec);
	free(v);
	return err == -ENOMEM ? err : 0;
}

/* Scan process p, whose threads tids (n of them) are stopped at their exit stops. */
static int scan_process(struct sup *s, struct proc *p, const pid_t *tids, size_t n)
{
	struct snapshot x = {.lt = s->live_blocks, .pid = p->pid};
	struct user_regs_struct *regs = calloc(n ? n : 1, sizeof(*regs));
	struct mt_leak_stats st = {0};
	uint8_t *cls = NULL;
	uint64_t t0 = mt_clock_now_ns(), cpu0 = mt_clock_thread_cpu_ns();
	int err;

	if (!regs)
		return -ENOMEM;
	n = read_regs(tids, n, regs);
	err = mt_events_at_now(s->events, take_snapshot, &x);
	if (!err && !(x.flags & MT_LEAKS_SHARED)) {
		struct mt_leak_heap h = {x.b, (size_t)x.n, x.freed, (size_t)x.n_freed,
					 books_apart(s, &x)};

		cls = malloc(x.n ? (size_t)x.n : 1);
		err = cls ? mt_leak_scan(p->pid, &h, regs, n, cls, &st) : -ENOMEM;
	}
	if (!err)
		err = write_record(s, &x, cls, &st, mt_clock_now_ns() - t0,
				   mt_clock_thread_cpu_ns() - cpu0);
	if (err)
		fprintf(stderr, "memtrack: the leak scan of process %d (%s) failed: %s\n", p->pid,
			p->exe ? p->exe : "?", strerror(-err));
	free(regs);
	free(cls);
	free(x.b);
	free(x.freed);
	/* Degrade, never die: the run goes on without this process's scan. */
	return 0;
}

/* p now holds n threads at their exit stops (s counts the processes that hold some). */
static void set_held(struct sup *s, struct proc *p, size_t n)
{
	if (n && !p->n_exit_held) {
		s->exit_holding++;
		p->exit_hold_until = mt_clock_now_ns() + EXIT_HOLD_NS;
	} else if (!n && p->n_exit_held) {
		s->exit_holding--;
	}
	p->n_exit_held = n;
}

/* Resume the threads p holds at their exit stops. */
static int release_held(struct sup *s, struct proc *p)
{
	int err = 0;

	for (size_t i = 0; i < p->n_exit_held; i++) {
		int e = sup_resume(p->exit_held[i], 0);

		if (e && e != -ESRCH && !err)
			err = e;
	}
	set_held(s, p, 0);
	return err;
}

/* Scan p with its held threads and extra (0: none) as the roots' threads; resume the held. */
static int scan_and_release(struct sup *s, struct proc *p, pid_t extra)
{
	pid_t *tids = realloc(p->exit_held, (p->n_exit_held + 1) * sizeof(*tids));
	size_t n;

	if (!tids)
		return -ENOMEM;
	p->exit_held = tids;
	n = p->n_exit_held;
	if (extra)
		tids[n++] = extra;
	scan_process(s, p, tids, n);
	return release_held(s, p);
}

int sup_leaks_exit_stop(struct sup *s, struct tracee *t, int status)
{
	struct proc *p;
	pid_t *held;

	if (!s->live_blocks || t->proc < 0)
		return SUP_RESUME(0);
	p = &s->procs[t->proc];
	if (!sup_threads_running(s, t->proc, t->tid)) {
		int err = scan_and_release(s, p, t->tid);

		return err ? err : SUP_RESUME(0);
	}
	if (!group_exit(t, status))
		return SUP_RESUME(0);
	held = realloc(p->exit_held, (p->n_exit_held + 1) * sizeof(*held));
	if (!held)
		return -ENOMEM;
	p->exit_held = held;
	held[p->n_exit_held] = t->tid;
	set_held(s, p, p->n_exit_held + 1);
	return SUP_LEAVE;
}

int sup_leaks_gone(struct sup *s, struct tracee *t)
{
	struct proc *p;

	if (!s->live_blocks || t->proc < 0)
		return 0;
	p = &s->procs[t->proc];
	for (size_t i = 0; i < p->n_exit_held; i++) {
		if (p->exit_held[i] != t->tid)
			continue;
		p->exit_held[i] = p->exit_held[p->n_exit_held - 1];
		set_held(s, p, p->n_exit_held - 1);
		break;
	}
	if (!p->n_exit_held || sup_threads_running(s, t->proc, t->tid))
		return 0;
	return scan_and_release(s, p, 0);
}

uint64_t sup_leaks_wait_ns(const struct sup *s)
{
	uint64_t now, first = UINT64_MAX;

	if (!s->exit_holding)
		return UINT64_MAX;
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].n_exit_held && s->procs[i].exit_hold_until < first)
			first = s->procs[i].exit_hold_until;
	now = mt_clock_now_ns();
	return first > now ? first - now : 0;
}

/* Whether a thread of process proc not seen at its exit stop yet is on its way there. */
static bool others_ending(const struct sup *s, int proc)
{
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tracee *o = s->live.v[i];

		if (o->proc == proc && !o->exiting &&
		    mt_proc_task_exiting(s->procs[proc].pid, o->tid))
			return true;
	}
	return false;
}

int sup_leaks_tick(struct sup *s)
{
	uint64_t now;
	int err = 0;

	if (!s->exit_holding)
		return 0;
	now = mt_clock_now_ns();
	for (size_t i = 0; i < s->n_procs && !err; i++) {
		struct proc *p = &s->procs[i];

		if (!p->n_exit_held || now < p->exit_hold_until)
			continue;
		/* A group exit that is slow (its SIGKILL still pending: a thread blocked): held on.
		 */
		if (others_ending(s, (int)i))
			p->exit_hold_until = now + EXIT_HOLD_NS;
		else
			err = release_held(s, p);
	}
	return err;
}
