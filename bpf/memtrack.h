/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Records shared by the BPF programs and user space. Every struct here crosses a ring buffer or
 * a map, so its layout is part of the contract: fixed-width fields, explicit padding.
 */
#ifndef MEMTRACK_H
#define MEMTRACK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Values of the known_inodes map. Absence means "never seen". */
/* The value of a tgid in the tracked map once memtrack handed it to a debugger (else 1). */
#define MT_TRACKED_HANDED_OFF 2
/* A handed-off tgid that a debugger has attached to (PTRACE_ATTACH or PTRACE_SEIZE) since. */
#define MT_TRACKED_DEBUGGED   3

#define MT_INODE_PENDING 1
#define MT_INODE_DONE	 2
/* Handled, with probes that each process gets its own links for (--probe-scope=tree). */
#define MT_INODE_PROBED	 3

/* Indices of the per-CPU counters map: everything the BPF side could not deliver, and more. */
enum mt_counter {
	MT_CNT_REQ_DROPPED = 0,	 /* attach request not reserved, or its stop unmarked */
	MT_CNT_EV_DROPPED,	 /* event not reserved in events */
	MT_CNT_ARGS_LOST,	 /* return probe without its entry (scratch full or missing) */
	MT_CNT_WATCHER_STOPS,	 /* SIGSTOPs sent by the watcher */
	MT_CNT_PRESSURE_STOPS,	 /* SIGSTOPs sent because the events ring was nearly full */
	MT_CNT_STACKS_LOST,	 /* allocations whose stack could not be stored (stack id 0) */
	MT_CNT_STACK_COLLISIONS, /* two stacks of one hash: the second stored under its own id */
	MT_CNT_UNRECORDED,	 /* calls of functions counted, not recorded (MT_K_UNRECORDED) */
	MT_CNT_MAX,
};

/*
 * The maps user space empties between two runs of one tracker (exec-harness), whose keys both
 * sides count in the map_keys array of the object's .bss: a walk of an empty map of 65,536
 * buckets costs 0.15 ms, and a map whose count is 0 is not walked. Each side counts only what it
 * added or removed (an insert that created the key, a delete that found it), atomically.
 */
enum mt_keyed_map {
	MT_KEYS_TRACKED = 0,
	MT_KEYS_ARMED,
	MT_KEYS_STOP_MARKS,
	MT_KEYS_PRESSURE_MARKS,
	MT_KEYS_MAX,
};

/*
 * Semantic kind of an allocator function. Family-specific functions with the semantics of a
 * standard one use the standard kind (mi_malloc and tc_malloc are MT_MALLOC); the BPF side
 * decodes arguments by kind, user space counts by kind. Never renumber: stored in artifacts.
 */
enum mt_kind {
	MT_K_NONE = 0,
	MT_K_MALLOC,		 /* (size) -> ptr */
	MT_K_CALLOC,		 /* (n, size) -> ptr */
	MT_K_REALLOC,		 /* (ptr, size) -> ptr */
	MT_K_REALLOCARRAY,	 /* (ptr, n, size) -> ptr */
	MT_K_FREE,		 /* (ptr) */
	MT_K_ALIGNED_ALLOC,	 /* (align, size) -> ptr */
	MT_K_MEMALIGN,		 /* (align, size) -> ptr */
	MT_K_POSIX_MEMALIGN,	 /* (ptr *, align, size) -> int */
	MT_K_VALLOC,		 /* (size) -> ptr */
	MT_K_PVALLOC,		 /* (size) -> ptr */
	MT_K_FREE_SIZED,	 /* (ptr, size) */
	MT_K_FREE_ALIGNED_SIZED, /* (ptr, align, size) */
	MT_K_MALLOCX,		 /* jemalloc (size, flags) -> ptr */
	MT_K_RALLOCX,		 /* jemalloc (ptr, size, flags) -> ptr */
	MT_K_XALLOCX,		 /* jemalloc (ptr, size, extra, flags) -> usable size, in place */
	MT_K_SDALLOCX,		 /* jemalloc (ptr, size, flags) */
	MT_K_DALLOCX,		 /* jemalloc (ptr, flags) */
	MT_K_NEW,		 /* operator new (size) -> ptr */
	MT_K_NEW_ALIGNED,	 /* operator new (size, align) -> ptr */
	MT_K_DELETE,		 /* operator delete (ptr, ...) */
	MT_K_MALLOC_ALIGNED,	 /* (size, align) -> ptr: mi_malloc_aligned and friends */
	MT_K_REALLOC_ALIGNED,	 /* (ptr, size, align) -> ptr: mi_realloc_aligned */
	MT_K_CALLOC_ALIGNED,	 /* (n, size, align) -> ptr: mi_calloc_aligned */
	MT_K_RUST_REALLOC,	 /* (ptr, old size, align, size) -> ptr: Rust's __rust_realloc */
	MT_K_RUST_DEALLOC,	 /* (ptr, size, align): Rust's __rust_dealloc */
	MT_K_GO_MALLOC, /* Go's runtime.mallocgc (size in RAX): no return probe, no address */
	MT_K_MAX,
};

/*
 * Argument layouts of allocator functions whose calls are recorded as a kind above but whose
 * arguments come in another order, or not at all: a probe's cookie carries one of these in place
 * of a kind, the BPF side decodes the call by it and gives the event the kind named. Never in an
 * event, never in an artifact; the cookie's 5 bits leave room for no more.
 */
enum mt_call_layout {
	MT_L_RECALLOC_ALIGNED = 27, /* (ptr, n, size, align): event realloc_aligned */
	MT_L_STRDUP = 28,	    /* (str, ...) -> copy: event malloc of strlen(copy) + 1 */
	MT_L_ALIGNED_REALLOC = 29,  /* (ptr, align, size): event realloc_aligned */
	MT_L_ALIGNED_CALLOC = 30,   /* (align, n, size): event calloc_aligned */
	MT_L_SN_REALLOC = 31,	    /* (ptr, align, old size, size): event realloc_aligned */
};

/*
 * Allocator functions memtrack finds but does not record: no kind or layout reads their calls
 * (docs/PROBES.md). An entry probe counts each call (MT_K_UNRECORDED), so that the report says
 * the recording is incomplete and why. The probe's cookie carries MT_COOKIE_UNRECORDED and one
 * of these in place of a kind. Never renumber: stored in artifacts.
 */
enum mt_unrecorded {
	MT_U_NONE = 0,
	MT_U_MI_REALPATH,	     /* (name, resolved): allocates when resolved is NULL */
	MT_U_MI_WCSDUP,		     /* a string of 16-bit characters */
	MT_U_MI_REALLOCARR,	     /* (ptr *, n, size) -> int: the block goes out through ptr */
	MT_U_SN_REALLOCARR,	     /* the same, snmalloc's */
	MT_U_MI_DUPENV_S,	     /* (buf *, size *, name) -> int */
	MT_U_MI_HEAP_DESTROY,	     /* frees every block of a heap at once */
	MT_U_RPMALLOC_HEAP_FREE_ALL, /* the same, rpmalloc's */
	MT_U_MI_HEAP_REALPATH,	     /* (heap, name, resolved): mi_realpath's, on a heap */
	MT_U_MAX,
};

/*
 * Records of the same stream that are not allocator calls: the process lifecycle and the release
 * of a realloc's old block at the call's entry. Emitted by the BPF side when they happen, so their
 * order against the allocator events is the ring's reservation order, a true global order. Kinds
 * from 32 up never come from a probe cookie (5 bits); the artifact stores them like any event.
 * Never renumber. Field by field (fields not named are 0):
 *
 * MT_K_FORK: a tracked process made a new process (fork, vfork, clone without CLONE_THREAD), from
 *   the parent's sched_process_fork. pid, tid: the parent thread that made it; addr: the child's
 *   pid (tgid); size: MT_FORK_SHARED_MM when the child runs in its parent's memory (vfork, or
 *   CLONE_VM: until it execs, its blocks are the parent's), else 0.
 * MT_K_EXEC: a tracked process replaced its image (sched_process_exec): every block of its own
 *   address space is gone, and a child that shared its parent's memory has its own from now on.
 *   pid, tid: the process and the thread that exec'd (the tid is the pid: exec makes the thread
 *   its group's leader).
 * MT_K_EXIT: the last thread of a tracked process ended (sched_process_exit): its address space,
 *   unless shared with its parent, is gone. pid: the process; tid: that last thread; size: the
 *   exit code as wait(2) reports it (status << 8, or the signal number, 0x80 for a core dump).
 * MT_K_REALLOC_RELEASE: a realloc-kind call (realloc, reallocarray, rallocx, realloc_aligned) was
 *   entered with a block, released now: another thread may receive its address before the call
 *   returns. pid, tid, file_id: the caller and the file as for the call; addr: the block passed
 *   in. The call's own event follows at its return; a failed call gives the block back.
 * MT_K_UNRECORDED: a call of an allocator function memtrack does not record (enum mt_unrecorded),
 *   at its entry. pid, tid, file_id: the caller and the file; size: the function.
 */
enum mt_stream_kind {
	MT_K_FORK = 32,
	MT_K_EXEC = 33,
	MT_K_EXIT = 34,
	MT_K_REALLOC_RELEASE = 35,
	MT_K_UNRECORDED = 36,
};

/* size of an MT_K_FORK record: the child shares its parent's memory (vfork). */
#define MT_FORK_SHARED_MM 1

/* Event flags. */
#define MT_EV_FAILED 0x1 /* the call returned no block (NULL, or an error for posix_memalign) */
/*
 * The block came zeroed (calloc and its kin, mi_zalloc, __rust_alloc_zeroed, mallocx with
 * MALLOCX_ZERO); for a realloc kind, the bytes it grew by. Only on a call that did not fail.
 */
#define MT_EV_ZEROED 0x2

/*
 * The attach cookie of an allocator probe: the file it belongs to and the kind of the function,
 * so one pair of BPF programs serves every function of every file.
 */
#define MT_COOKIE(file_id, kind) (((__u64)(file_id) << 8) | (__u64)(kind))
#define MT_COOKIE_KIND(c)	 ((__u32)((c)&0x1f))
#define MT_COOKIE_ROLE(c)	 ((__u32)(((c) >> 5) & 0x3))
#define MT_COOKIE_FILE(c)	 ((__u32)(((c) >> 8) & 0xffff))

/*
 * A per-process perf link (kernels without uprobe_multi) also names the process it is for
 * (bits 32-63: its tgid in memtrack's pid namespace): the kernel runs such a link's programs for
 * any task of the linked task's mm, and its return probes for any task at all (6.1 has no filter
 * on the uretprobe path), so the programs check the process themselves. MT_COOKIE_AFTER_LEADER
 * marks the links made on a live thread when the process's leader exits first: they count once
 * the leader's mm is gone, and the leader's own links count until then (docs/PROBES.md).
 */
#define MT_COOKIE_AFTER_LEADER (1ULL << 24)
/*
 * How the BPF side reads a call, beyond its kind (or layout): MT_COOKIE_HEAP_FIRST, the function
 * takes a heap first (mi_heap_malloc(heap, size), rpmalloc_heap_alloc(heap, size)) and its
 * kind's arguments from the second register on; MT_COOKIE_ZEROES, it hands out zeroed memory
 * (events flagged MT_EV_ZEROED) though its kind does not say so (mi_zalloc is a malloc kind).
 */
#define MT_COOKIE_HEAP_FIRST   (1ULL << 25)
#define MT_COOKIE_ZEROES       (1ULL << 26)
/* The kind bits hold an enum mt_unrecorded: the call is counted, nothing else (entry only). */
#define MT_COOKIE_UNRECORDED   (1ULL << 27)
#define MT_COOKIE_OWNER(c)     ((__u32)((c) >> 32))
#define MT_COOKIE_FOR(tgid)    ((__u64)(__u32)(tgid) << 32)

/*
 * What a probe point is, in bits 5-6 of its cookie's kind byte (kinds stay below 32). A function
 * that may throw (operator new) has no return probe: its trampoline would replace the return
 * address that the unwinder needs. Its entry is MT_ROLE_ENTRY_THROWS, and uprobes on its return
 * instructions (MT_ROLE_RETURN) and on its tail jumps into another probed entry (MT_ROLE_TAIL)
 * find where it returns; the stack pointer tells its return from any other.
 */
enum mt_role {
	MT_ROLE_ENTRY = 0, /* an entry; the function's return probe, if any, is a uretprobe */
	MT_ROLE_ENTRY_THROWS = 1, /* the entry of a function that may throw */
	MT_ROLE_RETURN = 2, /* a ret instruction of such a function (or of code it jumps to) */
	MT_ROLE_TAIL = 3,   /* a jmp from such a function to another probed entry */
};
#define MT_KIND_ROLE(kind, role) ((kind) | ((role) << 5))

/*
 * A file as the BPF side and user space both name it. An inode number alone is reused once its
 * file is deleted (ext4 hands it to the next file at once), so the inode's ctime is part of the
 * key: a new file at a reused number has a newer one. user space reads it with fstat.
 */
/* A probed file armed for one process: its links exist, its mappings need no stop. */
struct mt_arm_key {
	__u32 tgid;
	__u32 pad;
	__u64 dev;
	__u64 ino;
};

/*
 * A ptrace request of a tracee that would trace another tracee (a tracer inside the traced tree,
 * docs/STOPS.md): the watcher stops the caller with this mark; user space steps aside for the
 * target and lets the call run again, once, with pass set.
 */
struct mt_ptrace_mark {
	__u32 request; /* PTRACE_TRACEME, PTRACE_ATTACH or PTRACE_SEIZE */
	__u32 pid;     /* the target of an attach, as the caller names it (0 for TRACEME) */
	__u32 pass;    /* set by user space: let this request through once */
	__u32 pad;
};

struct mt_inode_key {
	__u64 dev; /* kernel encoding: major << 20 | minor */
	__u64 ino;
	__s64 ctime_sec;
	__u32 ctime_nsec;
	__u32 pad;
};

/* Submitted by the watcher before it stops the mapping thread. */
struct mt_attach_req {
	__u32 pid;
	__u32 tid;
	struct mt_inode_key key;
	__s32 fd; /* the mmap fd (tracepoint back end) or -1 */
	__u32 pad;
};

/*
 * One completed allocator call, or a record of enum mt_stream_kind, 56 bytes; the artifact stores
 * it delta-encoded.
 */
struct mt_event {
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 pid;
	__u32 tid;
	__u64 addr;	/* the block returned, or the block released */
	__u64 size;	/* requested size (n * size for calloc); 0 for a free */
	__u64 old_addr; /* realloc family: the block passed in */
	__u32 align;	/* alignment asked for, or 0 */
	__u16 file_id;	/* index of the attached file, see the artifact's file records */
	__u8 kind;	/* enum mt_kind */
	__u8 flags;	/* MT_EV_* */
	__u32 stack_id; /* the allocation's stack (struct mt_stack_record), 0: none */
	__u32 pad;
};

/*
 * A distinct allocation stack (--stacks), emitted into the events ring once, when the BPF side
 * first sees it, before any event that carries its id. Told apart from an event by its size.
 * frames[0] is the allocator's entry, frames[1..n) the return addresses, innermost first, each
 * an MT_FRAME (bpf/unwind_row.h).
 */
#define MT_STACK_MAX_FRAMES 128 /* MT_UNWIND_MAX_FRAMES */

struct mt_stack_record {
	__u32 stack_id; /* from 1 */
	__u32 pad;
	__u64 hash;
	__u32 n;
	__u32 stop; /* enum mt_unwind_stop */
	__u64 frames[MT_STACK_MAX_FRAMES];
};

/*
 * A mapping system call of a tracked process (memtrack track, --mappings): mmap, munmap, mremap
 * or brk, emitted into the events ring at the call's return, so that it keeps its place in the
 * one ordered stream. Told apart from an event and a stack by its size. Never renumber.
 */
enum mt_map_what {
	MT_MAP_MMAP = 1,
	MT_MAP_MUNMAP = 2,
	MT_MAP_MREMAP = 3,
	MT_MAP_BRK = 4,
};

#define MT_MAP_NAME 64 /* the mapped file's base name, NUL included */

/*
 * origin of a mapping record: made while the thread was inside a call of a probed allocator
 * function that allocates (malloc, realloc, operator new, ...: between its entry and its return),
 * so the allocator's own memory (glibc's large blocks and arenas, musl's brk), which the heap's
 * blocks already count.
 */
#define MT_MAP_IN_ALLOCATOR 0x1

struct mt_map_record {
	__u64 ts_ns; /* CLOCK_MONOTONIC, at the call's return */
	__u32 pid;
	__u32 tid;
	__u64 addr; /* mmap, mremap: the mapping's start; munmap: the range's; brk: the new break */
	__u64 len;  /* mmap, munmap: the length asked for; mremap: the new length; brk: break minus
		       the heap's start */
	__u64 old_addr;		  /* mremap: the old start; brk: the heap's start (start_brk) */
	__u64 old_len;		  /* mremap: the old length */
	__u64 offset;		  /* mmap of a file: the offset in it, bytes */
	struct mt_inode_key file; /* mmap of a file: its inode; all zero for none */
	__s32 err;		  /* 0, or the negative errno (brk: -ENOMEM when it did not move) */
	__u32 prot;		  /* mmap: PROT_* */
	__u32 flags;		  /* mmap: MAP_*; mremap: MREMAP_* */
	__u8 what;		  /* enum mt_map_what */
	__u8 origin;		  /* MT_MAP_IN_ALLOCATOR, or 0 */
	__u8 pad[2];
	char name[MT_MAP_NAME];
};

#endif /* MEMTRACK_H */
