// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker: BPF lifecycle, on-demand classification and attach.
 *
 * Files are resolved through /proc/PID/map_files/ of a process that maps them, so deleted and
 * overlay files work; a request whose mapping does not exist yet (the watcher fires before the
 * mapping is made) waits in `deferred` until its own thread stops, which it always does.
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

#include "fentry_probe.skel.h"
#include "memtrack.skel.h"

#include "writer/artifact.h"
#include "base/printable.h"
#include "tracker/procmaps.h"
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

int mt_tracker_events_fd(const struct mt_tracker *t)
{
	return bpf_map__fd(t->skel->maps.events);
}

void mt_tracker_set_artifact(struct mt_tracker *t, struct mt_artifact_writer *w)
{
	t->artifact = w;
}

size_t mt_tracker_file_count(const struct mt_tracker *t)
{
	return t->n_files;
}

const struct mt_tracked_file *mt_tracker_file(const struct mt_tracker *t, size_t i)
{
	return i < t->n_files ? &t->files[i] : NULL;
}

/*
 * The file key names. A key can differ from a known file's by its ctime alone: either a new file
 * took over a deleted one's inode number (a new file), or the file's metadata changed (chmod,
 * touch, a link: the same file). A file with probes attached is the second: the probes hold its
 * inode, so no other file can have its number while memtrack runs. A file without probes holds
 * nothing, and is classified again: at worst a second record of a file with no allocator.
 */
const struct mt_tracked_file *mt_tracker_find(const struct mt_tracker *t,
					      const struct mt_inode_key *key)
{
	const struct mt_tracked_file *same_number = NULL;

	for (size_t i = 0; i < t->n_files; i++) {
		if (mt_inode_key_eq(&t->files[i].key, key))
			return &t->files[i];
		if (t->files[i].probes && mt_inode_same_number(&t->files[i].key, key))
			same_number = &t->files[i];
	}
	return same_number;
}

/* Whether dir exists for memtrack's effective credentials (access(2) would check the real ones). */
static int tracefs_dir(const char *dir)
{
	return faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS) ? -errno : 0;
}

/* The tracepoint back end needs tracefs for the tracepoint's id; mount it where it is missing. */
static int ensure_tracefs(void)
{
	int err = tracefs_dir("/sys/kernel/tracing/events/syscalls");

	if (!err || !tracefs_dir("/sys/kernel/debug/tracing/events/syscalls"))
		return 0;
	if (err == -EACCES) {
		/* Mounted, but root's (mode 700): capabilities for BPF do not open it. */
		fprintf(stderr,
			"memtrack: tracefs is mounted at /sys/kernel/tracing but this user cannot "
			"read it (%s): run as root, or grant CAP_DAC_READ_SEARCH as well\n",
			strerror(-err));
		return err;
	}
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    !tracefs_dir("/sys/kernel/tracing/events/syscalls"))
		return 0;
	fprintf(stderr, "memtrack: tracefs is not mounted and cannot be mounted at "
			"/sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing)\n");
	return -ENOENT;
}

/*
 * The first kernel feature the BPF object needs that this kernel lacks, in the order Linux gained
 * them, or NULL. Asked only once loading failed, to say why in one sentence (on Debian 11's 5.10
 * it is task storage: the kernel refuses the thread_states map with a bare EINVAL).
 */
static const char *missing_kernel_feature(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return "BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)";
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_send_signal_thread, NULL) <=
	    0)
		return "bpf_send_signal_thread (Linux 5.5)";
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) <= 0)
		return "BPF ring buffers (Linux 5.8)";
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) <= 0)
		return "BPF task storage (Linux 5.11)";
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) <= 0)
		return "BPF attach cookies (Linux 5.15)";
	return NULL;
}

static void explain_load_error(int err)
{
	const char *missing;

	if (err == -EPERM || err == -EACCES) {
		fprintf(stderr,
			"memtrack: loading BPF programs was refused (%s): run as root or "
			"grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_CHECKPOINT_RESTORE\n",
			strerror(-err));
		return;
	}
	missing = missing_kernel_feature();
	if (missing)
		fprintf(stderr,
			"memtrack: cannot load the BPF programs: this kernel has no %s; memtrack "
			"needs Linux 5.15 or later with BTF\n",
			missing);
	else
		fprintf(stderr, "memtrack: cannot load the BPF programs: %s\n", strerror(-err));
}

static int attach_lifecycle(struct mt_tracker *t, bool fentry)
{
	struct memtrack_bpf *s = t->skel;
	struct bpf_program *progs[MT_LIFECYCLE_PROGS] = {
	    s->progs.handle_fork,
	    s->progs.handle_exec,
	    s->progs.handle_exit,
	    fentry ? s->progs.watch_mmap_fentry : s->progs.watch_mmap_tp,
	    t->cfg.stacks ? s->progs.unwind_munmap : NULL,
	    t->cfg.stacks ? s->progs.unwind_mremap : NULL,
	    t->cfg.stacks ? s->progs.unwind_mmap_fixed : NULL,
	};

	for (int i = 0; i < MT_LIFECYCLE_PROGS; i++) {
		if (!progs[i])
			continue;
		t->lifecycle[i] = bpf_program__attach(progs[i]);
		if (!t->lifecycle[i])
			return -errno;
	}
	return 0;
}

static void mapping_progs(struct memtrack_bpf *s, struct bpf_program **p)
{
	struct bpf_program *progs[MT_MAPPING_PROGS] = {
	    s->progs.map_mmap_enter,  s->progs.map_mmap_exit,	 s->progs.map_munmap_enter,
	    s->progs.map_munmap_exit, s->progs.map_mremap_enter, s->progs.map_mremap_exit,
	    s->progs.map_brk_enter,   s->progs.map_brk_exit,
	};

	memcpy(p, progs, sizeof(progs));
}

/*
 * The mapping programs, apart from the lifecycle's: only a run that records mappings loads them.
 * A tracepoint that cannot be attached (tracefs readable by root only, without
 * CAP_DAC_READ_SEARCH) costs the run its mapping events, said once, not the run.
 */
static void attach_mappings(struct mt_tracker *t)
{
	struct bpf_program *progs[MT_MAPPING_PROGS];

	mapping_progs(t->skel, progs);

	for (int i = 0; i < MT_MAPPING_PROGS; i++) {
		t->mappings[i] = bpf_program__attach(progs[i]);
		if (t->mappings[i])
			continue;
		fprintf(stderr, "memtrack: mappings are not recorded: cannot attach %s: %s\n",
			bpf_program__name(progs[i]), strerror(errno));
		t->mappings_failed = true;
		return;
	}
}

static void set_mappings_autoload(struct memtrack_bpf *s, bool on)
{
	struct bpf_program *progs[MT_MAPPING_PROGS];

	mapping_progs(s, progs);
	for (int i = 0; i < MT_MAPPING_PROGS; i++)
		bpf_program__set_autoload(progs[i], on);
}

static void destroy_skel(struct mt_tracker *t)
{
	bpf_link__destroy(t->debugger);
	t->debugger = NULL;
	bpf_link__destroy(t->tracers);
	t->tracers = NULL;
	for (int i = 0; i < MT_MAPPING_PROGS; i++) {
		bpf_link__destroy(t->mappings[i]);
		t->mappings[i] = NULL;
	}
	for (int i = 0; i < MT_LIFECYCLE_PROGS; i++) {
		bpf_link__destroy(t->lifecycle[i]);
		t->lifecycle[i] = NULL;
	}
	memtrack_bpf__destroy(t->skel);
	t->skel = NULL;
}

/*
 * Whom a pid-filtered link counts for. The first uprobe_multi links (6.6 to 6.11) run their
 * programs for every task of the linked task's address space, a vfork child included; since
 * 6.12 uprobe_multi runs them for the linked task's thread group only, and per-process perf links
 * (6.1) count for the process their cookie names (the programs check it), so there a vfork child
 * needs links of its own (docs/PROBES.md).
 */
static bool links_fire_per_mm(bool multi)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (!multi)
		return false;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return true;
	return major < 6 || (major == 6 && minor < 12);
}

/* Open, load and attach with one watcher back end, with or without uprobe_multi programs. */
static int load_with(struct mt_tracker *t, bool fentry, bool multi)
{
	bool mappings = t->cfg.mappings && t->cfg.events;
	size_t ring =
	    t->cfg.events ? (t->cfg.ring_size ? t->cfg.ring_size : DEFAULT_RING_SIZE) : 4096;
	int err;

	t->skel = memtrack_bpf__open();
	if (!t->skel)
		return -errno;
	bpf_program__set_autoload(t->skel->progs.watch_mmap_fentry, fentry);
	bpf_program__set_autoload(t->skel->progs.watch_mmap_tp, !fentry);
	bpf_program__set_autoload(t->skel->progs.alloc_enter_multi, multi);
	bpf_program__set_autoload(t->skel->progs.alloc_exit_multi, multi);
	bpf_program__set_expected_attach_type(t->skel->progs.alloc_enter_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.alloc_exit_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_map__set_max_entries(t->skel->maps.events, ring);
	t->skel->rodata->pressure_mark = t->cfg.no_backpressure ? 0 : PRESSURE_MARK(ring);
	/* waitpid and /proc give pids in memtrack's namespace: the BPF side must use the same. */
	t->skel->rodata->pidns_nested = t->pidns.st_ino != MT_PROC_PID_INIT_INO;
	t->skel->rodata->pidns_dev = mt_procmaps_kdev(t->pidns.st_dev);
	t->skel->rodata->pidns_ino = t->pidns.st_ino;
	t->skel->rodata->stacks_enabled = t->cfg.stacks && t->cfg.events;
	t->skel->rodata->trace_maps = t->cfg.trace_maps;
	bpf_map__set_max_entries(t->skel->maps.unwind_files, t->cfg.stacks ? MAX_FILES + 1 : 1);
	bpf_map__set_max_entries(t->skel->maps.stacks, t->cfg.stacks ? MAX_STACKS : 1);
	bpf_map__set_max_entries(t->skel->maps.unwind_vma_cache, t->cfg.stacks ? MAX_VMA_CACHE : 1);
	bpf_program__set_autoload(t->skel->progs.unwind_munmap, t->cfg.stacks);
	bpf_program__set_autoload(t->skel->progs.unwind_mremap, t->cfg.stacks);
	bpf_program__set_autoload(t->skel->progs.unwind_mmap_fixed, t->cfg.stacks);
	set_mappings_autoload(t->skel, mappings);
	err = memtrack_bpf__load(t->skel);
	if (!err)
		err = attach_lifecycle(t, fentry);
	if (!err && mappings)
		attach_mappings(t);
	if (err) {
		destroy_skel(t);
		return err;
	}
	t->watcher = fentry ? "fentry" : "tracepoint";
	t->multi = multi;
	t->mm_filter = links_fire_per_mm(multi);
	return 0;
}

/* The verifier gives up (EAGAIN) when a signal is pending: load_bpf blocks all but SIGSTOP. */
static int load_retried(struct mt_tracker *t, bool fentry, bool multi)
{
	int err, tries = 0;

	do
		err = load_with(t, fentry, multi);
	while (err == -EAGAIN && ++tries < 100);
	return err;
}

/* Kernels without uprobe_multi may refuse the programs that expect it: load without them. */
static int load_either(struct mt_tracker *t, bool fentry)
{
	int err = t->cfg.no_uprobe_multi ? -EINVAL : load_retried(t, fentry, true);

	if (err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	/* The kernel may not know the uprobe_multi attach type; or it lacks something else. */
	err = load_retried(t, fentry, false);
	if (!err && t->cfg.verbose)
		fprintf(stderr,
			"memtrack: no uprobe_multi programs on this kernel: one link per probe\n");
	return err;
}

/* Where the kernel refuses fentry (EPERM here), find out before loading the whole object. */
static int fentry_loads(void)
{
	struct fentry_probe_bpf *p = fentry_probe_bpf__open_and_load();
	int err = p ? 0 : -errno;

	fentry_probe_bpf__destroy(p);
	return err;
}

static int load_watcher(struct mt_tracker *t)
{
	int err;

	if (t->cfg.watcher != MT_WATCHER_TRACEPOINT) {
		err = fentry_loads();
		if (!err)
			err = load_either(t, true);
		if (!err)
			return 0;
		if (t->cfg.watcher == MT_WATCHER_FENTRY && err != -EPERM &&
		    missing_kernel_feature()) {
			/* Not fentry's fault: neither watcher can load here. */
			explain_load_error(err);
			return err;
		}
		if (t->cfg.watcher == MT_WATCHER_FENTRY) {
			fprintf(stderr,
				"memtrack: the fentry watcher is not available on this kernel "
				"(%s); use --watcher=tracepoint or --watcher=auto\n",
				strerror(-err));
			return err;
		}
		if (t->cfg.verbose)
			fprintf(stderr,
				"memtrack: fentry watcher refused (%s), using the tracepoint\n",
				strerror(-err));
	}
	err = ensure_tracefs();
	if (err)
		return err;
	err = load_either(t, false);
	if (err)
		explain_load_error(err);
	return err;
}

/* A signal storm during start-up must not stop the run: signals wait until the load is done. */
static int load_bpf(struct mt_tracker *t)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = load_watcher(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static int on_request(void *ctx, void *data, size_t size)
{
	struct mt_tracker *t = ctx;
	struct mt_attach_req *grown;

	if (size < sizeof(struct mt_attach_req))
		return 0;
	if (t->n_deferred == t->cap_deferred) {
		size_t cap = t->cap_deferred ? 2 * t->cap_deferred : 16;

		grown = realloc(t->deferred, cap * sizeof(*grown));
		if (!grown) {
			t->consume_err = -ENOMEM;
			return -ENOMEM;
		}
		t->deferred = grown;
		t->cap_deferred = cap;
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
	verbose_print = cfg->verbose;
	libbpf_set_print(libbpf_print);
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
	err = identify_pidns(t);
	if (err)
		goto fail;
	err = load_bpf(t);
	if (err)
		goto fail;
	t->requests =
	    ring_buffer__new(bpf_map__fd(t->skel->maps.attach_requests), on_request, t, NULL);
	if (!t->requests) {
		err = -errno;
		goto fail;
	}
	if (cfg->stacks && cfg->events) {
		err = mt_unwind_loader_new(&t->unwind, bpf_map__fd(t->skel->maps.unwind_tables),
					   bpf_map__fd(t->skel->maps.unwind_files));
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

struct closer {
	pthread_t thread;
	const struct detach *d;
	size_t n, stride;
};

static void *detach_some(void *arg)
{
	struct closer *c = arg;

	for (size_t i = 0; i < c->n; i += c->stride) {
		if (c->d[i].link)
			bpf_link__destroy(c->d[i].link);
		else
			close(c->d[i].fd);
	}
	return NULL;
}

/*
 * Detaching a uprobe or a tracepoint waits for RCU grace periods (about 0.1 s here) before it
 * returns, and detaches from one thread wait one after the other: 48 files took 4.7 s. Waits of
 * concurrent detachers share grace periods, so everything is detached from several threads.
 */
void tracker_detach_in_parallel(const struct detach *d, size_t n)
{
	struct closer c[MAX_CLOSERS];
	size_t threads = n < MAX_CLOSERS ? n : MAX_CLOSERS, started = 0;

	for (size_t i = 0; i < threads; i++) {
		c[i] = (struct closer){.d = d + i, .n = n - i, .stride = threads};
		if (pthread_create(&c[i].thread, NULL, detach_some, &c[i]))
			break;
		started++;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(c[i].thread, NULL);
	for (size_t i = started; i < threads; i++)
		detach_some(&c[i]);
}

/* Move l's links into d (k counts them), or detach them at once without d. */
void tracker_collect_links(struct mt_links *l, struct detach *d, size_t *k)
{
	for (size_t j = 0; j < l->n_links; j++) {
		if (d)
			d[(*k)++].link = l->links[j];
		else
			bpf_link__destroy(l->links[j]);
	}
	l->n_links = 0;
	free(l->links);
	l->links = NULL;
	for (int j = 0; j < 2; j++) {
		if (l->multi_fd[j] > 0 && d)
			d[(*k)++].fd = l->multi_fd[j];
		else if (l->multi_fd[j] > 0)
			close(l->multi_fd[j]);
		l->multi_fd[j] = 0;
	}
}

static void stop_closer(struct closer_queue *c)
{
	if (!c->started)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	c->started = false;
	free(c->q);
	c->q = NULL;
	c->n = c->cap = 0;
}

static void detach_all(struct mt_tracker *t)
{
	size_t n = MT_LIFECYCLE_PROGS + 2, k = 0;
	struct detach *d;

	stop_closer(&t->closer);
	for (size_t i = 0; i < t->n_files; i++)
		n += t->files[i].system.n_links + 2;
	for (size_t i = 0; i < t->n_arms; i++)
		n += t->arms[i].l.n_links + t->arms[i].keep.n_links + 4;
	d = calloc(n, sizeof(*d));
	for (int i = 0; i < MT_LIFECYCLE_PROGS; i++) {
		if (t->lifecycle[i] && d)
			d[k++].link = t->lifecycle[i];
		else
			bpf_link__destroy(t->lifecycle[i]);
		t->lifecycle[i] = NULL;
	}
	if (t->debugger && d)
		d[k++].link = t->debugger;
	else
		bpf_link__destroy(t->debugger);
	t->debugger = NULL;
	if (t->tracers && d)
		d[k++].link = t->tracers;
	else
		bpf_link__destroy(t->tracers);
	t->tracers = NULL;
	for (size_t i = 0; i < t->n_files; i++)
		tracker_collect_links(&t->files[i].system, d, &k);
	for (size_t i = 0; i < t->n_arms; i++) {
		tracker_collect_links(&t->arms[i].l, d, &k);
		tracker_collect_links(&t->arms[i].keep, d, &k);
	}
	t->n_arms = 0;
	if (d)
		tracker_detach_in_parallel(d, k);
	free(d);
}

void mt_tracker_detach(struct mt_tracker *t)
{
	detach_all(t);
}

void mt_tracker_close(struct mt_tracker *t)
{
	if (!t)
		return;
	detach_all(t);
	if (t->cfg.verbose && t->links_made)
		fprintf(stderr, "memtrack: %" PRIu64 " per-process links made in %.1f ms\n",
			t->links_made, t->link_ns / 1e6);
	for (size_t i = 0; i < t->n_files; i++) {
		free(t->files[i].points);
		free(t->files[i].path);
		if (t->files[i].fd > 0)
			close(t->files[i].fd);
	}
	if (t->unwind && t->cfg.verbose)
		fprintf(stderr, "memtrack: %zu unwind tables loaded, %zu rows (%zu KiB)\n",
			mt_unwind_loaded_tables(t->unwind), mt_unwind_loaded_rows(t->unwind),
			mt_unwind_loaded_rows(t->unwind) * 8 /* bytes per row */ / 1024);
	mt_unwind_loader_free(t->unwind);
	free(t->files);
	free(t->arms);
	free(t->deferred);
	free(t->percpu);
	ring_buffer__free(t->requests);
	if (t->skel)
		destroy_skel(t);
	free(t);
}

int mt_tracker_arm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.tracked), &tgid, &one, BPF_ANY))
		return -errno;
	return 0;
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

int mt_tracker_disarm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;

	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.tracked), &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

int mt_tracker_take_stop_mark(struct mt_tracker *t, pid_t tid, struct mt_inode_key *key)
{
	int fd = bpf_map__fd(t->skel->maps.stop_marks);
	__u32 k = tid;

	if (bpf_map_lookup_and_delete_elem(fd, &k, key))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int mt_tracker_take_pressure_mark(struct mt_tracker *t, pid_t tid)
{
	int fd = bpf_map__fd(t->skel->maps.pressure_marks);
	__u32 k = tid;
	__u8 v;

	if (bpf_map_lookup_and_delete_elem(fd, &k, &v))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

/* A per-CPU counter summed over the CPUs, read into the tracker's per-CPU buffer. */
int tracker_read_counter(const struct mt_tracker *t, __u32 idx, uint64_t *sum)
{
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.counters), &idx, t->percpu))
		return -errno;
	*sum = 0;
	for (int cpu = 0; cpu < t->ncpus; cpu++)
		*sum += t->percpu[cpu];
	return 0;
}

int mt_tracker_counters(const struct mt_tracker *t, struct mt_drop_counts *c)
{
	int err = tracker_read_counter(t, MT_CNT_REQ_DROPPED, &c->requests_dropped);

	if (!err)
		err = tracker_read_counter(t, MT_CNT_EV_DROPPED, &c->events_dropped);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_ARGS_LOST, &c->args_lost);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_WATCHER_STOPS, &c->watcher_stops);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_PRESSURE_STOPS, &c->pressure_stops);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_STACKS_LOST, &c->stacks_lost);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_STACK_COLLISIONS, &c->stack_collisions);
	return err;
}
