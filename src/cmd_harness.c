// SPDX-License-Identifier: GPL-2.0
/* memtrack exec-harness: its command line, and the benchmarks it names (harness.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "duration.h"
#include "harness.h"
#include "privileges.h"

struct harness_opts {
	const char *name;
	const char *output;
	bool memory, quiet, from_stdin;
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
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void print_help(FILE *out)
{
	fputs(
	    "Usage: memtrack exec-harness [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack exec-harness [OPTIONS] -   (benchmarks as a JSON array on stdin)\n"
	    "\n"
	    "Run CMD for a warm-up and measured rounds under memtrack's supervisor and write\n"
	    "wall-time statistics to DIR/results/PID.json (CodSpeed walltime results schema).\n"
	    "\n"
	    "Options:\n"
	    "  -n, --name NAME       benchmark name (default: the command line)\n"
	    "      --warmup-time D   warm-up duration, 0 for none (default: 1s)\n"
	    "      --max-time D      stop measuring after D (default: 3s, unless one of\n"
	    "                        --min-time, --min-rounds, --max-rounds is given)\n"
	    "      --min-time D      measure for at least D\n"
	    "      --max-rounds N    measure at most N rounds\n"
	    "      --min-rounds N    measure at least N rounds\n"
	    "      --memory          also run CMD once with allocation tracking\n"
	    "  -o, --output DIR      results folder (default: $CODSPEED_PROFILE_FOLDER, else\n"
	    "                        ./.codspeed)\n"
	    "  -q, --quiet           no progress and no table on stderr\n"
	    "  -h, --help            show this help\n"
	    "\n"
	    "A duration D is seconds (0.5) or a number with a unit: ns, us, ms, s, m, h (500ms).\n"
	    "With '-', stdin holds [{\"command\": [\"prog\", \"arg\"], \"name\": \"optional\",\n"
	    "\"walltime_args\": {\"warmup_time\": \"1s\", \"max_time\": \"3s\", \"min_time\": "
	    "null,\n"
	    "\"max_rounds\": null, \"min_rounds\": null}}]; options give the defaults.\n",
	    out);
}

static int opt_duration(const char *opt, const char *arg, bool *has, uint64_t *ns)
{
	char err[MT_HARNESS_ERRLEN];

	if (mt_parse_duration(arg, ns, err, sizeof(err)))
		return mt_cmd_usage_error(&harness_cmd, "--%s: %s", opt, err);
	*has = true;
	return 0;
}

static int opt_rounds(const char *opt, const char *arg, bool *has, uint64_t *v)
{
	unsigned long long n;
	char *end;

	errno = 0;
	n = strtoull(arg, &end, 10);
	/* strtoull accepts "-1" (wrapping it) and leading blanks: a count is digits only. */
	if (!*arg || !strchr("0123456789", *arg) || *end || errno || n == 0)
		return mt_cmd_usage_error(&harness_cmd, "--%s: '%s' is not a positive integer", opt,
					  arg);
	*v = n;
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
		return *arg ? 0 : mt_cmd_usage_error(&harness_cmd, "--name: the name is empty");
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
    .shortopts = "n:o:qh",
    .longopts = harness_longopts,
    .in_order = true,
    .help = print_help,
    .option = parse_option,
};

static int parse_operands(int argc, char **argv, int first, struct harness_opts *o)
{
	/* getopt consumed a "--" if there was one: then "-" is a command, not stdin. */
	bool after_dashes = first > 1 && !strcmp(argv[first - 1], "--");

	if (first == argc)
		return mt_cmd_usage_error(
		    &harness_cmd, "no command given: use 'memtrack exec-harness [OPTIONS] -- CMD "
				  "[ARGS...]' or '-' to read benchmarks from stdin");
	if (!after_dashes && !strcmp(argv[first], "-")) {
		if (first + 1 != argc)
			return mt_cmd_usage_error(
			    &harness_cmd, "'-' reads benchmarks from stdin and takes no command");
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

/* Returns 0 to run, 1 when --help was shown, or -EINVAL after a usage error. */
static int parse_args(int argc, char **argv, struct harness_opts *o)
{
	int first;

	memset(o, 0, sizeof(*o));
	first = mt_cmd_options(&harness_cmd, argc, argv, o);
	if (first == MT_CMD_HELP_SHOWN)
		return 1;
	if (first < 0)
		return first;
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

int mt_cmd_harness(int argc, char **argv)
{
	struct mt_bench_list list = {0};
	struct mt_bench_result *res = NULL;
	struct harness_opts o;
	struct mt_harness h;
	int ret, code = 2;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : MT_EXIT_USAGE;
	memset(&h, 0, sizeof(h));
	h.output = o.output;
	h.memory = o.memory;
	h.quiet = o.quiet;
	h.exit_code = 1;
	mt_choose_user(&h.base.identity, NULL);
	if (o.memory && mt_check_capabilities(true) < 0) {
		code = 1;
		goto cleanup;
	}

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
	if (mt_harness_prepare_output(&h))
		goto cleanup;
	if (mt_harness_run_all(&h, &list, res)) {
		code = h.exit_code;
		goto cleanup;
	}
	if (mt_harness_write_results(&h, res, list.n))
		goto cleanup;
	if (!o.quiet)
		mt_harness_print_table(res, list.n);
	code = 0;
cleanup:
	if (code == 1 && ret == -ENOMEM)
		fprintf(stderr, MT_HARNESS_PROG ": out of memory\n");
	mt_harness_results_free(res, list.n);
	mt_bench_list_free(&list);
	return code;
}
