/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracker's private state, shared by its files (tracker*.c) and included by no other part.
 */
#ifndef MT_TRACKER_INT_H
#define MT_TRACKER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <bpf/libbpf.h>

#include "inspect/procmaps.h"
#include "tracker/tracker.h"
#include "unwind/unwind_load.h"

/*
 * With back-pressure the ring no longer has to hold a burst, only what the consumer drains in
 * one poll (10 ms: about 20,000 events at the fastest this machine produces, 1.1 MB) plus the
 * pressure headroom. 2 MiB, mapped twice by the consumer, keeps memtrack's own peak RSS at
 * about 25 MiB on churn 2000000 (52 MiB with the former 16 MiB, docs/PERFORMANCE.md).
 */
#define DEFAULT_RING_SIZE (2u << 20)

/*
 * Back-pressure stops a thread that emits while more than 3/4 of the events ring waits for the
 * consumer. The quarter above that mark holds what threads emit between crossing it and their
 * stop: at most 3 events of 64 bytes (with the ring's header) per thread, the rest of one probe
 * hit, so a 2 MiB ring's 512 KiB headroom holds them for 2,700 threads at once; with --stacks a
 * thread may add one new stack's record (1,056 bytes): 430 threads at once.
 */
#define PRESSURE_MARK(ring) ((ring) / 4 * 3)
#define MAX_FILES	    65535 /* file ids are 16 bits in events */
/* --stacks: distinct stacks the kernel keeps (each about 1 KiB, allocated as they appear). */
#define MAX_STACKS	    (1u << 18)
#define MAX_VMA_CACHE	    16384 /* processes alive at once whose text ranges are cached */

/*
 * A per-process link that took longer than this waited in the kernel (for a grace period, or for
 * the locks of the registration's walk) rather than worked: 1 ms is ten times a warm link pair.
 */
#define LINK_SLOW_NS (1000 * 1000ull)

/* Threads that detach links at once (tracker_detach.c): their RCU waits are shared. */
#define MAX_CLOSERS 32

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO). */
#define MT_PROC_PID_INIT_INO 0xEFFFFFFCu

/* From the kernel's UAPI (6.6+), which the build machine's linux/bpf.h may predate. */
#define MT_BPF_TRACE_UPROBE_MULTI    48
#define MT_BPF_F_UPROBE_MULTI_RETURN 1

/*
 * The links of one probed file in one process (--probe-scope=tree). After the process's leader
 * exited before its other threads, keep holds links on a live thread (keep_tid) that count
 * nothing and only keep the breakpoints in the process's memory (docs/PROBES.md).
 */
struct mt_arm {
	pid_t pid;
	uint16_t file_id;
	struct mt_links l;
	pid_t keep_tid;
	struct mt_links keep;
};

/* Something to detach: a libbpf link, or the fd of a uprobe_multi link. */
struct detach {
	struct bpf_link *link;
	int fd;
};

/* The features of a run that need programs of their own (tracker_instances.c says whose). */
enum mt_need {
	MT_NEED_LIFECYCLE = 1u << 0,  /* fork, exec, exit, a debugger's attach: every run */
	MT_NEED_FENTRY = 1u << 1,     /* the fentry watcher */
	MT_NEED_TRACEPOINT = 1u << 2, /* the tracepoint watcher */
	MT_NEED_MULTI = 1u << 3,      /* uprobe_multi links */
	MT_NEED_PERF = 1u << 4,	      /* one perf link per probe */
	MT_NEED_STACKS = 1u << 5,     /* --stacks: the unwinder's watchers of unmaps */
	MT_NEED_MAPPINGS = 1u << 6,   /* cfg.mappings: mmap, munmap, mremap and brk events */
	MT_NEED_THROWS = 1u << 7,     /* a thread's end inside a call that may throw */
};

/* A file's classification, kept for the next runs of a shared tracker (tracker_files.c). */
struct mt_classified {
	struct mt_inode_key key;
	int err;
	struct mt_classification c;
};

/* Instances of the object loaded after the first for features needed later (tracker_need). */
#define MT_MAX_LATER 4

/* Fork, exec, exit and the watcher: attached for the whole run. */
#define MT_LIFECYCLE_PROGS 7 /* fork, exec, exit, the watcher; with --stacks, 3 unmaps */
#define MT_MAPPING_PROGS   8 /* mappings: entry and return of mmap, munmap, mremap, brk */

struct mt_tracker {
	struct memtrack_bpf *skel;
	/*
	 * The instance that created the maps, without programs (the uprobe_multi path): every other
	 * instance, skel included, shares its maps. NULL: skel created them.
	 */
	struct memtrack_bpf *maps_skel;
	/* maps_skel made by a thread beside the walk of the kernel's BTF (tracker_instances.c) */
	pthread_t maps_maker;
	bool maps_making; /* maps_maker runs or is not joined yet */
	struct memtrack_bpf *made_maps;
	int made_err;
	struct mt_kbtf *kbtf; /* the kernel's BTF, read for the first load (tracker_btf.c) */
	int core_fd;	      /* the memory file of the CO-RE target (-1: none) */
	bool core_written;    /* core_fd holds the target */
	/* The main thread's alone: the multi loader hands its instance over (multi_made). */
	unsigned int loaded; /* enum mt_need: the features whose programs are loaded */
	struct memtrack_bpf *later[MT_MAX_LATER];
	int n_later;
	struct ring_buffer *requests;
	struct bpf_link *lifecycle[MT_LIFECYCLE_PROGS];
	struct bpf_link *mappings[MT_MAPPING_PROGS]; /* cfg.mappings: mmap, munmap, mremap, brk */
	struct bpf_link *debugger;		     /* watch_debugger, from the first handoff on */
	bool debugger_tried;
	struct bpf_link *tracers; /* watch_tracer (tracker_ptrace.c), for the run */
	/* handle_exit_in_call: from the first probe of a call that may throw (tracker_load.c) */
	struct bpf_link *exits_in_calls;
	bool exits_in_calls_tried;
	const char *watcher;
	struct mt_tracker_config cfg;
	struct mt_artifact_writer *artifact;

	struct mt_tracked_file *files;
	size_t n_files, cap_files;

	struct mt_classified *classified; /* with keep_classified: what earlier runs classified */
	size_t n_classified;
	bool keep_classified; /* reset once: the tracker serves several runs */

	struct mt_attach_req *deferred;
	size_t n_deferred, cap_deferred;
	int consume_err;

	size_t n_unprobed; /* files and functions recorded as not probed */
	bool inodes_full;  /* known_inodes is full: new files are no longer marked DONE */
	bool files_full;   /* every 16-bit file id is taken */

	uint64_t req_drops_seen;
	int ncpus;
	__u64 *percpu;		/* ncpus values: one read of a per-CPU counter */
	bool multi;		/* uprobe_multi links work: one link per file and direction */
	pthread_t multi_loader; /* loads the uprobe_multi programs beside the run's start */
	bool multi_loading;	/* multi_loader runs or is not joined yet (tracker_loads_done) */
	int multi_err;		/* what multi_loader's load returned */
	struct memtrack_bpf *multi_made; /* its instance, kept by the main thread once joined */
	bool mm_filter; /* links count for every task of the linked task's mm (vfork children) */
	bool mappings_failed; /* cfg.mappings, but the mapping programs could not be attached */
	struct mt_arm *arms;  /* --probe-scope=tree: per process and file */
	size_t n_arms, cap_arms;
	int closer_fd;	  /* the socket to the closer process (-1: none, detach here) */
	pid_t closer_mid; /* the closer's forking process, not reaped yet (0: none) */
	/* keeps uprobe registration fast (tracker_warm.c), or NULL */
	struct tracker_warmer *warmer;
	struct mt_events *events;	   /* the events ring's pipeline, kept from run to run */
	uint64_t link_ns, links_made;	   /* time spent making per-process links (-v) */
	uint64_t link_slow_ns, links_slow; /* ... in those over LINK_SLOW_NS (-v) */
	struct stat pidns;		   /* memtrack's own pid namespace (/proc/self/ns/pid) */
	struct mt_unwind_loader
	    *unwind;	    /* --stacks: the files' tables in the BPF unwinder's maps */
	uint64_t unwind_ns; /* time spent building and loading them, on the stops' path (-v) */
};

/*
 * The files' functions, top first: a file calls only the files listed after it (tracker.c, the
 * tracker's open and close, calls them all).
 */

/* tracker_files.c */
void tracker_forget_classified(struct mt_tracker *t);

/* tracker_links.c */
int tracker_ensure_armed(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f);

/* tracker_attach.c */
const char *tracker_attach_error(int err);
int tracker_attach_perf(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
			const struct mt_probe_point *pts, size_t n, pid_t pid, uint64_t tag,
			struct mt_links *l, struct mt_probe_point *ok, size_t *n_ok);
int tracker_attach_file(struct mt_tracker *t, struct mt_tracked_file *f, int fd,
			const struct mt_classification *c, pid_t pid);

/* tracker_load.c */
int tracker_load_bpf(struct mt_tracker *t);
void tracker_watch_exits_in_calls(struct mt_tracker *t);
void tracker_destroy_skel(struct mt_tracker *t);

/* tracker_instances.c */
int tracker_need(struct mt_tracker *t, unsigned int needs);
void tracker_loads_done(struct mt_tracker *t);
bool tracker_multi(struct mt_tracker *t);
bool tracker_mm_filter(struct mt_tracker *t);
struct bpf_program *tracker_prog(struct mt_tracker *t, const char *name);
void tracker_select_programs(struct bpf_object *obj, unsigned int needs);
int tracker_load_object(struct mt_tracker *t, struct memtrack_bpf *s, const char *what);
struct memtrack_bpf *tracker_open_object(struct mt_tracker *t);
void tracker_configure_maps(struct mt_tracker *t, struct memtrack_bpf *s);
void tracker_start_maps_maker(struct mt_tracker *t);
struct memtrack_bpf *tracker_take_made_maps(struct mt_tracker *t);
int tracker_load_maps_first(struct mt_tracker *t);

/* The sections of tracing programs whose attach target tracker_btf.c looks up. */
#define MT_TP_BTF "mt_tp_btf/"
#define MT_FENTRY "mt_fentry/"

/* What the walk of the kernel's BTF found for the object's tracing programs (tracker_btf.c). */
#define MT_MAX_ATTACH 8
struct mt_attach_target {
	char sec[64], name[64]; /* the program's section; the kernel type it names */
	int32_t id;		/* that type's id in the kernel's BTF, or a negative errno */
};
struct mt_core_found {
	int32_t probe_id; /* security_mmap_file, the fentry probe's target */
	int32_t n_attach;
	struct mt_attach_target attach[MT_MAX_ATTACH];
};
/* The CO-RE target file's parts: its header, types and strings. */
#define MT_CORE_PARTS 3

/* tracker_btf.c */
int tracker_btf_open(struct mt_tracker *t);
int tracker_btf_target_path(struct mt_tracker *t, char *path, size_t size);
int tracker_btf_empty_target(char *path, size_t size);
int tracker_btf_prepare(struct mt_tracker *t, const struct bpf_object *obj);
int tracker_btf_probe_id(const struct mt_tracker *t);
void tracker_btf_release(struct mt_tracker *t);
void tracker_btf_close(struct mt_tracker *t);
int tracker_btf_attach_id(const struct mt_kbtf *k, const char *sec);
struct btf *tracker_btf_parse_vmlinux(void);

/* tracker_btf_cache.c: the walk's result kept for the boot; path says which file (-v) */
int tracker_btf_cache_read(struct mt_core_found *f, void **target, size_t *len, char *path,
			   size_t path_size);
int tracker_btf_cache_write(const struct mt_core_found *f, const struct iovec *target, int n,
			    char *path, size_t path_size);

/* tracker_btf_sections.c */
void tracker_btf_sections(void);
void tracker_btf_loading(const struct mt_tracker *t, bool on);
void tracker_btf_maps_only(bool on);

/* tracker_closer.c */
int tracker_closer_start(struct mt_tracker *t);
void tracker_close_links(struct mt_tracker *t, const struct detach *d, size_t n);
/* The two halves of tracker_close_links, apart for the tests. */
size_t tracker_closer_send(struct mt_tracker *t, const struct detach *d, size_t n);
void tracker_closer_release(struct mt_tracker *t);
void tracker_closer_reap(struct mt_tracker *t);
void tracker_closer_stop(struct mt_tracker *t);

/* tracker_uprobe_multi.c */
int tracker_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
			      const uint64_t *cookies, size_t n, bool ret, pid_t pid);

/* tracker_warm.c */
void tracker_warm_start(struct mt_tracker *t);
void tracker_warm_linked(struct mt_tracker *t);
void tracker_warm_stop(struct mt_tracker *t);

/* tracker_detach.c */
void tracker_detach_in_parallel(const struct detach *d, size_t n);
void tracker_collect_links(struct mt_links *l, struct detach *d, size_t *k);

/* tracker_table.c */
int tracker_mark_known(struct mt_tracker *t, const struct mt_inode_key *key, __u32 state);
int tracker_mark_done(struct mt_tracker *t, const struct mt_inode_key *key);
__u32 tracker_file_state(const struct mt_tracker *t, const struct mt_tracked_file *f);
const struct mt_tracked_file *tracker_known_file(struct mt_tracker *t,
						 const struct mt_inode_key *key, int *err);
__attribute__((format(printf, 5, 6))) void tracker_not_probed(struct mt_tracker *t,
							      const char *path,
							      const char *function, int err,
							      const char *fmt, ...);
struct mt_arm *tracker_find_arm(struct mt_tracker *t, pid_t pid, uint16_t file_id);
struct mt_arm_key tracker_arm_key(pid_t pid, const struct mt_tracked_file *f);
int tracker_store_arm(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f,
		      struct mt_links *l);
int tracker_read_counter(const struct mt_tracker *t, __u32 idx, uint64_t *sum);
int tracker_key_store(struct mt_tracker *t, enum mt_keyed_map m, const struct bpf_map *map,
		      const void *key, const void *value);
int tracker_key_remove(struct mt_tracker *t, enum mt_keyed_map m, const struct bpf_map *map,
		       const void *key, void *value);
bool tracker_keys_left(const struct mt_tracker *t, enum mt_keyed_map m);
void tracker_keys_none(struct mt_tracker *t, enum mt_keyed_map m);

#endif
