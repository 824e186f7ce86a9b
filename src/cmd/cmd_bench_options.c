// SPDX-License-Identifier: GPL-2.0
/* memtrack bench's options: its help, and its command line parsed (cmd_bench.h). */
#include <errno.h>
#include <stdio.h>

#include "aggregate/bench_compare.h"
#include "cmd/cmd.h"
#include "cmd/cmd_bench.h"

enum {
	OPT_JSON = 256,
	OPT_MARKDOWN,
	OPT_COMPARE,
	OPT_MAX_INCREASE,
	OPT_STACKS,
	OPT_FROM,
	OPT_NO_INTROSPECTION,
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: memtrack bench [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack bench [OPTIONS] --from FILE\n"
	    "\n"
	    "Run CMD as CodSpeed's runner runs a memory-mode benchmark command: serve the\n"
	    "runner FIFO (/tmp/runner.ctl.fifo, /tmp/runner.ack.fifo) for any CodSpeed\n"
	    "integration, record the whole tree, and give each benchmark (StartProfiler to\n"
	    "StopProfiler, named by CurrentBenchmark) its own figures.\n"
	    "\n"
	    "  -o, --output FILE          the artifact (default memtrack-DATE-TIME-PID.mtk)\n"
	    "  -o, --output DIR/          CodSpeed's profile folder, as the runner leaves it:\n"
	    "                             DIR/results/ROOTPID.MemtrackArtifact.msgpack and\n"
	    "                             ExecutionTimestamps.msgpack, the artifact in "
	    "DIR/memtrack\n"
	    "      --json[=FILE]          the figures as JSON on stdout (the command's stdout\n"
	    "                             then goes to stderr), or into FILE\n"
	    "      --markdown FILE        the figures (and the comparison) as Markdown\n"
	    "      --compare BASE.json    compare with an earlier run's --json document\n"
	    "      --max-increase METRIC=PERCENT\n"
	    "                             with --compare: exit 3 when a benchmark's METRIC\n"
	    "                             (allocations, bytes_allocated, average_allocation,\n"
	    "                             peak_bytes, live_at_end) grew by more than PERCENT\n"
	    "      --stacks               record stacks: each benchmark's top allocation sites\n"
	    "      --from FILE            split an artifact of an earlier memtrack bench\n"
	    "      --no-introspection     no node wrapper on PATH (@codspeed/core's V8 flags)\n"
	    "  -q, --quiet                no table on stderr\n"
	    "  -v, --verbose              say what is attached where, and why\n"
	    "  -h, --help                 this help\n"
	    "\n"
	    "Exit status: the command's when it failed; 1 when memtrack failed, the FIFO carried\n"
	    "a message memtrack refused, or no benchmark window came; 3 when --max-increase was\n"
	    "exceeded; 2 for a usage error; else 0.\n");
}

static int bench_option(int c, const char *arg, void *ctx);

static const struct option bench_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"json", optional_argument, NULL, OPT_JSON},
    {"markdown", required_argument, NULL, OPT_MARKDOWN},
    {"compare", required_argument, NULL, OPT_COMPARE},
    {"max-increase", required_argument, NULL, OPT_MAX_INCREASE},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"from", required_argument, NULL, OPT_FROM},
    {"no-introspection", no_argument, NULL, OPT_NO_INTROSPECTION},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

const struct mt_cmd mt_cmd_bench_cmd = {
    .name = "memtrack bench",
    .shortopts = "o:qvh",
    .longopts = bench_longopts,
    .in_order = true,
    .help = usage,
    .option = bench_option,
};

static int parse_limit(struct mt_cmd_bench_opts *o, const char *arg)
{
	double pct;
	int m, err;

	err = mt_cmd_max_increase(&mt_cmd_bench_cmd, arg, mt_bench_metric_parse,
				  "allocations, bytes_allocated, average_allocation, peak_bytes or "
				  "live_at_end",
				  &m, &pct);
	if (err)
		return err;
	if (o->limits.n == MT_BENCH_LIMITS)
		return mt_cmd_usage_error(&mt_cmd_bench_cmd, "at most %d --max-increase",
					  MT_BENCH_LIMITS);
	o->limits.metric[o->limits.n] = (enum mt_bench_metric)m;
	o->limits.max_percent[o->limits.n++] = pct;
	return 0;
}

static int bench_option(int c, const char *arg, void *ctx)
{
	struct mt_cmd_bench_opts *o = ctx;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		o->json_path = arg;
		return 0;
	case OPT_MARKDOWN:
		o->markdown = arg;
		return 0;
	case OPT_COMPARE:
		o->compare = arg;
		return 0;
	case OPT_MAX_INCREASE:
		return parse_limit(o, arg);
	case OPT_STACKS:
		o->cfg.stacks = true;
		return 0;
	case OPT_FROM:
		o->from = arg;
		return 0;
	case OPT_NO_INTROSPECTION:
		o->no_introspection = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'v':
		o->cfg.verbose = true;
		return 0;
	}
	return -EINVAL;
}

/* Returns -1 to go on, or the exit status. */
int mt_cmd_bench_parse(int argc, char **argv, struct mt_cmd_bench_opts *o)
{
	int first = mt_cmd_options(&mt_cmd_bench_cmd, argc, argv, o);

	if (first <= 0)
		return mt_cmd_options_status(first);
	if (o->from ? first < argc : first >= argc) {
		mt_cmd_usage_error(&mt_cmd_bench_cmd,
				   o->from ? "--from FILE runs no command"
					   : "no command given (memtrack bench -- CMD "
					     "[ARGS...])");
		return MT_EXIT_USAGE;
	}
	if (o->limits.n && !o->compare) {
		mt_cmd_usage_error(&mt_cmd_bench_cmd, "--max-increase needs --compare BASE.json");
		return MT_EXIT_USAGE;
	}
	if (o->from && (o->output || o->cfg.stacks)) {
		mt_cmd_usage_error(&mt_cmd_bench_cmd, "--from FILE excludes -o and --stacks");
		return MT_EXIT_USAGE;
	}
	o->cfg.argv = argv + first;
	return -1;
}
