/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracker owns the BPF lifecycle: loading the object with the watcher back end that works on
 * this kernel, arming pids, draining attach requests at watcher stops, classifying and attaching
 * allocator probes, and the events ring buffer that the pipeline consumes.
 */
#ifndef MT_TRACKER_H
#define MT_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "classify/classify.h"

enum mt_watcher_mode {
	MT_WATCHER_AUTO = 0,
	MT_WATCHER_FENTRY,
	MT_WATCHER_TRACEPOINT,
};

struct mt_artifact_writer;
struct mt_tracker;

/* The links of a file's probes in one process, or in every process (--probe-scope=system). */
struct mt_links {
	size_t n_links;
	struct bpf_link **links; /* one per probe, where uprobe_multi is not available */
	int multi_fd[2];	 /* uprobe_multi links: entries, returns (0: none) */
};

/* A file the tracker has handled (attached, or found to have no allocator). */
struct mt_tracked_file {
	struct mt_inode_key key;
	uint16_t file_id;
	enum mt_family family;
	unsigned int probes;  /* probe points attached */
	bool no_symbols;      /* neither .dynsym nor .symtab: reported */
	uint32_t unwind_rows; /* --stacks: rows of its unwind table, 0: unwound by frame pointer */
	int unwind_err;	      /* --stacks: why it has no table (0: it has one, or no --stacks) */
	char build_id[41];
	char *path;
	struct mt_links system; /* --probe-scope=system: the links in every process */
	/* The points the kernel accepted, linked again for each process that maps the file. */
	struct mt_probe_point *points;
	size_t n_points;
	int fd; /* the file, held open for those links (0: none) */
};

struct mt_tracker_config {
	enum mt_watcher_mode watcher;
	enum mt_placement_mode placement;
	bool system_scope;    /* probes in every process (pid -1), filtered in BPF */
	bool events;	      /* record allocation events (an artifact receives them) */
	bool stacks;	      /* unwind each allocation's stack (docs/STACKS.md) */
	bool stacks_caller;   /* with stacks: the allocator's frame and its caller's, read at the
				 entry, no unwind tables (docs/STACKS.md, "The default") */
	bool mappings;	      /* record mmap, munmap, mremap and brk (struct mt_map_record) */
	size_t ring_size;     /* events ring buffer bytes, 0 for the default */
	bool no_backpressure; /* test builds only: a full ring drops events instead */
	bool
	    no_uprobe_multi; /* test builds only: per-process perf links, as without uprobe_multi */
	bool refuse_callers; /* test builds only: the callers' programs fail to load */
	bool verbose;
	bool trace_maps; /* every process stops at its first mapping of each file (--trace-maps) */
};

/*
 * Fork the closer process now, for every tracker opened later: before memtrack starts a thread of
 * its own (tracker_closer.c says why). 0, or a negative errno (the trackers then fork their own).
 */
int mt_tracker_closer_prestart(void);
int mt_tracker_open(struct mt_tracker **t, const struct mt_tracker_config *cfg);
void mt_tracker_close(struct mt_tracker *t);
/*
 * Detach the probes of the run's files (the maps and the rings stay readable, the lifecycle
 * programs attached until mt_tracker_close): once the tree is gone nothing needs them. The
 * closer process waits for the grace periods (tracker_closer.c). Idempotent.
 */
void mt_tracker_detach(struct mt_tracker *t);
/* Whether mt_tracker_detach waits for grace periods itself (no closer): worth a thread then. */
bool mt_tracker_detach_waits(const struct mt_tracker *t);
/*
 * Make t ready for another run with the same settings, as if just opened, without loading the
 * BPF object again (exec-harness). -EOPNOTSUPP with --stacks: open another.
 */
int mt_tracker_reset(struct mt_tracker *t);

/* The back end that runs: "fentry" or "tracepoint". */
const char *mt_tracker_watcher(const struct mt_tracker *t);
/*
 * The pipeline of the events ring (writer/events.h), opened at the first call and kept by the
 * tracker from run to run (mapped once, not once per exec-harness benchmark). 0, or a negative
 * errno.
 */
struct mt_events;
int mt_tracker_events(struct mt_tracker *t, struct mt_events **out);
/* Readable (poll) when an attach request waits: for processes no longer stopped for them. */
int mt_tracker_requests_fd(const struct mt_tracker *t);
/* Attached-file records go to the artifact as files are handled. */
void mt_tracker_set_artifact(struct mt_tracker *t, struct mt_artifact_writer *w);

int mt_tracker_arm(struct mt_tracker *t, pid_t pid);
/*
 * Record or not, at once for every probe, watcher and lifecycle program (on after open): a
 * process attached to running (memtrack attach) is recorded from the moment all its probes are in
 * place until its detach begins, not file by file as links come and go.
 */
void mt_tracker_record(struct mt_tracker *t, bool on);
int mt_tracker_disarm(struct mt_tracker *t, pid_t pid);
/*
 * Classify and attach every executable file mapping of pid that is not known yet: exec stops
 * (the program and its interpreter), a process attached to running (memtrack attach), and the
 * fallback after dropped requests.
 */
int mt_tracker_scan(struct mt_tracker *t, pid_t pid);
/*
 * pid was handed to a debugger: it stays tracked (its allocations are recorded) but the BPF side
 * never stops it again; the files it maps are served by mt_tracker_catch_up().
 */
int mt_tracker_hand_off(struct mt_tracker *t, pid_t pid);
/*
 * Whether a debugger attached to the handed-off pid (PTRACE_ATTACH or PTRACE_SEIZE), even one
 * that has detached since. False once the process has ended.
 */
bool mt_tracker_debugger_seen(struct mt_tracker *t, pid_t pid);
/*
 * A tracer inside the tree (tracker_ptrace.c): from now on, a tracee that asks to trace
 * (PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE) is stopped after its call with a SIGSTOP and a
 * mark. A negative errno when the kernel has no syscall tracepoint for ptrace: such calls are then
 * refused as before (memtrack traces every tracee).
 */
int mt_tracker_watch_tracers(struct mt_tracker *t);
/* If tid was stopped at a ptrace request, forget the mark, fill *m and return 1; else 0. */
int mt_tracker_take_ptrace_mark(struct mt_tracker *t, pid_t tid, struct mt_ptrace_mark *m);
/* tid is resumed to make request m again: let that one call through. */
int mt_tracker_pass_ptrace(struct mt_tracker *t, pid_t tid, const struct mt_ptrace_mark *m);
/*
 * --trace-maps (tracker_firstmaps.c): pid's files mapped so far are forgotten (its exec, its
 * end), so that its next mapping of each stops it again; key is one it mapped (execve's own).
 */
void mt_tracker_maps_forget(struct mt_tracker *t, pid_t pid);
int mt_tracker_maps_seen(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key);
/*
 * Whether probes are linked per process (--probe-scope=tree), so that a process gets them only
 * from memtrack, at its stops; false with --probe-scope=system.
 */
bool mt_tracker_per_process(const struct mt_tracker *t);
/*
 * pid has ended with requests that could not be resolved (it mapped a file and was gone before
 * memtrack could open it): forget them, calling fn with each file's key. Returns fn's first
 * non-zero value, else 0.
 */
int mt_tracker_drop_requests(struct mt_tracker *t, pid_t pid,
			     int (*fn)(const struct mt_inode_key *key, void *arg), void *arg);

/* Whether pid has its own links to the file file_id (--probe-scope=tree). */
bool mt_tracker_linked(struct mt_tracker *t, pid_t pid, uint16_t file_id);

/*
 * Link the file at path for pid before pid maps it (a uprobe is set on the file's inode, and the
 * kernel puts its breakpoints into the process's memory when the file is mapped): classified,
 * attached and recorded as at a watcher stop, the watcher then never stops pid for it. A file
 * that cannot be opened is passed over. A negative errno is memtrack's failure.
 */
int mt_tracker_link_path(struct mt_tracker *t, pid_t pid, const char *path);
/*
 * A process that is no longer stopped for its files (handed off): drain the attach requests,
 * handle what can be, and link every probed file pid maps. A negative errno is memtrack's failure.
 */
int mt_tracker_catch_up(struct mt_tracker *t, pid_t pid);

/*
 * --probe-scope=tree: a new process, stopped before its first instruction, gets links for every
 * probed file its parent has. A child that shares its parent's memory (vfork) gets none where
 * the kernel's filter already lets the parent's links fire for it (the 6.1 path).
 */
int mt_tracker_inherit(struct mt_tracker *t, pid_t parent, pid_t child, bool shares_mm);

/*
 * The exec stop of pid: the new program and interpreter are classified (a scan of its maps) and
 * linked for pid. Its links name its task, whose new address space they cover as it maps their
 * files again (no stop, no new link); after an exec from a non-leader thread (new_leader) that
 * task is gone, and so are they. seen, when not NULL, is given each executable file mapping the
 * scan reads (the caller needs no read of its own); its non-zero value ends the scan, returned.
 */
struct mt_map_entry;
int mt_tracker_exec(struct mt_tracker *t, pid_t pid, bool new_leader,
		    int (*seen)(const struct mt_map_entry *e, void *arg), void *arg);

/*
 * Thread tid of pid is at its exit stop: when it is the thread pid's links depend on (its
 * leader, while other threads go on), keep pid's breakpoints in place through a live thread.
 * seen_exiting(tid, arg): whether the caller has seen thread tid at its exit stop (a thread of a
 * group exit that took its SIGKILL shows it nowhere else once its stop was reported).
 */
int mt_tracker_thread_exits(struct mt_tracker *t, pid_t pid, pid_t tid,
			    bool (*seen_exiting)(pid_t tid, void *arg), void *arg);

/*
 * pid is gone (or leaves the tree): drop its links, in the background (detaching waits for
 * grace periods), or before returning when wait.
 */
void mt_tracker_release(struct mt_tracker *t, pid_t pid, bool wait);

/*
 * If tid was stopped by the watcher, forget the mark, store the inode it stopped for in *key and
 * return 1; return 0 when the SIGSTOP came from elsewhere.
 */
int mt_tracker_take_stop_mark(struct mt_tracker *t, pid_t tid, struct mt_inode_key *key);

/*
 * If tid was stopped by back-pressure (the events ring nearly full), forget the mark and return
 * 1; return 0 when it was not.
 */
int mt_tracker_take_pressure_mark(struct mt_tracker *t, pid_t tid);

/*
 * The watcher stop of a thread of pid for inode key: drain every attach request, handle each,
 * and make sure key is DONE before the thread continues. A negative errno is fatal.
 */
int mt_tracker_handle_stop(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key);

/* From the kernel's UAPI (6.6+), which the build machine's linux/bpf.h may predate. */
#define MT_BPF_TRACE_UPROBE_MULTI 48

struct bpf_program;

/*
 * Attach the points of a classified file as one uprobe_multi link of entries (enter) and one of
 * returns (exit, for the points that need one), with memtrack's cookies for file_id. On success
 * fds holds the two link fds (0 where there is no return point); on error, nothing is attached.
 */
int mt_uprobe_multi_attach_points(struct bpf_program *enter, struct bpf_program *exit,
				  const char *path, const struct mt_classification *c,
				  uint16_t file_id, pid_t pid, int fds[2]);

/* Files and functions recorded as not probed so far (their allocations are missing). */
size_t mt_tracker_unprobed_count(const struct mt_tracker *t);

size_t mt_tracker_file_count(const struct mt_tracker *t);
const struct mt_tracked_file *mt_tracker_file(const struct mt_tracker *t, size_t i);
const struct mt_tracked_file *mt_tracker_find(const struct mt_tracker *t,
					      const struct mt_inode_key *key);

struct mt_drop_counts {
	uint64_t requests_dropped;
	uint64_t events_dropped;
	uint64_t args_lost;
	uint64_t watcher_stops;
	uint64_t pressure_stops;
	uint64_t stacks_lost;	   /* allocations without a stack id: a map or the ring was full */
	uint64_t stack_collisions; /* stacks that share a hash with another */
	uint64_t unrecorded_calls; /* calls of functions counted, not recorded (MT_K_UNRECORDED) */
};
int mt_tracker_counters(const struct mt_tracker *t, struct mt_drop_counts *c);

#endif
