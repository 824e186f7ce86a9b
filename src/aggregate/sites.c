// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation sites (src/aggregate/sites.h): stack ids found through an open-addressing table. Ids
 * come from the file, so nothing is sized by them: a hostile id costs one site, not an array of its
 * size.
 *
 * Bytes at the peak without a copy of every site at every new peak (a growing heap makes a new
 * peak at each allocation): peaks are numbered, and a site that changes after a peak it has not
 * seen first keeps what it held then. A site that never changed since the last peak holds now
 * what it held at it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "bpf/unwind_row.h"
#include "aggregate/sites.h"

/* A stack id beside its site's index + 1 in v (0: empty): a lookup, twice an event, reads no site.
 */
struct id_entry {
	uint32_t id;
	uint32_t idx1;
};

/*
 * The sites found last, one place for each id modulo this many, tried before by_id: the live
 * hook and the allocations look a site up once or twice an event, most of them among a few
 * sites. Sites are never removed nor moved in v, so an entry stays right.
 */
#define RECENT 64

/* A site and what the replay holds of it now. */
struct slot {
	struct mt_site site;
	uint64_t now_blocks, now_bytes; /* live now, however they are released */
	uint64_t seen_peak;		/* the last peak number it changed after */
};

struct mt_sites {
	struct slot *v;
	size_t n, cap;
	struct mt_hashtab by_id; /* struct id_entry */
	struct mt_symbols *symbols;
	struct mt_artifact_file *files; /* recorded, for the symboliser */
	size_t n_files, cap_files;
	uint64_t peaks;		 /* new peaks of the tree's live bytes so far */
	struct id_entry *recent; /* RECENT of them by id, in front of by_id; NULL until a site */
};

struct mt_sites *mt_sites_new(void)
{
	return calloc(1, sizeof(struct mt_sites));
}

void mt_sites_free(struct mt_sites *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].site.frames);
		free(s->v[i].site.sym);
	}
	free(s->v);
	free(s->recent);
	mt_hashtab_free(&s->by_id);
	free(s->files);
	mt_symbols_free(s->symbols);
	free(s);
}

static bool slot_empty(const void *e)
{
	return !((const struct id_entry *)e)->idx1;
}

static uint64_t slot_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64(((const struct id_entry *)e)->id);
}

static bool slot_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct id_entry *)e)->id == *(const uint32_t *)key;
}

static const struct mt_hashtab_ops by_id_ops = {
    .entry = sizeof(struct id_entry),
    .max_load_pct = 50,
    .min_slots = 256,
    .hash = slot_hash,
    .empty = slot_empty,
};

/* The slot of id, or the empty one where it goes; the table must have slots. */
static struct id_entry *id_slot(const struct mt_sites *s, uint32_t id)
{
	return mt_hashtab_find(&s->by_id, &by_id_ops, mt_hash_u64(id), slot_is, s, &id);
}

static struct slot *find(const struct mt_sites *s, uint32_t id)
{
	struct id_entry *e;

	if (!s->by_id.slot)
		return NULL;
	e = id_slot(s, id);
	return e->idx1 ? &s->v[e->idx1 - 1] : NULL;
}

/* find, through the recent sites (made with the first site: find is NULL before). */
static struct slot *find_recent(struct mt_sites *s, uint32_t id)
{
	struct id_entry *r;
	struct slot *site;

	if (!s->recent)
		return NULL;
	r = &s->recent[id % RECENT];
	if (r->idx1 && r->id == id)
		return &s->v[r->idx1 - 1];
	site = find(s, id);
	if (site)
		*r = (struct id_entry){.id = id, .idx1 = (uint32_t)(site - s->v) + 1};
	return site;
}

/* The site of id, made (with no frames) when it is new. */
static struct slot *get(struct mt_sites *s, uint32_t id)
{
	struct slot *site = find_recent(s, id);
	struct id_entry *e;

	if (site)
		return site;
	if (!s->recent)
		s->recent = calloc(RECENT, sizeof(*s->recent));
	if (!s->recent)
		return NULL;
	if (mt_hashtab_reserve(&s->by_id, &by_id_ops, s, s->n + 1))
		return NULL;
	e = id_slot(s, id);
	if (MT_GROW(s->v, s->cap, s->n + 1, 64))
		return NULL;
	site = &s->v[s->n];
	memset(site, 0, sizeof(*site));
	site->site.stack_id = id;
	site->site.stop = MT_UNWIND_LOST;
	*e = (struct id_entry){.id = id, .idx1 = (uint32_t)++s->n};
	mt_hashtab_added(&s->by_id);
	return site;
}

int mt_sites_add_stack(struct mt_sites *s, const struct mt_artifact_stack *st)
{
	struct slot *slot = get(s, st->id);
	struct mt_site *site = slot ? &slot->site : NULL;
	uint64_t *frames;

	if (!site)
		return -ENOMEM;
	/* The first record of an id stands; the writer never repeats one. */
	if (site->n_frames)
		return 0;
	frames = malloc(st->n * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, st->frames, st->n * sizeof(*frames));
	site->frames = frames;
	site->n_frames = st->n;
	site->stop = st->stop;
	return 0;
}

int mt_sites_add_file(struct mt_sites *s, const struct mt_artifact_file *f)
{
	/* Doubling: a tree can map tens of thousands of files (JIT memfds), one record each. */
	if (MT_GROW(s->files, s->cap_files, s->n_files + 1, 64))
		return -ENOMEM;
	s->files[s->n_files++] = *f;
	return 0;
}

int mt_sites_alloc(struct mt_sites *s, uint32_t stack_id, uint64_t size, bool live)
{
	struct slot *slot = get(s, stack_id);
	struct mt_site *site = slot ? &slot->site : NULL;

	if (!site)
		return -ENOMEM;
	site->allocations++;
	site->bytes += size;
	if (live) {
		site->live_blocks++;
		site->live_bytes += size;
	}
	return 0;
}

void mt_sites_release(struct mt_sites *s, uint32_t stack_id, uint64_t size, int sign)
{
	struct slot *slot = find_recent(s, stack_id);

	if (!slot)
		return;
	slot->site.live_blocks += (uint64_t)(int64_t)sign;
	slot->site.live_bytes += sign < 0 ? -size : size;
}

void mt_sites_temporary(struct mt_sites *s, uint32_t stack_id)
{
	struct slot *slot = find_recent(s, stack_id);

	if (slot)
		slot->site.temporary++;
}

int mt_sites_live(struct mt_sites *s, uint32_t stack_id, uint64_t size, uint64_t blocks, bool add,
		  bool new_peak)
{
	struct slot *slot = stack_id ? get(s, stack_id) : NULL;

	if (stack_id && !slot)
		return -ENOMEM;
	if (slot) {
		/* Its first change since the last peak: what it holds now, it held then. */
		if (slot->seen_peak != s->peaks) {
			slot->site.peak_blocks = slot->now_blocks;
			slot->site.peak_bytes = slot->now_bytes;
			slot->seen_peak = s->peaks;
		}
		slot->now_blocks += add ? blocks : -blocks;
		slot->now_bytes += add ? size * blocks : -(size * blocks);
	}
	/* The change is part of the new peak: sites see it at their next change, or at the end. */
	s->peaks += new_peak;
	return 0;
}

void mt_sites_end(struct mt_sites *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct slot *slot = &s->v[i];

		if (slot->seen_peak != s->peaks) {
			slot->site.peak_blocks = slot->now_blocks;
			slot->site.peak_bytes = slot->now_bytes;
			slot->seen_peak = s->peaks;
		}
	}
}

/*
 * A site's frames named, the functions inlined at each return address expanded into frames of
 * their own (mt_symbols_expand): the frames are made again, an inlined one repeating its
 * return address, so that every output walks one list. The allocator's frame (its entry) is
 * named alone: nothing is inlined at a function's first instruction.
 */
static int symbolize_site(struct mt_symbols *symbols, struct mt_site *site)
{
	const struct mt_frame_info **chain = calloc(site->n_frames, sizeof(*chain));
	uint32_t *len = calloc(site->n_frames, sizeof(*len));
	struct mt_frame_info *sym = NULL;
	uint64_t *frames = NULL;
	size_t n = 0, at = 0;
	int err = -ENOMEM;

	if (!chain || !len)
		goto out;
	for (uint32_t k = 0; k < site->n_frames; k++) {
		int got = mt_symbols_expand(symbols, site->frames[k], k > 0, &chain[k]);

		if (got < 0)
			goto out;
		len[k] = k ? (uint32_t)got : 1;
		/* The own function, last of the chain, for the allocator's entry. */
		if (!k)
			chain[0] += got - 1;
		n += len[k];
	}
	sym = malloc(n * sizeof(*sym));
	frames = malloc(n * sizeof(*frames));
	if (!sym || !frames || n > UINT32_MAX)
		goto out;
	for (uint32_t k = 0; k < site->n_frames; k++)
		for (uint32_t j = 0; j < len[k]; j++, at++) {
			sym[at] = chain[k][j];
			frames[at] = site->frames[k];
		}
	free(site->frames);
	site->frames = frames;
	site->sym = sym;
	site->n_frames = (uint32_t)n;
	frames = NULL;
	sym = NULL;
	err = 0;
out:
	free(frames);
	free(sym);
	free(len);
	free(chain);
	return err;
}

int mt_sites_symbolize(struct mt_sites *s, const char *debug_root)
{
	if (!s->symbols) {
		s->symbols = mt_symbols_new(debug_root);
		if (!s->symbols)
			return -ENOMEM;
		/* A later record of a file id replaces an earlier one: the last is added last. */
		for (size_t i = 0; i < s->n_files; i++)
			if (mt_symbols_add_file(s->symbols, s->files[i].file_id, s->files[i].path,
						s->files[i].build_id))
				return -ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct mt_site *site = &s->v[i].site;

		if (!site->sym && site->n_frames && symbolize_site(s->symbols, site))
			return -ENOMEM;
	}
	return 0;
}

size_t mt_sites_count(const struct mt_sites *s)
{
	return s->n;
}

const struct mt_site *mt_sites_of(const struct mt_sites *s, uint32_t stack_id)
{
	const struct slot *slot = find(s, stack_id);

	return slot ? &slot->site : NULL;
}

size_t mt_sites_index(const struct mt_sites *s, uint32_t stack_id)
{
	const struct slot *slot = find(s, stack_id);

	return slot ? (size_t)(slot - s->v) : SIZE_MAX;
}

const struct mt_site *mt_sites_get(const struct mt_sites *s, size_t i)
{
	return &s->v[i].site;
}
