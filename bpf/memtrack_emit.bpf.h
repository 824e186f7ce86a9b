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
 *
 * A global function: the verifier checks it once, not at each of the events an allocator probe
 * may emit on its paths; only a full ring calls it.
 */
__noinline int mt_press(__u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u8 one = 1;

	if (BPF_CORE_READ(task, flags) & PF_EXITING || handed_off(current_pid_tgid() >> 32))
		return 0;
	/* Unmarked, the stop would pass for another's SIGSTOP: a full ring drops, counted. */
	if (!counted_update(&pressure_marks, MT_KEYS_PRESSURE_MARKS, &tid, &one))
		return 0;
	bpf_send_signal_thread(SIGSTOP);
	count(MT_CNT_PRESSURE_STOPS);
	return 0;
}

/*
 * The event of thread id (tgid << 32 | tid, memtrack's namespace), built on the stack and copied
 * into the ring by one helper call: a reserve and a submit are two, and each call pays a
 * return thunk on a host whose kernel needs one (docs/PERFORMANCE.md section 20).
 */
static __always_inline void emit_kind_as(__u64 id, __u8 kind, __u16 file_id, __u64 addr, __u64 size,
					 __u64 old, __u64 align, __u8 flags, __u32 stack_id)
{
	struct mt_event ev;
	__u64 waiting;
	bool pressed;

	if (!events_enabled)
		return;
	waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	ev.ts_ns = bpf_ktime_get_ns();
	ev.pid = id >> 32;
	ev.tid = (__u32)id;
	ev.addr = addr;
	ev.size = size;
	ev.old_addr = old;
	ev.align = (__u32)align;
	ev.file_id = file_id;
	ev.kind = kind;
	ev.flags = flags;
	ev.stack_id = stack_id;
	ev.pad = 0;
	/*
	 * No wakeup: the consumer drains on a short poll timeout, and a wakeup per event costs the
	 * producer; a ring that fills up stops its producers instead (mt_press()). Past the mark,
	 * wake the consumer now rather than at its next poll, and stop this thread.
	 */
	pressed = pressure_mark && waiting >= pressure_mark;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev),
			       pressed ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP)) {
		/* The last resort: the headroom was not enough (thousands of threads at once). */
		count(MT_CNT_EV_DROPPED);
		pressed = pressure_mark;
	}
	if (pressed)
		mt_press((__u32)id);
}

/* An event of the current thread: lifecycle and mapping programs, which keep no thread state. */
static __always_inline void emit_kind(__u8 kind, __u16 file_id, __u64 addr, __u64 size, __u64 old,
				      __u64 align, __u8 flags, __u32 stack_id)
{
	emit_kind_as(current_pid_tgid(), kind, file_id, addr, size, old, align, flags, stack_id);
}

/* An allocator call's event of thread id: kind and file come from its probe's cookie. */
static __always_inline void emit(__u64 id, __u64 cookie, __u64 addr, __u64 size, __u64 old,
				 __u64 align, __u8 flags, __u32 stack_id)
{
	emit_kind_as(id, (__u8)MT_COOKIE_KIND(cookie), (__u16)MT_COOKIE_FILE(cookie), addr, size,
		     old, align, flags, stack_id);
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
 * The callers mode's stacks that end at the allocator's caller (its file has no table): each is a
 * function of the process, the probe's address and the return address alone, as long as the
 * mappings the two were placed in stay (mt_vma_cache_gen). Kept per CPU, a slot per return
 * address and probe, so that an allocation from a call site seen before costs a compare instead
 * of two placements in the mapping cache and two lookups of unwind_files, most of the 0.55 us an
 * allocation of churn paid (docs/PERFORMANCE.md section 25).
 */
#define MT_CALLER_SLOTS 128 /* a power of two */

struct mt_caller_slot {
	__u64 ip, ra, gen;
	__u32 tgid, stack_id;
	__u64 check; /* caller_check() of the rest: a slot torn by a preempting writer misses */
};

struct mt_callers {
	struct mt_caller_slot slot[MT_CALLER_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_callers);
} callers SEC(".maps");

static __always_inline __u64 caller_check(__u64 ip, __u64 ra, __u64 gen, __u32 tgid, __u32 id)
{
	__u64 h = 0xcbf29ce484222325ULL;

	h = (h ^ ip) * MT_STACK_HASH_PRIME;
	h = (h ^ ra) * MT_STACK_HASH_PRIME;
	h = (h ^ gen) * MT_STACK_HASH_PRIME;
	h = (h ^ ((__u64)tgid << 32 | id)) * MT_STACK_HASH_PRIME;
	return h ^ h >> 29;
}

static __always_inline struct mt_caller_slot *caller_slot(__u64 ip, __u64 ra)
{
	__u32 zero = 0, i = (__u32)(((ra ^ ip) * 0x9e3779b97f4a7c15ULL) >> 57);
	struct mt_callers *c = bpf_map_lookup_elem(&callers, &zero);

	return c ? &c->slot[i & (MT_CALLER_SLOTS - 1)] : NULL;
}

/* The stack id kept for (tgid, ip, ra) while the mappings are those of gen; 0: none. */
static __always_inline __u32 caller_kept(__u32 tgid, __u64 ip, __u64 ra, __u64 gen)
{
	struct mt_caller_slot *k = caller_slot(ip, ra), s;

	if (!k)
		return 0;
	__builtin_memcpy(&s, k, sizeof(s));
	if (s.ip != ip || s.ra != ra || s.gen != gen || s.tgid != tgid || !s.stack_id ||
	    s.check != caller_check(ip, ra, gen, tgid, s.stack_id))
		return 0;
	return s.stack_id;
}

/*
 * Keep the stack id of a stack that ended at the allocator's caller, at return address ra (where
 * the unwinder stopped: w->rip), with every range it was placed in cached (else an unmap of it
 * would not move mt_vma_cache_gen).
 */
static __always_inline void caller_keep(__u32 tgid, __u64 ip, __u64 ra, __u64 gen,
					const struct mt_unwind_stack *s, __u32 id)
{
	__u32 zero = 0;
	struct mt_unwind_work *w = bpf_map_lookup_elem(&unwind_work, &zero);
	struct mt_caller_slot *k;

	if (!w || !id || s->n != 2 || s->stop != MT_UNWIND_TRUNCATED || w->rip != ra || w->uncached)
		return;
	k = caller_slot(ip, ra);
	if (!k)
		return;
	k->ip = ip;
	k->ra = ra;
	k->gen = gen;
	k->tgid = tgid;
	k->stack_id = id;
	k->check = caller_check(ip, ra, gen, tgid, id);
}

/* The id of the stack s, stored the first time it is seen. */
static __always_inline __u32 stack_id_of(const struct mt_unwind_stack *s)
{
	struct mt_stack_record *known;
	__u64 h = stack_hash(s);

	known = bpf_map_lookup_elem(&stacks, &h);
	if (known && same_stack(known, s))
		return known->stack_id;
	return new_stack(s, h);
}

/*
 * The id of the current thread's stack, unwound from the allocator's entry registers (ip, sp,
 * fp); ra: in callers mode, the allocator's return address when the probe knows it (its return
 * probe: ip there), else 0 (read at [sp], which costs 0.1 to 0.15 us in a VM). A global function:
 * the verifier checks it once, on its own, instead of at each entry probe's call site with that
 * site's state; inlined, it made alloc_enter_multi 107,259 verified instructions
 * (docs/PERFORMANCE.md section 25). global_tgid: the thread's tgid in the initial namespace (its
 * thread state keeps it), the callers cache's key.
 */
__noinline __u32 mt_current_stack_id(__u64 ip, __u64 sp, __u64 fp, __u64 ra, __u32 global_tgid)
{
	struct mt_unwind_stack *s;
	__u64 gen = 0;
	__u32 tgid = 0, id;

	if (stacks_caller && (ra || !bpf_probe_read_user(&ra, sizeof(ra), (const void *)sp))) {
		tgid = global_tgid;
		/* Read before the placements below: an unmap after it misses what they keep. */
		gen = *(volatile __u64 *)&mt_vma_cache_gen;
		id = caller_kept(tgid, ip, ra, gen);
		if (id)
			return id;
	}
	s = mt_unwind_user(ip, sp, fp, true, stacks_caller, ra);
	if (!s) {
		count(MT_CNT_STACKS_LOST);
		return 0;
	}
	id = stack_id_of(s);
	if (tgid)
		caller_keep(tgid, ip, ra, gen, s, id);
	return id;
}

static __always_inline __u32 current_stack_id(struct pt_regs *ctx, __u32 global_tgid)
{
	return mt_current_stack_id(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), 0,
				   global_tgid);
}

#endif /* MT_MEMTRACK_EMIT_BPF_H */
