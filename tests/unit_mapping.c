// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping record (docs/FORMAT.md, type 9) through the writer and the reader, and CodSpeed's
 * memory artifact written from it (src/codspeed/codspeed_write.c): the window gate and the
 * Mmap/Munmap/Brk events as CodSpeed records them, read back with memtrack's CodSpeed reader.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codspeed/codspeed_read.h"
#include "codspeed/codspeed_write.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "reader/artifact_read.h"
#include "writer/artifact.h"

static char *const argv0[] = {"bash", NULL};
static const struct mt_artifact_header header = {
    .start_time_ns = 1, .start_mono_ns = 1000, .watcher = "tracepoint", .argc = 1, .argv = argv0};

/* Times in microseconds: an event's time is kept to the microsecond (docs/FORMAT.md). */
#define US 1000ull

static struct mt_artifact_mapping mapping(uint8_t what, uint64_t us, uint64_t addr, uint64_t len)
{
	return (struct mt_artifact_mapping){
	    .ts_ns = us * US, .pid = 7, .tid = 8, .what = what, .addr = addr, .len = len};
}

static struct mt_event malloc_at(uint64_t us, uint64_t addr)
{
	return (struct mt_event){
	    .ts_ns = us * US, .pid = 7, .tid = 7, .addr = addr, .size = 32, .kind = MT_K_MALLOC};
}

/*
 * At t = 100 .. 900 us: a malloc (100), an mmap of a file (200), a failed munmap (300), an
 * mremap (400), a brk (500), a failed mmap's record, which no writer makes but a reader must
 * pass over for CodSpeed (600), an unknown kind (700), a malloc (900).
 */
static char *write_mtk(void)
{
	struct mt_artifact_mapping file = mapping(MT_MAP_MMAP, 200, 0x7000, 4097), m;
	struct mt_artifact_process root = {.pid = 7};
	struct mt_artifact_footer foot = {.events = 2, .end_mono_ns = 1000};
	struct mt_artifact_writer *w;
	struct mt_event ev = malloc_at(100, 0x1000);
	char *path = mt_tmpfile();

	file.prot = PROT_READ;
	file.flags = MAP_PRIVATE;
	file.offset = 8192;
	file.dev = (8 << 20) | 1;
	file.ino = 1234;
	strcpy(file.name, "libdata.so");
	ck_assert_int_eq(mt_artifact_create(&w, path, &header), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, &ev, 1), 0);
	ck_assert_int_eq(mt_artifact_write_mapping(w, &file), 0);
	m = mapping(MT_MAP_MUNMAP, 300, 0x9000, 100);
	m.error = -22;
	ck_assert_int_eq(mt_artifact_write_mapping(w, &m), 0);
	m = mapping(MT_MAP_MREMAP, 400, 0xa000, 131072);
	m.old_addr = 0x8000;
	m.old_len = 65536;
	ck_assert_int_eq(mt_artifact_write_mapping(w, &m), 0);
	m = mapping(MT_MAP_BRK, 500, 0x560000, 0x10000);
	m.old_addr = 0x550000;
	ck_assert_int_eq(mt_artifact_write_mapping(w, &m), 0);
	m = mapping(MT_MAP_MMAP, 600, 0xb000, 10);
	m.error = -12;
	ck_assert_int_eq(mt_artifact_write_mapping(w, &m), 0);
	ck_assert_int_eq(mt_artifact_write_mapping(w, &(struct mt_artifact_mapping){.what = 99}),
			 0);
	ev = malloc_at(900, 0x2000);
	ck_assert_int_eq(mt_artifact_write_events(w, &ev, 1), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	return path;
}

START_TEST(mapping_records_read_back)
{
	char *path = write_mtk(), err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_artifact_mapping seen[6];
	int n = 0, ret, events = 0;

	ck_assert_int_eq(mt_artifact_open(&r, path, err, sizeof(err)), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type == MT_ITEM_MAPPING && n < 6)
			seen[n++] = *it.mapping;
		/* the order of the stream: the first malloc before every mapping, the last after */
		if (it.type == MT_ITEM_EVENTS)
			ck_assert_int_eq(n, events++ ? 6 : 0);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);
	ck_assert_int_eq(n, 6);
	ck_assert_int_eq(seen[0].what, MT_MAP_MMAP);
	ck_assert_uint_eq(seen[0].ts_ns, 200 * US);
	ck_assert_uint_eq(seen[0].pid, 7);
	ck_assert_uint_eq(seen[0].tid, 8);
	ck_assert_uint_eq(seen[0].len, 4097);
	ck_assert_uint_eq(seen[0].prot, PROT_READ);
	ck_assert_uint_eq(seen[0].flags, MAP_PRIVATE);
	ck_assert_uint_eq(seen[0].offset, 8192);
	ck_assert_uint_eq(seen[0].dev, (8 << 20) | 1);
	ck_assert_uint_eq(seen[0].ino, 1234);
	ck_assert_str_eq(seen[0].name, "libdata.so");
	ck_assert_int_eq(seen[1].error, -22);
	ck_assert_uint_eq(seen[2].old_addr, 0x8000);
	ck_assert_uint_eq(seen[2].old_len, 65536);
	ck_assert_uint_eq(seen[3].old_addr, 0x550000);
	ck_assert_int_eq(seen[5].what, 99);
	unlink(path);
	free(path);
}
END_TEST

/* CodSpeed's artifact of write_mtk() with the windows given; its summary. */
static struct mt_codspeed_summary convert(const struct mt_codspeed_window *w, size_t n, bool gated)
{
	char dir[64], *mtk = write_mtk(), err[160];
	struct mt_codspeed_job job = {
	    .mtk = mtk, .windows = w, .n_windows = n, .gated = gated, .dir = dir};
	struct mt_codspeed_summary s = {0};

	mt_tmpdir(dir);
	ck_assert_int_eq(mt_codspeed_write_artifact(&job), 0);
	ck_assert_uint_eq(job.root, 7);
	ck_assert_msg(strstr(job.path, "/7.MemtrackArtifact.msgpack"), "%s", job.path);
	ck_assert_int_eq(mt_codspeed_summarize(job.path, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.events, job.events);
	unlink(job.path);
	rmdir(dir);
	unlink(mtk);
	free(mtk);
	return s;
}

/* Every munmap of a range, failed or not; a successful mmap; a brk; never an mremap. */
START_TEST(codspeed_mapping_events)
{
	struct mt_codspeed_summary s = convert(NULL, 0, false);

	ck_assert_uint_eq(s.by_type[MT_CS_MALLOC], 2);
	ck_assert_uint_eq(s.by_type[MT_CS_MMAP], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_MUNMAP], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_BRK], 1);
	ck_assert_uint_eq(s.events, 5);
	ck_assert_uint_eq(s.first_ns, 100 * US);
	ck_assert_uint_eq(s.last_ns, 900 * US);
}
END_TEST

START_TEST(codspeed_windows_gate_events)
{
	struct mt_codspeed_window two[] = {{150 * US, 350 * US}, {450 * US, 901 * US}}, none[1];
	struct mt_codspeed_summary s = convert(two, 2, true);

	/* [150, 350): the mmap and the munmap; [450, 901): the brk and the last malloc. */
	ck_assert_uint_eq(s.by_type[MT_CS_MALLOC], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_MMAP], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_MUNMAP], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_BRK], 1);
	ck_assert_uint_eq(s.first_ns, 200 * US);
	ck_assert_uint_eq(s.last_ns, 900 * US);
	/* A window ends before its end: the malloc at 900 is out of [450, 900). */
	two[1].end_ns = 900 * US;
	ck_assert_uint_eq(convert(two, 2, true).events, 3);
	/*
	 * A window that starts inside the first malloc's microsecond: the malloc, read as that
	 * microsecond's first nanosecond, may have come after the start, and counts as inside.
	 */
	two[0] = (struct mt_codspeed_window){100 * US + 500, 150 * US};
	s = convert(two, 1, true);
	ck_assert_uint_eq(s.by_type[MT_CS_MALLOC], 1);
	ck_assert_uint_eq(s.first_ns, 100 * US);
	/* Gated without a window (no Enable): no event, and the artifact still decodes. */
	ck_assert_uint_eq(convert(none, 0, true).events, 0);
}
END_TEST

/* One allocator event of pid 7 at ts, file 0. */
static struct mt_event call_at(uint64_t ts, uint8_t kind, uint64_t addr, uint32_t align,
			       uint8_t flags)
{
	struct mt_event e = malloc_at(ts, addr);

	e.kind = kind;
	e.align = align;
	e.flags = flags;
	return e;
}

/*
 * A zeroed allocation is CodSpeed's Calloc whatever its kind: calloc, mi_zalloc (a malloc
 * kind), __rust_alloc_zeroed (an aligned malloc). mi_mallocn (a calloc kind that does not
 * zero) is a Malloc; mi_rezalloc (a zeroing realloc) stays a Realloc.
 */
START_TEST(codspeed_zeroed_is_calloc)
{
	struct mt_event ev[] = {
	    call_at(100, MT_K_CALLOC, 0x1000, 0, MT_EV_ZEROED),
	    call_at(200, MT_K_MALLOC, 0x2000, 0, MT_EV_ZEROED),
	    call_at(300, MT_K_MALLOC_ALIGNED, 0x3000, 16, MT_EV_ZEROED),
	    call_at(400, MT_K_CALLOC, 0x4000, 0, 0),
	    call_at(500, MT_K_REALLOC, 0x5000, 0, MT_EV_ZEROED),
	};
	struct mt_artifact_process root = {.pid = 7};
	struct mt_artifact_footer foot = {.events = 5, .end_mono_ns = 1000};
	char dir[64], *mtk = mt_tmpfile(), err[160];
	struct mt_codspeed_job job = {.mtk = mtk, .dir = dir};
	struct mt_codspeed_summary s = {0};
	struct mt_artifact_writer *w;

	ev[4].old_addr = 0x1000;
	ck_assert_int_eq(mt_artifact_create(&w, mtk, &header), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev, 5), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	mt_tmpdir(dir);
	ck_assert_int_eq(mt_codspeed_write_artifact(&job), 0);
	ck_assert_int_eq(mt_codspeed_summarize(job.path, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.by_type[MT_CS_CALLOC], 3);
	ck_assert_uint_eq(s.by_type[MT_CS_MALLOC], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_REALLOC], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_ALIGNED_ALLOC], 0);
	ck_assert_uint_eq(s.events, 5);
	unlink(job.path);
	rmdir(dir);
	unlink(mtk);
	free(mtk);
}
END_TEST

/*
 * An artifact older than the zero flag (the corpus's calloc_realloc, recorded at version 5): its
 * one calloc is still a Calloc for CodSpeed and a zeroed allocation in the report's totals.
 */
START_TEST(codspeed_calloc_of_an_old_artifact)
{
	char dir[64], err[160];
	struct mt_codspeed_job job = {.mtk = MT_SOURCE_DIR "/tests/corpus/real-calloc-realloc",
				      .dir = dir};
	struct mt_codspeed_summary s = {0};

	mt_tmpdir(dir);
	ck_assert_int_eq(mt_codspeed_write_artifact(&job), 0);
	ck_assert_int_eq(mt_codspeed_summarize(job.path, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.by_type[MT_CS_CALLOC], 1);
	ck_assert_uint_eq(s.by_type[MT_CS_MALLOC], 0);
	unlink(job.path);
	rmdir(dir);
}
END_TEST

static Suite *mapping_suite(void)
{
	Suite *s = suite_create("mapping");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, mapping_records_read_back);
	tcase_add_test(tc, codspeed_mapping_events);
	tcase_add_test(tc, codspeed_windows_gate_events);
	tcase_add_test(tc, codspeed_zeroed_is_calloc);
	tcase_add_test(tc, codspeed_calloc_of_an_old_artifact);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(mapping_suite());
}
