// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation over artifacts written from synthetic event sequences whose truth is known: every
 * total is asserted exactly, then the outputs (human, JSON parsed back, summary, the command).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf/unwind_row.h"
#include "writer/artifact.h"
#include "base/printable.h"
#include "cmd/cmd.h"
#include "output/output.h"
#include "aggregate/images.h"
#include "aggregate/report.h"
#include "lib/suite.h"
#include "lib/mtrun.h"

/* ---- building artifacts --------------------------------------------------------------------- */

#define MAXEV 16384

struct script {
	struct mt_event ev[MAXEV];
	size_t n;
	uint64_t t;
	struct mt_artifact_footer footer;
	bool no_footer;
	bool handoff;	 /* process 100 handed to a debugger after the first half of the events */
	uint32_t stacks; /* stack records 1..stacks, written first (stack_of) */
	/* The path of the stacks' file 50 (write_stack) when it has a record; no file is there. */
	const char *frames_path;
};

static struct script *S;

static void setup(void)
{
	S = calloc(1, sizeof(*S));
	ck_assert_ptr_nonnull(S);
}

static void teardown(void)
{
	free(S);
}

static void ev(uint32_t pid, uint8_t kind, uint64_t addr, uint64_t size, uint64_t old,
	       uint8_t flags, uint16_t file)
{
	ck_assert_uint_lt(S->n, MAXEV);
	S->ev[S->n++] = (struct mt_event){
	    .ts_ns = ++S->t,
	    .pid = pid,
	    .tid = pid,
	    .addr = addr,
	    .size = size,
	    .old_addr = old,
	    .file_id = file,
	    .kind = kind,
	    .flags = flags,
	};
}

static void alloc(uint32_t pid, uint8_t kind, uint64_t addr, uint64_t size)
{
	ev(pid, kind, addr, size, 0, 0, 1);
}

static void mfree(uint32_t pid, uint64_t addr)
{
	ev(pid, MT_K_FREE, addr, 0, 0, 0, 1);
}

static void re(uint32_t pid, uint64_t old, uint64_t addr, uint64_t size)
{
	ev(pid, MT_K_REALLOC, addr, size, old, 0, 1);
}

static char *const argv_ls[] = {"ls", "-l", "it's here", NULL};

/* A handoff record of process 100: flags for MT_HANDOFF_AT, the file id for the others. */
static void write_handoff(struct mt_artifact_writer *w, uint8_t what, uint16_t arg,
			  const char *text)
{
	struct mt_artifact_handoff h = {.pid = 100, .what = what};

	if (what == MT_HANDOFF_AT)
		h.flags = (uint8_t)arg;
	else
		h.file_id = arg;
	snprintf(h.text, sizeof(h.text), "%s", text);
	ck_assert_int_eq(mt_artifact_write_handoff(w, &h), 0);
}

/*
 * Stack id: malloc, a function of its own, then the caller they all share, all in file 50, which
 * no record describes: the frames are named by their offsets ("0x...").
 */
static void write_stack(struct mt_artifact_writer *w, uint32_t id)
{
	struct mt_artifact_stack st = {.id = id, .stop = 0, .n = 3};

	st.frames[0] = MT_FRAME(50, 0x10);
	st.frames[1] = MT_FRAME(50, 0x100000 + id);
	st.frames[2] = MT_FRAME(50, 0x9000);
	ck_assert_int_eq(mt_artifact_write_stack(w, &st), 0);
}

/* Write S with two processes (100, root; 200, its child) and two files (1 glibc, 2 jemalloc). */
static char *write_script(void)
{
	struct mt_artifact_header h = {
	    .start_time_ns = 1700000000ULL * 1000000000ULL,
	    .start_mono_ns = 1000,
	    .watcher = "tracepoint",
	    .argc = 3,
	    .argv = argv_ls,
	};
	struct mt_artifact_process root = {.pid = 100, .parent = 0};
	struct mt_artifact_process child = {.pid = 200, .parent = 100};
	struct mt_artifact_file libc = {.file_id = 1, .family = MT_FAM_GLIBC, .probes = 11};
	struct mt_artifact_file je = {.file_id = 2, .family = MT_FAM_JEMALLOC, .probes = 7};
	struct mt_artifact_writer *w;
	char *path = mt_tmpfile();

	strcpy(root.exe, "/usr/bin/ls");
	if (S->handoff)
		strcpy(root.position, "0");
	strcpy(child.exe, "/usr/bin/child");
	strcpy(libc.path, "/lib/x86_64-linux-gnu/libc.so.6");
	strcpy(je.path, "/usr/lib/libjemalloc.so.2");
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &libc), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &je), 0);
	if (S->frames_path) {
		struct mt_artifact_file frames = {.file_id = 50, .family = MT_FAM_NONE};

		snprintf(frames.path, sizeof(frames.path), "%s", S->frames_path);
		ck_assert_int_eq(mt_artifact_write_file(w, &frames), 0);
	}
	for (uint32_t id = 1; id <= S->stacks; id++)
		write_stack(w, id);
	if (S->no_footer) {
		struct stat st;

		/*
		 * A killed run: the events end the file, the last one cut in half, no footer. An
		 * event like the last ones here (tag, a one-byte time, address and size delta)
		 * takes 4 bytes in its block (docs/FORMAT.md).
		 */
		ck_assert_int_eq(mt_artifact_write_events(w, S->ev, S->n), 0);
		ck_assert_int_eq(mt_artifact_finish(w, &S->footer), 0);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(truncate(path, st.st_size - 8 - MT_ARTIFACT_FOOTER_SIZE - 2), 0);
		return path;
	}
	ck_assert_int_eq(mt_artifact_write_events(w, S->ev, S->n / 2), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &child), 0);
	if (S->handoff)
		write_handoff(w, MT_HANDOFF_AT, MT_HANDOFF_CHILDREN_UNRECORDED,
			      "right after its exec of /usr/bin/ls");
	ck_assert_int_eq(mt_artifact_write_events(w, S->ev + S->n / 2, S->n - S->n / 2), 0);
	if (S->handoff) {
		write_handoff(w, MT_HANDOFF_LATE_FILE, 2, je.path);
		write_handoff(w, MT_HANDOFF_LATE_FILE, 2, je.path); /* said twice: listed once */
		write_handoff(w, 99, 0, "a kind of record from a later memtrack");
	}
	child.exited = true;
	child.exit_status = 9; /* killed by SIGKILL */
	root.exited = true;
	root.exit_status = 1 << 8;
	ck_assert_int_eq(mt_artifact_write_process(w, &child), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &S->footer), 0);
	return path;
}

static struct mt_report *load(void)
{
	char *path = write_script();
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	int ret = mt_report_load_with(path, MT_REPORT_CELLS, &rep, err, sizeof(err));

	ck_assert_msg(ret == 0, "load: %s", err);
	unlink(path);
	free(path);
	return rep;
}

static const struct mt_report_process *proc(const struct mt_report *rep, uint32_t pid)
{
	for (size_t i = 0; i < rep->n_processes; i++)
		if (rep->processes[i].pid == pid)
			return &rep->processes[i];
	ck_abort_msg("no process %u", pid);
	return NULL;
}

static const struct mt_report_file *file(const struct mt_report *rep, uint16_t id)
{
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].file_id == id)
			return &rep->files[i];
	ck_abort_msg("no file %u", id);
	return NULL;
}

#define T_EQ(t, a, f, r, b, pk, lb, ly)                                                            \
	do {                                                                                       \
		ck_assert_uint_eq((t)->allocations, a);                                            \
		ck_assert_uint_eq((t)->frees, f);                                                  \
		ck_assert_uint_eq((t)->reallocs, r);                                               \
		ck_assert_uint_eq((t)->bytes_allocated, b);                                        \
		ck_assert_uint_eq((t)->peak_bytes, pk);                                            \
		ck_assert_uint_eq((t)->live_blocks, lb);                                           \
		ck_assert_uint_eq((t)->live_bytes, ly);                                            \
	} while (0)

/* ---- counting ------------------------------------------------------------------------------- */

START_TEST(malloc_free_pairs)
{
	struct mt_report *rep;
	int i;

	for (i = 0; i < 10; i++)
		alloc(100, MT_K_MALLOC, 0x1000 + (uint64_t)i * 0x100, 100);
	for (i = 0; i < 10; i++)
		mfree(100, 0x1000 + (uint64_t)i * 0x100);
	rep = load();
	T_EQ(&rep->totals, 10, 10, 0, 1000, 1000, 0, 0);
	ck_assert_uint_eq(rep->totals.failed, 0);
	ck_assert_uint_eq(rep->events, 20);
	ck_assert(!rep->truncated);
	mt_report_free(rep);
}
END_TEST

/*
 * Blocks that do not pack in the replay's table (16 MiB and more; a space's ninth 4 GiB range)
 * are found again, freed and released like the rest, and a block of one range is not taken for
 * the block at the same low bits of another.
 */
START_TEST(blocks_far_apart_and_large)
{
	struct mt_report *rep;
	uint64_t big = 32ull << 20;

	for (uint64_t r = 1; r <= 12; r++) {
		alloc(100, MT_K_MALLOC, r << 32 | 0x1000, 100);
		alloc(100, MT_K_MALLOC, r << 32 | 0x2000, big);
	}
	/* The same low bits as range 3's block, in a range never used: nothing to free there. */
	mfree(100, 40ull << 32 | 0x1000);
	for (uint64_t r = 1; r <= 12; r += 2) {
		mfree(100, r << 32 | 0x1000);
		mfree(100, r << 32 | 0x2000);
	}
	rep = load();
	ck_assert_uint_eq(rep->totals.allocations, 24);
	ck_assert_uint_eq(rep->totals.frees, 12);
	ck_assert_uint_eq(rep->totals.unmatched_frees, 1);
	ck_assert_uint_eq(rep->totals.live_blocks, 12);
	ck_assert_uint_eq(rep->totals.live_bytes, 6 * (100 + big));
	ck_assert_uint_eq(rep->totals.peak_bytes, 12 * (100 + big));
	mt_report_free(rep);
}
END_TEST

/* Blocks of one size are the largest in the order of their addresses, whatever the replay's. */
START_TEST(largest_alike_by_address)
{
	struct mt_report *rep;

	for (uint64_t i = 0; i < 30; i++)
		alloc(100, MT_K_MALLOC, 0x5000 + ((i * 7) % 30) * 0x100, 64);
	rep = load();
	ck_assert_uint_eq(rep->n_largest, MT_REPORT_LARGEST);
	for (size_t i = 0; i < rep->n_largest; i++)
		ck_assert_uint_eq(rep->largest[i].addr, 0x5000 + i * 0x100);
	mt_report_free(rep);
}
END_TEST

/* The heap the C library holds for this process, mapped blocks included. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * The replay's live blocks take at most 12 bytes each (docs/PERFORMANCE.md, "Memory at scale"):
 * 190,000 of them, just below a doubling of the table (the worst case is twice as much).
 */
START_TEST(live_blocks_within_12_bytes)
{
	const size_t n = 190000;
	struct mt_images *im = mt_images_new();
	size_t before;
	enum mt_effect eff;

	ck_assert_ptr_nonnull(im);
	ck_assert_int_ge(mt_images_running(im, 100), 0);
	before = heap_in_use();
	for (size_t i = 0; i < n; i++) {
		struct mt_event e = {.ts_ns = i + 1,
				     .pid = 100,
				     .tid = 100,
				     .addr = 0x555555000000ull + i * 48,
				     .size = 16 + i % 32,
				     .file_id = 1,
				     .kind = MT_K_MALLOC};

		ck_assert_int_eq(mt_images_event(im, &e, &eff), 0);
	}
	ck_assert_uint_le(heap_in_use() - before, 12 * n);
	mt_images_free(im);
}
END_TEST

static void replay(struct mt_images *im, uint8_t kind, uint64_t addr, uint64_t size,
		   enum mt_effect want)
{
	struct mt_event e = {.pid = 100, .tid = 100, .addr = addr, .size = size, .kind = kind};
	enum mt_effect eff;

	ck_assert_int_eq(mt_images_event(im, &e, &eff), 0);
	ck_assert_int_eq(eff, want);
}

/*
 * The table grows by half or less and runs to 85 % (docs/PERFORMANCE.md, "Memory at scale"):
 * past every count from 90,000 to 230,000 the blocks take at most 14.5 bytes each, where a
 * table doubling at 75 % took 21.3 just past 98,304. Every block is found again after the
 * growths, in three 4 GiB ranges whose low addresses meet.
 */
START_TEST(live_blocks_within_14_bytes_at_any_count)
{
	const size_t n = 230000;
	struct mt_images *im = mt_images_new();
	const struct mt_image *g;
	size_t before;

	ck_assert_ptr_nonnull(im);
	ck_assert_int_ge(mt_images_running(im, 100), 0);
	before = heap_in_use();
	for (size_t i = 1; i <= n; i++) {
		replay(im, MT_K_MALLOC, ((i % 3 + 1) << 32) + 0x1000 + i / 3 * 32, 16 + i % 4 * 16,
		       MT_EFF_ALLOC);
		if (i >= 90000 && i % 1000 == 0)
			ck_assert_uint_le((heap_in_use() - before) * 2, 29 * i);
	}
	for (size_t i = n; i >= 1; i--)
		replay(im, MT_K_FREE, ((i % 3 + 1) << 32) + 0x1000 + i / 3 * 32, 0, MT_EFF_FREE);
	g = mt_images_get(im, 0);
	ck_assert_uint_eq(g->c.live_blocks, 0);
	ck_assert_uint_eq(g->c.frees, n);
	mt_images_free(im);
}
END_TEST

/*
 * A block's size is in its class: 200,000 blocks of sizes of their own, one after the other,
 * leave no class behind them (a buffer grown a byte a call), and blocks kept meanwhile keep
 * theirs: each is freed whole at the end.
 */
START_TEST(block_classes_go_with_their_blocks)
{
	const size_t n = 200000, kept = 1000;
	struct mt_images *im = mt_images_new();
	const struct mt_image *g;
	size_t before;

	ck_assert_ptr_nonnull(im);
	ck_assert_int_ge(mt_images_running(im, 100), 0);
	for (size_t k = 0; k < kept; k++)
		replay(im, MT_K_MALLOC, 0x10000 + k * 0x1000, 100000 + k, MT_EFF_ALLOC);
	before = heap_in_use();
	for (size_t i = 0; i < n; i++) {
		replay(im, MT_K_MALLOC, 0x7f0000001000ull, 1 + i, MT_EFF_ALLOC);
		replay(im, MT_K_FREE, 0x7f0000001000ull, 0, MT_EFF_FREE);
	}
	ck_assert_uint_le(heap_in_use() - before, 64 << 10);
	for (size_t k = 0; k < kept; k++)
		replay(im, MT_K_FREE, 0x10000 + k * 0x1000, 0, MT_EFF_FREE);
	g = mt_images_get(im, 0);
	ck_assert_uint_eq(g->c.live_blocks, 0);
	ck_assert_uint_eq(g->c.live_bytes, 0);
	ck_assert_uint_eq(g->c.frees, n + kept);
	ck_assert_uint_eq(g->c.peak_bytes, kept * 100000 + kept * (kept - 1) / 2 + n);
	mt_images_free(im);
}
END_TEST

/* What the live hook was told: the changes of each kind, and the blocks of the summed ones. */
struct told {
	size_t alone, summed, apart;
	uint64_t summed_blocks, summed_bytes, tree_live;
};

static void count_told(void *arg, const struct mt_live_change *c)
{
	struct told *t = arg;

	if (c->summed) {
		t->summed++;
		t->summed_blocks += c->blocks;
		t->summed_bytes += c->blocks * c->size;
		t->tree_live = c->tree_live;
	} else if (c->counted_apart) {
		t->apart++;
	} else {
		t->alone++;
		ck_assert_uint_eq(c->blocks, 1);
	}
}

/*
 * An exit releases each class of its blocks (image, stack, size) in one change, each block told
 * alone besides (for the largest never freed): 3,000 blocks of 3 sizes make 3 changes of the
 * heap's lines, not 3,000.
 */
START_TEST(an_exit_releases_a_class_in_one_change)
{
	const size_t n = 3000;
	struct mt_images *im = mt_images_new();
	struct told t = {0};
	enum mt_effect eff;

	ck_assert_ptr_nonnull(im);
	ck_assert_int_ge(mt_images_running(im, 100), 0);
	mt_images_on_live(im, count_told, &t);
	for (size_t i = 0; i < n; i++)
		replay(im, MT_K_MALLOC, 0x10000 + i * 0x100, 16 << (i % 3), MT_EFF_ALLOC);
	ck_assert_uint_eq(t.alone, n);
	ck_assert_int_eq(
	    mt_images_event(im, &(struct mt_event){.pid = 100, .tid = 100, .kind = MT_K_EXIT},
			    &eff),
	    0);
	ck_assert_uint_eq(t.summed, 3);
	ck_assert_uint_eq(t.summed_blocks, n);
	ck_assert_uint_eq(t.summed_bytes, n / 3 * (16 + 32 + 64));
	ck_assert_uint_eq(t.apart, n);
	ck_assert_uint_eq(t.alone, n);
	ck_assert_uint_eq(t.tree_live, 0);
	ck_assert_uint_eq(mt_images_get(im, 0)->c.live_blocks, 0);
	mt_images_free(im);
}
END_TEST

START_TEST(calloc_and_aligned_kinds)
{
	static const uint8_t kinds[] = {
	    MT_K_MALLOC,      MT_K_CALLOC,	   MT_K_ALIGNED_ALLOC,
	    MT_K_MEMALIGN,    MT_K_POSIX_MEMALIGN, MT_K_VALLOC,
	    MT_K_PVALLOC,     MT_K_MALLOCX,	   MT_K_NEW,
	    MT_K_NEW_ALIGNED, MT_K_MALLOC_ALIGNED, MT_K_CALLOC_ALIGNED,
	};
	struct mt_report *rep;
	uint64_t i, bytes = 0;

	/* calloc(3, 40) arrives as size 120: the BPF side multiplies. */
	for (i = 0; i < sizeof(kinds); i++) {
		alloc(100, kinds[i], 0x10000 + i * 0x1000, 120 + i);
		bytes += 120 + i;
	}
	rep = load();
	T_EQ(&rep->totals, 12, 0, 0, bytes, bytes, 12, bytes);
	mt_report_free(rep);
}
END_TEST

/*
 * The allocations flagged MT_EV_ZEROED are counted, per file and in the totals: a zeroing
 * realloc is a realloc, a failed call none; an unflagged calloc kind (mi_mallocn) is not zeroed.
 */
START_TEST(zeroed_allocations)
{
	struct mt_report *rep;

	ev(100, MT_K_CALLOC, 0x10, 120, 0, MT_EV_ZEROED, 1);
	ev(100, MT_K_MALLOC, 0x20, 64, 0, MT_EV_ZEROED, 2);
	ev(100, MT_K_CALLOC, 0x30, 120, 0, 0, 1);
	ev(100, MT_K_REALLOC, 0x40, 200, 0x10, MT_EV_ZEROED, 1);
	ev(100, MT_K_CALLOC, 0, 120, 0, MT_EV_FAILED, 1);
	rep = load();
	ck_assert_uint_eq(rep->totals.allocations, 3);
	ck_assert_uint_eq(rep->totals.zeroed_allocations, 2);
	ck_assert_uint_eq(file(rep, 1)->t.zeroed_allocations, 1);
	ck_assert_uint_eq(file(rep, 2)->t.zeroed_allocations, 1);
	mt_report_free(rep);
}
END_TEST

START_TEST(realloc_chain)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0xa0, 10); /* live 10 */
	re(100, 0xa0, 0xb0, 20);	   /* 20 */
	re(100, 0xb0, 0xc0, 30);	   /* 30 */
	re(100, 0, 0xd0, 50);		   /* realloc(NULL, 50): 80, a realloc, not an allocation */
	re(100, 0xc0, 0, 0);		   /* realloc(p, 0) -> NULL frees p: 50 */
	re(100, 0xd0, 0xd0, 70);	   /* grows in place: 70 */
	ev(100, MT_K_REALLOCARRAY, 0xe0, 12, 0xd0, 0, 1); /* 12 */
	mfree(100, 0xe0);				  /* 0 */
	rep = load();
	T_EQ(&rep->totals, 1, 1, 6, 10 + 20 + 30 + 50 + 0 + 70 + 12, 80, 0, 0);
	mt_report_free(rep);
}
END_TEST

/* The last event made so far carries stack id. */
static void from(uint32_t stack_id)
{
	S->ev[S->n - 1].stack_id = stack_id;
}

static const struct mt_site *site_of(const struct mt_report *rep, uint32_t id)
{
	for (size_t i = 0; i < mt_sites_count(rep->sites); i++)
		if (mt_sites_get(rep->sites, i)->stack_id == id)
			return mt_sites_get(rep->sites, i);
	ck_abort_msg("no site %u", id);
	return NULL;
}

/*
 * Sites (--stacks): calls and bytes per stack, and its blocks never freed by the program; a
 * realloc's old block leaves the site that made it, a failed realloc gives it back, an exit
 * releases nothing (its blocks stay live at exit).
 */
START_TEST(sites_count_calls_bytes_and_live)
{
	struct mt_report *rep;
	const struct mt_site *s7, *s9;

	alloc(100, MT_K_MALLOC, 0xa0, 10);
	from(7);
	alloc(100, MT_K_MALLOC, 0xb0, 20);
	from(7);
	alloc(100, MT_K_MALLOC, 0xc0, 40);
	from(7);
	mfree(100, 0xa0);
	re(100, 0xb0, 0xd0, 50); /* no entry record: the old block leaves at the return */
	from(9);
	ev(100, MT_K_REALLOC_RELEASE, 0xc0, 0, 0, 0, 1);
	ev(100, MT_K_REALLOC, 0, 99, 0xc0, MT_EV_FAILED, 1); /* gives 0xc0 back to site 7 */
	from(9);
	ev(100, MT_K_MALLOC, 0, 5, 0, MT_EV_FAILED, 1); /* failed: counted nowhere */
	from(9);
	alloc(100, MT_K_MALLOC, 0xe0, 8); /* no stack */
	rep = load();
	ck_assert_uint_eq(mt_sites_count(rep->sites), 2);
	s7 = site_of(rep, 7);
	s9 = site_of(rep, 9);
	ck_assert_uint_eq(s7->allocations, 3);
	ck_assert_uint_eq(s7->bytes, 70);
	ck_assert_uint_eq(s7->live_blocks, 1); /* 0xc0 */
	ck_assert_uint_eq(s7->live_bytes, 40);
	ck_assert_uint_eq(s9->allocations, 1);
	ck_assert_uint_eq(s9->bytes, 50);
	ck_assert_uint_eq(s9->live_blocks, 1); /* 0xd0 */
	ck_assert_uint_eq(s9->live_bytes, 50);
	/* No stack record came: no frames, and the stack is not called complete. */
	ck_assert_uint_eq(s7->n_frames, 0);
	ck_assert_uint_ne(s7->stop, 0);
	mt_report_free(rep);
}
END_TEST

START_TEST(jemalloc_kinds)
{
	struct mt_report *rep;

	ev(100, MT_K_MALLOCX, 0x100, 64, 0, 0, 2);
	ev(100, MT_K_RALLOCX, 0x200, 128, 0x100, 0, 2); /* 128 */
	ev(100, MT_K_XALLOCX, 0x200, 256, 0x200, 0, 2); /* in place: 256 */
	ev(100, MT_K_MALLOCX, 0x300, 8, 0, 0, 2);	/* 264 */
	ev(100, MT_K_SDALLOCX, 0x200, 0, 0, 0, 2);	/* 8 */
	ev(100, MT_K_DALLOCX, 0x300, 0, 0, 0, 2);	/* 0 */
	rep = load();
	T_EQ(&rep->totals, 2, 2, 2, 64 + 128 + 256 + 8, 264, 0, 0);
	T_EQ(&file(rep, 2)->t, 2, 2, 2, 64 + 128 + 256 + 8, 0, 0, 0);
	ck_assert_uint_eq(rep->families[MT_FAM_JEMALLOC].allocations, 2);
	ck_assert_uint_eq(rep->families[MT_FAM_GLIBC].allocations, 0);
	mt_report_free(rep);
}
END_TEST

START_TEST(every_free_kind)
{
	static const uint8_t kinds[] = {MT_K_FREE,     MT_K_FREE_SIZED, MT_K_FREE_ALIGNED_SIZED,
					MT_K_SDALLOCX, MT_K_DALLOCX,	MT_K_DELETE};
	struct mt_report *rep;
	uint64_t i;

	for (i = 0; i < sizeof(kinds); i++) {
		alloc(100, MT_K_MALLOC, 0x1000 + i, 10);
		ev(100, kinds[i], 0x1000 + i, 0, 0, 0, 1);
	}
	rep = load();
	T_EQ(&rep->totals, 6, 6, 0, 60, 10, 0, 0);
	mt_report_free(rep);
}
END_TEST

/* 100 allocated, 60 freed: 40 live, with exact bytes. */
START_TEST(leaks)
{
	struct mt_report *rep;
	uint64_t i, live = 0;

	for (i = 1; i <= 100; i++)
		alloc(100, MT_K_MALLOC, 0x100000 + i * 0x1000, i);
	for (i = 1; i <= 60; i++)
		mfree(100, 0x100000 + i * 0x1000);
	for (i = 61; i <= 100; i++)
		live += i;
	rep = load();
	ck_assert_uint_eq(live, 5050 - 1830);
	T_EQ(&rep->totals, 100, 60, 0, 5050, 5050, 40, live);
	T_EQ(&proc(rep, 100)->t, 100, 60, 0, 5050, 5050, 40, live);
	mt_report_free(rep);
}
END_TEST

/* A fork shares addresses: the same address is two blocks in two processes. */
START_TEST(two_processes_same_addresses)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0xabc0, 10);
	alloc(200, MT_K_MALLOC, 0xabc0, 20);
	mfree(100, 0xabc0);
	alloc(200, MT_K_MALLOC, 0xdef0, 5);
	mfree(200, 0xdef0);
	rep = load();
	T_EQ(&rep->totals, 3, 2, 0, 35, 30, 1, 20);
	T_EQ(&proc(rep, 100)->t, 1, 1, 0, 10, 10, 0, 0);
	T_EQ(&proc(rep, 200)->t, 2, 1, 0, 25, 25, 1, 20);
	ck_assert_uint_eq(proc(rep, 200)->parent, 100);
	mt_report_free(rep);
}
END_TEST

START_TEST(failed_calls)
{
	struct mt_report *rep;

	ev(100, MT_K_MALLOC, 0, 1ULL << 40, 0, MT_EV_FAILED, 1);
	ev(100, MT_K_POSIX_MEMALIGN, 0, 64, 0, MT_EV_FAILED, 1);
	alloc(100, MT_K_MALLOC, 0x500, 100);
	/* realloc that fails leaves the old block live */
	ev(100, MT_K_REALLOC, 0, 1ULL << 40, 0x500, MT_EV_FAILED, 1);
	rep = load();
	T_EQ(&rep->totals, 1, 0, 0, 100, 100, 1, 100);
	ck_assert_uint_eq(rep->totals.failed, 3);
	mt_report_free(rep);
}
END_TEST

START_TEST(free_null_and_unknown)
{
	struct mt_report *rep;

	mfree(100, 0);			     /* free(NULL): not a free */
	ev(100, MT_K_DELETE, 0, 0, 0, 0, 1); /* delete nullptr: neither */
	mfree(100, 0x7777); /* allocated before tracking: unmatched, live stays 0 */
	alloc(100, MT_K_MALLOC, 0x100, 8);
	mfree(200, 0x100); /* another process's address: not this block, unmatched */
	rep = load();
	T_EQ(&rep->totals, 1, 0, 0, 8, 8, 1, 8);
	ck_assert_uint_eq(rep->totals.unmatched_frees, 2);
	T_EQ(&proc(rep, 200)->t, 0, 0, 0, 0, 0, 0, 0);
	ck_assert_uint_eq(proc(rep, 200)->t.unmatched_frees, 1);
	mt_report_free(rep);
}
END_TEST

/* malloc(0) may legitimately return NULL: counted, nothing live. */
/* An event of thread tid of pid, for the stream kinds and threads of one process. */
static void tev(uint32_t pid, uint32_t tid, uint8_t kind, uint64_t addr, uint64_t size,
		uint64_t old, uint8_t flags)
{
	ev(pid, kind, addr, size, old, flags, 1);
	S->ev[S->n - 1].tid = tid;
}

static const struct mt_image *image(const struct mt_report *rep, size_t i)
{
	ck_assert_uint_lt(i, rep->n_images);
	return &rep->images[i];
}

/* The image of pid after exec execs (the script's records add pid 200 midway). */
static const struct mt_image *image_of(const struct mt_report *rep, uint32_t pid, uint32_t exec)
{
	for (size_t i = 0; i < rep->n_images; i++)
		if (rep->images[i].pid == pid && rep->images[i].exec_seq == exec)
			return &rep->images[i];
	ck_abort_msg("no image of %u after %u execs", pid, exec);
	return NULL;
}

/* An exec releases the image's blocks; the next image starts empty, at the same addresses. */
START_TEST(exec_and_exit_release_images)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0x10, 8);
	alloc(100, MT_K_MALLOC, 0x20, 4);
	mfree(100, 0x20);
	tev(100, 100, MT_K_EXEC, 0, 0, 0, 0);
	mfree(100, 0x10); /* the old image's block is gone: unmatched */
	alloc(100, MT_K_MALLOC, 0x10, 16);
	tev(100, 100, MT_K_EXIT, 0, 3 << 8, 0, 0);
	rep = load();
	ck_assert_uint_eq(rep->n_images, 3); /* and the script's record of pid 200 */
	ck_assert_int_eq(image_of(rep, 100, 0)->end, MT_IMAGE_EXEC);
	ck_assert_uint_eq(image_of(rep, 100, 0)->released.blocks, 1);
	ck_assert_uint_eq(image_of(rep, 100, 0)->released.bytes, 8);
	ck_assert_int_eq(image_of(rep, 100, 1)->end, MT_IMAGE_EXIT);
	ck_assert_uint_eq(image_of(rep, 100, 1)->released.bytes, 16);
	ck_assert_uint_eq(image_of(rep, 100, 1)->c.unmatched_frees, 1);
	/* The tree: every block never freed, peak as live at once. */
	T_EQ(&rep->totals, 3, 1, 0, 28, 16, 2, 24);
	ck_assert_uint_eq(proc(rep, 100)->t.live_blocks, 2);
	mt_report_free(rep);
}
END_TEST

/* A vfork child mallocs in its parent's space: the parent frees the block. */
START_TEST(vfork_child_shares_parent_space)
{
	struct mt_report *rep;

	tev(100, 100, MT_K_FORK, 200, MT_FORK_SHARED_MM, 0, 0);
	alloc(200, MT_K_MALLOC, 0x50, 512);
	tev(200, 200, MT_K_EXEC, 0, 0, 0, 0);
	alloc(200, MT_K_MALLOC, 0x50, 64); /* its own space now: another block */
	mfree(100, 0x50);
	tev(200, 200, MT_K_EXIT, 0, 0, 0, 0);
	tev(100, 100, MT_K_EXIT, 0, 0, 0, 0);
	rep = load();
	ck_assert_uint_eq(rep->n_images, 3);
	ck_assert(image(rep, 1)->shared_memory);
	ck_assert_int_eq(image(rep, 1)->parent, 0);
	ck_assert_uint_eq(image(rep, 1)->released.blocks, 0); /* its exec releases nothing */
	ck_assert(!image(rep, 2)->shared_memory);
	ck_assert_uint_eq(image(rep, 2)->released.blocks, 1);
	ck_assert_uint_eq(image(rep, 0)->c.frees, 1);
	ck_assert_uint_eq(image(rep, 0)->c.unmatched_frees, 0);
	ck_assert_uint_eq(rep->totals.live_blocks, 1);
	mt_report_free(rep);
}
END_TEST

/* A reused pid: two images, counted apart, each from its fork. */
START_TEST(reused_pid_is_another_image)
{
	struct mt_report *rep;

	tev(100, 100, MT_K_FORK, 200, 0, 0, 0);
	alloc(200, MT_K_MALLOC, 0x10, 5);
	tev(200, 200, MT_K_EXIT, 0, 0, 0, 0);
	tev(100, 100, MT_K_FORK, 200, 0, 0, 0);
	mfree(200, 0x10); /* not the first one's block */
	alloc(200, MT_K_MALLOC, 0x10, 7);
	tev(200, 200, MT_K_EXIT, 0, 0, 0, 0);
	rep = load();
	ck_assert_uint_eq(rep->n_images, 3);
	ck_assert_uint_eq(image(rep, 1)->released.bytes, 5);
	ck_assert_uint_eq(image(rep, 2)->released.bytes, 7);
	ck_assert_uint_eq(image(rep, 2)->c.unmatched_frees, 1);
	ck_assert_uint_eq(rep->n_processes, 3);
	mt_report_free(rep);
}
END_TEST

/*
 * Of the reallocs, those of a NULL block and those to 0 bytes of a block (docs/VALGRIND.md), per
 * image, process, file, family and tree; a failed one counts in failed only, one of a block not
 * live still counts.
 */
START_TEST(realloc_null_and_zero_apart)
{
	struct mt_report *rep;
	const struct mt_report_totals *t;

	alloc(100, MT_K_MALLOC, 0xa0, 10);
	re(100, 0, 0xb0, 20);				  /* of NULL */
	ev(100, MT_K_REALLOCARRAY, 0xc0, 30, 0, 0, 2);	  /* of NULL, in file 2 */
	re(100, 0, 0xd0, 0);				  /* realloc(NULL, 0): of NULL */
	re(100, 0xa0, 0, 0);				  /* to 0 bytes: frees 0xa0 */
	re(100, 0xb0, 0xb0, 25);			  /* neither */
	ev(100, MT_K_REALLOC, 0, 40, 0, MT_EV_FAILED, 1); /* failed */
	re(200, 0x999, 0, 0);				  /* to 0 bytes, of no live block */
	rep = load();
	t = &rep->totals;
	ck_assert_uint_eq(t->reallocs, 6);
	ck_assert_uint_eq(t->realloc_null, 3);
	ck_assert_uint_eq(t->realloc_zero, 2);
	ck_assert_uint_eq(t->failed, 1);
	ck_assert_uint_eq(image_of(rep, 100, 0)->c.realloc_null, 3);
	ck_assert_uint_eq(image_of(rep, 100, 0)->c.realloc_zero, 1);
	ck_assert_uint_eq(image_of(rep, 200, 0)->c.realloc_null, 0);
	ck_assert_uint_eq(image_of(rep, 200, 0)->c.realloc_zero, 1);
	ck_assert_uint_eq(proc(rep, 100)->t.realloc_null, 3);
	ck_assert_uint_eq(proc(rep, 100)->t.realloc_zero, 1);
	ck_assert_uint_eq(proc(rep, 200)->t.realloc_zero, 1);
	ck_assert_uint_eq(file(rep, 1)->t.realloc_null, 2);
	ck_assert_uint_eq(file(rep, 2)->t.realloc_null, 1);
	ck_assert_uint_eq(file(rep, 1)->t.realloc_zero, 2);
	ck_assert_uint_eq(rep->families[MT_FAM_JEMALLOC].realloc_null, 1);
	ck_assert_uint_eq(rep->families[MT_FAM_GLIBC].realloc_zero, 2);
	mt_report_free(rep);
}
END_TEST

/*
 * A realloc releases its block at its entry: another thread that gets the address before the
 * realloc returns has a block of its own, which the realloc's return does not erase. A failed
 * realloc gives its block back.
 */
START_TEST(realloc_entry_release_across_threads)
{
	struct mt_report *rep;

	tev(100, 100, MT_K_MALLOC, 0xa0, 10, 0, 0);
	tev(100, 100, MT_K_REALLOC_RELEASE, 0xa0, 0, 0, 0);
	tev(100, 101, MT_K_MALLOC, 0xa0, 20, 0, 0);
	tev(100, 100, MT_K_REALLOC, 0xb0, 30, 0xa0, 0);
	tev(100, 100, MT_K_REALLOC_RELEASE, 0xb0, 0, 0, 0);
	tev(100, 100, MT_K_REALLOC, 0, 1000, 0xb0, MT_EV_FAILED);
	rep = load();
	T_EQ(&rep->totals, 2, 0, 1, 60, 50, 2, 50);
	ck_assert_uint_eq(rep->totals.failed, 1);
	ck_assert_uint_eq(rep->totals.unmatched_frees, 0);
	mt_report_free(rep);
}
END_TEST

/*
 * Temporary allocations, heaptrack's rule: a release of the block its image allocated last,
 * nothing allocated or released by the image between them; a realloc releases its old block
 * (at its entry) and allocates its new one; failed calls and unmatched frees change nothing;
 * per image, and per site by the freed block's stack.
 */
START_TEST(temporary_allocations)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0xa0, 10); /* freed at once: temporary */
	from(7);
	mfree(100, 0xa0);
	alloc(100, MT_K_MALLOC, 0xa0, 10); /* not the last: 0xb0 came after */
	from(7);
	alloc(100, MT_K_MALLOC, 0xb0, 20);
	from(9);
	mfree(100, 0xa0);
	mfree(100, 0xb0); /* the last allocation, but a release came between */
	alloc(100, MT_K_MALLOC, 0xc0, 30);
	from(9);
	ev(100, MT_K_MALLOC, 0, 5, 0, MT_EV_FAILED, 1); /* failed: separates nothing */
	mfree(100, 0xdead);				/* unmatched: separates nothing */
	tev(100, 100, MT_K_REALLOC_RELEASE, 0xc0, 0, 0, 0);
	tev(100, 101, MT_K_MALLOC, 0xc0, 1, 0, 0);	/* another thread takes the address */
	tev(100, 100, MT_K_REALLOC, 0xd0, 60, 0xc0, 0); /* 0xc0 was last at the entry */
	mfree(100, 0xd0); /* the realloc's new block, allocated at its return: temporary */
	alloc(200, MT_K_MALLOC, 0xe0, 8); /* another image has its own last */
	alloc(100, MT_K_MALLOC, 0xf0, 8);
	mfree(200, 0xe0);
	tev(100, 100, MT_K_REALLOC_RELEASE, 0xf0, 0, 0, 0);
	tev(100, 100, MT_K_REALLOC, 0, 1000, 0xf0, MT_EV_FAILED); /* failed: not a release */
	rep = load();
	ck_assert_uint_eq(proc(rep, 100)->t.temporary, 3);
	ck_assert_uint_eq(proc(rep, 200)->t.temporary, 1);
	ck_assert_uint_eq(rep->totals.temporary, 4);
	ck_assert_uint_eq(site_of(rep, 7)->temporary, 1);
	ck_assert_uint_eq(site_of(rep, 9)->temporary, 1);
	mt_report_free(rep);
}
END_TEST

START_TEST(zero_sized)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0, 0);
	alloc(100, MT_K_MALLOC, 0x10, 0);
	rep = load();
	T_EQ(&rep->totals, 2, 0, 0, 0, 0, 1, 0);
	ck_assert_uint_eq(rep->histogram[0], 2);
	mt_report_free(rep);
}
END_TEST

/* The same address handed out twice without a free we saw: the later block replaces it. */
START_TEST(double_allocation)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0x100, 50);
	alloc(100, MT_K_MALLOC, 0x100, 30);
	rep = load();
	T_EQ(&rep->totals, 2, 0, 0, 80, 50, 1, 30);
	mt_report_free(rep);
}
END_TEST

START_TEST(peak)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 1 << 12, 100); /* 100 */
	alloc(100, MT_K_MALLOC, 2 << 12, 200); /* 300 */
	mfree(100, 1 << 12);		       /* 200 */
	alloc(100, MT_K_MALLOC, 3 << 12, 50);  /* 250 */
	alloc(200, MT_K_MALLOC, 4 << 12, 300); /* 550: tree peak, 200's peak 300 */
	mfree(200, 4 << 12);		       /* 250 */
	alloc(100, MT_K_MALLOC, 5 << 12, 260); /* 510: 100's peak 510 */
	mfree(100, 2 << 12);
	mfree(100, 3 << 12);
	mfree(100, 5 << 12);
	rep = load();
	T_EQ(&rep->totals, 5, 5, 0, 910, 550, 0, 0);
	ck_assert_uint_eq(proc(rep, 100)->t.peak_bytes, 510);
	ck_assert_uint_eq(proc(rep, 200)->t.peak_bytes, 300);
	mt_report_free(rep);
}
END_TEST

/* The tree's heap now, checked: bytes and blocks. */
static void live_now_is(const struct mt_report *rep, uint64_t bytes, uint64_t blocks)
{
	uint64_t n, b = mt_report_live_now(rep, &n);

	ck_assert_uint_eq(b, bytes);
	ck_assert_uint_eq(n, blocks);
}

/*
 * An artifact counted in steps as its writer appends (mt_report_follow_*): each read counts what
 * was flushed since, its figures those so far, in progress; once the writer has finished, the
 * report is the one a whole reading makes.
 */
START_TEST(follow_counts_as_a_whole_reading_does)
{
	struct mt_artifact_header h = {.start_mono_ns = 1000, .argc = 3, .argv = argv_ls};
	struct mt_artifact_process root = {.pid = 100};
	struct mt_artifact_file libc = {.file_id = 1, .family = MT_FAM_GLIBC, .probes = 11};
	char *path = mt_tmpfile(), err[MT_ARTIFACT_ERRLEN];
	struct mt_report *now, *whole, *loaded;
	struct mt_artifact_writer *w;
	struct mt_report_follow *f;

	alloc(100, MT_K_MALLOC, 1 << 12, 100);
	alloc(100, MT_K_MALLOC, 2 << 12, 200); /* live 300, the peak */
	mfree(100, 1 << 12);
	alloc(100, MT_K_MALLOC, 3 << 12, 50); /* live 250 */
	strcpy(root.exe, "/usr/bin/ls");
	strcpy(libc.path, "/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &libc), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, S->ev, 2), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	ck_assert_int_eq(mt_report_follow_open(path, 0, &f, err, sizeof(err)), 0);
	ck_assert(mt_report_follow_writing(f));
	ck_assert_int_eq(mt_report_follow_read(f, 0, err, sizeof(err)), 1);
	now = mt_report_follow_now(f);
	ck_assert(now->in_progress && !now->truncated && !now->has_footer);
	T_EQ(&now->totals, 2, 0, 0, 300, 300, 2, 300);
	live_now_is(now, 300, 2);
	ck_assert_int_eq(mt_report_follow_read(f, 0, err, sizeof(err)), 1); /* nothing new */
	T_EQ(&mt_report_follow_now(f)->totals, 2, 0, 0, 300, 300, 2, 300);

	ck_assert_int_eq(mt_artifact_write_events(w, S->ev + 2, 2), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	ck_assert_int_eq(mt_report_follow_read(f, 0, err, sizeof(err)), 1);
	T_EQ(&mt_report_follow_now(f)->totals, 3, 1, 0, 350, 300, 2, 250);
	live_now_is(mt_report_follow_now(f), 250, 2);
	ck_assert_ptr_null(mt_report_follow_take(f)); /* not whole yet */

	/* Its exit: its blocks are released, never freed, and the heap holds none now. */
	tev(100, 100, MT_K_EXIT, 0, 0, 0, 0);
	ck_assert_int_eq(mt_artifact_write_events(w, S->ev + 4, 1), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	ck_assert_int_eq(mt_report_follow_read(f, 0, err, sizeof(err)), 1);
	live_now_is(mt_report_follow_now(f), 0, 0);
	root.exited = true;
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &S->footer), 0);
	ck_assert(!mt_report_follow_writing(f));
	ck_assert_int_eq(mt_report_follow_read(f, 0, err, sizeof(err)), 0);
	ck_assert(mt_report_follow_ended(f));
	whole = mt_report_follow_take(f);
	ck_assert_ptr_nonnull(whole);
	mt_report_follow_free(f);
	ck_assert_int_eq(mt_report_load(path, &loaded, err, sizeof(err)), 0);
	ck_assert(whole->has_footer && !whole->in_progress && !whole->truncated);
	T_EQ(&whole->totals, 3, 1, 0, 350, 300, 2, 250);
	T_EQ(&loaded->totals, 3, 1, 0, 350, 300, 2, 250);
	live_now_is(whole, 0, 0);
	ck_assert_uint_eq(whole->events, loaded->events);
	ck_assert_uint_eq(whole->n_processes, loaded->n_processes);
	mt_report_free(whole);
	mt_report_free(loaded);
	unlink(path);
	free(path);
}
END_TEST

/* The last event made so far happened at t ns after the run's start (its header's 1000). */
static void at(uint64_t t)
{
	S->ev[S->n - 1].ts_ns = 1000 + t;
}

/*
 * Two processes, events 1000 ns apart (one timeline bucket each): the tree peaks at 350 bytes
 * when 0x30 (site 7) and 0x20 and 0x40 (site 9) are live; sites' bytes at the peak add up to it.
 */
static void peak_script(void)
{
	alloc(100, MT_K_MALLOC, 0x10, 100); /* 100 */
	from(7);
	at(500);
	alloc(100, MT_K_MALLOC, 0x20, 200); /* 300 */
	from(9);
	at(1500);
	mfree(100, 0x10); /* 200 */
	at(2500);
	alloc(200, MT_K_MALLOC, 0x30, 50); /* 250 */
	from(7);
	at(3500);
	alloc(200, MT_K_MALLOC, 0x40, 100); /* 350: the peak */
	from(9);
	at(4500);
	mfree(200, 0x40); /* 250 */
	at(5500);
	alloc(100, MT_K_MALLOC, 0x50, 10); /* 260 */
	from(7);
	at(6500);
}

START_TEST(sites_at_the_peak)
{
	struct mt_report *rep;

	peak_script();
	rep = load();
	ck_assert_uint_eq(rep->totals.peak_bytes, 350);
	ck_assert_uint_eq(site_of(rep, 7)->peak_blocks, 1);
	ck_assert_uint_eq(site_of(rep, 7)->peak_bytes, 50);
	ck_assert_uint_eq(site_of(rep, 9)->peak_blocks, 2);
	ck_assert_uint_eq(site_of(rep, 9)->peak_bytes, 300);
	/* Leaks are the blocks never freed, at exit: not the same as at the peak. */
	ck_assert_uint_eq(site_of(rep, 7)->live_bytes, 60);
	ck_assert_uint_eq(site_of(rep, 9)->live_bytes, 200);
	/* The blocks never freed, largest first: here all live when the artifact ends. */
	ck_assert_uint_eq(rep->n_largest, 3);
	ck_assert_uint_eq(rep->largest[0].size, 200);
	ck_assert_uint_eq(rep->largest[0].addr, 0x20);
	ck_assert_uint_eq(rep->largest[0].stack_id, 9);
	ck_assert(rep->largest[0].at_end);
	ck_assert_uint_eq(rep->largest[1].size, 50);
	ck_assert_uint_eq(rep->images[rep->largest[1].image].pid, 200);
	ck_assert_uint_eq(rep->largest[2].size, 10);
	mt_report_free(rep);
}
END_TEST

/* The cell of site id in the image of pid (its first), which must exist. */
static struct mt_cell cell_of(const struct mt_report *rep, uint32_t id, uint32_t pid)
{
	for (size_t i = 0; i < mt_cells_count(rep->cells); i++) {
		struct mt_cell c = mt_cells_get(rep->cells, i);

		if (c.stack_id == id && rep->images[c.image].pid == pid)
			return c;
	}
	ck_abort_msg("no cell of site %u in pid %u", id, pid);
}

/*
 * peak_script's sites split by image: site 7 allocated 0x10 and 0x50 in pid 100, 0x30 in pid 200;
 * site 9 0x20 in pid 100, 0x40 in pid 200. At the tree's peak 0x20, 0x30 and 0x40 were live.
 */
START_TEST(cells_per_image)
{
	struct mt_report *rep;
	struct mt_cell c;

	peak_script();
	/* Counted when asked: they cost the replay of every event. */
	{
		char *path = write_script(), err[MT_ARTIFACT_ERRLEN];

		ck_assert_int_eq(mt_report_load(path, &rep, err, sizeof(err)), 0);
		ck_assert_ptr_null(rep->cells);
		mt_report_free(rep);
		unlink(path);
		free(path);
	}
	rep = load();
	ck_assert_uint_eq(mt_cells_count(rep->cells), 4);
	c = cell_of(rep, 7, 100);
	ck_assert_uint_eq(c.count->allocations, 2);
	ck_assert_uint_eq(c.count->bytes, 110);
	ck_assert_uint_eq(c.count->live_bytes, 10);
	ck_assert_uint_eq(c.count->peak_bytes, 0);
	c = cell_of(rep, 7, 200);
	ck_assert_uint_eq(c.count->bytes, 50);
	ck_assert_uint_eq(c.count->live_bytes, 50);
	ck_assert_uint_eq(c.count->peak_bytes, 50);
	c = cell_of(rep, 9, 100);
	ck_assert_uint_eq(c.count->peak_bytes, 200);
	ck_assert_uint_eq(c.count->live_bytes, 200);
	c = cell_of(rep, 9, 200);
	ck_assert_uint_eq(c.count->peak_bytes, 100);
	ck_assert_uint_eq(c.count->live_bytes, 0);
	/* One bucket each of 1,000 ns: 0x10 at 500 ns (bucket 0) and 0x50 at 6,500 ns (bucket 6).
	 */
	c = cell_of(rep, 7, 100);
	ck_assert_uint_eq(c.n_buckets, 2);
	ck_assert_uint_eq(c.buckets[0].bucket, 0);
	ck_assert_uint_eq(c.buckets[0].bytes, 100);
	ck_assert_uint_eq(c.buckets[1].bucket, 6);
	ck_assert_uint_eq(c.buckets[1].bytes, 10);
	mt_report_free(rep);
}
END_TEST

/*
 * Buckets that merge as the run goes on: each cell's allocations per bucket are those whose time
 * falls in it at the final width (timeline_merges' run, its allocations from three sites).
 */
START_TEST(cells_follow_the_merges)
{
	const uint64_t step = 4999;
	struct mt_report *rep;
	size_t total = 0;

	for (uint64_t i = 0; i < 1000; i++) {
		alloc(100, MT_K_MALLOC, 0x1000 + 16 * i, 10 + i % 3);
		from(1 + (uint32_t)(i % 3));
		at(i * step);
		mfree(100, 0x1000 + 16 * i);
		at(i * step + 1);
	}
	rep = load();
	ck_assert_uint_eq(rep->timeline->width_ns, 4000);
	ck_assert_uint_eq(mt_cells_count(rep->cells), 3);
	for (uint32_t site = 1; site <= 3; site++) {
		struct mt_cell c = cell_of(rep, site, 100);
		uint64_t want[1300] = {0};

		for (uint64_t i = site - 1; i < 1000; i += 3)
			want[i * step / 4000]++;
		for (size_t k = 0; k < c.n_buckets; k++) {
			const struct mt_cell_bucket *b = &c.buckets[k];

			ck_assert(k == 0 || b->bucket > c.buckets[k - 1].bucket);
			ck_assert_uint_eq(b->allocations, want[b->bucket]);
			ck_assert_uint_eq(b->bytes, want[b->bucket] * (10 + site - 1));
			want[b->bucket] = 0;
			total += b->allocations;
		}
		for (size_t b = 0; b < 1300; b++)
			ck_assert_msg(!want[b], "site %u: bucket %zu missing", site, b);
	}
	ck_assert_uint_eq(total, 1000);
	mt_report_free(rep);
}
END_TEST

/* The top sites, heaviest first by the metric asked for: site 7 has more calls, site 9 more bytes.
 */
START_TEST(top_sites_by_metric)
{
	static const struct {
		enum mt_folded_metric by;
		const char *title;
		uint32_t first;
	} cases[] = {
	    {MT_FOLDED_ALLOCATIONS, "by allocations)", 7},
	    {MT_FOLDED_BYTES, "by bytes allocated)", 9},
	    {MT_FOLDED_LIVE, "by bytes live at exit)", 9},
	    {MT_FOLDED_PEAK, "by bytes live at the peak)", 9},
	};
	struct mt_report *rep;

	peak_script();
	rep = load();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL, want[64];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		ck_assert_int_eq(mt_output_sites(rep, f, 1, cases[i].by), 0);
		fclose(f);
		snprintf(want, sizeof(want), "(no record of stack %u)\n  ... 1 more",
			 cases[i].first);
		ck_assert_msg(strstr(buf, cases[i].title) && strstr(buf, want), "%s", buf);
		free(buf);
	}
	mt_report_free(rep);
}
END_TEST

/* Only the largest blocks never freed are kept; an exit releases them, which frees nothing. */
START_TEST(largest_blocks_at_exit)
{
	struct mt_report *rep;

	for (uint64_t i = 1; i <= 30; i++)
		alloc(100, MT_K_MALLOC, 0x1000 * i, i);
	mfree(100, 0x1000 * 30);
	ev(100, MT_K_EXIT, 0, 0, 0, 0, 0);
	rep = load();
	ck_assert_uint_eq(rep->n_largest, MT_REPORT_LARGEST);
	for (size_t k = 0; k < MT_REPORT_LARGEST; k++) {
		ck_assert_uint_eq(rep->largest[k].size, 29 - k);
		ck_assert(!rep->largest[k].at_end);
	}
	mt_report_free(rep);
}
END_TEST

/* A line's value in bucket b. */
static uint64_t tv(const struct mt_timeline_series *s, size_t b)
{
	return mt_timeline_value(s, b);
}

/*
 * The heap over time from the same replay: each bucket holds the largest live byte count in it
 * (the value a line enters it with included), an image's line runs from its first change.
 */
START_TEST(timeline_buckets)
{
	static const uint64_t tree[] = {100, 300, 300, 250, 350, 350, 260};
	static const uint64_t allocated[] = {100, 200, 0, 50, 100, 0, 10};
	const struct mt_timeline *tl;
	const struct mt_timeline_series *p, *c;
	struct mt_report *rep;

	peak_script();
	rep = load();
	tl = rep->timeline;
	ck_assert_uint_eq(tl->width_ns, MT_TIMELINE_FIRST_WIDTH_NS);
	ck_assert_uint_eq(tl->n_buckets, 7);
	ck_assert_uint_eq(tl->peak_bytes, 350);
	/* The peak's allocation at 4,500 ns: its microsecond, all the artifact keeps of it. */
	ck_assert_uint_eq(tl->peak_ns, 4000);
	for (size_t b = 0; b < 7; b++) {
		ck_assert_uint_eq(tv(&tl->tree, b), tree[b]);
		ck_assert_uint_eq(tl->allocated[b], allocated[b]);
	}
	ck_assert_uint_eq(rep->n_images, 2);
	p = &tl->images[0];
	c = &tl->images[1];
	ck_assert_uint_eq(p->first, 0);
	ck_assert_uint_eq(p->n, 7);
	ck_assert_uint_eq(tv(p, 2), 300);
	ck_assert_uint_eq(tv(p, 3), 200); /* no change: it holds 200 */
	ck_assert_uint_eq(tv(p, 6), 210);
	ck_assert_uint_eq(c->first, 3);
	ck_assert_uint_eq(tv(c, 3), 50);
	ck_assert_uint_eq(tv(c, 4), 150);
	ck_assert_uint_eq(tv(c, 6), 50); /* live at the end: its line runs to the last bucket */
	mt_report_free(rep);
}
END_TEST

/* A long run: buckets merge in pairs, never more than the maximum, the peak stays exact. */
START_TEST(timeline_merges)
{
	const struct mt_timeline *tl;
	struct mt_report *rep;
	uint64_t most = 0;

	for (uint64_t i = 0; i < 1000; i++) {
		alloc(100, MT_K_MALLOC, 0x1000 + 16 * i, i == 700 ? 5000 : 10);
		at(i * 4999);
		mfree(100, 0x1000 + 16 * i);
		at(i * 4999 + 1);
	}
	rep = load();
	tl = rep->timeline;
	/* 4,995,001 ns in 1,000 ns buckets is 4,996 of them: twice halved, 4,000 ns wide. */
	ck_assert_uint_eq(tl->width_ns, 4 * MT_TIMELINE_FIRST_WIDTH_NS);
	ck_assert_uint_eq(tl->n_buckets, 4995001 / 4000 + 1);
	ck_assert_uint_le(tl->tree.n, MT_TIMELINE_MAX_BUCKETS);
	for (size_t b = 0; b < tl->n_buckets; b++)
		if (tv(&tl->tree, b) > most)
			most = tv(&tl->tree, b);
	ck_assert_uint_eq(most, 5000);
	ck_assert_uint_eq(tl->peak_bytes, 5000);
	ck_assert_uint_eq(tl->peak_ns, 700 * 4999 / 1000 * 1000); /* to the microsecond */
	ck_assert_uint_eq(tv(&tl->tree, 700 * 4999 / 4000), 5000);
	for (size_t b = 0; b < tl->n_buckets; b++)
		most += tl->allocated[b];
	ck_assert_uint_eq(most, 5000 + 999 * 10 + 5000);
	mt_report_free(rep);
}
END_TEST

START_TEST(histogram)
{
	static const uint64_t sizes[] = {0, 1, 2, 3, 4, 7, 8, 1023, 1024, 1ULL << 63, UINT64_MAX};
	static const unsigned int buckets[] = {0, 1, 2, 2, 3, 3, 4, 10, 11, 64, 64};
	uint64_t want[MT_REPORT_HIST_BUCKETS] = {0};
	struct mt_report *rep;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_uint_eq(mt_report_bucket(sizes[i]), buckets[i]);
		alloc(100, MT_K_MALLOC, 0x1000 + i * 16, sizes[i]);
		want[buckets[i]]++;
	}
	re(100, 0x1000, 0x9000, 5000); /* a realloc's new size is counted too: bucket 13 */
	want[13]++;
	rep = load();
	ck_assert_mem_eq(rep->histogram, want, sizeof(want));
	ck_assert_uint_eq(mt_report_bucket_min(0), 0);
	ck_assert_uint_eq(mt_report_bucket_min(1), 1);
	ck_assert_uint_eq(mt_report_bucket_min(11), 1024);
	ck_assert_uint_eq(mt_report_bucket_min(64), 1ULL << 63);
	mt_report_free(rep);
}
END_TEST

START_TEST(files_families_processes)
{
	struct mt_report *rep;

	ev(100, MT_K_MALLOC, 0x10, 10, 0, 0, 1);
	ev(100, MT_K_MALLOCX, 0x20, 20, 0, 0, 2);
	ev(200, MT_K_MALLOC, 0x30, 30, 0, 0, 1);
	ev(200, MT_K_MALLOC, 0x40, 40, 0, 0, 9); /* a file never described */
	rep = load();
	ck_assert_uint_eq(rep->n_files, 3);
	T_EQ(&file(rep, 1)->t, 2, 0, 0, 40, 0, 0, 0);
	T_EQ(&file(rep, 2)->t, 1, 0, 0, 20, 0, 0, 0);
	ck_assert_str_eq(file(rep, 1)->path, "/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_uint_eq(file(rep, 1)->probes, 11);
	ck_assert(!file(rep, 9)->recorded);
	ck_assert_uint_eq(rep->families[MT_FAM_GLIBC].bytes_allocated, 40);
	ck_assert_uint_eq(rep->families[MT_FAM_JEMALLOC].bytes_allocated, 20);
	ck_assert_uint_eq(rep->families[MT_FAM_MAX].bytes_allocated, 40);
	/* The last process record wins. */
	ck_assert(proc(rep, 200)->exited);
	ck_assert_int_eq(proc(rep, 200)->exit_status, 9);
	ck_assert_str_eq(proc(rep, 200)->exe, "/usr/bin/child");
	ck_assert_int_eq(proc(rep, 100)->exit_status, 1 << 8);
	ck_assert_str_eq(rep->watcher, "tracepoint");
	ck_assert_int_eq(rep->argc, 3);
	mt_report_free(rep);
}
END_TEST

START_TEST(unknown_kinds_passed_over)
{
	struct mt_report *rep;

	ev(100, MT_K_NONE, 0x10, 10, 0, 0, 1);
	ev(100, MT_K_MAX, 0x10, 10, 0, 0, 1);
	ev(100, 200, 0x10, 10, 0, 0, 1);
	alloc(100, MT_K_MALLOC, 0x10, 10);
	rep = load();
	T_EQ(&rep->totals, 1, 0, 0, 10, 10, 1, 10);
	ck_assert_uint_eq(rep->unknown_events, 3);
	ck_assert_uint_eq(rep->events, 4);
	mt_report_free(rep);
}
END_TEST

/*
 * Calls of functions counted but not recorded (MT_K_UNRECORDED): per file and function, a number
 * this version does not know kept; the recording is incomplete, the figures unchanged, and the
 * sentence names allocator, function, count and file.
 */
START_TEST(calls_not_recorded_make_it_incomplete)
{
	struct mt_report *rep;
	char why[512];

	alloc(100, MT_K_MALLOC, 0x10, 10);
	rep = load();
	ck_assert(mt_report_complete(rep));
	ck_assert_uint_eq(rep->n_not_recorded, 0);
	mt_report_free(rep);
	ev(100, MT_K_UNRECORDED, 0, MT_U_MI_HEAP_DESTROY, 0, 0, 2);
	ev(200, MT_K_UNRECORDED, 0, MT_U_MI_HEAP_DESTROY, 0, 0, 2);
	ev(100, MT_K_UNRECORDED, 0, MT_U_MI_WCSDUP, 0, 0, 2);
	ev(100, MT_K_UNRECORDED, 0, 99, 0, 0, 1);
	rep = load();
	ck_assert(!mt_report_complete(rep));
	T_EQ(&rep->totals, 1, 0, 0, 10, 10, 1, 10);
	ck_assert_uint_eq(rep->unknown_events, 0);
	ck_assert_uint_eq(rep->events, 5);
	ck_assert_uint_eq(rep->n_not_recorded, 3);
	ck_assert_uint_eq(rep->not_recorded[0].file_id, 2);
	ck_assert_uint_eq(rep->not_recorded[0].function, MT_U_MI_HEAP_DESTROY);
	ck_assert_uint_eq(rep->not_recorded[0].calls, 2);
	ck_assert_uint_eq(rep->not_recorded[1].function, MT_U_MI_WCSDUP);
	ck_assert_uint_eq(rep->not_recorded[1].calls, 1);
	ck_assert_uint_eq(rep->not_recorded[2].function, 99);
	mt_output_not_recorded_reason(rep, &rep->not_recorded[0], why, sizeof(why));
	ck_assert_str_eq(why,
			 "jemalloc's mi_heap_destroy was called 2 times in "
			 "/usr/lib/libjemalloc.so.2: the blocks it freed are still counted live");
	mt_output_not_recorded_reason(rep, &rep->not_recorded[2], why, sizeof(why));
	ck_assert_msg(strstr(why, "does not know (99) was called 1 time in "
				  "/lib/x86_64-linux-gnu/libc.so.6: memtrack does not record"),
		      "%s", why);
	mt_report_free(rep);
}
END_TEST

/* Enough live blocks to grow the table many times, freed in an order that shifts chains. */
START_TEST(many_live_blocks)
{
	enum { N = 200000 };
	struct mt_artifact_header h = {.watcher = "x"};
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_writer *w;
	struct mt_report *rep;
	char *path = mt_tmpfile();
	uint64_t i;

	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	for (i = 0; i < N; i++) {
		struct mt_event e = {.pid = (uint32_t)(i % 7),
				     .kind = MT_K_MALLOC,
				     .addr = 0x10 + i * 16,
				     .size = 1};

		ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	}
	for (i = 0; i < N; i += 2) {
		uint64_t k = (i * 7919) % N; /* a permutation of the even... and odd indices */
		struct mt_event e = {
		    .pid = (uint32_t)(k % 7), .kind = MT_K_FREE, .addr = 0x10 + k * 16};

		ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	}
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_report_load(path, &rep, NULL, 0), 0);
	ck_assert_uint_eq(rep->totals.allocations, N);
	ck_assert_uint_eq(rep->totals.frees, N / 2);
	ck_assert_uint_eq(rep->totals.live_blocks, N / 2);
	ck_assert_uint_eq(rep->totals.live_bytes, N / 2);
	ck_assert_uint_eq(rep->totals.peak_bytes, N);
	mt_report_free(rep);
	/* Then free everything: every block must be found again after the shifts. */
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	for (i = 0; i < N; i++) {
		struct mt_event e = {.pid = (uint32_t)(i % 7),
				     .kind = MT_K_MALLOC,
				     .addr = 0x10 + i * 16,
				     .size = 1};

		ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	}
	for (i = 0; i < N; i++) {
		uint64_t k = (i * 7919) % N;
		struct mt_event e = {
		    .pid = (uint32_t)(k % 7), .kind = MT_K_FREE, .addr = 0x10 + k * 16};

		ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	}
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_report_load(path, &rep, NULL, 0), 0);
	ck_assert_uint_eq(rep->totals.frees, N);
	ck_assert_uint_eq(rep->totals.live_blocks, 0);
	ck_assert_uint_eq(rep->totals.live_bytes, 0);
	mt_report_free(rep);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(dropped_counts)
{
	struct mt_report *rep;

	alloc(100, MT_K_MALLOC, 0x10, 10);
	S->footer.events_dropped = 5;
	S->footer.args_lost = 2;
	S->footer.requests_dropped = 1;
	S->footer.end_mono_ns = 2000001000;
	rep = load();
	ck_assert(rep->has_footer);
	ck_assert_uint_eq(rep->totals.dropped, 8);
	ck_assert_uint_eq(rep->footer.events_dropped, 5);
	mt_report_free(rep);
}
END_TEST

START_TEST(truncated_artifact)
{
	struct mt_report *rep;
	int i;

	for (i = 0; i < 10; i++)
		alloc(100, MT_K_MALLOC, 0x100 + (uint64_t)i * 16, 10);
	S->no_footer = true;
	S->footer.events_dropped = 5;
	rep = load();
	ck_assert(rep->truncated);
	ck_assert(!rep->has_footer);
	/* Cut in the middle of the 10th event: 9 survive. */
	ck_assert_uint_eq(rep->totals.allocations, 9);
	ck_assert_uint_eq(rep->totals.dropped, 0);
	mt_report_free(rep);
}
END_TEST

/* ---- outputs -------------------------------------------------------------------------------- */

/* Run fn with stdout and stderr sent to files; return what each got. */
struct captured {
	int ret;
	char *out;
	char *err;
};

static struct captured run_main(char **argv)
{
	char *po = mt_tmpfile(), *pe = mt_tmpfile();
	int so = dup(1), se = dup(2), fo = open(po, O_WRONLY), fe = open(pe, O_WRONLY), argc = 0;
	struct captured c;

	while (argv[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	dup2(fo, 1);
	dup2(fe, 2);
	c.ret = mt_cmd_report(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(fo);
	close(fe);
	c.out = mt_slurp(po);
	c.err = mt_slurp(pe);
	ck_assert(c.out && c.err);
	unlink(po);
	unlink(pe);
	free(po);
	free(pe);
	return c;
}

static void captured_free(struct captured *c)
{
	free(c->out);
	free(c->err);
}

static void typical_script(void)
{
	alloc(100, MT_K_MALLOC, 0x10, 100);
	alloc(100, MT_K_CALLOC, 0x20, 4096);
	re(100, 0x10, 0x30, 200);
	mfree(100, 0x20);
	alloc(200, MT_K_MALLOC, 0x10, 3000);
	ev(200, MT_K_MALLOCX, 0x40, 64, 0, 0, 2);
}

static uint64_t jget(struct json_object *o, const char *path)
{
	struct json_object *v = o;
	char buf[128], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
		if (*tok >= '0' && *tok <= '9')
			v = json_object_array_get_idx(v, (size_t)atoi(tok));
		else
			ck_assert_msg(json_object_object_get_ex(v, tok, &v), "no %s", path);
		ck_assert_msg(v != NULL, "no %s", path);
	}
	return json_object_get_uint64(v);
}

static const char *jstr(struct json_object *o, const char *k1, size_t idx, const char *k2)
{
	struct json_object *a, *v;

	ck_assert(json_object_object_get_ex(o, k1, &a));
	v = json_object_array_get_idx(a, idx);
	ck_assert_ptr_nonnull(v);
	ck_assert(json_object_object_get_ex(v, k2, &v));
	return json_object_get_string(v);
}

START_TEST(json_output)
{
	char *path;
	char *argv[] = {"report", "--json", NULL, NULL};
	struct json_object *o, *v;
	struct captured c;

	typical_script();
	S->footer.events_dropped = 3;
	path = write_script();
	argv[2] = path;
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_str_eq(c.err, "");
	o = json_tokener_parse(c.out);
	ck_assert_msg(o != NULL, "not JSON: %s", c.out);
	ck_assert_uint_eq(jget(o, "totals.allocations"), 4);
	ck_assert_uint_eq(jget(o, "totals.frees"), 1);
	ck_assert_uint_eq(jget(o, "totals.reallocs"), 1);
	ck_assert_uint_eq(jget(o, "totals.realloc_null"), 0);
	ck_assert_uint_eq(jget(o, "totals.realloc_zero"), 0);
	ck_assert_uint_eq(jget(o, "totals.bytes_allocated"), 100 + 4096 + 200 + 3000 + 64);
	/* 100, 4196, realloc 100 -> 200: 4296, free 4096: 200, then 3200, 3264 */
	ck_assert_uint_eq(jget(o, "totals.peak_bytes"), 4296);
	ck_assert_uint_eq(jget(o, "totals.live_blocks"), 3);
	ck_assert_uint_eq(jget(o, "totals.live_bytes"), 200 + 3000 + 64);
	ck_assert_uint_eq(jget(o, "totals.dropped"), 3);
	ck_assert_uint_eq(jget(o, "dropped.events"), 3);
	ck_assert_uint_eq(jget(o, "events"), 6);
	ck_assert_uint_eq(json_object_array_length(json_object_object_get(o, "processes")), 2);
	ck_assert_uint_eq(jget(o, "processes.0.pid"), 100);
	ck_assert_uint_eq(jget(o, "processes.0.exit_code"), 1);
	ck_assert_uint_eq(jget(o, "processes.0.bytes_allocated"), 100 + 4096 + 200);
	ck_assert_uint_eq(jget(o, "processes.1.parent"), 100);
	ck_assert_uint_eq(jget(o, "processes.1.exit_code"), 137);
	ck_assert_uint_eq(jget(o, "processes.1.signal"), 9);
	ck_assert_uint_eq(jget(o, "processes.1.live_bytes"), 3064);
	ck_assert_str_eq(jstr(o, "processes", 1, "exe"), "/usr/bin/child");
	ck_assert_str_eq(jstr(o, "files", 0, "path"), "/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_str_eq(jstr(o, "files", 0, "family"), "glibc");
	ck_assert_uint_eq(jget(o, "files.0.probes"), 11);
	ck_assert_str_eq(jstr(o, "files", 1, "family"), "jemalloc");
	ck_assert_str_eq(jstr(o, "families", 1, "family"), "jemalloc");
	ck_assert(json_object_object_get_ex(o, "watcher", &v));
	ck_assert_str_eq(json_object_get_string(v), "tracepoint");
	ck_assert(json_object_object_get_ex(o, "truncated", &v));
	ck_assert(!json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(o, "command", &v));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 2)), "it's here");
	/* 64 -> bucket [64, 128); 100 -> [64, 128); 200 -> [128, 256); 3000; 4096 */
	ck_assert_uint_eq(jget(o, "histogram.0.min"), 64);
	ck_assert_uint_eq(jget(o, "histogram.0.max"), 127);
	ck_assert_uint_eq(jget(o, "histogram.0.count"), 2);
	ck_assert_uint_eq(jget(o, "histogram.3.min"), 4096);
	ck_assert_uint_eq(json_object_array_length(json_object_object_get(o, "histogram")), 4);
	json_object_put(o);
	captured_free(&c);
	unlink(path);
	free(path);
}
END_TEST

/*
 * The sites, written one at a time (src/output/output_json.c), are the document's last member, laid
 * out and escaped as one json-c tree prints them: a site with frames in a file whose path has odd
 * bytes (quote, backslash, a control byte, DEL, a byte that is not UTF-8), one with another stack,
 * and one whose stack no record describes (no frames), allocated after the peak.
 */
START_TEST(json_sites_text)
{
	static const char frame[] =
	    "        {\n"
	    "          \"function\":null,\n"
	    "          \"file\":\"/nowhere/a\\\"b\\\\c\\u0001\x7f\xef\xbf\xbd.so\",\n"
	    "          \"offset\":%u,\n"
	    "          \"source\":null,\n"
	    "          \"line\":null\n"
	    "        }";
	static const char site[] = "    {\n"
				   "      \"stack_id\":%u,\n"
				   "      \"allocations\":%u,\n"
				   "      \"bytes\":%u,\n"
				   "      \"temporary\":0,\n"
				   "      \"live_blocks\":%u,\n"
				   "      \"live_bytes\":%u,\n"
				   "      \"peak_blocks\":%u,\n"
				   "      \"peak_bytes\":%u,\n"
				   "      \"stack\":\"%s\",\n"
				   "      \"frames\":[\n"
				   "%s\n"
				   "      ]\n"
				   "    }";
	char *argv[] = {"report", "--json", NULL, NULL}, frames[3][2048], want[16384];
	char f1[4096], f2[4096];
	const char *at;
	struct captured c;

	S->stacks = 2;
	S->frames_path = "/nowhere/a\"b\\c\x01\x7f\xff.so";
	alloc(100, MT_K_MALLOC, 0x10, 100);
	from(1);
	alloc(100, MT_K_MALLOC, 0x20, 30);
	from(2);
	alloc(100, MT_K_MALLOC, 0x30, 7);
	from(1);
	mfree(100, 0x10);
	alloc(100, MT_K_MALLOC, 0x40, 5);
	from(7);
	argv[2] = write_script();
	for (unsigned int id = 1; id <= 2; id++) {
		char f[3][512];

		snprintf(f[0], sizeof(f[0]), frame, 0x10);
		snprintf(f[1], sizeof(f[1]), frame, 0x100000 + id);
		snprintf(f[2], sizeof(f[2]), frame, 0x9000);
		snprintf(frames[id], sizeof(frames[id]), "%s,\n%s,\n%s", f[0], f[1], f[2]);
	}
	snprintf(f1, sizeof(f1), site, 1, 2, 107, 1, 7, 2, 107, "complete", frames[1]);
	snprintf(f2, sizeof(f2), site, 2, 1, 30, 1, 30, 1, 30, "complete", frames[2]);
	snprintf(want, sizeof(want),
		 ",\n  \"sites\":[\n%s,\n%s,\n"
		 "    {\n"
		 "      \"stack_id\":7,\n"
		 "      \"allocations\":1,\n"
		 "      \"bytes\":5,\n"
		 "      \"temporary\":0,\n"
		 "      \"live_blocks\":1,\n"
		 "      \"live_bytes\":5,\n"
		 "      \"peak_blocks\":0,\n"
		 "      \"peak_bytes\":0,\n"
		 "      \"stack\":\"cut\",\n"
		 "      \"frames\":[\n"
		 "      ]\n"
		 "    }\n"
		 "  ]\n"
		 "}\n",
		 f1, f2);
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_str_eq(c.err, "");
	at = strstr(c.out, ",\n  \"sites\":[");
	ck_assert_msg(at != NULL, "no sites: %s", c.out);
	ck_assert_str_eq(at, want);
	captured_free(&c);
	unlink(argv[2]);
	free(argv[2]);
}
END_TEST

/*
 * A write that fails (a full disk) is the writer's errno, whether it fails in the top of the
 * document (unbuffered: the first write) or in its sites (buffered: once they overflow the buffer).
 */
START_TEST(json_write_error_is_returned)
{
	struct mt_report *rep;

	S->stacks = 40;
	for (uint32_t id = 1; id <= S->stacks; id++) {
		alloc(100, MT_K_MALLOC, 0x1000 + id * 16, 8);
		from(id);
	}
	rep = load();
	ck_assert_uint_eq(mt_sites_count(rep->sites), 40);
	for (int buffered = 0; buffered <= 1; buffered++) {
		FILE *f = fopen("/dev/full", "w");

		ck_assert_ptr_nonnull(f);
		if (!buffered)
			setvbuf(f, NULL, _IONBF, 0);
		ck_assert_int_eq(mt_output_json(rep, f), -ENOSPC);
		fclose(f);
	}
	mt_report_free(rep);
}
END_TEST

START_TEST(json_truncated_has_null_drops)
{
	char *path;
	char *argv[] = {"report", NULL, "--json", NULL};
	struct json_object *o, *v;
	struct captured c;

	typical_script();
	S->no_footer = true;
	path = write_script();
	argv[1] = path;
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	o = json_tokener_parse(c.out);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "truncated", &v));
	ck_assert(json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(json_object_object_get(o, "totals"), "dropped", &v));
	ck_assert_ptr_null(v);
	json_object_put(o);
	captured_free(&c);
	unlink(path);
	free(path);
}
END_TEST

/* The text says what an exit or exec released apart from what was live when the run ended. */
START_TEST(human_output_live_at_exit_and_at_the_end)
{
	char *argv[] = {"report", NULL, NULL};
	struct captured c;

	alloc(100, MT_K_MALLOC, 0x10, 8);
	tev(100, 100, MT_K_EXEC, 0, 0, 0, 0); /* releases 8 bytes */
	alloc(100, MT_K_MALLOC, 0x10, 16);
	tev(100, 100, MT_K_EXIT, 0, 0, 0, 0); /* releases 16 */
	alloc(200, MT_K_MALLOC, 0x10, 1000);  /* pid 200 still runs */
	argv[1] = write_script();
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_msg(strstr(c.out,
			     "  live at exit      2 blocks, 24 bytes (released with their "
			     "process, at its exit or exec)\n"
			     "  live at the end   1 blocks, 1000 bytes (their process was still "
			     "running when the recording ended)\n"),
		      "%s", c.out);
	captured_free(&c);
	unlink(argv[1]);
	free(argv[1]);
}
END_TEST

START_TEST(human_output)
{
	char *path;
	char *argv[] = {"report", NULL, NULL};
	struct captured c;

	typical_script();
	S->footer.events_dropped = 3;
	path = write_script();
	argv[1] = path;
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_str_eq(c.err, "");
	ck_assert_ptr_nonnull(strstr(c.out, "command:   ls -l 'it'\\''s here'\n"));
	ck_assert_ptr_nonnull(strstr(c.out, "watcher:   tracepoint\n"));
	ck_assert_ptr_nonnull(strstr(c.out, "allocations       4\n"));
	ck_assert_ptr_nonnull(strstr(c.out, "bytes allocated   7460 bytes (7.3 KiB)\n"));
	ck_assert_msg(strstr(c.out, "live at exit      0 blocks, 0 bytes (released with their "
				    "process, at its exit or exec)\n"
				    "  live at the end   3 blocks, 3264 bytes (3.2 KiB) (their "
				    "process was still running when the recording ended)\n"),
		      "%s", c.out);
	ck_assert_ptr_nonnull(strstr(c.out, "WARNING: 3 allocator calls were lost"));
	ck_assert_ptr_nonnull(strstr(c.out, "/usr/lib/libjemalloc.so.2"));
	ck_assert_ptr_nonnull(strstr(c.out, "SIGKILL"));
	ck_assert_ptr_nonnull(strstr(c.out, "exit 1"));
	ck_assert_ptr_nonnull(strstr(c.out, "[   2 KiB,    4 KiB)            1 "));
	ck_assert_ptr_null(strstr(c.out, "TRUNCATED"));
	captured_free(&c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(human_truncated_and_top)
{
	char *path;
	char *argv[] = {"report", "--top", "1", NULL, NULL};
	struct captured c;

	typical_script();
	S->no_footer = true;
	path = write_script();
	argv[3] = path;
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_ptr_nonnull(strstr(c.out, "TRUNCATED"));
	ck_assert_ptr_nonnull(strstr(c.out, "dropped           unknown"));
	/* --top 1: one row of each table, the rest announced */
	ck_assert_int_eq(strstr(c.out, "... 1 more") != NULL, 1);
	captured_free(&c);
	unlink(path);
	free(path);
}
END_TEST

/* A hostile artifact cannot reach the terminal with escape sequences. */
START_TEST(control_characters_neutralised)
{
	char *evil_argv[] = {"a\033]0;x\007", "b\nc", NULL};
	struct mt_artifact_header h = {.watcher = "t\033[1m", .argc = 2, .argv = evil_argv};
	struct mt_artifact_process p = {.pid = 1};
	struct mt_artifact_file f = {.file_id = 1, .family = MT_FAM_GLIBC, .probes = 1};
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_writer *w;
	char *path = mt_tmpfile(), *argv[] = {"report", path, NULL};
	struct captured c;

	strcpy(p.exe, "/bin/\033[2Jx");
	strcpy(f.path, "/lib/\033[31mred");
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &f), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_ptr_null(strchr(c.out, '\033'));
	ck_assert_ptr_null(strchr(c.out, '\007'));
	ck_assert_ptr_nonnull(strstr(c.out, "/bin/?[2Jx"));
	ck_assert_ptr_nonnull(strstr(c.out, "/lib/?[31mred"));
	ck_assert_ptr_nonnull(strstr(c.out, "command:   'a?]0;x?' 'b?c'\n"));
	ck_assert_ptr_nonnull(strstr(c.out, "watcher:   t?[1m\n"));
	captured_free(&c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(usage_errors)
{
	char *a1[] = {"report", NULL};
	char *a2[] = {"report", "--bogus", "x", NULL};
	char *a3[] = {"report", "--top", "ten", "x", NULL};
	char *a4[] = {"report", "a", "b", NULL};
	char *a5[] = {"report", "--top", NULL};
	char *a6[] = {"report", "--help", NULL};
	struct captured c;

	c = run_main(a1);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "no artifact given"));
	captured_free(&c);
	c = run_main(a2);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "unknown option '--bogus'"));
	captured_free(&c);
	c = run_main(a3);
	ck_assert_int_eq(c.ret, 2);
	captured_free(&c);
	c = run_main(a4);
	ck_assert_int_eq(c.ret, 2);
	captured_free(&c);
	c = run_main(a5);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "needs an argument"));
	captured_free(&c);
	c = run_main(a6);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_ptr_nonnull(strstr(c.out, "usage: memtrack report"));
	captured_free(&c);
}
END_TEST

START_TEST(artifact_errors)
{
	char *path = mt_tmpfile();
	char *argv[] = {"report", path, NULL};
	char want[256];
	struct captured c;
	FILE *f = fopen(path, "w");

	fputs("this is not an artifact\n", f);
	fclose(f);
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 1);
	snprintf(want, sizeof(want), "memtrack: %s: not a memtrack artifact (bad magic)\n", path);
	ck_assert_str_eq(c.err, want);
	ck_assert_str_eq(c.out, "");
	captured_free(&c);
	unlink(path);
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 1);
	snprintf(want, sizeof(want), "memtrack: %s: cannot open: No such file or directory\n",
		 path);
	ck_assert_str_eq(c.err, want);
	captured_free(&c);
	free(path);
}
END_TEST

START_TEST(summary)
{
	char *path, *out = mt_tmpfile();
	FILE *f;
	char *s;

	typical_script();
	S->footer.events_dropped = 4;
	path = write_script();
	f = fopen(out, "w");
	ck_assert_int_eq(mt_output_summary(path, f), 0);
	fclose(f);
	s = mt_slurp(out);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(
	    strstr(s, "memtrack: 4 allocations, 1 frees, 1 reallocs, 7460 bytes (7.3 KiB) "
		      "allocated\n"));
	ck_assert_ptr_nonnull(strstr(s, "peak heap 4296 bytes (4.2 KiB); live at exit: 3 blocks"));
	ck_assert_ptr_nonnull(strstr(s, "/lib/x86_64-linux-gnu/libc.so.6 (glibc, 11 probes)"));
	ck_assert_ptr_nonnull(strstr(s, "/usr/lib/libjemalloc.so.2 (jemalloc, 7 probes)"));
	ck_assert_ptr_nonnull(strstr(s, "memtrack: dropped: 4 (see below)\n"));
	ck_assert_ptr_nonnull(strstr(s, "WARNING: 4 allocator events dropped"));
	free(s);
	/* The error goes to stderr, in one sentence. */
	{
		char *pe = mt_tmpfile();
		int se = dup(2), fe = open(pe, O_WRONLY);
		char *e;

		dup2(fe, 2);
		ck_assert_int_eq(mt_output_summary("/nonexistent.mtk", stdout), -ENOENT);
		dup2(se, 2);
		close(se);
		close(fe);
		e = mt_slurp(pe);
		ck_assert_ptr_nonnull(e);
		ck_assert_str_eq(e, "memtrack: /nonexistent.mtk: cannot open: No such file or "
				    "directory\n");
		free(e);
		unlink(pe);
		free(pe);
	}
	unlink(out);
	unlink(path);
	free(out);
	free(path);
}
END_TEST

START_TEST(totals_of)
{
	struct mt_report_totals t;
	char err[MT_ARTIFACT_ERRLEN];
	char *path;

	typical_script();
	path = write_script();
	ck_assert_int_eq(mt_report_totals_of(path, &t, err, sizeof(err)), 0);
	T_EQ(&t, 4, 1, 1, 7460, 4296, 3, 3264);
	ck_assert_int_eq(mt_report_totals_of("/nonexistent.mtk", &t, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "cannot open: No such file or directory");
	unlink(path);
	free(path);
}
END_TEST

/* The one sanitiser of foreign bytes: terminal form and JSON form. */
START_TEST(printable_and_utf8)
{
	static const struct {
		const char *in, *term, *json;
	} cases[] = {
	    {"plain/path.so", "plain/path.so", "plain/path.so"},
	    {"a\x1b[31mb", "a?[31mb", "a\x1b[31mb"},	   /* ESC: JSON escapes it itself */
	    {"caf\xc3\xa9", "caf\xc3\xa9", "caf\xc3\xa9"}, /* valid UTF-8 is kept */
	    {"x\xc2\x9by", "x?y", "x\xc2\x9by"},	   /* C1 CSI: a control character */
	    {"x\xffy", "x?y", "x\xef\xbf\xbdy"},
	    {"\xc0\x80", "??", "\xef\xbf\xbd\xef\xbf\xbd"},		     /* overlong NUL */
	    {"\xed\xa0\x80", "???", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
	    {"\xe2\x82", "??", "\xef\xbf\xbd\xef\xbf\xbd"},		     /* cut short */
	    {"\x7f\t", "??", "\x7f\t"},
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *j = mt_utf8_dup(cases[i].in);

		ck_assert_str_eq(mt_printable(buf, sizeof(buf), cases[i].in), cases[i].term);
		ck_assert_str_eq(j, cases[i].json);
		free(j);
	}
	/* Cut to fit, never inside a character. */
	ck_assert_str_eq(mt_printable(buf, 3, "abcdef"), "ab");
	ck_assert_str_eq(mt_printable(buf, 3, "a\xc3\xa9"), "a");
	ck_assert_str_eq(mt_printable(buf, 4, "a\xc3\xa9"), "a\xc3\xa9");
}
END_TEST

/*
 * Process 100 handed to a debugger after the stream's fourth event (2 allocations, a realloc, a
 * free), then its fork of 300, which allocates unrecorded; it mapped the jemalloc file after:
 * said in every output.
 */
START_TEST(handoff_before_and_after)
{
	char *argv[] = {"report", NULL, NULL, NULL};
	const struct mt_image_handoff *h;
	struct mt_report *rep;
	struct json_object *o, *ho;
	struct captured c;
	char *path, *out = mt_tmpfile(), *s;
	FILE *f;

	typical_script();
	tev(100, 100, MT_K_FORK, 300, 0, 0, 0);
	alloc(300, MT_K_MALLOC, 0x50, 10);
	S->handoff = true;
	rep = load();
	h = image_of(rep, 100, 0)->handoff;
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_null(image_of(rep, 200, 0)->handoff);
	ck_assert(!image_of(rep, 200, 0)->unrecorded);
	ck_assert(image_of(rep, 300, 0)->unrecorded);
	ck_assert_uint_eq(mt_report_unrecorded_images(rep), 1);
	ck_assert_str_eq(h->at, "right after its exec of /usr/bin/ls");
	ck_assert_uint_eq(h->event, 4);
	ck_assert_uint_eq(h->before.allocations, 2);
	ck_assert_uint_eq(h->before.reallocs, 1);
	ck_assert_uint_eq(h->before.frees, 1);
	ck_assert_uint_eq(image_of(rep, 100, 0)->c.frees - h->before.frees, 0);
	ck_assert_uint_eq(h->n_late, 1);
	ck_assert_str_eq(h->late[0], "/usr/lib/libjemalloc.so.2");
	ck_assert(!mt_report_complete(rep));
	mt_report_free(rep);

	path = write_script();
	argv[1] = path;
	c = run_main(argv);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_msg(strstr(c.out,
			     "\nHanded to a debugger (1)\n  0 (pid 100) right after its exec "
			     "of /usr/bin/ls, after event 4: 2 allocations, 1 frees "
			     "recorded before, 0 allocations, 0 frees after\n"),
		      "%s", c.out);
	ck_assert_ptr_nonnull(strstr(c.out, "may be missing): /usr/lib/libjemalloc.so.2\n"));
	ck_assert_ptr_nonnull(strstr(c.out, "not their truth), pids: 300\n"));
	captured_free(&c);

	argv[1] = "--json";
	argv[2] = path;
	c = run_main(argv);
	o = json_tokener_parse(c.out);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(jget(o, "images.0.handoff.event"), 4);
	ck_assert_uint_eq(jget(o, "images.0.handoff.before.allocations"), 2);
	ck_assert_str_eq(jstr(o, "images", 0, "exe"), "/usr/bin/ls");
	ck_assert(json_object_object_get_ex(
	    json_object_array_get_idx(json_object_object_get(o, "images"), 0), "handoff", &ho));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
			     json_object_object_get(ho, "mapped_after"), 0)),
			 "/usr/lib/libjemalloc.so.2");
	ck_assert(json_object_object_get_ex(
	    json_object_array_get_idx(json_object_object_get(o, "images"), 1), "handoff", &ho));
	ck_assert_ptr_null(ho);
	ck_assert_ptr_nonnull(
	    strstr(json_object_to_json_string(json_object_object_get(o, "incomplete")),
		   "mapped_after_handoff"));
	ck_assert_ptr_nonnull(
	    strstr(json_object_to_json_string(json_object_object_get(o, "incomplete")),
		   "created_after_handoff"));
	ck_assert_int_eq(json_object_get_boolean(json_object_object_get(
			     json_object_array_get_idx(json_object_object_get(o, "images"), 2),
			     "allocations_recorded")),
			 0);
	json_object_put(o);
	captured_free(&c);

	f = fopen(out, "w");
	ck_assert_int_eq(mt_output_summary(path, f), 0);
	fclose(f);
	s = mt_slurp(out);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(strstr(s,
			     "memtrack: process 0 (pid 100) was handed to a debugger right after "
			     "its exec of /usr/bin/ls: 2 allocations, 1 frees recorded before, 0 "
			     "allocations, 0 frees after\n"
			     "memtrack: WARNING: process 0 mapped files with allocators after its "
			     "handoff, probed without stopping it: its calls into them before that "
			     "may be missing: /usr/lib/libjemalloc.so.2\n"
			     "memtrack: WARNING: processes created after the handoff are not "
			     "recorded (memtrack is not their tracer): 1 image(s), pids: 300\n"),
		      "%s", s);
	free(s);
	unlink(out);
	unlink(path);
	free(out);
	free(path);
}
END_TEST

/* memtrack report with args (NULL-terminated) before the artifact of S; the file out written. */
static struct captured report_to(const char *opt1, const char *opt2, const char *opt3, char **text)
{
	char *art = write_script();
	char *argv[] = {"report", (char *)opt1, (char *)opt2, (char *)opt3, art, NULL};
	struct captured c;

	if (!opt3) {
		argv[3] = art;
		argv[4] = NULL;
	}
	c = run_main(argv);
	*text = mt_slurp(opt2);
	unlink(art);
	free(art);
	return c;
}

/* The SVG: one polyline per image and the tree's, the peak exact, well-formed enough to parse. */
START_TEST(svg_over_time)
{
	char *out = mt_tmpfile(), *svg;
	struct captured c;

	peak_script();
	/* The order the issue writes: the option after the artifact. */
	c = report_to("--svg", out, NULL, &svg);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "--svg draws --over-time: add it"));
	captured_free(&c);
	free(svg);
	c = report_to("--svg", out, "--over-time", &svg);
	ck_assert_msg(c.ret == 0, "%s", c.err);
	ck_assert_str_eq(c.out, "");
	ck_assert_ptr_nonnull(svg);
	ck_assert(!strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44));
	ck_assert_int_eq(mt_count_lines(svg, "<polyline "), 3);
	ck_assert_int_eq(mt_count_lines(svg, "<polyline class=\"tree\" data-peak=\"350\""), 1);
	ck_assert_ptr_nonnull(strstr(svg, "data-peak-bytes=\"350\" data-peak-ns=\"4000\""));
	ck_assert_ptr_nonnull(strstr(svg, ">peak 350 bytes (350 B) at 4 \xc2\xb5s</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">pid 100 ls (peak 300 B)</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">pid 200 child (peak 150 B)</text>"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
	captured_free(&c);
	free(svg);
	unlink(out);
	free(out);
}
END_TEST

/*
 * The bytes axis ends at its first line at or above the peak: 40,400 bytes take steps of 20 KiB
 * up to 40 KiB, not four steps up to twice the peak.
 */
START_TEST(svg_axis_ends_past_the_peak)
{
	char *out = mt_tmpfile(), *svg;
	struct captured c;

	alloc(100, MT_K_MALLOC, 0x10, 40400);
	at(1000);
	c = report_to("--svg", out, "--over-time", &svg);
	ck_assert_msg(c.ret == 0, "%s", c.err);
	ck_assert_msg(strstr(svg, ">20.0 KiB</text>") && strstr(svg, ">40.0 KiB</text>"), "%s",
		      svg);
	ck_assert_msg(!strstr(svg, ">60.0 KiB</text>"), "%s", svg);
	captured_free(&c);
	free(svg);
	unlink(out);
	free(out);
}
END_TEST

static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The page holds everything it shows: nothing to fetch, the data the script draws from. */
START_TEST(html_self_contained)
{
	char *out = mt_tmpfile(), *html;
	struct captured c;
	const char *p;

	peak_script();
	c = report_to("--html", out, NULL, &html);
	ck_assert_msg(c.ret == 0, "%s", c.err);
	ck_assert_str_eq(c.out, "");
	ck_assert(!strncmp(html, "<!DOCTYPE html>\n", 16));
	ck_assert_ptr_null(strstr(html, " src="));
	ck_assert_ptr_null(strstr(html, " href="));
	ck_assert_ptr_null(strstr(html, "url("));
	ck_assert_ptr_null(strstr(html, "@import"));
	/* The one URL is the SVG namespace's name (markup and script), which is never fetched. */
	for (p = html; (p = strstr(p, "://")); p++)
		ck_assert_msg(!strncmp(p - 4, "http://www.w3.org/2000/svg", 26), "%.80s", p - 20);
	ck_assert_ptr_nonnull(strstr(html, "default-src 'none'"));
	ck_assert_ptr_nonnull(
	    strstr(html, "<div class=\"value\" data-key=\"peak_bytes\" data-value=\"350\" "
			 "title=\"350 bytes\">350 B</div>"));
	ck_assert_ptr_nonnull(strstr(html, "\"peak_bytes\":350,\"peak_ns\":4000,\"tree\":[100,300,"
					   "300,250,350,350,260]"));
	/*
	 * Two sites without stack records: the root and one node for both. Their weights are in
	 * the cells, per site and image: [node, image, allocations, bytes, live, peak, temporary,
	 * buckets as (bucket - the previous one, allocations, bytes)], which the script sums.
	 */
	ck_assert_ptr_nonnull(strstr(html, "\"names\":[\"[no stack record]\"]"));
	ck_assert_msg(strstr(html,
			     "\"nodes\":[[-1,0],[0,0]]},\"cells\":["
			     "[1,0,2,110,10,0,0,[0,1,100,6,1,10]],[1,0,1,200,200,200,0,[1,1,200]],"
			     "[1,1,1,50,50,50,0,[3,1,50]],[1,1,1,100,0,100,1,[4,1,100]]]"),
		      "%.400s", strstr(html, "\"flame\":{"));
	ck_assert_ptr_nonnull(strstr(html, "\"images\":[[100,\"/usr/bin/ls\",\"\",0],[200,"));
	ck_assert_ptr_nonnull(strstr(html, "<pre id=\"text-report\">command:   ls -l &#39;it&#39;"
					   "\\&#39;&#39;s here&#39;\n"));
	ck_assert_ptr_nonnull(strstr(html, "</script>\n</body></html>\n"));
	captured_free(&c);
	free(html);
	unlink(out);
	free(out);
}
END_TEST

/*
 * Thousands of stacks, one big: the page gets the big one's path, and one "[smaller frames]" node
 * for the 5,000 sites too small to see under any weight, with their exact sums.
 */
START_TEST(html_folds_small_frames)
{
	char *out = mt_tmpfile(), *html;
	struct captured c;

	S->stacks = 5001;
	alloc(100, MT_K_MALLOC, 0x10, 100000);
	from(1);
	for (uint32_t i = 2; i <= 5001; i++) {
		alloc(100, MT_K_MALLOC, 0x100 + 16 * i, 1);
		from(i);
	}
	c = report_to("--html", out, NULL, &html);
	ck_assert_msg(c.ret == 0, "%s", c.err);
	ck_assert_msg(
	    strstr(html, "\"nodes\":[[-1,0],[0,0],[1,1],[-2,1]]},\"cells\":["
			 "[2,0,1,100000,100000,100000,0,[0,1,100000]],[3,0,1,1,1,1,0,[0,1,1]],"),
	    "%.300s", strstr(html, "\"nodes\""));
	/* The 5,000 small sites all in the [smaller frames] node. */
	ck_assert_int_eq(count_of(html, "[3,0,1,1,1,1,0,["), 5000);
	ck_assert_ptr_nonnull(strstr(html, "\"names\":[\"0x9000\",\"0x100001\","));
	captured_free(&c);
	free(html);
	unlink(out);
	free(out);
}
END_TEST

START_TEST(picture_errors)
{
	char *a1[] = {"report", "--over-time", "x", NULL};
	char *a2[] = {"report", "--html", "a.html", "--json", "x", NULL};
	char *a3[] = {"report", "--html", "/nonexistent/dir/a.html", NULL, NULL};
	struct captured c;

	c = run_main(a1);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "--over-time is a picture: --svg OUT.svg says where"));
	captured_free(&c);
	c = run_main(a2);
	ck_assert_int_eq(c.ret, 2);
	ck_assert_ptr_nonnull(strstr(c.err, "--html writes a file, --json prints: choose one"));
	captured_free(&c);
	a3[3] = write_script();
	c = run_main(a3);
	ck_assert_int_eq(c.ret, 1);
	ck_assert_str_eq(c.err, "memtrack: cannot create /nonexistent/dir/a.html: No such file or "
				"directory\n");
	captured_free(&c);
	unlink(a3[3]);
	free(a3[3]);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("counting");
	TCase *to = tcase_create("outputs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(to, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malloc_free_pairs);
	tcase_add_test(tc, handoff_before_and_after);
	tcase_add_test(tc, calloc_and_aligned_kinds);
	tcase_add_test(tc, blocks_far_apart_and_large);
	tcase_add_test(tc, largest_alike_by_address);
	tcase_add_test(tc, live_blocks_within_12_bytes);
	tcase_add_test(tc, live_blocks_within_14_bytes_at_any_count);
	tcase_add_test(tc, block_classes_go_with_their_blocks);
	tcase_add_test(tc, an_exit_releases_a_class_in_one_change);
	tcase_add_test(tc, realloc_chain);
	tcase_add_test(tc, temporary_allocations);
	tcase_add_test(tc, realloc_null_and_zero_apart);
	tcase_add_test(tc, sites_count_calls_bytes_and_live);
	tcase_add_test(tc, jemalloc_kinds);
	tcase_add_test(tc, every_free_kind);
	tcase_add_test(tc, leaks);
	tcase_add_test(tc, two_processes_same_addresses);
	tcase_add_test(tc, failed_calls);
	tcase_add_test(tc, free_null_and_unknown);
	tcase_add_test(tc, exec_and_exit_release_images);
	tcase_add_test(tc, vfork_child_shares_parent_space);
	tcase_add_test(tc, reused_pid_is_another_image);
	tcase_add_test(tc, realloc_entry_release_across_threads);
	tcase_add_test(tc, zero_sized);
	tcase_add_test(tc, double_allocation);
	tcase_add_test(tc, peak);
	tcase_add_test(tc, follow_counts_as_a_whole_reading_does);
	tcase_add_test(tc, sites_at_the_peak);
	tcase_add_test(tc, cells_per_image);
	tcase_add_test(tc, cells_follow_the_merges);
	tcase_add_test(tc, top_sites_by_metric);
	tcase_add_test(tc, largest_blocks_at_exit);
	tcase_add_test(tc, timeline_buckets);
	tcase_add_test(tc, timeline_merges);
	tcase_add_test(tc, histogram);
	tcase_add_test(tc, files_families_processes);
	tcase_add_test(tc, unknown_kinds_passed_over);
	tcase_add_test(tc, calls_not_recorded_make_it_incomplete);
	tcase_add_test(tc, many_live_blocks);
	tcase_add_test(tc, dropped_counts);
	tcase_add_test(tc, truncated_artifact);
	tcase_add_test(tc, zeroed_allocations);
	tcase_add_test(to, json_output);
	tcase_add_test(to, json_sites_text);
	tcase_add_test(to, json_write_error_is_returned);
	tcase_add_test(to, json_truncated_has_null_drops);
	tcase_add_test(to, human_output);
	tcase_add_test(to, human_truncated_and_top);
	tcase_add_test(to, control_characters_neutralised);
	tcase_add_test(to, printable_and_utf8);
	tcase_add_test(to, usage_errors);
	tcase_add_test(to, artifact_errors);
	tcase_add_test(to, summary);
	tcase_add_test(to, totals_of);
	tcase_add_test(to, svg_over_time);
	tcase_add_test(to, human_output_live_at_exit_and_at_the_end);
	tcase_add_test(to, svg_axis_ends_past_the_peak);
	tcase_add_test(to, html_self_contained);
	tcase_add_test(to, picture_errors);
	tcase_add_test(to, html_folds_small_frames);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, to);
	return s;
}

int main(void)
{
	return mt_run_suite(report_suite());
}
