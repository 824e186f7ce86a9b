// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench's figures: its artifact split by benchmark window, each benchmark's figures
 * printed and written (table, JSON, Markdown) and compared with an earlier run's --json document;
 * the same split for memtrack report --benchmarks and report --html's page (cmd.h, cmd_bench.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate/bench.h"
#include "aggregate/bench_compare.h"
#include "aggregate/sites.h"
#include "base/grow.h"
#include "base/printable.h"
#include "base/regfile.h"
#include "cmd/cmd.h"
#include "cmd/cmd_bench.h"
#include "output/output.h"

/* The largest --compare document read. */
#define BASE_MAX (64u << 20)

/* ---- the figures -------------------------------------------------------------------------- */

static int write_json(FILE *f, const void *split)
{
	return mt_output_bench_json(split, f);
}

struct md_job {
	const struct mt_bench_split *split;
	const struct mt_bench_cmp *cmp;
	const struct mt_bench_limits *limits;
};

static int write_markdown(FILE *f, const void *arg)
{
	const struct md_job *j = arg;

	return mt_output_bench_markdown(j->split, j->cmp, j->limits, f);
}

/* The base document, a regular file (base/regfile.h) read with the user's rights: 0 or 1. */
static int read_base(const char *path, char **text, size_t *len)
{
	char p[MT_PRINTABLE_MAX], why[256] = "";
	int fd = mt_regfile_open(path, MT_REGFILE_OWN_STREAM, why, sizeof(why));
	size_t cap = 0, n = 0;
	ssize_t k = 0;
	int err = fd < 0 ? -fd : 0;

	*text = NULL;
	/* A regular file, or a stream the shell gave (<(...)): read to its end, bounded. */
	while (!err) {
		if (n + 1 >= cap && (cap >= BASE_MAX || MT_GROW(*text, cap, n + 4096, 65536))) {
			err = cap >= BASE_MAX ? EFBIG : ENOMEM;
			break;
		}
		k = read(fd, *text + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? errno : 0;
			break;
		}
		n += (size_t)k;
	}
	if (fd >= 0)
		close(fd);
	if (err || !*text) {
		free(*text);
		*text = NULL;
		fprintf(stderr, "memtrack bench: cannot read --compare %s: %s\n",
			mt_printable(p, sizeof(p), path),
			why[0] ? why : strerror(err ? err : EINVAL));
		return 1;
	}
	*len = n;
	return 0;
}

static int compare(const struct mt_cmd_bench_opts *o, const struct mt_bench_split *split,
		   struct mt_bench_cmp **cmp)
{
	char err[256], *text;
	size_t len;
	int ret;

	if (read_base(o->compare, &text, &len))
		return 1;
	ret = mt_bench_compare(split, text, len, &o->limits, cmp, err, sizeof(err));
	free(text);
	if (ret) {
		fprintf(stderr, "memtrack bench: --compare: %s\n", err);
		return 1;
	}
	return 0;
}

static int outputs(const struct mt_cmd_bench_opts *o, const struct mt_bench_split *split,
		   const struct mt_bench_cmp *cmp, FILE *json_out)
{
	struct md_job md = {split, cmp, &o->limits};
	int rc = 0;

	if (!o->quiet) {
		fputc('\n', stderr);
		mt_output_bench_text(split, stderr);
		if (cmp)
			mt_output_bench_compare_text(cmp, stderr);
	}
	if (o->json && o->json_path)
		rc |= mt_cmd_write_file(o->json_path, write_json, split);
	else if (o->json && (mt_output_bench_json(split, json_out) || fflush(json_out)))
		rc = 1;
	if (o->markdown)
		rc |= mt_cmd_write_file(o->markdown, write_markdown, &md);
	return rc;
}

int mt_cmd_bench_report(const struct mt_cmd_bench_opts *o, const char *artifact, FILE *json_out)
{
	struct mt_bench_split *split = NULL;
	struct mt_bench_cmp *cmp = NULL;
	char err[256], p[MT_PRINTABLE_MAX];
	int rc;

	if (mt_bench_split_load(artifact, &split, err, sizeof(err))) {
		fprintf(stderr, "memtrack bench: %s: %s\n", mt_printable(p, sizeof(p), artifact),
			err);
		return 1;
	}
	if (split->stacks && mt_sites_symbolize(split->stacks, NULL))
		fprintf(stderr, "memtrack bench: out of memory: the sites are not named\n");
	rc = o->compare ? compare(o, split, &cmp) : 0;
	if (!rc)
		rc = outputs(o, split, cmp, json_out);
	if (!rc && !split->n) {
		fprintf(stderr, "memtrack bench: no benchmark window: nothing spoke to the runner "
				"FIFO (a CodSpeed integration in memory mode does)\n");
		rc = 1;
	}
	if (!rc && cmp && cmp->n_exceeded) {
		fprintf(stderr, "memtrack bench: %zu benchmark%s exceed%s a --max-increase limit\n",
			cmp->n_exceeded, cmp->n_exceeded == 1 ? "" : "s",
			cmp->n_exceeded == 1 ? "s" : "");
		rc = MT_EXIT_DIFF_EXCEEDED;
	}
	mt_bench_cmp_free(cmp);
	mt_bench_split_free(split);
	return rc;
}

int mt_cmd_bench_split(const char *path, bool json)
{
	struct mt_bench_split *split = NULL;
	char err[256], p[MT_PRINTABLE_MAX];
	int ret;

	if (mt_bench_split_load(path, &split, err, sizeof(err))) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		return 1;
	}
	if (split->stacks && mt_sites_symbolize(split->stacks, NULL))
		fprintf(stderr, "memtrack: out of memory: the sites are not named\n");
	ret = json ? mt_output_bench_json(split, stdout) : mt_output_bench_text(split, stdout);
	mt_bench_split_free(split);
	return ret || fflush(stdout) ? 1 : 0;
}

struct mt_bench_split *mt_cmd_bench_for_page(const char *path)
{
	struct mt_bench_split *split = NULL;
	char err[256], p[MT_PRINTABLE_MAX];

	if (mt_bench_split_load(path, &split, err, sizeof(err))) {
		fprintf(stderr,
			"memtrack: %s: its benchmark windows cannot be read (%s): the page has "
			"none\n",
			mt_printable(p, sizeof(p), path), err);
		return NULL;
	}
	if (!split->n) {
		mt_bench_split_free(split);
		return NULL;
	}
	return split;
}
