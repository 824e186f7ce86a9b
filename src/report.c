// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of an artifact and the outputs built on it. The counting rules are spelled out in
 * report.h; this file keeps the live heap in an open-addressing table keyed by (pid, address),
 * because forked processes share addresses and a run may keep millions of blocks live.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <json.h>

#include "printable.h"
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

/* ---- human output --------------------------------------------------------------------------- */

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

/* "512 B", "1.5 MiB": for tables, where exact byte counts do not fit. */
static const char *human(char *buf, size_t n, uint64_t v)
{
	double d = (double)v;
	unsigned int u = 0;

	if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 " B", v);
		return buf;
	}
	while (d >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", d, units[u]);
	return buf;
}

/* 2^k written exactly: "512 B", "1 KiB", "16 EiB". */
static const char *pow2_label(char *buf, size_t n, unsigned int k)
{
	snprintf(buf, n, "%u %s", 1u << (k % 10), units[k / 10]);
	return buf;
}

/* Exact bytes, with the human form when it says more. */
static const char *bytes_str(char *buf, size_t n, uint64_t v)
{
	char h[32];

	if (v < 1024)
		snprintf(buf, n, "%" PRIu64 " bytes", v);
	else
		snprintf(buf, n, "%" PRIu64 " bytes (%s)", v, human(h, sizeof(h), v));
	return buf;
}

static const char *status_str(char *buf, size_t n, const struct mt_report_process *p)
{
	const char *sig;

	if (!p->exited)
		snprintf(buf, n, "-");
	else if (WIFEXITED(p->exit_status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(p->exit_status));
	else if (WIFSIGNALED(p->exit_status) && (sig = sigabbrev_np(WTERMSIG(p->exit_status))))
		snprintf(buf, n, "SIG%s", sig);
	else if (WIFSIGNALED(p->exit_status))
		snprintf(buf, n, "signal %d", WTERMSIG(p->exit_status));
	else
		snprintf(buf, n, "0x%x", (unsigned int)p->exit_status);
	return buf;
}

/* One argument, shell-quoted when needed so that the line can be pasted back. */
static void put_arg(FILE *out, const char *arg)
{
	bool plain = *arg && !arg[strcspn(arg, " \t\n'\"\\$`;&|<>()*?[]#~")];
	size_t n = strlen(arg) + 1;
	char *safe = malloc(n);
	const char *a = safe ? mt_printable(safe, n, arg) : "?";

	if (!plain)
		fputc('\'', out);
	for (; *a; a++) {
		if (*a == '\'')
			fputs("'\\''", out);
		else
			fputc(*a, out);
	}
	if (!plain)
		fputc('\'', out);
	free(safe);
}

static void print_command(const struct mt_report *rep, FILE *out)
{
	int i;

	fprintf(out, "command:  ");
	for (i = 0; i < rep->argc; i++) {
		fputc(' ', out);
		put_arg(out, rep->argv[i]);
	}
	fputc('\n', out);
}

static void print_run(const struct mt_report *rep, FILE *out)
{
	time_t secs = (time_t)(rep->start_time_ns / 1000000000u);
	struct tm tm;
	char when[64] = "unknown", w[sizeof(rep->watcher)];

	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	print_command(rep, out);
	fprintf(out, "started:   %s\n", when);
	if (rep->has_footer && rep->footer.end_mono_ns >= rep->start_mono_ns)
		fprintf(out, "duration:  %.3f s\n",
			(double)(rep->footer.end_mono_ns - rep->start_mono_ns) / 1e9);
	fprintf(out, "watcher:   %s\n",
		rep->watcher[0] ? mt_printable(w, sizeof(w), rep->watcher) : "unknown");
	if (rep->truncated)
		fprintf(out, "TRUNCATED: the run was cut short (no footer); the figures cover what "
			     "was written before the cut\n");
}

static void print_dropped(const struct mt_report *rep, FILE *out)
{
	const struct mt_artifact_footer *f = &rep->footer;

	if (!rep->has_footer) {
		fprintf(out, "  dropped           unknown (the artifact has no footer)\n");
		return;
	}
	if (!rep->totals.dropped) {
		fprintf(out, "  dropped           none\n");
		return;
	}
	fprintf(out,
		"  dropped           %" PRIu64 " events, %" PRIu64
		" calls without arguments, %" PRIu64 " attach requests\n",
		f->events_dropped, f->args_lost, f->requests_dropped);
	if (f->events_dropped || f->args_lost)
		fprintf(out,
			"  WARNING: %" PRIu64 " allocator calls were lost: the figures above are "
			"incomplete\n",
			f->events_dropped + f->args_lost);
	if (f->requests_dropped)
		fprintf(out,
			"  note: dropped attach requests were recovered by rescanning mappings\n");
}

static void print_totals(const struct mt_report *rep, FILE *out)
{
	const struct mt_report_totals *t = &rep->totals;
	char b[64];

	fprintf(out, "\nTotals\n");
	fprintf(out, "  allocations       %" PRIu64 "\n", t->allocations);
	fprintf(out, "  frees             %" PRIu64 "\n", t->frees);
	fprintf(out, "  reallocs          %" PRIu64 "\n", t->reallocs);
	fprintf(out, "  failed calls      %" PRIu64 "\n", t->failed);
	fprintf(out, "  bytes allocated   %s\n", bytes_str(b, sizeof(b), t->bytes_allocated));
	fprintf(out, "  peak live heap    %s\n", bytes_str(b, sizeof(b), t->peak_bytes));
	fprintf(out, "  live at exit      %" PRIu64 " blocks, %s\n", t->live_blocks,
		bytes_str(b, sizeof(b), t->live_bytes));
	fprintf(out, "  events            %" PRIu64 "\n", rep->events);
	if (rep->unknown_events)
		fprintf(out, "  unknown kinds     %" PRIu64 " events passed over\n",
			rep->unknown_events);
	print_dropped(rep, out);
}

static int by_bytes_proc(const void *a, const void *b)
{
	const struct mt_report_process *x = *(const struct mt_report_process *const *)a;
	const struct mt_report_process *y = *(const struct mt_report_process *const *)b;

	if (x->t.bytes_allocated != y->t.bytes_allocated)
		return x->t.bytes_allocated < y->t.bytes_allocated ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_allocs_file(const void *a, const void *b)
{
	const struct mt_report_file *x = *(const struct mt_report_file *const *)a;
	const struct mt_report_file *y = *(const struct mt_report_file *const *)b;
	uint64_t nx = x->t.allocations + x->t.reallocs, ny = y->t.allocations + y->t.reallocs;

	if (nx != ny)
		return nx < ny ? 1 : -1;
	return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

/* Pointers to n elements of size sz, sorted; NULL when out of memory. */
static const void **sorted(const void *base, size_t n, size_t sz,
			   int (*cmp)(const void *, const void *))
{
	const void **v = malloc((n ? n : 1) * sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		v[i] = (const char *)base + i * sz;
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

static size_t shown(size_t n, size_t top)
{
	return top && top < n ? top : n;
}

static int print_processes(const struct mt_report *rep, FILE *out, size_t top)
{
	const void **v =
	    sorted(rep->processes, rep->n_processes, sizeof(*rep->processes), by_bytes_proc);
	size_t i, n = shown(rep->n_processes, top);
	char s[32], b1[32], b2[32], b3[32], sx[MT_PRINTABLE_MAX];

	if (!v)
		return -ENOMEM;
	fprintf(out, "\nProcesses (%zu, by bytes allocated)\n", rep->n_processes);
	fprintf(out, "  %8s %8s %-9s %10s %10s %9s %11s %11s %8s %11s  %s\n", "PID", "PARENT",
		"STATUS", "ALLOCS", "FREES", "REALLOCS", "BYTES", "PEAK", "LIVE", "LIVE BYTES",
		"EXE");
	for (i = 0; i < n; i++) {
		const struct mt_report_process *p = v[i];

		fprintf(out,
			"  %8" PRIu32 " %8" PRIu32 " %-9s %10" PRIu64 " %10" PRIu64 " %9" PRIu64
			" %11s %11s %8" PRIu64 " %11s  %s\n",
			p->pid, p->parent, status_str(s, sizeof(s), p), p->t.allocations,
			p->t.frees, p->t.reallocs, human(b1, sizeof(b1), p->t.bytes_allocated),
			human(b2, sizeof(b2), p->t.peak_bytes), p->t.live_blocks,
			human(b3, sizeof(b3), p->t.live_bytes),
			p->exe[0] ? mt_printable(sx, sizeof(sx), p->exe) : "?");
	}
	if (n < rep->n_processes)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", rep->n_processes - n);
	free(v);
	return 0;
}

static int print_files(const struct mt_report *rep, FILE *out, size_t top)
{
	const void **v = sorted(rep->files, rep->n_files, sizeof(*rep->files), by_allocs_file);
	size_t i, n = shown(rep->n_files, top);
	char b[32], sx[MT_PRINTABLE_MAX];

	if (!v)
		return -ENOMEM;
	fprintf(out, "\nAttached files (%zu)\n", rep->n_files);
	fprintf(out, "  %5s %-9s %6s %10s %10s %9s %11s  %s\n", "ID", "FAMILY", "PROBES", "ALLOCS",
		"FREES", "REALLOCS", "BYTES", "PATH");
	for (i = 0; i < n; i++) {
		const struct mt_report_file *f = v[i];

		fprintf(out, "  %5u %-9s %6u %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %11s  %s\n",
			f->file_id, mt_report_family_name(f->family), f->probes, f->t.allocations,
			f->t.frees, f->t.reallocs, human(b, sizeof(b), f->t.bytes_allocated),
			f->recorded ? mt_printable(sx, sizeof(sx), f->path) : "(no file record)");
	}
	if (n < rep->n_files)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", rep->n_files - n);
	free(v);
	return 0;
}

static void print_families(const struct mt_report *rep, FILE *out)
{
	unsigned int i, rows = 0;
	char b[32];

	fprintf(out, "\nAllocator families\n");
	fprintf(out, "  %-9s %10s %10s %9s %11s\n", "FAMILY", "ALLOCS", "FREES", "REALLOCS",
		"BYTES");
	for (i = 0; i <= MT_FAM_MAX; i++) {
		const struct mt_report_totals *t = &rep->families[i];

		if (!t->allocations && !t->frees && !t->reallocs && !t->failed)
			continue;
		rows++;
		fprintf(out, "  %-9s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %11s\n",
			mt_report_family_name(i), t->allocations, t->frees, t->reallocs,
			human(b, sizeof(b), t->bytes_allocated));
	}
	if (!rows)
		fprintf(out, "  none\n");
}

static void print_histogram(const struct mt_report *rep, FILE *out)
{
	unsigned int b, lo = MT_REPORT_HIST_BUCKETS, hi = 0;
	uint64_t max = 0;
	char l1[32], l2[32];

	for (b = 0; b < MT_REPORT_HIST_BUCKETS; b++) {
		if (!rep->histogram[b])
			continue;
		lo = b < lo ? b : lo;
		hi = b;
		max = rep->histogram[b] > max ? rep->histogram[b] : max;
	}
	fprintf(out, "\nRequested sizes (allocations and reallocs)\n");
	if (!max) {
		fprintf(out, "  none\n");
		return;
	}
	for (b = lo; b <= hi; b++) {
		uint64_t c = rep->histogram[b];
		int bar = (int)((double)c * 40 / (double)max + 0.999);

		if (b == 0)
			fprintf(out, "  %20s", "0");
		else
			fprintf(out, "  [%8s, %8s)", pow2_label(l1, sizeof(l1), b - 1),
				pow2_label(l2, sizeof(l2), b));
		fprintf(out, " %12" PRIu64 " %.*s\n", c, bar,
			"########################################");
	}
}

/* One line per file or function not probed: "PATH: REASON" or "PATH: FUNCTION: REASON". */
static void put_unprobed(FILE *out, const char *prefix, const struct mt_report_unprobed *u)
{
	char p[MT_PRINTABLE_MAX], f[256], r[256];

	fprintf(out, "%s%s: ", prefix, mt_printable(p, sizeof(p), u->path));
	if (u->function[0])
		fprintf(out, "%s: ", mt_printable(f, sizeof(f), u->function));
	fprintf(out, "%s\n", mt_printable(r, sizeof(r), u->reason));
}

static void print_unprobed(const struct mt_report *rep, FILE *out)
{
	if (!rep->n_unprobed)
		return;
	fprintf(out, "\nNot probed (%zu): their allocations are missing from the figures\n",
		rep->n_unprobed);
	for (size_t i = 0; i < rep->n_unprobed; i++)
		put_unprobed(out, "  ", &rep->unprobed[i]);
}

bool mt_report_complete(const struct mt_report *rep)
{
	return rep->has_footer && !rep->truncated && !rep->footer.events_dropped &&
	       !rep->footer.args_lost && !rep->n_unprobed;
}

int mt_report_print(const struct mt_report *rep, FILE *out, size_t top)
{
	print_run(rep, out);
	print_totals(rep, out);
	print_unprobed(rep, out);
	if (print_processes(rep, out, top) || print_files(rep, out, top))
		return -ENOMEM;
	print_families(rep, out);
	print_histogram(rep, out);
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static void jset(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static void jset_u64(struct json_object *o, const char *key, uint64_t v)
{
	jset(o, key, json_object_new_uint64(v));
}

/* Strings come from the traced program and may be any bytes: JSON needs UTF-8. */
static struct json_object *jstr(const char *s)
{
	char *u = mt_utf8_dup(s);
	struct json_object *o = u ? json_object_new_string(u) : NULL;

	free(u);
	return o;
}

static void jset_str(struct json_object *o, const char *key, const char *s)
{
	jset(o, key, jstr(s));
}

/* The counts every level has; peak and live where they are kept. */
static void jset_totals(struct json_object *o, const struct mt_report_totals *t, bool live)
{
	jset_u64(o, "allocations", t->allocations);
	jset_u64(o, "frees", t->frees);
	jset_u64(o, "reallocs", t->reallocs);
	jset_u64(o, "failed", t->failed);
	jset_u64(o, "bytes_allocated", t->bytes_allocated);
	if (!live)
		return;
	jset_u64(o, "peak_bytes", t->peak_bytes);
	jset_u64(o, "live_blocks", t->live_blocks);
	jset_u64(o, "live_bytes", t->live_bytes);
}

static struct json_object *json_totals(const struct mt_report *rep)
{
	struct json_object *o = json_object_new_object();

	jset_totals(o, &rep->totals, true);
	/* Without a footer nobody knows what was dropped: null, not a reassuring 0. */
	jset(o, "dropped", rep->has_footer ? json_object_new_uint64(rep->totals.dropped) : NULL);
	return o;
}

static struct json_object *json_dropped(const struct mt_report *rep)
{
	struct json_object *o;

	if (!rep->has_footer)
		return NULL;
	o = json_object_new_object();
	jset_u64(o, "events", rep->footer.events_dropped);
	jset_u64(o, "args_lost", rep->footer.args_lost);
	jset_u64(o, "attach_requests", rep->footer.requests_dropped);
	return o;
}

static struct json_object *json_process(const struct mt_report_process *p)
{
	struct json_object *o = json_object_new_object();
	int st = p->exit_status;

	jset_u64(o, "pid", p->pid);
	jset_u64(o, "parent", p->parent);
	jset_str(o, "exe", p->exe);
	jset(o, "exit_status", p->exited ? json_object_new_int(st) : NULL);
	/* The shell convention, which is what people compare against. */
	jset(o, "exit_code",
	     !p->exited	       ? NULL
	     : WIFEXITED(st)   ? json_object_new_int(WEXITSTATUS(st))
	     : WIFSIGNALED(st) ? json_object_new_int(128 + WTERMSIG(st))
			       : NULL);
	jset(o, "signal", p->exited && WIFSIGNALED(st) ? json_object_new_int(WTERMSIG(st)) : NULL);
	jset_totals(o, &p->t, true);
	return o;
}

static struct json_object *json_file(const struct mt_report_file *f)
{
	struct json_object *o = json_object_new_object();

	jset_u64(o, "file_id", f->file_id);
	jset(o, "path", f->recorded ? jstr(f->path) : NULL);
	jset_str(o, "build_id", f->build_id);
	jset_str(o, "family", mt_report_family_name(f->family));
	jset_u64(o, "probes", f->probes);
	jset_totals(o, &f->t, false);
	return o;
}

static struct json_object *json_families(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();
	unsigned int i;

	for (i = 0; i <= MT_FAM_MAX; i++) {
		const struct mt_report_totals *t = &rep->families[i];
		struct json_object *o;

		if (!t->allocations && !t->frees && !t->reallocs && !t->failed)
			continue;
		o = json_object_new_object();
		jset_str(o, "family", mt_report_family_name(i));
		jset_totals(o, t, false);
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *json_histogram(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();
	unsigned int b;

	for (b = 0; b < MT_REPORT_HIST_BUCKETS; b++) {
		struct json_object *o;

		if (!rep->histogram[b])
			continue;
		o = json_object_new_object();
		jset_u64(o, "min", mt_report_bucket_min(b));
		jset_u64(o, "max", b < 64 ? mt_report_bucket_min(b + 1) - 1 : UINT64_MAX);
		jset_u64(o, "count", rep->histogram[b]);
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *json_unprobed(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < rep->n_unprobed; i++) {
		const struct mt_report_unprobed *u = &rep->unprobed[i];
		struct json_object *o = json_object_new_object();

		jset_str(o, "path", u->path);
		jset(o, "function", u->function[0] ? jstr(u->function) : NULL);
		jset_str(o, "reason", u->reason);
		jset(o, "errno", u->error ? json_object_new_int(u->error) : NULL);
		json_object_array_add(a, o);
	}
	return a;
}

/* Why the recording is incomplete, as stable words a script can test (README: report --json). */
static struct json_object *json_incomplete(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();

	if (rep->truncated || !rep->has_footer)
		json_object_array_add(a, json_object_new_string("truncated"));
	if (rep->footer.events_dropped)
		json_object_array_add(a, json_object_new_string("events_dropped"));
	if (rep->footer.args_lost)
		json_object_array_add(a, json_object_new_string("args_lost"));
	if (rep->n_unprobed)
		json_object_array_add(a, json_object_new_string("not_probed"));
	return a;
}

static struct json_object *json_report(const struct mt_report *rep)
{
	struct json_object *o = json_object_new_object(), *a;
	size_t i;

	if (!o)
		return NULL;
	jset_u64(o, "format_version", rep->version);
	a = json_object_new_array();
	for (i = 0; i < (size_t)rep->argc; i++)
		json_object_array_add(a, jstr(rep->argv[i]));
	jset(o, "command", a);
	jset_str(o, "watcher", rep->watcher);
	jset_u64(o, "start_time_ns", rep->start_time_ns);
	jset(o, "duration_ns",
	     rep->has_footer && rep->footer.end_mono_ns >= rep->start_mono_ns
		 ? json_object_new_uint64(rep->footer.end_mono_ns - rep->start_mono_ns)
		 : NULL);
	jset(o, "truncated", json_object_new_boolean(rep->truncated));
	jset(o, "complete", json_object_new_boolean(mt_report_complete(rep)));
	jset(o, "incomplete", json_incomplete(rep));
	jset_u64(o, "events", rep->events);
	jset_u64(o, "unknown_events", rep->unknown_events);
	jset(o, "totals", json_totals(rep));
	jset(o, "dropped", json_dropped(rep));
	a = json_object_new_array();
	for (i = 0; i < rep->n_processes; i++)
		json_object_array_add(a, json_process(&rep->processes[i]));
	jset(o, "processes", a);
	a = json_object_new_array();
	for (i = 0; i < rep->n_files; i++)
		json_object_array_add(a, json_file(&rep->files[i]));
	jset(o, "files", a);
	jset(o, "not_probed", json_unprobed(rep));
	jset(o, "families", json_families(rep));
	jset(o, "histogram", json_histogram(rep));
	return o;
}

int mt_report_print_json(const struct mt_report *rep, FILE *out)
{
	struct json_object *o = json_report(rep);
	const char *s;
	int ret = 0;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						  JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		ret = -ENOMEM;
	else if (fprintf(out, "%s\n", s) < 0 || ferror(out))
		ret = -EIO;
	json_object_put(o);
	return ret;
}

/* ---- end-of-run summary --------------------------------------------------------------------- */

#define SUMMARY_FILES 6

static void summary_files(const struct mt_report *rep, FILE *out)
{
	size_t i, n = 0, more = 0;
	char sx[MT_PRINTABLE_MAX];

	fprintf(out, "memtrack: allocators:");
	for (i = 0; i < rep->n_files; i++) {
		const struct mt_report_file *f = &rep->files[i];

		if (!f->recorded || f->family == MT_FAM_NONE)
			continue;
		if (n++ >= SUMMARY_FILES) {
			more++;
			continue;
		}
		fprintf(out, "%s %s (%s, %u probes)", n > 1 ? "," : "",
			mt_printable(sx, sizeof(sx), f->path), mt_report_family_name(f->family),
			f->probes);
	}
	if (more)
		fprintf(out, ", and %zu more", more);
	fprintf(out, "%s\n", n ? "" : " none attached");
}

#define SUMMARY_UNPROBED 10

static void summary_unprobed(const struct mt_report *rep, FILE *out, const char *path)
{
	size_t i, n = rep->n_unprobed < SUMMARY_UNPROBED ? rep->n_unprobed : SUMMARY_UNPROBED;
	char p[MT_PRINTABLE_MAX];

	for (i = 0; i < n; i++)
		put_unprobed(out, "memtrack: not probed: ", &rep->unprobed[i]);
	if (n < rep->n_unprobed)
		fprintf(out, "memtrack: not probed: %zu more (memtrack report %s lists them)\n",
			rep->n_unprobed - n, mt_printable(p, sizeof(p), path));
	if (n)
		fprintf(out, "memtrack: WARNING: allocations through what was not probed are "
			     "missing from the figures above\n");
}

static void summary_losses(const struct mt_report *rep, FILE *out)
{
	const struct mt_artifact_footer *f = &rep->footer;

	if (rep->truncated)
		fprintf(out,
			"memtrack: WARNING: the artifact is truncated (no footer): the figures "
			"cover what was written and drops are unknown\n");
	if (f->events_dropped && f->args_lost)
		fprintf(out,
			"memtrack: WARNING: %" PRIu64 " allocator events dropped and %" PRIu64
			" calls lost their arguments: the figures above are incomplete\n",
			f->events_dropped, f->args_lost);
	else if (f->events_dropped || f->args_lost)
		fprintf(
		    out, "memtrack: WARNING: %" PRIu64 " %s: the figures above are incomplete\n",
		    f->events_dropped + f->args_lost,
		    f->events_dropped ? "allocator events dropped" : "calls lost their arguments");
	if (f->requests_dropped)
		fprintf(out,
			"memtrack: %" PRIu64 " attach requests dropped (recovered by rescanning "
			"mappings)\n",
			f->requests_dropped);
}

int mt_report_summary(const char *artifact_path, FILE *out)
{
	const struct mt_report_totals *t;
	char err[MT_ARTIFACT_ERRLEN], b1[64], b2[64], b3[64];
	struct mt_report *rep;
	int ret = mt_report_load(artifact_path, &rep, err, sizeof(err));

	if (ret) {
		char p[MT_PRINTABLE_MAX];

		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), artifact_path),
			err);
		return ret;
	}
	t = &rep->totals;
	fprintf(out,
		"memtrack: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		" reallocs, %s allocated\n",
		t->allocations, t->frees, t->reallocs,
		bytes_str(b1, sizeof(b1), t->bytes_allocated));
	fprintf(out, "memtrack: peak heap %s; live at exit: %" PRIu64 " blocks, %s\n",
		bytes_str(b2, sizeof(b2), t->peak_bytes), t->live_blocks,
		bytes_str(b3, sizeof(b3), t->live_bytes));
	summary_files(rep, out);
	if (!rep->has_footer)
		snprintf(b1, sizeof(b1), "unknown");
	else if (t->dropped)
		snprintf(b1, sizeof(b1), "%" PRIu64 " (see below)", t->dropped);
	else
		snprintf(b1, sizeof(b1), "none");
	fprintf(out, "memtrack: dropped: %s\n", b1);
	summary_unprobed(rep, out, artifact_path);
	summary_losses(rep, out);
	mt_report_free(rep);
	return ferror(out) ? -EIO : 0;
}

/* ---- memtrack report ------------------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: memtrack report [--json] [--top N] FILE\n"
		"Read an artifact written by 'memtrack run' and print what the run allocated.\n"
		"\n"
		"  --json      one JSON document instead of the human report\n"
		"  --top N     rows of the process and file tables (default 20, 0: all)\n"
		"  -h, --help  this help\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	char a[MT_PRINTABLE_MAX];

	fprintf(stderr, "memtrack report: ");
	fprintf(stderr, fmt, mt_printable(a, sizeof(a), arg));
	fprintf(stderr, "\nTry 'memtrack report --help'.\n");
	return 2;
}

static bool parse_top(const char *s, size_t *top)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > SIZE_MAX)
		return false;
	*top = (size_t)v;
	return true;
}

static int run_report(const char *path, bool json, size_t top)
{
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	int ret = mt_report_load(path, &rep, err, sizeof(err));
	char p[MT_PRINTABLE_MAX];

	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		return 1;
	}
	ret = json ? mt_report_print_json(rep, stdout) : mt_report_print(rep, stdout, top);
	mt_report_free(rep);
	if (!ret && fflush(stdout))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "memtrack: cannot write the report: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}

int mt_report_main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool json = false;
	size_t top = 20;
	int c;

	optind = 0; /* glibc: full re-initialisation, main() may have parsed its own options */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't':
			if (!parse_top(optarg, &top))
				return usage_error("--top needs a number, not '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error("%s", "no artifact given");
	if (argc - optind > 1)
		return usage_error("one artifact at a time, not '%s' too", argv[optind + 1]);
	return run_report(argv[optind], json, top);
}
