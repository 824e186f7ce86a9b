/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside memtrack's gdb target (--gdb, docs/GDB.md): the session, and what its files give each
 * other. Calls go one way, each file using only those after it: the session and its endpoint
 * (gdbtarget.c); forks, execs and ends of processes (gdbtarget_forks.c); detach and kill
 * (gdbtarget_detach.c); syscall catchpoints (gdbtarget_syscalls.c); stops and their reports
 * (gdbtarget_stops.c); resumes and the step over a breakpoint whose conditions failed
 * (gdbtarget_resume.c); files (gdbtarget_files.c, of the process gdb's requests are of) and
 * libraries (gdbtarget_libs.c), which the session alone uses; software breakpoints
 * (gdbtarget_breaks.c); memory (gdbtarget_mem.c); hardware breakpoints and watchpoints
 * (gdbtarget_hw.c); registers (gdbtarget_regs.c); the processes served (gdbtarget_procs.c).
 * The requests of struct mt_gdb_ops (gdbt_op_*) take ctx: the struct mt_gdbt.
 */
#ifndef MT_GDBTARGET_INT_H
#define MT_GDBTARGET_INT_H

#include "bpf/memtrack.h"
#include "gdbremote/gdbremote.h"
#include "gdbtarget/gdbtarget.h"

struct mt_hidden_returns;

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

/* A byte under one of memtrack's uprobes. */
struct probe_byte {
	uint64_t addr;
	uint8_t orig;
};

/* One of the 4 debug registers: an aligned piece of a hardware breakpoint or watchpoint. */
struct hw_slot {
	bool used;
	enum mt_gdb_hw_kind kind;
	uint64_t addr;	     /* the piece's */
	unsigned int len;    /* 1, 2, 4 or 8 */
	uint64_t point_addr; /* the point gdb asked for (Z), of which this is a piece */
	uint64_t point_len;
};

#define GDB_HW_SLOTS 4

/* Syscall numbers QCatchSyscalls can name one by one; a list with a larger one catches every one.
 */
#define GDB_SYSCALLS 1024

/*
 * A return address the kernel's uretprobe trampoline replaced on a thread's stack: seen at the
 * slot before the thread ran a probed function's first instruction (the uprobe's int3, whose
 * handler writes the trampoline's address there). gdb is shown ra at slot instead.
 */
struct hijacked_return {
	pid_t tid;
	uint64_t slot; /* the stack address of the return address */
	uint64_t ra;   /* the caller's, as the program pushed it */
};

/* A stop of a thread that happened while another's was being reported: told at a later resume. */
struct held_stop {
	pid_t tid;
	struct mt_gdb_stop stop;
};

enum gdb_state {
	GDB_WAITING,  /* for gdb's connection, the process parked */
	GDB_STOPPED,  /* every thread parked, gdb told */
	GDB_RUNNING,  /* resumed by gdb */
	GDB_STOPPING, /* a thread stopped for gdb, the others being interrupted */
	/* A thread steps over a breakpoint whose condition failed, the others parked for it. */
	GDB_PASSING,
};

/* What ended the session, for the summary. */
enum gdb_end {
	GDB_END_NONE,
	GDB_END_DETACH,
	GDB_END_KILL,
	GDB_END_GONE,
	GDB_END_EXIT,
	GDB_END_REQUEST, /* memtrack got a termination signal */
};

/*
 * A process served to gdb: the first one, or a child it forked, which gdb debugs until it
 * detaches it (the fork events). Its breakpoints, memtrack's probes in it, the return addresses
 * the uretprobe trampoline hides in its threads' stacks.
 */
/* A file's byte under one of memtrack's uprobes, read once (gdbtarget_mem.c). */
struct file_byte {
	struct mt_inode_key key;
	uint64_t off;
	uint8_t byte;
};

struct gdbt_proc {
	pid_t pid;
	struct gdb_break *breaks;
	size_t n_breaks;
	struct probe_byte *probes;
	size_t n_probes;
	bool probes_known;
	size_t probes_files;	     /* tracker files when they were looked up */
	uint64_t xol_start, xol_end; /* the kernel's [uprobes] area: the uretprobe trampoline */
	bool xol_looked; /* ... not there when looked for since the process last stopped or ran */
	struct hijacked_return *rets;
	size_t n_rets;
	bool forked;  /* a child gdb was not told of yet: told once its first thread parked */
	bool resumed; /* gdb resumed it */
	bool kernel_rets_known; /* the kernel's hidden returns were read since it last ran */
	pid_t exec_tid; /* ran execve: gdb is told once memtrack let this thread go on (0: no) */
};

struct mt_gdbt {
	struct mt_gdbt_config cfg;
	struct mt_gdbt_host host;
	struct mt_gdb *conn;
	int listen_fd; /* until gdb connects (-1: none) */
	int in_fd, out_fd;
	bool stdio;
	bool tcp;
	char addr[256];		  /* where gdb connects, as printed */
	char sock_dir[128];	  /* the private directory of the default socket ("": none) */
	pid_t pid;		  /* the first process served (0: none yet) */
	struct gdbt_proc **procs; /* the processes served now */
	size_t n_procs;
	pid_t cur; /* the process of memory and breakpoint requests (gdb's Hg; 0: the stop's) */
	bool fork_events, vfork_events, exec_events; /* gdb follows them (qSupported) */
	unsigned int forks_followed;		     /* children gdb resumed (the summary) */
	struct mt_hidden_returns *hidden; /* the reader of the kernel's hidden returns, once used */
	int hidden_err;			  /* it could not be loaded */
	enum gdb_state state;
	bool over; /* the session ended: the process runs on as in any run */
	enum gdb_end end;
	unsigned int stops; /* stops gdb was told of */
	struct mt_gdb_stop stop;
	struct hw_slot hw[GDB_HW_SLOTS];
	unsigned int hw_gen; /* bumped at each change: threads behind it get the registers again */
	struct held_stop *held;
	size_t n_held;
	bool fork_said;	     /* the served process forked: gdb was told it stays with it */
	bool catch_syscalls; /* QCatchSyscalls: threads resumed with PTRACE_SYSCALL */
	bool syscall_stops;  /* ... since the first: PTRACE_O_TRACESYSGOOD set */
	bool catch_every;    /* ... stopping at every syscall, else at those in catch_nrs */
	uint8_t catch_nrs[GDB_SYSCALLS / 8];
	struct file_byte *file_bytes; /* every process's files: read once */
	size_t n_file_bytes;
	pid_t passing_tid;     /* a thread stepping over a breakpoint whose condition failed */
	pid_t passing_pid;     /* ... its process */
	uint64_t passing_addr; /* ... that breakpoint, out until the step ends */
	bool passing_begun;    /* ... the step just began: its end is the thread's next stop */
	bool pass_stepping;    /* ... the step is under way */
	bool pass_interrupt;   /* gdb's ^C came during a pass: reported at its end */
	int files[16];	       /* vFile's open descriptors, -1: free */
	char exe[4096];
};

/* ---- the processes served (gdbtarget_procs.c) ---- */
struct mt_gdbt_thread *gdbt_parked(struct mt_gdbt *g, pid_t tid);
struct gdbt_proc *gdbt_proc_of(struct mt_gdbt *g, pid_t pid);
struct gdbt_proc *gdbt_proc_of_thread(struct mt_gdbt *g, const struct mt_gdbt_thread *t);
/* The process of memory and breakpoint requests (NULL: none is served). */
struct gdbt_proc *gdbt_cur(struct mt_gdbt *g);
struct gdbt_proc *gdbt_add_proc(struct mt_gdbt *g, pid_t pid);
void gdbt_drop_proc(struct mt_gdbt *g, struct gdbt_proc *p);
int gdbt_op_threads(void *ctx, pid_t *tids, size_t max);

/* ---- memory (gdbtarget_mem.c) ---- */
/* The process's bytes as they are, int3s and all: how many could be read; and written. */
ssize_t gdbt_read_raw(pid_t pid, uint64_t addr, uint8_t *buf, size_t len);
int gdbt_write_raw(pid_t pid, uint64_t addr, const uint8_t *buf, size_t len);
/* The memory descriptor kept for pid closed (0: whichever): at its exec, at the session's end. */
void gdbt_forget_mem(pid_t pid);
/*
 * Where memtrack's uprobes are in p, looked up again when the tracker knows more; the one at
 * addr.
 */
void gdbt_know_probes(struct mt_gdbt *g, struct gdbt_proc *p);
const struct probe_byte *gdbt_find_probe(struct gdbt_proc *p, uint64_t addr);
/* Before a thread resumes at one of memtrack's probes: the return address the kernel will hide. */
int gdbt_keep_return(struct mt_gdbt *g, struct mt_gdbt_thread *t);
/* The return addresses of calls that returned since, forgotten (the process stopped whole). */
void gdbt_forget_returns(struct mt_gdbt *g);
/* Whether addr is in the kernel's uretprobe trampoline area. */
bool gdbt_at_trampoline(struct gdbt_proc *p, uint64_t addr);
ssize_t gdbt_op_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len);
int gdbt_op_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len);

/* ---- breakpoints (gdbtarget_breaks.c) ---- */
#define GDB_INT3 0xcc
#define GDB_INT1 0xf1
struct gdb_break *gdbt_find_break(struct gdbt_proc *p, uint64_t addr);
/* The byte a breakpoint covers, as it is without gdb: the original one, or the kernel's int3. */
uint8_t gdbt_under(const struct gdb_break *b);
int gdbt_remove_break(struct gdbt_proc *p, struct gdb_break *b);
/* A SIGTRAP at one of memtrack's probes the kernel no longer takes: undone, the pc put back. */
bool gdbt_stray_probe(struct mt_gdbt *g, struct mt_gdbt_thread *t, const siginfo_t *si);
int gdbt_op_insert_breakpoint(void *ctx, uint64_t addr, unsigned int kind);
int gdbt_op_remove_breakpoint(void *ctx, uint64_t addr, unsigned int kind);

/* ---- hardware breakpoints and watchpoints (gdbtarget_hw.c) ---- */
/* Debug registers as gdb wants them, on a thread that is behind (new, or before a change). */
int gdbt_apply_hw(struct mt_gdbt *g, struct mt_gdbt_thread *t);
/* Which hardware point a thread's SIGTRAP (TRAP_HWBKPT) hit, into stop; false: none. */
bool gdbt_hw_hit(struct mt_gdbt *g, struct mt_gdbt_thread *t, struct mt_gdb_stop *stop);
int gdbt_op_insert_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len);
int gdbt_op_remove_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len);

/* ---- registers (gdbtarget_regs.c) ---- */
int gdbt_op_read_regs(void *ctx, pid_t tid, uint8_t *buf);
int gdbt_op_write_regs(void *ctx, pid_t tid, const uint8_t *buf);

/* ---- detach and kill (gdbtarget_detach.c) ---- */
/* Leave the process to memtrack alone: breakpoints out, every parked thread resumed. */
int gdbt_let_run(struct mt_gdbt *g);
int gdbt_op_detach(void *ctx);
int gdbt_op_kill(void *ctx);
int gdbt_op_detach_process(void *ctx, pid_t pid);
int gdbt_op_kill_process(void *ctx, pid_t pid);

/* ---- syscall catchpoints (gdbtarget_syscalls.c) ---- */
int gdbt_set_options(struct mt_gdbt *g);
int gdbt_op_catch_syscalls(void *ctx, bool on, const int *nrs, size_t n);

/* ---- stops (gdbtarget_stops.c) ---- */
/* Parked at this stop; at_signal: a signal-delivery-stop, where a resume can deliver a signal. */
void gdbt_park(struct mt_gdbt_thread *t, int sig, bool at_signal);
/* Every thread interrupted until all are parked, then gdb told of g->stop (GDB_STOPPING). */
int gdbt_collect(struct mt_gdbt *g);
/* A thread stopped for gdb: the process stops whole, then gdb hears of it. */
int gdbt_stop_for_gdb(struct mt_gdbt *g, const struct mt_gdb_stop *stop);
/* A stop kept for a later resume, the process being stopped for another. */
int gdbt_hold(struct mt_gdbt *g, const struct mt_gdb_stop *stop);
/* A stop of an event of thread t for gdb: reported, or held while the process is being stopped. */
int gdbt_event_stop(struct mt_gdbt *g, struct mt_gdbt_thread *t, const struct mt_gdb_stop *stop);
int gdbt_op_interrupt(void *ctx);

/* ---- resumes (gdbtarget_resume.c) ---- */
/* Thread t single-stepped by memtrack on gdb's behalf: MT_GDBT_LEAVE, or an error. */
int gdbt_step_on(struct mt_gdbt_thread *t);
/* The passing thread steps over its breakpoint, the others parked. */
int gdbt_pass_step(struct mt_gdbt *g);
/* The pass over a breakpoint is over: the threads it parked run on, or the process stops. */
int gdbt_end_pass(struct mt_gdbt *g);
/* A thread that stepped over a breakpoint whose conditions failed: the breakpoint goes back in. */
int gdbt_put_back_passed(struct mt_gdbt *g, struct mt_gdbt_thread *t);
int gdbt_op_resume(void *ctx, const struct mt_gdb_action *a, size_t n);

/* ---- files (gdbtarget_files.c) ---- */
int gdbt_op_exec_file(void *ctx, char *buf, size_t len);
ssize_t gdbt_op_auxv(void *ctx, uint8_t *buf, size_t len);
int gdbt_op_thread_name(void *ctx, pid_t tid, char *buf, size_t len);
int gdbt_op_file_open(void *ctx, const char *path, int host_flags, unsigned int mode);
ssize_t gdbt_op_file_pread(void *ctx, int fd, uint8_t *buf, size_t len, uint64_t off);
int gdbt_op_file_close(void *ctx, int fd);
int gdbt_op_file_fstat(void *ctx, int fd, struct mt_gdb_file_stat *st);
ssize_t gdbt_op_file_readlink(void *ctx, const char *path, char *buf, size_t len);
/* The descriptors gdb left open, closed. */
void gdbt_close_files(struct mt_gdbt *g);

/* ---- the host's (struct mt_gdbt_host) ---- */
static inline struct mt_gdbt_thread *gdbt_next_thread(struct mt_gdbt *g, size_t *pos)
{
	return g->host.next_thread(g->host.ctx, pos);
}

static inline struct mt_gdbt_thread *gdbt_find_thread(struct mt_gdbt *g, pid_t tid)
{
	return g->host.find_thread(g->host.ctx, tid);
}

#endif
