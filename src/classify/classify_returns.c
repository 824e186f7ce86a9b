// SPDX-License-Identifier: GPL-2.0
/*
 * The return points of classification (classify.h): a function that may throw gets uprobes on
 * its returns instead of a uretprobe, whose trampoline would stop a C++ exception (returns.h
 * finds the returns).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "classify/classify.h"
#include "classify/returns.h"

/*
 * operator new and the family functions with its contract throw std::bad_alloc: no uretprobe
 * may sit on them (returns.h). The nothrow variants catch whatever they call may throw.
 */
static bool may_throw(const struct mt_probe_point *pt)
{
	const char *s = pt->symbol;

	if (!pt->ret || strstr(s, "nothrow") || strstr(s, "Nothrow"))
		return false;
	return !strncmp(s, "_Znwm", 5) || !strncmp(s, "_Znam", 5) || !strncmp(s, "tc_new", 6) ||
	       !strncmp(s, "mi_new", 6) || !strncmp(s, "mi_heap_alloc_new", 17);
}

static bool probed_at(const struct mt_classification *c, uint64_t off)
{
	for (size_t i = 0; i < c->n_points; i++)
		if (c->points[i].probe_offset == off)
			return true;
	return false;
}

/* Append the return sites of point i (a function that may throw) as points of their own. */
static int add_sites(struct mt_classification *c, size_t i, const struct mt_ret_site *sites, int n)
{
	struct mt_probe_point *grown, site;

	grown = realloc(c->points, (c->n_points + n) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	c->points = grown;
	for (int k = 0; k < n; k++) {
		if (probed_at(c, sites[k].offset))
			continue; /* a ret shared with a function walked before */
		site = c->points[i];
		site.probe_offset = sites[k].offset;
		site.role = sites[k].tail ? MT_ROLE_TAIL : MT_ROLE_RETURN;
		snprintf(site.reason, sizeof(site.reason), "%s of %s",
			 sites[k].tail ? "tail jump" : "ret", c->points[i].symbol);
		c->points[c->n_points++] = site;
	}
	return 0;
}

/*
 * Point i may throw: probe its returns instead of hijacking its return address. Where they
 * cannot all be found (or one is on a probe point already), it keeps its uretprobe.
 */
struct ret_walk {
	uint64_t *entries;
	size_t n_entries;
	struct mt_code_targets targets;
};

static int probe_returns(struct mt_classification *c, int fd, Elf *e, size_t i,
			 const struct ret_walk *rw)
{
	struct mt_ret_site sites[MT_RET_MAX_SITES];
	struct mt_probe_point *pt = &c->points[i];
	uint64_t start, end;
	int n;

	if (!mt_classify_elf_exec_segment(e, pt->func_offset, &start, &end))
		return 0;
	n = mt_find_returns(fd, pt->func_offset, start, end, rw->entries, rw->n_entries,
			    &rw->targets, sites);
	if (n == -ENOMEM)
		return n;
	if (n < 0)
		return 0;
	for (int k = 0; k < n; k++) {
		bool own_entry = sites[k].offset == pt->probe_offset;

		/* A function that starts by jumping to another probed one is that one. */
		if (own_entry && sites[k].tail && n == 1) {
			pt->ret = false;
			pt->role = MT_ROLE_TAIL;
			snprintf(pt->reason, sizeof(pt->reason), "tail jump of %s", pt->symbol);
			return 0;
		}
		for (size_t j = 0; j < c->n_points; j++)
			if (c->points[j].probe_offset == sites[k].offset &&
			    c->points[j].role != MT_ROLE_RETURN)
				return 0;
	}
	pt->ret = false;
	pt->role = MT_ROLE_ENTRY_THROWS;
	return add_sites(c, i, sites, n);
}

int mt_classify_return_points(struct mt_classification *c, int fd, Elf *e)
{
	struct ret_walk rw = {.n_entries = c->n_points};
	int err = 0;
	size_t i;

	for (i = 0; i < c->n_points && !may_throw(&c->points[i]); i++)
		;
	if (i == c->n_points)
		return 0;
	rw.entries = calloc(rw.n_entries, sizeof(*rw.entries));
	if (!rw.entries || mt_code_targets(e, &rw.targets)) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < rw.n_entries; i++)
		rw.entries[i] = c->points[i].func_offset;
	for (i = 0; i < rw.n_entries && !err; i++)
		if (may_throw(&c->points[i]))
			err = probe_returns(c, fd, e, i, &rw);
out:
	free(rw.entries);
	mt_code_targets_free(&rw.targets);
	return err;
}
