/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gdb's remote serial protocol, the stub's side (gdb manual, "Remote Protocol"): the bytes gdb
 * sends are framed into packets ($data#checksum, acknowledged with + or refused with - until
 * no-ack mode), each packet becomes a request on the target interface (struct mt_gdb_ops), and
 * the result becomes the reply. Nothing here knows ptrace: the gdb target implements it
 * (src/gdbtarget/gdbtarget.c); the tests implement a fake one (tests/unit_gdbremote.c).
 *
 * All-stop mode only. The target runs after a resume request and the stub says nothing until
 * the target reports its next stop with mt_gdb_stopped() (or gdb sends the interrupt byte, 0x03,
 * which becomes ops->interrupt). Thread ids are the kernel's tids, in hex; with the multiprocess
 * extensions (when gdb and the target both have them: ops->process_of) they are p<pid>.<tid>,
 * several processes may be debugged at once, and the target reports forks, vforks and execs as
 * stops (fork events, ops->follow_forks). Signal numbers are converted between gdb's numbering (the
 * protocol's) and the host's here, so that the target only sees host signals.
 */
#ifndef MT_GDBREMOTE_H
#define MT_GDBREMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest packet gdb may send us, and we it (qSupported's PacketSize). */
#define MT_GDB_PACKET_MAX 16384

/* One register of the target description, in the order of the 'g' packet. */
struct mt_gdb_reg {
	const char *name;
	unsigned int bits;
};

/* The target's architecture: its registers and the target description gdb reads (target.xml). */
struct mt_gdb_arch {
	const struct mt_gdb_reg *regs;
	size_t n_regs;
	const char *target_xml;
	const char *triple; /* for lldb's qHostInfo and qProcessInfo */
	unsigned int ptr_bytes;
	/*
	 * The registers every stop reply carries, -1 ended (gdb's "expedited" ones: the frame's),
	 * so that gdb needs no 'g' at a stop where it only looks at the pc, as after a step.
	 */
	const int *expedite;
};

/* The amd64 Linux description (src/gdbremote/gdbremote_amd64.c). */
extern const struct mt_gdb_arch mt_gdb_amd64;

struct user_regs_struct;
struct user_fpregs_struct;

/* The amd64 'g' block from ptrace's register sets (PTRACE_GETREGS, PTRACE_GETFPREGS), and back. */
void mt_gdb_amd64_from_user(const struct user_regs_struct *r, const struct user_fpregs_struct *fp,
			    uint8_t *block);
void mt_gdb_amd64_to_user(const uint8_t *block, struct user_regs_struct *r,
			  struct user_fpregs_struct *fp);

/* Byte offset of register regno in the 'g' block, its size in *len; -1 if no such register. */
long mt_gdb_reg_offset(const struct mt_gdb_arch *arch, unsigned int regno, size_t *len);
/* Size in bytes of the whole 'g' block. */
size_t mt_gdb_regs_size(const struct mt_gdb_arch *arch);

/* One action of a resume request (vCont, c, C, s, S): what one thread, or every other, does. */
struct mt_gdb_action {
	char kind; /* 'c' continue, 's' single-step */
	int sig;   /* host signal to deliver as it resumes, 0: none */
	pid_t tid; /* -1: every thread no earlier action named */
	pid_t pid; /* with tid -1: only the threads of this process (0: of every one) */
};

/* An event of the process reported as a stop (the fork events, with the multiprocess ones). */
enum mt_gdb_event {
	MT_GDB_EV_NONE,
	MT_GDB_EV_FORK,	      /* the thread forked child */
	MT_GDB_EV_VFORK,      /* ... vforked it */
	MT_GDB_EV_VFORK_DONE, /* its vfork child exec'd or ended: the memory is its own again */
	MT_GDB_EV_EXEC,	      /* the thread's process ran execve: path is the new program */
};

/* How the target stopped, as mt_gdb_stopped() reports it. */
struct mt_gdb_stop {
	enum { MT_GDB_STOP_SIGNAL, MT_GDB_STOP_EXITED, MT_GDB_STOP_KILLED } kind;
	int value;    /* host signal (SIGNAL, KILLED), exit code (EXITED) */
	pid_t tid;    /* the thread that stopped (SIGNAL) */
	bool swbreak; /* it hit a software breakpoint; its pc is already the breakpoint's */
	/* It hit a hardware point: 'h' an execution breakpoint, 'w' 'r' 'a' a watchpoint (0: none).
	 */
	char hw;
	uint64_t data_addr; /* a watchpoint's: the address it watches */
	/* A syscall stop gdb asked for (QCatchSyscalls): 'e' its entry, 'r' its return (0: none).
	 */
	char syscall;
	int sysno;
	enum mt_gdb_event event;
	pid_t child; /* FORK, VFORK: the new process */
	pid_t pid;   /* EXITED, KILLED: the process that ended (0: the one process) */
	bool others; /* EXITED, KILLED: other processes are still debugged: the session goes on */
	char path[4096]; /* EXEC */
};

/* The kinds of Z1 to Z4: an execution breakpoint, a write, read or access watchpoint. */
enum mt_gdb_hw_kind { MT_GDB_HW_EXEC = 1, MT_GDB_HW_WRITE, MT_GDB_HW_READ, MT_GDB_HW_ACCESS };

/* What vFile:fstat tells of an open file. */
struct mt_gdb_file_stat {
	uint32_t dev, ino, mode, nlink, uid, gid, rdev;
	uint64_t size, blksize, blocks;
	uint32_t atime, mtime, ctime;
};

/*
 * The target the stub drives. Every function returns 0 (or a count) or a negative errno, which
 * becomes an error reply (E + errno). ctx is the one given to mt_gdb_new().
 */
struct mt_gdb_ops {
	/* Send bytes to gdb, whole. */
	int (*send)(void *ctx, const void *buf, size_t len);
	/* The 'g' block of thread tid (mt_gdb_regs_size() bytes, target byte order). */
	int (*read_regs)(void *ctx, pid_t tid, uint8_t *buf);
	int (*write_regs)(void *ctx, pid_t tid, const uint8_t *buf);
	/* Up to len bytes at addr: returns how many were read (short at an unmapped page). */
	ssize_t (*read_mem)(void *ctx, uint64_t addr, uint8_t *buf, size_t len);
	int (*write_mem)(void *ctx, uint64_t addr, const uint8_t *buf, size_t len);
	/* A software breakpoint (Z0/z0) at addr; kind is the size gdb gives (1 on amd64). */
	int (*insert_breakpoint)(void *ctx, uint64_t addr, unsigned int kind);
	int (*remove_breakpoint)(void *ctx, uint64_t addr, unsigned int kind);
	/* Resume with actions (in gdb's order: the first that names a thread applies to it). */
	int (*resume)(void *ctx, const struct mt_gdb_action *actions, size_t n);
	/* Stop the running target (gdb's ^C): it reports the stop later, with mt_gdb_stopped(). */
	int (*interrupt)(void *ctx);
	/* The live threads, up to max, the first the process's main thread; returns how many. */
	int (*threads)(void *ctx, pid_t *tids, size_t max);
	/* End the process (k, vKill). */
	int (*kill)(void *ctx);
	/* Let the process run on without gdb (D): breakpoints removed, threads resumed. */
	int (*detach)(void *ctx);
	/* The path of the program (qXfer:exec-file:read). */
	int (*exec_file)(void *ctx, char *buf, size_t len);
	/* The process's auxiliary vector, raw (qXfer:auxv:read): into buf, returns its length. */
	ssize_t (*auxv)(void *ctx, uint8_t *buf, size_t len);
	/*
	 * Optional (NULL: not offered): the shared library list as the body of
	 * qXfer:libraries-svr4:read's document, written into buf; returns its length.
	 */
	ssize_t (*libraries_svr4)(void *ctx, char *buf, size_t len);
	/*
	 * Optional (NULL: the empty reply): lldb's qShlibInfoAddr, where the dynamic loader says
	 * where its list is: the address of the program's DT_DEBUG value, which holds r_debug's.
	 */
	int (*shlib_info_addr)(void *ctx, uint64_t *addr);
	/*
	 * Optional (NULL: the empty reply, gdb's Z1 to Z4 "not supported"): a hardware breakpoint
	 * or watchpoint of len bytes at addr. -ENOSPC: no debug register left; -EOPNOTSUPP: the
	 * kernel refuses them (the reply then tells gdb of software watchpoints).
	 */
	int (*insert_hw_point)(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len);
	int (*remove_hw_point)(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len);
	/*
	 * Optional (NULL: no vFile, gdb reads files from its own machine): the target's files, read
	 * only, as the process sees them (its root). open returns a descriptor of the target's.
	 */
	int (*file_open)(void *ctx, const char *path, int host_flags, unsigned int mode);
	ssize_t (*file_pread)(void *ctx, int fd, uint8_t *buf, size_t len, uint64_t off);
	int (*file_close)(void *ctx, int fd);
	int (*file_fstat)(void *ctx, int fd, struct mt_gdb_file_stat *st);
	/* Optional: readlink of a path as the process sees it, into buf; its length. */
	ssize_t (*file_readlink)(void *ctx, const char *path, char *buf, size_t len);
	/*
	 * Optional (NULL: QCatchSyscalls not offered): stop at the entry and return of the
	 * syscalls numbered in nrs (n of them; none: every syscall) until called with on false.
	 */
	int (*catch_syscalls)(void *ctx, bool on, const int *nrs, size_t n);
	/* Optional: the name of thread tid (its comm), into buf; 0 or a negative errno. */
	int (*thread_name)(void *ctx, pid_t tid, char *buf, size_t len);
	/*
	 * Optional (NULL: no multiprocess extensions, no fork events): the process of thread tid,
	 * or a negative errno.
	 */
	pid_t (*process_of)(void *ctx, pid_t tid);
	/*
	 * With process_of: memory, breakpoint and file requests are of thread tid's process from
	 * now on (gdb's Hg; 0: the one of the thread that stopped last).
	 */
	void (*select_thread)(void *ctx, pid_t tid);
	/*
	 * With process_of, optional: report forks, vforks (and their end) and execs as stops from
	 * now on, those gdb asked for (fork-events+, vfork-events+, exec-events+). A fork's child
	 * is debugged, stopped, until gdb detaches it.
	 */
	int (*follow_forks)(void *ctx, bool fork, bool vfork, bool exec);
	/*
	 * With process_of: let process pid run on without gdb (D;PID), or kill it (vKill;PID);
	 * returns how many processes are still debugged (0: the session is over), or an error.
	 */
	int (*detach_process)(void *ctx, pid_t pid);
	int (*kill_process)(void *ctx, pid_t pid);
	/*
	 * The target asks mt_gdb_break_reported() at each hit of a breakpoint while it runs, and
	 * resumes the thread past it when told so: the stub offers gdb to evaluate breakpoint
	 * conditions and commands itself (ConditionalBreakpoints, BreakpointCommands).
	 */
	bool target_conditions;
};

struct mt_gdb;

struct mt_gdb *mt_gdb_new(const struct mt_gdb_ops *ops, void *ctx, const struct mt_gdb_arch *arch,
			  const struct mt_gdb_stop *first);
void mt_gdb_free(struct mt_gdb *g);

/*
 * Bytes received from gdb: every complete packet is acknowledged, handled and answered. Returns
 * 0, or a negative errno when sending failed (the connection is gone).
 */
int mt_gdb_input(struct mt_gdb *g, const char *buf, size_t len);

/* The target stopped (after a resume or an interrupt): the stop reply is sent. */
int mt_gdb_stopped(struct mt_gdb *g, const struct mt_gdb_stop *stop);

/*
 * The target ended while gdb waits: the stop reply is framed into buf (len bytes, NUL-ended) for
 * the caller to send later instead of now; returns its length. 0: nothing to send later (the
 * stop was handled as mt_gdb_stopped() does, or buf too small).
 */
size_t mt_gdb_stopped_later(struct mt_gdb *g, const struct mt_gdb_stop *stop, char *buf,
			    size_t len);

/*
 * From now on, the reply that ends the session (vKill's OK) is framed into buf (len bytes,
 * NUL-ended) for the caller to send later, once it said what it has to (its summary), instead of
 * now: gdb reads the stub's stderr only while it waits for a reply.
 */
void mt_gdb_final_reply_later(struct mt_gdb *g, char *buf, size_t len);

/*
 * Thread tid stopped at one of gdb's breakpoints at addr (a software one, or with hardware true
 * a hardware one, Z1) while the target runs: whether gdb is to hear of it. Without conditions or
 * commands from gdb, always. With conditions, when one holds, or when one cannot be evaluated (an
 * unreadable address: gdb decides then). With commands (a dprintf's printf, sent to gdb's console
 * as O packets), they run when the conditions hold, and gdb hears of nothing. False: the target
 * resumes the thread past the breakpoint, as it would have run without it, and tells gdb nothing.
 */
bool mt_gdb_break_reported(struct mt_gdb *g, pid_t tid, uint64_t addr, bool hardware);

/* The target runs: a resume was asked and its stop not reported yet. */
bool mt_gdb_running(const struct mt_gdb *g);

/* The session is over: the process was killed, detached or ended (the stub said so to gdb). */
bool mt_gdb_finished(const struct mt_gdb *g);

/* Signal numbers between gdb's numbering (the protocol's) and the host's; 0 when none maps. */
int mt_gdb_signal_from_host(int sig);
int mt_gdb_signal_to_host(int gdb_sig);

#endif
