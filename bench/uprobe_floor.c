// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_floor --placement=entry|smart [-v] LIB -- CMD [ARGS...]
 *
 * The floor that memtrack's tracking overhead is judged against: attach empty BPF programs
 * (bpf/floor.bpf.c) to the allocator functions of LIB exactly as memtrack would (the points and
 * offsets of mt_classify_path(), an entry uprobe on every point and a uretprobe on the points
 * that need one, uprobe_multi links with pid -1), run CMD once and print its wall time in
 * nanoseconds on stdout. The time runs from fork to reap on CLOCK_MONOTONIC: loading, attaching
 * and detaching are outside it, so the floor is what the probes cost while the command runs;
 * memtrack's own set-up and detach are in its whole-run time, and tools/bench reports them apart.
 * CMD's stdout goes to /dev/null so that only the number reaches ours; a failing CMD is an error,
 * never a time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "classify/classify.h"
#include "tracker/tracker.h"
#include "floor.skel.h"
#include "spawn.h"

struct floor {
	struct floor_bpf *skel;
	int multi_fd[2];
	struct bpf_link **links;
	size_t n_links;
	size_t n_entry, n_ret;
};

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void usage(void)
{
	fprintf(stderr, "usage: uprobe_floor --placement=entry|smart [-v] LIB -- CMD [ARGS...]\n");
}

static int load(struct floor *f, bool multi)
{
	struct floor_bpf *s = floor_bpf__open();
	int err;

	if (!s)
		return -errno;
	bpf_program__set_autoload(s->progs.floor_enter, !multi);
	bpf_program__set_autoload(s->progs.floor_exit, !multi);
	bpf_program__set_autoload(s->progs.floor_enter_multi, multi);
	bpf_program__set_autoload(s->progs.floor_exit_multi, multi);
	bpf_program__set_expected_attach_type(s->progs.floor_enter_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.floor_exit_multi, MT_BPF_TRACE_UPROBE_MULTI);
	err = floor_bpf__load(s);
	if (err) {
		floor_bpf__destroy(s);
		return err;
	}
	f->skel = s;
	return 0;
}

/* The same two uprobe_multi links memtrack makes (cookies of file 0: the programs ignore them). */
static int attach_multi(struct floor *f, const char *path, const struct mt_classification *c)
{
	int err = mt_uprobe_multi_attach_points(f->skel->progs.floor_enter_multi,
						f->skel->progs.floor_exit_multi, path, c, 0, -1,
						f->multi_fd);

	if (err)
		return err;
	f->n_entry = c->n_points;
	for (size_t i = 0; i < c->n_points; i++)
		f->n_ret += c->points[i].ret;
	return 0;
}

static int attach_one(struct floor *f, const char *path, const struct mt_probe_point *p, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret, .bpf_cookie = MT_COOKIE(0, p->kind));
	struct bpf_program *prog = ret ? f->skel->progs.floor_exit : f->skel->progs.floor_enter;
	struct bpf_link *link =
	    bpf_program__attach_uprobe_opts(prog, -1, path, p->probe_offset, &opts);

	if (!link)
		return -errno;
	f->links[f->n_links++] = link;
	return 0;
}

static int attach_perf(struct floor *f, const char *path, const struct mt_classification *c)
{
	int err = 0;

	f->links = calloc(2 * c->n_points, sizeof(*f->links));
	if (!f->links)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_points && !err; i++) {
		err = attach_one(f, path, &c->points[i], false);
		f->n_entry += !err;
		if (!err && c->points[i].ret) {
			err = attach_one(f, path, &c->points[i], true);
			f->n_ret += !err;
		}
	}
	return err;
}

static void detach(struct floor *f)
{
	for (int j = 0; j < 2; j++)
		if (f->multi_fd[j] > 0)
			close(f->multi_fd[j]);
	f->multi_fd[0] = f->multi_fd[1] = 0;
	for (size_t i = 0; i < f->n_links; i++)
		bpf_link__destroy(f->links[i]);
	free(f->links);
	f->links = NULL;
	f->n_links = f->n_entry = f->n_ret = 0;
	floor_bpf__destroy(f->skel);
	f->skel = NULL;
}

/* Same mechanism as memtrack: uprobe_multi where the kernel has it, one link per probe else. */
static int attach(struct floor *f, const char *path, const struct mt_classification *c)
{
	int err = load(f, true);

	if (!err) {
		err = attach_multi(f, path, c);
		if (err != -EINVAL && err != -EOPNOTSUPP)
			return err;
		detach(f);
	}
	err = load(f, false);
	if (err)
		return err;
	return attach_perf(f, path, c);
}

int main(int argc, char **argv)
{
	enum mt_placement_mode mode = MT_PLACE_SMART;
	struct mt_classification c = {0};
	struct floor f = {0};
	const char *lib = NULL;
	bool placed = false;
	uint64_t wall;
	int i, err;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--placement=entry") == 0) {
			mode = MT_PLACE_ENTRY;
			placed = true;
		} else if (strcmp(argv[i], "--placement=smart") == 0) {
			mode = MT_PLACE_SMART;
			placed = true;
		} else if (strcmp(argv[i], "-v") == 0) {
			verbose = true;
		} else if (argv[i][0] != '-' && !lib) {
			lib = argv[i];
		} else {
			usage();
			return 2;
		}
	}
	/* No default placement: a floor measured at the wrong offsets would look plausible. */
	if (!placed || !lib || i + 1 >= argc) {
		usage();
		return 2;
	}
	libbpf_set_print(print_libbpf);
	err = mt_classify_path(lib, mode, &c);
	if (err || c.n_points == 0) {
		fprintf(stderr, "uprobe_floor: %s: %s\n", lib,
			err ? strerror(-err) : "no allocator function to probe");
		return 1;
	}
	/* memtrack -v's format, so that tools/bench can check that both probe the same offsets. */
	if (verbose)
		for (size_t k = 0; k < c.n_points; k++)
			fprintf(stderr, "uprobe_floor: %s: %s at +%#" PRIx64 " (%s)\n", lib,
				c.points[k].symbol,
				c.points[k].probe_offset - c.points[k].func_offset,
				c.points[k].reason);
	err = attach(&f, lib, &c);
	if (err) {
		fprintf(stderr, "uprobe_floor: cannot attach to %s: %s\n", lib, strerror(-err));
		detach(&f);
		mt_classification_free(&c);
		return 1;
	}
	if (verbose)
		fprintf(stderr, "uprobe_floor: %zu entry and %zu return probes on %s (%s)\n",
			f.n_entry, f.n_ret, lib, f.n_links ? "one link each" : "uprobe_multi");
	err = bench_spawn("uprobe_floor", argv + i + 1, &wall);
	/* Detaching waits for RCU grace periods: it must stay out of the measured time. */
	detach(&f);
	mt_classification_free(&c);
	if (err)
		return 1;
	printf("%llu\n", (unsigned long long)wall);
	return 0;
}
