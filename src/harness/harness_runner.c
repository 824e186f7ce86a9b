// SPDX-License-Identifier: GPL-2.0
/*
 * exec-harness under CodSpeed's runner (harness.h): what exec-harness 1.3.0 tells the runner
 * through instrument-hooks, in its order (crates/exec-harness/src/walltime/benchmark_loop.rs,
 * src/analysis/mod.rs; docs/HARNESS.md has the exchange message by message):
 *
 * - once, before the first benchmark: instrument-hooks' greeting, which tries its analysis
 *   instrument, then its walltime one, each with SetVersion(2) and GetIntegrationMode, the first
 *   whose mode the runner answers winning; then SetIntegration {"exec-harness", "1.3.0"};
 * - per benchmark: StartProfiler before the warm-up (walltime) or the one run (memory); after
 *   the rounds, an AddMarker RoundStart and RoundEnd per measured round (none in memory mode);
 *   StopProfiler; CurrentBenchmark {pid, uri}, pid being exec-harness's own.
 *
 * Every function is a no-op without a runner. A failure has said its sentence and makes the
 * exit status 1.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "harness/harness.h"

/* CodSpeed's INTEGRATION_NAME and INTEGRATION_VERSION (crates/exec-harness/build.rs): the
 * memory executor accepts exec-harness from 1.0.0 on. */
#define INTEGRATION_NAME    "exec-harness"
#define INTEGRATION_VERSION "1.3.0"
/* instrument-hooks waits 1 s for each answer; a loaded CI machine gets more, still bounded. */
#define ANSWER_TIMEOUT_MS   5000

static int call(struct mt_harness *h, const struct mt_fifo_msg *m)
{
	int ret = mt_fifo_call(h->runner, m);

	if (ret)
		h->exit_code = 1;
	return ret;
}

static int greet(struct mt_harness *h)
{
	static const enum mt_fifo_mode instruments[] = {MT_FIFO_MODE_ANALYSIS,
							MT_FIFO_MODE_WALLTIME};
	struct mt_fifo_msg version = {.cmd = MT_FIFO_SET_VERSION,
				      .value = MT_FIFO_PROTOCOL_VERSION};
	struct mt_fifo_msg mode = {.cmd = MT_FIFO_GET_INTEGRATION_MODE};
	struct mt_fifo_msg integration = {
	    .cmd = MT_FIFO_SET_INTEGRATION, .str = INTEGRATION_NAME, .str2 = INTEGRATION_VERSION};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(instruments) / sizeof(instruments[0]); i++) {
		ret = call(h, &version);
		if (!ret)
			ret = call(h, &mode);
		if (ret)
			return ret;
		if (h->runner->mode == instruments[i])
			return call(h, &integration);
	}
	fprintf(stderr,
		MT_HARNESS_PROG ": the runner measures in %s mode, which memtrack's exec-harness "
				"does not support\n",
		mt_fifo_mode_name(h->runner->mode));
	h->exit_code = 1;
	return -EPROTO;
}

int mt_harness_runner_connect(struct mt_harness *h, struct mt_fifo *f)
{
	const struct mt_identity *id = &h->base.identity;
	int ret = mt_fifo_connect(f, MT_FIFO_CTL_PATH, MT_FIFO_ACK_PATH, ANSWER_TIMEOUT_MS,
				  id->drop_privileges ? id->uid : getuid());

	h->runner = NULL;
	if (ret <= 0) {
		h->exit_code = 1;
		return ret;
	}
	h->runner = f;
	ret = greet(h);
	if (ret)
		return ret;
	/*
	 * As CodSpeed's, the mode is exec-harness's own, and under a runner memory mode records
	 * nothing itself: the runner's tracker (codspeed-memtrack) wraps the whole tree.
	 */
	if (h->mode == MT_HARNESS_MEMORY)
		h->memory = false;
	if ((h->mode == MT_HARNESS_MEMORY) != (f->mode == MT_FIFO_MODE_ANALYSIS))
		fprintf(stderr,
			MT_HARNESS_PROG
			": warning: the runner measures in %s mode, exec-harness in "
			"%s mode\n",
			mt_fifo_mode_name(f->mode),
			h->mode == MT_HARNESS_MEMORY ? "memory" : "walltime");
	return 0;
}

int mt_harness_runner_tell(struct mt_harness *h, enum mt_fifo_cmd cmd)
{
	struct mt_fifo_msg m = {.cmd = cmd};

	return h->runner ? call(h, &m) : 0;
}

int mt_harness_runner_rounds(struct mt_harness *h, const struct mt_bench_result *r)
{
	struct mt_fifo_msg m = {.cmd = MT_FIFO_ADD_MARKER, .pid = (int32_t)getpid()};
	size_t i;
	int ret;

	for (i = 0; h->runner && i < r->n; i++) {
		m.marker = MT_MARKER_ROUND_START;
		m.value = r->starts[i];
		ret = call(h, &m);
		if (ret)
			return ret;
		m.marker = MT_MARKER_ROUND_END;
		m.value = r->starts[i] + r->times[i];
		ret = call(h, &m);
		if (ret)
			return ret;
	}
	return 0;
}

int mt_harness_runner_executed(struct mt_harness *h, const struct mt_bench_result *r)
{
	struct mt_fifo_msg m = {
	    .cmd = MT_FIFO_CURRENT_BENCHMARK, .pid = (int32_t)getpid(), .str = r->uri};

	return h->runner ? call(h, &m) : 0;
}
