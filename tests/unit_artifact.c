// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact writer and reader: what is written comes back byte for byte, a file cut at any
 * byte either fails cleanly (inside the header) or reads as a truncated prefix, and corrupt or
 * foreign files are refused with a message instead of being believed.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer/artifact.h"
#include "bpf/unwind_row.h"
#include "reader/artifact_read.h"
#include "writer/evblock.h"
#include "lib/suite.h"
#include "lib/mtrun.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n ? (size_t)n : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* Events of whole microseconds: what version 7 keeps of a time (times_in_microseconds). */
static struct mt_event mkev(uint64_t i)
{
	struct mt_event e = {
	    .ts_ns = MT_ARTIFACT_MICRO_NS * (1000 + i),
	    .pid = 100 + (uint32_t)(i % 3),
	    .tid = 200 + (uint32_t)i,
	    .addr = 0x10000 + i * 64,
	    .size = i * 7,
	    .old_addr = i & 1 ? 0x20000 + i : 0,
	    .align = (uint32_t)(i % 5) * 16,
	    .file_id = (uint16_t)(i % 4),
	    .kind = (uint8_t)(1 + i % (MT_K_MAX - 1)),
	    .flags = (uint8_t)(i % 7 == 0),
	    .stack_id = i % 3 ? (uint32_t)(i * 300) : 0,
	};
	return e;
}

/* A stack of n frames: in files (MT_FRAME) and, the last, an absolute address. */
static struct mt_artifact_stack mkstack(uint32_t id, uint32_t n)
{
	struct mt_artifact_stack s = {.id = id, .stop = MT_UNWIND_TRUNCATED, .n = n};

	for (uint32_t i = 0; i + 1 < n; i++)
		s.frames[i] = MT_FRAME(i % 3, 0x1000 + i * 16);
	s.frames[n - 1] = 0x7fff12345678ULL;
	return s;
}

static char *const test_argv[] = {"prog", "--flag", "arg with spaces", "", NULL};

static const struct mt_artifact_header test_header = {
    .start_time_ns = 1700000000123456789ULL,
    .start_mono_ns = 555000,
    .watcher = "tracepoint",
    .argc = 4,
    .argv = test_argv,
};

/*
 * A small artifact: process, file, stack, 5 events, process again (exited), footer. Returns its
 * offsets: the end of the header, and the total length.
 */
static uint8_t *small_artifact(size_t *len, size_t *hdr_len)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_process p = {.pid = 42, .parent = 0};
	struct mt_artifact_file f = {
	    .file_id = 1, .family = 1, .probes = 12, .unwind_rows = 28274, .unwind_error = -61};
	struct mt_artifact_footer foot = {.events = 5, .events_dropped = 2, .end_mono_ns = 999000};
	struct mt_artifact_stack st = mkstack(300, 128);
	struct mt_event ev[5];
	char *path = mt_tmpfile();
	uint8_t *buf;
	int i;

	for (i = 0; i < 5; i++)
		ev[i] = mkev((uint64_t)i);
	strcpy(p.exe, "/usr/bin/prog");
	strcpy(f.path, "/lib/libc.so.6");
	strcpy(f.build_id, "0123456789abcdef0123456789abcdef01234567");
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &f), 0);
	ck_assert_int_eq(mt_artifact_write_stack(w, &st), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev, 3), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev + 3, 2), 0);
	/* Flushed: the exit's record follows the block (a record written while a block is being
	 * gathered goes inside it: records_inside_blocks). */
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	p.exited = true;
	p.exit_status = 3 << 8;
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, len);
	unlink(path);
	free(path);
	/* magic, version, header_len, then header_len bytes */
	*hdr_len = 16 + le32toh(*(uint32_t *)(buf + 12));
	return buf;
}

struct counts {
	int processes, files, footers;
	uint64_t events;
	uint64_t hash; /* of the events' bytes, in order */
	int err;
	bool truncated;
	char msg[MT_ARTIFACT_ERRLEN];
};

/* Read a whole artifact from memory; opening must succeed. */
static struct counts read_all(const uint8_t *buf, size_t len)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct counts c = {0};
	char err[MT_ARTIFACT_ERRLEN];
	int ret;

	ret = mt_artifact_open_mem(&r, buf, len, err, sizeof(err));
	ck_assert_msg(ret == 0, "open failed: %s", err);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		c.processes += it.type == MT_ITEM_PROCESS;
		c.files += it.type == MT_ITEM_FILE;
		c.footers += it.type == MT_ITEM_FOOTER;
		if (it.type != MT_ITEM_EVENTS)
			continue;
		c.events += it.n_events;
		for (size_t i = 0; i < it.n_events * sizeof(*it.events); i++)
			c.hash = (c.hash ^ ((const uint8_t *)it.events)[i]) * 0x100000001b3ULL;
	}
	c.err = ret;
	snprintf(c.msg, sizeof(c.msg), "%s", mt_artifact_error(r));
	c.truncated = mt_artifact_truncated(r);
	/* An error sticks. */
	if (ret < 0)
		ck_assert_int_eq(mt_artifact_next(r, &it), ret);
	else
		ck_assert_int_eq(mt_artifact_next(r, &it), 0);
	mt_artifact_close(r);
	return c;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* Offset of the first record of a type, walking the records from the end of the header. */
static size_t record_at(const uint8_t *buf, size_t len, size_t hdr, uint32_t type)
{
	size_t at = hdr;

	while (at + 8 <= len && get32(buf + at) != type)
		at += 8 + get32(buf + at + 4);
	ck_assert_uint_le(at + 8, len);
	return at;
}

/* Bytes of the first n events of a block made of ev. */
static size_t encoded_len(const struct mt_event *ev, size_t n)
{
	uint8_t tmp[MT_EVBLOCK_EVENT_MAX];
	struct mt_evblock_state s;
	size_t len = 0;

	mt_evblock_reset(&s);
	while (n--)
		len += mt_evblock_put(&s, tmp, ev++);
	return len;
}

/* ---- round trip ----------------------------------------------------------------------------- */

START_TEST(roundtrip)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	const struct mt_artifact_info *in;
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_stack want_stack = mkstack(300, 128);
	uint64_t nev = 0;
	int procs = 0, stacks = 0, ret;

	ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, err, sizeof(err)), 0);
	in = mt_artifact_info(r);
	ck_assert_uint_eq(in->version, 7);
	ck_assert_uint_eq(in->start_time_ns, 1700000000123456789ULL);
	ck_assert_uint_eq(in->start_mono_ns, 555000);
	ck_assert_str_eq(in->watcher, "tracepoint");
	ck_assert_int_eq(in->argc, 4);
	ck_assert_str_eq(in->argv[0], "prog");
	ck_assert_str_eq(in->argv[2], "arg with spaces");
	ck_assert_str_eq(in->argv[3], "");
	ck_assert_ptr_null(in->argv[4]);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		switch (it.type) {
		case MT_ITEM_PROCESS:
			ck_assert_uint_eq(it.process->pid, 42);
			ck_assert_str_eq(it.process->exe, "/usr/bin/prog");
			ck_assert_int_eq(it.process->exited, procs == 1);
			ck_assert_int_eq(it.process->exit_status, procs == 1 ? 3 << 8 : 0);
			procs++;
			break;
		case MT_ITEM_FILE:
			ck_assert_uint_eq(it.file->file_id, 1);
			ck_assert_uint_eq(it.file->family, 1);
			ck_assert_uint_eq(it.file->probes, 12);
			ck_assert_str_eq(it.file->path, "/lib/libc.so.6");
			ck_assert_str_eq(it.file->build_id,
					 "0123456789abcdef0123456789abcdef01234567");
			ck_assert_uint_eq(it.file->unwind_rows, 28274);
			ck_assert_int_eq(it.file->unwind_error, -61);
			break;
		case MT_ITEM_STACK:
			ck_assert_mem_eq(it.stack, &want_stack, sizeof(want_stack));
			stacks++;
			break;
		case MT_ITEM_EVENTS:
			for (size_t i = 0; i < it.n_events; i++) {
				struct mt_event want = mkev(nev + i);

				ck_assert_mem_eq(&it.events[i], &want, sizeof(want));
			}
			nev += it.n_events;
			break;
		case MT_ITEM_FOOTER:
			ck_assert_uint_eq(it.footer->events, 5);
			ck_assert_uint_eq(it.footer->events_dropped, 2);
			ck_assert_uint_eq(it.footer->requests_dropped, 0);
			ck_assert_uint_eq(it.footer->end_mono_ns, 999000);
			break;
		case MT_ITEM_UNPROBED:
			ck_abort_msg("no not-probed record was written");
			break;
		case MT_ITEM_HANDOFF:
			ck_abort_msg("no handoff record was written");
			break;
		case MT_ITEM_MAPPING:
			ck_abort_msg("no mapping record was written");
			break;
		case MT_ITEM_LEAKS:
			ck_abort_msg("no leak record was written");
			break;
		case MT_ITEM_RSS:
			ck_abort_msg("no RSS sample was written");
			break;
		case MT_ITEM_BENCH:
			ck_abort_msg("no benchmark mark was written");
			break;
		}
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(procs, 2);
	ck_assert_int_eq(stacks, 1);
	ck_assert_uint_eq(nev, 5);
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);
	free(buf);
}
END_TEST

/*
 * Version 2: a not-probed record, and a probe count beyond 16 bits (the old field saturates, the
 * exact count follows the path). Read as version 1, the not-probed record is an unknown type.
 */
START_TEST(unprobed_and_wide_probe_count)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_file f = {.file_id = 3, .family = 1, .probes = 70000};
	struct mt_artifact_unprobed u = {.error = 95};
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char *path = mt_tmpfile();
	int files = 0, unprobed = 0, ret;
	size_t len;
	uint8_t *buf;

	strcpy(f.path, "/lib/big.so");
	strcpy(u.path, "/lib/odd\x1b.so");
	strcpy(u.function, "malloc");
	strcpy(u.reason, "the kernel refuses a probe on its instruction (error 524)");
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_file(w, &f), 0);
	ck_assert_int_eq(mt_artifact_write_unprobed(w, &u), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, &len);
	for (int version = 2; version >= 1; version--) {
		put32(buf + 8, (uint32_t)version);
		ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, NULL, 0), 0);
		files = unprobed = 0;
		while ((ret = mt_artifact_next(r, &it)) > 0) {
			if (it.type == MT_ITEM_FILE) {
				ck_assert_uint_eq(it.file->probes, 70000);
				files++;
			}
			if (it.type != MT_ITEM_UNPROBED)
				continue;
			ck_assert_int_eq(it.unprobed->error, 95);
			ck_assert_str_eq(it.unprobed->path, u.path);
			ck_assert_str_eq(it.unprobed->function, "malloc");
			ck_assert_str_eq(it.unprobed->reason, u.reason);
			unprobed++;
		}
		ck_assert_int_eq(ret, 0);
		ck_assert_int_eq(files, 1);
		ck_assert_int_eq(unprobed, version == 2);
		ck_assert(!mt_artifact_truncated(r));
		mt_artifact_close(r);
	}
	unlink(path);
	free(path);
	free(buf);
}
END_TEST

/* The footer counts what reached the file, whatever the caller believed. */
START_TEST(footer_counts_written_events)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {.events = 12345};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_event e = mkev(1);
	char *path = mt_tmpfile();

	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while (mt_artifact_next(r, &it) > 0)
		if (it.type == MT_ITEM_FOOTER)
			ck_assert_uint_eq(it.footer->events, 1);
	ck_assert_str_eq(mt_artifact_error(r), "");
	mt_artifact_close(r);
	unlink(path);
	free(path);
}
END_TEST

/* Benchmark marks (type 12) keep their place among the events, their fields and a long URI. */
START_TEST(bench_marks)
{
	struct mt_artifact_bench start = {.ts_ns = 7, .what = MT_BENCH_START},
				 uri = {.ts_ns = 9, .pid = -5, .what = MT_BENCH_URI};
	struct mt_artifact_footer foot = {.events = 2};
	struct mt_event e1 = mkev(1), e2 = mkev(2);
	struct mt_artifact_writer *w;
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char *path = mt_tmpfile(), order[8] = "";
	size_t n = 0;

	memset(uri.uri, 'u', MT_ARTIFACT_BENCH_URI_MAX);
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, &e1, 1), 0);
	ck_assert_int_eq(mt_artifact_write_bench(w, &start), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, &e2, 1), 0);
	ck_assert_int_eq(mt_artifact_write_bench(w, &uri), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while (mt_artifact_next(r, &it) > 0 && n < sizeof(order) - 1) {
		if (it.type == MT_ITEM_EVENTS)
			order[n++] = 'e';
		if (it.type != MT_ITEM_BENCH)
			continue;
		order[n++] = 'b';
		if (it.bench->what == MT_BENCH_START) {
			ck_assert_uint_eq(it.bench->ts_ns, 7);
			ck_assert_int_eq(it.bench->pid, 0);
			ck_assert_str_eq(it.bench->uri, "");
		} else {
			ck_assert_int_eq(it.bench->what, MT_BENCH_URI);
			ck_assert_int_eq(it.bench->pid, -5);
			ck_assert_uint_eq(strlen(it.bench->uri), MT_ARTIFACT_BENCH_URI_MAX);
		}
	}
	ck_assert_str_eq(order, "ebeb");
	ck_assert_str_eq(mt_artifact_error(r), "");
	mt_artifact_close(r);
	unlink(path);
	free(path);
}
END_TEST

/* Many events in uneven calls: several buffer flushes, records split, reader chunks. */
START_TEST(many_events_through_the_file)
{
	enum { N = 100000 };
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_event *ev = malloc(N * sizeof(*ev));
	char *path = mt_tmpfile();
	size_t i, done = 0, step = 1;
	uint64_t nev = 0;
	int ret;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < N; i++)
		ev[i] = mkev(i);
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	while (done < N) {
		size_t k = step < N - done ? step : N - done;

		ck_assert_int_eq(mt_artifact_write_events(w, ev + done, k), 0);
		done += k;
		step = step * 3 + 1;
	}
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type != MT_ITEM_EVENTS)
			continue;
		ck_assert_uint_le(it.n_events, 4096);
		ck_assert_mem_eq(it.events, ev + nev, it.n_events * sizeof(*ev));
		nev += it.n_events;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(nev, N);
	ck_assert_uint_eq(mt_artifact_events_read(r), N);
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);
	unlink(path);
	free(path);
	free(ev);
}
END_TEST

struct thread_arg {
	struct mt_artifact_writer *w;
	int n;
};

static void *event_thread(void *p)
{
	struct thread_arg *a = p;
	int i;

	for (i = 0; i < a->n; i++) {
		struct mt_event e[7];

		for (int j = 0; j < 7; j++)
			e[j] = mkev((uint64_t)(i * 7 + j));
		if (mt_artifact_write_events(a->w, e, 7))
			return (void *)1;
	}
	return NULL;
}

/* One thread writes events while another writes process and file records. */
START_TEST(two_writer_threads)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {0};
	struct thread_arg a;
	pthread_t t;
	char *path = mt_tmpfile();
	size_t len;
	uint8_t *buf;
	struct counts c;
	void *tret;
	int i;

	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	a.w = w;
	a.n = 20000;
	ck_assert_int_eq(pthread_create(&t, NULL, event_thread, &a), 0);
	for (i = 0; i < 5000; i++) {
		struct mt_artifact_process p = {.pid = (uint32_t)i};
		struct mt_artifact_file f = {.file_id = (uint16_t)i};

		snprintf(p.exe, sizeof(p.exe), "/bin/p%d", i);
		snprintf(f.path, sizeof(f.path), "/lib/f%d.so", i);
		ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
		ck_assert_int_eq(mt_artifact_write_file(w, &f), 0);
	}
	pthread_join(t, &tret);
	ck_assert_ptr_null(tret);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, &len);
	c = read_all(buf, len);
	ck_assert_int_eq(c.err, 0);
	ck_assert_int_eq(c.processes, 5000);
	ck_assert_int_eq(c.files, 5000);
	ck_assert_uint_eq(c.events, 20000 * 7);
	ck_assert_int_eq(c.footers, 1);
	unlink(path);
	free(path);
	free(buf);
}
END_TEST

/* Strings at their limits are kept whole; longer ones are clamped by the writer. */
START_TEST(long_strings)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_process p = {.pid = 1};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_artifact_header h = test_header;
	char *path = mt_tmpfile();
	char *big = malloc(100000);
	char *argv[] = {big, "x", NULL};

	memset(big, 'a', 99999);
	big[99999] = '\0';
	memset(p.exe, 'e', sizeof(p.exe)); /* no NUL at all: the writer must stop at 4095 */
	h.argc = 2;
	h.argv = argv;
	h.watcher = "a-watcher-name-longer-than-thirty-one-bytes";
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	ck_assert_int_eq(mt_artifact_info(r)->argc, 2);
	ck_assert_uint_eq(strlen(mt_artifact_info(r)->argv[0]), MT_ARTIFACT_ARG_MAX);
	ck_assert_str_eq(mt_artifact_info(r)->argv[1], "x");
	ck_assert_uint_eq(strlen(mt_artifact_info(r)->watcher), MT_ARTIFACT_WATCHER_MAX);
	ck_assert_int_eq(mt_artifact_next(r, &it), 1);
	ck_assert_int_eq(it.type, MT_ITEM_PROCESS);
	ck_assert_uint_eq(strlen(it.process->exe), 4095);
	mt_artifact_close(r);
	unlink(path);
	free(path);
	free(big);
}
END_TEST

/*
 * The header's flags (memtrack attach) come after the arguments, written only when set: a
 * launched run's header is as before (0 read back), an attach's says so.
 */
START_TEST(header_flags_after_the_arguments)
{
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_writer *w;
	struct mt_artifact_reader *r;
	struct mt_artifact_header h = test_header;
	char *path = mt_tmpfile();
	char *argv[] = {"server", "--port", "80", NULL};

	h.argc = 3;
	h.argv = argv;
	for (uint32_t flags = 0; flags <= MT_ARTIFACT_ATTACHED; flags++) {
		h.flags = flags;
		ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
		ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
		ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
		ck_assert_uint_eq(mt_artifact_info(r)->flags, flags);
		ck_assert_int_eq(mt_artifact_info(r)->argc, 3);
		ck_assert_str_eq(mt_artifact_info(r)->argv[2], "80");
		mt_artifact_close(r);
	}
	unlink(path);
	free(path);
}
END_TEST

/* A command line larger than the header limit keeps the arguments that fit. */
START_TEST(huge_command_line)
{
	enum { N = 200 };
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_reader *r;
	struct mt_artifact_header h = test_header;
	char *path = mt_tmpfile();
	char *arg = malloc(MT_ARTIFACT_ARG_MAX + 1);
	char *argv[N + 1];
	int i;

	memset(arg, 'z', MT_ARTIFACT_ARG_MAX);
	arg[MT_ARTIFACT_ARG_MAX] = '\0';
	for (i = 0; i < N; i++)
		argv[i] = arg;
	argv[N] = NULL;
	h.argc = N;
	h.argv = argv;
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	/* 4 MiB / (65535 + 4) */
	ck_assert_int_eq(mt_artifact_info(r)->argc, 63);
	mt_artifact_close(r);
	unlink(path);
	free(path);
	free(arg);
}
END_TEST

START_TEST(writer_errors)
{
	struct mt_artifact_writer *w = (void *)1;

	ck_assert_int_eq(mt_artifact_create(&w, "/nonexistent-dir/x.mtk", &test_header), -ENOENT);
	ck_assert_ptr_null(w);
	/* The header goes straight to the file: a full disk is seen at once. */
	if (access("/dev/full", W_OK) == 0) {
		int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(mt_artifact_create_fd(&w, fd, "/dev/full", &test_header), -ENOSPC);
		/* by name, a device is no artifact (base/regfile.h) */
		ck_assert_int_eq(mt_artifact_create(&w, "/dev/full", &test_header), -EINVAL);
	}
	ck_assert_int_eq(mt_artifact_finish(NULL, NULL), -EINVAL);
}
END_TEST

/* The worked example in docs/FORMAT.md is what the writer produces, byte for byte. */
START_TEST(documented_example)
{
	char *const argv[] = {"true", NULL};
	const struct mt_artifact_header h = {
	    .start_time_ns = 1700000000000000000ULL,
	    .start_mono_ns = 5000000000ULL,
	    .watcher = "tracepoint",
	    .argc = 1,
	    .argv = argv,
	};
	struct mt_artifact_process p = {.pid = 1234, .exe = "/t", .position = "0"};
	struct mt_event e[2] = {{.ts_ns = 5000001000ULL,
				 .pid = 1234,
				 .tid = 1234,
				 .addr = 0x5555000010,
				 .size = 32,
				 .file_id = 1,
				 .kind = MT_K_MALLOC},
				{.ts_ns = 5000003000ULL,
				 .pid = 1234,
				 .tid = 1234,
				 .addr = 0x5555000010,
				 .file_id = 1,
				 .kind = MT_K_FREE}};
	struct mt_artifact_footer f = {.end_mono_ns = 5002000000ULL};
	struct mt_artifact_writer *w;
	char *path = mt_tmpfile(), *doc, *line;
	uint8_t want[512];
	size_t n = 0, len, doclen;
	uint8_t *got;

	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, e, 2), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &f), 0);
	got = slurp(path, &len);
	doc = (char *)slurp(MT_SOURCE_DIR "/docs/FORMAT.md", &doclen);
	doc = realloc(doc, doclen + 1);
	doc[doclen] = '\0';
	line = strstr(doc, "## Example");
	ck_assert_ptr_nonnull(line);
	/* Lines "OFFSET: xx xx ... (up to 16 bytes)  comment" */
	while ((line = strchr(line, '\n'))) {
		unsigned int off, b;
		int used = 0;

		line++;
		if (sscanf(line, "%8x:%n", &off, &used) != 1 || used != 9)
			continue;
		ck_assert_uint_eq(off, n);
		/* Bytes are separated by one space; two spaces start the comment. */
		for (line += used; line[0] == ' ' && line[1] != ' '; line += 3) {
			ck_assert_int_eq(sscanf(line, " %2x", &b), 1);
			ck_assert_uint_lt(n, sizeof(want));
			want[n++] = (uint8_t)b;
		}
	}
	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(got, want, n);
	free(doc);
	free(got);
	unlink(path);
	free(path);
}
END_TEST

/* ---- truncation ----------------------------------------------------------------------------- */

/* Cut a small artifact at every byte: nothing crashes, and every cut past the header reads. */
START_TEST(cut_at_every_byte)
{
	size_t len, hdr, cut;
	uint8_t *buf = small_artifact(&len, &hdr);
	uint64_t last_events = 0;

	for (cut = 0; cut <= len; cut++) {
		struct mt_artifact_reader *r;
		char err[MT_ARTIFACT_ERRLEN] = "";
		/* A private copy, so reading past the cut is caught by the sanitizers. */
		uint8_t *copy = malloc(cut ? cut : 1);
		int ret;

		memcpy(copy, buf, cut);
		ret = mt_artifact_open_mem(&r, copy, cut, err, sizeof(err));
		if (cut < hdr) {
			ck_assert_int_eq(ret, -EBADMSG);
			ck_assert_msg(strstr(err, cut ? "truncated" : "empty"), "cut %zu: %s", cut,
				      err);
			ck_assert_ptr_null(r);
		} else {
			struct counts c;

			ck_assert_int_eq(ret, 0);
			mt_artifact_close(r);
			c = read_all(copy, cut);
			ck_assert_msg(c.err == 0, "cut %zu: %s", cut, c.msg);
			ck_assert_int_eq(c.truncated, cut < len);
			ck_assert_int_eq(c.footers, cut == len);
			/* A longer prefix never holds fewer events. */
			ck_assert_uint_ge(c.events, last_events);
			last_events = c.events;
		}
		free(copy);
	}
	ck_assert_uint_eq(last_events, 5);
	free(buf);
}
END_TEST

/* Through a file, as `memtrack report` reads it, cut inside the event batch. */
START_TEST(cut_file_keeps_complete_events)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	char *path = mt_tmpfile();
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_event ev[3] = {mkev(0), mkev(1), mkev(2)};
	/* Into the first block (3 events): its header and count, 2 events, half of the third. */
	size_t third = encoded_len(ev, 3) - encoded_len(ev, 2);
	size_t cut =
	    record_at(buf, len, hdr, MT_REC_BLOCK) + 8 + 4 + encoded_len(ev, 2) + third / 2;
	uint64_t nev = 0;
	int ret;

	spit(path, buf, cut);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0)
		if (it.type == MT_ITEM_EVENTS)
			nev += it.n_events;
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(nev, 2);
	ck_assert(mt_artifact_truncated(r));
	mt_artifact_close(r);
	unlink(path);
	free(path);
	free(buf);
}
END_TEST

/* Events of r until it has no item (its return: 0 or -EAGAIN), counted into *nev. */
static int read_events(struct mt_artifact_reader *r, uint64_t *nev)
{
	struct mt_artifact_item it;
	int ret;

	while ((ret = mt_artifact_next(r, &it)) > 0)
		if (it.type == MT_ITEM_EVENTS)
			*nev += it.n_events;
	return ret;
}

/* A file that holds the bytes of buf, then a record header promising 100 bytes and 10 of them. */
static void spit_with_half_record(const char *path, const uint8_t *buf, size_t len)
{
	uint8_t half[18] = {0};
	FILE *f;

	put32(half, MT_REC_PROCESS);
	put32(half + 4, 100);
	spit(path, buf, len);
	f = fopen(path, "ab");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(half, 1, sizeof(half), f), sizeof(half));
	fclose(f);
}

/*
 * docs/FORMAT.md, "Writing in progress": while the writer holds the file, a follower reads each
 * record once it is whole and is told -EAGAIN (no error) where there is none yet; a plain reading
 * ends there, in progress, not truncated; a half-written record waits, as long as a writer holds
 * the lock, and is a cut once none does.
 */
START_TEST(follow_a_file_as_it_is_written)
{
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_reader *f, *r;
	struct mt_artifact_writer *w;
	struct mt_event ev[10];
	char *path = mt_tmpfile(), *half = mt_tmpfile();
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	uint64_t nev = 0, plain = 0;
	size_t len;
	uint8_t *buf;
	int fd;

	for (size_t i = 0; i < 10; i++)
		ev[i] = mkev(i);
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_open(&f, path, NULL, 0), 0);
	ck_assert(mt_artifact_writer_alive(f));
	ck_assert_int_eq(mt_artifact_follow(f, true), 0);
	ck_assert_int_eq(read_events(f, &nev), -EAGAIN);
	ck_assert_str_eq(mt_artifact_error(f), "");
	ck_assert_int_eq(mt_artifact_write_events(w, ev, 10), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	ck_assert_int_eq(read_events(f, &nev), -EAGAIN);
	ck_assert_uint_eq(nev, 10);

	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	ck_assert_int_eq(read_events(r, &plain), 0);
	ck_assert_uint_eq(plain, 10);
	ck_assert(mt_artifact_in_progress(r) && !mt_artifact_truncated(r));
	mt_artifact_close(r);

	/* A record half written, the lock held by another open file (a writer between writes). */
	buf = slurp(path, &len);
	spit_with_half_record(half, buf, len);
	fd = open(half, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_OFD_SETLK, &l), 0);
	ck_assert_int_eq(mt_artifact_open(&r, half, NULL, 0), 0);
	plain = 0;
	ck_assert_int_eq(read_events(r, &plain), 0);
	ck_assert(plain == 10 && mt_artifact_in_progress(r) && !mt_artifact_truncated(r));
	mt_artifact_close(r);
	close(fd);
	ck_assert_int_eq(mt_artifact_open(&r, half, NULL, 0), 0);
	ck_assert(!mt_artifact_writer_alive(r));
	plain = 0;
	ck_assert_int_eq(read_events(r, &plain), 0);
	ck_assert(plain == 10 && !mt_artifact_in_progress(r) && mt_artifact_truncated(r));
	mt_artifact_close(r);

	ck_assert_int_eq(mt_artifact_write_events(w, ev, 10), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert(!mt_artifact_writer_alive(f));
	ck_assert_int_eq(read_events(f, &nev), 0);
	ck_assert_uint_eq(nev, 20);
	ck_assert(!mt_artifact_truncated(f) && !mt_artifact_in_progress(f));
	mt_artifact_close(f);
	free(buf);
	unlink(half);
	unlink(path);
	free(half);
	free(path);
}
END_TEST

/* ---- corrupt and foreign files -------------------------------------------------------------- */

static void expect_error(const uint8_t *buf, size_t len, int err, const char *needle)
{
	struct counts c = read_all(buf, len);

	ck_assert_msg(c.err == err, "got %d (%s), want %d", c.err, c.msg, err);
	ck_assert_msg(strstr(c.msg, needle), "message '%s' lacks '%s'", c.msg, needle);
}

/*
 * An AddMarker's mark (type 12, what 4): its marker and timestamp come back; the other kinds
 * keep their 20 bytes (and a URI's), so that what was written before reads as before. A marker
 * without its timestamp is corrupt; a timestamp after another kind's URI is ignored, as a field
 * at the end of a payload is.
 */
START_TEST(bench_marker_records)
{
	struct mt_artifact_bench start = {.ts_ns = 7, .what = MT_BENCH_START},
				 marker = {.ts_ns = 8,
					   .pid = 42,
					   .what = MT_BENCH_MARKER,
					   .marker = MT_BENCH_ROUND_END,
					   .marker_ts_ns = 1ull << 40};
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_writer *w;
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char *path = mt_tmpfile();
	size_t len, hdr, at_start, at_marker;
	uint8_t *buf, *copy;
	int marks = 0, ret;

	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_bench(w, &start), 0);
	ck_assert_int_eq(mt_artifact_write_bench(w, &marker), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type != MT_ITEM_BENCH || it.bench->what != MT_BENCH_MARKER)
			continue;
		marks++;
		ck_assert_uint_eq(it.bench->ts_ns, 8);
		ck_assert_int_eq(it.bench->pid, 42);
		ck_assert_uint_eq(it.bench->marker, MT_BENCH_ROUND_END);
		ck_assert_uint_eq(it.bench->marker_ts_ns, 1ull << 40);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(marks, 1);
	mt_artifact_close(r);

	buf = slurp(path, &len);
	hdr = 16 + le32toh(*(uint32_t *)(buf + 12));
	at_start = record_at(buf, len, hdr, MT_REC_BENCH);
	at_marker = at_start + 8 + get32(buf + at_start + 4);
	ck_assert_uint_eq(get32(buf + at_start + 4), 20);
	ck_assert_uint_eq(get32(buf + at_marker), MT_REC_BENCH);
	ck_assert_uint_eq(get32(buf + at_marker + 4), 28);
	copy = malloc(len);
	memcpy(copy, buf, len);
	copy[at_start + 8 + 12] = MT_BENCH_MARKER;
	expect_error(copy, len, -EBADMSG, "bad benchmark mark");
	memcpy(copy, buf, len);
	copy[at_marker + 8 + 12] = MT_BENCH_START;
	ck_assert_int_eq(read_all(copy, len).err, 0);
	free(copy);
	free(buf);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(corrupt_lengths)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	uint8_t *copy = malloc(len);
	/* Record offsets in the small artifact. */
	size_t proc = hdr, file = proc + 45; /* 8 + 16 + exe 4 + 13 + position 4 */
	static const uint32_t bad[] = {0xffffffffu, 0x7fffffffu, MT_ARTIFACT_META_MAX + 1,
				       0,	    1,		 19};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(copy, buf, len);
		put32(copy + proc + 4, bad[i]);
		expect_error(copy, len, -EBADMSG, "record length out of bounds");
	}
	/* A string longer than its record. */
	memcpy(copy, buf, len);
	put32(copy + proc + 8 + 16, 1000);
	expect_error(copy, len, -EBADMSG, "bad process record");
	/* A path longer than any path, and than its record. */
	memcpy(copy, buf, len);
	put32(copy + file + 8 + 8 + 4 + 40, 5000);
	expect_error(copy, len, -EBADMSG, "bad file record");
	/* An unknown record type of sane length is skipped... */
	memcpy(copy, buf, len);
	put32(copy + file, 77);
	{
		struct counts c = read_all(copy, len);

		ck_assert_int_eq(c.err, 0);
		ck_assert_int_eq(c.files, 0);
		ck_assert_uint_eq(c.events, 5);
	}
	/* ...one of absurd length is not. */
	put32(copy + file + 4, 0x80000000u);
	expect_error(copy, len, -EBADMSG, "offset");
	free(copy);
	free(buf);
}
END_TEST

/* Event blocks whose length, count or entries the format does not allow. */
START_TEST(corrupt_blocks)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	uint8_t *copy = malloc(len);
	size_t block = record_at(buf, len, hdr, MT_REC_BLOCK);
	static const uint32_t bad_len[] = {0, 6, MT_ARTIFACT_BLOCK_MAX + 1, 0xffffffffu};
	struct mt_event ev = mkev(0);

	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		memcpy(copy, buf, len);
		put32(copy + block + 4, bad_len[i]);
		expect_error(copy, len, -EBADMSG, "record length out of bounds");
	}
	/* No events, or more than its bytes can hold. */
	memcpy(copy, buf, len);
	put32(copy + block + 8, 0);
	expect_error(copy, len, -EBADMSG, "bad event count");
	put32(copy + block + 8, get32(buf + block + 4));
	expect_error(copy, len, -EBADMSG, "bad event count");
	/* A count that disagrees with the entries, either way (the writer gathered the two calls'
	 * events into one block of 5). */
	memcpy(copy, buf, len);
	put32(copy + block + 8, 4);
	expect_error(copy, len, -EBADMSG, "more events than it counts");
	put32(copy + block + 8, 6);
	expect_error(copy, len, -EBADMSG, "counts 6 events but holds 5");
	/* An entry the format does not allow: the first event's tag with reserved bits in its
	 * extension byte. */
	memcpy(copy, buf, len);
	ck_assert(copy[block + 12] & MT_EVB_EXT);
	copy[block + 13] |= 0x80;
	expect_error(copy, len, -EBADMSG, "bad event block entry");
	/*
	 * An escape of an odd type at the start of the block: in version 4, one that must be
	 * understood; in version 5, a record inside the block, passed over when of a type this
	 * reader does not know (type 1: record type 0), refused when it cannot be inside a block
	 * (type 9: a footer).
	 */
	{
		static const uint8_t esc[] = {0x00, 0x01, 0x00};
		uint8_t *big = malloc(len + sizeof(esc));
		struct counts c;

		memcpy(big, buf, block + 12);
		memcpy(big + block + 12, esc, sizeof(esc));
		memcpy(big + block + 12 + sizeof(esc), buf + block + 12, len - block - 12);
		put32(big + block + 4, get32(buf + block + 4) + (uint32_t)sizeof(esc));
		c = read_all(big, len + sizeof(esc));
		ck_assert_msg(c.err == 0, "%s", c.msg);
		ck_assert_uint_eq(c.events, 5);
		big[block + 13] = 0x09;
		expect_error(big, len + sizeof(esc), -EBADMSG,
			     "a record that cannot be inside one");
		big[block + 13] = 0x01;
		put32(big + 8, 4);
		c = read_all(big, len + sizeof(esc));
		ck_assert_int_eq(c.err, -EPROTONOSUPPORT);
		ck_assert_msg(strstr(c.msg, "records this memtrack does not know (event block "
					    "entry type 1 at offset"),
			      "%s", c.msg);
		/* Type 2 is passed over. */
		big[block + 13] = 0x02;
		c = read_all(big, len + sizeof(esc));
		ck_assert_int_eq(c.err, 0);
		ck_assert_uint_eq(c.events, 5);
		free(big);
	}
	/* A block whose last entry is cut although the file goes on: corrupt, not truncated. */
	memcpy(copy, buf, len);
	put32(copy + block + 4, (uint32_t)(4 + encoded_len(&ev, 1) + 1));
	put32(copy + block + 8, 1);
	expect_error(copy, len, -EBADMSG, "corrupt");
	free(copy);
	free(buf);
}
END_TEST

/*
 * Older versions: a version-2 file (docs/FORMAT.md's version-2 example, 48-byte events) reads;
 * in a version-1 or -2 file, an event block is an unknown record, passed over.
 */
START_TEST(older_versions)
{
	static const uint8_t v2[] = {
	    0x4d, 0x54, 0x52, 0x41, 0x43, 0x4b, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x2a, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17, 0x00, 0xf2, 0x05, 0x2a,
	    0x01, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x74, 0x72, 0x61, 0x63, 0x65, 0x70,
	    0x6f, 0x69, 0x6e, 0x74, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x74, 0x72,
	    0x75, 0x65, 0x01, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0xd2, 0x04, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
	    0x00, 0x00, 0x2f, 0x74, 0x03, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0xe8, 0xf5,
	    0x05, 0x2a, 0x01, 0x00, 0x00, 0x00, 0xd2, 0x04, 0x00, 0x00, 0xd2, 0x04, 0x00, 0x00,
	    0x10, 0x00, 0x00, 0x55, 0x55, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x01, 0x00, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x01, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x80, 0x76, 0x24, 0x2a, 0x01, 0x00, 0x00, 0x00,
	};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	size_t len, hdr;
	uint8_t *buf;
	struct counts c;
	int ret, events = 0;

	ck_assert_uint_eq(sizeof(v2), 192);
	ck_assert_int_eq(mt_artifact_open_mem(&r, v2, sizeof(v2), NULL, 0), 0);
	ck_assert_uint_eq(mt_artifact_info(r)->version, 2);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type != MT_ITEM_EVENTS)
			continue;
		ck_assert_uint_eq(it.n_events, 1);
		ck_assert_uint_eq(it.events[0].ts_ns, 5000001000ULL);
		ck_assert_uint_eq(it.events[0].pid, 1234);
		ck_assert_uint_eq(it.events[0].addr, 0x5555000010ULL);
		ck_assert_uint_eq(it.events[0].size, 32);
		ck_assert_uint_eq(it.events[0].kind, MT_K_MALLOC);
		ck_assert_uint_eq(it.events[0].file_id, 1);
		events++;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(events, 1);
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);

	/* A version-5 file labelled 2: its blocks are skipped, so its footer's count is wrong. */
	buf = small_artifact(&len, &hdr);
	put32(buf + 8, 2);
	c = read_all(buf, len);
	ck_assert_uint_eq(c.events, 0);
	ck_assert_int_eq(c.processes, 2);
	ck_assert_int_eq(c.err, -EBADMSG);
	ck_assert_msg(strstr(c.msg, "footer counts 5 events but 0 were read"), "%s", c.msg);
	free(buf);
}
END_TEST

/* A stack record: its id, its frame count and its length must agree; version 3 skips it. */
START_TEST(stack_records)
{
	size_t len, hdr, at;
	uint8_t *buf = small_artifact(&len, &hdr);
	struct counts c;

	at = record_at(buf, len, hdr, MT_REC_STACK);
	ck_assert_uint_eq(get32(buf + at + 4), 12 + 8 * 128);
	/* No frame, more frames than a stack holds, more than the record holds, id 0. */
	put32(buf + at + 16, 0);
	c = read_all(buf, len);
	ck_assert_int_eq(c.err, -EBADMSG);
	ck_assert_msg(strstr(c.msg, "bad stack record"), "%s", c.msg);
	put32(buf + at + 16, 129);
	ck_assert_int_eq(read_all(buf, len).err, -EBADMSG);
	put32(buf + at + 16, 128);
	put32(buf + at + 8, 0);
	ck_assert_int_eq(read_all(buf, len).err, -EBADMSG);
	put32(buf + at + 8, 300);
	put32(buf + at + 4, 12 + 8 * 127);
	ck_assert_int_eq(read_all(buf, len).err, -EBADMSG);
	put32(buf + at + 4, 12 + 8 * 128);
	c = read_all(buf, len);
	ck_assert_int_eq(c.err, 0);
	ck_assert_uint_eq(c.events, 5);
	/* Labelled version 3: an unknown record type, passed over; the events still count. */
	put32(buf + 8, 3);
	c = read_all(buf, len);
	ck_assert_int_eq(c.err, 0);
	ck_assert_uint_eq(c.events, 5);
	free(buf);
}
END_TEST

START_TEST(footer_checks)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	uint8_t *copy = malloc(len + 1);

	/* The footer's event count disagrees with the batches. */
	memcpy(copy, buf, len);
	copy[len - MT_ARTIFACT_FOOTER_SIZE] ^= 1;
	expect_error(copy, len, -EBADMSG, "footer counts");
	/* Anything after the footer. */
	memcpy(copy, buf, len);
	copy[len] = 0;
	expect_error(copy, len + 1, -EBADMSG, "after the footer");
	free(copy);
	free(buf);
}
END_TEST

START_TEST(header_checks)
{
	size_t len, hdr;
	uint8_t *buf = small_artifact(&len, &hdr);
	uint8_t *copy = malloc(len);
	struct mt_artifact_reader *r;
	char err[MT_ARTIFACT_ERRLEN];

	memcpy(copy, buf, len);
	copy[0] = 'X';
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "not a memtrack artifact (bad magic)");
	ck_assert_int_eq(mt_artifact_open_mem(&r, "hello", 5, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "not a memtrack artifact (bad magic)");
	ck_assert_int_eq(mt_artifact_open_mem(&r, NULL, 0, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "not a memtrack artifact (empty file)");

	memcpy(copy, buf, len);
	put32(copy + 8, 8);
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EPROTONOSUPPORT);
	ck_assert_str_eq(err, "unsupported artifact format version 8 (this memtrack reads "
			      "versions 1 to 7)");

	memcpy(copy, buf, len);
	put32(copy + 12, MT_ARTIFACT_HEADER_MAX + 1);
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "header length"));

	/* argc claiming more arguments than the header could hold. */
	memcpy(copy, buf, len);
	put32(copy + 16 + 8 + 8 + 4 + 10, 1000000);
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "argument count"));

	/* An argument longer than the header. */
	memcpy(copy, buf, len);
	put32(copy + 16 + 8 + 8 + 4 + 10 + 4, 1000000);
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "argument"));

	/* A watcher name longer than any. */
	memcpy(copy, buf, len);
	put32(copy + 16 + 8 + 8, 32);
	ck_assert_int_eq(mt_artifact_open_mem(&r, copy, len, err, sizeof(err)), -EBADMSG);

	ck_assert_int_eq(mt_artifact_open(&r, "/nonexistent/x.mtk", err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "cannot open: No such file or directory");
	/* A directory is no artifact: refused before it is opened. */
	ck_assert_int_eq(mt_artifact_open(&r, "/", err, sizeof(err)), -EISDIR);
	ck_assert_str_eq(err, "cannot open: Is a directory");
	free(copy);
	free(buf);
}
END_TEST

/* ---- compressed event blocks (version 5) ---------------------------------------------------- */

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Random events shaped like a program's, so that zstd has something to find: times that move on
 * by a little, blocks from a small pool, a few sizes, threads taking turns; and one in 97 any
 * value at all in every field.
 */
static void random_events(struct mt_event *ev, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL | 1, ts = 1000;

	for (size_t i = 0; i < n; i++) {
		uint64_t r = xorshift(&x);
		struct mt_event e = {.file_id = 1};

		ts += r % 2000;
		e.ts_ns = ts;
		e.pid = 100 + (uint32_t)(r >> 12) % 2;
		e.tid = e.pid + (uint32_t)(r >> 14) % 3;
		e.addr = 0x555500000000ULL + (r >> 16) % 64 * 4096;
		e.kind = (r >> 24) & 1 ? MT_K_MALLOC : MT_K_FREE;
		if (e.kind == MT_K_MALLOC)
			e.size = 16u << (r >> 26) % 8;
		if ((r >> 32) % 97 == 0) {
			e.ts_ns = xorshift(&x);
			e.pid = (uint32_t)xorshift(&x);
			e.tid = (uint32_t)xorshift(&x);
			e.addr = xorshift(&x);
			e.size = xorshift(&x);
			e.old_addr = xorshift(&x);
			e.align = (uint32_t)xorshift(&x);
			e.file_id = (uint16_t)xorshift(&x);
			e.kind = (uint8_t)xorshift(&x);
			e.flags = (uint8_t)xorshift(&x);
			e.stack_id = (uint32_t)xorshift(&x);
		}
		/* The microsecond: all of a time that version 7 keeps. */
		e.ts_ns -= e.ts_ns % MT_ARTIFACT_MICRO_NS;
		ev[i] = e;
	}
}

/*
 * Write n events as the events thread does: in batches of 1 to 4096, a flush now and then, a
 * process record between some batches; seed 0: in one call. Returns the artifact's bytes.
 */
static uint8_t *events_artifact(const struct mt_event *ev, size_t n, uint64_t seed, size_t *len,
				size_t *hdr_len)
{
	struct mt_artifact_writer *w;
	struct mt_artifact_process p = {.pid = 100, .exe = "/bin/x"};
	struct mt_artifact_footer foot = {.end_mono_ns = 1};
	uint64_t x = seed | 1;
	char *path = mt_tmpfile();
	uint8_t *buf;

	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	for (size_t at = 0; at < n;) {
		uint64_t r = seed ? xorshift(&x) : 1;
		size_t k = seed ? 1 + r % 4096 : n;

		k = k < n - at ? k : n - at;
		ck_assert_int_eq(mt_artifact_write_events(w, ev + at, k), 0);
		at += k;
		if ((r >> 20) % 16 == 0)
			ck_assert_int_eq(mt_artifact_flush(w), 0);
		if ((r >> 24) % 32 == 0)
			ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
	}
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, len);
	unlink(path);
	free(path);
	*hdr_len = 16 + get32(buf + 12);
	return buf;
}

/* Records of a type in an artifact, and the offset of the last of them (0: none). */
static int count_records(const uint8_t *buf, size_t len, size_t hdr, uint32_t type, size_t *last)
{
	int n = 0;

	*last = 0;
	for (size_t at = hdr; at + 8 <= len; at += 8 + get32(buf + at + 4)) {
		if (get32(buf + at) == type) {
			*last = at;
			n++;
		}
	}
	return n;
}

/* Random streams of events come back bit for bit from compressed blocks. */
START_TEST(compressed_blocks_roundtrip)
{
	static const size_t sizes[] = {1, 7, 3000, 250000};

	for (uint64_t seed = 1; seed <= 4; seed++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s], len, hdr, last;
			struct mt_event *ev = malloc(n * sizeof(*ev));
			struct mt_artifact_reader *r;
			struct mt_artifact_item it;
			uint8_t *buf;
			size_t got = 0;
			int ret;

			random_events(ev, n, seed);
			buf = events_artifact(ev, n, seed, &len, &hdr);
			/* Big streams are compressed; a block of one event is not worth it. */
			if (n >= 3000)
				ck_assert_int_gt(count_records(buf, len, hdr, MT_REC_UBLOCK, &last),
						 0);
			if (n == 1)
				ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_UBLOCK, &last),
						 0);
			ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, NULL, 0), 0);
			while ((ret = mt_artifact_next(r, &it)) > 0) {
				if (it.type == MT_ITEM_FOOTER)
					ck_assert_uint_eq(it.footer->events, n);
				if (it.type != MT_ITEM_EVENTS)
					continue;
				ck_assert_uint_le(got + it.n_events, n);
				ck_assert_msg(
				    !memcmp(it.events, ev + got, it.n_events * sizeof(*ev)),
				    "seed %llu: events from %zu differ", (unsigned long long)seed,
				    got);
				got += it.n_events;
			}
			ck_assert_msg(ret == 0, "%s", mt_artifact_error(r));
			ck_assert_uint_eq(got, n);
			ck_assert(!mt_artifact_truncated(r));
			mt_artifact_close(r);
			free(buf);
			free(ev);
		}
	}
}
END_TEST

/*
 * A file cut at any byte of its last compressed block (its header, its lengths, its frame) reads
 * as truncated, with every event of the blocks before it and none of the cut one.
 */
START_TEST(compressed_block_cut_at_every_byte)
{
	enum { N = 1500 };
	struct mt_event *ev = malloc(2 * N * sizeof(*ev));
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {.end_mono_ns = 1};
	char *path = mt_tmpfile();
	size_t len, hdr, last, first;
	uint8_t *buf;

	random_events(ev, 2 * N, 9);
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev, N), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev + N, N), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, &len);
	hdr = 16 + get32(buf + 12);
	ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_UBLOCK, &last), 2);
	first = record_at(buf, len, hdr, MT_REC_UBLOCK);
	ck_assert_uint_eq(get32(buf + first + 8), N);
	for (size_t cut = last; cut < last + 8 + get32(buf + last + 4); cut++) {
		uint8_t *copy = malloc(cut);
		struct counts c;

		memcpy(copy, buf, cut);
		c = read_all(copy, cut);
		ck_assert_msg(c.err == 0, "cut %zu: %s", cut, c.msg);
		ck_assert(c.truncated);
		ck_assert_uint_eq(c.events, N);
		free(copy);
	}
	ck_assert_uint_eq(read_all(buf, len).events, 2 * N);
	unlink(path);
	free(path);
	free(buf);
	free(ev);
}
END_TEST

/*
 * What the reader hands out, one letter an item: 'e' an event, 'P' a process record, 'R' an RSS
 * sample, 'F' the footer; into out (at most cap - 1 letters). Returns the reader's result.
 */
static int read_letters(const uint8_t *buf, size_t len, char *out, size_t cap)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	size_t n = 0;
	int ret;

	ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		size_t k = it.type == MT_ITEM_EVENTS ? it.n_events : 1;
		char c = it.type == MT_ITEM_EVENTS    ? 'e'
			 : it.type == MT_ITEM_PROCESS ? 'P'
			 : it.type == MT_ITEM_RSS     ? 'R'
			 : it.type == MT_ITEM_FOOTER  ? 'F'
						      : '?';

		ck_assert_uint_lt(n + k, cap);
		memset(out + n, c, k);
		n += k;
	}
	out[n] = '\0';
	mt_artifact_close(r);
	return ret;
}

/*
 * Records written while a block is being gathered go inside it, among its events, in compressed
 * and plain blocks alike: the reader hands each out after exactly the events written before it,
 * and a file cut at any byte reads as a prefix of the whole.
 */
START_TEST(records_inside_blocks)
{
	static const size_t sizes[] = {1, 700};
	char *want = malloc(4096), *got = malloc(4096);

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], len, hdr, last, w_n = 0;
		struct mt_event *ev = malloc(3 * n * sizeof(*ev));
		struct mt_artifact_process p = {.pid = 100, .exe = "/bin/x"};
		struct mt_artifact_rss rss = {
		    .ts_ns = 5, .pid = 100, .why = MT_RSS_TICK, .anon = 4096};
		struct mt_artifact_footer foot = {.end_mono_ns = 1};
		struct mt_artifact_writer *w;
		char *path = mt_tmpfile();
		uint8_t *buf;

		random_events(ev, 3 * n, 11);
		ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
		/* A block of one event and a record is too small for zstd: a plain block. */
		for (size_t part = 0; part < (n > 1 ? 3 : 1); part++) {
			ck_assert_int_eq(mt_artifact_write_events(w, ev + part * n, n), 0);
			memset(want + w_n, 'e', n);
			w_n += n;
			ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
			want[w_n++] = 'P';
			if (n == 1)
				continue;
			ck_assert_int_eq(mt_artifact_write_rss(w, &rss), 0);
			want[w_n++] = 'R';
		}
		want[w_n++] = 'F';
		want[w_n] = '\0';
		ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
		buf = slurp(path, &len);
		hdr = 16 + get32(buf + 12);
		/* One block, the records inside it. */
		ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_PROCESS, &last), 0);
		ck_assert_int_eq(
		    count_records(buf, len, hdr, n > 1 ? MT_REC_UBLOCK : MT_REC_BLOCK, &last), 1);
		ck_assert_int_eq(read_letters(buf, len, got, 4096), 0);
		ck_assert_str_eq(got, want);
		for (size_t cut = hdr; cut < len; cut++) {
			uint8_t *copy = malloc(cut);

			memcpy(copy, buf, cut);
			ck_assert_int_eq(read_letters(copy, cut, got, 4096), 0);
			ck_assert_msg(!strncmp(got, want, strlen(got)), "cut %zu: %s", cut, got);
			free(copy);
		}
		unlink(path);
		free(path);
		free(buf);
		free(ev);
	}
	free(want);
	free(got);
}
END_TEST

/* A corrupt compressed block gives one sentence, never a crash nor other events. */
static void expect_corrupt_or_same(const uint8_t *buf, size_t len, const struct counts *good)
{
	struct counts c = read_all(buf, len);

	if (c.err == 0) {
		ck_assert_uint_eq(c.events, good->events);
		ck_assert_uint_eq(c.hash, good->hash);
		return;
	}
	ck_assert_int_eq(c.err, -EBADMSG);
	ck_assert_msg(!strncmp(c.msg, "corrupt artifact at offset ", 27) && !strchr(c.msg, '\n'),
		      "%s", c.msg);
}

START_TEST(corrupt_compressed_blocks)
{
	enum { N = 1000 };
	struct mt_event ev[N];
	size_t len, hdr, z, zlen, frame;
	uint8_t *buf, *copy;
	struct counts good;

	random_events(ev, N, 5);
	buf = events_artifact(ev, N, 0, &len, &hdr);
	ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_UBLOCK, &z), 1);
	zlen = get32(buf + z + 4);
	frame = z + 8 + MT_ARTIFACT_CBLOCK_FIXED;
	good = read_all(buf, len);
	ck_assert_int_eq(good.err, 0);
	ck_assert_uint_eq(good.events, N);
	copy = malloc(len);
	/* Every byte of the frame, changed. */
	for (size_t i = frame; i < z + 8 + zlen; i++) {
		memcpy(copy, buf, len);
		copy[i] ^= 0x5a;
		expect_corrupt_or_same(copy, len, &good);
	}
	/* A checksum that does not match its content. */
	memcpy(copy, buf, len);
	copy[z + 8 + zlen - 1] ^= 1;
	expect_error(copy, len, -EBADMSG, "compressed event block does not decompress");
	/* Streams' lengths that do not add up to the frame's content, or split it elsewhere. */
	memcpy(copy, buf, len);
	put32(copy + z + 8 + 4, get32(buf + z + 8 + 4) + 1);
	expect_error(copy, len, -EBADMSG, "not one zstd frame of its streams' length");
	put32(copy + z + 8 + 8, get32(buf + z + 8 + 8) - 1);
	expect_corrupt_or_same(copy, len, &good);
	ck_assert_int_ne(read_all(copy, len).err, 0);
	memcpy(copy, buf, len);
	put32(copy + z + 8 + 4 + 4 * MT_EVB_S_SIZE, MT_ARTIFACT_BLOCK_MAX);
	expect_error(copy, len, -EBADMSG, "bad event count or stream lengths");
	/* Counts that the streams cannot hold, or that disagree with them. */
	memcpy(copy, buf, len);
	put32(copy + z + 8, 0);
	expect_error(copy, len, -EBADMSG, "bad event count or stream lengths");
	put32(copy + z + 8, get32(buf + z + 8 + 4) + 1);
	expect_error(copy, len, -EBADMSG, "bad event count or stream lengths");
	put32(copy + z + 8, N - 1);
	expect_error(copy, len, -EBADMSG, "more events than it counts");
	put32(copy + z + 8, N + 1);
	expect_error(copy, len, -EBADMSG, "counts 1001 events but holds 1000");
	/* A record length that cuts the frame while the file goes on. */
	memcpy(copy, buf, len);
	put32(copy + z + 4, (uint32_t)zlen - 1);
	expect_corrupt_or_same(copy, len, &good);
	ck_assert_int_ne(read_all(copy, len).err, 0);
	/* Labelled version 4, the block is an unknown record passed over: the footer disagrees. */
	memcpy(copy, buf, len);
	put32(copy + 8, 4);
	expect_error(copy, len, -EBADMSG, "footer counts 1000 events but 0 were read");
	/* Labelled version 5, likewise: a columnar block is no type-13 block. */
	put32(copy + 8, 5);
	expect_error(copy, len, -EBADMSG, "footer counts 1000 events but 0 were read");
	/* Labelled version 6, likewise: a block of microseconds is no type-14 block. */
	put32(copy + 8, 6);
	expect_error(copy, len, -EBADMSG, "footer counts 1000 events but 0 were read");
	free(copy);
	free(buf);
}
END_TEST

/*
 * Version 7 keeps an event's time to the microsecond (docs/FORMAT.md, "Columnar event block in
 * microseconds"): it reads back as that microsecond's first nanosecond, from a compressed block
 * and from a plain one alike; version 6's blocks still read to the nanosecond.
 */
START_TEST(times_in_microseconds)
{
	enum { N = 2000 };
	struct mt_event ev[N + 1];
	struct mt_artifact_writer *w;
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char *path = mt_tmpfile();
	size_t len, hdr, at, got = 0, sub_us = 0;
	uint8_t *buf;
	int ret;

	for (size_t i = 0; i <= N; i++)
		ev[i] = (struct mt_event){.ts_ns = 5000000000ULL + i * 1537,
					  .pid = 7,
					  .tid = 7,
					  .addr = 0x1000 + 16 * (i % 50),
					  .size = i % 2 ? 0 : 32,
					  .kind = i % 2 ? MT_K_FREE : MT_K_MALLOC};
	ev[N].ts_ns = UINT64_MAX;
	ck_assert_int_eq(mt_artifact_create(&w, path, &test_header), 0);
	ck_assert_int_eq(mt_artifact_write_events(w, ev, N), 0);
	ck_assert_int_eq(mt_artifact_flush(w), 0);
	/* One event alone: a plain block, its time from the block gathered in microseconds. */
	ck_assert_int_eq(mt_artifact_write_events(w, ev + N, 1), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	buf = slurp(path, &len);
	unlink(path);
	free(path);
	hdr = 16 + get32(buf + 12);
	ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_UBLOCK, &at), 1);
	ck_assert_int_eq(count_records(buf, len, hdr, MT_REC_BLOCK, &at), 1);
	ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0)
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++, got++)
			ck_assert_uint_eq(it.events[i].ts_ns,
					  ev[got].ts_ns - ev[got].ts_ns % MT_ARTIFACT_MICRO_NS);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(got, N + 1);
	mt_artifact_close(r);
	free(buf);
	buf = slurp(MT_SOURCE_DIR "/tests/corpus/v6-cblock-churn", &len);
	ck_assert_int_eq(mt_artifact_open_mem(&r, buf, len, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0)
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++)
			sub_us += it.events[i].ts_ns % MT_ARTIFACT_MICRO_NS != 0;
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_gt(sub_us, 0);
	mt_artifact_close(r);
	free(buf);
}
END_TEST

/*
 * Artifacts of versions 3 to 5, as their writers made them (the fuzzer's seeds), read as they
 * always did; version 6's columnar blocks, whole and cut, and with events of kind 36 (calls
 * not recorded: sn_rust 2 unrecorded); and version 7's, whole and cut.
 */
START_TEST(older_artifacts_read)
{
	static const struct {
		const char *name;
		bool truncated;
	} seeds[] = {
	    {"v3-valid-rich", false},	      {"v3-real-calloc-realloc", false},
	    {"v3-lifecycle-vfork", false},    {"v4-real-stacks", false},
	    {"v4-rss-samples", false},	      {"v4-truncated-mid-stack", true},
	    {"v3-truncated-mid-block", true}, {"v5-zblock-churn", false},
	    {"v5-records-in-blocks", false},  {"v5-zblock-truncated", true},
	    {"v6-cblock-churn", false},	      {"v6-cblock-truncated", true},
	    {"v6-not-recorded", false},	      {"v7-ublock-churn", false},
	    {"v7-ublock-truncated", true},
	};
	size_t len;
	uint8_t *buf;
	struct counts c;

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/tests/corpus/%s", MT_SOURCE_DIR, seeds[i].name);
		buf = slurp(path, &len);
		c = read_all(buf, len);
		ck_assert_msg(c.err == 0, "%s: %s", seeds[i].name, c.msg);
		ck_assert_msg(c.events > 0 || seeds[i].truncated, "%s: no event", seeds[i].name);
		ck_assert_int_eq(c.truncated, seeds[i].truncated);
		free(buf);
	}
}
END_TEST

static Suite *artifact_suite(void)
{
	Suite *s = suite_create("artifact");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, roundtrip);
	tcase_add_test(tc, footer_counts_written_events);
	tcase_add_test(tc, bench_marks);
	tcase_add_test(tc, bench_marker_records);
	tcase_add_test(tc, unprobed_and_wide_probe_count);
	tcase_add_test(tc, many_events_through_the_file);
	tcase_add_test(tc, follow_a_file_as_it_is_written);
	tcase_add_test(tc, two_writer_threads);
	tcase_add_test(tc, long_strings);
	tcase_add_test(tc, header_flags_after_the_arguments);
	tcase_add_test(tc, huge_command_line);
	tcase_add_test(tc, writer_errors);
	tcase_add_test(tc, documented_example);
	tcase_add_test(tc, cut_at_every_byte);
	tcase_add_test(tc, cut_file_keeps_complete_events);
	tcase_add_test(tc, corrupt_lengths);
	tcase_add_test(tc, corrupt_blocks);
	tcase_add_test(tc, older_versions);
	tcase_add_test(tc, stack_records);
	tcase_add_test(tc, footer_checks);
	tcase_add_test(tc, header_checks);
	tcase_add_test(tc, compressed_blocks_roundtrip);
	tcase_add_test(tc, compressed_block_cut_at_every_byte);
	tcase_add_test(tc, corrupt_compressed_blocks);
	tcase_add_test(tc, older_artifacts_read);
	tcase_add_test(tc, times_in_microseconds);
	tcase_add_test(tc, records_inside_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(artifact_suite());
}
