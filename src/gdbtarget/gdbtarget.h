/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrack's gdb target (--gdb, docs/GDB.md): one process of the tree served to gdb over the
 * remote protocol (src/gdbremote/), its threads driven with ptrace. The tracer that runs it (the
 * supervisor) stays the tracer of every thread and handles its own stops first.
 *
 * Calls go one way. The supervisor calls the target: at the stops of the served process's
 * threads, at its forks, execs and ends, and at each turn of its loop. What the target needs of
 * the supervisor it gets through struct mt_gdbt_host, which the supervisor fills: the threads of
 * the served process it traces, a thread resumed, a signal's delivery logged, whether memtrack
 * was asked to end. Each traced thread's gdb state (struct mt_gdbt_thread) is kept in the
 * supervisor's record of that thread, the target's to change.
 */
#ifndef MT_GDBTARGET_H
#define MT_GDBTARGET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mt_tracker;

/* A thread of the process served to gdb, as the target sees it. */
struct mt_gdbt_thread {
	pid_t tid;
	pid_t pid;	     /* its process: the host sets it each time it hands the thread over */
	bool parked;	     /* stopped for gdb (all-stop), until gdb resumes it */
	bool interrupted;    /* asked to stop (PTRACE_INTERRUPT), its stop not seen yet */
	bool step;	     /* resumed by gdb with a single-step */
	bool stepped;	     /* single-stepped since gdb last continued it, no trap pending */
	int sig;	     /* the signal it gets when gdb resumes it without naming one */
	bool at_signal;	     /* parked in a signal-delivery-stop: a resume can deliver a signal */
	int pass;	     /* a signal gdb gave, sent to it: let through when it arrives */
	unsigned int hw_gen; /* the debug registers it has (the target's generation of them) */
	bool pass_kept;	     /* parked by gdb when another passed a breakpoint: stays parked */
};

/* What the target needs of the tracer that runs it; ctx is given back to each. */
struct mt_gdbt_host {
	void *ctx;
	/*
	 * The next thread of the served process from *pos on (0: the first), *pos moved past it;
	 * NULL when there is none left. Only threads the tracer traces now. The host sets each
	 * one's pid.
	 */
	struct mt_gdbt_thread *(*next_thread)(void *ctx, size_t *pos);
	/* The thread tid when it is one of a served process's (its pid set); NULL otherwise. */
	struct mt_gdbt_thread *(*find_thread)(void *ctx, pid_t tid);
	/* Let stopped thread t run on, delivering sig (0: none), as the tracer resumes its own. */
	int (*resume)(void *ctx, struct mt_gdbt_thread *t, int sig);
	/* Signal sig is about to be delivered to t: logged as it is without gdb. */
	void (*log_signal)(void *ctx, struct mt_gdbt_thread *t, int sig);
	/* Whether memtrack was asked to end and has not taken the request yet. */
	bool (*request_pending)(void *ctx);
};

/* The session's settings. */
struct mt_gdbt_config {
	const char *spec; /* --gdb: HOST:PORT, "-" for stdin/stdout, "": a private Unix socket */
	bool verbose;
	const char *artifact_path;  /* where the run is recorded (NULL: nowhere) */
	struct mt_tracker *tracker; /* memtrack's probes, which gdb must not see (NULL: none) */
	int ptrace_options;	    /* the tracer's on every thread (PTRACE_SETOPTIONS) */
	/*
	 * Over gdb's pipe: the reply that ends the session, framed here to be sent after the
	 * run's summary (the caller sends it, then empties it).
	 */
	char *final_reply;
	size_t final_len;
};

/*
 * What a function returns for a thread's stop, when it returns no error (a negative errno):
 * MT_GDBT_LEAVE leaves the thread stopped as the target left it (parked, stepping);
 * MT_GDBT_RESUME(sig) continues it, delivering sig (0: none). The supervisor's encoding.
 */
#define MT_GDBT_LEAVE	    0
#define MT_GDBT_RESUME(sig) (1 + (sig))

struct mt_gdbt;

/* The endpoint gdb will connect to, opened (or stdin/stdout); *out NULL when cfg->spec is. */
int mt_gdbt_open(struct mt_gdbt **out, const struct mt_gdbt_config *cfg,
		 const struct mt_gdbt_host *host);
/*
 * Process pid (described as pos) reached the point where it is served (where says which), its
 * thread t stopped there: parked, and gdb told where to connect. Returns MT_GDBT_LEAVE or an error.
 */
int mt_gdbt_start(struct mt_gdbt *g, struct mt_gdbt_thread *t, pid_t pid, const char *pos,
		  const char *where);
/* Whether gdb drives process pid now (never before the point or after the session). */
bool mt_gdbt_serves(const struct mt_gdbt *g, pid_t pid);
/* Whether a process reached the point and was served (the session may be over). */
bool mt_gdbt_reached(const struct mt_gdbt *g);
/* The descriptor to poll for gdb's bytes or connection; -1: none. */
int mt_gdbt_fd(const struct mt_gdbt *g);

/*
 * Stops of the served process's threads (t its thread), after memtrack's own handling. A
 * signal-delivery-stop that is not memtrack's own:
 */
int mt_gdbt_signal(struct mt_gdbt *g, struct mt_gdbt_thread *t, int sig, const siginfo_t *si);
/* A syscall-stop (SIGTRAP | 0x80): only a thread gdb catches syscalls in has them. */
int mt_gdbt_syscall(struct mt_gdbt *g, struct mt_gdbt_thread *t);
/* What memtrack decided for any stop of t (next: MT_GDBT_RESUME or not), carried for gdb. */
int mt_gdbt_carry(struct mt_gdbt *g, struct mt_gdbt_thread *t, int next);
/*
 * t reported a fork or vfork (event: PTRACE_EVENT_*) of child. When gdb follows forks, the
 * child is served from now on (mt_gdbt_serves()), its threads parked as they stop, and the
 * fork is gdb's next stop.
 */
void mt_gdbt_new_child(struct mt_gdbt *g, struct mt_gdbt_thread *t, int event, pid_t child);
/* A vfork-done stop of t (PTRACE_EVENT_VFORK_DONE, asked for only while gdb follows vforks). */
int mt_gdbt_vfork_done(struct mt_gdbt *g, struct mt_gdbt_thread *t);
/* t ran execve. */
void mt_gdbt_exec(struct mt_gdbt *g, struct mt_gdbt_thread *t);
/* t ended with status (a wait status). */
void mt_gdbt_gone(struct mt_gdbt *g, struct mt_gdbt_thread *t, int status);

/* Each turn of the tracer's loop: gdb's connection, its packets, the process stopped whole. */
int mt_gdbt_tick(struct mt_gdbt *g);
/*
 * memtrack was asked to end (docs/STOPS.md): the session ends as gdb's detach does, so that the
 * process, parked for gdb, gets the request.
 */
void mt_gdbt_end_request(struct mt_gdbt *g);
/* What happened under gdb, one sentence into out, for the run's summary. */
void mt_gdbt_report(struct mt_gdbt *g, char *out, size_t len);
void mt_gdbt_free(struct mt_gdbt *g);

/* gdbtarget_libs.c: the loader's library list of pid, as gdb's svr4 document. */
ssize_t mt_gdbt_libraries(pid_t pid, char *buf, size_t len);
/* ... and where its DT_DEBUG value is in memory (lldb's qShlibInfoAddr); -ENOENT: static. */
int mt_gdbt_debug_slot(pid_t pid, uint64_t *addr);

#endif
