/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The in-kernel unwinder (docs/STACKS.md): the user stack of the current thread, from the probe's
 * registers and the unwind tables user space loaded (src/unwind/unwind_table.c), step for step as
 * the reference unwinder src/unwind/unwind_walk.c does. Included by a BPF program; the maps are
 * defined here.
 *
 * - unwind_tables: an array of maps, one inner array of rows per file, each exactly its table's
 *   size (BPF_F_INNER_MAP lets inner arrays differ in max_entries).
 * - unwind_files: the file (device, inode) -> its slot in unwind_tables, its row count and what
 *   turns a pc into the table's link-time addresses. A file whose row count is 0 is unwound by
 *   frame pointer; a file absent from the map ends the stack (MT_UNWIND_LOST).
 * - The mapping of each pc is found with bpf_find_vma (5.17), frames are walked with bpf_loop
 *   (5.17): one verified callback per frame, so the frame limit is not the verifier's.
 */
#ifndef MT_UNWIND_BPF_H
#define MT_UNWIND_BPF_H

#include "unwind_row.h"

#define MT_UNWIND_SEARCH	32 /* binary search steps: tables up to 2^32 rows */
/* callers mode: frames at most (the allocator, wrappers such as operator new, their caller) */
#define MT_UNWIND_CALLER_FRAMES 8
#define MT_PAGE_SHIFT		12

/* The inner maps' template; sizes, not types: clang's BTF has only a declaration of a struct
 * reached through the outer map's pointers, whose size libbpf cannot take. */
struct mt_unwind_rows {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	/* Mappable: user space copies a table in (src/unwind/unwind_load.c). */
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct mt_unwind_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MT_UNWIND_MAX_FILES);
	__type(key, __u32);
	__array(values, struct mt_unwind_rows);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* created at every start: keep it cheap */
	__uint(max_entries, MT_UNWIND_MAX_FILES);
	__type(key, struct mt_unwind_file_key);
	__type(value, struct mt_unwind_file);
} unwind_files SEC(".maps");

/*
 * The last mapping a frame was found in, with its file's entry: the next frame in the same
 * mapping (a recursion, a library calling itself) skips bpf_find_vma and the hash lookup. Valid
 * for one unwind only: another process may run on this CPU next.
 */
struct mt_unwind_last {
	__u64 start, end, bias;
	struct mt_unwind_file file;
	__u32 valid;
	__u32 pad;
};

/*
 * The file mappings a process's stacks went through, so that a frame is placed without
 * bpf_find_vma. That helper only try-locks the address space: while another thread of the
 * process maps or unmaps memory (a thread's malloc arena, a thread stack), it fails, and the
 * stack would end at that frame. With a process's text ranges cached after their first lookup,
 * its threads unwind whatever their siblings do with the address space.
 *
 * One entry per process (tgid), replaced whole by bpf_map_update_elem (an element of a map
 * without preallocation is swapped under RCU, so a reader copying a range never sees half of a
 * write); mm tells a process that exec'd (same tgid, new address space) from the one cached. An
 * unmap, a remap or a MAP_FIXED mapping over a cached range drops that range before it happens
 * (memtrack.bpf.c); a program would have to run code in a range it is unmapping for a lookup to
 * cache it again in between.
 */
#define MT_VMA_CACHE_RANGES 16

struct mt_vma_range {
	__u64 start, end; /* end 0: an empty slot */
	__u64 bias;
	struct mt_unwind_file_key key;
};

struct mt_vma_cache {
	__u64 mm;
	__u32 next;    /* the slot the next range replaces */
	__u32 dropped; /* mt_vma_cache_drop's scratch only: a range was dropped (0 in the map) */
	struct mt_vma_range r[MT_VMA_CACHE_RANGES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct mt_vma_cache);
} unwind_vma_cache SEC(".maps");

/*
 * Moves on whenever a range that a frame may have been placed in may stop holding what it held:
 * a cached range dropped, an unmap by a process whose cache has let ranges go (its 16 slots went
 * round), a process's cache deleted at its exec or its end. What was derived from a placement
 * (memtrack's per-CPU callers, bpf/memtrack_emit.bpf.h) is kept with the value read before the
 * placement, and holds only while it is unchanged. Bumped after the cache's entry is rewritten.
 */
__u64 mt_vma_cache_gen;

static __always_inline void mt_vma_cache_moved(void)
{
	__sync_fetch_and_add(&mt_vma_cache_gen, 1);
}

/* The stack being unwound: too big for the BPF stack. */
struct mt_unwind_work {
	__u64 rip, rsp, rbp;
	__u32 exact;	 /* rip is exact (the first frame, or restored by a signal frame) */
	__u32 normalise; /* record frames as MT_FRAME (file, offset) instead of raw pcs */
	__u32 callers;	 /* the allocator's caller only, through files with a table (wrappers) */
	__u32 uncached;	 /* a range found by bpf_find_vma could not be cached (a map update) */
	__u32 cached_at; /* mt_vma_cache_find: the slot of the range found */
	__u32 pad;
	__u64 caller_ra; /* callers: the allocator's return address if known, else read at [rsp] */
	struct mt_unwind_last last;
	struct mt_unwind_stack stack;
	struct mt_vma_cache cache; /* a process's entry being rewritten (mt_vma_cache_add) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_unwind_work);
} unwind_work SEC(".maps");

struct mt_unwind_vma {
	__u64 bias; /* vm_start - file offset of vm_start */
	__u64 start, end;
	struct mt_unwind_file_key key;
	__u32 found;
};

static long mt_unwind_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct mt_unwind_vma *v = data;
	struct file *file = BPF_CORE_READ(vma, vm_file);

	(void)task;
	if (!file)
		return 0;
	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	v->bias = v->start - (BPF_CORE_READ(vma, vm_pgoff) << MT_PAGE_SHIFT);
	v->key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	v->key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	v->found = 1;
	return 0;
}

static __always_inline int mt_unwind_read(__u64 addr, __u64 *val)
{
	return bpf_probe_read_user(val, sizeof(*val), (const void *)addr);
}

/* The binary search of mt_unwind_search_index: rows [lo, hi) hold the last one at or below addr. */
struct mt_unwind_search_walk {
	__u64 addr;
	__u32 slot, lo, hi;
	__u32 lost; /* a lookup failed: no row */
};

/* bpf_loop's callback: one step of the search, which halves [lo, hi). 1: the search ends. */
static long mt_unwind_search_step(__u64 i, void *arg)
{
	struct mt_unwind_search_walk *s = arg;
	__u32 slot = s->slot, mid;
	struct mt_unwind_row *row;
	void *table;

	(void)i;
	if (s->hi - s->lo <= 1)
		return 1;
	table = bpf_map_lookup_elem(&unwind_tables, &slot);
	mid = s->lo + (s->hi - s->lo) / 2;
	row = table ? bpf_map_lookup_elem(table, &mid) : NULL;
	if (!row) {
		s->lost = 1;
		return 1;
	}
	if (row->addr <= s->addr)
		s->lo = mid;
	else
		s->hi = mid;
	return 0;
}

/*
 * The index of the last row at or below addr in the table of slot (n rows), -1 when none. A
 * global function: the verifier checks it once, on its own, and not again at every round of
 * bpf_loop's callback (which kernels from 6.7 verify until its state converges). Its steps are a
 * bpf_loop too: a for loop of MT_UNWIND_SEARCH steps was walked by the verifier step after step,
 * 1,491 instructions in each program that unwinds (docs/PERFORMANCE.md, section 23).
 */
__noinline long mt_unwind_search_index(__u32 slot, __u32 n, __u64 addr)
{
	struct mt_unwind_search_walk s = {.addr = addr, .slot = slot, .lo = 0, .hi = n};
	void *table = bpf_map_lookup_elem(&unwind_tables, &slot);
	struct mt_unwind_row *row;
	__u32 lo;

	if (!table)
		return -1;
	bpf_loop(MT_UNWIND_SEARCH, mt_unwind_search_step, &s, 0);
	lo = s.lo;
	row = bpf_map_lookup_elem(table, &lo);
	if (s.lost || !row || row->addr > addr)
		return -1;
	return lo;
}

/*
 * The rule row of addr in the table of slot (n rows): the last row at or below addr, or the row
 * before it when that one is MT_CFA_WIDE (bpf/unwind_row.h); NULL when none. *off: the rule's CFA
 * offset.
 */
static __always_inline struct mt_unwind_row *mt_unwind_search(__u32 slot, __u32 n, __u64 addr,
							      __u32 *off)
{
	long at = mt_unwind_search_index(slot, n, addr);
	void *table = bpf_map_lookup_elem(&unwind_tables, &slot);
	struct mt_unwind_row *row;
	__u32 lo;

	if (at < 0 || !table)
		return NULL;
	lo = at;
	row = bpf_map_lookup_elem(table, &lo);
	if (!row)
		return NULL;
	*off = row->cfa_off;
	if ((row->rules & 0xf) == MT_CFA_WIDE && lo) {
		__u32 high = row->cfa_off;

		lo--;
		row = bpf_map_lookup_elem(table, &lo);
		if (!row)
			return NULL;
		*off = row->cfa_off | high << 16;
	}
	return row;
}

static __always_inline int mt_unwind_frame_pointer(struct mt_unwind_work *w)
{
	__u64 ra, rbp;

	if (!w->rbp || mt_unwind_read(w->rbp + 8, &ra) || mt_unwind_read(w->rbp, &rbp))
		return -1;
	w->rsp = w->rbp + 16;
	w->rip = ra;
	w->rbp = rbp;
	return 0;
}

static __always_inline int mt_unwind_signal(struct mt_unwind_work *w)
{
	__u64 rip, rsp, rbp;

	if (mt_unwind_read(w->rsp + MT_SIGFRAME_RIP, &rip) ||
	    mt_unwind_read(w->rsp + MT_SIGFRAME_RSP, &rsp) ||
	    mt_unwind_read(w->rsp + MT_SIGFRAME_RBP, &rbp))
		return -1;
	w->rip = rip;
	w->rsp = rsp;
	w->rbp = rbp;
	return 0;
}

/* One step by row, of CFA offset off: 0, 1 at the outermost frame, -1 when the stack is lost. */
static __always_inline int mt_unwind_by_row(struct mt_unwind_work *w, struct mt_unwind_row *row,
					    __u32 off)
{
	__u64 cfa, ra, rbp = w->rbp;
	__u8 cfa_rule = row->rules & 0xf, rbp_rule = row->rules >> 4;

	if (cfa_rule == MT_CFA_RSP)
		cfa = w->rsp + off;
	else if (cfa_rule == MT_CFA_RBP)
		cfa = w->rbp + off;
	else if (cfa_rule == MT_CFA_PLT)
		cfa = w->rsp + row->cfa_off + ((w->rip & 15) >= (__u64)row->rbp_off ? 8 : 0);
	else if (cfa_rule == MT_CFA_NONE)
		return mt_unwind_frame_pointer(w);
	else if (cfa_rule == MT_CFA_END)
		return 1;
	else
		return -1;
	if (mt_unwind_read(cfa - 8, &ra))
		return -1;
	if (rbp_rule == MT_RBP_AT_CFA && mt_unwind_read(cfa + 8 * row->rbp_off, &rbp))
		return -1;
	if (rbp_rule == MT_RBP_UNKNOWN)
		rbp = 0;
	w->rip = ra;
	w->rsp = cfa;
	w->rbp = rbp;
	return 0;
}

static __always_inline __u64 mt_current_mm(void)
{
	return (__u64)BPF_CORE_READ(bpf_get_current_task_btf(), mm);
}

/* The cached mapping of w->rip into *v; false when the process has none cached for it. */
static __always_inline bool mt_vma_cache_find(struct mt_unwind_work *w, struct mt_unwind_vma *v)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_vma_cache *c = bpf_map_lookup_elem(&unwind_vma_cache, &tgid);

	struct mt_vma_range *r;
	__u32 i;

	if (!c || c->mm != mt_current_mm())
		return false;
	/*
	 * The search, then one copy. The slot found goes through the work area (map memory), which
	 * the verifier does not follow: an index it knows is a path of its own for each of the 16,
	 * each walked through the copy and the rest of the frame.
	 */
	for (i = 0; i < MT_VMA_CACHE_RANGES; i++)
		if (w->rip >= c->r[i].start && w->rip < c->r[i].end)
			break;
	if (i >= MT_VMA_CACHE_RANGES)
		return false;
	*(volatile __u32 *)&w->cached_at = i;
	i = *(volatile __u32 *)&w->cached_at;
	r = &c->r[i & (MT_VMA_CACHE_RANGES - 1)];
	v->start = r->start;
	v->end = r->end;
	v->bias = r->bias;
	v->key = r->key;
	v->found = 1;
	return true;
}

/* Add the mapping bpf_find_vma found to the process's entry, rewritten whole. */
static __always_inline void mt_vma_cache_add(struct mt_unwind_work *w, struct mt_unwind_vma *v)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, slot;
	struct mt_vma_cache *c = bpf_map_lookup_elem(&unwind_vma_cache, &tgid);
	__u64 mm = mt_current_mm();

	/*
	 * One helper call instead of an inline copy of 656 bytes, which the verifier walked as
	 * 164 instructions in every program that unwinds; a miss in the cache is rare.
	 */
	if (c && c->mm == mm)
		bpf_probe_read_kernel(&w->cache, sizeof(w->cache), c);
	else
		__builtin_memset(&w->cache, 0, sizeof(w->cache));
	w->cache.mm = mm;
	slot = w->cache.next++ & (MT_VMA_CACHE_RANGES - 1);
	w->cache.r[slot].start = v->start;
	w->cache.r[slot].end = v->end;
	w->cache.r[slot].bias = v->bias;
	w->cache.r[slot].key = v->key;
	if (bpf_map_update_elem(&unwind_vma_cache, &tgid, &w->cache, BPF_ANY))
		w->uncached = 1;
}

/* mt_vma_cache_drop's walk of a process's ranges, in the scratch copy of its entry. */
struct mt_vma_drop_walk {
	struct mt_vma_cache *scratch;
	__u64 start, len;
};

/*
 * bpf_loop's callback: range i, dropped if [start, start + len) overlaps it. Whether one was is
 * kept in the scratch (map memory), which the verifier does not follow: a variable tested after
 * the walk would be kept exact, two paths a round.
 */
static long mt_vma_drop_range(__u64 i, void *arg)
{
	struct mt_vma_drop_walk *d = arg;
	struct mt_vma_range *r = &d->scratch->r[i & (MT_VMA_CACHE_RANGES - 1)];

	if (r->end && d->start < r->end && d->start + d->len > r->start) {
		r->start = r->end = 0;
		d->scratch->dropped = 1;
	}
	return 0;
}

/*
 * Drop the ranges of the current process that [start, start + len) overlaps: that memory is
 * about to be unmapped or replaced. Called by the address-space syscalls' tracepoints. The walk
 * is a bpf_loop: a for loop over the 16 ranges was verified round by round, 1,441 instructions
 * for each of the three programs (docs/PERFORMANCE.md, section 23).
 */
static __always_inline void mt_vma_cache_drop(struct mt_vma_cache *scratch, __u64 start, __u64 len)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_vma_cache *c = bpf_map_lookup_elem(&unwind_vma_cache, &tgid);
	struct mt_vma_drop_walk d = {.scratch = scratch, .start = start, .len = len};
	bool hit;

	if (!c)
		return;
	/* A copy that fails leaves zeroes: nothing dropped, the entry left as it is. */
	bpf_probe_read_kernel(scratch, sizeof(*scratch), c);
	scratch->dropped = 0;
	bpf_loop(MT_VMA_CACHE_RANGES, mt_vma_drop_range, &d, 0);
	hit = scratch->dropped;
	scratch->dropped = 0;
	if (hit)
		bpf_map_update_elem(&unwind_vma_cache, &tgid, scratch, BPF_ANY);
	/* A range that went round the slots may still be behind what was derived from it. */
	if (hit || scratch->next > MT_VMA_CACHE_RANGES)
		mt_vma_cache_moved();
}

/* The mapping and file entry of w->rip into w->last; false when it lies in no known file. */
static __always_inline bool mt_unwind_find(struct mt_unwind_work *w)
{
	struct mt_unwind_vma v = {};
	struct mt_unwind_file *f;

	if (w->last.valid && w->rip >= w->last.start && w->rip < w->last.end)
		return true;
	w->last.valid = 0;
	if (!mt_vma_cache_find(w, &v)) {
		if (bpf_find_vma(bpf_get_current_task_btf(), w->rip, mt_unwind_vma_cb, &v, 0) ||
		    !v.found)
			return false;
		mt_vma_cache_add(w, &v);
	}
	f = bpf_map_lookup_elem(&unwind_files, &v.key);
	if (!f)
		return false;
	w->last.start = v.start;
	w->last.end = v.end;
	w->last.bias = v.bias;
	w->last.file = *f;
	w->last.valid = 1;
	return true;
}

/*
 * One frame of the per-CPU work area. Returns 1 to stop the loop. A global function: bpf_loop's
 * callback only calls it, so the rounds the verifier makes of the callback until its state
 * converges (6.7 and later) go over a call, not over the frame's code each time. It looks the
 * work area up itself: a pointer passed in would be plain memory to the verifier, which 6.1
 * does not take as a map update's value (the mapping cache's).
 */
__noinline long mt_unwind_frame(void)
{
	__u32 zero = 0;
	struct mt_unwind_work *w = bpf_map_lookup_elem(&unwind_work, &zero);
	struct mt_unwind_file *f;
	__u64 bias;
	struct mt_unwind_row *row = NULL;
	__u32 n, off = 0;
	int err;

	if (!w)
		return 1;
	n = w->stack.n;
	if (n >= MT_UNWIND_MAX_FRAMES) {
		w->stack.stop = MT_UNWIND_TRUNCATED;
		return 1;
	}
	w->stack.pcs[n & (MT_UNWIND_MAX_FRAMES - 1)] = w->rip;
	w->stack.n = n + 1;
	if (!mt_unwind_find(w))
		goto lost;
	f = &w->last.file;
	bias = w->last.bias;
	if (w->normalise)
		w->stack.pcs[n & (MT_UNWIND_MAX_FRAMES - 1)] = MT_FRAME(f->file_id, w->rip - bias);
	if (w->callers && !n) {
		/* The allocator's frame: its return address is at [rsp] (docs/PLACEMENT.md). */
		if (w->caller_ra)
			w->rip = w->caller_ra;
		else if (mt_unwind_read(w->rsp, &w->rip))
			goto lost;
		w->rsp += 8;
		w->exact = 0;
		return 0;
	}
	if (w->callers && (!f->n_rows || n + 1 >= MT_UNWIND_CALLER_FRAMES)) {
		/* A file without a table is the caller's: the stack ends there, by design. */
		w->stack.stop = MT_UNWIND_TRUNCATED;
		return 1;
	}
	if (f->n_rows) {
		__u64 addr = w->rip - bias + f->vaddr_minus_offset - (w->exact ? 0 : 1);

		row = mt_unwind_search(f->slot, f->n_rows, addr, &off);
	}
	if (row && MT_UNW_CFA(row) == MT_CFA_CALLER) {
		/* Only the callers mode's table of a program with operator new has these. */
		w->stack.stop = MT_UNWIND_TRUNCATED;
		return 1;
	}
	if (row && (row->rules & 0xf) == MT_CFA_SIGNAL) {
		err = mt_unwind_signal(w);
		w->exact = 1;
	} else {
		err = row ? mt_unwind_by_row(w, row, off) : mt_unwind_frame_pointer(w);
		w->exact = 0;
	}
	if (err > 0 || (!err && !w->rip)) {
		w->stack.stop = MT_UNWIND_COMPLETE;
		return 1;
	}
	if (err)
		goto lost;
	return 0;
lost:
	w->stack.stop = MT_UNWIND_LOST;
	return 1;
}

/* bpf_loop's callback: one frame. Returns 1 to stop the loop. */
static long mt_unwind_step(__u32 i, void *ctx)
{
	(void)i;
	/* A callback returns 0 or 1, which the verifier cannot see of a global function's value. */
	(void)ctx;
	return mt_unwind_frame() ? 1 : 0;
}

/*
 * Unwind the current thread's user stack from the probe's registers (ip, sp, fp), raw pcs or
 * (normalise) MT_FRAME file offsets; callers: the allocator's frame and its caller's (ra: its
 * return address when the probe knows it, else 0: read at [sp]). Returns the per-CPU stack
 * (valid until the next unwind on this CPU), or NULL.
 */
static __always_inline struct mt_unwind_stack *
mt_unwind_user(__u64 ip, __u64 sp, __u64 fp, bool normalise, bool callers, __u64 ra)
{
	__u32 zero = 0;
	struct mt_unwind_work *w = bpf_map_lookup_elem(&unwind_work, &zero);

	if (!w)
		return NULL;
	w->rip = ip;
	w->rsp = sp;
	w->rbp = fp;
	w->exact = 1;
	w->normalise = normalise;
	w->callers = callers;
	w->uncached = 0;
	w->caller_ra = ra;
	w->last.valid = 0;
	w->stack.n = 0;
	w->stack.stop = MT_UNWIND_TRUNCATED;
	bpf_loop(MT_UNWIND_MAX_FRAMES + 1, mt_unwind_step, &w, 0);
	return &w->stack;
}

#endif
