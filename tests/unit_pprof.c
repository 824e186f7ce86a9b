// SPDX-License-Identifier: GPL-2.0
/*
 * The pprof encoder (src/output/output_pprof.c) over an artifact whose sites are known: the profile
 * is gunzipped, decoded back with protobuf-c, and every field pprof reads is asserted: sample
 * types, one sample per site with its exact values, locations leaf first and shared between stacks,
 * the folded stacks' markers, mappings with path and build id whose ranges turn an address back
 * into the file offset, functions named by memtrack's symboliser, the header's times and notes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "bpf/unwind_row.h"
#include "writer/artifact.h"
#include "writer/artifact_format.h"
#include "output/output.h"
#include "proto/profile.pb-c.h"
#include "aggregate/report.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define LIBFAKE	 "/nonexistent/libfake.so"
#define BUILD_ID "00112233445566778899aabbccddeeff00112233"
#define START_NS 1700000000123456789ULL
#define RAW_PC	 0x7f0000001234ULL /* a pc in no file (JIT code) */

/* Two functions of this binary that the symboliser names: an allocator and its caller. */
__attribute__((noipa)) void pprof_fake_malloc(void)
{
	__asm__ volatile("");
}

__attribute__((noipa)) void pprof_named_caller(void)
{
	__asm__ volatile("");
}

static char self_path[4096];

/* The file offset of p in this binary (and the binary's path), from /proc/self/maps. */
static uint64_t file_offset_of(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096 + 256];
	uintptr_t a = (uintptr_t)p;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		int at = 0;
		char *path;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &at) < 3 || !at ||
		    a < lo || a >= hi)
			continue;
		path = line + at;
		path[strcspn(path, "\n")] = '\0';
		snprintf(self_path, sizeof(self_path), "%s", path);
		fclose(f);
		return a - lo + off;
	}
	fclose(f);
	ck_abort_msg("%p is in no mapping", p);
	return 0;
}

static struct mt_event event(uint8_t kind, uint64_t addr, uint64_t size, uint32_t stack_id)
{
	static uint64_t t = 2000;

	return (struct mt_event){.ts_ns = ++t,
				 .pid = 100,
				 .tid = 100,
				 .addr = addr,
				 .size = size,
				 .file_id = 1,
				 .kind = kind,
				 .stack_id = stack_id};
}

static void write_stack(struct mt_artifact_writer *w, uint32_t id, uint32_t stop,
			const uint64_t *frames, uint32_t n)
{
	struct mt_artifact_stack st = {.id = id, .stop = stop, .n = n};

	memcpy(st.frames, frames, n * sizeof(*frames));
	ck_assert_int_eq(mt_artifact_write_stack(w, &st), 0);
}

static uint64_t alloc_off, caller_off;
/* Whether the artifact has a leak scan of its process at the end (run --leaks). */
static bool with_leaks;

/* The scan: site 1's 0xb0 definitely lost, its 0xc0 indirectly, site 3's 0xe0 definitely. */
static void write_leaks(struct mt_artifact_writer *w)
{
	const struct mt_artifact_leak_block b[] = {
	    {.addr = 0xb0, .size = 16, .stack = 1, .cls = MT_LEAK_DEFINITE},
	    {.addr = 0xc0, .size = 16, .stack = 1, .cls = MT_LEAK_INDIRECT},
	    {.addr = 0xe0, .size = 8, .stack = 3, .cls = MT_LEAK_DEFINITE},
	    {.addr = 0x200, .size = 5, .stack = 0, .cls = MT_LEAK_REACHABLE},
	};
	struct mt_artifact_leaks l = {.pid = 100, .n = 4, .blocks = b};

	ck_assert_int_eq(mt_artifact_write_leaks(w, &l), 0);
}

/*
 * Sites: 1 (complete: the named caller, then a frame of libfake.so), 2 (truncated, sharing the
 * named caller's frame), 3 (the allocator's frame only), 4 (a stack no allocation came from),
 * 5 (cut, at a pc in no file); and one allocation recorded without its stack.
 */
static char *write_artifact(void)
{
	static char *const argv[] = {"prog", "arg", NULL};
	struct mt_artifact_header h = {.start_time_ns = START_NS,
				       .start_mono_ns = 1000,
				       .watcher = "tracepoint",
				       .argc = 2,
				       .argv = argv};
	struct mt_artifact_process root = {.pid = 100};
	struct mt_artifact_file fake = {.file_id = 1, .family = MT_FAM_GLIBC, .probes = 3};
	struct mt_artifact_file self = {.file_id = 2};
	struct mt_artifact_footer footer = {.end_mono_ns = 1000 + 5000000000ULL, .stacks_lost = 1};
	uint64_t alloc = MT_FRAME(2, alloc_off), caller = MT_FRAME(2, caller_off + 1);
	uint64_t s1[] = {alloc, caller, MT_FRAME(1, 0x2005)}, s2[] = {alloc, caller};
	uint64_t s3[] = {MT_FRAME(1, 0x100)}, s5[] = {MT_FRAME(1, 0x100), RAW_PC};
	struct mt_event ev[] = {
	    event(MT_K_MALLOC, 0xa0, 16, 1), event(MT_K_MALLOC, 0xb0, 16, 1),
	    event(MT_K_MALLOC, 0xc0, 16, 1), event(MT_K_FREE, 0xa0, 0, 0),
	    event(MT_K_CALLOC, 0xd0, 24, 2), event(MT_K_FREE, 0xd0, 0, 0),
	    event(MT_K_MALLOC, 0xe0, 8, 3),  event(MT_K_MALLOC, 0xf0, 100, 5),
	    event(MT_K_FREE, 0xf0, 0, 0),    event(MT_K_MALLOC, 0x200, 5, 0),
	};
	struct mt_artifact_writer *w;
	char *path = mt_tmpfile();

	strcpy(root.exe, "/usr/bin/prog");
	strcpy(fake.path, LIBFAKE);
	strcpy(fake.build_id, BUILD_ID);
	snprintf(self.path, sizeof(self.path), "%s", self_path);
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &root), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &fake), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &self), 0);
	write_stack(w, 1, MT_UNWIND_COMPLETE, s1, 3);
	write_stack(w, 2, MT_UNWIND_TRUNCATED, s2, 2);
	write_stack(w, 3, MT_UNWIND_COMPLETE, s3, 1);
	write_stack(w, 4, MT_UNWIND_COMPLETE, s3, 1);
	write_stack(w, 5, MT_UNWIND_LOST, s5, 2);
	ck_assert_int_eq(mt_artifact_write_events(w, ev, sizeof(ev) / sizeof(ev[0])), 0);
	if (with_leaks)
		write_leaks(w);
	ck_assert_int_eq(mt_artifact_finish(w, &footer), 0);
	return path;
}

/*
 * The report of the artifact, its sites symbolised as memtrack report does; cut, it ends
 * without its footer (a killed run).
 */
static struct mt_report *load_cut(bool cut)
{
	char err[MT_ARTIFACT_ERRLEN], *path;
	struct mt_report *rep;
	struct stat st;

	alloc_off = file_offset_of((const void *)pprof_fake_malloc);
	caller_off = file_offset_of((const void *)pprof_named_caller);
	path = write_artifact();
	ck_assert_int_eq(stat(path, &st), 0);
	if (cut)
		ck_assert_int_eq(truncate(path, st.st_size - 8 - MT_ARTIFACT_FOOTER_SIZE), 0);
	ck_assert_msg(mt_report_load(path, &rep, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(mt_sites_symbolize(rep->sites, NULL), 0);
	unlink(path);
	free(path);
	return rep;
}

static struct mt_report *load(void)
{
	return load_cut(false);
}

/* mt_output_pprof into a file, gunzipped and decoded. */
static MtPprof__Profile *encode_decode(const struct mt_report *rep)
{
	char *path = mt_tmpfile();
	FILE *f = fopen(path, "w");
	size_t len = 0, cap = 1 << 16;
	unsigned char *buf = malloc(cap), magic[2];
	MtPprof__Profile *p;
	gzFile gz;
	int n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mt_output_pprof(rep, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	f = fopen(path, "r");
	ck_assert_int_eq(fread(magic, 1, 2, f), 2);
	fclose(f);
	ck_assert_msg(magic[0] == 0x1f && magic[1] == 0x8b, "not gzip");
	gz = gzopen(path, "rb");
	ck_assert_ptr_nonnull(gz);
	while ((n = gzread(gz, buf + len, (unsigned int)(cap - len))) > 0) {
		len += (size_t)n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	ck_assert_int_eq(n, 0);
	gzclose(gz);
	p = mt_pprof__profile__unpack(NULL, len, buf);
	ck_assert_ptr_nonnull(p);
	free(buf);
	unlink(path);
	free(path);
	return p;
}

static const char *str(const MtPprof__Profile *p, int64_t i)
{
	ck_assert(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const MtPprof__Location *location(const MtPprof__Profile *p, uint64_t id)
{
	/* Ids are 1 .. n in order: pprof needs them unique and not 0. */
	ck_assert(id >= 1 && id <= p->n_location);
	ck_assert_uint_eq(p->location[id - 1]->id, id);
	return p->location[id - 1];
}

static const MtPprof__Mapping *mapping(const MtPprof__Profile *p, uint64_t id)
{
	ck_assert(id >= 1 && id <= p->n_mapping);
	ck_assert_uint_eq(p->mapping[id - 1]->id, id);
	return p->mapping[id - 1];
}

/* The function a location names, "" when it names none. */
static const char *function_of(const MtPprof__Profile *p, uint64_t loc)
{
	const MtPprof__Location *l = location(p, loc);

	if (!l->n_line)
		return "";
	ck_assert_uint_eq(l->n_line, 1);
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == l->line[0]->function_id)
			return str(p, p->function[i]->name);
	ck_abort_msg("location %lu names function %lu, which is not there", (unsigned long)loc,
		     (unsigned long)l->line[0]->function_id);
	return NULL;
}

/* The file offset a location's address stands for, in the file its mapping names. */
static uint64_t offset_in(const MtPprof__Profile *p, uint64_t loc, const char *file)
{
	const MtPprof__Location *l = location(p, loc);
	const MtPprof__Mapping *m = mapping(p, l->mapping_id);

	ck_assert_str_eq(str(p, m->filename), file);
	ck_assert(l->address >= m->memory_start && l->address < m->memory_limit);
	return l->address - m->memory_start + m->file_offset;
}

static void expect_values(const MtPprof__Sample *s, int64_t a, int64_t b, int64_t c, int64_t d)
{
	ck_assert_uint_eq(s->n_value, 4);
	ck_assert_int_eq(s->value[0], a);
	ck_assert_int_eq(s->value[1], b);
	ck_assert_int_eq(s->value[2], c);
	ck_assert_int_eq(s->value[3], d);
}

START_TEST(header_types_times_and_notes)
{
	static const char *const types[4][2] = {{"alloc_objects", "count"},
						{"alloc_space", "bytes"},
						{"inuse_objects", "count"},
						{"inuse_space", "bytes"}};
	struct mt_report *rep = load();
	MtPprof__Profile *p = encode_decode(rep);
	int lost = 0;

	ck_assert_str_eq(p->string_table[0], "");
	ck_assert_uint_eq(p->n_sample_type, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(str(p, p->sample_type[i]->type), types[i][0]);
		ck_assert_str_eq(str(p, p->sample_type[i]->unit), types[i][1]);
	}
	ck_assert_str_eq(str(p, p->default_sample_type), "alloc_space");
	ck_assert_str_eq(str(p, p->period_type->type), "space");
	ck_assert_str_eq(str(p, p->period_type->unit), "bytes");
	ck_assert_int_eq(p->period, 1);
	ck_assert_int_eq(p->time_nanos, (int64_t)START_NS);
	ck_assert_int_eq(p->duration_nanos, 5000000000LL);
	ck_assert_uint_ge(p->n_comment, 2);
	ck_assert_msg(strstr(str(p, p->comment[0]), ": prog arg"), "%s", str(p, p->comment[0]));
	for (size_t i = 0; i < p->n_comment; i++)
		lost += !strcmp(str(p, p->comment[i]),
				"allocations recorded without their stack, not in this profile: 1");
	ck_assert_int_eq(lost, 1);
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
}
END_TEST

START_TEST(one_sample_per_site_leaf_first)
{
	struct mt_report *rep = load();
	MtPprof__Profile *p = encode_decode(rep);
	MtPprof__Sample **s = p->sample;

	/* Site 4 made no allocation: left out. Sites in order of appearance. */
	ck_assert_uint_eq(p->n_sample, 4);

	/* Site 1: the allocator is a label; from its caller out, the libfake.so frame unnamed. */
	expect_values(s[0], 3, 48, 2, 32);
	ck_assert_uint_eq(s[0]->n_location_id, 2);
	ck_assert_str_eq(function_of(p, s[0]->location_id[0]), "pprof_named_caller");
	ck_assert_uint_eq(offset_in(p, s[0]->location_id[0], self_path), caller_off);
	ck_assert_str_eq(function_of(p, s[0]->location_id[1]), "");
	/* At the call instruction: the return address minus one. */
	ck_assert_uint_eq(offset_in(p, s[0]->location_id[1], LIBFAKE), 0x2004);
	ck_assert_uint_eq(s[0]->n_label, 1);
	ck_assert_str_eq(str(p, s[0]->label[0]->key), "allocator");
	ck_assert_str_eq(str(p, s[0]->label[0]->str), "pprof_fake_malloc");

	/* Site 2, truncated: the same caller's location, then the folded stacks' marker. */
	expect_values(s[1], 1, 24, 0, 0);
	ck_assert_uint_eq(s[1]->n_location_id, 2);
	ck_assert_uint_eq(s[1]->location_id[0], s[0]->location_id[0]);
	ck_assert_str_eq(function_of(p, s[1]->location_id[1]), "[truncated]");
	ck_assert_uint_eq(location(p, s[1]->location_id[1])->mapping_id, 0);

	/* Site 3, the allocator's frame alone (its file unreadable: no label). */
	expect_values(s[2], 1, 8, 1, 8);
	ck_assert_uint_eq(s[2]->n_location_id, 1);
	ck_assert_str_eq(function_of(p, s[2]->location_id[0]), "[unknown]");
	ck_assert_uint_eq(s[2]->n_label, 0);

	/* Site 5, cut at a pc in no file: an address of no mapping, then the marker. */
	expect_values(s[3], 1, 100, 0, 0);
	ck_assert_uint_eq(s[3]->n_location_id, 2);
	ck_assert_uint_eq(location(p, s[3]->location_id[0])->mapping_id, 0);
	ck_assert_uint_eq(location(p, s[3]->location_id[0])->address, RAW_PC - 1);
	ck_assert_str_eq(function_of(p, s[3]->location_id[1]), "[cut]");

	/* Each frame and each marker once. */
	ck_assert_uint_eq(p->n_location, 6);
	ck_assert_uint_eq(p->n_function, 4);
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
}
END_TEST

START_TEST(mappings_have_path_build_id_and_disjoint_ranges)
{
	struct mt_report *rep = load();
	MtPprof__Profile *p = encode_decode(rep);
	const MtPprof__Mapping *self, *fake;

	/* In order of first use: the caller's file (this binary), then libfake.so. */
	ck_assert_uint_eq(p->n_mapping, 2);
	self = mapping(p, 1);
	fake = mapping(p, 2);
	ck_assert_str_eq(str(p, self->filename), self_path);
	ck_assert_str_eq(str(p, self->build_id), "");
	ck_assert_str_eq(str(p, fake->filename), LIBFAKE);
	ck_assert_str_eq(str(p, fake->build_id), BUILD_ID);
	/* Every location of this binary is named; libfake.so's are not (pprof may name them). */
	ck_assert(self->has_functions);
	ck_assert(!fake->has_functions);
	/* Each covers the pages of its locations, as a mapping of the file's code would. */
	ck_assert_uint_eq(self->file_offset, caller_off / 4096 * 4096);
	ck_assert_uint_eq(fake->file_offset, 0x2000);
	ck_assert_uint_eq(fake->memory_limit - fake->memory_start, 4096);
	ck_assert_uint_ne(self->memory_start, 0);
	ck_assert_uint_lt(self->memory_start, self->memory_limit);
	ck_assert_uint_le(self->memory_limit, fake->memory_start);
	ck_assert_uint_lt(fake->memory_start, fake->memory_limit);
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
}
END_TEST

/* A killed run: the same samples, no duration, and a note that the recording is incomplete. */
START_TEST(cut_artifact_says_incomplete)
{
	struct mt_report *rep = load_cut(true);
	MtPprof__Profile *p = encode_decode(rep);
	int said = 0;

	ck_assert(rep->truncated);
	ck_assert_uint_eq(p->n_sample, 4);
	ck_assert_int_eq(p->duration_nanos, 0);
	ck_assert_int_eq(p->time_nanos, (int64_t)START_NS);
	for (size_t i = 0; i < p->n_comment; i++)
		said += !strcmp(str(p, p->comment[i]),
				"the recording is incomplete: memtrack report says why");
	ck_assert_int_eq(said, 1);
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
}
END_TEST

/* A run without allocations: a valid profile with no sample. */
START_TEST(empty_run_is_an_empty_profile)
{
	static char *const argv[] = {"true", NULL};
	struct mt_artifact_header h = {.watcher = "tracepoint", .argc = 1, .argv = argv};
	struct mt_artifact_footer footer = {0};
	struct mt_artifact_writer *w;
	char *path = mt_tmpfile(), err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	MtPprof__Profile *p;

	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &footer), 0);
	ck_assert_msg(mt_report_load(path, &rep, err, sizeof(err)) == 0, "%s", err);
	p = encode_decode(rep);
	ck_assert_uint_eq(p->n_sample, 0);
	ck_assert_uint_eq(p->n_location, 0);
	ck_assert_uint_eq(p->n_sample_type, 4);
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
	unlink(path);
	free(path);
}
END_TEST

/*
 * With a leak scan, four more sample types: each site's blocks and bytes definitely and
 * indirectly lost, exactly its loss records'.
 */
START_TEST(leak_sample_types_weigh_the_loss_records)
{
	static const char *const types[4] = {"definitely_lost_objects", "definitely_lost_space",
					     "indirectly_lost_objects", "indirectly_lost_space"};
	const int64_t want[4][4] = {{1, 16, 1, 16}, {0, 0, 0, 0}, {1, 8, 0, 0}, {0, 0, 0, 0}};
	struct mt_report *rep;
	MtPprof__Profile *p;

	with_leaks = true;
	rep = load();
	with_leaks = false;
	p = encode_decode(rep);
	ck_assert_uint_eq(p->n_sample_type, 8);
	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(str(p, p->sample_type[4 + i]->type), types[i]);
		ck_assert_str_eq(str(p, p->sample_type[4 + i]->unit), i % 2 ? "bytes" : "count");
	}
	ck_assert_str_eq(str(p, p->default_sample_type), "alloc_space");
	/* The samples are the sites 1, 2, 3 and 5 in order (4 made no allocation). */
	ck_assert_uint_eq(p->n_sample, 4);
	for (size_t k = 0; k < 4; k++) {
		ck_assert_uint_eq(p->sample[k]->n_value, 8);
		for (int i = 0; i < 4; i++)
			ck_assert_msg(p->sample[k]->value[4 + i] == want[k][i],
				      "sample %zu, %s: %lld, not %lld", k, types[i],
				      (long long)p->sample[k]->value[4 + i], (long long)want[k][i]);
	}
	mt_pprof__profile__free_unpacked(p, NULL);
	mt_report_free(rep);
}
END_TEST

/* A write that fails (a full disk) is the writer's errno, not a success. */
START_TEST(write_error_is_returned)
{
	struct mt_report *rep = load();
	FILE *f = fopen("/dev/full", "w");

	ck_assert_ptr_nonnull(f);
	setvbuf(f, NULL, _IONBF, 0);
	ck_assert_int_eq(mt_output_pprof(rep, f), -ENOSPC);
	fclose(f);
	mt_report_free(rep);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pprof");
	TCase *tc = tcase_create("encoder");

	tcase_add_test(tc, header_types_times_and_notes);
	tcase_add_test(tc, one_sample_per_site_leaf_first);
	tcase_add_test(tc, mappings_have_path_build_id_and_disjoint_ranges);
	tcase_add_test(tc, cut_artifact_says_incomplete);
	tcase_add_test(tc, empty_run_is_an_empty_profile);
	tcase_add_test(tc, write_error_is_returned);
	tcase_add_test(tc, leak_sample_types_weigh_the_loss_records);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
