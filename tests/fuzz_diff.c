// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: `memtrack report --diff` over two arbitrary artifacts. An input is BASE then
 * NEW: its first two bytes (little-endian) say how long BASE is, the rest after BASE is NEW
 * (tests/corpus_diff/ holds pairs of tests/corpus/'s artifacts so written). Each artifact that
 * reads is compared with the other, with itself and with an empty run, and every comparison is
 * rendered as text, JSON and HTML; the tree's level must hold one row and each level's rows must
 * be in key order. Sites are compared unsymbolised (by address), as no file the bytes name is
 * read. Built and run by tools/fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/diff.h"
#include "output/output.h"

static FILE *devnull;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_diff: invariant broken: %s\n", what);
		abort();
	}
}

/* An artifact of a run that recorded nothing (tests/corpus/valid-empty): no row below the tree. */
static struct mt_report *empty_run(void)
{
	static const char path[] = MT_SOURCE_DIR "/tests/corpus/valid-empty";
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;

	check(!mt_report_load(path, &rep, err, sizeof(err)), "tests/corpus/valid-empty reads");
	return rep;
}

static void check_levels(const struct mt_diff *d)
{
	check(d->level[MT_DIFF_TREE].n == 1, "the tree is one row");
	for (int l = 0; l < MT_DIFF_LEVELS; l++) {
		const struct mt_diff_level *lv = &d->level[l];

		for (size_t i = 1; i < lv->n; i++)
			check(strcmp(lv->rows[i - 1].key, lv->rows[i].key) < 0,
			      "a level's rows are in key order, each key once");
	}
}

static void compare(const struct mt_report *base, const struct mt_report *new)
{
	struct mt_diff_view v = {.path = {"base", "new"}, .rep = {base, new}, .top = 3};
	struct mt_diff *d;

	if (mt_diff_build(base, new, &d))
		return; /* out of memory: said by the command line */
	check_levels(d);
	v.d = d;
	mt_output_diff_text(&v, devnull);
	mt_output_diff_json(&v, devnull);
	mt_output_diff_html(&v, devnull);
	mt_diff_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mt_report *empty;
	struct mt_report *rep[2] = {NULL, NULL};
	char err[MT_ARTIFACT_ERRLEN];
	size_t base_len;

	if (size < 2)
		return 0;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (!empty)
		empty = empty_run();
	base_len = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	if (base_len > size)
		base_len = size;
	if (mt_report_load_mem(data, base_len, &rep[0], err, sizeof(err)))
		rep[0] = NULL;
	if (mt_report_load_mem(data + base_len, size - base_len, &rep[1], err, sizeof(err)))
		rep[1] = NULL;
	for (int i = 0; i < 2; i++) {
		if (!rep[i])
			continue;
		compare(rep[i], rep[i]);
		compare(rep[i], empty);
		compare(empty, rep[i]);
	}
	if (rep[0] && rep[1])
		compare(rep[0], rep[1]);
	mt_report_free(rep[1]);
	mt_report_free(rep[0]);
	return 0;
}
