/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ptrace supervisor: spawns a command stopped at its exec, traces its whole tree, handles
 * every stop in one event loop, and reports how the tree ended.
 */
#ifndef MT_SUPERVISOR_H
#define MT_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "classify/classify.h"
#include "base/privileges.h"
#include "inspect/stoppoint.h"
#include "tracker/tracker.h"

struct mt_loader_cache;

/* What the supervisor counts of a run in progress, for its caller's progress function. */
struct mt_run_progress {
	uint64_t elapsed_ns;	/* since the command was started (or attached to) */
	unsigned int processes; /* of the tree so far, the root included */
	unsigned int running;	/* of those, running now */
	unsigned int threads;	/* running now */
	uint64_t dropped;	/* allocator calls dropped or lost so far (the footer's sum) */
	bool dropped_known;	/* the BPF side's counters could be read (tracking) */
};

struct mt_run_config {
	char *const *argv;	      /* the command (attach: the process's command line) */
	const char *trace_stops_path; /* --trace-stops FILE, or NULL */
	struct mt_stop_point stop;    /* --stop-at (stop.text NULL: none) */
	const char *gdb; /* --gdb: HOST:PORT, or "-" for stdin/stdout; NULL: none (docs/GDB.md) */
	const char *artifact_path; /* allocation artifact; NULL with track == false */
	bool artifact_new;	   /* a name memtrack made: created exclusively (O_EXCL) */
	/* artifact_path made already (exec-harness, mt_outfile_make): the run writes a copy of
	 * artifact_fd, which stays the caller's */
	bool artifact_made;
	int artifact_fd;
	bool track; /* load BPF, attach allocators, record events */
	enum mt_watcher_mode watcher;
	enum mt_placement_mode placement;
	bool system_scope;  /* --probe-scope=system: probes in every process (pid -1), not per
			       process */
	size_t ring_size;   /* events ring buffer bytes (a power of two, pages); 0: default */
	bool stacks;	    /* --stacks: each allocation's call stack (docs/STACKS.md) */
	bool stacks_caller; /* with stacks: the allocator and its caller only, no unwinder */
	bool mappings;	    /* mmap, munmap, mremap and brk of the tree into the artifact */
	bool leaks;	    /* a leak scan at each process's exit (docs/LEAKS.md) */
	bool verbose;
	bool trace_maps; /* --trace-maps: every first mapping of a file in the stop log */
	struct mt_identity identity; /* who the command runs as (mt_choose_user) */
	/*
	 * With track: a tracker that consecutive runs share (exec-harness: the BPF object is
	 * loaded once), from mt_supervise_open_tracker() with the same settings; NULL: the run
	 * opens and closes its own.
	 */
	struct mt_tracker *tracker;
	/*
	 * At each exec, link what the dynamic loader will map (supervisor_ahead.c), its walks
	 * remembered here across runs: no watcher stop at those files' mappings. exec-harness's
	 * runs; NULL: none.
	 */
	struct mt_loader_cache *loader_cache;
	/* memtrack attach (supervisor_attach.c): the running process recorded, 0: spawn argv */
	pid_t attach_pid;
	bool attach_tree;     /* --tree: its descendants too */
	uint64_t duration_ns; /* --duration: detach after this long; 0: at SIGINT or SIGTERM */
	bool quiet;	      /* attach -q: not even the line that says it is attached */
	/*
	 * Called every progress_ns (0 or a NULL function: never) from the supervisor's event loop,
	 * on its thread: memtrack run's status line. It holds up the loop while it runs: short.
	 */
	void (*progress)(void *arg, const struct mt_run_progress *p);
	void *progress_arg;
	uint64_t progress_ns;
};

struct mt_run_result {
	int wait_status;	/* the root's raw wait status */
	int exit_code;		/* shell convention: exit code, or 128 + signal */
	unsigned int processes; /* processes of the tree, the root included */
	unsigned int threads;	/* threads of the tree, main threads included */
	uint64_t resume_ns;	/* CLOCK_MONOTONIC when the exec-stopped root was continued */
	uint64_t end_ns;	/* CLOCK_MONOTONIC when the last process of the tree was reaped */
	pid_t stopped_pid;	/* --stop-at: the process left stopped, else 0 */
	/* Files with allocators it mapped after its handoff: calls into them may be missing. */
	unsigned int handoff_late_files;
	char watcher[16]; /* back end that ran: "fentry", "tracepoint", or "" */
	int exec_errno;	  /* the command could not be executed: why (then the return is -it) */
	bool incomplete;  /* not every allocation was recorded: see the summary (run --strict) */
	char gdb_summary[192]; /* --gdb: what happened under gdb, for the summary ("": no --gdb) */
	/* --gdb=-: the stop reply of the program's end, for gdb after the summary ("": sent) */
	char gdb_final[32];
	/* memtrack attach: how long seizing and arming took, and detaching; threads left running */
	uint64_t attach_ns, detach_ns;
	unsigned int detached;
	bool root_ended; /* the root ended (wait_status holds), rather than being detached */
};

/*
 * Run cfg->argv to completion. Returns 0 with *res filled, or a negative errno after printing one
 * sentence on stderr. Exec failure is not an error here: it returns -ENOENT or -EACCES (and
 * similar) after printing "memtrack: cannot run 'CMD': REASON"; mt_exec_failure_code() maps it.
 */
int mt_supervise(const struct mt_run_config *cfg, struct mt_run_result *res);

/*
 * A tracker for cfg's settings (watcher, placement, scope, ring, stacks, events when
 * cfg->artifact_path is set), to put in cfg->tracker of the runs that share it; the caller closes
 * it (mt_tracker_close). 0 or a negative errno after one sentence.
 */
int mt_supervise_open_tracker(const struct mt_run_config *cfg, struct mt_tracker **out);

/*
 * Whether memtrack may attach to pid (memtrack attach): 0, or -errno after one sentence on
 * stderr saying why not (no such process, Yama's ptrace_scope, another tracer, another user's
 * process, memtrack itself or one of its ancestors). who: the identity of memtrack's invoker.
 */
int mt_attach_check(pid_t pid, bool tree, const struct mt_identity *who);

/* 127 when the command was not found, 126 when it could not be executed. */
int mt_exec_failure_code(int neg_errno);

#endif
