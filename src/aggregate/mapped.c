// SPDX-License-Identifier: GPL-2.0
/*
 * Mapped memory (mapped.h): each image's ranges in a sorted array, split and merged as the
 * mapping records come, and the bytes of each class kept as the ranges change, so that a record
 * costs a binary search and a move of the ranges above it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/grow.h"
#include "aggregate/mapped.h"

struct range {
	uint64_t start, end;
	uint8_t cls; /* enum mt_mapped_class */
};

struct space {
	struct range *r;
	size_t n, cap;
	uint64_t brk; /* the break as last seen (or inherited), 0: not known */
	struct mt_mapped_counts c;
};

struct mt_mapped {
	struct space *im; /* by image index */
	size_t n_im;
	struct mt_mapped_counts tree;
	struct mt_timeline *tl;
	bool any;
};

static uint64_t page_up(uint64_t x)
{
	return (x + MT_MAPPED_PAGE - 1) & ~(MT_MAPPED_PAGE - 1);
}

static uint64_t page_down(uint64_t x)
{
	return x & ~(MT_MAPPED_PAGE - 1);
}

static struct space *space_of(struct mt_mapped *mp, uint32_t image)
{
	if (image >= mp->n_im) {
		size_t n = (size_t)image + 1 > 2 * mp->n_im ? (size_t)image + 1 : 2 * mp->n_im;
		struct space *v = realloc(mp->im, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + mp->n_im, 0, (n - mp->n_im) * sizeof(*v));
		mp->im = v;
		mp->n_im = n;
	}
	return &mp->im[image];
}

/* The sums of c's classes, and their peaks. */
static void derive(struct mt_mapped_counts *c)
{
	c->mapped = 0;
	for (int k = 0; k < MT_MAPPED_MMAP_CLASSES; k++)
		c->mapped += c->now[k];
	c->beyond = c->mapped + c->now[MT_MAPPED_BRK];
	c->all = c->beyond + c->now[MT_MAPPED_ALLOC_MMAP] + c->now[MT_MAPPED_ALLOC_BRK];
	if (c->all > c->peak_all)
		c->peak_all = c->all;
	if (c->mapped > c->peak_mapped)
		c->peak_mapped = c->mapped;
	if (c->beyond > c->peak_beyond)
		c->peak_beyond = c->beyond;
}

/* bytes of class cls came (add) or went in s, and in the tree. */
static void count(struct mt_mapped *mp, struct space *s, uint8_t cls, uint64_t bytes, bool add)
{
	struct mt_mapped_counts *cs[2] = {&s->c, &mp->tree};

	for (int i = 0; i < 2; i++) {
		uint64_t *v = &cs[i]->now[cls];

		*v = add ? *v + bytes : (*v > bytes ? *v - bytes : 0);
		if (*v > cs[i]->peak[cls])
			cs[i]->peak[cls] = *v;
	}
}

/* The index of the first range of s that ends after addr. */
static size_t first_after(const struct space *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The class of the range of s that holds addr, or -1. */
static int class_at(const struct space *s, uint64_t addr)
{
	size_t i = first_after(s, addr);

	return i < s->n && s->r[i].start <= addr ? s->r[i].cls : -1;
}

/* [a, b) of s unmapped: ranges cut, split or gone. 0 or -ENOMEM (a split needs room). */
static int unmap(struct mt_mapped *mp, struct space *s, uint64_t a, uint64_t b)
{
	size_t i = first_after(s, a);

	while (i < s->n && s->r[i].start < b) {
		struct range *r = &s->r[i];
		uint64_t lo = r->start > a ? r->start : a, hi = r->end < b ? r->end : b;

		count(mp, s, r->cls, hi - lo, false);
		if (r->start < a && r->end > b) { /* a hole in the middle: two ranges */
			if (MT_GROW(s->r, s->cap, s->n + 1, 16))
				return -ENOMEM;
			r = &s->r[i];
			memmove(r + 1, r, (s->n - i) * sizeof(*r));
			s->n++;
			r[0].end = a;
			r[1].start = b;
			return 0;
		}
		if (r->start < a) {
			r->end = a;
			i++;
		} else if (r->end > b) {
			r->start = b;
			return 0;
		} else {
			memmove(r, r + 1, (s->n - i - 1) * sizeof(*r));
			s->n--;
		}
	}
	return 0;
}

/* [a, b) of s mapped as cls, over whatever was there. 0 or -ENOMEM. */
static int map(struct mt_mapped *mp, struct space *s, uint64_t a, uint64_t b, uint8_t cls)
{
	size_t i;

	if (a >= b || unmap(mp, s, a, b) || MT_GROW(s->r, s->cap, s->n + 1, 16))
		return a >= b ? 0 : -ENOMEM;
	i = first_after(s, a);
	memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(s->r[0]));
	s->r[i] = (struct range){.start = a, .end = b, .cls = cls};
	s->n++;
	count(mp, s, cls, b - a, true);
	return 0;
}

static uint8_t mmap_class(const struct space *s, const struct mt_artifact_mapping *m)
{
	bool shared = (m->flags & MAP_TYPE) != MAP_PRIVATE;

	if (m->origin & MT_MAP_IN_ALLOCATOR)
		return MT_MAPPED_ALLOC_MMAP;
	/* A fixed mapping over the allocator's memory (shrink_heap, from free) stays its own. */
	if ((m->flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) &&
	    class_at(s, m->addr) == MT_MAPPED_ALLOC_MMAP)
		return MT_MAPPED_ALLOC_MMAP;
	if (m->flags & MAP_ANONYMOUS)
		return shared ? MT_MAPPED_ANON_SHARED : MT_MAPPED_ANON_PRIVATE;
	return shared ? MT_MAPPED_FILE_SHARED : MT_MAPPED_FILE_PRIVATE;
}

/* A range moved or resized keeps its class; one memtrack never saw mapped is anonymous. */
static int on_mremap(struct mt_mapped *mp, struct space *s, const struct mt_artifact_mapping *m)
{
	int cls = class_at(s, page_down(m->old_addr));
	int err = 0;

	if (cls < 0)
		cls =
		    m->origin & MT_MAP_IN_ALLOCATOR ? MT_MAPPED_ALLOC_MMAP : MT_MAPPED_ANON_PRIVATE;
	/* old_len 0 duplicates a shared mapping; MREMAP_DONTUNMAP leaves the old one mapped. */
	if (m->old_len && !(m->flags & MREMAP_DONTUNMAP))
		err = unmap(mp, s, page_down(m->old_addr), page_up(m->old_addr + m->old_len));
	return err ? err : map(mp, s, m->addr, m->addr + page_up(m->len), (uint8_t)cls);
}

/* The break moved to m->addr: the pages between it and where it was came or went. */
static int on_brk(struct mt_mapped *mp, struct space *s, const struct mt_artifact_mapping *m)
{
	uint64_t was = s->brk ? s->brk : m->old_addr, now = m->addr;
	uint8_t cls = m->origin & MT_MAP_IN_ALLOCATOR ? MT_MAPPED_ALLOC_BRK : MT_MAPPED_BRK;
	int err = 0;

	/* An inherited break below this heap's start is another address space's (an exec's). */
	if (was < m->old_addr)
		was = m->old_addr;
	if (now > was)
		err = map(mp, s, page_up(was), page_up(now), cls);
	else if (now < was)
		err = unmap(mp, s, page_up(now), page_up(was));
	s->brk = now;
	return err;
}

/* The tree's sums and the line beyond the heap after a change of image's. */
static int changed(struct mt_mapped *mp, uint32_t image, struct space *s)
{
	uint64_t peak = mp->tree.peak_beyond;
	struct mt_live_change c = {.image = image};

	derive(&s->c);
	derive(&mp->tree);
	c.image_live = s->c.beyond;
	c.tree_live = mp->tree.beyond;
	c.new_peak = mp->tree.peak_beyond > peak;
	return mt_timeline_live(mp->tl, &c);
}

int mt_mapped_record(struct mt_mapped *mp, uint32_t image, const struct mt_artifact_mapping *m)
{
	struct space *s = space_of(mp, image);
	int err = 0;

	if (!s)
		return -ENOMEM;
	mp->any = true;
	s->c.calls[m->what < 5 ? m->what : 0]++;
	mp->tree.calls[m->what < 5 ? m->what : 0]++;
	if (s->c.ended)
		return 0; /* a record after the image's end names a pid reused: not this image's */
	switch (m->what) {
	case MT_MAP_MMAP:
		err = map(mp, s, page_down(m->addr), page_up(m->addr + m->len), mmap_class(s, m));
		break;
	case MT_MAP_MUNMAP:
		if (!m->error)
			err = unmap(mp, s, page_down(m->addr), page_up(m->addr + m->len));
		break;
	case MT_MAP_MREMAP:
		err = on_mremap(mp, s, m);
		break;
	case MT_MAP_BRK:
		err = on_brk(mp, s, m);
		break;
	default:
		return 0;
	}
	return err ? err : changed(mp, image, s);
}

int mt_mapped_fork(struct mt_mapped *mp, uint32_t parent, uint32_t child)
{
	struct space *p, *c;

	if (!space_of(mp, parent > child ? parent : child))
		return -ENOMEM;
	p = &mp->im[parent];
	c = &mp->im[child];
	if (!c->brk)
		c->brk = p->brk;
	return 0;
}

int mt_mapped_end(struct mt_mapped *mp, uint32_t image)
{
	struct space *s = space_of(mp, image);

	if (!s)
		return -ENOMEM;
	if (s->c.ended)
		return 0;
	/* The tree loses the image's ranges; the image keeps its counts at its end. */
	for (int k = 0; k < MT_MAPPED_CLASSES; k++) {
		mp->tree.now[k] = mp->tree.now[k] > s->c.now[k] ? mp->tree.now[k] - s->c.now[k] : 0;
	}
	free(s->r);
	s->r = NULL;
	s->n = s->cap = 0;
	s->c.ended = true;
	if (!mp->any)
		return 0;
	derive(&mp->tree);
	return mt_timeline_live(mp->tl, &(struct mt_live_change){.image = image,
								 .image_live = 0,
								 .tree_live = mp->tree.beyond});
}

int mt_mapped_at(struct mt_mapped *mp, uint64_t time_ns)
{
	return mt_timeline_at(mp->tl, time_ns);
}

int mt_mapped_finish(struct mt_mapped *mp)
{
	return mt_timeline_end(mp->tl);
}

bool mt_mapped_any(const struct mt_mapped *mp)
{
	return mp->any;
}

const struct mt_mapped_counts *mt_mapped_image(const struct mt_mapped *mp, size_t image)
{
	static const struct mt_mapped_counts none;

	return image < mp->n_im ? &mp->im[image].c : &none;
}

const struct mt_mapped_counts *mt_mapped_tree(const struct mt_mapped *mp)
{
	return &mp->tree;
}

const struct mt_timeline *mt_mapped_timeline(const struct mt_mapped *mp)
{
	return mp->tl;
}

struct mt_mapped *mt_mapped_new(uint64_t start_ns)
{
	struct mt_mapped *mp = calloc(1, sizeof(*mp));

	if (!mp)
		return NULL;
	mp->tl = mt_timeline_new(start_ns);
	if (!mp->tl) {
		free(mp);
		return NULL;
	}
	return mp;
}

void mt_mapped_free(struct mt_mapped *mp)
{
	if (!mp)
		return;
	for (size_t i = 0; i < mp->n_im; i++)
		free(mp->im[i].r);
	free(mp->im);
	mt_timeline_free(mp->tl);
	free(mp);
}
