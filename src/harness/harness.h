/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrack exec-harness: runs a command (or a JSON list of them) through the supervisor for a
 * warm-up and measured rounds, and writes wall-time statistics in the walltime results schema
 * that CodSpeed's tools read (docs/HARNESS.md). Its modules: the benchmarks read from JSON
 * (harness_json.c), the round plan and the statistics (harness_stats.c), the runner
 * (harness_run.c), the results (harness_results.c), CodSpeed's duration grammar
 * (harness_duration.c), CodSpeed's memory artifact (harness_codspeed.c) and the runner's FIFO
 * (harness_fifo.c). Its command line is cmd_harness.c.
 */
#ifndef MT_HARNESS_H
#define MT_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/outfile.h"
#include "codspeed/codspeed_write.h"
#include "harness/harness_fifo.h"
#include "harness/harness_prog.h"
#include "harness/harness_stats.h"
#include "aggregate/report.h"
#include "supervisor/supervisor.h"

/* Room for one sentence from a parser. */
#define MT_HARNESS_ERRLEN 320

struct mt_bench {
	char *name;  /* NULL: the command line joined with spaces */
	char **argv; /* NULL-terminated */
	struct mt_bench_limits limits;
};

struct mt_bench_list {
	struct mt_bench *v;
	size_t n;
};

/*
 * Read the benchmarks of `memtrack exec-harness -` from JSON text. Limits start from defaults
 * (the command-line options) and non-null walltime_args fields override them. Returns 0, or
 * -EINVAL with one sentence in err (-ENOMEM without one). out is empty on error.
 */
int mt_harness_json_parse(const char *text, size_t len, const struct mt_bench_limits *defaults,
			  struct mt_bench_list *out, char *err, size_t errlen);
void mt_bench_list_free(struct mt_bench_list *l);

/* CodSpeed's measurement modes that memtrack implements (-m, $CODSPEED_RUNNER_MODE). */
enum mt_harness_mode {
	MT_HARNESS_WALLTIME, /* warm-up and rounds, DIR/results/PID.json */
	MT_HARNESS_MEMORY,   /* one tracked run each, CodSpeed's memory artifact in DIR/results */
};

/* One run of exec-harness: where the results go and what every round shares. */
struct mt_harness {
	const char *output; /* --output DIR; NULL: $CODSPEED_PROFILE_FOLDER, else ./.codspeed */
	enum mt_harness_mode mode;
	bool
	    memory; /* a tracked run of each benchmark: --memory, or memory mode without a runner */
	bool quiet;
	char results_dir[PATH_MAX];  /* DIR/results: only results JSON, which runners read */
	char artifact_dir[PATH_MAX]; /* DIR/memtrack: the --memory artifacts */
	struct mt_run_config base;   /* what every round shares: identity, watcher, placement */
	/*
	 * CodSpeed's runner, told of every benchmark as exec-harness tells it; NULL when there is
	 * none (run by hand). In memory mode the runner's own tracker records: memory is false.
	 */
	struct mt_fifo *runner;
	int exit_code;		    /* memtrack's exit status once a benchmark failed */
	struct mt_tracker *tracker; /* shared by the tracked runs (NULL: each opens its own) */
	struct mt_harness_helper *helper;     /* memory mode's, while the runs go; or NULL */
	struct mt_loader_cache *loader_cache; /* the shared tracker's runs link at exec */
};

/* What one benchmark measured. */
struct mt_bench_result {
	char *name; /* truncated to 924 bytes as CodSpeed does */
	char *uri;  /* exec_harness:: and the whole name */
	struct mt_bench_config cfg;
	uint64_t *times;
	uint64_t *starts; /* CLOCK_MONOTONIC at each round's start: the runner's RoundStart */
	size_t n, cap;
	uint64_t warmup_runs;
	struct mt_stats stats;
	bool has_memory; /* --memory ran; mem is valid only with memory_ok */
	bool memory_ok;
	struct mt_report_totals mem; /* of the tracked run's artifact */
	char artifact[PATH_MAX];
	uint64_t tracked_start_ns, tracked_end_ns; /* memory mode: CLOCK_MONOTONIC of the run */
	/* memory mode: CodSpeed's artifact, converted once cs_converted (cs_ret its result) */
	struct mt_codspeed_job cs;
	int cs_ret;
	bool cs_converted;
	struct mt_outfile_made made; /* its artifact, made ahead when made_ahead */
	bool made_ahead;
};

/*
 * Connect to CodSpeed's runner when its FIFOs are there, and greet it as exec-harness does
 * (version, mode, integration). Returns 0 (h->runner set, or NULL without a runner), or a
 * negative errno after one sentence.
 */
int mt_harness_runner_connect(struct mt_harness *h, struct mt_fifo *f);
/* What exec-harness tells the runner around a benchmark (harness_runner.c); no-ops without one. */
int mt_harness_runner_tell(struct mt_harness *h, enum mt_fifo_cmd cmd); /* Start/StopProfiler */
int mt_harness_runner_rounds(struct mt_harness *h, const struct mt_bench_result *r);
int mt_harness_runner_executed(struct mt_harness *h, const struct mt_bench_result *r);

/*
 * Name every benchmark and resolve its limits before any runs, so that a typo in the last one
 * costs no time. Returns 0, -ENOMEM, or -EINVAL after one sentence on stderr.
 */
int mt_harness_resolve(const struct mt_bench_list *list, struct mt_bench_result *res);

/*
 * Run every benchmark: its warm-up, its rounds, its statistics and, with h->memory, the tracked
 * run. Returns 0, or a negative errno after one sentence; h->exit_code is then memtrack's exit
 * status (the command's when it failed).
 */
int mt_harness_run_all(struct mt_harness *h, const struct mt_bench_list *list,
		       struct mt_bench_result *res);
void mt_harness_results_free(struct mt_bench_result *res, size_t n);

/* Make DIR/results (and DIR/memtrack with h->memory). 0 or a negative errno after a sentence. */
int mt_harness_prepare_output(struct mt_harness *h);
/* DIR/results/PID.json, whole or not at all. 0 or a negative errno after a sentence. */
int mt_harness_write_results(const struct mt_harness *h, const struct mt_bench_result *res,
			     size_t n);
/*
 * Memory mode: for each benchmark, CodSpeed's memory artifact
 * DIR/results/PID.MemtrackArtifact.msgpack (PID: the tracked command's), and
 * DIR/results/ExecutionTimestamps.msgpack naming every benchmark (harness_codspeed.c). 0 or a
 * negative errno after a sentence.
 */
int mt_harness_write_codspeed(const struct mt_harness *h, struct mt_bench_result *res, size_t n);
/* One benchmark's CodSpeed artifact converted from its .mtk, not published yet (b->cs). */
void mt_harness_codspeed_convert(const struct mt_harness *h, struct mt_bench_result *b);

/*
 * Memory mode's helper (harness_helper.c), a thread that does beside the runs what they need
 * before and leave after them: it makes each benchmark's artifact while the one before runs, and
 * converts each finished run's artifact while the next one runs. Start it before the runs
 * (without it, or if it cannot start, the runs make their artifacts and mt_harness_write_codspeed
 * converts), take each benchmark's artifact before its run and give it back after, in order, and
 * stop it before res is read or freed: it waits for the work under way only, and what it did not
 * convert is mt_harness_write_codspeed's to convert.
 */
void mt_harness_helper_start(struct mt_harness *h, struct mt_bench_result *res, size_t n);
void mt_harness_helper_take(struct mt_harness *h, size_t k, struct mt_run_config *cfg);
void mt_harness_helper_ran(struct mt_harness *h, size_t k, bool ok);
void mt_harness_helper_stop(struct mt_harness *h);
/* The table of the results, and the --memory figures, on stderr. */
void mt_harness_print_table(const struct mt_bench_result *res, size_t n);

#endif
