// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack's BPF side: the process lifecycle (which tgids are tracked), the exec-mapping watcher
 * that stops a thread at the first executable mapping of an unknown file, and the allocator
 * probes that turn calls into events.
 *
 * One translation unit in five files: this one (the maps, the thread state, the lifecycle) and,
 * included at its end, memtrack_watch.bpf.h (the watcher, the debugger), memtrack_emit.bpf.h
 * (events and stacks), memtrack_calls.bpf.h (the allocator probes) and memtrack_mappings.bpf.h
 * (mapping records). One object, so one skeleton, and the static functions stay static: the
 * verifier sees what it saw when this was one file.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrack.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP	   19
#define PROT_EXEC  0x4
#define PF_EXITING 0x4

/* Tracking is off until user space turns it on: a never-initialised switch means off. */
volatile __u32 tracking_enabled;
/* Events are only built when an artifact will receive them. */
volatile __u32 events_enabled;

/*
 * memtrack's own pid namespace, set before load. Every pid the BPF side stores or emits is a pid
 * in it, the pids memtrack's waitpid and /proc see. In the initial namespace (pidns_nested false)
 * the verifier drops every translation, so the common case runs the code it always ran.
 */
const volatile bool pidns_nested;
const volatile __u64 pidns_dev; /* the nsfs device, kernel encoding */
const volatile __u64 pidns_ino; /* the namespace's inode number (ns_common.inum) */

/*
 * Back-pressure: once this many bytes of the events ring wait for the consumer, the thread that
 * emits stops (see mt_press()). Set before load below the ring's size by a headroom that holds what
 * every thread may still emit before its stop takes effect; 0 (never set): no back-pressure.
 */
const volatile __u64 pressure_mark;

/*
 * --stacks: the allocation entry probes unwind the user stack (bpf/unwind.bpf.h) and each event
 * carries the id of its stack, stored once (docs/STACKS.md). Off: the verifier drops that code.
 */
const volatile bool stacks_enabled;
/*
 * With stacks_enabled: the allocator's frame and its caller's only, the return address read at
 * [rsp] at the entry (the probe point has not moved rsp: docs/PLACEMENT.md, rule 5), and through
 * the files that have a table, wrappers of the allocator such as libstdc++'s operator new, to
 * their caller: the default of memtrack run (docs/STACKS.md, "The default").
 */
const volatile bool stacks_caller;
/* The last stack id handed out (ids start at 1; 0 is "no stack"). */
__u32 last_stack_id;
/* How many keys each map of enum mt_keyed_map holds (memtrack.h). */
__u32 map_keys[MT_KEYS_MAX];

static __always_inline void key_added(enum mt_keyed_map m)
{
	__sync_fetch_and_add(&map_keys[m], 1);
}

/* A delete's result: 0 when it removed the key, which is then counted out. */
static __always_inline void key_deleted(enum mt_keyed_map m, long err)
{
	if (!err)
		__sync_fetch_and_add(&map_keys[m], -1);
}

/* Insert or update; a key the insert created is counted. False: not stored (the map is full). */
static __always_inline bool counted_update(void *map, enum mt_keyed_map m, const void *key,
					   const void *value)
{
	if (bpf_map_update_elem(map, key, value, BPF_NOEXIST) == 0) {
		key_added(m);
		return true;
	}
	return bpf_map_update_elem(map, key, value, BPF_EXIST) == 0;
}

/*
 * Namespace levels walked to find memtrack's own. The kernel allows 32, but 6.1's verifier refuses
 * the programs (E2BIG) with a walk that long; memtrack nested deeper than 8 is not tracked.
 */
#define MAX_PID_NS_LEVEL 8

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 65536);
	__type(key, __u32);  /* tgid */
	__type(value, __u8); /* 1, MT_TRACKED_HANDED_OFF or MT_TRACKED_DEBUGGED */
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 16384);
	__type(key, struct mt_inode_key);
	__type(value, __u32); /* MT_INODE_PENDING or MT_INODE_DONE */
} known_inodes SEC(".maps");

/*
 * A hash map's buckets are allocated and set up at its creation, whatever it holds: 65,536 cost
 * 0.6 ms to create and as much to free (docs/PERFORMANCE.md, section 4). The three maps below
 * hold what is live at one moment: the probed files of the tree's processes, and the threads
 * stopped by the watcher or by back-pressure. A full one degrades, never hangs: a process whose
 * file is not armed stops at its mappings of it again; a thread whose mark is not stored is not
 * stopped (the watcher counts a dropped request).
 */
#define MT_LIVE_MAX 16384

/*
 * The probed files (MT_INODE_PROBED) each tracked process has links for: mapping one of them
 * needs no stop; mapping one that is not armed for the process stops it, so that its links are
 * in place before the file's first instruction runs there. Written by user space only.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, MT_LIVE_MAX);
	__type(key, struct mt_arm_key);
	__type(value, __u8);
} armed SEC(".maps");

/* tid -> the inode it was stopped for: proves that a SIGSTOP came from the watcher. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, MT_LIVE_MAX);
	__type(key, __u32);
	__type(value, struct mt_inode_key);
} stop_marks SEC(".maps");

/* tid -> 1: proves that a SIGSTOP came from back-pressure (the events ring nearly full). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, MT_LIVE_MAX);
	__type(key, __u32);
	__type(value, __u8);
} pressure_marks SEC(".maps");

/*
 * --trace-maps: the files each process has mapped since its exec ({tgid, dev, ino}), so that it
 * stops at its first mapping of every file, allocator or not, and the log has them in its order.
 * User space empties a process's entries at its exec and its end.
 */
const volatile bool trace_maps;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 1 << 17);	      /* a file is mapped by many processes at once */
	__type(key, struct mt_arm_key);
	__type(value, __u8);
} first_maps SEC(".maps");

/* tid -> the ptrace request it was stopped at, or is let through once (struct mt_ptrace_mark). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct mt_ptrace_mark);
} ptrace_marks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} attach_requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024); /* resized by user space before load */
} events SEC(".maps");

/*
 * The distinct stacks seen so far, by hash: the in-kernel deduplication. Grown as stacks arrive
 * (no preallocation), bounded by max_entries, which user space sets before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mt_stack_record);
} stacks SEC(".maps");

/* A strdup's copy is read in chunks of this many bytes, at most MT_STR_CHUNKS of them. */
#define MT_STR_CHUNK  4096
#define MT_STR_CHUNKS 8

struct mt_str_scratch {
	char bytes[MT_STR_CHUNK];
};

/*
 * A strdup's copy is read here to find its length (mt_copy_size): only the length is kept, so a
 * program that preempts another on the CPU and reads into it too spoils nothing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_str_scratch);
} str_scratch SEC(".maps");

/* A new stack is built here (a map value), then stored and copied into the events ring. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_stack_record);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * Per-thread allocator state, in task storage (no hashing, freed with the task): the arguments
 * of the outermost allocator call in progress and how deep it has nested, and the last release
 * that may forward to another (operator delete -> free), so that the forwarded one counts once.
 */
#define MT_LEVELS 8 /* nested allocator calls whose stack pointer is kept */

struct thread_state {
	__u64 args[4];
	__u64 cookie;
	__u64 rel_addr; /* the block of the last release recorded that may forward, or 0 */
	__u64 rel_sp;	/* its stack pointer at entry */
	__u64 rel_ra;	/* and the return address there */
	__u32 rel_rank; /* its release_rank() */
	__u32 depth;
	__u32 throws;	/* bit i: the call at level i may throw (MT_ROLE_ENTRY_THROWS) */
	__u32 stack_id; /* the outermost call's stack (--stacks), 0: none */
	__u64 entry_ip; /* callers mode: the outermost call's probe, its stack due at return */
	/*
	 * The thread's (tgid << 32 | tid) in memtrack's namespace, as its events carry it, and its
	 * tgid in the initial one (the callers cache's key): taken when the state is made and at an
	 * exec (which may give the thread its leader's tid), so that a call's probes ask for
	 * neither (a helper call is not free where the kernel's calls and returns go through
	 * retpolines and return thunks: docs/PERFORMANCE.md section 20).
	 */
	__u64 ev_id;
	__u32 global_tgid;
	__u32 pad;
	__u64 sp[MT_LEVELS]; /* the stack pointer at each level's entry: its return address */
	__u64 ra[MT_LEVELS]; /* a call that may throw: the return address at sp, at its entry */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} thread_states SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

/*
 * The number of pid in memtrack's namespace, found among pid's numbers (one per namespace level,
 * from the initial one down); 0 when pid is not visible there.
 */
static __always_inline __u32 pid_nr_in_ns(struct pid *pid)
{
	struct upid *up;
	__u32 level;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	up = (void *)pid + bpf_core_field_offset(struct pid, numbers);
	for (__u32 i = 0; i < MAX_PID_NS_LEVEL; i++, up++) {
		if (i > level)
			break;
		if (BPF_CORE_READ(up, ns, ns.inum) == pidns_ino)
			return BPF_CORE_READ(up, nr);
	}
	return 0;
}

/* task's (tgid << 32 | tid), both in memtrack's namespace; 0 when it is not visible there. */
static __always_inline __u64 task_pid_tgid(struct task_struct *task)
{
	__u32 tid, tgid;

	if (!pidns_nested)
		return (__u64)BPF_CORE_READ(task, tgid) << 32 | (__u32)BPF_CORE_READ(task, pid);
	tid = pid_nr_in_ns(BPF_CORE_READ(task, thread_pid));
	tgid = pid_nr_in_ns(BPF_CORE_READ(task, group_leader, thread_pid));
	return tid && tgid ? (__u64)tgid << 32 | tid : 0;
}

/*
 * The current thread's (tgid << 32 | tid) in memtrack's namespace. One helper call where the
 * thread lives in that very namespace; the walk for a thread in a namespace nested deeper.
 */
static __always_inline __u64 current_pid_tgid(void)
{
	struct bpf_pidns_info ns;

	if (!pidns_nested)
		return bpf_get_current_pid_tgid();
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) == 0)
		return (__u64)ns.tgid << 32 | ns.pid;
	return task_pid_tgid(bpf_get_current_task_btf());
}

static __always_inline bool current_is_tracked(void)
{
	__u32 tgid = current_pid_tgid() >> 32;

	return tracking_enabled && bpf_map_lookup_elem(&tracked, &tgid);
}

/* ---- process lifecycle ---------------------------------------------------------------- */

static __always_inline void emit_kind(__u8 kind, __u16 file_id, __u64 addr, __u64 size, __u64 old,
				      __u64 align, __u8 flags, __u32 stack_id);

/*
 * The lifecycle goes into the events ring with the allocator events (enum mt_stream_kind), from
 * the thread it happens in: its place in the ring is its place in the one ordered stream.
 *
 * mt_tp_btf/ and mt_fentry/ are libbpf's tp_btf/ and fentry/ whose attach targets memtrack
 * finds itself (src/tracker/tracker_btf.c), without libbpf's parse of the kernel's BTF.
 */
SEC("mt_tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 *state;

	if (!tracking_enabled)
		return 0;
	ptgid = task_pid_tgid(parent) >> 32;
	ctgid = task_pid_tgid(child) >> 32;
	/* A new thread joins a tgid that is already tracked (or not). */
	if (ctgid == ptgid || !ptgid || !ctgid)
		return 0;
	/* A child of a process handed to a debugger is not memtrack's tracee: never stopped. */
	state = bpf_map_lookup_elem(&tracked, &ptgid);
	if (!state)
		return 0;
	counted_update(&tracked, MT_KEYS_TRACKED, &ctgid, state);
	/* A vfork child (CLONE_VM) runs in its parent's memory until it execs. */
	emit_kind(MT_K_FORK, 0, ctgid,
		  BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm) ? MT_FORK_SHARED_MM : 0, 0,
		  0, 0, 0);
	return 0;
}

SEC("mt_tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct thread_state *st;

	if (!current_is_tracked())
		return 0;
	/* A thread other than the leader that execs takes the leader's tid. */
	st = bpf_task_storage_get(&thread_states, bpf_get_current_task_btf(), 0, 0);
	if (st)
		st->ev_id = current_pid_tgid();
	/* A new address space: the old one's ranges (its mm is checked too, ASLR or not). */
	bpf_map_delete_elem(&unwind_vma_cache, &tgid);
	mt_vma_cache_moved();
	emit_kind(MT_K_EXEC, 0, 0, 0, 0, 0, 0, 0);
	return 0;
}

static __always_inline void settle(struct thread_state *st, __u64 sp, bool at_entry);

/*
 * Set by user space once handle_exit_in_call is attached (tracker_load.c), before the first
 * probe on the entry of a function that may throw: from then on, the exit of a thread inside
 * such a call is that program's.
 */
volatile __u32 exits_in_calls;

/* The state of a thread inside a call that may throw, which handle_exit_in_call ends; else NULL. */
static __always_inline struct thread_state *in_throwing_call(struct task_struct *task)
{
	struct thread_state *st;

	if (!exits_in_calls)
		return NULL;
	st = bpf_task_storage_get(&thread_states, task, 0, 0);
	return st && st->depth && st->throws ? st : NULL;
}

/* A thread of id ended: its marks go, and the process ends with its last thread. */
static __always_inline int thread_ended(struct task_struct *task, __u64 id)
{
	__u32 tid = (__u32)id, tgid = id >> 32;

	key_deleted(MT_KEYS_STOP_MARKS, bpf_map_delete_elem(&stop_marks, &tid));
	key_deleted(MT_KEYS_PRESSURE_MARKS, bpf_map_delete_elem(&pressure_marks, &tid));
	bpf_map_delete_elem(&ptrace_marks, &tid);
	/* The tgid leaves the set when its last thread is gone, not when its leader is. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0 || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	/* The last thread's exit code is the group's: exit_group gives every thread its code. */
	if (tracking_enabled)
		emit_kind(MT_K_EXIT, 0, 0, (__u32)BPF_CORE_READ(task, exit_code), 0, 0, 0, 0);
	key_deleted(MT_KEYS_TRACKED, bpf_map_delete_elem(&tracked, &tgid));
	return 0;
}

SEC("mt_tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u64 id = task_pid_tgid(task);
	__u32 global_tgid = BPF_CORE_READ(task, tgid);

	/*
	 * The unwinder's cache is keyed by the tgid in the initial namespace (that of
	 * bpf_get_current_pid_tgid), not memtrack's: a process memtrack cannot see has one too.
	 */
	/* Its tgid may be another process's next: what was derived from its ranges goes too. */
	if (BPF_CORE_READ(task, signal, live.counter) == 0 &&
	    !bpf_map_delete_elem(&unwind_vma_cache, &global_tgid))
		mt_vma_cache_moved();
	if (!id || in_throwing_call(task))
		return 0;
	return thread_ended(task, id);
}

/*
 * A thread that ends inside a call that may throw left it by an exception: a failed call, put
 * before the process's end. Apart from handle_exit, whose load every run waits for, because it
 * decodes calls (mt_decode_and_emit, most of its verification): loaded and attached only when a
 * file's probes include the entry of a function that may throw. Attached after handle_exit, it
 * runs after it at the same exit (a tracepoint calls its programs in the order they came).
 */
SEC("mt_tp_btf/sched_process_exit")
int BPF_PROG(handle_exit_in_call, struct task_struct *task)
{
	__u64 id = task_pid_tgid(task);
	struct thread_state *st = id ? in_throwing_call(task) : NULL;

	if (!st)
		return 0;
	settle(st, ~0ULL, false);
	return thread_ended(task, id);
}

/* The rest of the program, in pieces a file each, in this order (each uses what is above it). */
#include "memtrack_watch.bpf.h"
#include "memtrack_emit.bpf.h"
#include "memtrack_calls.bpf.h"
#include "memtrack_mappings.bpf.h"
