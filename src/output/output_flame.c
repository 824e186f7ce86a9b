// SPDX-License-Identifier: GPL-2.0
/*
 * The flamegraph's tree (output.h): the symbolised sites merged by frame name from the outermost
 * frame down, as folded stacks are, so that the page gets one node per distinct path, not one
 * per stack. Names are interned; the sites' paths are sorted frame by frame, so that the tree is
 * built in one walk that keeps the path of the previous site.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "bpf/unwind_row.h"
#include "output/output.h"
#include "output/output_strtab.h"
#include "base/printable.h"

/* A site's path: its frames' names, outermost first. */
struct path {
	const struct mt_site *site;
	size_t index;	  /* of the site */
	uint64_t lost[2]; /* its bytes definitely and indirectly lost (aggregate/leaks.h) */
	uint32_t n;
	uint32_t *names;
};

/* Names of the frames from the outermost to the allocator's caller, with folded's markers. */
static int path_of(struct mt_strtab *nm, const struct mt_site *s, struct path *p)
{
	char buf[MT_PRINTABLE_MAX];
	int64_t id;

	p->site = s;
	p->n = 0;
	p->names = malloc((s->n_frames + 2) * sizeof(*p->names));
	if (!p->names)
		return -ENOMEM;
	if (s->n_frames && s->stop == MT_UNWIND_TRUNCATED)
		id = mt_strtab_intern(nm, "[truncated]");
	else if (s->n_frames && s->stop != MT_UNWIND_COMPLETE)
		id = mt_strtab_intern(nm, "[cut]");
	else
		id = 0;
	if (id < 0)
		return -ENOMEM;
	if (s->n_frames && s->stop != MT_UNWIND_COMPLETE)
		p->names[p->n++] = (uint32_t)id;
	for (uint32_t k = s->n_frames; s->sym && k-- > 1;) {
		id = mt_strtab_intern(nm, mt_frame_name(buf, sizeof(buf), &s->sym[k]));
		if (id < 0)
			return -ENOMEM;
		p->names[p->n++] = (uint32_t)id;
	}
	if (p->n == 0 || (s->n_frames <= 1 && s->sym)) {
		id = mt_strtab_intern(nm, s->n_frames ? "[unknown]" : "[no stack record]");
		if (id < 0)
			return -ENOMEM;
		p->names[p->n++] = (uint32_t)id;
	}
	return 0;
}

static int by_path(const void *a, const void *b)
{
	const struct path *x = a, *y = b;

	for (uint32_t i = 0; i < x->n && i < y->n; i++)
		if (x->names[i] != y->names[i])
			return x->names[i] < y->names[i] ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

static int node_new(struct mt_flame *fl, uint32_t name, uint32_t parent, uint32_t depth)
{
	if (MT_GROW(fl->nodes, fl->cap_nodes, fl->n_nodes + 1, 256))
		return -ENOMEM;
	fl->nodes[fl->n_nodes] =
	    (struct mt_flame_node){.name = name, .parent = parent, .depth = depth};
	fl->n_nodes++;
	return 0;
}

static void add_weights(struct mt_flame_node *n, const struct path *p)
{
	const struct mt_site *s = p->site;

	n->w[MT_FLAME_ALLOCATIONS] += s->allocations;
	n->w[MT_FLAME_BYTES] += s->bytes;
	n->w[MT_FLAME_LIVE] += s->live_bytes;
	n->w[MT_FLAME_PEAK] += s->peak_bytes;
	n->w[MT_FLAME_TEMPORARY] += s->temporary;
	n->w[MT_FLAME_DEFINITE] += p->lost[0];
	n->w[MT_FLAME_INDIRECT] += p->lost[1];
}

/*
 * Paths sorted frame by frame: a node's paths are neighbours, so each path shares with the
 * previous one the nodes of their common prefix (stack[] holds the previous path's nodes).
 */
static int build(struct mt_flame *fl, const struct path *v, size_t n)
{
	uint32_t *stack = NULL, depth = 0;
	size_t cap = 0;
	int err = node_new(fl, UINT32_MAX, UINT32_MAX, 0); /* the root */

	for (size_t i = 0; !err && i < n; i++) {
		uint32_t common = 0;

		if (i)
			while (common < depth && common < v[i].n &&
			       fl->nodes[stack[common]].name == v[i].names[common])
				common++;
		err = MT_GROW(stack, cap, v[i].n, 2 * v[i].n);
		if (err)
			break;
		for (depth = common; !err && depth < v[i].n; depth++) {
			stack[depth] = (uint32_t)fl->n_nodes;
			err = node_new(fl, v[i].names[depth], depth ? stack[depth - 1] : 0,
				       depth + 1);
		}
		fl->site_node[v[i].index] = stack[v[i].n - 1];
		add_weights(&fl->nodes[0], &v[i]);
		for (uint32_t d = 0; !err && d < v[i].n; d++)
			add_weights(&fl->nodes[stack[d]], &v[i]);
	}
	free(stack);
	return err;
}

int mt_flame_build(const struct mt_report *rep, struct mt_flame **out)
{
	size_t n = mt_sites_count(rep->sites), k = 0;
	struct path *v = calloc(n ? n : 1, sizeof(*v));
	struct mt_flame *fl = calloc(1, sizeof(*fl));
	struct mt_strtab nm = {0};
	int err = v && fl && (fl->site_node = malloc((n ? n : 1) * sizeof(uint32_t))) ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		const struct mt_site *s = mt_sites_get(rep->sites, i);

		fl->site_node[i] = UINT32_MAX;
		if (!s->allocations && !s->peak_bytes)
			continue;
		v[k].index = i;
		v[k].lost[0] =
		    mt_leaks_of_stack(rep->leaks, s->stack_id, SIZE_MAX, MT_LEAK_DEFINITE).bytes;
		v[k].lost[1] =
		    mt_leaks_of_stack(rep->leaks, s->stack_id, SIZE_MAX, MT_LEAK_INDIRECT).bytes;
		err = path_of(&nm, s, &v[k++]);
	}
	if (!err) {
		qsort(v, k, sizeof(*v), by_path);
		err = build(fl, v, k);
	}
	for (size_t i = 0; i < k; i++)
		free(v[i].names);
	free(v);
	if (fl) {
		mt_strtab_drop_slots(&nm);
		fl->names = nm.v;
		fl->n_names = nm.n;
	} else {
		mt_strtab_free(&nm);
	}
	if (err) {
		mt_flame_free(fl);
		return err;
	}
	*out = fl;
	return 0;
}

void mt_flame_free(struct mt_flame *fl)
{
	if (!fl)
		return;
	for (size_t i = 0; i < fl->n_names; i++)
		free(fl->names[i]);
	free(fl->names);
	free(fl->nodes);
	free(fl->site_node);
	free(fl);
}
