// SPDX-License-Identifier: GPL-2.0
/*
 * The leak scans counted (leaks.h). Every scanned block is kept as (image, class, stack, size)
 * until the end, when they are sorted and merged into loss records: a run has one scan per
 * process, so this is its live blocks at exit once, 40 bytes each.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/leaks.h"
#include "base/grow.h"

struct mt_leaks {
	struct mt_leak_counts *img; /* by image index */
	size_t n_img;
	struct mt_leak_counts total;
	struct mt_loss_record *rec; /* one per block until mt_leaks_end(), then merged */
	size_t n_rec, cap_rec;
	struct mt_loss_record *by_stack; /* rec again, by stack, image and class */
	bool any;
	const struct mt_suppressions *supp; /* of mt_leaks_suppress, NULL: none applied */
};

static const struct mt_leak_counts none;

const char *mt_leak_class_name(unsigned int cls)
{
	static const char *const names[] = {
	    [MT_LEAK_DEFINITE] = "definitely lost",
	    [MT_LEAK_INDIRECT] = "indirectly lost",
	    [MT_LEAK_POSSIBLE] = "possibly lost",
	    [MT_LEAK_REACHABLE] = "still reachable",
	};

	return cls && cls <= MT_LEAK_CLASSES ? names[cls] : "?";
}

static int grow_images(struct mt_leaks *lk, size_t image)
{
	struct mt_leak_counts *v;

	if (image < lk->n_img)
		return 0;
	v = realloc(lk->img, (image + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + lk->n_img, 0, (image + 1 - lk->n_img) * sizeof(*v));
	lk->img = v;
	lk->n_img = image + 1;
	return 0;
}

static int add_record(struct mt_leaks *lk, const struct mt_loss_record *r)
{
	if (MT_GROW(lk->rec, lk->cap_rec, lk->n_rec + 1, 256))
		return -ENOMEM;
	lk->rec[lk->n_rec++] = *r;
	return 0;
}

static void add_figures(struct mt_leak_counts *c, const struct mt_artifact_leaks *l)
{
	c->scanned = true;
	c->flags |= l->flags;
	c->threads += l->threads;
	c->regions += l->regions;
	c->unreadable_regions += l->unreadable_regions;
	c->unreadable_bytes += l->unreadable_bytes;
	c->scanned_bytes += l->scanned_bytes;
	c->scan_ns += l->scan_ns;
	c->scan_cpu_ns += l->scan_cpu_ns;
}

int mt_leaks_add(struct mt_leaks *lk, size_t image, const struct mt_artifact_leaks *l)
{
	struct mt_leak_counts *c;
	int err = grow_images(lk, image);

	if (err)
		return err;
	c = &lk->img[image];
	lk->any = true;
	if (!l->chunk) {
		add_figures(c, l);
		add_figures(&lk->total, l);
	}
	for (uint32_t i = 0; i < l->n; i++) {
		const struct mt_artifact_leak_block *b = &l->blocks[i];
		unsigned int k = b->cls <= MT_LEAK_CLASSES ? b->cls : 0;

		c->blocks[k]++;
		c->bytes[k] += b->size;
		lk->total.blocks[k]++;
		lk->total.bytes[k] += b->size;
		if (!k)
			continue;
		err = add_record(lk, &(struct mt_loss_record){.image = image,
							      .cls = b->cls,
							      .stack = b->stack,
							      .blocks = 1,
							      .bytes = b->size,
							      .addr = b->addr});
		if (err)
			return err;
	}
	return 0;
}

static int by_group(const void *a, const void *b)
{
	const struct mt_loss_record *x = a, *y = b;

	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Per image, the biggest first; then by class (definitely lost first) and stack. */
static int by_size(const void *a, const void *b)
{
	const struct mt_loss_record *x = a, *y = b;

	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return by_group(a, b);
}

static int by_stack(const void *a, const void *b)
{
	const struct mt_loss_record *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return x->cls < y->cls ? -1 : x->cls > y->cls;
}

/* The records again, by stack: the weights of a site (mt_leaks_of_stack). */
static int index_stacks(struct mt_leaks *lk)
{
	free(lk->by_stack);
	lk->by_stack = malloc((lk->n_rec ? lk->n_rec : 1) * sizeof(*lk->by_stack));
	if (!lk->by_stack)
		return -ENOMEM;
	if (!lk->n_rec) /* rec may be NULL: memcpy's arguments may not */
		return 0;
	memcpy(lk->by_stack, lk->rec, lk->n_rec * sizeof(*lk->rec));
	qsort(lk->by_stack, lk->n_rec, sizeof(*lk->by_stack), by_stack);
	return 0;
}

struct mt_leak_weight mt_leaks_of_stack(const struct mt_leaks *lk, uint32_t stack, size_t image,
					unsigned int cls)
{
	struct mt_leak_weight w = {0};
	size_t lo = 0, hi = lk->by_stack ? lk->n_rec : 0;

	/* The first record of the stack (and of the image, when one is asked for). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mt_loss_record *r = &lk->by_stack[mid];

		if (r->stack < stack ||
		    (r->stack == stack && image != SIZE_MAX && r->image < image))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; lk->by_stack && i < lk->n_rec; i++) {
		const struct mt_loss_record *r = &lk->by_stack[i];

		if (r->stack != stack || (image != SIZE_MAX && r->image != image))
			break;
		if (r->cls == cls) {
			w.blocks += r->blocks;
			w.bytes += r->bytes;
		}
	}
	return w;
}

unsigned int mt_leaks_block_class(const struct mt_leaks *lk, size_t image, uint64_t addr)
{
	/* The latest scan of the image is the one at its exit: search from the end. */
	for (size_t i = lk->n_rec; i-- > 0;)
		if (lk->rec[i].image == image && lk->rec[i].addr == addr)
			return lk->rec[i].cls;
	return 0;
}

int mt_leaks_end(struct mt_leaks *lk)
{
	size_t n = 0;

	if (!lk->n_rec)
		return index_stacks(lk);
	qsort(lk->rec, lk->n_rec, sizeof(*lk->rec), by_group);
	for (size_t i = 0; i < lk->n_rec; i++) {
		if (n && !by_group(&lk->rec[n - 1], &lk->rec[i])) {
			lk->rec[n - 1].blocks += lk->rec[i].blocks;
			lk->rec[n - 1].bytes += lk->rec[i].bytes;
		} else {
			lk->rec[n++] = lk->rec[i];
		}
	}
	lk->n_rec = n;
	qsort(lk->rec, lk->n_rec, sizeof(*lk->rec), by_size);
	return index_stacks(lk);
}

/* A record suppressed: out of its class's counts, into the suppressed ones. */
static void count_suppressed(struct mt_leak_counts *c, const struct mt_loss_record *r)
{
	c->blocks[r->cls] -= r->blocks;
	c->bytes[r->cls] -= r->bytes;
	c->suppressed_blocks += r->blocks;
	c->suppressed_bytes += r->bytes;
}

int mt_leaks_suppress(struct mt_leaks *lk, const struct mt_sites *sites, struct mt_suppressions *ss)
{
	size_t n = 0;

	lk->supp = ss;
	for (size_t i = 0; i < lk->n_rec; i++) {
		const struct mt_loss_record *r = &lk->rec[i];
		const struct mt_site *s = r->stack ? mt_sites_of(sites, r->stack) : NULL;
		bool framed = s && s->sym;
		struct mt_supp *sp =
		    mt_supp_match(ss, r->cls, framed ? s->sym : NULL, framed ? s->n_frames : 0);

		if (!sp) {
			lk->rec[n++] = *r;
			continue;
		}
		sp->records++;
		sp->blocks += r->blocks;
		sp->bytes += r->bytes;
		count_suppressed(&lk->img[r->image], r);
		count_suppressed(&lk->total, r);
	}
	lk->n_rec = n;
	return index_stacks(lk);
}

const struct mt_suppressions *mt_leaks_suppressions(const struct mt_leaks *lk)
{
	return lk->supp;
}

bool mt_leaks_any(const struct mt_leaks *lk)
{
	return lk->any;
}

const struct mt_leak_counts *mt_leaks_of(const struct mt_leaks *lk, size_t image)
{
	return image < lk->n_img ? &lk->img[image] : &none;
}

const struct mt_leak_counts *mt_leaks_total(const struct mt_leaks *lk)
{
	return &lk->total;
}

size_t mt_leaks_records(const struct mt_leaks *lk, const struct mt_loss_record **v)
{
	*v = lk->rec;
	return lk->n_rec;
}

struct mt_leaks *mt_leaks_new(void)
{
	return calloc(1, sizeof(struct mt_leaks));
}

void mt_leaks_free(struct mt_leaks *lk)
{
	if (!lk)
		return;
	free(lk->img);
	free(lk->rec);
	free(lk->by_stack);
	free(lk);
}
