// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF object's instances: which programs each loads (prog_needs says which feature each
 * program serves), the maps they all share, and the threads that load instances beside the main
 * thread's: the maps' instance while the kernel's BTF is walked, the uprobe_multi programs' while
 * the lifecycle's load and the run start. A feature the run turns out to need later (one perf
 * link per probe, once the kernel refused a uprobe_multi link) is loaded then, into another
 * instance that shares the first one's maps. -v says what the verifier spent on each program.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"

#include "inspect/procmaps.h"
#include "tracker/tracker.h"
#include "tracker/tracker_int.h"

/*
 * Which features of a run each program of bpf/memtrack.bpf.c serves. A program the table does
 * not name is loaded for every run: a new program costs verification until it is named here.
 */
static const struct prog_need {
	const char *name;
	unsigned int needs;
	bool multi_link; /* attached by uprobe_multi links: loaded as such */
} prog_needs[] = {
    {"handle_fork", MT_NEED_LIFECYCLE, false},
    {"handle_exec", MT_NEED_LIFECYCLE, false},
    {"handle_exit", MT_NEED_LIFECYCLE, false},
    {"handle_exit_in_call", MT_NEED_THROWS, false}, /* decodes calls: loaded when needed */
    {"watch_debugger", MT_NEED_LIFECYCLE, false},   /* 31 instructions: not worth a late load */
    {"watch_tracer", MT_NEED_LIFECYCLE, false},	    /* tracers inside the tree (tracker_ptrace.c) */
    {"watch_mmap_fentry", MT_NEED_FENTRY, false},
    {"watch_mmap_tp", MT_NEED_TRACEPOINT, false},
    {"alloc_enter_multi", MT_NEED_MULTI, true},
    {"alloc_exit_multi", MT_NEED_MULTI, true},
    {"keep_breakpoints", MT_NEED_MULTI, false}, /* the keepers of uprobe_multi processes */
    {"alloc_enter", MT_NEED_PERF, false},
    {"alloc_exit", MT_NEED_PERF, false},
    {"unwind_munmap", MT_NEED_STACKS, false},
    {"unwind_mremap", MT_NEED_STACKS, false},
    {"unwind_mmap_fixed", MT_NEED_STACKS, false},
    {"map_mmap_enter", MT_NEED_MAPPINGS, false},
    {"map_mmap_exit", MT_NEED_MAPPINGS, false},
    {"map_munmap_enter", MT_NEED_MAPPINGS, false},
    {"map_munmap_exit", MT_NEED_MAPPINGS, false},
    {"map_mremap_enter", MT_NEED_MAPPINGS, false},
    {"map_mremap_exit", MT_NEED_MAPPINGS, false},
    {"map_brk_enter", MT_NEED_MAPPINGS, false},
    {"map_brk_exit", MT_NEED_MAPPINGS, false},
};

static const struct prog_need *need_of(const struct bpf_program *p)
{
	static const struct prog_need unnamed = {.needs = MT_NEED_LIFECYCLE};

	for (size_t i = 0; i < sizeof(prog_needs) / sizeof(prog_needs[0]); i++)
		if (!strcmp(bpf_program__name(p), prog_needs[i].name))
			return &prog_needs[i];
	return &unnamed;
}

/* Load exactly the programs that serve one of needs (the uprobe_multi ones as such). */
void tracker_select_programs(struct bpf_object *obj, unsigned int needs)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
	{
		const struct prog_need *n = need_of(p);

		bpf_program__set_autoload(p, (n->needs & needs) != 0);
		if (n->multi_link)
			bpf_program__set_expected_attach_type(p, MT_BPF_TRACE_UPROBE_MULTI);
	}
}

/* The loaded program name, from the object or one loaded later; NULL when none is. */
struct bpf_program *tracker_prog(struct mt_tracker *t, const char *name)
{
	struct bpf_program *p;

	tracker_loads_done(t);
	p = bpf_object__find_program_by_name(t->skel->obj, name);

	if (p && bpf_program__fd(p) >= 0)
		return p;
	for (int i = 0; i < t->n_later; i++) {
		p = bpf_object__find_program_by_name(t->later[i]->obj, name);
		if (p && bpf_program__fd(p) >= 0)
			return p;
	}
	return NULL;
}

/* More than the object has: -v's table of them. */
#define MT_MAX_PROGS 64

/* The kernel's clock of bpf_prog_info.load_time. */
static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * -v: what each loaded program cost the verifier (docs/PERFORMANCE.md, section 4). The kernel
 * stamps a program with the boot time its BPF_PROG_LOAD began (bpf_prog_info.load_time, taken
 * before verification), and libbpf loads the programs one after the other: a program's load
 * lasted until the next one's began (the last one's until the object's load returned).
 */
static void print_verified(struct bpf_object *obj, const char *what, uint64_t start, uint64_t end)
{
	struct bpf_prog_info info[MT_MAX_PROGS];
	const char *name[MT_MAX_PROGS];
	struct bpf_program *p;
	uint64_t first = end;
	int n = 0;

	bpf_object__for_each_program(p, obj)
	{
		__u32 len = sizeof(info[n]);

		memset(&info[n], 0, sizeof(info[n]));
		if (n == MT_MAX_PROGS || bpf_program__fd(p) < 0 ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(p), &info[n], &len))
			continue;
		name[n] = bpf_program__name(p);
		if (info[n].load_time < first)
			first = info[n].load_time;
		n++;
	}
	if (!n) {
		fprintf(stderr, "memtrack: BPF maps created in %.1f ms (the object's BTF, maps)\n",
			(end - start) / 1e6);
		return;
	}
	for (int i = 0; i < n; i++) {
		uint64_t next = end;

		for (int j = 0; j < n; j++)
			if (info[j].load_time > info[i].load_time && info[j].load_time < next)
				next = info[j].load_time;
		fprintf(
		    stderr,
		    "memtrack: BPF program %s: %u instructions verified, %u loaded, in %.2f ms\n",
		    name[i], info[i].verified_insns,
		    info[i].xlated_prog_len / (unsigned int)sizeof(struct bpf_insn),
		    (next - info[i].load_time) / 1e6);
	}
	fprintf(stderr,
		"memtrack: BPF object for %s loaded in %.1f ms, %.1f ms of it before the first "
		"program (its BTF, maps, relocation)\n",
		what, (end - start) / 1e6, (first > start ? first - start : 0) / 1e6);
}

/* Load s, whose programs are for what (-v says what each cost). */
int tracker_load_object(struct mt_tracker *t, struct memtrack_bpf *s, const char *what)
{
	uint64_t start = boottime_ns();
	int err = memtrack_bpf__load(s);

	if (!err && t->cfg.verbose)
		print_verified(s->obj, what, start, boottime_ns());
	return err;
}

/*
 * Open the object with the small CO-RE target of tracker_btf.c, written from the object's own
 * BTF at the first open; without it (no kernel BTF read), libbpf searches the kernel's.
 */
struct memtrack_bpf *tracker_open_object(struct mt_tracker *t)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct memtrack_bpf *s;
	char path[32];

	tracker_btf_sections();
	if (tracker_btf_target_path(t, path, sizeof(path)))
		return memtrack_bpf__open();
	opts.btf_custom_path = path;
	s = memtrack_bpf__open_opts(&opts);
	if (!s || !tracker_btf_prepare(t, s->obj))
		return s;
	memtrack_bpf__destroy(s);
	tracker_btf_close(t); /* libbpf's own way from now on */
	return memtrack_bpf__open();
}

/* Make obj's maps those of the loaded object: programs loaded later share its state. */
static int share_maps(struct bpf_object *obj, struct bpf_object *loaded)
{
	struct bpf_map *m, *from;
	int err;

	bpf_object__for_each_map(m, obj)
	{
		from = bpf_object__find_map_by_name(loaded, bpf_map__name(m));
		if (!from)
			return -ENOENT;
		err = bpf_map__reuse_fd(m, bpf_map__fd(from));
		if (err)
			return err;
	}
	return 0;
}

/*
 * A new instance that loads the programs of needs and shares the loaded maps, in *out. It writes
 * nothing of t: the multi loader calls it beside the main thread, which owns the instances kept
 * (loaded, later, n_later). What it reads of t is set before that thread starts and not changed
 * while it runs (maps_skel, cfg, the CO-RE target written by the first open); the BTF state of a
 * load is per thread (tracker_btf_sections.c).
 */
static int load_instance(struct mt_tracker *t, unsigned int needs, struct memtrack_bpf **out)
{
	struct memtrack_bpf *s = tracker_open_object(t);
	int err;

	*out = NULL;
	if (!s)
		return -errno;
	err = share_maps(s->obj, (t->maps_skel ? t->maps_skel : t->skel)->obj);
	if (!err) {
		tracker_select_programs(s->obj, needs);
		tracker_btf_loading(t, true); /* a tracing program's target, found at the first */
		err = tracker_load_object(
		    t, s, needs & MT_NEED_MULTI ? "the uprobe_multi probes" : "more probes");
		tracker_btf_loading(t, false);
	}
	if (err) {
		memtrack_bpf__destroy(s);
		return err;
	}
	*out = s;
	return 0;
}

/* Keep s, loaded for needs, with the run's instances (the main thread's alone). */
static int keep_instance(struct mt_tracker *t, struct memtrack_bpf *s, unsigned int needs)
{
	if (t->n_later == MT_MAX_LATER) {
		memtrack_bpf__destroy(s);
		return -E2BIG;
	}
	t->later[t->n_later++] = s;
	t->loaded |= needs;
	return 0;
}

/* The run needs the programs of needs from now on: load those not loaded yet. */
int tracker_need(struct mt_tracker *t, unsigned int needs)
{
	struct memtrack_bpf *s;
	int err;

	if (needs & MT_NEED_MULTI)
		tracker_loads_done(t); /* the multi loader's, if it runs */
	needs &= ~t->loaded;
	if (!needs)
		return 0;
	if (t->n_later == MT_MAX_LATER)
		return -E2BIG;
	err = load_instance(t, needs, &s);
	return err ? err : keep_instance(t, s, needs);
}

/*
 * The uprobe_multi programs (alloc_enter_multi, the largest of the verifier's work) are loaded
 * by a thread of their own into another instance of the object, from the moment the maps exist
 * (tracker_load_maps_first), beside the lifecycle's load and the command's spawn: they are first
 * needed by the first file's links (tracker_prog, tracker_multi wait for them). If the kernel
 * refuses them, the run probes with one perf link per probe, as when it refuses a uprobe_multi
 * link. The thread writes its instance and error alone (multi_made, multi_err), which the main
 * thread reads once it has joined it: the main thread may load other instances meanwhile
 * (tracker_watch_exits_in_calls), and keeps them all.
 */
static void *multi_loader_main(void *arg)
{
	struct mt_tracker *t = arg;
	int err, tries = 0;

	do
		err = load_instance(t, MT_NEED_MULTI, &t->multi_made);
	while (err == -EAGAIN && ++tries < 100);
	t->multi_err = err;
	return NULL;
}

static int start_multi_loader(struct mt_tracker *t)
{
	int err = pthread_create(&t->multi_loader, NULL, multi_loader_main, t);

	if (err) /* no thread: load them here */
		return tracker_need(t, MT_NEED_MULTI);
	t->multi_loading = true;
	return 0;
}

void tracker_loads_done(struct mt_tracker *t)
{
	uint64_t start;

	if (!t->multi_loading)
		return;
	start = boottime_ns();
	pthread_join(t->multi_loader, NULL);
	t->multi_loading = false;
	if (!t->multi_err)
		t->multi_err = keep_instance(t, t->multi_made, MT_NEED_MULTI);
	t->multi_made = NULL;
	if (t->cfg.verbose)
		fprintf(stderr, "memtrack: waited %.2f ms for the uprobe_multi programs\n",
			(boottime_ns() - start) / 1e6);
	if (!t->multi_err)
		return;
	if (t->cfg.verbose)
		fprintf(stderr,
			"memtrack: no uprobe_multi programs on this kernel (%s): one link per "
			"probe\n",
			strerror(-t->multi_err));
	t->multi = false;
	t->mm_filter = false; /* perf links: the programs check the cookie's process */
}

bool tracker_multi(struct mt_tracker *t)
{
	tracker_loads_done(t);
	return t->multi;
}

bool tracker_mm_filter(struct mt_tracker *t)
{
	tracker_loads_done(t);
	return t->mm_filter;
}

/* The kernel's pid_max, in memtrack's pid namespace at the start; 0: unknown. */
static unsigned int pid_max(void)
{
	unsigned int n = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%u", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/*
 * A map keyed by tgid or tid holds no more keys than pid_max (every pid is below it): buckets
 * past it would be set up and freed for nothing (a hash map's 65,536 cost 0.6 ms each way).
 */
static void cap_at_pid_max(struct bpf_map *m, unsigned int max)
{
	if (max && max < bpf_map__max_entries(m))
		bpf_map__set_max_entries(m, max);
}

/* The run's sizes and settings, in the instance that creates the maps (the others share them). */
void tracker_configure_maps(struct mt_tracker *t, struct memtrack_bpf *s)
{
	unsigned int pids = pid_max();
	size_t ring =
	    t->cfg.events ? (t->cfg.ring_size ? t->cfg.ring_size : DEFAULT_RING_SIZE) : 4096;

	bpf_map__set_max_entries(s->maps.events, ring);
	s->rodata->pressure_mark = t->cfg.no_backpressure ? 0 : PRESSURE_MARK(ring);
	/* waitpid and /proc give pids in memtrack's namespace: the BPF side must use the same. */
	s->rodata->pidns_nested = t->pidns.st_ino != MT_PROC_PID_INIT_INO;
	s->rodata->pidns_dev = mt_procmaps_kdev(t->pidns.st_dev);
	s->rodata->pidns_ino = t->pidns.st_ino;
	s->rodata->stacks_enabled = t->cfg.stacks && t->cfg.events;
	s->rodata->stacks_caller = t->cfg.stacks_caller;
	s->rodata->trace_maps = t->cfg.trace_maps;
	bpf_map__set_max_entries(s->maps.unwind_files, t->cfg.stacks ? MAX_FILES + 1 : 1);
	bpf_map__set_max_entries(s->maps.stacks, t->cfg.stacks ? MAX_STACKS : 1);
	bpf_map__set_max_entries(s->maps.unwind_vma_cache, t->cfg.stacks ? MAX_VMA_CACHE : 1);
	/* A hash map's buckets are allocated at its creation: 131,072 of them cost 1 ms. */
	if (!t->cfg.trace_maps)
		bpf_map__set_max_entries(s->maps.first_maps, 1);
	cap_at_pid_max(s->maps.tracked, pids);
	cap_at_pid_max(s->maps.stop_marks, pids);
	cap_at_pid_max(s->maps.pressure_marks, pids);
}

/* One instance of maps alone, opened against the empty CO-RE target at path, and loaded. */
static int make_maps(struct mt_tracker *t, const char *path, struct memtrack_bpf **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = path);
	struct memtrack_bpf *s = memtrack_bpf__open_opts(&opts);
	int err;

	*out = NULL;
	if (!s)
		return -errno;
	tracker_configure_maps(t, s);
	tracker_select_programs(s->obj, 0);
	tracker_btf_maps_only(true);
	err = tracker_load_object(t, s, "the maps");
	tracker_btf_maps_only(false);
	if (err) {
		memtrack_bpf__destroy(s);
		return err;
	}
	*out = s;
	return 0;
}

/*
 * The maps' instance of the first load, made by a thread of its own from the tracker's start,
 * while this one starts the warmer and reads the CO-RE target (or walks the kernel's BTF, 3.7
 * ms here): an instance without programs needs no CO-RE target, and its load, the maps'
 * creation (2.5 ms, the object's BTF, the ring and the hash maps' bucket arrays), waits for
 * nothing. The lifecycle's load waits for it (-v says how long). A load given up (EAGAIN, a
 * group stop meanwhile) is tried again with a new instance: libbpf refuses a second load of an
 * object whose first failed.
 */
static void *maps_maker_main(void *arg)
{
	struct mt_tracker *t = arg;
	char path[32];
	int empty = tracker_btf_empty_target(path, sizeof(path));
	int err, tries = 0;

	do
		err = make_maps(t, empty >= 0 ? path : NULL, &t->made_maps);
	while (err == -EAGAIN && ++tries < 100);
	if (empty >= 0)
		close(empty);
	t->made_err = err;
	return NULL;
}

/*
 * Only with uprobe_multi: without, the maps are created by the lifecycle's own instance. The
 * thread takes no signal: one pending makes the kernel give up a load (EAGAIN).
 */
void tracker_start_maps_maker(struct mt_tracker *t)
{
	sigset_t all, old;
	int err;

	if (t->cfg.no_uprobe_multi)
		return;
	tracker_btf_sections();
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t->maps_maker, NULL, maps_maker_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	t->maps_making = !err;
}

/* The maps the thread made, once: a load tried again makes its own. NULL if it could not. */
struct memtrack_bpf *tracker_take_made_maps(struct mt_tracker *t)
{
	struct memtrack_bpf *s;
	uint64_t start;

	if (!t->maps_making)
		return NULL;
	start = boottime_ns();
	pthread_join(t->maps_maker, NULL);
	t->maps_making = false;
	if (t->cfg.verbose)
		fprintf(stderr, "memtrack: waited %.2f ms for the maps\n",
			(boottime_ns() - start) / 1e6);
	s = t->made_maps;
	t->made_maps = NULL;
	if (!s && t->cfg.verbose)
		fprintf(stderr, "memtrack: the maps' thread could not create them (%s)\n",
			strerror(-t->made_err));
	return s;
}

/*
 * With uprobe_multi, the maps are created first by an instance without programs (a few ms), so
 * that the uprobe_multi programs (alloc_enter_multi, the largest of the verifier's work) load on
 * a thread of their own while the lifecycle's load here: on two CPUs the verifier walks both at
 * once, and neither waits for the other's. Then skel, the lifecycle's instance, shares the maps.
 */
int tracker_load_maps_first(struct mt_tracker *t)
{
	int err = 0;

	t->maps_skel = tracker_take_made_maps(t);
	if (!t->maps_skel) {
		t->maps_skel = t->skel;
		t->skel = NULL;
		tracker_select_programs(t->maps_skel->obj, 0);
		err = tracker_load_object(t, t->maps_skel, "the maps");
	}
	if (!err)
		err = start_multi_loader(t);
	if (!err && !t->skel)
		t->skel = tracker_open_object(t);
	if (!err)
		err = t->skel ? share_maps(t->skel->obj, t->maps_skel->obj) : -errno;
	return err;
}
