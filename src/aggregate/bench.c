// SPDX-License-Identifier: GPL-2.0
/*
 * An artifact split by benchmark window (bench.h). Two reads: the first pairs the marks into
 * windows and names them (a CurrentBenchmark comes after its window closes, and only it says
 * whose process the window is), the second replays the stream over images.h and counts, in the
 * one window open at each point, the calls of its processes.
 *
 * A window's processes: the images whose process is the benchmark's, or whose chain of parents
 * reaches it. Its heap: the live bytes of the blocks those images allocated, whenever. The peak
 * is that heap's largest value in the window minus its value at the start; live at the end are
 * the bytes of the blocks allocated in the window and not released when it closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/bench.h"
#include "aggregate/images.h"
#include "aggregate/sites.h"
#include "base/grow.h"
#include "base/hashtab.h"
#include "reader/artifact_read.h"

/* ---- tables of u64 keys over base/hashtab.h ---------------------------------------------- */

struct slot {
	uint64_t key; /* 0: empty (keys are made non-zero) */
	uint64_t a, b;
};

static uint64_t slot_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64(((const struct slot *)e)->key);
}

static bool slot_empty(const void *e)
{
	return !((const struct slot *)e)->key;
}

static bool slot_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct slot *)e)->key == *(const uint64_t *)key;
}

static const struct mt_hashtab_ops slot_ops = {
    .entry = sizeof(struct slot),
    .max_load_pct = 50,
    .min_slots = 1024,
    .hash = slot_hash,
    .empty = slot_empty,
};

static size_t table_slots(const struct mt_hashtab *t)
{
	return t->slot ? t->mask + 1 : 0;
}

static struct slot *table_slot(const struct mt_hashtab *t, size_t j)
{
	return mt_hashtab_at(t, &slot_ops, j);
}

static struct slot *table_find(const struct mt_hashtab *t, uint64_t key)
{
	struct slot *s;

	if (!t->slot)
		return NULL;
	s = mt_hashtab_find(t, &slot_ops, mt_hash_u64(key), slot_is, NULL, &key);
	return s->key ? s : NULL;
}

/* The slot of key, made (zeroed) when absent; NULL without memory. */
static struct slot *table_get(struct mt_hashtab *t, uint64_t key)
{
	struct slot *s;

	if (mt_hashtab_reserve(t, &slot_ops, NULL, t->used + 1))
		return NULL;
	s = mt_hashtab_find(t, &slot_ops, mt_hash_u64(key), slot_is, NULL, &key);
	if (!s->key) {
		*s = (struct slot){.key = key};
		mt_hashtab_added(t);
	}
	return s;
}

static void table_clear(struct mt_hashtab *t)
{
	if (t->slot)
		memset(t->slot, 0, table_slots(t) * slot_ops.entry);
	t->used = 0;
}

/* ---- the first read: windows ------------------------------------------------------------- */

struct split_state {
	struct mt_bench_split *out;
	size_t cap;
	ssize_t open;	/* the window open, -1: none */
	size_t unnamed; /* windows before this one are named or passed over */
	char *err;
	size_t errlen;
};

static const char *last_part(const char *uri)
{
	const char *p, *last = uri;

	for (p = strstr(uri, "::"); p; p = strstr(p + 2, "::"))
		last = p + 2;
	return last;
}

static int name_window(struct mt_bench_window *w, const struct mt_artifact_bench *b)
{
	char *uri = strdup(b->uri), *name = strdup(last_part(b->uri));

	if (!uri || !name) {
		free(uri);
		free(name);
		return -ENOMEM;
	}
	free(w->uri);
	free(w->name);
	w->uri = uri;
	w->name = name;
	w->pid = b->pid;
	return 0;
}

static int open_window(struct split_state *st, const struct mt_artifact_bench *b)
{
	struct mt_bench_split *s = st->out;
	struct mt_bench_window *w;
	char name[32];

	if (st->open >= 0) {
		s->w[st->open].nested++;
		return 0;
	}
	if (MT_GROW(s->w, st->cap, s->n + 1, 16))
		return -ENOMEM;
	w = &s->w[s->n];
	memset(w, 0, sizeof(*w));
	snprintf(name, sizeof(name), "window %zu", s->n + 1);
	w->uri = strdup("");
	w->name = strdup(name);
	if (!w->uri || !w->name) {
		free(w->uri);
		free(w->name);
		return -ENOMEM;
	}
	w->start_ns = b->ts_ns;
	st->open = (ssize_t)s->n++;
	return 0;
}

static int take_mark(struct split_state *st, const struct mt_artifact_bench *b)
{
	struct mt_bench_split *s = st->out;

	switch (b->what) {
	case MT_BENCH_START:
		return open_window(st, b);
	case MT_BENCH_STOP:
		if (st->open < 0) {
			s->stray_stops++;
			return 0;
		}
		s->w[st->open].stop_ns = b->ts_ns;
		st->open = -1;
		return 0;
	case MT_BENCH_URI:
		/* The earliest closed window not named yet, else the open one. */
		while (st->unnamed < s->n && (ssize_t)st->unnamed != st->open &&
		       s->w[st->unnamed].uri[0])
			st->unnamed++;
		if (st->unnamed < s->n && !s->w[st->unnamed].uri[0])
			return name_window(&s->w[st->unnamed++], b);
		s->stray_uris++;
		return 0;
	case MT_BENCH_MARKER:
		return 0; /* the integration's, carried to ExecutionTimestamps: no window's */
	}
	return 0; /* a kind this version does not know */
}

static int read_marks(const char *path, struct split_state *st)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	int ret = mt_artifact_open(&r, path, st->err, st->errlen);

	if (ret)
		return ret;
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type == MT_ITEM_BENCH)
			ret = take_mark(st, it.bench);
		else if (it.type == MT_ITEM_STACK)
			st->out->has_stacks = true;
		if (ret < 0)
			break;
	}
	if (ret < 0 && st->err && !st->err[0])
		snprintf(st->err, st->errlen, "%s",
			 ret == -ENOMEM ? "out of memory" : mt_artifact_error(r));
	if (!ret && st->open >= 0)
		st->out->w[st->open].not_closed = true;
	st->out->truncated = mt_artifact_truncated(r);
	mt_artifact_close(r);
	return ret;
}

/* ---- the second read: counts ------------------------------------------------------------- */

struct replay {
	struct mt_bench_split *out;
	struct mt_images *im;
	size_t next;		     /* the window the next start mark opens */
	struct mt_bench_window *cur; /* the window open, NULL: none */
	int64_t root_first;	     /* its process's first image, -1: the whole tree */
	signed char *member;	     /* per image: 0 unknown, 1 in the window, -1 not */
	size_t member_cap;
	uint64_t heap; /* its processes' live bytes now */
	uint64_t peak;
	struct mt_hashtab
	    blocks; /* blocks allocated in the window and live: (image, addr) -> size */
	struct mt_hashtab sites; /* stack id -> allocations, bytes */
	uint64_t now_ns;	 /* the time of the event being replayed */
	/* the open window's heap over time (bench.h): bucket b starts at b * tl_width */
	uint64_t tl_width;
	uint64_t tl_max[MT_BENCH_TIMELINE_MAX];
	bool tl_set[MT_BENCH_TIMELINE_MAX];
	int err;
};

static bool in_window(struct replay *rp, size_t image)
{
	size_t have = rp->member_cap;
	const struct mt_image *img;
	int64_t i;
	bool yes = false;

	if (rp->root_first < 0)
		return true;
	if (image >= rp->member_cap) {
		if (MT_GROW(rp->member, rp->member_cap, image + 1, 256)) {
			rp->err = -ENOMEM;
			return false;
		}
		memset(rp->member + have, 0, rp->member_cap - have);
	}
	if (rp->member[image])
		return rp->member[image] > 0;
	for (i = (int64_t)image; i >= 0; i = img->parent) {
		img = mt_images_get(rp->im, (size_t)i);
		if ((int64_t)img->first == rp->root_first) {
			yes = true;
			break;
		}
	}
	rp->member[image] = yes ? 1 : -1;
	return yes;
}

static uint64_t block_key(uint32_t image, uint64_t addr)
{
	/* Non-zero, and one per live block: an address is live once in an address space. */
	return ((uint64_t)image << 48 ^ addr) + 1;
}

/* The heap is now rp->heap: its bucket keeps the largest value; full, neighbours merge. */
static void timeline_note(struct replay *rp)
{
	uint64_t start = rp->cur->start_ns;
	uint64_t t = rp->now_ns > start ? rp->now_ns - start : 0;
	size_t b;

	while ((b = t / rp->tl_width) >= MT_BENCH_TIMELINE_MAX) {
		for (size_t i = 0; i < MT_BENCH_TIMELINE_MAX / 2; i++) {
			uint64_t x = rp->tl_max[2 * i], y = rp->tl_max[2 * i + 1];

			rp->tl_max[i] = x > y ? x : y;
			rp->tl_set[i] = rp->tl_set[2 * i] || rp->tl_set[2 * i + 1];
		}
		memset(rp->tl_max + MT_BENCH_TIMELINE_MAX / 2, 0,
		       MT_BENCH_TIMELINE_MAX / 2 * sizeof(rp->tl_max[0]));
		memset(rp->tl_set + MT_BENCH_TIMELINE_MAX / 2, 0,
		       MT_BENCH_TIMELINE_MAX / 2 * sizeof(rp->tl_set[0]));
		rp->tl_width *= 2;
	}
	if (!rp->tl_set[b] || rp->heap > rp->tl_max[b])
		rp->tl_max[b] = rp->heap;
	rp->tl_set[b] = true;
}

/* The window's points: its start, the buckets that changed, its stop (at end_ns). */
static void timeline_keep(struct replay *rp, struct mt_bench_window *w, uint64_t end_ns)
{
	size_t n = 2; /* the start and the stop */

	for (size_t b = 0; b < MT_BENCH_TIMELINE_MAX; b++)
		n += rp->tl_set[b];
	w->timeline = calloc(n, sizeof(*w->timeline));
	n = 0;
	if (!w->timeline) {
		rp->err = -ENOMEM;
		return;
	}
	w->timeline[n++] = (struct mt_bench_point){0, w->heap_at_start};
	for (size_t b = 0; b < MT_BENCH_TIMELINE_MAX; b++)
		if (rp->tl_set[b])
			w->timeline[n++] = (struct mt_bench_point){b * rp->tl_width, rp->tl_max[b]};
	w->timeline[n++] =
	    (struct mt_bench_point){end_ns > w->start_ns ? end_ns - w->start_ns : 0, rp->heap};
	w->n_timeline = n;
}

static void on_live(void *arg, const struct mt_live_change *c)
{
	struct replay *rp = arg;
	struct mt_bench_window *w = rp->cur;
	struct slot *s;

	/* Its table follows blocks: each block an ending released is told alone too. */
	if (!w || c->summed || !in_window(rp, c->image))
		return;
	if (c->add) {
		rp->heap += c->size;
		if (rp->heap > rp->peak)
			rp->peak = rp->heap;
		s = table_get(&rp->blocks, block_key(c->image, c->addr));
		if (!s) {
			rp->err = -ENOMEM;
			return;
		}
		s->a = c->size;
		timeline_note(rp);
		return;
	}
	rp->heap -= c->size < rp->heap ? c->size : rp->heap;
	timeline_note(rp);
	s = table_find(&rp->blocks, block_key(c->image, c->addr));
	if (s)
		mt_hashtab_erase(&rp->blocks, &slot_ops, NULL, s);
}

static void start_window(struct replay *rp, const struct mt_artifact_bench *b)
{
	struct mt_bench_window *w;
	int64_t root;
	size_t i, n;

	(void)b;
	/* Nested: the open window goes on, as the runner has it. */
	if (rp->cur || rp->next >= rp->out->n)
		return;
	w = rp->cur = &rp->out->w[rp->next++];
	rp->root_first = -1;
	if (w->pid > 0) {
		root = mt_images_latest(rp->im, (uint32_t)w->pid);
		if (root == -ENOMEM) {
			rp->err = -ENOMEM;
			return;
		}
		/* A pid the tree never had: no process of the tree is the benchmark's. */
		rp->root_first =
		    root >= 0 ? (int64_t)mt_images_get(rp->im, (size_t)root)->first : INT64_MAX;
	}
	if (rp->member_cap)
		memset(rp->member, 0, rp->member_cap);
	rp->heap = 0;
	n = mt_images_count(rp->im);
	for (i = 0; i < n; i++)
		if (in_window(rp, i))
			rp->heap += mt_images_get(rp->im, i)->c.live_bytes;
	w->heap_at_start = rp->peak = rp->heap;
	rp->tl_width = MT_BENCH_TIMELINE_FIRST_NS;
	memset(rp->tl_set, 0, sizeof(rp->tl_set));
	table_clear(&rp->blocks);
	table_clear(&rp->sites);
}

static int cmp_site(const void *a, const void *b)
{
	const struct mt_bench_site *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

static void keep_sites(struct replay *rp, struct mt_bench_window *w)
{
	struct mt_bench_site all[MT_BENCH_TOP_SITES + 1];
	size_t n = 0;

	for (size_t i = 0; i < table_slots(&rp->sites); i++) {
		const struct slot *s = table_slot(&rp->sites, i);

		if (!s->key)
			continue;
		all[n++] = (struct mt_bench_site){(uint32_t)(s->key - 1), s->a, s->b};
		qsort(all, n, sizeof(all[0]), cmp_site);
		if (n > MT_BENCH_TOP_SITES)
			n = MT_BENCH_TOP_SITES;
	}
	memcpy(w->sites, all, n * sizeof(all[0]));
	w->n_sites = n;
}

static void stop_window(struct replay *rp)
{
	struct mt_bench_window *w = rp->cur;

	w->peak_bytes = rp->peak - w->heap_at_start;
	w->live_blocks_at_end = rp->blocks.used;
	w->live_at_end = 0;
	for (size_t i = 0; i < table_slots(&rp->blocks); i++)
		w->live_at_end += table_slot(&rp->blocks, i)->a;
	keep_sites(rp, w);
	/* A window never closed ends with the artifact: at its last event. */
	timeline_keep(rp, w, w->not_closed ? rp->now_ns : w->stop_ns);
	rp->cur = NULL;
}

static void count_event(struct replay *rp, const struct mt_event *e, enum mt_effect eff)
{
	struct mt_bench_window *w = rp->cur;
	int64_t img;
	struct slot *s;

	if (eff == MT_EFF_NONE || eff == MT_EFF_STREAM || eff == MT_EFF_UNKNOWN)
		return;
	img = w ? mt_images_latest(rp->im, e->pid) : -1;
	if (img == -ENOMEM) {
		rp->err = -ENOMEM;
		return;
	}
	if (!w || img < 0 || !in_window(rp, (size_t)img)) {
		rp->out->outside +=
		    eff == MT_EFF_ALLOC || eff == MT_EFF_REALLOC || eff == MT_EFF_FREE;
		return;
	}
	if (eff == MT_EFF_FREE) {
		w->frees++;
		return;
	}
	if (eff != MT_EFF_ALLOC && eff != MT_EFF_REALLOC)
		return;
	w->allocations += eff == MT_EFF_ALLOC;
	w->reallocs += eff == MT_EFF_REALLOC;
	w->bytes_allocated += e->size;
	if (!e->stack_id)
		return;
	s = table_get(&rp->sites, (uint64_t)e->stack_id + 1);
	if (!s) {
		rp->err = -ENOMEM;
		return;
	}
	s->a++;
	s->b += e->size;
}

static int replay_item(struct replay *rp, const struct mt_artifact_item *it)
{
	enum mt_effect eff;
	int err = 0;

	switch (it->type) {
	case MT_ITEM_PROCESS:
		return mt_images_process(rp->im, it->process);
	case MT_ITEM_EVENTS:
		for (size_t i = 0; i < it->n_events && !err && !rp->err; i++) {
			if (it->events[i].ts_ns > rp->now_ns)
				rp->now_ns = it->events[i].ts_ns;
			err = mt_images_event(rp->im, &it->events[i], &eff);
			if (!err)
				count_event(rp, &it->events[i], eff);
		}
		return err ? err : rp->err;
	case MT_ITEM_STACK:
		return rp->out->has_stacks ? mt_sites_add_stack(rp->out->stacks, it->stack) : 0;
	case MT_ITEM_FILE:
		return rp->out->has_stacks ? mt_sites_add_file(rp->out->stacks, it->file) : 0;
	case MT_ITEM_BENCH:
		if (it->bench->ts_ns > rp->now_ns)
			rp->now_ns = it->bench->ts_ns;
		if (it->bench->what == MT_BENCH_START)
			start_window(rp, it->bench);
		else if (it->bench->what == MT_BENCH_STOP && rp->cur)
			stop_window(rp);
		return rp->err;
	default:
		return 0;
	}
}

static int replay(const char *path, struct mt_bench_split *out, char *err, size_t errlen)
{
	struct replay rp = {.out = out, .im = mt_images_new()};
	struct mt_artifact_reader *r = NULL;
	struct mt_artifact_item it;
	int ret = rp.im ? mt_artifact_open(&r, path, err, errlen) : -ENOMEM;

	if (!ret) {
		mt_images_on_live(rp.im, on_live, &rp);
		while ((ret = mt_artifact_next(r, &it)) > 0) {
			ret = replay_item(&rp, &it);
			if (ret)
				break;
		}
		if (ret == 0 && rp.cur) {
			stop_window(&rp); /* not closed: it ends with the artifact */
			ret = rp.err;
		}
		if (ret < 0 && err)
			snprintf(err, errlen, "%s",
				 ret == -ENOMEM ? "out of memory" : mt_artifact_error(r));
	}
	mt_artifact_close(r);
	mt_images_free(rp.im);
	free(rp.member);
	mt_hashtab_free(&rp.blocks);
	mt_hashtab_free(&rp.sites);
	return ret;
}

int mt_bench_split_load(const char *path, struct mt_bench_split **out, char *err, size_t errlen)
{
	struct mt_bench_split *s = calloc(1, sizeof(*s));
	struct split_state st = {.out = s, .open = -1, .err = err, .errlen = errlen};
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!s)
		return -ENOMEM;
	ret = read_marks(path, &st);
	if (!ret && s->has_stacks && !(s->stacks = mt_sites_new()))
		ret = -ENOMEM;
	if (!ret)
		ret = replay(path, s, err, errlen);
	if (ret) {
		mt_bench_split_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void mt_bench_split_free(struct mt_bench_split *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->w[i].uri);
		free(s->w[i].name);
		free(s->w[i].timeline);
	}
	free(s->w);
	mt_sites_free(s->stacks);
	free(s);
}

uint64_t mt_bench_average(const struct mt_bench_window *w)
{
	uint64_t calls = w->allocations + w->reallocs;

	return calls ? w->bytes_allocated / calls : 0;
}
