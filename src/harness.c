// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack exec-harness (see harness.h and docs/HARNESS.md). Every round is one run of the
 * command through mt_supervise(), timed from the resume of the exec-stopped command to the reaping
 * of its whole tree, so fork and exec of memtrack itself are outside the measurement.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "duration.h"
#include "harness.h"
#include "harness_stats.h"
#include "privileges.h"
#include "report.h"
#include "supervisor.h"

#define PROG	   "memtrack exec-harness"
#define ERRLEN	   320
#define URI_PREFIX "exec_harness::"

#ifndef MT_VERSION
#define MT_VERSION "0.0.0"
#endif

struct harness_opts {
	const char *name;
	const char *output;
	bool memory, quiet, from_stdin;
	struct mt_bench_limits limits;
	char **cmd;
};

struct harness {
	const struct harness_opts *opts;
	char results_dir[PATH_MAX];  /* DIR/results: only results JSON, which runners read */
	char artifact_dir[PATH_MAX]; /* DIR/memtrack: the --memory artifacts */
	struct mt_run_config base;   /* what every round shares: identity, watcher, placement */
	int exit_code;		     /* memtrack's exit status once a benchmark failed */
};

struct bench_result {
	char *name;
	struct mt_bench_config cfg;
	uint64_t *times;
	size_t n, cap;
	uint64_t warmup_runs;
	struct mt_stats stats;
	bool has_memory; /* --memory ran; mem is valid only with memory_ok */
	bool memory_ok;
	struct mt_report_totals mem; /* of the tracked run's artifact */
	char artifact[PATH_MAX];
};

/* A usage error: one sentence, and memtrack exits 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- Benchmarks from JSON ---------------------------------------------------------------- */

struct limit_field {
	const char *key;
	bool rounds; /* a positive integer; otherwise a duration */
	size_t has_off, val_off;
};

/* The walltime_args keys, each mapped onto its has_ flag and value in struct mt_bench_limits. */
#define LIMIT_OFFSETS(h, v) offsetof(struct mt_bench_limits, h), offsetof(struct mt_bench_limits, v)

static const struct limit_field limit_fields[] = {
    {"warmup_time", false, LIMIT_OFFSETS(has_warmup, warmup_ns)},
    {"max_time", false, LIMIT_OFFSETS(has_max_time, max_time_ns)},
    {"min_time", false, LIMIT_OFFSETS(has_min_time, min_time_ns)},
    {"max_rounds", true, LIMIT_OFFSETS(has_max_rounds, max_rounds)},
    {"min_rounds", true, LIMIT_OFFSETS(has_min_rounds, min_rounds)},
};

static int parse_limit(struct json_object *v, const struct limit_field *f, size_t idx,
		       struct mt_bench_limits *l, char *err, size_t errlen)
{
	bool *has = (bool *)((char *)l + f->has_off);
	uint64_t *val = (uint64_t *)((char *)l + f->val_off);
	char derr[ERRLEN];

	if (!v) /* JSON null: keep the command-line value or the default */
		return 0;
	if (f->rounds) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1)
			return mt_errbuf(
			    err, errlen,
			    "benchmark %zu: walltime_args.%s must be a positive integer or null",
			    idx, f->key);
		*val = (uint64_t)json_object_get_int64(v);
	} else {
		/* A JSON number is seconds, like a bare number on the command line. */
		if (!json_object_is_type(v, json_type_string) &&
		    !json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			return mt_errbuf(
			    err, errlen,
			    "benchmark %zu: walltime_args.%s must be a duration such as \"1s\", "
			    "or null",
			    idx, f->key);
		if (mt_parse_duration(json_object_get_string(v), val, derr, sizeof(derr)))
			return mt_errbuf(err, errlen, "benchmark %zu: walltime_args.%s: %s", idx,
					 f->key, derr);
	}
	*has = true;
	return 0;
}

static int parse_walltime_args(struct json_object *o, size_t idx, struct mt_bench_limits *l,
			       char *err, size_t errlen)
{
	size_t i;
	int ret;

	if (!o)
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return mt_errbuf(err, errlen,
				 "benchmark %zu: \"walltime_args\" must be an object or null", idx);
	json_object_object_foreach(o, key, val)
	{
		for (i = 0; i < sizeof(limit_fields) / sizeof(limit_fields[0]); i++) {
			if (!strcmp(key, limit_fields[i].key))
				break;
		}
		/* A misspelt limit silently ignored would run a different benchmark than asked. */
		if (i == sizeof(limit_fields) / sizeof(limit_fields[0]))
			return mt_errbuf(err, errlen,
					 "benchmark %zu: unknown walltime_args key \"%s\"", idx,
					 key);
		ret = parse_limit(val, &limit_fields[i], idx, l, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* A JSON string usable as a C string: no embedded NUL. */
static const char *json_cstring(struct json_object *v)
{
	const char *s;

	if (!v || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

static int parse_command(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
			 size_t errlen)
{
	size_t n = 0, i;

	if (o && json_object_is_type(o, json_type_array))
		n = json_object_array_length(o);
	if (!n)
		return mt_errbuf(err, errlen,
				 "benchmark %zu: \"command\" must be a non-empty array of strings",
				 idx);
	free(b->argv);
	b->argv = calloc(n + 1, sizeof(*b->argv));
	if (!b->argv)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *s = json_cstring(json_object_array_get_idx(o, i));

		if (!s)
			return mt_errbuf(
			    err, errlen,
			    "benchmark %zu: \"command\" must be an array of strings without "
			    "NUL bytes",
			    idx);
		b->argv[i] = strdup(s);
		if (!b->argv[i])
			return -ENOMEM;
	}
	if (!b->argv[0][0])
		return mt_errbuf(err, errlen, "benchmark %zu: the program in \"command\" is empty",
				 idx);
	return 0;
}

static int parse_name(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
		      size_t errlen)
{
	const char *s;

	if (!o)
		return 0;
	s = json_cstring(o);
	if (!s || !*s)
		return mt_errbuf(err, errlen,
				 "benchmark %zu: \"name\" must be a non-empty string or null", idx);
	free(b->name);
	b->name = strdup(s);
	return b->name ? 0 : -ENOMEM;
}

static int parse_bench(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
		       size_t errlen)
{
	int ret = 0;

	if (!json_object_is_type(o, json_type_object))
		return mt_errbuf(err, errlen, "benchmark %zu is not a JSON object", idx);
	json_object_object_foreach(o, key, val)
	{
		if (!strcmp(key, "command"))
			ret = parse_command(val, idx, b, err, errlen);
		else if (!strcmp(key, "name"))
			ret = parse_name(val, idx, b, err, errlen);
		else if (!strcmp(key, "walltime_args"))
			ret = parse_walltime_args(val, idx, &b->limits, err, errlen);
		else
			ret = mt_errbuf(err, errlen, "benchmark %zu: unknown key \"%s\"", idx, key);
		if (ret)
			return ret;
	}
	if (!b->argv)
		return mt_errbuf(err, errlen, "benchmark %zu has no \"command\"", idx);
	return 0;
}

static bool only_blanks(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (!strchr(" \t\r\n", s[i]))
			return false;
	}
	return true;
}

static int parse_root(const char *text, size_t len, struct json_tokener *tok,
		      struct json_object **root, char *err, size_t errlen)
{
	enum json_tokener_error jerr;
	size_t end;

	if (only_blanks(text, len))
		return mt_errbuf(err, errlen, "no input: expected a JSON array of benchmarks");
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue)
		return mt_errbuf(err, errlen,
				 "invalid JSON: the input ends before the array is closed");
	if (jerr != json_tokener_success)
		return mt_errbuf(err, errlen, "invalid JSON at byte %zu: %s", end,
				 json_tokener_error_desc(jerr));
	if (!only_blanks(text + end, len - end))
		return mt_errbuf(err, errlen,
				 "invalid JSON at byte %zu: text after the benchmark array", end);
	if (!json_object_is_type(*root, json_type_array))
		return mt_errbuf(err, errlen, "expected a JSON array of benchmarks");
	if (!json_object_array_length(*root))
		return mt_errbuf(err, errlen, "the JSON array holds no benchmark");
	return 0;
}

int mt_harness_parse_json(const char *text, size_t len, const struct mt_bench_limits *defaults,
			  struct mt_bench_list *out, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL;
	size_t i, n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	/* Benchmark lists come from programs: refuse the leniencies (trailing commas...) of json-c.
	 */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len > INT_MAX) {
		ret = mt_errbuf(err, errlen, "the JSON input is larger than 2 GiB");
		goto cleanup;
	}
	ret = parse_root(text, len, tok, &root, err, errlen);
	if (ret)
		goto cleanup;
	n = json_object_array_length(root);
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		out->n = i + 1;
		out->v[i].limits = *defaults;
		ret =
		    parse_bench(json_object_array_get_idx(root, i), i + 1, &out->v[i], err, errlen);
		if (ret)
			goto cleanup;
	}
cleanup:
	json_object_put(root);
	json_tokener_free(tok);
	if (ret)
		mt_bench_list_free(out);
	return ret;
}

void mt_bench_list_free(struct mt_bench_list *l)
{
	size_t i;
	char **a;

	for (i = 0; i < l->n; i++) {
		for (a = l->v[i].argv; a && *a; a++)
			free(*a);
		free(l->v[i].argv);
		free(l->v[i].name);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- Command line ------------------------------------------------------------------------ */

enum {
	OPT_WARMUP = 256,
	OPT_MAX_TIME,
	OPT_MIN_TIME,
	OPT_MAX_ROUNDS,
	OPT_MIN_ROUNDS,
	OPT_MEMORY,
};

static const struct option long_opts[] = {
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

static void print_help(void)
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
	    stdout);
}

static int opt_duration(const char *opt, const char *arg, bool *has, uint64_t *ns)
{
	char err[ERRLEN];

	if (mt_parse_duration(arg, ns, err, sizeof(err)))
		return usage_error("--%s: %s", opt, err);
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
		return usage_error("--%s: '%s' is not a positive integer", opt, arg);
	*v = n;
	*has = true;
	return 0;
}

static int parse_option(int c, struct harness_opts *o)
{
	struct mt_bench_limits *l = &o->limits;

	switch (c) {
	case 'n':
		o->name = optarg;
		return *optarg ? 0 : usage_error("--name: the name is empty");
	case 'o':
		o->output = optarg;
		return *optarg ? 0 : usage_error("--output: the folder name is empty");
	case 'q':
		o->quiet = true;
		return 0;
	case OPT_MEMORY:
		o->memory = true;
		return 0;
	case OPT_WARMUP:
		return opt_duration("warmup-time", optarg, &l->has_warmup, &l->warmup_ns);
	case OPT_MAX_TIME:
		return opt_duration("max-time", optarg, &l->has_max_time, &l->max_time_ns);
	case OPT_MIN_TIME:
		return opt_duration("min-time", optarg, &l->has_min_time, &l->min_time_ns);
	case OPT_MAX_ROUNDS:
		return opt_rounds("max-rounds", optarg, &l->has_max_rounds, &l->max_rounds);
	case OPT_MIN_ROUNDS:
		return opt_rounds("min-rounds", optarg, &l->has_min_rounds, &l->min_rounds);
	}
	return -EINVAL;
}

static int parse_operands(int argc, char **argv, struct harness_opts *o)
{
	/* getopt consumed a "--" if there was one: then "-" is a command, not stdin. */
	bool after_dashes = optind > 1 && !strcmp(argv[optind - 1], "--");

	if (optind == argc)
		return usage_error("no command given: use 'memtrack exec-harness [OPTIONS] -- CMD "
				   "[ARGS...]' or '-' to read benchmarks from stdin");
	if (!after_dashes && !strcmp(argv[optind], "-")) {
		if (optind + 1 != argc)
			return usage_error("'-' reads benchmarks from stdin and takes no command");
		if (o->name)
			return usage_error(
			    "--name names one command: with '-', give each benchmark "
			    "a \"name\" in the JSON");
		o->from_stdin = true;
		return 0;
	}
	if (!*argv[optind])
		return usage_error("the command name is empty");
	o->cmd = argv + optind;
	return 0;
}

/* Returns 0 to run, 1 when --help was shown, or -EINVAL after a usage error. */
static int parse_args(int argc, char **argv, struct harness_opts *o)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	optind = 0; /* glibc: reinitialise, the dispatcher may have used getopt already */
	opterr = 0; /* our own messages, in one sentence */
	while ((c = getopt_long(argc, argv, "+:n:o:qh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			print_help();
			return 1;
		}
		if (c == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if (c == '?') {
			if (optopt)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		ret = parse_option(c, o);
		if (ret)
			return ret;
	}
	return parse_operands(argc, argv, o);
}

/* ---- Loading and validating the benchmarks ----------------------------------------------- */

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
	char err[ERRLEN], *text = NULL;
	size_t len;
	int ret = read_stdin(&text, &len);

	if (ret == -EIO)
		fprintf(stderr, PROG ": cannot read stdin: %s\n", strerror(errno));
	if (ret)
		return ret;
	err[0] = '\0';
	ret = mt_harness_parse_json(text, len, &o->limits, list, err, sizeof(err));
	if (ret == -EINVAL)
		fprintf(stderr, PROG ": %s\n", err);
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

static char *join_argv(char *const *argv)
{
	size_t len = 1, i;
	char *s;

	for (i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* Validates every benchmark before any runs, so a typo in the last one costs no time. */
static int resolve_all(const struct mt_bench_list *list, struct bench_result *res)
{
	char err[ERRLEN];
	size_t i;

	for (i = 0; i < list->n; i++) {
		res[i].name =
		    list->v[i].name ? strdup(list->v[i].name) : join_argv(list->v[i].argv);
		if (!res[i].name)
			return -ENOMEM;
		if (mt_bench_config_resolve(&list->v[i].limits, &res[i].cfg, err, sizeof(err)))
			return usage_error("benchmark '%s': %s", res[i].name, err);
	}
	return 0;
}

/* ---- Running ----------------------------------------------------------------------------- */

static void report_failure(const char *name, const struct mt_run_result *res)
{
	if (WIFSIGNALED(res->wait_status))
		fprintf(stderr,
			PROG ": benchmark '%s' failed: the command was killed by signal %d (%s)\n",
			name, WTERMSIG(res->wait_status), strsignal(WTERMSIG(res->wait_status)));
	else
		fprintf(stderr, PROG ": benchmark '%s' failed: the command exited with status %d\n",
			name, res->exit_code);
}

/* One run of the command; *ns is its round time. A failing command aborts the benchmark. */
static int run_once(struct harness *h, const char *name, const struct mt_run_config *cfg,
		    uint64_t *ns)
{
	struct mt_run_result res;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = mt_supervise(cfg, &res);
	if (ret < 0) {
		/*
		 * mt_supervise already said why. A command that cannot be executed exits 127 or
		 * 126 like in a shell; a failure of memtrack itself (BPF, ptrace) is 1.
		 */
		h->exit_code = res.exec_errno ? mt_exec_failure_code(-res.exec_errno) : 1;
		return ret;
	}
	if (res.exit_code != 0) {
		report_failure(name, &res);
		h->exit_code = res.exit_code;
		return -ECHILD;
	}
	*ns = res.end_ns > res.resume_ns ? res.end_ns - res.resume_ns : 0;
	return 0;
}

static int push_time(struct bench_result *r, uint64_t ns)
{
	uint64_t *t;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;

		t = realloc(r->times, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		r->times = t;
		r->cap = cap;
	}
	r->times[r->n++] = ns;
	return 0;
}

static int warm_up(struct harness *h, const struct mt_run_config *cfg, struct bench_result *r,
		   struct mt_warmup *w)
{
	uint64_t start = now_ns(), ns;
	int ret;

	memset(w, 0, sizeof(*w));
	if (!r->cfg.warmup_ns)
		return 0;
	do {
		ret = run_once(h, r->name, cfg, &ns);
		if (ret)
			return ret;
		if (!w->runs)
			w->first_ns = ns;
		w->runs++;
	} while (now_ns() - start < r->cfg.warmup_ns);
	/* Spawning is part of the cost of a round when budgeting max_time. */
	w->elapsed_ns = now_ns() - start;
	return 0;
}

static void say_plan(const struct harness *h, const struct bench_result *r,
		     const struct mt_warmup *w, const struct mt_round_plan *p)
{
	char d[32];

	if (p->min_above_max)
		fprintf(stderr,
			PROG ": warning: benchmark '%s': the minimum of %llu rounds exceeds the "
			     "maximum of %llu; running %llu\n",
			r->name, (unsigned long long)p->min_rounds,
			(unsigned long long)p->max_rounds, (unsigned long long)p->max_rounds);
	if (h->opts->quiet)
		return;
	if (p->warmup_is_result)
		fprintf(stderr,
			"memtrack: '%s': one warm-up run took %s, more than max_time: it is the "
			"result\n",
			r->name, mt_format_duration((double)w->first_ns, d, sizeof(d)));
	else if (p->rounds)
		fprintf(stderr, "memtrack: '%s': %llu warm-up runs, measuring %llu rounds\n",
			r->name, (unsigned long long)w->runs, (unsigned long long)p->rounds);
	else
		fprintf(stderr, "memtrack: '%s': no warm-up, measuring until the time limit\n",
			r->name);
}

static int measure(struct harness *h, const struct mt_run_config *cfg, struct bench_result *r)
{
	struct mt_round_plan plan;
	struct mt_warmup w;
	uint64_t start, ns;
	int ret;

	ret = warm_up(h, cfg, r, &w);
	if (ret)
		return ret;
	if (mt_plan_rounds(&r->cfg, &w, &plan)) {
		/* mt_bench_config_resolve rules this out; say so rather than loop forever. */
		fprintf(stderr, PROG ": benchmark '%s': cannot determine the number of rounds\n",
			r->name);
		return -EINVAL;
	}
	say_plan(h, r, &w, &plan);
	if (plan.warmup_is_result)
		return push_time(r, w.first_ns);
	r->warmup_runs = w.runs;
	start = now_ns();
	do {
		ret = run_once(h, r->name, cfg, &ns);
		if (!ret)
			ret = push_time(r, ns);
		if (ret)
			return ret;
	} while (!mt_plan_done(&r->cfg, &plan, r->n, now_ns() - start));
	return 0;
}

static int measure_memory(struct harness *h, size_t idx, char *const *argv, struct bench_result *r)
{
	struct mt_run_config cfg = h->base;
	char err[ERRLEN];
	uint64_t ns;
	int ret;

	if (snprintf(r->artifact, sizeof(r->artifact), "%s/%d-%zu.mtk", h->artifact_dir,
		     (int)getpid(), idx) >= (int)sizeof(r->artifact)) {
		fprintf(stderr, PROG ": the artifact path under '%s' is too long\n",
			h->artifact_dir);
		return -ENAMETOOLONG;
	}
	cfg.argv = argv;
	cfg.track = true;
	cfg.artifact_path = r->artifact;
	if (!h->opts->quiet)
		fprintf(stderr, "memtrack: '%s': one run with allocation tracking\n", r->name);
	ret = run_once(h, r->name, &cfg, &ns);
	if (ret)
		return ret;
	r->has_memory = true;
	/* The timings stand without the totals: warn, keep the artifact for memtrack report. */
	err[0] = '\0';
	if (mt_report_totals_of(r->artifact, &r->mem, err, sizeof(err)))
		fprintf(stderr, PROG ": warning: benchmark '%s': no memory summary: %s\n", r->name,
			err);
	else
		r->memory_ok = true;
	return 0;
}

static int run_bench(struct harness *h, size_t idx, const struct mt_bench *b,
		     struct bench_result *r)
{
	struct mt_run_config cfg = h->base;
	int ret;

	cfg.argv = b->argv;
	ret = measure(h, &cfg, r);
	if (!ret)
		ret = mt_stats_compute(r->times, r->n, &r->stats);
	if (!ret && h->opts->memory)
		ret = measure_memory(h, idx, b->argv, r);
	return ret;
}

/* ---- Results ----------------------------------------------------------------------------- */

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int make_dir(char *buf, size_t len, const char *dir, const char *sub)
{
	int ret;

	if (snprintf(buf, len, "%s/%s", dir, sub) >= (int)len)
		ret = -ENAMETOOLONG;
	else
		ret = mkdir_p(buf);
	if (ret)
		fprintf(stderr, PROG ": cannot create '%s': %s\n", buf, strerror(-ret));
	return ret;
}

static int prepare_output(struct harness *h)
{
	const char *dir = h->opts->output, *env = getenv("CODSPEED_PROFILE_FOLDER");
	int ret;

	if (!dir)
		dir = env && *env ? env : ".codspeed";
	ret = make_dir(h->results_dir, sizeof(h->results_dir), dir, "results");
	/* Not in results/: whatever reads results/ expects nothing but results JSON there. */
	if (!ret && h->opts->memory)
		ret = make_dir(h->artifact_dir, sizeof(h->artifact_dir), dir, "memtrack");
	return ret;
}

/* json-c objects: a NULL from an allocation failure makes the add fail, checked at the end. */
static void put(struct json_object *o, const char *key, struct json_object *v)
{
	if (o && v && json_object_object_add(o, key, v))
		json_object_put(v);
}

/* An absent limit is JSON null, as in the schema's optional fields. */
static void put_null(struct json_object *o, const char *key)
{
	if (o)
		json_object_object_add(o, key, NULL);
}

static struct json_object *config_json(const struct mt_bench_config *c)
{
	struct json_object *o = json_object_new_object();

	put(o, "warmup_time_ns", json_object_new_double((double)c->warmup_ns));
	/* One command run per round: there is no minimum round time to calibrate towards. */
	put_null(o, "min_round_time_ns");
	if (c->max_time_ns)
		put(o, "max_time_ns", json_object_new_double((double)c->max_time_ns));
	else
		put_null(o, "max_time_ns");
	if (c->max_rounds)
		put(o, "max_rounds", json_object_new_uint64(c->max_rounds));
	else
		put_null(o, "max_rounds");
	return o;
}

static struct json_object *stats_json(const struct bench_result *r)
{
	const struct mt_stats *s = &r->stats;
	struct json_object *o = json_object_new_object();

	put(o, "min_ns", json_object_new_double(s->min_ns));
	put(o, "max_ns", json_object_new_double(s->max_ns));
	put(o, "mean_ns", json_object_new_double(s->mean_ns));
	put(o, "stdev_ns", json_object_new_double(s->stdev_ns));
	put(o, "q1_ns", json_object_new_double(s->q1_ns));
	put(o, "median_ns", json_object_new_double(s->median_ns));
	put(o, "q3_ns", json_object_new_double(s->q3_ns));
	put(o, "rounds", json_object_new_uint64(s->rounds));
	put(o, "total_time", json_object_new_double(s->total_time_s));
	put(o, "iqr_outlier_rounds", json_object_new_uint64(s->iqr_outlier_rounds));
	put(o, "stdev_outlier_rounds", json_object_new_uint64(s->stdev_outlier_rounds));
	put(o, "iter_per_round", json_object_new_uint64(1));
	put(o, "warmup_iters", json_object_new_uint64(r->warmup_runs));
	return o;
}

static struct json_object *memory_json(const struct bench_result *r)
{
	struct json_object *o = json_object_new_object();

	put(o, "artifact", json_object_new_string(r->artifact));
	if (!r->memory_ok)
		return o;
	put(o, "peak_bytes", json_object_new_uint64(r->mem.peak_bytes));
	put(o, "allocations", json_object_new_uint64(r->mem.allocations));
	put(o, "allocated_bytes", json_object_new_uint64(r->mem.bytes_allocated));
	put(o, "live_bytes_at_exit", json_object_new_uint64(r->mem.live_bytes));
	put(o, "frees", json_object_new_uint64(r->mem.frees));
	put(o, "reallocs", json_object_new_uint64(r->mem.reallocs));
	put(o, "dropped", json_object_new_uint64(r->mem.dropped));
	return o;
}

static struct json_object *bench_json(const struct bench_result *r)
{
	struct json_object *o = json_object_new_object();
	char *uri = malloc(strlen(URI_PREFIX) + strlen(r->name) + 1);

	if (uri)
		strcat(strcpy(uri, URI_PREFIX), r->name);
	put(o, "name", json_object_new_string(r->name));
	put(o, "uri", uri ? json_object_new_string(uri) : NULL);
	put(o, "config", config_json(&r->cfg));
	put(o, "stats", stats_json(r));
	if (r->has_memory)
		put(o, "memory", memory_json(r));
	free(uri);
	return o;
}

static struct json_object *results_json(const struct bench_result *res, size_t n)
{
	struct json_object *root = json_object_new_object();
	struct json_object *creator = json_object_new_object();
	struct json_object *instrument = json_object_new_object();
	struct json_object *benches = json_object_new_array();
	size_t i;

	put(creator, "name", json_object_new_string("memtrack"));
	put(creator, "version", json_object_new_string(MT_VERSION));
	put(creator, "pid", json_object_new_int((int)getpid()));
	put(instrument, "type", json_object_new_string("walltime"));
	for (i = 0; i < n && benches; i++) {
		struct json_object *b = bench_json(&res[i]);

		if (b && json_object_array_add(benches, b))
			json_object_put(b);
	}
	put(root, "creator", creator);
	put(root, "instrument", instrument);
	put(root, "benchmarks", benches);
	return root;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

static int write_results(const struct harness *h, const struct bench_result *res, size_t n)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	struct json_object *root = results_json(res, n);
	struct json_object *benches;
	const char *text;
	int ret;

	/* Any allocation failure above left a key out: never write a partial results file. */
	if (!root || !json_object_object_get_ex(root, "benchmarks", &benches) ||
	    json_object_array_length(benches) != n) {
		ret = -ENOMEM;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d.json", h->results_dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	text =
	    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	ret = text ? write_file(tmp, text) : -ENOMEM;
	/* Readers pick up every results/PID.json: they must never see a half-written one. */
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
cleanup:
	if (ret)
		fprintf(stderr, PROG ": cannot write the results to '%s': %s\n", h->results_dir,
			strerror(-ret));
	else if (!h->opts->quiet)
		fprintf(stderr, "memtrack: results written to %s\n", path);
	json_object_put(root);
	return ret;
}

/* ---- Human output ------------------------------------------------------------------------ */

static char *format_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	unsigned int i = 0;

	while (i < 4 && v >= 1024.0) {
		v /= 1024.0;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, names[i]);
	return buf;
}

static void print_row(const struct bench_result *r, int w)
{
	const struct mt_stats *s = &r->stats;
	char mean[32], med[32], sd[32], lo[32], hi[32], out[48];

	snprintf(out, sizeof(out), "%llu/%llu", (unsigned long long)s->iqr_outlier_rounds,
		 (unsigned long long)s->stdev_outlier_rounds);
	fprintf(stderr, "%-*s %7llu %10s %10s %10s %10s %10s %9s\n", w, r->name,
		(unsigned long long)s->rounds, mt_format_duration(s->mean_ns, mean, sizeof(mean)),
		mt_format_duration(s->median_ns, med, sizeof(med)),
		mt_format_duration(s->stdev_ns, sd, sizeof(sd)),
		mt_format_duration(s->min_ns, lo, sizeof(lo)),
		mt_format_duration(s->max_ns, hi, sizeof(hi)), out);
}

static void print_memory(const struct bench_result *r)
{
	char peak[32], total[32], live[32];

	if (!r->memory_ok)
		return;
	fprintf(stderr, "%s: peak %s, %llu allocations (%s), %s live at exit\n", r->name,
		format_bytes(r->mem.peak_bytes, peak, sizeof(peak)),
		(unsigned long long)r->mem.allocations,
		format_bytes(r->mem.bytes_allocated, total, sizeof(total)),
		format_bytes(r->mem.live_bytes, live, sizeof(live)));
	/* Nothing is lost silently (DESIGN.md): a figure built on dropped records says so. */
	if (r->mem.dropped)
		fprintf(stderr, "%s: %llu records dropped: the figures above are incomplete\n",
			r->name, (unsigned long long)r->mem.dropped);
}

static void print_table(const struct bench_result *res, size_t n)
{
	int w = 4;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((int)strlen(res[i].name) > w)
			w = (int)strlen(res[i].name);
	}
	/* Outliers: by the IQR rule / beyond two standard deviations. */
	fprintf(stderr, "%-*s %7s %10s %10s %10s %10s %10s %9s\n", w, "name", "rounds", "mean",
		"median", "stdev", "min", "max", "outliers");
	for (i = 0; i < n; i++)
		print_row(&res[i], w);
	for (i = 0; i < n; i++)
		print_memory(&res[i]);
}

/* ---- Entry point ------------------------------------------------------------------------- */

static void free_results(struct bench_result *res, size_t n)
{
	size_t i;

	for (i = 0; res && i < n; i++) {
		free(res[i].name);
		free(res[i].times);
	}
	free(res);
}

static int run_all(struct harness *h, const struct mt_bench_list *list, struct bench_result *res)
{
	size_t i;
	int ret;

	for (i = 0; i < list->n; i++) {
		if (!h->opts->quiet)
			fprintf(stderr, "memtrack: benchmarking '%s'\n", res[i].name);
		ret = run_bench(h, i, &list->v[i], &res[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int mt_harness_main(int argc, char **argv)
{
	struct mt_bench_list list = {0};
	struct bench_result *res = NULL;
	struct harness_opts o;
	struct harness h;
	int ret, code = 2;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	memset(&h, 0, sizeof(h));
	h.opts = &o;
	h.exit_code = 1;
	mt_choose_user(&h.base, NULL);
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
	ret = res ? resolve_all(&list, res) : -ENOMEM;
	if (ret) {
		code = ret == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	code = 1;
	if (prepare_output(&h))
		goto cleanup;
	if (run_all(&h, &list, res)) {
		code = h.exit_code;
		goto cleanup;
	}
	if (write_results(&h, res, list.n))
		goto cleanup;
	if (!o.quiet)
		print_table(res, list.n);
	code = 0;
cleanup:
	if (code == 1 && ret == -ENOMEM)
		fprintf(stderr, PROG ": out of memory\n");
	free_results(res, list.n);
	mt_bench_list_free(&list);
	return code;
}
