// SPDX-License-Identifier: GPL-2.0
/*
 * manystacks OUT N DEPTH EVENTS [FILE]: a synthetic --stacks artifact the size of a big
 * program's (a compiler, a browser), for the cost of `memtrack report` (docs/PERFORMANCE.md,
 * "Reporting many stacks"). N distinct stacks of DEPTH frames, then EVENTS events: mallocs spread
 * over the stacks, every fourth event freeing an earlier block. The frames are offsets in FILE
 * (default: glibc), so that symbolisation names functions as it would in a real run. The same
 * arguments always write the same artifact (but for its start time).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpf/unwind_row.h"
#include "writer/artifact.h"
#include "writer/artifact_format.h"
#include "base/family.h"

#define BATCH 4096

static const char *const default_file = "/lib/x86_64-linux-gnu/libc.so.6";

/* xorshift64: deterministic, and cheap enough for millions of frames. */
static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static int parse_count(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *v == 0 || *v > max) {
		fprintf(stderr, "manystacks: '%s' is not a count from 1 to %llu\n", s,
			(unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

/* Stack id's frames: the allocator's entry, then DEPTH - 1 return addresses, all in file 1. */
static int write_stacks(struct mt_artifact_writer *w, uint64_t n, uint64_t depth, uint64_t size)
{
	struct mt_artifact_stack st = {.stop = 0};
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int ret = 0;

	st.n = (uint32_t)depth;
	for (uint64_t id = 1; id <= n && !ret; id++) {
		st.id = (uint32_t)id;
		st.frames[0] = MT_FRAME(1, 0x1000);
		for (uint32_t k = 1; k < st.n; k++)
			st.frames[k] = MT_FRAME(1, next_random(&x) % size);
		ret = mt_artifact_write_stack(w, &st);
	}
	return ret;
}

/* Event j: a malloc from a stack (each stack in turn), or, every fourth, a free of block j - 2. */
static void make_event(struct mt_event *e, uint64_t j, uint64_t n_stacks)
{
	bool is_free = j % 4 == 3;

	*e = (struct mt_event){
	    .ts_ns = 1000 + j,
	    .pid = 1000,
	    .tid = 1000,
	    .addr = 0x100000 + (is_free ? j - 2 : j) * 64,
	    .size = is_free ? 0 : 16 + j % 1000,
	    .file_id = 1,
	    .kind = is_free ? MT_K_FREE : MT_K_MALLOC,
	    .stack_id = is_free ? 0 : (uint32_t)(j % n_stacks + 1),
	};
}

static int write_events(struct mt_artifact_writer *w, uint64_t events, uint64_t n_stacks)
{
	static struct mt_event batch[BATCH];
	uint64_t j = 0;
	int ret = 0;

	while (j < events && !ret) {
		size_t k = 0;

		for (; k < BATCH && j < events; k++, j++)
			make_event(&batch[k], j, n_stacks);
		ret = mt_artifact_write_events(w, batch, k);
	}
	return ret;
}

static int write_artifact(const char *out, uint64_t n, uint64_t depth, uint64_t events,
			  const char *file)
{
	char *argv[] = {"manystacks", NULL};
	struct mt_artifact_header h = {
	    .start_time_ns = 1700000000ULL * 1000000000ULL,
	    .start_mono_ns = 1000,
	    .watcher = "tracepoint",
	    .argc = 1,
	    .argv = argv,
	};
	struct mt_artifact_process p = {.pid = 1000, .exited = true};
	struct mt_artifact_file f = {.file_id = 1, .family = MT_FAM_GLIBC, .probes = 1};
	struct mt_artifact_footer foot = {.events = events, .end_mono_ns = 1000 + events + 1};
	struct mt_artifact_writer *w;
	struct stat sb;
	int ret, fin;

	if (stat(file, &sb) || sb.st_size <= 0) {
		fprintf(stderr, "manystacks: %s: not a file to take frames in\n", file);
		return -ENOENT;
	}
	snprintf(p.exe, sizeof(p.exe), "/usr/bin/manystacks");
	snprintf(f.path, sizeof(f.path), "%s", file);
	ret = mt_artifact_create(&w, out, &h);
	if (ret)
		return ret;
	ret = mt_artifact_write_process(w, &p);
	if (!ret)
		ret = mt_artifact_write_file(w, &f);
	if (!ret)
		ret = write_stacks(w, n, depth, (uint64_t)sb.st_size);
	if (!ret)
		ret = write_events(w, events, n);
	fin = mt_artifact_finish(w, &foot);
	return ret ? ret : fin;
}

int main(int argc, char **argv)
{
	uint64_t n, depth, events;
	int ret;

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: manystacks OUT N_STACKS DEPTH EVENTS [FILE]\n");
		return 2;
	}
	if (parse_count(argv[2], UINT32_MAX, &n) ||
	    parse_count(argv[3], MT_ARTIFACT_STACK_FRAMES, &depth) ||
	    parse_count(argv[4], UINT64_MAX, &events))
		return 2;
	ret = write_artifact(argv[1], n, depth, events, argc == 6 ? argv[5] : default_file);
	if (ret) {
		fprintf(stderr, "manystacks: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	return 0;
}
