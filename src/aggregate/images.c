// SPDX-License-Identifier: GPL-2.0
/*
 * The replay of the ordered stream over process images and address spaces (images.h), on the
 * block table of images_blocks.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/images_int.h"
#include "base/kind.h"
#include "base/strv.h"

void mt_images_on_live(struct mt_images *im, mt_images_live_fn fn, void *arg)
{
	im->live_fn = fn;
	im->live_arg = arg;
}

void mt_images_on_release(struct mt_images *im, mt_images_release_fn fn, void *arg)
{
	im->release_fn = fn;
	im->release_arg = arg;
}

void mt_images_on_temporary(struct mt_images *im, mt_images_temporary_fn fn, void *arg)
{
	im->temporary_fn = fn;
	im->temporary_arg = arg;
}

static void count_temporary(struct mt_images *im, int64_t i, const struct block *b)
{
	im->img[i].c.temporary++;
	if (im->temporary_fn)
		im->temporary_fn(im->temporary_arg, b->stack, b->image);
}

/*
 * Image i released block b: whether b is the block the image allocated last. Any release ends
 * that "last" (heaptrack's rule). A realloc's old block is released at the call's entry, and
 * counts as temporary only once the realloc has succeeded.
 */
static bool release_was_last(struct mt_images *im, int64_t i, const struct block *b)
{
	bool last = b->addr && im->img_last[i] == b->addr;

	im->img_last[i] = 0;
	return last;
}

/* The program freed b (sign -1) or a failed realloc gave it back (+1). */
static void released(struct mt_images *im, const struct block *b, int sign)
{
	if (b->stack && im->release_fn)
		im->release_fn(im->release_arg, b->stack, b->image, b->size, sign);
}

/* ---- images --------------------------------------------------------------------------------- */

static bool pid_empty(const void *e)
{
	return !((const struct pid_slot *)e)->idx1;
}

static uint64_t pid_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64(((const struct pid_slot *)e)->pid);
}

static bool pid_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct pid_slot *)e)->pid == *(const uint32_t *)key;
}

static const struct mt_hashtab_ops pid_ops = {
    .entry = sizeof(struct pid_slot),
    .max_load_pct = 50,
    .min_slots = 64,
    .hash = pid_hash,
    .empty = pid_empty,
};

/* The pid's slot, or the empty one where it goes; NULL on ENOMEM. */
static struct pid_slot *pid_slot(struct mt_images *im, uint32_t pid)
{
	if (mt_hashtab_reserve(&im->pids, &pid_ops, NULL, im->pids.used + 1))
		return NULL;
	return mt_hashtab_find(&im->pids, &pid_ops, mt_hash_u64(pid), pid_is, NULL, &pid);
}

/* The latest image of pid, -1 when none; -ENOMEM is -2. */
static int64_t latest(struct mt_images *im, uint32_t pid)
{
	struct pid_slot *s;

	if (im->last_pid.idx1 && im->last_pid.pid == pid)
		return (int64_t)im->last_pid.idx1 - 1;
	s = pid_slot(im, pid);
	if (!s)
		return -2;
	if (s->idx1)
		im->last_pid = *s;
	return s->idx1 ? (int64_t)s->idx1 - 1 : -1;
}

int64_t mt_images_latest(struct mt_images *im, uint32_t pid)
{
	int64_t i = latest(im, pid);

	return i == -2 ? -ENOMEM : i;
}

static int new_space(struct mt_images *im, uint32_t *out)
{
	if (MT_GROW(im->spaces, im->cap_spaces, im->n_spaces + 1, 16))
		return -ENOMEM;
	memset(&im->spaces[im->n_spaces], 0, sizeof(*im->spaces));
	*out = (uint32_t)im->n_spaces++;
	return 0;
}

/*
 * A new image of pid, in its parent's space when shared (parent >= 0), else in a space of its
 * own. It becomes the pid's latest. Returns its index, or -ENOMEM.
 */
static int64_t image_new(struct mt_images *im, uint32_t pid, int64_t parent, bool shared,
			 uint32_t exec_seq)
{
	struct pid_slot *s = pid_slot(im, pid);
	struct mt_image *g;
	uint32_t space;

	if (!s || MT_GROW(im->img, im->cap_img, im->n_img + 1, 16))
		return -ENOMEM;
	{
		size_t cap = im->cap_img;
		uint32_t *v = realloc(im->img_space, cap * sizeof(*v));
		uint64_t *last;

		if (!v)
			return -ENOMEM;
		im->img_space = v;
		last = realloc(im->img_last, cap * sizeof(*last));
		if (!last)
			return -ENOMEM;
		im->img_last = last;
	}
	shared = shared && parent >= 0;
	if (shared)
		space = im->img_space[parent];
	else if (new_space(im, &space))
		return -ENOMEM;
	g = &im->img[im->n_img];
	memset(g, 0, sizeof(*g));
	g->pid = pid;
	g->exec_seq = exec_seq;
	g->parent = parent;
	g->first = im->n_img;
	g->shared_memory = shared;
	g->exe = strdup(parent >= 0 ? im->img[parent].exe : "");
	g->position = strdup("");
	if (!g->exe || !g->position) {
		free(g->exe);
		free(g->position);
		return -ENOMEM;
	}
	im->img_space[im->n_img] = space;
	im->img_last[im->n_img] = 0;
	if (!s->idx1) {
		s->pid = pid;
		mt_hashtab_added(&im->pids);
	}
	s->idx1 = (uint32_t)++im->n_img;
	im->last_pid = *s;
	return (int64_t)im->n_img - 1;
}

/* The running image of pid: its latest, or a new one when it has none or that one ended. */
static int64_t running(struct mt_images *im, uint32_t pid)
{
	int64_t i = latest(im, pid);

	if (i == -2)
		return -ENOMEM;
	if (i >= 0 && im->img[i].end == MT_IMAGE_RUNNING)
		return i;
	return image_new(im, pid, -1, false, 0);
}

/* An exec or exit ends the image; its own space goes with it, a shared one stays its parent's. */
int64_t mt_images_running(struct mt_images *im, uint32_t pid)
{
	return running(im, pid);
}

static void image_end(struct mt_images *im, int64_t i, enum mt_image_end how)
{
	struct mt_image *g = &im->img[i];

	g->end = how;
	if (!g->shared_memory)
		g->released = img_space_release(im, im->img_space[i]);
}

/* ---- the stream ----------------------------------------------------------------------------- */

static int on_fork(struct mt_images *im, const struct mt_event *e)
{
	int64_t parent = running(im, e->pid), old, child;

	if (parent < 0)
		return (int)parent;
	/* A pid reused without the exit of its last holder in the stream (dropped events). */
	old = latest(im, (uint32_t)e->addr);
	if (old == -2)
		return -ENOMEM;
	if (old >= 0 && im->img[old].end == MT_IMAGE_RUNNING)
		image_end(im, old, MT_IMAGE_EXIT);
	child = image_new(im, (uint32_t)e->addr, parent, e->size & MT_FORK_SHARED_MM, 0);
	if (child < 0)
		return (int)child;
	im->img[child].unrecorded = im->img[parent].forks_unrecorded;
	im->img[child].forks_unrecorded = im->img[parent].forks_unrecorded;
	return 0;
}

static int on_exec(struct mt_images *im, const struct mt_event *e)
{
	int64_t i = running(im, e->pid), next;
	int64_t parent;
	uint32_t seq;

	if (i < 0)
		return (int)i;
	image_end(im, i, MT_IMAGE_EXEC);
	parent = im->img[i].parent;
	seq = im->img[i].exec_seq + 1;
	next = image_new(im, e->pid, parent, false, seq);
	if (next < 0)
		return (int)next;
	/* The process keeps its place in the tree; its record names the new exe. */
	im->img[next].first = im->img[i].first;
	im->img[next].unrecorded = im->img[i].unrecorded;
	im->img[next].forks_unrecorded = im->img[i].forks_unrecorded;
	if (mt_str_replace(&im->img[next].position, im->img[i].position))
		return -ENOMEM;
	return mt_str_replace(&im->img[next].exe, "");
}

static int on_exit_event(struct mt_images *im, const struct mt_event *e)
{
	int64_t i = running(im, e->pid);

	if (i < 0)
		return (int)i;
	image_end(im, i, MT_IMAGE_EXIT);
	im->img[i].exited = true;
	im->img[i].exit_status = (int32_t)e->size;
	return 0;
}

static struct pending *pending_of(struct mt_images *im, uint32_t tid)
{
	for (size_t k = 0; k < im->n_pend; k++)
		if (im->pend[k].tid == tid)
			return &im->pend[k];
	return NULL;
}

/* The old block of a realloc, released at the call's entry: kept to give back on failure. */
static int on_realloc_entry(struct mt_images *im, int64_t i, const struct mt_event *e)
{
	struct pending *p = pending_of(im, e->tid);

	if (!p) {
		if (MT_GROW(im->pend, im->cap_pend, im->n_pend + 1, 8))
			return -ENOMEM;
		p = &im->pend[im->n_pend++];
	}
	p->tid = e->tid;
	p->found = img_block_take(im, im->img_space[i], e->addr, &p->b);
	p->was_last = p->found && release_was_last(im, i, &p->b);
	if (p->found)
		released(im, &p->b, -1);
	else
		p->b.addr = e->addr;
	return 0;
}

static int on_realloc(struct mt_images *im, int64_t i, const struct mt_event *e,
		      enum mt_effect *eff)
{
	struct pending *p = pending_of(im, e->tid), pend;
	struct mt_image *g = &im->img[i];
	uint32_t space = im->img_space[i];
	struct block dummy;

	if (p && p->b.addr == e->old_addr) {
		pend = *p;
		*p = im->pend[--im->n_pend];
		p = &pend;
	} else {
		p = NULL;
	}
	if (e->flags & MT_EV_FAILED) {
		g->c.failed++;
		*eff = MT_EFF_FAILED;
		/* A failed realloc leaves its block where it was. */
		if (!p || !p->found)
			return 0;
		released(im, &p->b, 1);
		return img_block_add(im, &p->b);
	}
	g->c.reallocs++;
	g->c.realloc_null += mt_realloc_of_null(e);
	g->c.realloc_zero += mt_realloc_to_zero(e);
	g->c.bytes_allocated += e->size;
	*eff = MT_EFF_REALLOC;
	if (p && !p->found && e->old_addr) {
		g->c.unmatched_frees++;
	} else if (p && p->was_last) {
		count_temporary(im, i, &p->b);
	} else if (!p && e->old_addr) {
		/* No entry record (older artifacts, xallocx): the old block goes at the return. */
		if (img_block_take(im, space, e->old_addr, &dummy)) {
			released(im, &dummy, -1);
			if (release_was_last(im, i, &dummy))
				count_temporary(im, i, &dummy);
		}
	}
	im->img_last[i] = e->addr;
	return img_block_add(im, &(struct block){.addr = e->addr,
						 .size = e->size,
						 .space = space,
						 .image = (uint32_t)i,
						 .stack = e->stack_id});
}

static int on_call(struct mt_images *im, const struct mt_event *e, enum mt_kind_effect kc,
		   enum mt_effect *eff)
{
	int64_t i = running(im, e->pid);
	struct mt_image *g;
	struct block b;

	if (i < 0)
		return (int)i;
	g = &im->img[i];
	if (kc == MT_KIND_REALLOC)
		return on_realloc(im, i, e, eff);
	if (kc == MT_KIND_COLLECTED) {
		/* A collected heap's: counted, no block (no address, and no free will come). */
		g->c.allocations++;
		g->c.bytes_allocated += e->size;
		*eff = MT_EFF_ALLOC;
		return 0;
	}
	if (kc == MT_KIND_ALLOC && (e->flags & MT_EV_FAILED)) {
		g->c.failed++;
		*eff = MT_EFF_FAILED;
		return 0;
	}
	if (kc == MT_KIND_ALLOC) {
		g->c.allocations++;
		g->c.bytes_allocated += e->size;
		*eff = MT_EFF_ALLOC;
		im->img_last[i] = e->addr;
		return img_block_add(im, &(struct block){.addr = e->addr,
							 .size = e->size,
							 .space = im->img_space[i],
							 .image = (uint32_t)i,
							 .stack = e->stack_id});
	}
	if (!e->addr)
		return 0; /* free(NULL) releases nothing */
	if (img_block_take(im, im->img_space[i], e->addr, &b)) {
		released(im, &b, -1);
		if (release_was_last(im, i, &b))
			count_temporary(im, i, &b);
		g->c.frees++;
		*eff = MT_EFF_FREE;
	} else {
		g->c.unmatched_frees++;
		*eff = MT_EFF_UNMATCHED;
	}
	return 0;
}

int mt_images_event(struct mt_images *im, const struct mt_event *e, enum mt_effect *eff)
{
	enum mt_kind_effect kc = mt_kind_effect(e->kind);
	int64_t i;

	*eff = MT_EFF_NONE;
	if (kc != MT_KIND_NONE)
		return on_call(im, e, kc, eff);
	*eff = MT_EFF_STREAM;
	switch (e->kind) {
	case MT_K_FORK:
		return on_fork(im, e);
	case MT_K_EXEC:
		return on_exec(im, e);
	case MT_K_EXIT:
		return on_exit_event(im, e);
	case MT_K_REALLOC_RELEASE:
		i = running(im, e->pid);
		return i < 0 ? (int)i : on_realloc_entry(im, i, e);
	default:
		*eff = MT_EFF_UNKNOWN;
		return 0;
	}
}

/* Only the pid of the last lookup's: most events are its, and another's would cost a lookup. */
void mt_images_prefetch(const struct mt_images *im, const struct mt_event *e)
{
	if (e->addr && im->last_pid.idx1 && im->last_pid.pid == e->pid)
		img_block_prefetch(im, im->img_space[im->last_pid.idx1 - 1], e->addr);
}

/*
 * The supervisor writes a record after the stream event it follows (a fork, an exec, an exit) and
 * before any later event of the process: it describes the pid's latest image. In artifacts
 * without lifecycle records a pid has one image, described by its last record.
 */
int mt_images_process(struct mt_images *im, const struct mt_artifact_process *p)
{
	int64_t i = latest(im, p->pid), parent;
	struct mt_image *g;

	if (i == -2)
		return -ENOMEM;
	if (i < 0) {
		parent = p->parent ? latest(im, p->parent) : -1;
		if (parent == -2)
			return -ENOMEM;
		i = image_new(im, p->pid, parent, false, 0);
		if (i < 0)
			return (int)i;
	}
	if (im->img[i].parent < 0 && p->parent) {
		/*
		 * Known from its events first (an artifact without lifecycle records). A parent
		 * seen only after it stays unknown: parents come first, so the images form no
		 * cycle.
		 */
		parent = latest(im, p->parent);
		if (parent == -2)
			return -ENOMEM;
		im->img[i].parent = parent < i ? parent : -1;
	}
	g = &im->img[i];
	g->recorded = true;
	if (p->exited) {
		g->exited = true;
		g->exit_status = p->exit_status;
	}
	if (p->position[0] && mt_str_replace(&g->position, p->position))
		return -ENOMEM;
	return mt_str_replace(&g->exe, p->exe);
}

static void handoff_free(struct mt_image_handoff *h)
{
	if (!h)
		return;
	mt_strv_free(h->late, h->n_late);
	free(h->at);
	free(h);
}

static int late_add(struct mt_image_handoff *h, const char *path)
{
	if (mt_strv_has(h->late, h->n_late, path))
		return 0;
	return mt_strv_add(&h->late, &h->n_late, path);
}

int mt_images_handoff(struct mt_images *im, const struct mt_artifact_handoff *h, uint64_t events)
{
	int64_t i = latest(im, h->pid);
	struct mt_image *g;

	if (h->what != MT_HANDOFF_AT && h->what != MT_HANDOFF_LATE_FILE)
		return 0; /* a later kind of record: nothing this reader can say about it */
	if (i == -2)
		return -ENOMEM;
	if (i < 0)
		i = running(im, h->pid);
	if (i < 0)
		return (int)i;
	g = &im->img[i];
	if (!g->handoff) {
		g->handoff = calloc(1, sizeof(*g->handoff));
		if (!g->handoff || !(g->handoff->at = strdup("")))
			return -ENOMEM;
	}
	if (h->what == MT_HANDOFF_LATE_FILE)
		return late_add(g->handoff, h->text);
	g->handoff->event = events;
	g->handoff->before = g->c;
	if (h->flags & MT_HANDOFF_CHILDREN_UNRECORDED)
		g->forks_unrecorded = true;
	g->handoff->to_tracer = h->flags & MT_HANDOFF_TO_TRACER;
	return mt_str_replace(&g->handoff->at, h->text);
}

struct mt_images *mt_images_new(void)
{
	return calloc(1, sizeof(struct mt_images));
}

void mt_images_free(struct mt_images *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < im->n_img; i++) {
		free(im->img[i].exe);
		free(im->img[i].position);
		handoff_free(im->img[i].handoff);
	}
	free(im->img);
	free(im->img_space);
	free(im->img_last);
	img_table_free(im);
	free(im->spaces);
	mt_hashtab_free(&im->pids);
	free(im->pend);
	free(im);
}

size_t mt_images_count(const struct mt_images *im)
{
	return im->n_img;
}

const struct mt_image *mt_images_get(const struct mt_images *im, size_t i)
{
	return &im->img[i];
}

struct live_walk {
	const struct mt_images *im;
	mt_images_live_fn fn;
	void *arg;
};

static void live_block(void *arg, const struct block *b)
{
	const struct live_walk *w = arg;

	w->fn(w->arg, &(struct mt_live_change){.image = b->image,
					       .stack_id = b->stack,
					       .addr = b->addr,
					       .size = b->size,
					       .blocks = 1,
					       .image_live = w->im->img[b->image].c.live_bytes,
					       .tree_live = w->im->live_bytes});
}

void mt_images_live_blocks(const struct mt_images *im, mt_images_live_fn fn, void *arg)
{
	struct live_walk w = {im, fn, arg};

	img_each_block(im, live_block, &w);
}

uint64_t mt_images_peak(const struct mt_images *im)
{
	return im->peak;
}
