// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack's BPF side: the process lifecycle (which tgids are tracked), the exec-mapping watcher
 * that stops a thread at the first executable mapping of an unknown file, and the allocator
 * probes that turn calls into events.
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
 * emits stops (see press()). Set before load below the ring's size by a headroom that holds what
 * every thread may still emit before its stop takes effect; 0 (never set): no back-pressure.
 */
const volatile __u64 pressure_mark;

/*
 * --stacks: the allocation entry probes unwind the user stack (bpf/unwind.bpf.h) and each event
 * carries the id of its stack, stored once (docs/STACKS.md). Off: the verifier drops that code.
 */
const volatile bool stacks_enabled;
/* The last stack id handed out (ids start at 1; 0 is "no stack"). */
__u32 last_stack_id;

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
 * The probed files (MT_INODE_PROBED) each tracked process has links for: mapping one of them
 * needs no stop; mapping one that is not armed for the process stops it, so that its links are
 * in place before the file's first instruction runs there. Written by user space only.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 65536);
	__type(key, struct mt_arm_key);
	__type(value, __u8);
} armed SEC(".maps");

/* tid -> the inode it was stopped for: proves that a SIGSTOP came from the watcher. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mt_inode_key);
} stop_marks SEC(".maps");

/* tid -> 1: proves that a SIGSTOP came from back-pressure (the events ring nearly full). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, 65536);
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
	__u32 throws;	     /* bit i: the call at level i may throw (MT_ROLE_ENTRY_THROWS) */
	__u32 stack_id;	     /* the outermost call's stack (--stacks), 0: none */
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
 */
SEC("tp_btf/sched_process_fork")
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
	bpf_map_update_elem(&tracked, &ctgid, state, BPF_ANY);
	/* A vfork child (CLONE_VM) runs in its parent's memory until it execs. */
	emit_kind(MT_K_FORK, 0, ctgid,
		  BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm) ? MT_FORK_SHARED_MM : 0, 0,
		  0, 0, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!current_is_tracked())
		return 0;
	/* A new address space: the old one's ranges (its mm is checked too, ASLR or not). */
	bpf_map_delete_elem(&unwind_vma_cache, &tgid);
	emit_kind(MT_K_EXEC, 0, 0, 0, 0, 0, 0, 0);
	return 0;
}

static __always_inline void settle(struct thread_state *st, __u64 sp, bool at_entry);

/* A thread that ends inside a call that may throw left it by an exception: a failed call. */
static __always_inline void exit_calls(struct task_struct *task)
{
	struct thread_state *st = bpf_task_storage_get(&thread_states, task, 0, 0);

	if (st && st->depth)
		settle(st, ~0ULL, false);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u64 id = task_pid_tgid(task);
	__u32 tid = (__u32)id, tgid = id >> 32, global_tgid = BPF_CORE_READ(task, tgid);

	/*
	 * The unwinder's cache is keyed by the tgid in the initial namespace (that of
	 * bpf_get_current_pid_tgid), not memtrack's: a process memtrack cannot see has one too.
	 */
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&unwind_vma_cache, &global_tgid);
	if (!id)
		return 0;
	bpf_map_delete_elem(&stop_marks, &tid);
	bpf_map_delete_elem(&pressure_marks, &tid);
	bpf_map_delete_elem(&ptrace_marks, &tid);
	exit_calls(task);
	/* The tgid leaves the set when its last thread is gone, not when its leader is. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0 || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	/* The last thread's exit code is the group's: exit_group gives every thread its code. */
	if (tracking_enabled)
		emit_kind(MT_K_EXIT, 0, 0, (__u32)BPF_CORE_READ(task, exit_code), 0, 0, 0, 0);
	bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}

/* ---- the exec-mapping watcher --------------------------------------------------------- */

/* A process memtrack handed to a debugger: no SIGSTOP of memtrack's may reach it any more. */
static __always_inline bool handed_off(__u32 tgid)
{
	__u8 *state = bpf_map_lookup_elem(&tracked, &tgid);

	return state && *state >= MT_TRACKED_HANDED_OFF;
}

/* Where struct inode kept its ctime before 6.11: __i_ctime (6.6 to 6.10), i_ctime (older). */
struct inode___ctime_v66 {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));

struct inode___ctime_old {
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

/* Since 6.13 the top bit of i_ctime_nsec says whether the ctime was queried (multigrain). */
#define MT_CTIME_NSEC_MASK 0x3fffffffu

static __always_inline void read_inode_key(struct inode *inode, struct mt_inode_key *key)
{
	struct inode___ctime_v66 *v66 = (void *)inode;
	struct inode___ctime_old *old = (void *)inode;

	key->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key->ino = BPF_CORE_READ(inode, i_ino);
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		key->ctime_sec = BPF_CORE_READ(inode, i_ctime_sec);
		key->ctime_nsec = BPF_CORE_READ(inode, i_ctime_nsec) & MT_CTIME_NSEC_MASK;
	} else if (bpf_core_field_exists(v66->__i_ctime)) {
		key->ctime_sec = BPF_CORE_READ(v66, __i_ctime.tv_sec);
		key->ctime_nsec = BPF_CORE_READ(v66, __i_ctime.tv_nsec);
	} else {
		key->ctime_sec = BPF_CORE_READ(old, i_ctime.tv_sec);
		key->ctime_nsec = BPF_CORE_READ(old, i_ctime.tv_nsec);
	}
}

/* --trace-maps: whether this is the process's first mapping of the file since its exec. */
static __always_inline bool first_mapping(__u32 tgid, const struct mt_inode_key *key)
{
	struct mt_arm_key k = {.tgid = tgid, .dev = key->dev, .ino = key->ino};
	__u8 one = 1;

	return bpf_map_update_elem(&first_maps, &k, &one, BPF_NOEXIST) == 0;
}

static __always_inline int watch_mapping(struct file *file, __s32 fd)
{
	struct mt_inode_key key = {};
	struct mt_attach_req *req;
	__u32 pending = MT_INODE_PENDING;
	__u64 id = current_pid_tgid();
	__u32 tid = (__u32)id;
	__u32 *state;
	bool first;

	if (!file || !current_is_tracked())
		return 0;
	read_inode_key(BPF_CORE_READ(file, f_inode), &key);
	first = trace_maps && first_mapping(id >> 32, &key);

	state = bpf_map_lookup_elem(&known_inodes, &key);
	if (state && *state == MT_INODE_DONE)
		goto known;
	if (state && *state == MT_INODE_PROBED) {
		struct mt_arm_key arm = {.tgid = id >> 32, .dev = key.dev, .ino = key.ino};

		if (bpf_map_lookup_elem(&armed, &arm) || handed_off(id >> 32))
			goto known; /* handed off: user space links it when it next looks */
		goto stop;	    /* known: no request, the stop arms this process */
	}
	/* Only the first mapper asks; later mappers of a PENDING inode just wait with it. */
	if (!state && bpf_map_update_elem(&known_inodes, &key, &pending, BPF_NOEXIST) == 0) {
		req = bpf_ringbuf_reserve(&attach_requests, sizeof(*req), 0);
		if (req) {
			req->pid = id >> 32;
			req->tid = tid;
			req->key = key;
			req->fd = fd;
			req->pad = 0;
			bpf_ringbuf_submit(req, 0);
		} else {
			count(MT_CNT_REQ_DROPPED);
		}
	}
	/* Handed off: the request is served without a stop, as soon as user space drains. */
	if (handed_off(id >> 32))
		return 0;
	/* The request is committed before the signal: the drain at the stop cannot miss it. */
	goto stop;
known:
	/* --trace-maps: a process's first mapping of a file stops it, to be logged in order. */
	if (!first || handed_off(id >> 32))
		return 0;
stop:
	bpf_map_update_elem(&stop_marks, &tid, &key, BPF_ANY);
	bpf_send_signal_thread(SIGSTOP);
	count(MT_CNT_WATCHER_STOPS);
	return 0;
}

SEC("fentry/security_mmap_file")
int BPF_PROG(watch_mmap_fentry, struct file *file, unsigned long prot, unsigned long flags)
{
	if (!(prot & PROT_EXEC))
		return 0;
	return watch_mapping(file, -1);
}

static __always_inline struct file *fd_to_file(__s32 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *file = NULL;

	if (fd < 0 || (__u32)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	return file;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int watch_mmap_tp(struct trace_event_raw_sys_enter *ctx)
{
	__s32 fd = (__s32)ctx->args[4];

	if (!(ctx->args[2] & PROT_EXEC) || fd < 0 || !current_is_tracked())
		return 0;
	return watch_mapping(fd_to_file(fd), fd);
}

/* ---- the unwinder's cache of mappings (bpf/unwind.bpf.h) -------------------------------- */

#define MT_MAP_FIXED 0x10

/* The entry being rewritten by a drop: apart from the unwinder's, which a probe may be using. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_vma_cache);
} vma_drop_scratch SEC(".maps");

static __always_inline void drop_mapped(__u64 start, __u64 len)
{
	__u32 zero = 0;
	struct mt_vma_cache *scratch = bpf_map_lookup_elem(&vma_drop_scratch, &zero);

	if (scratch)
		mt_vma_cache_drop(scratch, start, len);
}

/* Attached with --stacks only: what a process unmaps or maps over leaves its cached ranges. */
SEC("tracepoint/syscalls/sys_enter_munmap")
int unwind_munmap(struct trace_event_raw_sys_enter *ctx)
{
	drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int unwind_mremap(struct trace_event_raw_sys_enter *ctx)
{
	drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int unwind_mmap_fixed(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & MT_MAP_FIXED)
		drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

/* ---- the debugger ---------------------------------------------------------------------- */

#define MT_PTRACE_ATTACH 16
#define MT_PTRACE_SEIZE	 0x4206

/*
 * A debugger attaches to a process memtrack handed off: marked, so that memtrack sends the
 * SIGCONT that ends the process's group-stop even when the debugger detached before memtrack
 * looked (TracerPid is only seen while it is attached). Attached from the first handoff on. The
 * pid is the one the debugger names, in its own pid namespace: memtrack's, as a rule.
 */
SEC("tracepoint/syscalls/sys_enter_ptrace")
int watch_debugger(struct trace_event_raw_sys_enter *ctx)
{
	__u32 pid = (__u32)ctx->args[1];
	__u8 debugged = MT_TRACKED_DEBUGGED;

	if ((ctx->args[0] != MT_PTRACE_ATTACH && ctx->args[0] != MT_PTRACE_SEIZE) ||
	    !handed_off(pid))
		return 0;
	bpf_map_update_elem(&tracked, &pid, &debugged, BPF_EXIST);
	return 0;
}

#define MT_PTRACE_TRACEME 0

/*
 * A tracee asks to trace (PTRACE_TRACEME: its parent traces it; PTRACE_ATTACH, PTRACE_SEIZE:
 * it traces the target): a tracer inside the traced tree, strace or gdb. memtrack traces every
 * process of the tree, so the kernel refuses the call (EPERM). The signal stops the caller on its
 * way back to user space, after the call; memtrack then steps aside for the target (detaches it,
 * keeping its probes) and runs the call again, which this lets through once (pass). Only
 * memtrack's tracees are stopped: a handed-off process is not its tracee. Attached for the run.
 */
SEC("tracepoint/syscalls/sys_enter_ptrace")
int watch_tracer(struct trace_event_raw_sys_enter *ctx)
{
	struct mt_ptrace_mark mark = {.request = (__u32)ctx->args[0]}, *m;
	__u32 tgid, tid;
	__u64 id;
	__u8 *state;

	if (ctx->args[0] != MT_PTRACE_TRACEME && ctx->args[0] != MT_PTRACE_ATTACH &&
	    ctx->args[0] != MT_PTRACE_SEIZE)
		return 0;
	if (!tracking_enabled)
		return 0;
	id = current_pid_tgid();
	tgid = id >> 32;
	tid = (__u32)id;
	state = bpf_map_lookup_elem(&tracked, &tgid);
	if (!state || *state >= MT_TRACKED_HANDED_OFF)
		return 0;
	if (mark.request != MT_PTRACE_TRACEME)
		mark.pid = (__u32)ctx->args[1];
	m = bpf_map_lookup_elem(&ptrace_marks, &tid);
	if (m && m->pass && m->request == mark.request && m->pid == mark.pid) {
		bpf_map_delete_elem(&ptrace_marks, &tid);
		return 0;
	}
	bpf_map_update_elem(&ptrace_marks, &tid, &mark, BPF_ANY);
	bpf_send_signal_thread(SIGSTOP);
	return 0;
}

/* ---- allocator probes ----------------------------------------------------------------- */

#define FREE_KINDS                                                                                 \
	((1u << MT_K_FREE) | (1u << MT_K_FREE_SIZED) | (1u << MT_K_FREE_ALIGNED_SIZED) |           \
	 (1u << MT_K_SDALLOCX) | (1u << MT_K_DALLOCX) | (1u << MT_K_DELETE))

static __always_inline bool is_free_kind(__u32 kind)
{
	return kind < 32 && ((1u << kind) & FREE_KINDS);
}

/*
 * The events ring is nearly full: stop the current thread until the consumer has made room, as
 * the watcher stops a thread (a mark proves the SIGSTOP is memtrack's; the supervisor suppresses
 * it and holds the thread). The signal takes effect on the thread's way back to user space, so
 * the thread emits at most the events of the probe hit in progress after this. A thread that is
 * exiting stops no more: its last events go in the headroom, or are dropped and counted.
 */
static __always_inline void press(__u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u8 one = 1;

	if (BPF_CORE_READ(task, flags) & PF_EXITING || handed_off(current_pid_tgid() >> 32))
		return;
	bpf_map_update_elem(&pressure_marks, &tid, &one, BPF_ANY);
	bpf_send_signal_thread(SIGSTOP);
	count(MT_CNT_PRESSURE_STOPS);
}

static __always_inline void emit_kind(__u8 kind, __u16 file_id, __u64 addr, __u64 size, __u64 old,
				      __u64 align, __u8 flags, __u32 stack_id)
{
	struct mt_event *ev;
	__u64 id, waiting;

	if (!events_enabled)
		return;
	waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	id = current_pid_tgid();
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		/* The last resort: the headroom was not enough (thousands of threads at once). */
		count(MT_CNT_EV_DROPPED);
		if (pressure_mark)
			press((__u32)id);
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->pid = id >> 32;
	ev->tid = (__u32)id;
	ev->addr = addr;
	ev->size = size;
	ev->old_addr = old;
	ev->align = (__u32)align;
	ev->file_id = file_id;
	ev->kind = kind;
	ev->flags = flags;
	ev->stack_id = stack_id;
	ev->pad = 0;
	if (pressure_mark && waiting >= pressure_mark) {
		/* Wake the consumer now rather than at its next poll, and stop this thread. */
		bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
		press((__u32)id);
		return;
	}
	/*
	 * No wakeup: the consumer drains on a short poll timeout, and a wakeup per event costs the
	 * producer; a ring that fills up stops its producers instead (press()).
	 */
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
}

/* An allocator call's event: kind and file come from its probe's cookie. */
static __always_inline void emit(__u64 cookie, __u64 addr, __u64 size, __u64 old, __u64 align,
				 __u8 flags, __u32 stack_id)
{
	emit_kind((__u8)MT_COOKIE_KIND(cookie), (__u16)MT_COOKIE_FILE(cookie), addr, size, old,
		  align, flags, stack_id);
}

/* ---- allocation stacks (--stacks) ------------------------------------------------------ */

#define MT_STACK_HASH_PRIME 0x100000001b3ULL /* FNV-1a's, over 64-bit words */

/* The stack's hash: its frames, their count and why it ended. */
static __always_inline __u64 stack_hash(const struct mt_unwind_stack *s)
{
	__u64 h = 0xcbf29ce484222325ULL ^ ((__u64)s->n << 8 | s->stop);

	for (__u32 i = 0; i < MT_UNWIND_MAX_FRAMES; i++) {
		if (i >= s->n)
			break;
		h = (h ^ s->pcs[i]) * MT_STACK_HASH_PRIME;
	}
	return h;
}

static __always_inline bool same_stack(const struct mt_stack_record *r,
				       const struct mt_unwind_stack *s)
{
	if (r->n != s->n || r->stop != s->stop)
		return false;
	for (__u32 i = 0; i < MT_UNWIND_MAX_FRAMES; i++) {
		if (i >= s->n)
			break;
		if (r->frames[i] != s->pcs[i])
			return false;
	}
	return true;
}

/*
 * A stack seen for the first time: reserved in the events ring before it is published in the
 * stacks map, so that any event that finds it there is reserved, and read, after it. Returns its
 * id, or 0 when it cannot be stored (the ring or the map is full: counted).
 */
static __always_inline __u32 new_stack(const struct mt_unwind_stack *s, __u64 h)
{
	struct mt_stack_record *rec, *scratch, *old;
	__u32 zero = 0, id;

	scratch = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!scratch)
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(MT_CNT_STACKS_LOST);
		return 0;
	}
	id = __sync_fetch_and_add(&last_stack_id, 1) + 1;
	scratch->stack_id = id;
	scratch->pad = 0;
	scratch->hash = h;
	bpf_probe_read_kernel(&scratch->n, sizeof(*s), s);
	if (bpf_map_update_elem(&stacks, &h, scratch, BPF_NOEXIST)) {
		old = bpf_map_lookup_elem(&stacks, &h);
		if (old && same_stack(old, s)) {
			/* Another CPU stored it first: its record is ahead of ours in the ring. */
			bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
			return old->stack_id;
		}
		if (!old) {
			bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
			count(MT_CNT_STACKS_LOST);
			return 0;
		}
		/* Another stack of the same hash: this one goes out under its own id each time. */
		count(MT_CNT_STACK_COLLISIONS);
	}
	bpf_probe_read_kernel(rec, sizeof(*rec), scratch);
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return id;
}

/* The id of the current thread's stack, unwound from the allocator's entry registers. */
static __always_inline __u32 current_stack_id(struct pt_regs *ctx)
{
	struct mt_unwind_stack *s = mt_unwind_user(ctx, true);
	struct mt_stack_record *known;
	__u64 h;

	if (!s) {
		count(MT_CNT_STACKS_LOST);
		return 0;
	}
	h = stack_hash(s);
	known = bpf_map_lookup_elem(&stacks, &h);
	if (known && same_stack(known, s))
		return known->stack_id;
	return new_stack(s, h);
}

/*
 * The state of the current thread when its process is tracked, else NULL. A thread has state only
 * once its process was found tracked, and a tracked process stays tracked for the life of its
 * tasks (exec keeps the task), so the state itself answers "tracked?" without the hash lookup.
 */
static __always_inline struct thread_state *tracked_thread_state(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread_state *st;

	if (!tracking_enabled)
		return NULL;
	st = bpf_task_storage_get(&thread_states, task, 0, 0);
	if (st || !current_is_tracked())
		return st;
	st = bpf_task_storage_get(&thread_states, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		count(MT_CNT_ARGS_LOST);
	return st;
}

/*
 * Global functions (not static, never inlined): the verifier checks each once, on its own, not
 * once for every call site and every path that leads there, which is what made the allocator
 * programs cost 40,000 verified instructions apiece (docs/PERFORMANCE.md, section 4). Their
 * pointer arguments may be NULL as far as the verifier knows.
 */
__noinline int mt_decode_and_emit(struct thread_state *f, __u64 ret, __u32 failed);

/* The stack pointer recorded for level (< MT_LEVELS), in a form the verifier can bound. */
static __always_inline __u64 level_sp(struct thread_state *st, __u32 level)
{
	barrier_var(level);
	return st->sp[level & (MT_LEVELS - 1)];
}

/*
 * Whether the call that may throw at level top is gone, seen from a probe at stack pointer sp
 * (at_entry: a new call's entry). A live call's callees run below its entry stack pointer, and
 * its return address stays in place. A new call at or above it, or another return address
 * there, means an exception unwound past it (the catching frame then called something else).
 */
static __always_inline bool call_gone(struct thread_state *st, __u32 top, __u64 sp, bool at_entry)
{
	__u64 at = level_sp(st, top), ra = 0;

	if (at < sp || (at_entry && at == sp))
		return true;
	barrier_var(top);
	return bpf_probe_read_user(&ra, sizeof(ra), (void *)at) ||
	       ra != st->ra[top & (MT_LEVELS - 1)];
}

/*
 * Forget the calls that may throw and are gone, from the top. An exception left them without a
 * return; the outermost one is recorded as the failed call it was.
 */
__noinline int mt_settle_gone(struct thread_state *st, __u64 sp, __u32 at_entry)
{
	if (!st)
		return 0;
	for (int i = 0; i < MT_LEVELS; i++) {
		__u32 top = st->depth - 1;

		if (!st->depth || top >= MT_LEVELS || !(st->throws & (1u << top)) ||
		    !call_gone(st, top, sp, at_entry))
			break;
		st->depth = top;
		if (!top)
			mt_decode_and_emit(st, 0, true);
	}
	return 0;
}

/* Only a thread inside a call that may throw has anything to settle: the common case inline. */
static __always_inline void settle(struct thread_state *st, __u64 sp, bool at_entry)
{
	if (st->depth && st->throws)
		mt_settle_gone(st, sp, at_entry);
}

/* The level on top when it is a call that may throw, entered at stack pointer sp; else -1. */
static __always_inline int throwing_top_at(struct thread_state *st, __u64 sp)
{
	__u32 top = st->depth - 1;

	if (!st->depth || top >= MT_LEVELS || !(st->throws & (1u << top)) ||
	    level_sp(st, top) != sp)
		return -1;
	return top;
}

/*
 * A ret instruction of a function that may throw, or of code it jumps to; the probe fires before
 * it runs, so the stack pointer still points at the return address: the one recorded at the
 * entry when this returns from the call on top, another when it returns from a helper.
 */
static __always_inline int on_return_insn(struct thread_state *st, __u64 sp, __u64 ret)
{
	int top;

	settle(st, sp, false);
	top = throwing_top_at(st, sp);
	if (top < 0)
		return 0;
	st->depth = top;
	if (top)
		return 0;
	mt_decode_and_emit(st, ret, false);
	return 0;
}

/* A tail jump into another probed entry: the call on top goes on as that one, which records it. */
static __always_inline int on_tail_jump(struct thread_state *st, __u64 sp)
{
	int top;

	settle(st, sp, false);
	top = throwing_top_at(st, sp);
	if (top >= 0)
		st->depth = top;
	return 0;
}

/*
 * How far down a chain of forwarding releases a release kind is: operator delete may call (or
 * jump to) a sized free or free, a sized free may call free; never the other way. free forwards
 * to nothing probed.
 */
static __always_inline __u32 release_rank(__u32 kind)
{
	switch (kind) {
	case MT_K_DELETE:
		return 3;
	case MT_K_FREE:
		return 1;
	default:
		return 2;
	}
}

/*
 * Whether a release of addr entered at stack pointer sp is the inner half of the last release
 * this thread recorded: entered while that release is still on the stack (at or below its entry
 * stack pointer, which still holds its return address), as a function lower in the chain (called
 * from it, or the tail jump that replaced it) or one of its rank that it called (sized operator
 * delete -> operator delete). Once that release returned, its caller's next call writes another
 * return address there, so the thread's own later release of a block at the same address
 * (another thread freed and got it back meanwhile) is a release of its own.
 */
static __always_inline bool forwarded(struct thread_state *st, __u64 addr, __u32 rank, __u64 sp)
{
	__u64 ra = 0;

	if (st->rel_addr != addr || rank > st->rel_rank || sp > st->rel_sp ||
	    (rank == st->rel_rank && sp == st->rel_sp))
		return false;
	return !bpf_probe_read_user(&ra, sizeof(ra), (void *)st->rel_sp) && ra == st->rel_ra;
}

/*
 * A release outside any other allocator call: the record, unless it is forwarded. Only a
 * release that may forward (rank above free's) is remembered, and pays for reading its return
 * address: a plain free costs what it always did.
 */
static __always_inline void on_release(struct thread_state *st, __u64 cookie, __u64 addr, __u64 sp)
{
	__u32 rank = release_rank(MT_COOKIE_KIND(cookie));

	if (forwarded(st, addr, rank, sp))
		return;
	emit(cookie, addr, 0, 0, 0, 0, 0);
	st->rel_addr = 0;
	if (rank > 1 && !bpf_probe_read_user(&st->rel_ra, sizeof(st->rel_ra), (void *)sp)) {
		st->rel_addr = addr;
		st->rel_sp = sp;
		st->rel_rank = rank;
	}
}

/* The realloc kinds that take a block and may move it (xallocx resizes in place). */
static __always_inline bool releases_at_entry(__u32 kind)
{
	return kind == MT_K_REALLOC || kind == MT_K_REALLOCARRAY || kind == MT_K_RALLOCX ||
	       kind == MT_K_REALLOC_ALIGNED;
}

static __always_inline int on_enter(struct pt_regs *ctx, __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 role = MT_COOKIE_ROLE(cookie), level;
	__u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;

	st = tracked_thread_state();
	if (!st)
		return 0;
	if (role == MT_ROLE_RETURN)
		return on_return_insn(st, sp, PT_REGS_RC(ctx));
	if (role == MT_ROLE_TAIL)
		return on_tail_jump(st, sp);
	settle(st, sp, true);
	if (is_free_kind(MT_COOKIE_KIND(cookie))) {
		/* Inside another allocator call (realloc -> free) the outer call is the record. */
		if (!st->depth && a0)
			on_release(st, cookie, a0, sp);
		return 0;
	}
	level = st->depth++;
	if (level < MT_LEVELS) {
		barrier_var(level);
		st->sp[level & (MT_LEVELS - 1)] = sp;
		st->throws &= ~(1u << level);
		if (role == MT_ROLE_ENTRY_THROWS &&
		    !bpf_probe_read_user(&st->ra[level & (MT_LEVELS - 1)], sizeof(__u64),
					 (void *)sp))
			st->throws |= 1u << level;
	}
	if (level)
		return 0;
	st->args[0] = a0;
	st->args[1] = a1;
	st->args[2] = a2;
	st->args[3] = a3;
	st->cookie = cookie;
	st->stack_id = stacks_enabled ? current_stack_id(ctx) : 0;
	/* Released now: another thread may get its address before this call returns. */
	if (a0 && releases_at_entry(MT_COOKIE_KIND(cookie)))
		emit_kind(MT_K_REALLOC_RELEASE, (__u16)MT_COOKIE_FILE(cookie), a0, 0, 0, 0, 0, 0);
	return 0;
}

/*
 * n * size, as calloc and reallocarray compute it; a product that overflows is no size the call
 * could have succeeded with: it becomes the largest size, so a NULL return reads as a failure
 * (not as a 0-byte calloc, nor as a reallocarray to 0 that freed its block).
 */
static __always_inline __u64 array_size(__u64 n, __u64 size)
{
	__u64 max;

	if (!n)
		return 0;
	max = ~0ULL / n;
	/* Else clang turns the test into a 128-bit multiply, which BPF does not have. */
	barrier_var(max);
	return size > max ? ~0ULL : n * size;
}

/*
 * Size, old block and alignment of a completed call, decoded by kind from its arguments; failed:
 * the call never returned (an exception).
 */
__noinline int mt_decode_and_emit(struct thread_state *f, __u64 ret, __u32 failed)
{
	__u64 *a, size = 0, old = 0, align = 0, addr = ret;
	__u32 kind;
	__u8 flags = 0;

	if (!f)
		return 0;
	a = f->args;
	kind = MT_COOKIE_KIND(f->cookie);

	switch (kind) {
	case MT_K_CALLOC:
		size = array_size(a[0], a[1]);
		break;
	case MT_K_REALLOC:
		old = a[0];
		size = a[1];
		break;
	case MT_K_REALLOCARRAY:
		old = a[0];
		size = array_size(a[1], a[2]);
		break;
	case MT_K_ALIGNED_ALLOC:
	case MT_K_MEMALIGN:
		align = a[0];
		size = a[1];
		break;
	case MT_K_POSIX_MEMALIGN:
		align = a[1];
		size = a[2];
		addr = 0;
		if ((int)ret == 0)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)a[0]);
		break;
	case MT_K_MALLOCX:
		size = a[0];
		align = (a[1] & 0x3f) ? 1ULL << (a[1] & 0x3f) : 0;
		break;
	case MT_K_RALLOCX:
		old = a[0];
		size = a[1];
		align = (a[2] & 0x3f) ? 1ULL << (a[2] & 0x3f) : 0;
		break;
	case MT_K_XALLOCX:
		/* Resizes in place and returns the usable size: the block stays where it was. */
		old = a[0];
		addr = a[0];
		size = a[1];
		break;
	case MT_K_NEW_ALIGNED:
	case MT_K_MALLOC_ALIGNED:
		size = a[0];
		align = a[1];
		break;
	case MT_K_REALLOC_ALIGNED:
		old = a[0];
		size = a[1];
		align = a[2];
		break;
	case MT_K_CALLOC_ALIGNED:
		size = array_size(a[0], a[1]);
		align = a[2];
		break;
	default: /* malloc, valloc, pvalloc, operator new */
		size = a[0];
		break;
	}
	/*
	 * realloc(p, 0) may return NULL having freed p: that is not a failure. A NULL for any other
	 * size is, and a failed realloc leaves its block where it was.
	 */
	if ((!addr && size) || failed)
		flags |= MT_EV_FAILED;
	emit(f->cookie, addr, size, old, align, flags, f->stack_id);
	return 0;
}

static __always_inline int on_exit(struct pt_regs *ctx, __u64 ret)
{
	struct thread_state *st;

	st = tracked_thread_state();
	if (!st)
		return 0;
	/* After the ret: the returning call's entry stack pointer is 8 bytes below. */
	settle(st, PT_REGS_SP(ctx) - 8, false);
	if (!st->depth) {
		count(MT_CNT_ARGS_LOST);
		return 0;
	}
	if (--st->depth)
		return 0;
	mt_decode_and_emit(st, ret, false);
	return 0;
}

/*
 * Whether a per-process perf link's hit is the linked process's to count (MT_COOKIE_OWNER in
 * bpf/memtrack.h): its own thread group, through the leader's links while the leader's mm
 * lives and through the links made on a live thread (MT_COOKIE_AFTER_LEADER) once it is gone.
 */
static __always_inline bool perf_link_counts(__u64 cookie)
{
	__u32 owner = MT_COOKIE_OWNER(cookie);
	struct task_struct *task;
	bool leader_gone;

	if (!owner)
		return true; /* pid -1 (--probe-scope=system): the tracked map decides */
	if ((__u32)(current_pid_tgid() >> 32) != owner)
		return false;
	task = bpf_get_current_task_btf();
	leader_gone = !BPF_CORE_READ(task, group_leader, mm);
	return leader_gone == !!(cookie & MT_COOKIE_AFTER_LEADER);
}

/*
 * The same programs twice: attached one probe per perf event, or many per uprobe_multi link
 * (one link per file, and one grace period to detach it instead of one per probe).
 */
SEC("uprobe")
int BPF_KPROBE(alloc_enter, __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	if (!perf_link_counts(bpf_get_attach_cookie(ctx)))
		return 0;
	return on_enter(ctx, a0, a1, a2, a3);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, __u64 ret)
{
	if (!perf_link_counts(bpf_get_attach_cookie(ctx)))
		return 0;
	return on_exit(ctx, ret);
}

SEC("uprobe")
int BPF_KPROBE(alloc_enter_multi, __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	return on_enter(ctx, a0, a1, a2, a3);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit_multi, __u64 ret)
{
	return on_exit(ctx, ret);
}

/*
 * Counts nothing: linked on a live thread of a process whose leader exited first, its only work
 * is its filter's, which keeps the breakpoints in that process's memory (docs/PROBES.md).
 */
SEC("uprobe")
int BPF_KPROBE(keep_breakpoints)
{
	return 0;
}

/* ---- mappings (memtrack track, mt_tracker_config.mappings) ------------------------------ */

/*
 * mmap, munmap, mremap and brk of the tracked tree: the syscalls tracepoints of these four calls
 * only (no filter on every system call of the machine), the arguments kept at the entry and the
 * record emitted at the return, with the result. Loaded and attached only when mappings are
 * asked for. munmap is recorded failed or not (CodSpeed records every munmap of a range); a
 * failed mmap or mremap maps nothing and is not recorded; brk(0) only asks where the break is.
 */
#define MT_MAP_ANONYMOUS 0x20
#define MT_ENOMEM	 12

struct map_call {
	__u64 args[6];
	__u32 what; /* enum mt_map_what of the call in progress, 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct map_call);
} map_calls SEC(".maps");

/*
 * Only the call's own arguments are read: a program that reads past a tracepoint's fields is
 * refused at attach (EACCES), and munmap's has two. nargs is a constant: the rest compiles away.
 */
static __always_inline int map_enter(struct trace_event_raw_sys_enter *ctx, __u32 what, int nargs)
{
	struct map_call *c;

	if (!events_enabled || !current_is_tracked())
		return 0;
	c = bpf_task_storage_get(&map_calls, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	/* One by one: the verifier refuses a ctx pointer moved by a loop. */
	c->args[0] = ctx->args[0];
	if (nargs > 1)
		c->args[1] = ctx->args[1];
	if (nargs > 2)
		c->args[2] = ctx->args[2];
	if (nargs > 3)
		c->args[3] = ctx->args[3];
	if (nargs > 4)
		c->args[4] = ctx->args[4];
	if (nargs > 5)
		c->args[5] = ctx->args[5];
	c->what = what;
	return 0;
}

static __always_inline bool syscall_failed(long ret)
{
	return ret < 0 && ret >= -4095;
}

static __always_inline void emit_mapping(struct mt_map_record *src, struct file *file)
{
	struct mt_map_record *m;
	__u64 id, waiting;

	waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	id = current_pid_tgid();
	m = bpf_ringbuf_reserve(&events, sizeof(*m), 0);
	if (!m) {
		count(MT_CNT_EV_DROPPED);
		if (pressure_mark)
			press((__u32)id);
		return;
	}
	src->ts_ns = bpf_ktime_get_ns();
	src->pid = id >> 32;
	src->tid = (__u32)id;
	if (file) {
		read_inode_key(BPF_CORE_READ(file, f_inode), &src->file);
		bpf_probe_read_kernel_str(src->name, sizeof(src->name),
					  BPF_CORE_READ(file, f_path.dentry, d_name.name));
	}
	__builtin_memcpy(m, src, sizeof(*m));
	if (pressure_mark && waiting >= pressure_mark) {
		bpf_ringbuf_submit(m, BPF_RB_FORCE_WAKEUP);
		press((__u32)id);
		return;
	}
	bpf_ringbuf_submit(m, BPF_RB_NO_WAKEUP);
}

/* The record being built: per CPU, as it is too large for the BPF stack with the file's name. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_map_record);
} map_scratch SEC(".maps");

/*
 * At a call's return: the record to fill for the call of kind what in progress (its arguments in
 * *call), or NULL when its entry was not recorded, or when it failed and failures are not.
 */
static __always_inline struct mt_map_record *map_exit(__u32 what, long ret, bool failed_too,
						      struct map_call **call)
{
	struct map_call *c = bpf_task_storage_get(&map_calls, bpf_get_current_task_btf(), 0, 0);
	__u32 zero = 0;
	struct mt_map_record *m;

	if (!c || c->what != what)
		return NULL;
	c->what = 0;
	if (!failed_too && syscall_failed(ret))
		return NULL;
	m = bpf_map_lookup_elem(&map_scratch, &zero);
	if (!m)
		return NULL;
	__builtin_memset(m, 0, sizeof(*m));
	m->what = what;
	m->err = syscall_failed(ret) ? (__s32)ret : 0;
	*call = c;
	return m;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int map_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MMAP, 6);
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int map_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MMAP, ctx->ret, false, &c);
	struct file *file = NULL;

	if (!m)
		return 0;
	m->addr = ctx->ret;
	m->len = c->args[1];
	m->prot = c->args[2];
	m->flags = c->args[3];
	if (!(m->flags & MT_MAP_ANONYMOUS)) {
		m->offset = c->args[5];
		file = fd_to_file((__s32)c->args[4]);
	}
	emit_mapping(m, file);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int map_munmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MUNMAP, 2);
}

SEC("tracepoint/syscalls/sys_exit_munmap")
int map_munmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MUNMAP, ctx->ret, true, &c);

	if (m) {
		m->addr = c->args[0];
		m->len = c->args[1];
		emit_mapping(m, NULL);
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int map_mremap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MREMAP, 5);
}

SEC("tracepoint/syscalls/sys_exit_mremap")
int map_mremap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MREMAP, ctx->ret, false, &c);

	if (!m)
		return 0;
	m->addr = ctx->ret;
	m->old_addr = c->args[0];
	m->old_len = c->args[1];
	m->len = c->args[2];
	m->flags = c->args[3];
	emit_mapping(m, NULL);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_brk")
int map_brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ctx->args[0] ? map_enter(ctx, MT_MAP_BRK, 1) : 0;
}

/* brk returns the break, moved or not: one it did not move to the address asked for failed. */
SEC("tracepoint/syscalls/sys_exit_brk")
int map_brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_BRK, ctx->ret, true, &c);

	if (!m || !ctx->ret)
		return 0;
	m->addr = ctx->ret;
	m->old_addr = BPF_CORE_READ(task, mm, start_brk);
	m->len = m->addr > m->old_addr ? m->addr - m->old_addr : 0;
	m->err = (__u64)ctx->ret == c->args[0] ? 0 : -MT_ENOMEM;
	emit_mapping(m, NULL);
	return 0;
}
