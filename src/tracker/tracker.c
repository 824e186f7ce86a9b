// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's BPF lifecycle: the programs loaded (the watcher on fentry or a tracepoint,
 * uprobe_multi or perf links), the lifecycle links, the maps of tracked pids and stop marks, and
 * the attach requests' ring. Requests are resolved to files by tracker_files.c,
 * through /proc/PID/map_files/ of a process that maps them, so deleted and overlay files work; a
 * request whose mapping does not exist yet (the watcher fires before the mapping is made) waits in
 * `deferred` until its own thread stops, which it always does.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"

#include "base/grow.h"
#include "writer/artifact.h"
#include "writer/events.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "tracker/tracker.h"
#include "tracker/tracker_int.h"

static bool verbose_print;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* libbpf's own messages only with --verbose: memtrack says what failed in one sentence. */
	if (!verbose_print || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

const char *mt_tracker_watcher(const struct mt_tracker *t)
{
	return t->watcher;
}

int mt_tracker_requests_fd(const struct mt_tracker *t)
{
	return ring_buffer__epoll_fd(t->requests);
}

int mt_tracker_events(struct mt_tracker *t, struct mt_events **out)
{
	int err = 0;

	if (!t->events)
		err = mt_events_open(&t->events, bpf_map__fd(t->skel->maps.events));
	*out = t->events;
	return err;
}

void mt_tracker_set_artifact(struct mt_tracker *t, struct mt_artifact_writer *w)
{
	t->artifact = w;
}

static int on_request(void *ctx, void *data, size_t size)
{
	struct mt_tracker *t = ctx;

	if (size < sizeof(struct mt_attach_req))
		return 0;
	if (MT_GROW(t->deferred, t->cap_deferred, t->n_deferred + 1, 16)) {
		t->consume_err = -ENOMEM;
		return -ENOMEM;
	}
	memcpy(&t->deferred[t->n_deferred++], data, sizeof(struct mt_attach_req));
	return 0;
}

/*
 * memtrack's pid namespace, whose pids the BPF side will use. /proc must be of the same
 * namespace, or every /proc/PID memtrack reads would be another process's.
 */
static int identify_pidns(struct mt_tracker *t)
{
	char self[32];
	ssize_t n;

	if (stat("/proc/self/ns/pid", &t->pidns)) {
		fprintf(stderr, "memtrack: cannot find its pid namespace (/proc/self/ns/pid): %s\n",
			strerror(errno));
		return -ENOENT;
	}
	n = readlink("/proc/self", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strtol(self, NULL, 10) != getpid()) {
		fprintf(stderr, "memtrack: /proc belongs to another pid namespace than memtrack's; "
				"mount a /proc for this one (unshare --pid --fork --mount-proc)\n");
		return -EINVAL;
	}
	return 0;
}

int mt_tracker_open(struct mt_tracker **out, const struct mt_tracker_config *cfg)
{
	struct mt_tracker *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	/* Before anything is loaded: the closer holds nothing of memtrack's but its socket. */
	t->closer_fd = -1;
	t->core_fd = -1;
	if (tracker_closer_start(t) && cfg->verbose)
		fprintf(stderr, "memtrack: no closer process: links are detached before exit\n");
	verbose_print = cfg->verbose;
	libbpf_set_print(libbpf_print);
	err = identify_pidns(t);
	if (err)
		goto fail;
	tracker_warm_start(t); /* its first registration waits beside the load */
	/* Then at once: with the BTF walk kept for the boot, the load would wait for the maps. */
	tracker_start_maps_maker(t);
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0) {
		err = t->ncpus ? t->ncpus : -EINVAL;
		goto fail;
	}
	t->percpu = calloc(t->ncpus, sizeof(*t->percpu));
	if (!t->percpu) {
		err = -ENOMEM;
		goto fail;
	}
	err = tracker_load_bpf(t);
	tracker_closer_reap(t);
	if (err)
		goto fail;
	t->requests =
	    ring_buffer__new(bpf_map__fd(t->skel->maps.attach_requests), on_request, t, NULL);
	if (!t->requests) {
		err = -errno;
		goto fail;
	}
	if (t->cfg.stacks && cfg->events) { /* not if loaded without callers */
		err = mt_unwind_loader_new(&t->unwind, bpf_map__fd(t->skel->maps.unwind_tables),
					   bpf_map__fd(t->skel->maps.unwind_files),
					   !cfg->stacks_caller);
		if (err)
			goto fail;
	}
	t->skel->bss->events_enabled = cfg->events;
	t->skel->bss->tracking_enabled = 1;
	*out = t;
	return 0;
fail:
	mt_tracker_close(t);
	return err;
}

/* One link to the closer (into d at *k), or destroyed here when there is no d; *l is cleared. */
static void give_link(struct bpf_link **l, struct detach *d, size_t *k)
{
	if (*l && d)
		d[(*k)++].link = *l;
	else
		bpf_link__destroy(*l);
	*l = NULL;
}

/* Hand the links of the run's files to the closer; with lifecycle, every other link too. */
static void detach_all(struct mt_tracker *t, bool lifecycle)
{
	size_t n = MT_LIFECYCLE_PROGS + MT_MAPPING_PROGS + 3, k = 0;
	struct detach *d;

	for (size_t i = 0; i < t->n_files; i++)
		n += t->files[i].system.n_links + 2;
	for (size_t i = 0; i < t->n_arms; i++)
		n += t->arms[i].l.n_links + t->arms[i].keep.n_links + 4;
	d = calloc(n, sizeof(*d));
	for (int i = 0; lifecycle && i < MT_LIFECYCLE_PROGS; i++)
		give_link(&t->lifecycle[i], d, &k);
	/* The mapping tracepoints: a detach waits for grace periods, the closer's time. */
	for (int i = 0; lifecycle && d && i < MT_MAPPING_PROGS; i++) {
		if (t->mappings[i])
			d[k++].link = t->mappings[i];
		t->mappings[i] = NULL;
	}
	if (lifecycle) {
		give_link(&t->debugger, d, &k);
		give_link(&t->tracers, d, &k);
		give_link(&t->exits_in_calls, d, &k);
	}
	for (size_t i = 0; i < t->n_files; i++)
		tracker_collect_links(&t->files[i].system, d, &k);
	for (size_t i = 0; i < t->n_arms; i++) {
		tracker_collect_links(&t->arms[i].l, d, &k);
		tracker_collect_links(&t->arms[i].keep, d, &k);
	}
	t->n_arms = 0;
	if (d)
		tracker_close_links(t, d, k);
	free(d);
}

void mt_tracker_detach(struct mt_tracker *t)
{
	detach_all(t, false);
}

bool mt_tracker_detach_waits(const struct mt_tracker *t)
{
	return t->closer_fd < 0;
}

static void forget_files(struct mt_tracker *t)
{
	for (size_t i = 0; i < t->n_files; i++) {
		free(t->files[i].points);
		free(t->files[i].path);
		if (t->files[i].fd > 0)
			close(t->files[i].fd);
	}
	t->n_files = 0;
}

/*
 * Delete every key of a hash map (the maps of one run's processes and files). One walk collects
 * the keys, then they go: deleting as it walks would start each step at the first of the map's
 * buckets again (65,536 of them), a scan per key, between every two benchmarks of exec-harness.
 * Even a walk of an empty map visits every bucket (0.15 ms): maps whose keys are counted
 * (memtrack.h) are walked only when the count says keys are left.
 */
static void empty_map(const struct bpf_map *m)
{
	size_t size = bpf_map__key_size(m), n = 0, cap = 0;
	char *keys = NULL;
	int fd = bpf_map__fd(m);

	for (;;) {
		if (MT_GROW(keys, cap, (n + 1) * size, 64 * size))
			break; /* what was collected still goes */
		if (bpf_map_get_next_key(fd, n ? keys + (n - 1) * size : NULL, keys + n * size))
			break;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, keys + i * size);
	free(keys);
}

static void empty_counted(struct mt_tracker *t, enum mt_keyed_map k, const struct bpf_map *m)
{
	if (!tracker_keys_left(t, k))
		return;
	empty_map(m);
	tracker_keys_none(t, k);
}

static int zero_counters(struct mt_tracker *t)
{
	memset(t->percpu, 0, t->ncpus * sizeof(*t->percpu));
	for (__u32 i = 0; i < MT_CNT_MAX; i++)
		if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.counters), &i, t->percpu,
					BPF_ANY))
			return -errno;
	return 0;
}

/*
 * Ready for another run, as if just opened: the loaded programs and their lifecycle links stay,
 * the run's files, links, processes and counters go. --stacks keeps what the unwinder loaded:
 * not reset here.
 */
int mt_tracker_reset(struct mt_tracker *t)
{
	struct memtrack_bpf *s = t->skel;

	/* The unwinder's tables are not reset; a tracker that never ran has none to reset. */
	if (t->cfg.stacks)
		return t->artifact ? -EOPNOTSUPP : 0;
	t->keep_classified = true;
	detach_all(t, false);
	forget_files(t);
	empty_map(s->maps.known_inodes);
	empty_counted(t, MT_KEYS_TRACKED, s->maps.tracked);
	empty_counted(t, MT_KEYS_ARMED, s->maps.armed);
	empty_counted(t, MT_KEYS_STOP_MARKS, s->maps.stop_marks);
	empty_counted(t, MT_KEYS_PRESSURE_MARKS, s->maps.pressure_marks);
	ring_buffer__consume(t->requests);
	t->n_deferred = 0;
	t->consume_err = 0;
	t->n_unprobed = 0;
	t->inodes_full = t->files_full = false;
	t->req_drops_seen = 0;
	t->artifact = NULL;
	return zero_counters(t);
}

void mt_tracker_close(struct mt_tracker *t)
{
	if (!t)
		return;
	tracker_warm_stop(t);
	mt_events_close(t->events);
	detach_all(t, true);
	tracker_closer_reap(t); /* a tracker that failed before its load */
	tracker_closer_stop(t);
	if (t->cfg.verbose && t->links_made)
		fprintf(stderr,
			"memtrack: %" PRIu64 " per-process links made in %.1f ms; %" PRIu64
			" of them took over 1 ms, %.1f ms in all\n",
			t->links_made, t->link_ns / 1e6, t->links_slow, t->link_slow_ns / 1e6);
	forget_files(t);
	tracker_forget_classified(t);
	if (t->unwind && t->cfg.verbose)
		fprintf(stderr,
			"memtrack: %zu unwind tables loaded (%zu into arrays made ahead), %zu rows "
			"(%zu KiB) in %.1f ms\n",
			mt_unwind_loaded_tables(t->unwind), mt_unwind_loaded_from_pool(t->unwind),
			mt_unwind_loaded_rows(t->unwind),
			mt_unwind_loaded_rows(t->unwind) * 8 /* bytes per row */ / 1024,
			t->unwind_ns / 1e6);
	mt_unwind_loader_free(t->unwind);
	free(t->files);
	free(t->arms);
	free(t->deferred);
	free(t->percpu);
	ring_buffer__free(t->requests);
	memtrack_bpf__destroy(tracker_take_made_maps(t)); /* made, never taken: the open failed */
	if (t->skel)
		tracker_destroy_skel(t);
	tracker_btf_close(t);
	free(t);
}

int mt_tracker_arm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;
	__u8 one = 1;

	return tracker_key_store(t, MT_KEYS_TRACKED, t->skel->maps.tracked, &tgid, &one);
}

int mt_tracker_disarm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;

	int err = tracker_key_remove(t, MT_KEYS_TRACKED, t->skel->maps.tracked, &tgid, NULL);

	return err == -ENOENT ? 0 : err;
}

void mt_tracker_record(struct mt_tracker *t, bool on)
{
	t->skel->bss->tracking_enabled = on;
}

int mt_tracker_hand_off(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;
	__u8 state = MT_TRACKED_HANDED_OFF;

	/*
	 * Before the debugger can know the pid: its attach cannot come first. Without it (no
	 * syscall tracepoint for ptrace), TracerPid alone tells of a debugger: not a failure.
	 */
	if (!t->debugger && !t->debugger_tried) {
		t->debugger_tried = true;
		t->debugger = bpf_program__attach(t->skel->progs.watch_debugger);
		if (!t->debugger && t->cfg.verbose)
			fprintf(stderr, "memtrack: cannot watch for a debugger's attach: %s\n",
				strerror(errno));
	}
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.tracked), &tgid, &state, BPF_EXIST))
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

bool mt_tracker_per_process(const struct mt_tracker *t)
{
	return !t->cfg.system_scope;
}

bool mt_tracker_debugger_seen(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;
	__u8 state = 0;

	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.tracked), &tgid, &state) == 0 &&
	       state == MT_TRACKED_DEBUGGED;
}

int mt_tracker_take_stop_mark(struct mt_tracker *t, pid_t tid, struct mt_inode_key *key)
{
	__u32 k = tid;
	int err = tracker_key_remove(t, MT_KEYS_STOP_MARKS, t->skel->maps.stop_marks, &k, key);

	if (err)
		return err == -ENOENT ? 0 : err;
	return 1;
}

int mt_tracker_take_pressure_mark(struct mt_tracker *t, pid_t tid)
{
	__u32 k = tid;
	__u8 v;
	int err =
	    tracker_key_remove(t, MT_KEYS_PRESSURE_MARKS, t->skel->maps.pressure_marks, &k, &v);

	if (err)
		return err == -ENOENT ? 0 : err;
	return 1;
}
