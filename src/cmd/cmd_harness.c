// SPDX-License-Identifier: GPL-2.0
/* memtrack exec-harness: its command line, and the benchmarks it names (harness.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "harness/harness.h"
#include "harness/harness_duration.h"
#include "base/privileges.h"
#include "base/utf8.h"

/* The exec-harness whose interface this is: CodSpeed's runner checks `exec-harness --version`
 * against the version it pins (src/binary_pins.rs: 1.3.0) and accepts any later one. */
#define EXEC_HARNESS_VERSION "1.3.0"
#define MODE_ENV	     "CODSPEED_RUNNER_MODE"

struct harness_opts {
	const char *name;
	const char *output;
	const char *mode; /* -m/--mode, else $CODSPEED_RUNNER_MODE, else NULL */
	bool memory, quiet, from_stdin, version;
	struct mt_bench_limits limits;
	char **cmd;
};

static const struct mt_cmd harness_cmd;

enum {
	OPT_WARMUP = 256,
	OPT_MAX_TIME,
	OPT_MIN_TIME,
	OPT_MAX_ROUNDS,
	OPT_MIN_ROUNDS,
	OPT_MEMORY,
};

static const struct option harness_longopts[] = {
    {"name", required_argument, NULL, 'n'},
    {"warmup-time", required_argument, NULL, OPT_WARMUP},
    {"max-time", required_argument, NULL, OPT_MAX_TIME},
    {"min-time", required_argument, NULL, OPT_MIN_TIME},
    {"max-rounds", required_argument, NULL, OPT_MAX_ROUNDS},
    {"min-rounds", required_argument, NULL, OPT_MIN_ROUNDS},
    {"memory", no_argument, NULL, OPT_MEMORY},
    {"mode", required_argument, NULL, 'm'},
    {"measurement-mode", required_argument, NULL, 'm'},
    {"version", no_argument, NULL, 'V'},
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void print_help(FILE *out)
{
	fputs(
	    "Usage: memtrack exec-harness [OPTIONS] [--] CMD [ARGS...]\n"
	    "       memtrack exec-harness [OPTIONS] -   (benchmarks as a JSON array on stdin)\n"
	    "       exec-harness ...                    (the same, through the installed link)\n"
	    "\n"
	    "CodSpeed's exec-harness (" EXEC_HARNESS_VERSION
	    "): run CMD for a warm-up and measured\n"
	    "rounds and write wall-time statistics to DIR/results/PID.json; in memory mode run it\n"
	    "once with allocation tracking and write CodSpeed's memory artifact to DIR/results.\n"
	    "\n"
	    "Options:\n"
	    "  -m, --mode MODE       walltime (default) or memory; default $" MODE_ENV "\n"
	    "  -n, --name NAME       benchmark name (default: the command line)\n"
	    "      --warmup-time D   warm-up duration, 0 for none (default: 1s)\n"
	    "      --max-time D      stop measuring after D (default: 3s, unless one of\n"
	    "                        --min-time, --min-rounds, --max-rounds is given)\n"
	    "      --min-time D      measure for at least D\n"
	    "      --max-rounds N    measure at most N rounds\n"
	    "      --min-rounds N    measure at least N rounds\n"
	    "      --memory          walltime mode: also run CMD once with allocation tracking\n"
	    "  -o, --output DIR      results folder (default: $CODSPEED_PROFILE_FOLDER, else\n"
	    "                        ./.codspeed)\n"
	    "  -q, --quiet           no progress and no table on stderr\n"
	    "  -V, --version         print 'exec-harness " EXEC_HARNESS_VERSION "'\n"
	    "  -h, --help            show this help\n"
	    "\n"
	    "A duration D is seconds (0.5, 1e-1) or a humantime duration (500ms, 1m30s, 2d).\n"
	    "With '-', stdin holds [{\"command\": [\"prog\", \"arg\"], \"name\": \"optional\",\n"
	    "\"walltime_args\": {\"warmup_time\": \"1s\", \"max_time\": \"3s\", \"min_time\": "
	    "null,\n"
	    "\"max_rounds\": null, \"min_rounds\": null}}]; options give the defaults.\n",
	    out);
}

static int opt_duration(const char *opt, const char *arg, bool *has, uint64_t *ns)
{
	char err[MT_HARNESS_ERRLEN];

	if (mt_harness_parse_duration(arg, ns, err, sizeof(err)))
		return mt_cmd_usage_error(&harness_cmd, "--%s: %s", opt, err);
	*has = true;
	return 0;
}

/* A count as clap reads a u64: 0 is valid (CodSpeed then runs one round). */
static int opt_rounds(const char *opt, const char *arg, bool *has, uint64_t *v)
{
	if (mt_harness_parse_count(arg, v))
		return mt_cmd_usage_error(&harness_cmd, "--%s: '%s' is not a number of rounds", opt,
					  arg);
	*has = true;
	return 0;
}

static int parse_option(int c, const char *arg, void *ctx)
{
	struct harness_opts *o = ctx;
	struct mt_bench_limits *l = &o->limits;

	switch (c) {
	case 'n':
		o->name = arg;
		return 0;
	case 'm':
		o->mode = arg;
		return 0;
	case 'V':
		o->version = true;
		return 0;
	case 'o':
		o->output = arg;
		return *arg
			   ? 0
			   : mt_cmd_usage_error(&harness_cmd, "--output: the folder name is empty");
	case 'q':
		o->quiet = true;
		return 0;
	case OPT_MEMORY:
		o->memory = true;
		return 0;
	case OPT_WARMUP:
		return opt_duration("warmup-time", arg, &l->has_warmup, &l->warmup_ns);
	case OPT_MAX_TIME:
		return opt_duration("max-time", arg, &l->has_max_time, &l->max_time_ns);
	case OPT_MIN_TIME:
		return opt_duration("min-time", arg, &l->has_min_time, &l->min_time_ns);
	case OPT_MAX_ROUNDS:
		return opt_rounds("max-rounds", arg, &l->has_max_rounds, &l->max_rounds);
	case OPT_MIN_ROUNDS:
		return opt_rounds("min-rounds", arg, &l->has_min_rounds, &l->min_rounds);
	}
	return -EINVAL;
}

static const struct mt_cmd harness_cmd = {
    .name = MT_HARNESS_PROG,
    .shortopts = "n:o:m:qVh",
    .longopts = harness_longopts,
    .in_order = true,
    .help = print_help,
    .option = parse_option,
};

static int parse_operands(int argc, char **argv, int first, struct harness_opts *o)
{
	if (first == argc)
		return mt_cmd_usage_error(&harness_cmd,
					  "no command given: use 'exec-harness [OPTIONS] [--] CMD "
					  "[ARGS...]' or '-' to read benchmarks from stdin");
	/* As in CodSpeed's exec-harness, a lone "-" reads stdin, after "--" too (clap drops it). */
	if (first + 1 == argc && !strcmp(argv[first], "-")) {
		if (o->name)
			return mt_cmd_usage_error(
			    &harness_cmd, "--name names one command: with '-', give each benchmark "
					  "a \"name\" in the JSON");
		o->from_stdin = true;
		return 0;
	}
	if (!*argv[first])
		return mt_cmd_usage_error(&harness_cmd, "the command name is empty");
	o->cmd = argv + first;
	return 0;
}

/*
 * CodSpeed reads its arguments as Rust strings: anything not UTF-8 is refused before it runs,
 * and so is it here, since the names end up in JSON that the runner must parse.
 */
static int check_utf8(int argc, char **argv)
{
	const char *env = getenv(MODE_ENV);
	int i;

	for (i = 1; i < argc; i++) {
		if (!mt_utf8_valid(argv[i], strlen(argv[i])))
			return mt_cmd_usage_error(&harness_cmd, "argument %d is not valid UTF-8",
						  i);
	}
	if (env && !mt_utf8_valid(env, strlen(env)))
		return mt_cmd_usage_error(&harness_cmd, "$" MODE_ENV " is not valid UTF-8");
	return 0;
}

/*
 * The measurement mode, as CodSpeed's MeasurementMode: walltime, memory, or simulation (alias
 * instrumentation), which needs Valgrind and CodSpeed's instrumentation and is refused.
 */
static int parse_mode(struct harness_opts *o, enum mt_harness_mode *mode)
{
	const char *m = o->mode ? o->mode : getenv(MODE_ENV);
	const char *from = o->mode ? "--mode" : "$" MODE_ENV;

	*mode = MT_HARNESS_WALLTIME;
	if (!m || (!o->mode && !*m) || !strcmp(m, "walltime"))
		return 0;
	if (!strcmp(m, "memory")) {
		*mode = MT_HARNESS_MEMORY;
		return 0;
	}
	if (!strcmp(m, "simulation") || !strcmp(m, "instrumentation"))
		return mt_cmd_usage_error(&harness_cmd,
					  "%s: mode '%s' (CPU simulation under Valgrind) is not "
					  "supported: memtrack measures walltime and memory",
					  from, m);
	return mt_cmd_usage_error(&harness_cmd,
				  "%s: invalid mode '%s' (possible values: walltime, memory, "
				  "simulation)",
				  from, m);
}

/* Returns 0 to run, 1 when --help or --version was shown, or -EINVAL after a usage error. */
static int parse_args(int argc, char **argv, struct harness_opts *o, enum mt_harness_mode *mode)
{
	int first;

	memset(o, 0, sizeof(*o));
	if (check_utf8(argc, argv))
		return -EINVAL;
	first = mt_cmd_options(&harness_cmd, argc, argv, o);
	if (first == MT_CMD_HELP_SHOWN)
		return 1;
	if (first < 0)
		return first;
	/* clap answers --version wherever it is among the options, before anything else. */
	if (o->version) {
		printf("exec-harness %s\n", EXEC_HARNESS_VERSION);
		return 1;
	}
	if (parse_mode(o, mode))
		return -EINVAL;
	if (*mode == MT_HARNESS_MEMORY && o->memory)
		return mt_cmd_usage_error(&harness_cmd,
					  "--memory adds a tracked run to walltime mode: memory "
					  "mode already tracks every run");
	return parse_operands(argc, argv, first, o);
}

/* ---- Benchmarks from the command line or stdin --------------------------------------------- */

static int read_stdin(char **buf, size_t *len)
{
	size_t cap = 4096, n = 0, r;
	char *b = malloc(cap), *nb;

	if (!b)
		return -ENOMEM;
	while ((r = fread(b + n, 1, cap - n - 1, stdin)) > 0) {
		n += r;
		if (cap - n - 1 > 0)
			continue;
		nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			return -ENOMEM;
		}
		b = nb;
		cap *= 2;
	}
	if (ferror(stdin)) {
		free(b);
		return -EIO;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static int load_stdin(const struct harness_opts *o, struct mt_bench_list *list)
{
	char err[MT_HARNESS_ERRLEN], *text = NULL;
	size_t len;
	int ret = read_stdin(&text, &len);

	if (ret == -EIO)
		fprintf(stderr, MT_HARNESS_PROG ": cannot read stdin: %s\n", strerror(errno));
	if (ret)
		return ret;
	/* CodSpeed reads stdin as Rust strings: bytes that are not UTF-8 end the run up front. */
	if (!mt_utf8_valid(text, len)) {
		fprintf(stderr, MT_HARNESS_PROG ": stdin is not valid UTF-8\n");
		free(text);
		return -EINVAL;
	}
	err[0] = '\0';
	ret = mt_harness_json_parse(text, len, &o->limits, list, err, sizeof(err));
	if (ret == -EINVAL)
		fprintf(stderr, MT_HARNESS_PROG ": %s\n", err);
	free(text);
	return ret;
}

static int load_command(const struct harness_opts *o, struct mt_bench_list *list)
{
	size_t n = 0, i;
	struct mt_bench *b;

	while (o->cmd[n])
		n++;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	list->v = b;
	list->n = 1;
	b->limits = o->limits;
	b->argv = calloc(n + 1, sizeof(*b->argv));
	if (!b->argv || (o->name && !(b->name = strdup(o->name))))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		b->argv[i] = strdup(o->cmd[i]);
		if (!b->argv[i])
			return -ENOMEM;
	}
	return 0;
}

/* ---- Entry point ------------------------------------------------------------------------- */

/*
 * Walltime's results file; memory mode's CodSpeed files when it tracked by itself. Under the
 * runner, memory mode leaves results/ to the runner and its tracker, as CodSpeed's does.
 */
static int write_outputs(const struct mt_harness *h, struct mt_bench_result *res, size_t n)
{
	if (h->mode == MT_HARNESS_WALLTIME)
		return mt_harness_write_results(h, res, n);
	return h->memory ? mt_harness_write_codspeed(h, res, n) : 0;
}

int mt_cmd_harness(int argc, char **argv)
{
	struct mt_bench_list list = {0};
	struct mt_bench_result *res = NULL;
	struct mt_fifo runner = {.ctl = -1, .ack = -1};
	enum mt_harness_mode mode;
	struct harness_opts o;
	struct mt_harness h;
	int ret, code = 2;

	ret = parse_args(argc, argv, &o, &mode);
	if (ret)
		return ret > 0 ? 0 : MT_EXIT_USAGE;
	memset(&h, 0, sizeof(h));
	h.output = o.output;
	h.mode = mode;
	h.memory = o.memory || mode == MT_HARNESS_MEMORY;
	h.quiet = o.quiet;
	h.exit_code = 1;
	mt_choose_user(&h.base.identity, NULL);

	ret = o.from_stdin ? load_stdin(&o, &list) : load_command(&o, &list);
	if (ret) {
		code = ret == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	res = calloc(list.n, sizeof(*res));
	ret = res ? mt_harness_resolve(&list, res) : -ENOMEM;
	if (ret) {
		code = ret == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	code = 1;
	/* Under CodSpeed's runner its tracker records memory mode: no privilege is needed here. */
	ret = mt_harness_runner_connect(&h, &runner);
	if (ret || (h.memory && mt_check_capabilities(true) < 0) || mt_harness_prepare_output(&h))
		goto cleanup;
	if (mt_harness_run_all(&h, &list, res)) {
		code = h.exit_code;
		goto cleanup;
	}
	if (write_outputs(&h, res, list.n))
		goto cleanup;
	if (!o.quiet && mode == MT_HARNESS_WALLTIME)
		mt_harness_print_table(res, list.n);
	code = 0;
cleanup:
	if (code == 1 && ret == -ENOMEM)
		fprintf(stderr, MT_HARNESS_PROG ": out of memory\n");
	mt_fifo_close(&runner);
	mt_harness_results_free(res, list.n);
	mt_bench_list_free(&list);
	return code;
}
