/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The supervisor's private state, shared by its files (supervisor*.c) and included by no other
 * part: the tree of traced threads and processes, and the run (struct sup).
 */
#ifndef MT_SUPERVISOR_INT_H
#define MT_SUPERVISOR_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

struct mt_artifact_rss;

#include "gdbtarget/gdbtarget.h"
#include "inspect/stoplog.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"

#define PTRACE_OPTIONS                                                                             \
	(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

struct proc {
	pid_t pid;
	pid_t parent_pid;
	char *pos;
	char *exe;
	unsigned int children;
	unsigned int threads;
	struct mt_inode_key *exec_files; /* --trace-maps: what its last execve mapped itself */
	size_t n_exec_files;
	/* --leaks: its threads held at their exit stops until the last one's, then scanned */
	pid_t *exit_held;
	size_t n_exit_held;
	uint64_t exit_hold_until; /* when they are let go unscanned, should the rest not come */
	unsigned int rss_tick;	  /* the last sampling tick that read its RSS (supervisor_rss.c) */
};

/*
 * A traced thread. Each is allocated on its own and never moves: a stop handler may hold one
 * across the creation of others (a fork report creates the child's).
 */
struct tracee {
	pid_t tid;
	int proc;	/* index in procs, -1 until its creator reports it */
	bool started;	/* its first (attach) stop has been seen */
	bool held;	/* stopped at that first stop until its creator reports it */
	bool pressed;	/* held at a pressure stop until the events consumer made room */
	bool listening; /* left in a group-stop with PTRACE_LISTEN */
	bool exiting;	/* seen at its exit stop */
	bool swallow;	/* detaching: a SIGSTOP of memtrack's is still to come, suppressed then */
	pid_t tgid;	/* its thread group, read at its first stop (0 before) */
	int end_status; /* how it ended, when it ended before its creator reported it */
	struct mt_log_thread *log;
	/* As a thread of the process served to gdb: the gdb target's (src/gdbtarget/) */
	struct mt_gdbt_thread gdb;
};

/* A set of tracees, in no order: removing swaps the last one in. */
struct tracee_set {
	struct tracee **v;
	size_t n, cap;
};

struct sup {
	const struct mt_run_config *cfg;
	struct mt_run_result *res;
	struct mt_tracker *tracker;
	struct mt_events *events;
	struct mt_artifact_writer *artifact;
	struct mt_stoplog *log;
	struct mt_backtracer *backtracer; /* made at the first backtrace */
	struct mt_livetable *live_blocks; /* --leaks: every process's live blocks (livetable.h) */
	pid_t root;

	struct proc *procs;
	size_t n_procs, cap_procs;
	struct tracee_set live;
	/* Tracees that ended before their creator reported them: placed when it does. */
	struct tracee_set unplaced;
	/* Threads held at a pressure stop (see on_pressure_stop()), also in live. */
	struct tracee_set pressed;
	size_t files_logged; /* tracker files already named in the log */
	size_t n_held;
	unsigned int n_orphans;
	bool root_gone;	  /* the root ended, or was left stopped for a debugger */
	bool told_left;	  /* "waiting for N process(es) left by CMD" was said */
	bool told_traced; /* a process of the tree traced memtrack itself: said once */

	/* Recent termination signals, one per sender: see on_request(). */
	struct sent {
		int sig, code;
		pid_t pid;
		uint64_t first_ns;
		bool forwarded;		/* memtrack sent it on to the root */
		bool forward_delivered; /* the root got memtrack's copy, or one it merged into */
		unsigned int delivered; /* deliveries to the root from the sender itself */
	} sent[8];
	/*
	 * A process handed over: to a debugger at the stop point (ho), or to a tracer of the tree
	 * that asked to trace it (inner: supervisor_inner.c). See supervisor_handoff.c.
	 */
	struct handoff {
		pid_t pid; /* 0: none */
		int proc;  /* its index in procs */
		int pidfd;
		bool collecting; /* its threads are being detached, each at its next stop */
		bool continued; /* a debugger attached: the SIGCONT that ends the group-stop sent */
		bool seen_untraced; /* at the last look: a debugger's attach seen, no tracer now */
		bool killed;	    /* the tree was ended on a termination request */
		bool ended;
		uint64_t next_look_ns; /* when to look at it again, requests aside */
		pid_t *awaited;	       /* threads reported created, whose first stop has not come */
		size_t n_awaited;
		char *where;
		char **known; /* the executable files it mapped at the handoff */
		size_t n_known;
		char **late; /* files with probes it mapped after */
		size_t n_late;
		bool inner;   /* handed to a tracer of the tree, not to a debugger */
		pid_t caller; /* the tracer's thread held at its attach until it is done */
		struct mt_ptrace_mark call; /* that attach, made again once the process is free */
		struct tracee *detached; /* the thread detached in its own stop: freed at the end */
	} ho, **inner;
	size_t n_inner;
	struct mt_gdbt *gdb;	 /* --gdb: the process served to gdb (supervisor_gdbhost.c) */
	bool gdb_end_asked;	 /* a termination request came: gdb's session ends */
	bool handoff_wake_asked; /* ... and a process waiting for its debugger is continued */
	int sigfd; /* the wake signals, while a handed-off process is waited for (0: none) */
	/* Ending the tree on a termination request: see end_tree(). */
	const struct sent *end_send; /* the send that started it */
	int end_sig;
	int end_phase;
	uint64_t end_deadline;
	/* memtrack attach (supervisor_attach.c): the tree is detached on a request or a deadline */
	bool detach_asked;  /* a termination signal came */
	bool detaching;	    /* every thread is detached at its next stop */
	bool detach_forced; /* asked again, or too long: the rest is left to the kernel's detach */
	uint64_t detach_at_ns, detach_start_ns;
	/* RSS sampling (supervisor_rss.c): the next tick, its number, the samples of one tick */
	uint64_t rss_next_ns;
	unsigned int rss_tick;
	struct mt_artifact_rss *rss_v;
	size_t rss_cap;
	uint64_t rss_samples, rss_ticks;
	uint64_t rss_cpu_ns; /* memtrack's CPU time reading the samples */
	uint64_t
	    rss_write_ns; /* the time their writes took, the ring's drain before them included */
	/* The caller's progress function (supervisor_progress.c): its next tick, the first one */
	uint64_t progress_next_ns, progress_start_ns;
	/* --leaks (supervisor_leaks.c): processes with threads held at their exit stops */
	size_t exit_holding;
};

/*
 * How often every live process's RSS is read (supervisor_rss.c): 50 times a second, about 6 us
 * of memtrack's time per process each (docs/PERFORMANCE.md, section 19).
 */
#define RSS_PERIOD_NS (20 * 1000000ull)

/* How often the loop looks at a handed-off process (a debugger attached, files it mapped). */
#define HANDOFF_POLL_NS (100 * 1000000L)

/* How often the loop looks whether the consumer made room for threads held by back-pressure. */
#define PRESSURE_POLL_NS (1000 * 1000)

/* How long signals of one sender count as one send (timeout sends to memtrack, then the group). */
#define SEND_WINDOW_NS (1000 * 1000000ull)

/*
 * How long memtrack attach waits for its threads to stop to be detached (one that never stops,
 * inside a vfork, is left to the kernel's detach at memtrack's exit).
 */
#define DETACH_WAIT_NS (10 * 1000000000ull)

/* The grace the command gets to end its tree, then the rest gets it, before SIGKILL. */
#define END_GRACE_NS (2000 * 1000000ull)

extern sigset_t sup_caller_mask;

/*
 * What a stop handler decided for its tracee, when it returns no error (a negative errno):
 * SUP_LEAVE leaves it as the handler left it (held until its creator reports it or the ring has
 * room, detached for a debugger, listening in a group-stop, gone); SUP_RESUME(sig) continues it,
 * delivering sig (0: none). sup_carry_out() does it, in one place.
 */
#define SUP_LEAVE	0
#define SUP_RESUME(sig) (1 + (sig))
/* The gdb target's decisions are in the same encoding. */
_Static_assert(SUP_LEAVE == MT_GDBT_LEAVE && SUP_RESUME(9) == MT_GDBT_RESUME(9),
	       "the gdb target's stop decisions are the supervisor's");

/* supervisor_tree.c */
int sup_tset_put(struct tracee_set *set, struct tracee *t);
void sup_tset_take(struct tracee_set *set, struct tracee *t);
void sup_tset_free(struct tracee_set *set);
struct tracee *sup_find_tracee(struct sup *s, pid_t tid);
struct tracee *sup_add_tracee(struct sup *s, pid_t tid);
struct tracee *sup_reported_child(struct sup *s, pid_t tid, bool *ended);
void sup_unpress(struct sup *s, struct tracee *t);
void sup_remove_tracee(struct sup *s, struct tracee *t);
int sup_add_proc(struct sup *s, pid_t pid, int parent);
char *sup_read_exe(pid_t pid);
const char *sup_signame(int sig, char *buf, size_t len);
struct handoff *sup_handoff_nth(struct sup *s, size_t i);
size_t sup_handoff_count(const struct sup *s);
bool sup_handoff_holds(const struct handoff *h, const struct tracee *t);
struct handoff *sup_handoff_owner(const struct sup *s, const struct tracee *t);
bool sup_handoff_owns(const struct sup *s, const struct tracee *t);
int sup_handoff_know(struct handoff *h, const char *path);
bool sup_gdb_owns(const struct sup *s, const struct tracee *t);
pid_t sup_pid_of(const struct sup *s, const struct tracee *t);
bool sup_gdb_reached(const struct sup *s);
int sup_gdb_fd(const struct sup *s);
int sup_resume(pid_t tid, int sig);
int sup_carry_out(struct tracee *t, int next);
int sup_let_go(struct sup *s, struct tracee *t, int sig);
size_t sup_threads_running(const struct sup *s, int proc, pid_t except);

/* supervisor_log.c */
struct json_object *sup_detail_new(void);
void sup_detail_str(struct json_object *d, const char *key, const char *val);
void sup_detail_int(struct json_object *d, const char *key, int64_t val);
void sup_log_files(struct sup *s);
int sup_log_stop(struct sup *s, struct tracee *t, const char *kind, struct json_object *d);
void sup_record_process(struct sup *s, const struct proc *p, int status, bool exited);
struct json_object *sup_stack_of(struct sup *s, struct tracee *t);
void sup_log_signal(struct sup *s, struct tracee *t, int sig);

/* supervisor_stops.c */
int sup_on_exec(struct sup *s, struct tracee *t, bool root_first, bool new_leader);
int sup_release_held(struct sup *s);
int sup_resume_pressed(struct sup *s);
bool sup_backpressure_off(void);
bool sup_uprobe_multi_off(void);
bool sup_callers_refused(void);
int sup_on_stop(struct sup *s, struct tracee *t, int status);

/* supervisor_stopat.c */
bool sup_stop_point_at_exec(struct sup *s, struct tracee *t, bool root_first, char *where,
			    size_t len);
bool sup_stop_point_at_map(struct sup *s, struct tracee *t, const char *path);

/* supervisor_ahead.c */
int sup_link_what_loader_maps(struct sup *s, struct handoff *h);
/* What execve mapped for a process (the program, its interpreter), from the exec stop's scan. */
struct sup_exec_mapped {
	char **paths;
	size_t n;
};
struct mt_map_entry;
int sup_exec_mapped_add(const struct mt_map_entry *e, void *arg);
void sup_exec_mapped_free(struct sup_exec_mapped *m);
int sup_link_at_exec(struct sup *s, struct proc *p, const struct sup_exec_mapped *mapped);

/* supervisor_handoff.c */
struct pollfd;
bool sup_handoff_alive(const struct sup *s);
bool sup_is_thread_of(pid_t tgid, pid_t tid);
bool sup_handoff_waited(const struct sup *s);
size_t sup_handoff_pollfds(const struct sup *s, struct pollfd *p, size_t max);
struct handoff *sup_handoff_of(struct sup *s, pid_t pid);
int sup_handoff_begin(struct sup *s, struct handoff *h, int proc, const char *where, bool inner);
int sup_handoff_collect(struct sup *s, struct handoff *h);
int sup_hand_off(struct sup *s, struct tracee *t, const char *where);
int sup_handoff_stop(struct sup *s, struct tracee *t, int status);
void sup_handoff_ended(struct sup *s, struct handoff *h, int status);
int sup_handoff_tick(struct sup *s);
bool sup_handoff_dead(const struct handoff *h, int *status);
void sup_handoff_report(struct sup *s);
void sup_handoff_free(struct sup *s);
pid_t sup_tracer_of(pid_t pid);

/*
 * supervisor_lost.c: the file key that h's process mapped and took with it, found again near the
 * files memtrack knows: 1 with its path and whether it has an allocator, 0 when not found.
 */
int sup_find_lost(struct sup *s, const struct handoff *h, const struct mt_inode_key *key,
		  char *path, size_t len, bool *allocator);

/* supervisor_maps.c: --trace-maps */
int sup_maps_exec(struct sup *s, struct proc *p);
void sup_maps_log(struct sup *s, struct tracee *t, const struct mt_inode_key *key,
		  const struct mt_tracked_file *f);

/* supervisor_inner.c: a tracer inside the tree (docs/STOPS.md) */
int sup_inner_ptrace(struct sup *s, struct tracee *t, const struct mt_ptrace_mark *m);

/*
 * supervisor_gdbhost.c: the gdb target (src/gdbtarget/) with the supervisor as its host; the
 * calls for a tracee are made only when it is a thread of the process gdb drives.
 */
int sup_gdb_open(struct sup *s);
int sup_gdb_start(struct sup *s, struct tracee *t, const char *where);
int sup_gdb_signal(struct sup *s, struct tracee *t, int sig, const siginfo_t *si);
/* A syscall-stop (SIGTRAP | 0x80): only a thread gdb catches syscalls in has them. */
int sup_gdb_syscall(struct sup *s, struct tracee *t);
int sup_gdb_carry(struct sup *s, struct tracee *t, int next);
void sup_gdb_new_child(struct sup *s, struct tracee *t, int event, pid_t child);
void sup_gdb_exec(struct sup *s, struct tracee *t);
/* A vfork-done stop (only the processes gdb follows vforks in ask for them). */
int sup_gdb_vfork_done(struct sup *s, struct tracee *t);
void sup_gdb_gone(struct sup *s, struct tracee *t, int status);
int sup_gdb_tick(struct sup *s);
void sup_gdb_report(struct sup *s);
void sup_gdb_free(struct sup *s);

/* supervisor_signals.c */
bool sup_is_term_sig(int sig);
void sup_block_requests(void);
void sup_unblock_requests(void);
bool sup_root_delivery_wanted(struct sup *s, const siginfo_t *si);
void sup_reap_orphans(void);
void sup_take_requests(struct sup *s);
bool sup_request_pending(void);
int sup_wait_for_news(struct sup *s);

/* supervisor_leaks.c: --leaks (docs/LEAKS.md) */
int sup_leaks_start(struct sup *s);
int sup_leaks_exit_stop(struct sup *s, struct tracee *t, int status);
int sup_leaks_gone(struct sup *s, struct tracee *t);
uint64_t sup_leaks_wait_ns(const struct sup *s);
int sup_leaks_tick(struct sup *s);
void sup_leaks_free(struct sup *s);

/* supervisor_rss.c: RSS over time */
uint64_t sup_rss_wait_ns(const struct sup *s);
int sup_rss_tick(struct sup *s);
int sup_rss_exit_stop(struct sup *s, struct tracee *t);
void sup_rss_report(const struct sup *s);
void sup_rss_free(struct sup *s);

/* supervisor_progress.c: the caller told of the run's progress (run's status line) */
uint64_t sup_progress_wait_ns(const struct sup *s);
void sup_progress_tick(struct sup *s);

/* supervisor_spawn.c */
int sup_spawn(struct sup *s);

/* supervisor_attach.c: memtrack attach */
int sup_attach(struct sup *s);
int sup_attach_arm(struct sup *s);
int sup_attach_tick(struct sup *s);
int sup_detach_stop(struct sup *s, struct tracee *t, int status);
void sup_attach_abandon(struct sup *s);

#endif
