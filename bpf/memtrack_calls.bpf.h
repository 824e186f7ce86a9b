/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The allocator probes: a thread's nested calls kept from entry to return (or to the frame that
 * ends them: a throw, a tail jump), decoded into events, and the uprobe programs.
 *
 * A piece of memtrack.bpf.c, which includes it after its maps, its thread state and the pieces
 * before it: one translation unit, one BPF object and skeleton. Not for any other file.
 */
#ifndef MT_MEMTRACK_CALLS_BPF_H
#define MT_MEMTRACK_CALLS_BPF_H

/*
 * The state of the current thread when its process is tracked, else NULL. A thread has state only
 * once its process was found tracked, and a tracked process stays tracked for the life of its
 * tasks (exec keeps the task), so the state itself answers "tracked?" without the hash lookup.
 */
static __always_inline struct thread_state *tracked_thread_state(bool *fresh)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread_state *st;

	*fresh = false;
	if (!tracking_enabled)
		return NULL;
	st = bpf_task_storage_get(&thread_states, task, 0, 0);
	if (st || !current_is_tracked())
		return st;
	st = bpf_task_storage_get(&thread_states, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count(MT_CNT_ARGS_LOST);
		return NULL;
	}
	st->ev_id = current_pid_tgid();
	st->global_tgid = bpf_get_current_pid_tgid() >> 32;
	*fresh = true;
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

/* The walk of mt_settle_gone, level by level from the top. */
struct settle_walk {
	struct thread_state *st;
	__u64 sp;
	__u32 at_entry;
};

/* bpf_loop's callback: the level on top, if gone, is forgotten. 1: the walk ends. */
static long settle_level(__u64 i, void *arg)
{
	struct settle_walk *w = arg;
	struct thread_state *st = w->st;
	__u32 top;

	(void)i;
	if (!st)
		return 1;
	top = st->depth - 1;
	if (!st->depth || top >= MT_LEVELS || !(st->throws & (1u << top)) ||
	    !call_gone(st, top, w->sp, w->at_entry))
		return 1;
	st->depth = top;
	if (!top)
		mt_decode_and_emit(st, 0, true);
	return 0;
}

/*
 * Forget the calls that may throw and are gone, from the top. An exception left them without a
 * return; the outermost one is recorded as the failed call it was. A bpf_loop, whose callback the
 * verifier checks once: a bounded for loop was walked once for each level and each path through
 * it, 1,160 of the 2,414 instructions verified for alloc_enter_multi, in every program that
 * settles (docs/PERFORMANCE.md, section 4).
 */
__noinline int mt_settle_gone(struct thread_state *st, __u64 sp, __u32 at_entry)
{
	struct settle_walk w = {.st = st, .sp = sp, .at_entry = at_entry};

	if (!st)
		return 0;
	bpf_loop(MT_LEVELS, settle_level, &w, 0);
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
 * How far down a chain of forwarding releases a release kind is: operator delete and Rust's
 * __rust_dealloc (into the global allocator's release) may call (or jump to) a sized free or
 * free, a sized free may call free; never the other way. free forwards to nothing probed.
 */
static __always_inline __u32 release_rank(__u32 kind)
{
	switch (kind) {
	case MT_K_DELETE:
	case MT_K_RUST_DEALLOC:
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
	emit(st->ev_id, cookie, addr, 0, 0, 0, 0, 0);
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
	       kind == MT_K_REALLOC_ALIGNED || kind == MT_K_RUST_REALLOC ||
	       kind == MT_L_RECALLOC_ALIGNED || kind == MT_L_ALIGNED_REALLOC ||
	       kind == MT_L_SN_REALLOC;
}

/* x86 EFLAGS: carry and zero, jbe's condition. */
#define MT_EFLAGS_CF 0x01
#define MT_EFLAGS_ZF 0x40

/*
 * Go's runtime.mallocgc, on the jbe of its stack check (placement.c): the record, now, unless the
 * flags the check's cmp left take the jbe, to grow the goroutine's stack and start the call again
 * from its entry (counted then). Go passes the size in RAX (its register ABI) and moves
 * goroutine stacks, so no return is waited for and the block's address is not known; the
 * collector frees it, no call does. Go code never runs inside a C allocator call on its thread,
 * and the nesting of those is left alone.
 */
static __always_inline int on_go_malloc(struct pt_regs *ctx, struct thread_state *st, __u64 cookie)
{
	__u32 stack_id;

	if (ctx->flags & (MT_EFLAGS_CF | MT_EFLAGS_ZF))
		return 0;
	stack_id = stacks_enabled ? current_stack_id(ctx, st->global_tgid) : 0;
	emit(st->ev_id, cookie, 0, PT_REGS_RC(ctx), 0, 0, 0, stack_id);
	return 0;
}

/*
 * A function memtrack finds but does not record (enum mt_unrecorded in bpf/memtrack.h), probed
 * at its entry only: the call counted, for the report to say the recording is incomplete. It
 * takes no part in the thread's nesting: a recorded call inside it is recorded as ever.
 */
static __always_inline int on_unrecorded(struct thread_state *st, __u64 cookie)
{
	count(MT_CNT_UNRECORDED);
	emit_kind_as(st->ev_id, MT_K_UNRECORDED, (__u16)MT_COOKIE_FILE(cookie), 0,
		     MT_COOKIE_KIND(cookie), 0, 0, 0, 0);
	return 0;
}

static __always_inline int on_enter(struct pt_regs *ctx, __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 role = MT_COOKIE_ROLE(cookie), level;
	__u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;
	bool fresh;

	st = tracked_thread_state(&fresh);
	if (!st)
		return 0;
	/* mi_heap_malloc(heap, size) and its kin: the kind's arguments start at the second. */
	if (cookie & MT_COOKIE_HEAP_FIRST) {
		a0 = a1;
		a1 = a2;
		a2 = a3;
		a3 = PT_REGS_PARM5(ctx);
	}
	if (role == MT_ROLE_RETURN)
		return on_return_insn(st, sp, PT_REGS_RC(ctx));
	if (role == MT_ROLE_TAIL)
		return on_tail_jump(st, sp);
	if (cookie & MT_COOKIE_UNRECORDED)
		return on_unrecorded(st, cookie);
	if (MT_COOKIE_KIND(cookie) == MT_K_GO_MALLOC)
		return on_go_malloc(ctx, st, cookie);
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
	st->stack_id = 0;
	st->entry_ip = 0;
	/*
	 * The caller only, of a call that comes back through its return probe: taken there, where
	 * the probe's ip is the return address, instead of a read of [rsp] here.
	 */
	if (stacks_enabled && stacks_caller && role == MT_ROLE_ENTRY)
		st->entry_ip = PT_REGS_IP(ctx);
	else if (stacks_enabled)
		st->stack_id = current_stack_id(ctx, st->global_tgid);
	/* Released now: another thread may get its address before this call returns. */
	if (a0 && releases_at_entry(MT_COOKIE_KIND(cookie)))
		emit_kind_as(st->ev_id, MT_K_REALLOC_RELEASE, (__u16)MT_COOKIE_FILE(cookie), a0, 0,
			     0, 0, 0, 0);
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
 * The size of the block a strdup made: strlen(copy) + 1, read from the copy it returned (the
 * string is its whole contents: mi_strndup's too, it ends where the copy stops), into the CPU's
 * scratch (str_scratch). 0 when the copy cannot be read to its end, or is longer than
 * MT_STR_CHUNKS chunks (32 KiB). A bounded loop of few turns: mt_decode_and_emit also runs inside
 * settle_level's bpf_loop, and 256 turns of a 128-byte stack buffer cost 6,000 verified
 * instructions (25 ms of start-up on a loaded host).
 */
__noinline __u64 mt_copy_size(__u64 copy)
{
	struct mt_str_scratch *buf;
	__u32 zero = 0;
	__u64 len = 0;

	buf = bpf_map_lookup_elem(&str_scratch, &zero);
	if (!buf)
		return 0;
	for (int i = 0; i < MT_STR_CHUNKS; i++) {
		long n = bpf_probe_read_user_str(buf->bytes, MT_STR_CHUNK, (void *)(copy + len));

		if (n < 0)
			return 0;
		/* 0: a NUL first (6.1's strncpy_from_user_nofault says 0 for an empty string) */
		if (!n)
			return len + 1;
		if (n < MT_STR_CHUNK)
			return len + (__u64)n; /* n counts the NUL */
		/* A full chunk: its last byte is the NUL the helper wrote, not the string's. */
		len += MT_STR_CHUNK - 1;
	}
	return 0;
}

/* jemalloc's MALLOCX_ZERO, in the flags of mallocx and rallocx: the block comes zeroed. */
#define MT_MALLOCX_ZERO 0x40

/*
 * Size, old block and alignment of a completed call, decoded by kind (or layout: then the kind
 * the event carries is the layout's) from its arguments; failed: the call never returned (an
 * exception).
 */
__noinline int mt_decode_and_emit(struct thread_state *f, __u64 ret, __u32 failed)
{
	__u64 *a, size = 0, old = 0, align = 0, addr = ret, zeroed = 0;
	__u32 kind, ev_kind;
	__u8 flags = 0;

	if (!f)
		return 0;
	a = f->args;
	kind = MT_COOKIE_KIND(f->cookie);
	ev_kind = kind;

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
		zeroed = a[1] & MT_MALLOCX_ZERO;
		break;
	case MT_K_RALLOCX:
		old = a[0];
		size = a[1];
		align = (a[2] & 0x3f) ? 1ULL << (a[2] & 0x3f) : 0;
		zeroed = a[2] & MT_MALLOCX_ZERO;
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
	case MT_K_RUST_REALLOC:
		old = a[0];
		align = a[2];
		size = a[3];
		break;
	case MT_L_RECALLOC_ALIGNED:
		old = a[0];
		size = array_size(a[1], a[2]);
		align = a[3];
		ev_kind = MT_K_REALLOC_ALIGNED;
		break;
	case MT_L_ALIGNED_REALLOC:
		old = a[0];
		align = a[1];
		size = a[2];
		ev_kind = MT_K_REALLOC_ALIGNED;
		break;
	case MT_L_SN_REALLOC:
		old = a[0];
		align = a[1];
		size = a[3];
		ev_kind = MT_K_REALLOC_ALIGNED;
		break;
	case MT_L_ALIGNED_CALLOC:
		align = a[0];
		size = array_size(a[1], a[2]);
		ev_kind = MT_K_CALLOC_ALIGNED;
		break;
	case MT_L_STRDUP:
		/* strdup(NULL) copies nothing: no call to record */
		if (!a[0])
			return 0;
		size = addr ? mt_copy_size(addr) : 0;
		ev_kind = MT_K_MALLOC;
		if (!addr)
			flags |= MT_EV_FAILED;
		break;
	default: /* malloc, valloc, pvalloc, operator new */
		size = a[0];
		break;
	}
	/*
	 * realloc(p, 0) may return NULL having freed p: that is not a failure. A NULL for any other
	 * size is, and a failed realloc leaves its block where it was. No test of kind down here:
	 * kind is a constant on each case's path, a test of it makes the verifier keep it exact,
	 * and then it walks this tail once for each case instead of once.
	 */
	if ((!addr && size) || failed)
		flags |= MT_EV_FAILED;
	else if (addr && (zeroed || (f->cookie & MT_COOKIE_ZEROES)))
		flags |= MT_EV_ZEROED;
	emit_kind_as(f->ev_id, (__u8)ev_kind, (__u16)MT_COOKIE_FILE(f->cookie), addr, size, old,
		     align, flags, f->stack_id);
	return 0;
}

static __always_inline int on_exit(struct pt_regs *ctx, __u64 ret)
{
	struct thread_state *st;
	bool fresh;

	st = tracked_thread_state(&fresh);
	if (!st)
		return 0;
	/* After the ret: the returning call's entry stack pointer is 8 bytes below. */
	settle(st, PT_REGS_SP(ctx) - 8, false);
	/*
	 * A thread whose first hit is a return was in the call before its process was tracked
	 * (memtrack attach): not a call that lost its arguments. A state that could not be made
	 * at the entry was counted there.
	 */
	if (!st->depth) {
		if (!fresh)
			count(MT_CNT_ARGS_LOST);
		return 0;
	}
	if (--st->depth)
		return 0;
	/* Back in the caller: ip is the return address, sp 8 bytes above the entry's. */
	if (stacks_enabled && stacks_caller && st->entry_ip) {
		/*
		 * A call site seen before is the common case: its kept id is checked here, and only
		 * a miss pays the call into mt_current_stack_id (which checks again, then unwinds).
		 */
		st->stack_id = caller_kept(st->global_tgid, st->entry_ip, PT_REGS_IP(ctx),
					   *(volatile __u64 *)&mt_vma_cache_gen);
		if (!st->stack_id)
			st->stack_id =
			    mt_current_stack_id(st->entry_ip, PT_REGS_SP(ctx) - 8, PT_REGS_FP(ctx),
						PT_REGS_IP(ctx), st->global_tgid);
		st->entry_ip = 0;
	}
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

#endif /* MT_MEMTRACK_CALLS_BPF_H */
