// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of an artifact: counting only, no printing (the outputs are output_text.c and
 * output_json.c). The counting rules are spelled out in report.h; this file keeps the live heap
 * in an open-addressing table keyed by (pid, address), because forked processes share addresses
 * and a run may keep millions of blocks live.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ---- lookup tables -------------------------------------------------------------------------- */

/* A live block. addr 0 marks an empty slot: NULL is never live. */
struct live_slot {
	uint64_t addr;
	uint64_t size;
	uint32_t pid;
};

/* pid -> index + 1 of rep->processes; 0 marks an empty slot. */
struct pid_slot {
	uint32_t pid;
	uint32_t idx1;
};

struct mt_report_index {
	struct live_slot *live;
	size_t live_mask; /* capacity - 1, capacity a power of two */
	size_t live_used;
	struct pid_slot *pids;
	size_t pid_mask;
	size_t pid_used;
	uint32_t file_idx1[65536]; /* file_id -> index + 1 of rep->files */
	size_t proc_cap;
	size_t file_cap;
};

static uint64_t mix(uint64_t x)
{
	/* A 64-bit finaliser: addresses differ in few low bits, spread them over the table. */
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static size_t live_hash(uint32_t pid, uint64_t addr)
{
	return (size_t)mix(addr ^ ((uint64_t)pid << 40) ^ pid);
}

static int live_grow(struct mt_report_index *ix)
{
	size_t cap = ix->live ? (ix->live_mask + 1) * 2 : 1024, i;
	struct live_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; ix->live && i <= ix->live_mask; i++) {
		struct live_slot *s = &ix->live[i];
		size_t j;

		if (!s->addr)
			continue;
		for (j = live_hash(s->pid, s->addr) & (cap - 1); t[j].addr; j = (j + 1) & (cap - 1))
			;
		t[j] = *s;
	}
	free(ix->live);
	ix->live = t;
	ix->live_mask = cap - 1;
	return 0;
}

/* The slot of (pid, addr), or the empty slot where it would go. */
static struct live_slot *live_find(struct mt_report_index *ix, uint32_t pid, uint64_t addr)
{
	size_t j = live_hash(pid, addr) & ix->live_mask;

	while (ix->live[j].addr && (ix->live[j].addr != addr || ix->live[j].pid != pid))
		j = (j + 1) & ix->live_mask;
	return &ix->live[j];
}

/*
 * Remove a slot by shifting back the entries of its probe chain, so the table needs no tombstones
 * and lookups stay short however many blocks come and go.
 */
static void live_erase(struct mt_report_index *ix, struct live_slot *s)
{
	size_t hole = (size_t)(s - ix->live), j = hole;

	for (;;) {
		size_t home;

		j = (j + 1) & ix->live_mask;
		if (!ix->live[j].addr)
			break;
		home = live_hash(ix->live[j].pid, ix->live[j].addr) & ix->live_mask;
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		if (((j - home) & ix->live_mask) >= ((j - hole) & ix->live_mask)) {
			ix->live[hole] = ix->live[j];
			hole = j;
		}
	}
	ix->live[hole].addr = 0;
	ix->live_used--;
}

static int pid_grow(struct mt_report_index *ix)
{
	size_t cap = ix->pids ? (ix->pid_mask + 1) * 2 : 64, i;
	struct pid_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; ix->pids && i <= ix->pid_mask; i++) {
		size_t j;

		if (!ix->pids[i].idx1)
			continue;
		for (j = mix(ix->pids[i].pid) & (cap - 1); t[j].idx1; j = (j + 1) & (cap - 1))
			;
		t[j] = ix->pids[i];
	}
	free(ix->pids);
	ix->pids = t;
	ix->pid_mask = cap - 1;
	return 0;
}

/* ---- entities ------------------------------------------------------------------------------- */

static struct mt_report_process *process_get(struct mt_report *rep, uint32_t pid)
{
	struct mt_report_index *ix = rep->index;
	struct mt_report_process *p;
	size_t j;

	if ((ix->pid_used + 1) * 2 > ix->pid_mask + 1 && pid_grow(ix))
		return NULL;
	for (j = mix(pid) & ix->pid_mask; ix->pids[j].idx1; j = (j + 1) & ix->pid_mask)
		if (ix->pids[j].pid == pid)
			return &rep->processes[ix->pids[j].idx1 - 1];
	if (rep->n_processes == ix->proc_cap) {
		size_t cap = ix->proc_cap ? ix->proc_cap * 2 : 16;
		void *n = realloc(rep->processes, cap * sizeof(*rep->processes));

		if (!n)
			return NULL;
		rep->processes = n;
		ix->proc_cap = cap;
	}
	p = &rep->processes[rep->n_processes];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->exe = strdup("");
	if (!p->exe)
		return NULL;
	rep->n_processes++;
	ix->pids[j].pid = pid;
	ix->pids[j].idx1 = (uint32_t)rep->n_processes;
	ix->pid_used++;
	return p;
}

static struct mt_report_file *file_get(struct mt_report *rep, uint16_t id)
{
	struct mt_report_index *ix = rep->index;
	struct mt_report_file *f;

	if (ix->file_idx1[id])
		return &rep->files[ix->file_idx1[id] - 1];
	if (rep->n_files == ix->file_cap) {
		size_t cap = ix->file_cap ? ix->file_cap * 2 : 16;
		void *n = realloc(rep->files, cap * sizeof(*rep->files));

		if (!n)
			return NULL;
		rep->files = n;
		ix->file_cap = cap;
	}
	f = &rep->files[rep->n_files];
	memset(f, 0, sizeof(*f));
	f->file_id = id;
	f->family = MT_FAM_MAX; /* unknown until a record describes it */
	f->path = strdup("");
	if (!f->path)
		return NULL;
	ix->file_idx1[id] = (uint32_t)++rep->n_files;
	return f;
}

static int replace_str(char **dst, const char *src)
{
	char *s = strdup(src);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* A process may be recorded several times (start, exit): the last record wins. */
static int add_process(struct mt_report *rep, const struct mt_artifact_process *ap)
{
	struct mt_report_process *p = process_get(rep, ap->pid);

	if (!p)
		return -ENOMEM;
	p->parent = ap->parent;
	p->exit_status = ap->exit_status;
	p->exited = ap->exited;
	p->recorded = true;
	return replace_str(&p->exe, ap->exe);
}

static int add_file(struct mt_report *rep, const struct mt_artifact_file *af)
{
	struct mt_report_file *f = file_get(rep, af->file_id);

	if (!f)
		return -ENOMEM;
	f->family = af->family;
	f->probes = af->probes;
	f->recorded = true;
	memcpy(f->build_id, af->build_id, sizeof(f->build_id));
	f->build_id[sizeof(f->build_id) - 1] = '\0';
	return replace_str(&f->path, af->path);
}

static int add_unprobed(struct mt_report *rep, const struct mt_artifact_unprobed *au)
{
	struct mt_report_unprobed *u;

	u = realloc(rep->unprobed, (rep->n_unprobed + 1) * sizeof(*u));
	if (!u)
		return -ENOMEM;
	rep->unprobed = u;
	u += rep->n_unprobed;
	u->error = au->error;
	u->path = strdup(au->path);
	u->function = strdup(au->function);
	u->reason = strdup(au->reason);
	rep->n_unprobed++; /* counted even when a copy failed: freed with the rest */
	return u->path && u->function && u->reason ? 0 : -ENOMEM;
}

/* ---- events --------------------------------------------------------------------------------- */

enum kind_class { KC_NONE, KC_ALLOC, KC_REALLOC, KC_FREE };

static enum kind_class kind_class(uint8_t kind)
{
	switch (kind) {
	case MT_K_MALLOC:
	case MT_K_CALLOC:
	case MT_K_ALIGNED_ALLOC:
	case MT_K_MEMALIGN:
	case MT_K_POSIX_MEMALIGN:
	case MT_K_VALLOC:
	case MT_K_PVALLOC:
	case MT_K_MALLOCX:
	case MT_K_NEW:
	case MT_K_NEW_ALIGNED:
	case MT_K_MALLOC_ALIGNED:
	case MT_K_CALLOC_ALIGNED:
		return KC_ALLOC;
	case MT_K_REALLOC:
	case MT_K_REALLOCARRAY:
	case MT_K_RALLOCX:
	case MT_K_REALLOC_ALIGNED:
	case MT_K_XALLOCX:
		return KC_REALLOC;
	case MT_K_FREE:
	case MT_K_FREE_SIZED:
	case MT_K_FREE_ALIGNED_SIZED:
	case MT_K_SDALLOCX:
	case MT_K_DALLOCX:
	case MT_K_DELETE:
		return KC_FREE;
	default:
		return KC_NONE;
	}
}

unsigned int mt_report_bucket(uint64_t size)
{
	return size ? 64u - (unsigned int)__builtin_clzll(size) : 0;
}

uint64_t mt_report_bucket_min(unsigned int b)
{
	return b ? 1ULL << (b - 1) : 0;
}

/* The totals an event touches: tree and process, and the file for counts only. */
struct touched {
	struct mt_report_totals *tree;
	struct mt_report_totals *proc;
	struct mt_report_totals *file;
};

#define FOR_EACH_COUNT(tc, field)                                                                  \
	do {                                                                                       \
		(tc)->tree->field++;                                                               \
		(tc)->proc->field++;                                                               \
		(tc)->file->field++;                                                               \
	} while (0)

static void live_add_bytes(struct touched *tc, int64_t blocks, uint64_t bytes, bool add)
{
	struct mt_report_totals *t[2] = {tc->tree, tc->proc};
	int i;

	for (i = 0; i < 2; i++) {
		t[i]->live_blocks += (uint64_t)blocks;
		if (add) {
			t[i]->live_bytes += bytes;
			if (t[i]->live_bytes > t[i]->peak_bytes)
				t[i]->peak_bytes = t[i]->live_bytes;
		} else {
			t[i]->live_bytes -= bytes;
		}
	}
}

static int live_insert(struct mt_report *rep, struct touched *tc, uint32_t pid, uint64_t addr,
		       uint64_t size)
{
	struct mt_report_index *ix = rep->index;
	struct live_slot *s;

	if (!addr)
		return 0;
	if ((ix->live_used + 1) * 4 > (ix->live_mask + 1) * 3 && live_grow(ix))
		return -ENOMEM;
	s = live_find(ix, pid, addr);
	if (s->addr) {
		/* Handed out twice without a release we saw (dropped events): the new one wins. */
		live_add_bytes(tc, -1, s->size, false);
	} else {
		ix->live_used++;
	}
	s->addr = addr;
	s->pid = pid;
	s->size = size;
	live_add_bytes(tc, 1, size, true);
	return 0;
}

static void live_remove(struct mt_report *rep, struct touched *tc, uint32_t pid, uint64_t addr)
{
	struct live_slot *s;

	if (!addr || !rep->index->live)
		return;
	s = live_find(rep->index, pid, addr);
	if (!s->addr)
		return; /* allocated before tracking, or never seen: nothing live changes */
	live_add_bytes(tc, -1, s->size, false);
	live_erase(rep->index, s);
}

static void count_bytes(struct mt_report *rep, struct touched *tc, uint64_t size)
{
	tc->tree->bytes_allocated += size;
	tc->proc->bytes_allocated += size;
	tc->file->bytes_allocated += size;
	rep->histogram[mt_report_bucket(size)]++;
}

static int add_event(struct mt_report *rep, const struct mt_event *e)
{
	enum kind_class kc = kind_class(e->kind);
	struct mt_report_process *p;
	struct mt_report_file *f;
	struct touched tc;

	rep->events++;
	if (kc == KC_NONE) {
		rep->unknown_events++;
		return 0;
	}
	p = process_get(rep, e->pid);
	f = file_get(rep, e->file_id);
	if (!p || !f)
		return -ENOMEM;
	tc = (struct touched){&rep->totals, &p->t, &f->t};
	if (kc != KC_FREE && (e->flags & MT_EV_FAILED)) {
		FOR_EACH_COUNT(&tc, failed);
		return 0;
	}
	switch (kc) {
	case KC_ALLOC:
		FOR_EACH_COUNT(&tc, allocations);
		count_bytes(rep, &tc, e->size);
		return live_insert(rep, &tc, e->pid, e->addr, e->size);
	case KC_REALLOC:
		FOR_EACH_COUNT(&tc, reallocs);
		count_bytes(rep, &tc, e->size);
		/* realloc(p, 0) returning NULL freed p: the removal below is all there is to it. */
		if (e->old_addr)
			live_remove(rep, &tc, e->pid, e->old_addr);
		return live_insert(rep, &tc, e->pid, e->addr, e->size);
	default:
		if (!e->addr)
			return 0; /* free(NULL) releases nothing */
		FOR_EACH_COUNT(&tc, frees);
		live_remove(rep, &tc, e->pid, e->addr);
		return 0;
	}
}

/* ---- loading -------------------------------------------------------------------------------- */

static int copy_info(struct mt_report *rep, const struct mt_artifact_info *in)
{
	rep->version = in->version;
	memcpy(rep->watcher, in->watcher, sizeof(rep->watcher));
	rep->start_time_ns = in->start_time_ns;
	rep->start_mono_ns = in->start_mono_ns;
	rep->argv = calloc((size_t)in->argc + 1, sizeof(*rep->argv));
	if (!rep->argv)
		return -ENOMEM;
	for (rep->argc = 0; rep->argc < in->argc; rep->argc++) {
		rep->argv[rep->argc] = strdup(in->argv[rep->argc]);
		if (!rep->argv[rep->argc])
			return -ENOMEM;
	}
	return 0;
}

static int add_item(struct mt_report *rep, const struct mt_artifact_item *it)
{
	size_t i;
	int err;

	switch (it->type) {
	case MT_ITEM_PROCESS:
		return add_process(rep, it->process);
	case MT_ITEM_FILE:
		return add_file(rep, it->file);
	case MT_ITEM_EVENTS:
		for (i = 0; i < it->n_events; i++) {
			err = add_event(rep, &it->events[i]);
			if (err)
				return err;
		}
		return 0;
	case MT_ITEM_FOOTER:
		rep->footer = *it->footer;
		rep->has_footer = true;
		return 0;
	case MT_ITEM_UNPROBED:
		return add_unprobed(rep, it->unprobed);
	}
	return 0;
}

/* Families are known only once every file record is read: fold the per-file counts at the end. */
static void fold_families(struct mt_report *rep)
{
	size_t i;

	for (i = 0; i < rep->n_files; i++) {
		const struct mt_report_totals *ft = &rep->files[i].t;
		unsigned int fam = rep->files[i].family;
		struct mt_report_totals *t = &rep->families[fam < MT_FAM_MAX ? fam : MT_FAM_MAX];

		t->allocations += ft->allocations;
		t->frees += ft->frees;
		t->reallocs += ft->reallocs;
		t->failed += ft->failed;
		t->bytes_allocated += ft->bytes_allocated;
	}
	if (rep->has_footer)
		rep->totals.dropped = rep->footer.requests_dropped + rep->footer.events_dropped +
				      rep->footer.args_lost;
}

static void report_fail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int mt_report_from_reader(struct mt_artifact_reader *r, struct mt_report **out, char *err,
			  size_t errlen)
{
	struct mt_report *rep;
	struct mt_artifact_item it;
	int ret;

	*out = NULL;
	rep = calloc(1, sizeof(*rep));
	if (!rep || !(rep->index = calloc(1, sizeof(*rep->index)))) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = copy_info(rep, mt_artifact_info(r));
	if (ret)
		goto fail;
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		ret = add_item(rep, &it);
		if (ret)
			goto fail;
	}
	if (ret < 0) {
		report_fail(err, errlen, mt_artifact_error(r));
		goto out_free;
	}
	rep->truncated = mt_artifact_truncated(r);
	fold_families(rep);
	*out = rep;
	return 0;

fail:
	report_fail(err, errlen, "out of memory");
out_free:
	mt_report_free(rep);
	return ret;
}

static int load_from(struct mt_artifact_reader *r, struct mt_report **rep, char *err, size_t errlen)
{
	int ret = mt_report_from_reader(r, rep, err, errlen);

	mt_artifact_close(r);
	return ret;
}

int mt_report_load(const char *path, struct mt_report **rep, char *err, size_t errlen)
{
	struct mt_artifact_reader *r;
	int ret;

	*rep = NULL;
	ret = mt_artifact_open(&r, path, err, errlen);
	return ret ? ret : load_from(r, rep, err, errlen);
}

int mt_report_load_mem(const void *buf, size_t len, struct mt_report **rep, char *err,
		       size_t errlen)
{
	struct mt_artifact_reader *r;
	int ret;

	*rep = NULL;
	ret = mt_artifact_open_mem(&r, buf, len, err, errlen);
	return ret ? ret : load_from(r, rep, err, errlen);
}

void mt_report_free(struct mt_report *rep)
{
	size_t i;

	if (!rep)
		return;
	for (i = 0; rep->argv && i < (size_t)rep->argc; i++)
		free(rep->argv[i]);
	free(rep->argv);
	for (i = 0; i < rep->n_processes; i++)
		free(rep->processes[i].exe);
	free(rep->processes);
	for (i = 0; i < rep->n_files; i++)
		free(rep->files[i].path);
	for (i = 0; i < rep->n_unprobed; i++) {
		free(rep->unprobed[i].path);
		free(rep->unprobed[i].function);
		free(rep->unprobed[i].reason);
	}
	free(rep->unprobed);
	free(rep->files);
	if (rep->index) {
		free(rep->index->live);
		free(rep->index->pids);
		free(rep->index);
	}
	free(rep);
}

int mt_report_totals_of(const char *path, struct mt_report_totals *t, char *err, size_t errlen)
{
	struct mt_report *rep;
	int ret = mt_report_load(path, &rep, err, errlen);

	if (ret)
		return ret;
	*t = rep->totals;
	mt_report_free(rep);
	return 0;
}

const char *mt_report_family_name(unsigned int family)
{
	return family < MT_FAM_MAX ? mt_family_name((enum mt_family)family) : "unknown";
}

bool mt_report_complete(const struct mt_report *rep)
{
	return rep->has_footer && !rep->truncated && !rep->footer.events_dropped &&
	       !rep->footer.args_lost && !rep->n_unprobed;
}
