// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor's live blocks (livetable.h): one hash table (base/hashtab.h) of (address space,
 * address) -> size and stack, and the processes' address spaces beside it. Space ids start at
 * 1; a slot whose space is 0 is empty.
 *
 * A freed block stays in the same table under its space with FREED set (a key of its own, so
 * that a new block at its address does not meet it): the scan must not take the stale words of
 * free memory for roots, as memcheck does not (it never hands freed memory back to the program).
 * A block that had a mapping of its own is not kept once freed: the allocator unmaps it at the
 * free, and what the kernel maps there later (a runtime's arena) is no free memory. glibc and
 * musl map a block of RETURNED bytes or more on its own, its start less than MAPPED_WITHIN bytes
 * past a page (their headers: glibc's 16 bytes, musl's 32); a block that big anywhere else is in
 * a heap (glibc raises its threshold once it has unmapped one), and stays free memory there.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "base/kind.h"
#include "inspect/livetable.h"

#define FREED	      (1u << 31)
#define RETURNED      (128u << 10) /* glibc's and musl's first mmap threshold */
#define MAPPED_WITHIN 64u	   /* a mapped block's start, in its first page */

struct pid_space {
	uint32_t pid;
	uint32_t space;
	bool shared;	 /* its parent's space (vfork): an exec gives it one of its own */
	uint8_t n_files; /* MT_LIVE_FILES + 1: more than MT_LIVE_FILES */
	uint16_t files[MT_LIVE_FILES]; /* the files whose allocator calls made its blocks */
};

/* A realloc entered, its old block released, its return not seen yet (per thread). */
struct pending {
	uint32_t tid;
	bool found;
	struct mt_live_block b;
};

struct mt_livetable {
	struct mt_hashtab blocks; /* struct mt_live_block */
	struct pid_space *pids;
	size_t n_pids, cap_pids;
	struct pending *pend;
	size_t n_pend, cap_pend;
	uint32_t next_space;
	bool inexact;
};

static uint64_t key_hash(uint32_t space, uint64_t addr)
{
	return mt_hash_u64(addr ^ ((uint64_t)space << 47));
}

static bool block_empty(const void *e)
{
	return !((const struct mt_live_block *)e)->space;
}

static uint64_t block_hash(const void *ctx, const void *e)
{
	const struct mt_live_block *b = e;

	(void)ctx;
	return key_hash(b->space, b->addr);
}

static bool block_is(const void *ctx, const void *e, const void *key)
{
	const struct mt_live_block *b = e, *k = key;

	(void)ctx;
	return b->space == k->space && b->addr == k->addr;
}

/*
 * At most 3/4 full, as the replay's tables: 32 to 64 bytes a block kept (live, or freed and kept
 * as free memory), where half full made it 48 to 96 (docs/PERFORMANCE.md, section 24). The probe
 * runs stay short with the table's hash: the lookups are one per event on the consumer's thread.
 */
static const struct mt_hashtab_ops block_ops = {
    .entry = sizeof(struct mt_live_block),
    .max_load_pct = 75,
    .min_slots = 1024,
    .hash = block_hash,
    .empty = block_empty,
};

/* The slot of (space, addr), or the empty slot where it would go; the table must have slots. */
static struct mt_live_block *find(const struct mt_livetable *lt, uint32_t space, uint64_t addr)
{
	struct mt_live_block k = {.space = space, .addr = addr};

	return mt_hashtab_find(&lt->blocks, &block_ops, key_hash(space, addr), block_is, NULL, &k);
}

/* A new block; one live at its address already (an event lost) is replaced. */
static void put(struct mt_livetable *lt, const struct mt_live_block *b)
{
	struct mt_live_block *e;

	if (mt_hashtab_reserve(&lt->blocks, &block_ops, NULL, lt->blocks.used + 1)) {
		lt->inexact = true;
		return;
	}
	e = find(lt, b->space, b->addr);
	if (block_empty(e))
		mt_hashtab_added(&lt->blocks);
	*e = *b;
}

static bool take(struct mt_livetable *lt, uint32_t space, uint64_t addr, struct mt_live_block *out)
{
	struct mt_live_block *e;

	if (!lt->blocks.slot)
		return false;
	e = find(lt, space, addr);
	if (block_empty(e))
		return false;
	*out = *e;
	mt_hashtab_erase(&lt->blocks, &block_ops, NULL, e);
	return true;
}

/*
 * Block b is free memory now (a free, a realloc that moved it): kept as such, the bigger of it
 * and what was freed at its address before, unless its allocator gave it back to the kernel.
 */
static void put_freed(struct mt_livetable *lt, const struct mt_live_block *b)
{
	struct mt_live_block f = *b, was;

	if (b->size >= RETURNED && (b->addr & 4095) < MAPPED_WITHIN)
		return;
	f.space |= FREED;
	if (take(lt, f.space, f.addr, &was) && was.size > f.size)
		f.size = was.size;
	put(lt, &f);
}

/* Release the block at addr: free memory from now on. */
static void release(struct mt_livetable *lt, uint32_t space, uint64_t addr)
{
	struct mt_live_block gone;

	if (take(lt, space, addr, &gone))
		put_freed(lt, &gone);
}

/* Every block of space is gone (an exec, an exit). */
static void drop_space(struct mt_livetable *lt, uint32_t space)
{
	size_t k = 0;

	/* A removal may move a later entry into k: look at k again before going on. */
	while (lt->blocks.slot && k <= lt->blocks.mask) {
		struct mt_live_block *e = mt_hashtab_at(&lt->blocks, &block_ops, k);

		if (!block_empty(e) && (e->space & ~FREED) == space)
			mt_hashtab_erase(&lt->blocks, &block_ops, NULL, e);
		else
			k++;
	}
}

static struct pid_space *pid_find(const struct mt_livetable *lt, uint32_t pid)
{
	for (size_t i = lt->n_pids; i-- > 0;)
		if (lt->pids[i].pid == pid)
			return &lt->pids[i];
	return NULL;
}

/* pid's entry, a new one with a space of its own when none is known (the root). */
static struct pid_space *pid_get(struct mt_livetable *lt, uint32_t pid)
{
	struct pid_space *p = pid_find(lt, pid);

	if (p)
		return p;
	if (MT_GROW(lt->pids, lt->cap_pids, lt->n_pids + 1, 16))
		return NULL;
	p = &lt->pids[lt->n_pids++];
	*p = (struct pid_space){.pid = pid, .space = ++lt->next_space};
	return p;
}

static void pid_forget(struct mt_livetable *lt, struct pid_space *p)
{
	*p = lt->pids[--lt->n_pids];
}

static void on_fork(struct mt_livetable *lt, const struct mt_event *e)
{
	struct pid_space *parent = pid_get(lt, e->pid), *child;
	uint32_t space;

	if (!parent)
		goto lost;
	space = parent->space;
	child = pid_find(lt, (uint32_t)e->addr);
	/* A pid reused without the exit of its last holder in the stream (dropped events). */
	if (child && !child->shared)
		drop_space(lt, child->space);
	if (!child)
		child = pid_get(lt, (uint32_t)e->addr);
	if (!child)
		goto lost;
	child->shared = e->size & MT_FORK_SHARED_MM;
	child->space = child->shared ? space : ++lt->next_space;
	child->n_files = 0;
	return;
lost:
	lt->inexact = true;
}

static void on_exec_or_exit(struct mt_livetable *lt, const struct mt_event *e)
{
	struct pid_space *p = pid_find(lt, e->pid);

	if (!p)
		return;
	if (!p->shared)
		drop_space(lt, p->space);
	if (e->kind == MT_K_EXIT)
		pid_forget(lt, p);
	else
		*p = (struct pid_space){.pid = e->pid, .space = ++lt->next_space};
}

static struct pending *pending_of(struct mt_livetable *lt, uint32_t tid, bool add)
{
	for (size_t k = 0; k < lt->n_pend; k++)
		if (lt->pend[k].tid == tid)
			return &lt->pend[k];
	if (!add)
		return NULL;
	if (MT_GROW(lt->pend, lt->cap_pend, lt->n_pend + 1, 8))
		return NULL;
	lt->pend[lt->n_pend] = (struct pending){.tid = tid};
	return &lt->pend[lt->n_pend++];
}

static void on_realloc_entry(struct mt_livetable *lt, uint32_t space, const struct mt_event *e)
{
	struct pending *p = pending_of(lt, e->tid, true);

	if (!p) {
		lt->inexact = true;
		return;
	}
	p->found = take(lt, space, e->addr, &p->b);
	p->b.addr = e->addr;
}

static void on_realloc(struct mt_livetable *lt, uint32_t space, const struct mt_event *e)
{
	struct pending *p = pending_of(lt, e->tid, false), old;
	struct mt_live_block gone;

	if (p && p->b.addr != e->old_addr)
		p = NULL;
	if (p) {
		old = *p;
		*p = lt->pend[--lt->n_pend];
		if (e->flags & MT_EV_FAILED) {
			/* A failed realloc leaves its block where it was. */
			if (old.found)
				put(lt, &old.b);
			return;
		}
		/* Moved: the old block's memory is free. */
		if (old.found && old.b.addr != e->addr)
			put_freed(lt, &old.b);
	} else if (e->flags & MT_EV_FAILED) {
		return;
	} else if (e->old_addr && take(lt, space, e->old_addr, &gone) && gone.addr != e->addr) {
		/* No entry record (xallocx): the old block goes at the return. */
		put_freed(lt, &gone);
	}
	put(lt, &(struct mt_live_block){
		    .addr = e->addr, .size = e->size, .stack = e->stack_id, .space = space});
}

/* The file of an allocator call that made a block in p's space: one of the space's allocators. */
static void note_file(struct mt_livetable *lt, struct pid_space *p, uint16_t file_id)
{
	/* A vfork child allocates in its parent's space: the parent's scan reads its blocks. */
	for (size_t i = 0; p->shared && i < lt->n_pids; i++)
		if (lt->pids[i].space == p->space && !lt->pids[i].shared)
			p = &lt->pids[i];
	for (size_t i = 0; i < p->n_files && i < MT_LIVE_FILES; i++)
		if (p->files[i] == file_id)
			return;
	if (p->n_files < MT_LIVE_FILES)
		p->files[p->n_files] = file_id;
	if (p->n_files <= MT_LIVE_FILES)
		p->n_files++;
}

static void on_event(struct mt_livetable *lt, const struct mt_event *e)
{
	enum mt_kind_effect kc = mt_kind_effect(e->kind);
	struct pid_space *p;

	if (e->kind == MT_K_FORK)
		return on_fork(lt, e);
	if (e->kind == MT_K_EXEC || e->kind == MT_K_EXIT)
		return on_exec_or_exit(lt, e);
	/* A collected heap's allocation (Go's) makes no block: it has no address. */
	if ((kc == MT_KIND_NONE && e->kind != MT_K_REALLOC_RELEASE) || kc == MT_KIND_COLLECTED)
		return;
	p = pid_get(lt, e->pid);
	if (!p) {
		lt->inexact = true;
		return;
	}
	if (kc == MT_KIND_ALLOC || kc == MT_KIND_REALLOC)
		note_file(lt, p, e->file_id);
	if (e->kind == MT_K_REALLOC_RELEASE)
		on_realloc_entry(lt, p->space, e);
	else if (kc == MT_KIND_REALLOC)
		on_realloc(lt, p->space, e);
	else if (kc == MT_KIND_ALLOC && !(e->flags & MT_EV_FAILED))
		put(lt,
		    &(struct mt_live_block){
			.addr = e->addr, .size = e->size, .stack = e->stack_id, .space = p->space});
	else if (kc == MT_KIND_FREE && e->addr)
		release(lt, p->space, e->addr);
}

void mt_livetable_events(struct mt_livetable *lt, const struct mt_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		on_event(lt, &ev[i]);
}

bool mt_livetable_inexact(const struct mt_livetable *lt)
{
	return lt->inexact;
}

bool mt_livetable_shared(const struct mt_livetable *lt, uint32_t pid)
{
	const struct pid_space *p = pid_find(lt, pid);

	return p && p->shared;
}

static int by_addr(const void *a, const void *b)
{
	const struct mt_live_block *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The entries of key (a space, with FREED or not), sorted by address, in *out (to free). */
static long entries_of(const struct mt_livetable *lt, uint32_t key, struct mt_live_block **out)
{
	const struct mt_live_block *slot = lt->blocks.slot;
	size_t n = 0, k;

	*out = NULL;
	if (!slot)
		return 0;
	for (k = 0; k <= lt->blocks.mask; k++)
		n += slot[k].space == key;
	*out = malloc((n ? n : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	n = 0;
	for (k = 0; k <= lt->blocks.mask; k++)
		if (slot[k].space == key)
			(*out)[n++] = slot[k];
	qsort(*out, n, sizeof(**out), by_addr);
	return (long)n;
}

long mt_livetable_blocks(const struct mt_livetable *lt, uint32_t pid, struct mt_live_block **out)
{
	const struct pid_space *p = pid_find(lt, pid);

	*out = NULL;
	return p ? entries_of(lt, p->space, out) : 0;
}

long mt_livetable_freed(const struct mt_livetable *lt, uint32_t pid, struct mt_live_block **out)
{
	const struct pid_space *p = pid_find(lt, pid);

	*out = NULL;
	return p ? entries_of(lt, p->space | FREED, out) : 0;
}

long mt_livetable_files(const struct mt_livetable *lt, uint32_t pid, uint16_t *ids)
{
	const struct pid_space *p = pid_find(lt, pid);

	if (!p)
		return 0;
	if (p->n_files > MT_LIVE_FILES)
		return -E2BIG;
	memcpy(ids, p->files, p->n_files * sizeof(*ids));
	return p->n_files;
}

struct mt_livetable *mt_livetable_new(void)
{
	return calloc(1, sizeof(struct mt_livetable));
}

void mt_livetable_free(struct mt_livetable *lt)
{
	if (!lt)
		return;
	mt_hashtab_free(&lt->blocks);
	free(lt->pids);
	free(lt->pend);
	free(lt);
}
