/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An allocator call's event into the ring (with back-pressure), and its stack's id (--stacks).
 *
 * A piece of memtrack.bpf.c, which includes it after its maps, its thread state and the pieces
 * before it: one translation unit, one BPF object and skeleton. Not for any other file.
 */
#ifndef MT_MEMTRACK_EMIT_BPF_H
#define MT_MEMTRACK_EMIT_BPF_H

/* ---- allocator probes ----------------------------------------------------------------- */

#define FREE_KINDS                                                                                 \
	((1u << MT_K_FREE) | (1u << MT_K_FREE_SIZED) | (1u << MT_K_FREE_ALIGNED_SIZED) |           \
	 (1u << MT_K_SDALLOCX) | (1u << MT_K_DALLOCX) | (1u << MT_K_DELETE) |                      \
	 (1u << MT_K_RUST_DEALLOC))

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
	/* Unmarked, the stop would pass for another's SIGSTOP: a full ring drops, counted. */
	if (!counted_update(&pressure_marks, MT_KEYS_PRESSURE_MARKS, &tid, &one))
		return;
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

/*
 * The most frames a stack of this run has: a constant for the verifier, which walks a loop's
 * every round up to its bound (the caller only: 8 rounds, not 128).
 */
#define MT_STACK_FRAMES_MAX (stacks_caller ? MT_UNWIND_CALLER_FRAMES : MT_UNWIND_MAX_FRAMES)

/* The stack's hash: its frames, their count and why it ended. */
static __always_inline __u64 stack_hash(const struct mt_unwind_stack *s)
{
	__u64 h = 0xcbf29ce484222325ULL ^ ((__u64)s->n << 8 | s->stop);

	for (__u32 i = 0; i < MT_STACK_FRAMES_MAX; i++) {
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
	for (__u32 i = 0; i < MT_STACK_FRAMES_MAX; i++) {
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

/*
 * The id of the current thread's stack, unwound from the allocator's entry registers (ip, sp,
 * fp). A global function: the verifier checks it once, on its own, instead of at each entry
 * probe's call site with that site's state; inlined, it made alloc_enter_multi 107,259
 * verified instructions (docs/PERFORMANCE.md section 25).
 */
__noinline __u32 mt_current_stack_id(__u64 ip, __u64 sp, __u64 fp)
{
	struct mt_unwind_stack *s = mt_unwind_user(ip, sp, fp, true, stacks_caller);
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

static __always_inline __u32 current_stack_id(struct pt_regs *ctx)
{
	return mt_current_stack_id(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx));
}

#endif /* MT_MEMTRACK_EMIT_BPF_H */
